-- object_extra.lua - a test property: on every object the `threads`
-- strategy refined, its per-thread writes and its word-level evidence.
-- evidence: "writes=W0/W1/... | <ctx.extra with newlines as ';'>"
return {
	name = "ObjectExtra",
	summary = "test: per-thread writes and ctx.extra of a refined object",
	context = "object",
	condition = function(ctx, p)
		return ctx.extra ~= nil and ctx.extra:find("line%.") ~= nil
	end,
	severity = function(ctx, p) return 0.002 end,
	evidence = function(ctx, p)
		local w = {}
		for i = 1, ctx.nr_threads do
			w[#w + 1] = string.format("%d", ctx.t.writes[i])
		end
		return "writes=" .. table.concat(w, "/") .. " | " .. ctx.extra:gsub("\n", ";")
	end,
	threads = function(ctx, p) return {} end,
}
