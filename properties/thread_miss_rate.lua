-- ThreadMissRate (after AMEBA's LC1DataMissRateInThreads, seed 004): some
-- thread misses the cache on more than `threshold` of its accesses to an
-- object. Per-thread arrays: ctx.t.<metric>[i] belongs to thread
-- ctx.threads[i].
--
-- The miss metric is the most specific one the backend measures
-- (l1d_miss, then l2_miss, then llc_miss); with none (the count backend)
-- the property does not fire.
local function miss_metric(ctx)
  for _, m in ipairs({ "l1d_miss", "l2_miss", "llc_miss" }) do
    if ctx.t[m] then return m end
  end
  return nil
end

-- Per-thread miss rates over threads with at least min_refs accesses.
local function rates(ctx, p)
  local m = miss_metric(ctx)
  local out, ids = {}, {}
  if not m then return m, out, ids end
  local refs, miss = ctx.t.mem_ref, ctx.t[m]
  for i = 1, ctx.nr_threads do
    if refs[i] >= p.min_refs then
      out[#out + 1] = miss[i] / refs[i]
      ids[#ids + 1] = ctx.threads[i]
    end
  end
  return m, out, ids
end

return {
  name = "ThreadMissRate",
  summary = "a thread misses on more than `threshold` of its accesses to an object",
  context = "object",
  needs = { "mem_ref" },
  params = { threshold = 0.10, min_refs = 1000 },

  condition = function(ctx, p)
    local m, r = rates(ctx, p)
    return m ~= nil and #r > 0 and asl.max(r) > p.threshold
  end,

  -- the cost of the object's misses: its share of stall cycles, else of misses
  severity = function(ctx, p)
    local m = miss_metric(ctx)
    return ctx.share("est_stall_cycles") or ctx.share(m)
  end,

  threads = function(ctx, p)
    local _, r, ids = rates(ctx, p)
    return asl.select(ids, function(_, k) return r[k] > p.threshold end)
  end,

  evidence = function(ctx, p)
    local m, r, ids = rates(ctx, p)
    local k = asl.argmax(r)
    return string.format("thread %d: %s of its accesses miss (%s); %s of all %s", ids[k],
                         asl.pct(r[k]), m, asl.pct(ctx.share(m)), m)
  end,

  advice = "Threads miss the cache often on this object: improve the locality of each " ..
           "thread's accesses (give each thread a contiguous part, block the loops) or " ..
           "shrink the object.",
}
