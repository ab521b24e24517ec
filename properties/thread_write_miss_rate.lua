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
local MISS, REF = "l1d_miss_wr", "writes"

-- the misses beyond the threshold rate, over the threads above it
local function excess(p, s)
  local n = 0
  for k = 1, #s.r do
    if s.r[k] > p.threshold then n = n + s.miss[k] - p.threshold * s.ref[k] end
  end
  return n
end

return {
  name = "ThreadWriteMissRate",
  summary = "a thread misses the L1D cache on more than `threshold` of its writes",
  refines = "ThreadMissRate",
  context = "object",
  needs = { MISS, REF },
  params = { threshold = 0.20, min_refs = 1000 },

  condition = function(ctx, p)
    local s = asl.rates(ctx, MISS, REF, p.min_refs)
    return #s.r >= 2 and asl.max(s.r) > p.threshold
  end,

  confidence = function(ctx, p) return asl.confidence(ctx) end,

  severity = function(ctx, p)
    local n = excess(p, asl.rates(ctx, MISS, REF, p.min_refs))
    local c = asl.stall(ctx)
    return asl.severity(ctx, n * asl.per_event(ctx, c.miss, MISS),
                        ctx.program[MISS] > 0 and n / ctx.program[MISS] or 0)
  end,

  threads = function(ctx, p)
    local s = asl.rates(ctx, MISS, REF, p.min_refs)
    return asl.select(s.ids, function(_, k) return s.r[k] > p.threshold end)
  end,

  evidence = function(ctx, p)
    local s = asl.rates(ctx, MISS, REF, p.min_refs)
    local k = asl.argmax(s.r)
    return string.format("thread %d: %s of its %s miss (%s of %s); threshold %s", s.ids[k],
                         asl.pct(s.r[k]), REF, asl.count(s.miss[k]), MISS, asl.pct(p.threshold))
  end,

  advice = function(ctx, p)
    local s = asl.rates(ctx, MISS, REF, p.min_refs)
    local k = asl.argmax(s.r)
    return string.format("Thread %d misses the L1D cache on %s of its %s to %s (%s): " ..
      "improve the locality of each thread's accesses (give each thread a contiguous part, " ..
      "walk it in address order, block the loops so a tile fits the cache) or shrink the " ..
      "object.", s.ids[k], asl.pct(s.r[k]), REF, ctx.object.name, asl.bytes(ctx.object.size))
  end,
}
