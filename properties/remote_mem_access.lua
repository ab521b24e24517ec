-- RemoteMemAccess (seed 004's RemoteMemAccessInThreads): threads read or
-- write an object whose pages sit on another NUMA node; their memory
-- accesses (last-level misses) to it are remote. Under first-touch
-- placement the pages sit where the thread that touched them first runs.
--
--   remote(i)   mem_remote[i] / (mem_local[i] + mem_remote[i])
--   condition   the object's mem_remote >= min_remote, and some thread with
--               >= min_accesses memory accesses to it has remote(i) >=
--               threshold (the first toucher's own local accesses, e.g. an
--               initialisation, do not dilute the readers' remote share)
--   severity    mem_remote x (lat_mem_remote - lat_mem_local), the extra
--               latency a local placement would save (scaled to the
--               measured stall cycles), over the program's estimated cycles
--   confidence  the context's (asl.confidence)
--   first touch the MRI does not report where pages are placed or who
--               touched them first (the simulator knows it; `ameba oracle`
--               prints it per page). The property names the likely first
--               toucher: the thread that writes the object and whose memory
--               accesses to it are all local, the most of them.
local function remote_threads(ctx, p)
  local out, share = {}, {}
  for i = 1, ctx.nr_threads do
    local l, r = ctx.t.mem_local[i] or 0, ctx.t.mem_remote[i] or 0
    if l + r >= p.min_accesses and r / (l + r) >= p.threshold then
      out[#out + 1] = ctx.threads[i]
      share[#share + 1] = r / (l + r)
    end
  end
  return out, share
end

local function first_toucher(ctx)
  local best, n = nil, 0
  for i = 1, ctx.nr_threads do
    local l, r, w = ctx.t.mem_local[i] or 0, ctx.t.mem_remote[i] or 0, ctx.t.writes[i] or 0
    if l > n and r == 0 and w > 0 then best, n = ctx.threads[i], l end
  end
  return best, n
end

return {
  name = "RemoteMemAccess",
  summary = "threads' memory accesses to an object are remote (NUMA placement)",
  refines = "HotObject",
  context = "object",
  needs = { "mem_local", "mem_remote", "writes" },
  params = { threshold = 0.5, min_remote = 1000, min_accesses = 100 },

  condition = function(ctx, p)
    if ctx.v.mem_remote < p.min_remote then return false end
    for i = 1, ctx.nr_threads do
      local l, r = ctx.t.mem_local[i] or 0, ctx.t.mem_remote[i] or 0
      if l + r >= p.min_accesses and r / (l + r) >= p.threshold then return true end
    end
    return false
  end,

  confidence = function(ctx, p) return asl.confidence(ctx) end,

  severity = function(ctx, p)
    local c = asl.stall(ctx)
    local extra = ctx.v.mem_remote * (asl.lat.mem_remote - asl.lat.mem_local) * c.scale
    return asl.severity(ctx, extra, ctx.share("mem_remote"))
  end,

  threads = function(ctx, p)
    return (remote_threads(ctx, p))
  end,

  evidence = function(ctx, p)
    local ids, share = remote_threads(ctx, p)
    local ft, n = first_toucher(ctx)
    local l, r = ctx.v.mem_local, ctx.v.mem_remote
    local text = string.format("%s of its %s memory accesses are remote (%s); threads %s: %s " ..
                               "remote", asl.pct(r / (l + r)), asl.count(l + r), asl.count(r),
                               asl.threads(ids), asl.pct(asl.mean(share)))
    if ft then
      text = text .. string.format("; thread %d wrote it with all its %s memory accesses local",
                                   ft, asl.count(n))
    end
    return text
  end,

  advice = function(ctx, p)
    local ids = remote_threads(ctx, p)
    local ft = first_toucher(ctx)
    local o = ctx.object
    local who = ft and string.format("thread %d (it wrote it; its memory accesses to it " ..
                                     "are all local), ", ft) or ""
    return string.format("Pages of %s (%s) were likely first touched by %sso they sit on " ..
      "its node while threads %s use them from another: initialise each part in the thread " ..
      "that uses it (parallel first touch, same partition as the compute loop), or " ..
      "interleave the pages (numactl --interleave=all, mbind MPOL_INTERLEAVE).", o.name,
      asl.bytes(o.size), who, asl.threads(ids))
  end,
}
