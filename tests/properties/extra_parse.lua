-- A test property: asl.extra() parses the `threads` strategy's notes
-- (line.<off>=<coh>,<false>,<writes>; w.<tid>.<off>=<writes>,<reads>) from a
-- synthetic ctx.extra. It holds on every object context when every check
-- passes, and errors (disabling itself, named in the report) when one fails.
local SYNTH = "measured=exact\nline.0=120,118,400\nline.64=3,0,9\n" ..
              "w.1.0=200,10\nw.1.8=200,0\nw.2.16=150,5\nw.3.24=50,50\nbogus line\n"

local function check(cond, what)
  if not cond then error("asl.extra: " .. what, 2) end
end

return {
  name = "ExtraParseCheck",
  summary = "test: asl.extra parses a synthetic ctx.extra",
  context = "object",
  condition = function(ctx, p)
    local x = asl.extra({ extra = SYNTH })
    check(x.kv.measured == "exact", "kv measured")
    check(x.nr_lines == 2, "two lines, got " .. tostring(x.nr_lines))
    check(x.line[0].coh == 120 and x.line[0].coh_false == 118 and x.line[0].writes == 400, "line 0")
    check(x.line[64].coh == 3 and x.line[64].coh_false == 0, "line 64")
    check(x.word[1][0].writes == 200 and x.word[1][0].reads == 10, "w.1.0")
    check(x.word[1][8].writes == 200 and x.word[1][8].reads == 0, "w.1.8")
    check(x.word[2][16].writes == 150 and x.word[3][24].reads == 50, "w.2.16, w.3.24")
    check(x.word[4] == nil, "no thread 4")
    local empty = asl.extra({})
    check(empty.nr_lines == 0 and next(empty.word) == nil, "no extra")
    return true
  end,
  severity = function(ctx, p) return 0 end,
  evidence = "asl.extra parsed the synthetic notes",
}
