-- L2ThreadMissRate (after AMEBA's LC2DataMissRateInThreads, seed 004; it
-- refines HotObject): some thread misses the L2 cache on more than `threshold`
-- of its accesses to an object. It needs at least two threads with `min_refs`
-- accesses each: on a single-threaded program HotObject says all there is.
-- ctx.t.<metric>[i] belongs to thread ctx.threads[i].
--
--   rate(i)     l2_miss[i] / mem_ref[i]
--   condition   max over the threads of rate(i) > threshold
--   severity    the misses beyond the threshold rate, the sum over the threads
--               above it of (l2_miss[i] - threshold * mem_ref[i]), times the
--               stall cycles of its misses served beyond the L2 per l2_miss,
--               over the program's estimated cycles (without them: over the
--               program's l2_miss)
--   confidence  the context's (asl.confidence)
--
-- The rules are shared by the family: asl.thread_miss_rate (agent/lua_proplib.h).
return asl.thread_miss_rate({
  name = "L2ThreadMissRate",
  summary = "a thread misses the L2 cache on more than `threshold` of its accesses",
  refines = "HotObject",
  miss = "l2_miss",
  ref = "mem_ref",
  cache = "the L2 cache",
  cost = "beyond_l2",
})
