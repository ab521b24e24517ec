-- WordFalseSharing: on one cache line measured word by word (the `words`
-- strategy, exact counts from the watch backend's breakpoints), at least
-- two threads write, and no word is written by more than one of them:
-- the threads share the line but not the data (false sharing, confirmed
-- field by field).
--
-- ctx.extra holds one line per word: "word +8 (b) T0=0 T1=1000 T2=0" (the
-- field name, in parentheses, when DWARF gives it).
-- severity    the share of the line's writes not made by its top writer
--             (0 for one writer, 0.5 for two equal writers): how contended
--             the line is; the watch backend cannot estimate time.

local function words(ctx, p)
  local out = {}
  if not ctx.extra then return out end
  for line in ctx.extra:gmatch("[^\n]+") do
    local off = line:match("^word %+(%d+)")
    if off then
      local w = { off = tonumber(off), field = line:match("^word %+%d+ %(([^)]*)%)"),
                  writers = {}, total = 0 }
      for t, n in line:gmatch("T(%d+)=(%d+)") do
        n = tonumber(n)
        if n >= p.min_writes then
          w.writers[#w.writers + 1] = { t = tonumber(t), n = n }
        end
        w.total = w.total + n
      end
      out[#out + 1] = w
    end
  end
  return out
end

local function writers(ws)
  local set, list = {}, {}
  for _, w in ipairs(ws) do
    for _, x in ipairs(w.writers) do
      if not set[x.t] then set[x.t] = 0; list[#list + 1] = x.t end
      set[x.t] = set[x.t] + x.n
    end
  end
  table.sort(list)
  return set, list
end

return {
  name = "WordFalseSharing",
  summary = "threads write disjoint words of one cache line (words strategy)",
  context = "line",
  params = { min_writes = 1 },

  condition = function(ctx, p)
    local ws = words(ctx, p)
    local _, list = writers(ws)
    if #list < 2 then return false end
    for _, w in ipairs(ws) do
      if #w.writers > 1 then return false end
    end
    return true
  end,

  severity = function(ctx, p)
    local set, list = writers(words(ctx, p))
    local total, top = 0, 0
    for _, t in ipairs(list) do
      total = total + set[t]
      if set[t] > top then top = set[t] end
    end
    if total == 0 then return 0 end
    return (total - top) / total
  end,

  threads = function(ctx, p)
    local _, list = writers(words(ctx, p))
    return list
  end,

  evidence = function(ctx, p)
    local parts = {}
    for _, w in ipairs(words(ctx, p)) do
      for _, x in ipairs(w.writers) do
        local where = w.field and string.format("+%d (%s)", w.off, w.field) or
                      string.format("+%d", w.off)
        parts[#parts + 1] = string.format("T%d wrote %s %dx", x.t, where, x.n)
      end
    end
    return table.concat(parts, "; ")
  end,

  advice = function(ctx, p)
    return "Threads write different words of one cache line of " .. (ctx.object.name or "?") ..
           ": give each thread's data its own cache line (pad or align the fields to " ..
           "64 bytes, or keep per-thread copies and combine them at the end)."
  end,
}
