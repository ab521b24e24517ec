// UnbalancedLC1DataMissRateInThreads: seed 004's property (Kereku & Gerndt,
// "Automatic Monitoring of Memory Hierarchies in Threaded Applications with
// AMEBA", section 4), corrected: the same deviation of a thread's L1 miss
// rate from the threads' mean, over the threads that use the object at the
// same time, with the severity every property uses. The text printed in the
// seed, which loads and runs as written, is
// properties/examples/seed004_unbalanced_l1.asl (docs/asl.md).
//
// The corrections:
//  - ConcPerf instead of ParPerf: the threads are the object's concurrent
//    users (docs/properties.md, "Concurrent users"): a thread with fewer
//    than 5% of the mean accesses of the threads that touch the object is
//    not one (it never or hardly touches it: not a miss rate of 0); main is
//    left out when two or more other threads use the object (its set-up);
//    only the threads alive together with the busiest one are compared (an
//    earlier phase's workers are not); workers recreated every iteration
//    are compared by worker slot.
//  - at least two users, each with min_refs accesses or more (a few
//    accesses give no rate: a global read once per thread misses once).
//  - severity: the misses of a user with the mean accesses at the worst
//    rate beyond the mean one, times the object's stall cycles per miss,
//    as a share of the program's cycles (severity_of, the cost model)
//    instead of the deviation times main's share of the time.
//
// t is the allowed deviation, an absolute difference of rates (0.02 = 2
// points): --property UnbalancedLC1DataMissRateInThreads:t=0.05
// default: t=0.02, min_refs=1000

property UnbalancedLC1DataMissRateInThreads(ConcPerf pp, float t, int min_refs){
  let
    miss_rate(int tid)=pp.lc1_miss[tid]/pp.mem_ref[tid];
    mean=sum(miss_rate(0),...,miss_rate(pp.nrThreads))/pp.nrThreads;
    max = max(miss_rate(0),...,miss_rate(pp.nrThreads));
    min = min(miss_rate(0),...,miss_rate(pp.nrThreads));
    refs = sum(pp.mem_ref[0],...,pp.mem_ref[pp.nrThreads]) / pp.nrThreads;
    cycles_per_miss = pp.est_stall_cycles / pp.lc1_miss;
  in
    condition: pp.nrThreads >= 2 and max(max-mean, mean-min) > t;
    confidence: 1;
    severity: severity_of(max(max-mean, mean-min) * refs * cycles_per_miss);
    evidence: "{pp.nrThreads} concurrent users: mean={mean}, max={max}, min={min}, t={t}"; }
