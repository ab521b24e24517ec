property Broken(ParPerf pp, float t) {
  let
    rate = pp.l1d_miss / pp.mem_ref
  in
    condition: rate > t;
    severity: rate;
}
