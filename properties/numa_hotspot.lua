-- NumaHotspot (seed 001's memory hot spot): one node serves the memory
-- traffic of an object that carries a large share of the program's memory
-- accesses, so that node's memory and links carry it all.
--
-- The MRI reports no per-node figures, only local/remote per thread. One
-- node holds all of an object's pages when its accessing threads split
-- cleanly into threads whose memory accesses are all local (they run on
-- that node) and threads whose accesses are all remote.
--
--   condition   (mem_local + mem_remote) of the object >= share of the
--               program's; its remote share >= min_remote_share; every
--               thread with >= min_accesses memory accesses to it is >=
--               purity local or >= purity remote, with both groups present
--   severity    the simulator has no bandwidth or queueing model, so the
--               cost of the hot spot beyond the remote latency is not
--               estimated: half of the remote extra latency (what spreading
--               the pages over two nodes would recover), over the program's
--               estimated cycles. It ranks below RemoteMemAccess on purpose.
--   confidence  the context's (asl.confidence)
local function split(ctx, p)
  local loc, rem = {}, {}
  for i = 1, ctx.nr_threads do
    local l, r = ctx.t.mem_local[i] or 0, ctx.t.mem_remote[i] or 0
    if l + r >= p.min_accesses then
      if l / (l + r) >= p.purity then loc[#loc + 1] = ctx.threads[i]
      elseif r / (l + r) >= p.purity then rem[#rem + 1] = ctx.threads[i]
      else return nil end
    end
  end
  if #loc == 0 or #rem == 0 then return nil end
  return loc, rem
end

return {
  name = "NumaHotspot",
  summary = "one NUMA node serves all the memory traffic of an object with much of the program's",
  refines = "HotObject",
  context = "object",
  needs = { "mem_local", "mem_remote" },
  params = { share = 0.3, min_remote_share = 0.1, purity = 0.95, min_accesses = 100 },

  condition = function(ctx, p)
    local l, r = ctx.v.mem_local, ctx.v.mem_remote
    local pl, pr = ctx.program.mem_local, ctx.program.mem_remote
    if l + r <= 0 or pl + pr <= 0 then return false end
    return (l + r) / (pl + pr) >= p.share and r / (l + r) >= p.min_remote_share and
           split(ctx, p) ~= nil
  end,

  confidence = function(ctx, p) return asl.confidence(ctx) end,

  severity = function(ctx, p)
    local c = asl.stall(ctx)
    local extra = ctx.v.mem_remote * (asl.lat.mem_remote - asl.lat.mem_local) * c.scale
    return asl.severity(ctx, 0.5 * extra, 0.5 * (ctx.share("mem_remote") or 0))
  end,

  threads = function(ctx, p)
    local loc, rem = split(ctx, p)
    local all = {}
    for _, t in ipairs(loc) do all[#all + 1] = t end
    for _, t in ipairs(rem) do all[#all + 1] = t end
    table.sort(all)
    return all
  end,

  evidence = function(ctx, p)
    local loc, rem = split(ctx, p)
    local l, r = ctx.v.mem_local, ctx.v.mem_remote
    return string.format("%s of the program's memory accesses (%s); threads %s all local, " ..
                         "threads %s all remote: one node holds its pages",
                         asl.pct((l + r) / (ctx.program.mem_local + ctx.program.mem_remote)),
                         asl.count(l + r), asl.threads(loc), asl.threads(rem))
  end,

  advice = function(ctx, p)
    local loc, rem = split(ctx, p)
    local o = ctx.object
    return string.format("All pages of %s (%s) sit on the node of threads %s, which serves " ..
      "the memory traffic of threads %s too: spread them (first touch each part in the thread " ..
      "that uses it, or numactl --interleave=all / mbind MPOL_INTERLEAVE for data every " ..
      "thread reads).", o.name, asl.bytes(o.size), asl.threads(loc), asl.threads(rem))
  end,
}
