-- LLCThreadMissRate (after AMEBA's LC3DataMissRateInThreads, seed 004; it
-- refines HotObject): some thread misses the last-level cache on more than
-- `threshold` of its accesses to an object. It needs at least two threads with
-- `min_refs` accesses each: on a single-threaded program HotObject says all
-- there is. ctx.t.<metric>[i] belongs to thread ctx.threads[i].
--
--   rate(i)     llc_miss[i] / mem_ref[i]
--   condition   max over the threads of rate(i) > threshold
--   severity    the misses beyond the threshold rate, the sum over the threads
--               above it of (llc_miss[i] - threshold * mem_ref[i]), times its
--               memory stall cycles per llc_miss, over the program's estimated
--               cycles (without them: over the program's llc_miss)
--   confidence  the context's (asl.confidence)
--
-- The rules are shared by the family: asl.thread_miss_rate (agent/lua_proplib.h).
return asl.thread_miss_rate({
  name = "LLCThreadMissRate",
  summary = "a thread misses the last-level cache on more than `threshold` of its accesses",
  refines = "HotObject",
  miss = "llc_miss",
  ref = "mem_ref",
  cache = "the last-level cache",
  cost = "mem",
})
