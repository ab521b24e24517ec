-- UnbalancedLLCThreadMissRate (seed 004's UnbalancedLC3DataMissRateInThreads):
-- the LLC miss rate of one thread on an object deviates from the mean over the
-- threads by more than `threshold` (relative: 0.25 = 25% above or below the
-- mean). It refines LLCThreadMissRate: it is evaluated only where that one
-- holds.
--
--   rate(i) = llc_miss[i] / mem_ref[i]   (threads with >= min_refs accesses)
--   mean = sum(rate) / nr;  max, min over the threads
--   condition:  max(max - mean, mean - min) > threshold * mean
--   severity:   the misses of the worst thread beyond what it would have at
--               the mean rate, |rate - mean| * mem_ref, times its memory stall
--               cycles per llc_miss, over the program's estimated cycles
--               (without them: over the program's llc_miss)
--   confidence: the context's (1 for exact counts, as in seed 004)
local MISS = "llc_miss"

local function stats(ctx, p)
  local s = asl.rates(ctx, MISS, "mem_ref", p.min_refs)
  if #s.r < 2 then return nil end
  local mean = asl.mean(s.r)
  local hi, lo = asl.argmax(s.r), asl.argmin(s.r)
  s.mean = mean
  s.dev = math.max(s.r[hi] - mean, mean - s.r[lo])
  s.worst = (s.r[hi] - mean >= mean - s.r[lo]) and hi or lo
  return s
end

return {
  name = "UnbalancedLLCThreadMissRate",
  summary = "one thread's LLC miss rate on an object deviates from the mean by > `threshold`",
  refines = "LLCThreadMissRate",
  context = "object",
  needs = { MISS, "mem_ref" },
  params = { threshold = 0.25, min_refs = 1000 },

  condition = function(ctx, p)
    local s = stats(ctx, p)
    return s ~= nil and s.mean > 0 and s.dev > p.threshold * s.mean
  end,

  confidence = function(ctx, p) return asl.confidence(ctx) end,

  severity = function(ctx, p)
    local s = stats(ctx, p)
    local k = s.worst
    local extra = math.abs(s.r[k] - s.mean) * s.ref[k]
    local c = asl.stall(ctx)
    return asl.severity(ctx, extra * asl.per_event(ctx, c.mem, MISS),
                        ctx.program[MISS] > 0 and extra / ctx.program[MISS] or 0)
  end,

  threads = function(ctx, p)
    local s = stats(ctx, p)
    return { s.ids[s.worst] }
  end,

  evidence = function(ctx, p)
    local s = stats(ctx, p)
    local k = s.worst
    local pct = (s.r[k] - s.mean) / s.mean
    return string.format("thread %d misses %s%.0f%% vs the mean (%s vs %s of accesses, %s)",
                         s.ids[k], pct >= 0 and "+" or "", 100 * pct, asl.pct(s.r[k]),
                         asl.pct(s.mean), MISS)
  end,

  advice = function(ctx, p)
    local s = stats(ctx, p)
    local k = s.worst
    return string.format("Thread %d misses %s of its accesses to %s, the threads' mean is " ..
      "%s: give the threads parts of equal locality (the same access pattern and the same " ..
      "amount of data each), and lay each thread's part out contiguously.",
      s.ids[k], asl.pct(s.r[k]), ctx.object.name, asl.pct(s.mean))
  end,
}
