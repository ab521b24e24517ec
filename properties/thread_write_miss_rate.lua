-- ThreadWriteMissRate (after AMEBA's LC1DataWriteMissRateInThreads, seed 004;
-- it refines ThreadMissRate): some thread misses the L1D cache on more than
-- `threshold` of its writes to an object. It needs at least two threads with
-- `min_refs` writes each: on a single-threaded program HotObject says all
-- there is. ctx.t.<metric>[i] belongs to thread ctx.threads[i].
--
--   rate(i)     l1d_miss_wr[i] / writes[i]
--   condition   max over the threads of rate(i) > threshold
--   severity    the misses beyond the threshold rate, the sum over the threads
--               above it of (l1d_miss_wr[i] - threshold * writes[i]), times
--               its miss stall cycles per l1d_miss_wr, over the program's
--               estimated cycles (without them: over the program's
--               l1d_miss_wr)
--   confidence  the context's (asl.confidence)
--
-- The rules are shared by the family: asl.thread_miss_rate (agent/lua_proplib.h).
return asl.thread_miss_rate({
  name = "ThreadWriteMissRate",
  summary = "a thread misses the L1D cache on more than `threshold` of its writes",
  refines = "ThreadMissRate",
  miss = "l1d_miss_wr",
  ref = "writes",
  cache = "the L1D cache",
  cost = "miss",
})
