-- UnbalancedThreadMisses: the threads that share the work on an object do
-- unequal amounts of it: one thread's memory cycles on the object (its
-- accesses and misses, in the simulator's latency model) are more than
-- `threshold` above the threads' mean. The other threads wait for it at the
-- next join or barrier. (UnbalancedThreadMissRate compares miss *rates*;
-- threads that run the same code on parts of different sizes have equal
-- rates and unequal work: this property.)
--
--   work(i)     est_cycles[i] on the object (mem_ref[i] without a latency
--               model), over the object's concurrent users
--               (asl.users_view, docs/properties.md "Concurrent users"):
--               the threads with >= min_refs accesses and >= 5% of the mean
--               of the threads that touch it; thread 0 (main) left out when
--               at least two other threads share the object (its serial
--               set-up and checking does not run beside the workers); only
--               the threads alive together with the busiest one (an earlier
--               phase's workers are not compared with this one's); workers
--               recreated every iteration compared by worker slot
--   condition   max(work) - mean(work) > threshold * mean(work)
--   severity    (max(work) - mean(work)) / the program's estimated cycles:
--               the cycles the slowest thread runs beyond a balanced share,
--               which the others spend waiting (without a latency model:
--               the same over the program's mem_ref)
--   confidence  the context's (asl.confidence)
local function work(ctx, p)
  local u = asl.users_view(ctx, p.min_refs)
  local w_m = u.t.est_cycles and "est_cycles" or "mem_ref"
  local v, ref = u.t[w_m], u.t.mem_ref
  if u.nr_threads < 2 then return nil end
  local s = { m = w_m, u = u, ids = u.threads, v = v, ref = ref, mean = asl.mean(v) }
  s.hi = asl.argmax(v)
  s.excess = v[s.hi] - s.mean
  return s
end

return {
  name = "UnbalancedThreadMisses",
  summary = "one thread does more than `threshold` above the threads' mean work on an object",
  refines = "HotObject",
  context = "object",
  needs = { "mem_ref" },
  params = { threshold = 0.5, min_refs = 10000 },

  condition = function(ctx, p)
    local s = work(ctx, p)
    return s ~= nil and s.mean > 0 and s.excess > p.threshold * s.mean
  end,

  confidence = function(ctx, p) return asl.confidence(ctx) end,

  severity = function(ctx, p)
    local s = work(ctx, p)
    if s.m == "est_cycles" then return asl.severity(ctx, s.excess) end
    return ctx.program.mem_ref > 0 and s.excess / ctx.program.mem_ref or 0
  end,

  threads = function(ctx, p)
    local s = work(ctx, p)
    return s.u.members[s.hi]
  end,

  evidence = function(ctx, p)
    local s = work(ctx, p)
    local tot = asl.sum(s.ref)
    return string.format("%s: %s of the %d %s' accesses (%s of %s), %.1fx the mean " ..
                         "(%s %s vs %s)", asl.who(s.u, s.hi), asl.pct(s.ref[s.hi] / tot), #s.v,
                         s.u.slots and "worker slots" or "threads",
                         asl.count(s.ref[s.hi]), asl.count(tot), s.v[s.hi] / s.mean,
                         asl.count(s.v[s.hi]), s.m, asl.count(s.mean))
  end,

  advice = function(ctx, p)
    local s = work(ctx, p)
    local tot = asl.sum(s.ref)
    local who = asl.who(s.u, s.hi)
    return string.format("%s%s does %s of the work on %s (%s) while %d %s share it: " ..
      "split the object in parts of equal work (%s each instead of the current split), or " ..
      "hand out smaller chunks dynamically so that the threads finish together.",
      who:sub(1, 1):upper(), who:sub(2), asl.pct(s.ref[s.hi] / tot), ctx.object.name,
      asl.bytes(ctx.object.size), #s.v, s.u.slots and "worker slots" or "threads",
      asl.pct(1 / #s.v))
  end,
}
