// default: share=0.5
property BigObject(ParPerf pp, float share) {
  let
    refs = pp.mem_ref / pp.program.mem_ref;
  in
    condition: refs > share;
    severity: refs;
    advice: "this object takes {refs * 100}% of the accesses of {pp.nrThreads} threads";
}
