-- FirstTouchPlacement: with the pagefault backend (`samples` are page
-- faults: first touches), one thread placed at least `threshold` of an
-- object's pages. Under Linux's first-touch policy those pages live on that
-- thread's NUMA node, whoever uses them later (seed 001: master
-- initialises, workers compute -> remote accesses).
--
-- The evidence lists the pages each thread placed ("T0=1024 T1=0 ..."),
-- so `threshold` below 0.5 reports the placement of shared objects too.
local function pages(ctx)
  local t = ctx.t.samples
  local out = {}
  if not t then return out end
  for i = 1, ctx.nr_threads do out[i] = t[i] or 0 end
  return out
end

return {
  name = "FirstTouchPlacement",
  summary = "one thread first-touched at least `threshold` of an object's pages (pagefault backend)",
  context = "object",
  needs = { "samples" },
  params = { threshold = 0.9, min_pages = 16 },

  condition = function(ctx, p)
    local pg = pages(ctx)
    local total = asl.sum(pg)
    return total >= p.min_pages and asl.max(pg) >= p.threshold * total
  end,

  -- the object's share of all first touches: how much of the placement it is
  severity = function(ctx, p)
    return ctx.share("samples")
  end,

  threads = function(ctx, p)
    local pg = pages(ctx)
    local total = asl.sum(pg)
    return asl.select(ctx.threads, function(_, k) return pg[k] >= p.threshold * total end)
  end,

  evidence = function(ctx, p)
    local pg = pages(ctx)
    local k = asl.argmax(pg)
    local parts = {}
    for i = 1, #pg do parts[#parts + 1] = string.format("T%d=%d", ctx.threads[i], pg[i]) end
    return string.format("thread %d placed %d of %d pages (%s); pages per thread: %s",
                         ctx.threads[k], pg[k], asl.sum(pg), asl.pct(pg[k] / asl.sum(pg)),
                         table.concat(parts, " "))
  end,

  advice = "Pages go to the node of the thread that touches them first: initialise the " ..
           "object in parallel with the same distribution of work as the loops that use " ..
           "it (or interleave it: numactl --interleave, mbind), so each thread's part is " ..
           "local to it.",
}
