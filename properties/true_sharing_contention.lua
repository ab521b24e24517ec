-- TrueSharingContention: threads write the same words of an object (a
-- shared counter, a lock, a flag): its coherence misses are true sharing,
-- and every write takes the line away from the other cores. The fix is
-- fewer writes to the shared words, not padding.
--
--   condition   coh_miss_true >= min_misses, coh_miss_true / coh_miss >=
--               dominance, at least two threads write the object
--   severity    the object's coherence stall cycles (asl.stall().coh) times
--               coh_miss_true / coh_miss, over the program's estimated cycles
--   confidence  the context's (asl.confidence)
-- the threads that wrote the object
local function writers(ctx) return asl.threads_with(ctx, "writes") end

return {
  name = "TrueSharingContention",
  summary = "threads write the same words of an object: coherence misses are mostly true sharing",
  refines = "HotObject",
  -- evaluated on every object with coherence misses, hot or not
  evaluate_where = "coh_miss",
  -- the symptoms of this cause on the same object (docs/properties.md, "Root
  -- causes and symptoms"): the coherence misses raise the threads' miss
  -- rates and their stall cycles; their findings are reported under this one
  explains = { "ThreadMissRate", "L2ThreadMissRate", "LLCThreadMissRate",
               "UnbalancedThreadMisses", "UnbalancedLC1DataMissRateInThreads",
               "WriteMissesToReadMostly" },
  context = "object",
  needs = { "coh_miss", "coh_miss_true", "writes" },
  params = { min_misses = 16, dominance = 0.5 },

  condition = function(ctx, p)
    local t, c = ctx.v.coh_miss_true, ctx.v.coh_miss
    return t >= p.min_misses and c > 0 and t / c >= p.dominance and #writers(ctx) >= 2
  end,

  confidence = function(ctx, p) return asl.confidence(ctx) end,

  severity = function(ctx, p)
    local c = asl.stall(ctx)
    return asl.severity(ctx, c.coh * ctx.v.coh_miss_true / ctx.v.coh_miss,
                        ctx.share("coh_miss_true"))
  end,

  threads = function(ctx, p)
    local t = asl.select(ctx.threads, function(_, i)
      return (ctx.t.coh_miss_true[i] or 0) > 0 and (ctx.t.writes[i] or 0) > 0 end)
    if #t == 0 then t = writers(ctx) end
    return t
  end,

  evidence = function(ctx, p)
    local w = writers(ctx)
    return string.format("%s coherence misses, %s true sharing; %d threads write it (%s), " ..
                         "%s writes, %s interventions", asl.count(ctx.v.coh_miss),
                         asl.pct(ctx.v.coh_miss_true / ctx.v.coh_miss), #w, asl.thread_list(ctx, w),
                         asl.count(ctx.v.writes), asl.count(ctx.v.intervention or 0))
  end,

  advice = function(ctx, p)
    local w = writers(ctx)
    local o = ctx.object
    return string.format("Threads %s all write the same words of %s (%s, %s writes): " ..
      "accumulate in a per-thread local variable (or a per-thread slot padded to 64 bytes) " ..
      "and combine once per thread at the end, a reduction: %s writes to the shared line " ..
      "become %d.", asl.thread_list(ctx, w), o.name, asl.bytes(o.size), asl.count(ctx.v.writes),
      asl.count(ctx.v.writes), #w)
  end,
}
