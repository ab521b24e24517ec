-- WriteMissesToReadMostly (seed 000, 2.1.3): "write misses to a supposedly
-- read-only variable -- a hallmark of false sharing": an object that is
-- almost only read, yet its few writes miss and invalidate the readers'
-- copies, which then miss again (coherence misses).
--
--   condition   reads / mem_ref >= read_share, writes / mem_ref <= 1 - read_share
--               (so reads outnumber writes at least 9 to 1 by default: an object
--               written by read-modify-writes, such as a tally of atomic
--               fetch_adds, counts every access as a read and a write),
--               l1d_miss_wr >= min_misses,
--               l1d_miss_wr / writes >= write_miss_rate (the writes find the
--               line shared or gone), coh_miss >= min_misses
--   severity    the object's coherence stall cycles (asl.stall().coh), over
--               the program's estimated cycles (without them: its share of
--               coh_miss)
--   confidence  the context's (asl.confidence)
return {
  name = "WriteMissesToReadMostly",
  summary = "a read-mostly object whose rare writes miss and invalidate the readers",
  refines = "HotObject",
  -- evaluated on every object with coherence misses, hot or not
  evaluate_where = "coh_miss",
  -- the symptoms: the readers' misses on the lines the writes invalidate
  explains = { "ThreadMissRate", "L2ThreadMissRate", "LLCThreadMissRate",
               "UnbalancedThreadMisses", "UnbalancedLC1DataMissRateInThreads" },
  context = "object",
  needs = { "reads", "writes", "mem_ref", "l1d_miss_wr", "coh_miss" },
  params = { read_share = 0.9, write_miss_rate = 0.5, min_misses = 16 },

  condition = function(ctx, p)
    local v = ctx.v
    -- read-mostly means few writes too: an atomic read-modify-write counts as
    -- a read and a write of one access, so reads alone can reach 100%
    return v.mem_ref > 0 and v.reads / v.mem_ref >= p.read_share and
           v.writes / v.mem_ref <= 1 - p.read_share and
           v.l1d_miss_wr >= p.min_misses and v.writes > 0 and
           v.l1d_miss_wr / v.writes >= p.write_miss_rate and v.coh_miss >= p.min_misses
  end,

  confidence = function(ctx, p) return asl.confidence(ctx) end,

  severity = function(ctx, p)
    return asl.severity(ctx, asl.stall(ctx).coh, ctx.share("coh_miss"))
  end,

  threads = function(ctx, p)
    return asl.select(ctx.threads, function(_, i) return (ctx.t.l1d_miss_wr[i] or 0) > 0 end)
  end,

  evidence = function(ctx, p)
    local v = ctx.v
    return string.format("%s of its accesses read; %s writes, %s of them miss; %s coherence " ..
                         "misses", asl.pct(v.reads / v.mem_ref), asl.count(v.writes),
                         asl.pct(v.l1d_miss_wr / v.writes), asl.count(v.coh_miss))
  end,

  advice = function(ctx, p)
    local o = ctx.object
    local w = asl.select(ctx.threads, function(_, i) return (ctx.t.l1d_miss_wr[i] or 0) > 0 end)
    return string.format("%s (%s) is read-mostly, but the writes of threads %s miss and " ..
      "invalidate every reader's copy: move the written fields (counters, flags) out of the " ..
      "read-mostly lines into a 64-byte aligned line of their own, or write them less often " ..
      "(batch the updates).", o.name, asl.bytes(o.size), asl.threads(w))
  end,
}
