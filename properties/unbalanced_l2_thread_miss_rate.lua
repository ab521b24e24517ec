-- UnbalancedL2ThreadMissRate (seed 004's UnbalancedLC2DataMissRateInThreads):
-- the L2 miss rate of one thread on an object deviates from the mean over the
-- threads by more than `threshold` (relative: 0.25 = 25% above or below the
-- mean). It refines L2ThreadMissRate: it is evaluated only where that one
-- holds.
--
--   rate(i) = l2_miss[i] / mem_ref[i]   (threads with >= min_refs accesses)
--   mean = sum(rate) / nr;  max, min over the threads
--   condition:  max(max - mean, mean - min) > threshold * mean
--   severity:   the misses of the worst thread beyond what it would have at
--               the mean rate, |rate - mean| * mem_ref, times the stall cycles
--               of its misses served beyond the L2 per l2_miss, over the
--               program's estimated cycles (without them: over the program's
--               l2_miss)
--   confidence: the context's (1 for exact counts, as in seed 004)
--
-- The rules are shared by the family: asl.unbalanced_miss_rate (agent/lua_proplib.h).
return asl.unbalanced_miss_rate({
  name = "UnbalancedL2ThreadMissRate",
  summary = "one thread's L2 miss rate on an object deviates from the mean by > `threshold`",
  refines = "L2ThreadMissRate",
  miss = "l2_miss",
  cost = "beyond_l2",
})
