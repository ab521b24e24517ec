// UnbalancedLC1DataMissRateInThreads: the ASL property printed in seed 004
// (Kereku & Gerndt, "Automatic Monitoring of Memory Hierarchies in Threaded
// Applications with AMEBA", section 4), quoted as printed there and compiled
// by ameba's ASL front-end (docs/asl.md).
//
// An example, not loaded by default (`ameba run --property
// properties/examples/seed004_unbalanced_l1.asl` loads it). Taken literally
// it compares every thread of the program, so a thread that never touches
// the object counts as a miss rate of 0 (a single-threaded walk in a
// multithreaded program is "unbalanced"), main's initialisation and the
// workers of an earlier phase are compared with the current workers, and
// its severity (deviation x main's share of the time) is not the cycles a
// fix would save. The default, properties/seed004_unbalanced_l1.asl, is the
// same rule over the concurrent users with the cost model's severity.
//
// The paper gives no value for t, the allowed deviation of a thread's L1
// miss rate from the threads' mean (an absolute difference of rates: 0.02 =
// 2 points). Override it with --property UnbalancedLC1DataMissRateInThreads:t=0.05
// default: t=0.02

property UnbalancedLC1DataMissRateInThreads(ParPerf pp, float t){
  let
    miss_rate(int tid)=pp.lc1_miss[tid]/pp.mem_ref[tid];
    mean=sum(miss_rate(0),...,miss_rate(pp.nrThreads))/pp.nrThreads;
    max = max(miss_rate(0),...,miss_rate(pp.nrThreads));
    min = min(miss_rate(0),...,miss_rate(pp.nrThreads));
  in
    condition: max(max-mean, mean-min) > t;
    confidence: 1;
    severity: max(max-mean, mean-min) * pp.parT[0]; }
