-- HotObject: one object or allocation site takes a large share of the run's
-- memory traffic (or misses, or stall cycles: the run's --metric).
--
-- condition   its share of the run's metric is at least `threshold`
-- severity    its share of the estimated stall cycles when the backend
--             estimates them (sim), else its share of the run's metric
--             (count backend: memory references)
-- confidence  the context's (1 for exact counts)
return {
  name = "HotObject",
  summary = "an object or allocation site takes at least `threshold` of the run's metric",
  context = "object",
  params = { threshold = 0.05 },

  condition = function(ctx, p)
    local s = ctx.share(ctx.metric)
    return s ~= nil and s >= p.threshold
  end,

  severity = function(ctx, p)
    return ctx.share("est_stall_cycles") or ctx.share(ctx.metric)
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
    local what = o.kind == "bin" and ("the blocks allocated at " .. o.name) or o.name
    return "Most memory work goes to " .. what .. ": make its accesses cheaper " ..
           "(traverse it in address order, block loops so a tile stays in cache, use " ..
           "smaller element types, split hot fields from cold ones) or touch it less often."
  end,
}
