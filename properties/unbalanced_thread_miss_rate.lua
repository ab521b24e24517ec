-- UnbalancedThreadMissRate (seed 004's UnbalancedLC1DataMissRateInThreads):
-- the miss rate of one thread deviates from the mean over the threads by
-- more than `threshold` (relative: 0.25 = 25% above or below the mean).
-- It refines ThreadMissRate: it is evaluated only where that one holds.
--
--   miss_rate(i) = miss[i] / mem_ref[i]
--   mean = sum(miss_rate) / nr;  max, min over the threads
--   condition: max(max - mean, mean - min) > threshold * mean
--   severity:  the misses of the worst thread beyond what it would have at
--              the mean rate, as a share of the run's misses (or of stall
--              cycles, scaled by the object's stall cycles per miss)
local function miss_metric(ctx)
  for _, m in ipairs({ "l1d_miss", "l2_miss", "llc_miss" }) do
    if ctx.t[m] then return m end
  end
  return nil
end

local function stats(ctx, p)
  local m = miss_metric(ctx)
  if not m then return nil end
  local refs, miss = ctx.t.mem_ref, ctx.t[m]
  local r, ids, ref = {}, {}, {}
  for i = 1, ctx.nr_threads do
    if refs[i] >= p.min_refs then
      r[#r + 1] = miss[i] / refs[i]
      ids[#ids + 1] = ctx.threads[i]
      ref[#ref + 1] = refs[i]
    end
  end
  if #r < 2 then return nil end
  local mean = asl.mean(r)
  local hi, lo = asl.argmax(r), asl.argmin(r)
  local dev = math.max(r[hi] - mean, mean - r[lo])
  local worst = (r[hi] - mean >= mean - r[lo]) and hi or lo
  return { m = m, r = r, ids = ids, ref = ref, mean = mean, dev = dev, worst = worst }
end

return {
  name = "UnbalancedThreadMissRate",
  summary = "one thread's miss rate on an object deviates from the threads' mean by more than `threshold`",
  refines = "ThreadMissRate",
  context = "object",
  needs = { "mem_ref" },
  params = { threshold = 0.25, min_refs = 1000 },

  condition = function(ctx, p)
    local s = stats(ctx, p)
    return s ~= nil and s.mean > 0 and s.dev > p.threshold * s.mean
  end,

  severity = function(ctx, p)
    local s = stats(ctx, p)
    local k = s.worst
    local extra = math.abs(s.r[k] - s.mean) * s.ref[k]   -- misses beyond the mean rate
    local stall = ctx.v.est_stall_cycles
    if stall and ctx.program.est_stall_cycles > 0 and ctx.v[s.m] > 0 then
      return extra * (stall / ctx.v[s.m]) / ctx.program.est_stall_cycles
    end
    if ctx.program[s.m] > 0 then return extra / ctx.program[s.m] end
    return 0
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
                         asl.pct(s.mean), s.m)
  end,

  advice = "One thread misses much more (or less) than the others on this object: give the " ..
           "threads parts of equal locality (same access pattern, same amount of data), or " ..
           "check that the thread's part is laid out contiguously.",
}
