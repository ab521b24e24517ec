-- FalseSharing: coherence misses on an object that the simulator classifies
-- as false sharing (the words another core wrote are not the words this
-- access touches), from at least two writing threads. The fix is layout:
-- give each thread's data lines of its own.
--
--   condition   coh_miss_false >= min_misses, coh_miss_false / coh_miss >=
--               dominance, at least two threads write the object, and the
--               severity is at least min_severity
--   severity    the object's coherence stall cycles (interventions, clean
--               coherence refills, invalidations: asl.stall().coh) times
--               coh_miss_false / coh_miss, over the program's estimated cycles
--   confidence  the context's (asl.confidence)
--   evidence    with the `threads` strategy's notes in ctx.extra
--               (line.<off>=<coh>,<false>,<writes>; w.<tid>.<off>=<writes>,<reads>)
--               the lines and the bytes each thread writes; without them the
--               threads that took the false-sharing misses
local LINE = 64		-- the coherence line of every preset but r10000 (128)

-- the object's coherence stall cycles times its false-sharing share, over
-- the program's estimated cycles (asl.severity: one scale for every property)
local function fs_severity(ctx)
  local c = asl.stall(ctx)
  local share = ctx.v.coh_miss_false / ctx.v.coh_miss
  return asl.severity(ctx, c.coh * share, ctx.share("coh_miss_false"))
end

-- the threads that wrote the object
local function writers(ctx) return asl.threads_with(ctx, "writes") end

-- the threads that write it and take false-sharing misses on it: the ones
-- that contend (not main's initialisation of the block before the workers
-- start); all writers when the per-thread split says nothing
local function contenders(ctx)
  local t = asl.select(ctx.threads, function(_, i)
    return (ctx.t.coh_miss_false[i] or 0) > 0 and (ctx.t.writes[i] or 0) > 0 end)
  if #t == 0 then t = writers(ctx) end
  return t
end

