-- HotObject: one object or allocation site takes a large share of the run's
-- memory traffic (or misses, or stall cycles: the run's --metric). It is the
-- root of the object properties: the properties that say *why* an object is
-- expensive (FalseSharing, TLBThrashing, RemoteMemAccess, ...) refine it, and
-- where one of them holds it is reported instead (refined_from = HotObject).
--
-- condition   its share of the run's metric, or of the estimated stall
--             cycles, is at least `threshold` (never on page-fault samples:
--             the pagefault backend's `samples` say who placed which pages,
--             FirstTouchPlacement's data, not where memory time goes)
-- severity    the object's stall cycles that no more specific cause claims
--             (all but coherence, TLB and remote-latency cycles) and that a
--             different traversal could save: the miss cycles are counted
--             without their compulsory share (compulsory_miss / l1d_miss;
--             the first touch of each line by a core is the object's size,
--             not its access pattern); over the program's estimated cycles.
--             Without est_cycles: its share of est_stall_cycles, else (count
--             backend) its share of the run's metric
-- confidence  the context's, lowered for sampled estimates (asl.confidence):
--             when the share of the run's metric decides, by the chance
--             that it is at least `threshold` given its 95% interval
return {
  name = "HotObject",
  summary = "an object or allocation site takes at least `threshold` of the run's metric",
  context = "object",
  params = { threshold = 0.05 },

  condition = function(ctx, p)
    -- the pagefault backend's samples are first touches: where pages were
    -- placed (FirstTouchPlacement), not where memory time goes
    if ctx.metric == "samples" then return false end
    local s = ctx.share(ctx.metric)
    local st = ctx.share("est_stall_cycles")
    return (s ~= nil and s >= p.threshold) or (st ~= nil and st >= p.threshold)
  end,

  confidence = function(ctx, p)
    local s = ctx.share(ctx.metric)
    if s ~= nil and s >= p.threshold then
      return asl.confidence(ctx, ctx.metric, p.threshold)
    end
    return asl.confidence(ctx)
  end,

  severity = function(ctx, p)
    local c = asl.stall(ctx)
    local v = ctx.v
    local remote_extra = (v.mem_remote or 0) * (asl.lat.mem_remote - asl.lat.mem_local) * c.scale
    local own = c.total - c.coh - c.tlb - remote_extra
    if v.compulsory_miss and v.l1d_miss and v.l1d_miss > 0 then
      own = own - c.miss * v.compulsory_miss / v.l1d_miss
    end
    return asl.severity(ctx, own, ctx.share("est_stall_cycles") or ctx.share(ctx.metric))
  end,

  evidence = function(ctx, p)
    local m = ctx.metric
    local text = string.format("%s of %s (%s of %s)", asl.pct(ctx.share(m)), m,
                               asl.count(ctx.v[m]), asl.count(ctx.program[m]))
    local stall = ctx.share("est_stall_cycles")
    if stall and m ~= "est_stall_cycles" then
      text = text .. string.format("; %s of stall cycles", asl.pct(stall))
    end
    return text
  end,

  advice = function(ctx, p)
    local o = ctx.object
    local what = o.kind == "bin" and
      string.format("the %d blocks allocated at %s (%s)", o.blocks, o.name, asl.bytes(o.size)) or
      string.format("%s (%s)", o.name, asl.bytes(o.size))
    return "Most memory work goes to " .. what .. ": make its accesses cheaper " ..
           "(traverse it in address order, block loops so a tile stays in cache, use " ..
           "smaller element types, split hot fields from cold ones, pool small blocks) " ..
           "or touch it less often."
  end,
}
