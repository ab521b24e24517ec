-- word_writers.lua - a test property: on every cache line the `threads`
-- strategy refined, the words each thread wrote, read from ctx.extra.
-- evidence: "coh=<coh_miss> false=<coh_miss_false> T:OFF/OFF T:OFF ..."
-- (threads in id order, offsets of the words they wrote, ascending).
return {
	name = "WordWriters",
	summary = "test: the words each thread wrote on a refined line",
	context = "line",
	condition = function(ctx, p)
		return ctx.extra ~= nil and ctx.extra:find("line%.") ~= nil
	end,
	severity = function(ctx, p) return 0.001 end,
	evidence = function(ctx, p)
		local coh, false_coh = ctx.extra:match("line%.%-?%d+=(%d+),(%d+),%d+")
		local by = {}
		local ids = {}
		for t, off, w in ctx.extra:gmatch("w%.(%d+)%.(%-?%d+)=(%d+),%d+") do
			t, off, w = tonumber(t), tonumber(off), tonumber(w)
			if w > 0 then
				if not by[t] then
					by[t] = {}
					ids[#ids + 1] = t
				end
				table.insert(by[t], off)
			end
		end
		table.sort(ids)
		local parts = {}
		for _, t in ipairs(ids) do
			table.sort(by[t])
			local offs = {}
			for _, o in ipairs(by[t]) do offs[#offs + 1] = tostring(o) end
			parts[#parts + 1] = t .. ":" .. table.concat(offs, "/")
		end
		return string.format("coh=%s false=%s %s", coh or "?", false_coh or "?",
				     table.concat(parts, " "))
	end,
	threads = function(ctx, p) return {} end,
}