-- per thread: sorted written offsets, and the word size seen
local function layout(ctx)
  local x = asl.extra(ctx)
  local L = { lines = {}, th = {}, word = nil, hot_line = nil }
  local best = -1
  for off, l in pairs(x.line) do
    if l.coh_false > 0 then L.lines[#L.lines + 1] = off end
    if l.coh_false > best then best, L.hot_line = l.coh_false, off end
  end
  table.sort(L.lines)
  for tid, words in pairs(x.word) do
    local offs = {}
    for off, w in pairs(words) do if w.writes > 0 then offs[#offs + 1] = off end end
    table.sort(offs)
    if #offs > 0 then L.th[#L.th + 1] = { tid = tid, offs = offs } end
    for k = 2, #offs do
      local d = offs[k] - offs[k - 1]
      if d > 0 and (L.word == nil or d < L.word) then L.word = d end
    end
  end
  table.sort(L.th, function(a, b) return a.offs[1] < b.offs[1] end)
  L.word = L.word or 8
  if L.word > 8 then L.word = 8 end
  -- contiguous: every thread writes one run of words
  L.contiguous = true
  for _, t in ipairs(L.th) do
    t.lo, t.hi = t.offs[1], t.offs[#t.offs] + L.word
    if t.hi - t.lo > #t.offs * L.word then L.contiguous = false end
  end
  return L, x
end

local function ranges_text(L)
  local parts = {}
  for k, t in ipairs(L.th) do
    if k > 6 then parts[#parts + 1] = "..." break end
    if L.contiguous then
      parts[#parts + 1] = string.format("T%d bytes %d-%d", t.tid, t.lo, t.hi - 1)
    else
      local o = {}
      for j = 1, math.min(4, #t.offs) do o[#o + 1] = tostring(t.offs[j]) end
      parts[#parts + 1] = string.format("T%d words at %s%s", t.tid, table.concat(o, ","),
                                        #t.offs > 4 and ",..." or "")
    end
  end
  return table.concat(parts, ", ")
end

return {
  name = "FalseSharing",
  summary = "coherence misses on an object are mostly false sharing between writing threads",
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
  needs = { "coh_miss", "coh_miss_false", "writes" },
  -- min_severity: false sharing that costs less than this share of the run
  -- is no finding (a handful of coherence misses when per-thread results
  -- are stored once at the end, as an -O2 build of a per-thread
  -- accumulator loop does: 33 misses, 0.014%)
  params = { min_misses = 16, dominance = 0.5, min_severity = 0.001 },

  condition = function(ctx, p)
    local f, c = ctx.v.coh_miss_false, ctx.v.coh_miss
    return f >= p.min_misses and c > 0 and f / c >= p.dominance and #writers(ctx) >= 2 and
           fs_severity(ctx) >= p.min_severity
  end,

  confidence = function(ctx, p) return asl.confidence(ctx) end,

  severity = function(ctx, p) return fs_severity(ctx) end,

  threads = function(ctx, p) return contenders(ctx) end,

  evidence = function(ctx, p)
    local L = layout(ctx)
    local c, w = contenders(ctx), writers(ctx)
    local text = string.format("%s coherence misses, %s false sharing; %s interventions, %s " ..
      "invalidations sent; %d threads write it (%s)", asl.count(ctx.v.coh_miss),
      asl.pct(ctx.v.coh_miss_false / ctx.v.coh_miss), asl.count(ctx.v.intervention or 0),
      asl.count(ctx.v.inval_sent or 0), #c, asl.thread_list(ctx, c))
    if #w > #c then
      local is_c = {}
      for _, id in ipairs(c) do is_c[id] = true end
      local others = asl.select(w, function(id) return not is_c[id] end)
      text = text .. string.format(", %d more without false-sharing misses (%s)", #others,
                                   asl.thread_list(ctx, others))
    end
    if #L.th > 0 then
      text = text .. string.format("; %d line(s) with false sharing, line %d: %s", #L.lines,
                                   L.hot_line or 0, ranges_text(L))
    end
    return text
  end,

  advice = function(ctx, p)
    local o = ctx.object
    local L = layout(ctx)
    local w = contenders(ctx)
    local where = o.name .. (o.site and o.site ~= o.name and (" (" .. o.site .. ")") or "")
    if #L.th >= 2 and L.contiguous then
      local elem = L.th[2].lo - L.th[1].lo
      local used = L.th[1].hi - L.th[1].lo
      if elem <= 0 or elem >= LINE then elem = used end
      local pad = LINE - (elem % LINE)
      return string.format("Threads %s write their own %d-byte elements %d bytes apart in the " ..
        "same %d-byte line of %s (%s): align each per-thread element to %d bytes: " ..
        "struct { /* the %d bytes */ char pad[%d]; } __attribute__((aligned(%d))), and allocate " ..
        "the array with aligned_alloc(%d, nr * %d); or keep per-thread copies and combine them " ..
        "at the end.", asl.threads(asl.map(L.th, function(t) return t.tid end)), used, elem,
        LINE, where, ranges_text(L), LINE, elem, pad, LINE, LINE, LINE)
    end
    if #L.th >= 2 then
      return string.format("Threads %s write interleaved words of the same lines of %s (%s): " ..
        "give each thread a contiguous, %d-byte aligned part (e.g. schedule(static) or chunks " ..
        "of at least %d bytes instead of round-robin single elements).",
        asl.threads(asl.map(L.th, function(t) return t.tid end)), where, ranges_text(L), LINE,
        LINE)
    end
    if o.size <= 4 * LINE then
      local elem = math.floor(o.size / math.max(1, #w))
      local pad = elem < LINE and LINE - elem or 0
      return string.format("Threads %s write different words of %s (%d bytes: ~%d bytes per " ..
        "thread, in %d line(s)): align each per-thread element to %d bytes: struct { /* the %d " ..
        "bytes */ char pad[%d]; } __attribute__((aligned(%d))), allocated with " ..
        "aligned_alloc(%d, " ..
        "nr * %d); or keep per-thread copies and combine them at the end.",
        asl.thread_list(ctx, w), where, o.size, elem, math.ceil(o.size / LINE), LINE, elem, pad, LINE,
        LINE, LINE)
    end
    return string.format("Threads %s write different words of the same %d-byte lines of %s " ..
      "(%s): give each thread a contiguous, %d-byte aligned part (block rather than " ..
      "round-robin distribution, e.g. schedule(static)), or pad per-thread data to %d bytes.",
      asl.thread_list(ctx, w), LINE, where, asl.bytes(o.size), LINE, LINE)
  end,
}
