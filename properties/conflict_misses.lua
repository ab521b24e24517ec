-- ConflictMisses: most L1D misses on an object are conflict misses (the
-- simulator's 3C split: a fully associative cache of the same size would
-- have hit): the object is walked with a power-of-two stride that maps the
-- lines of one pass to a few sets.
--
--   condition   conflict_miss >= min_misses and conflict_miss / l1d_miss >=
--               threshold
--   severity    the object's miss stall cycles (asl.stall().miss) times
--               conflict_miss / l1d_miss, over the program's estimated cycles
--   confidence  the context's (asl.confidence)
return {
  name = "ConflictMisses",
  summary = "most L1D misses on an object are conflict misses (power-of-two strides)",
  refines = "HotObject",
  -- the symptoms: the conflict misses raise the threads' L1D and L2 miss rates
  explains = { "ThreadMissRate", "L2ThreadMissRate", "UnbalancedLC1DataMissRateInThreads" },
  context = "object",
  needs = { "conflict_miss", "l1d_miss" },
  params = { threshold = 0.5, min_misses = 1000 },

  condition = function(ctx, p)
    local c = ctx.v.conflict_miss
    return c >= p.min_misses and c / ctx.v.l1d_miss >= p.threshold
  end,

  confidence = function(ctx, p) return asl.confidence(ctx) end,

  severity = function(ctx, p)
    return asl.severity(ctx, asl.stall(ctx).miss * ctx.v.conflict_miss / ctx.v.l1d_miss,
                        ctx.share("conflict_miss"))
  end,

  threads = function(ctx, p) return asl.threads_with(ctx, "conflict_miss", 0.01) end,

  evidence = function(ctx, p)
    return string.format("%s of its %s L1D misses are conflict misses (%s); %s capacity, %s " ..
                         "compulsory", asl.pct(ctx.v.conflict_miss / ctx.v.l1d_miss),
                         asl.count(ctx.v.l1d_miss), asl.count(ctx.v.conflict_miss),
                         asl.count(ctx.v.capacity_miss or 0), asl.count(ctx.v.compulsory_miss or 0))
  end,

  advice = function(ctx, p)
    local o = ctx.object
    return string.format("%s (%s) is walked with a power-of-two stride (a multiple of the L1D " ..
      "way size, 4 KiB), so the lines of one pass fall in one cache set and evict each other " ..
      "(%s of its misses would hit a fully associative cache): pad the leading dimension by " ..
      "one cache line (e.g. [N][4096] -> [N][4096 + 8] for 8-byte elements), or change the " ..
      "stride so that it is not a power of two.", o.name, asl.bytes(o.size),
      asl.pct(ctx.v.conflict_miss / ctx.v.l1d_miss))
  end,
}
