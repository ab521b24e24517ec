/*
 * lua_proplib.h - the second part of the `asl` helpers every Lua property
 * sees: the cost model that makes severities comparable, confidence from
 * sample counts, and the parser of the strategies' ctx.extra notes.
 *
 * Notes:
 *  - Loaded by lua_prop.c right after the prelude (same sandbox, same
 *    limits); kept in its own file so the property library can grow it
 *    without touching the loader.
 *  - The agent does not see the simulator's latency table (the MRI carries
 *    the geometry only as text), so asl.stall() splits a context's measured
 *    est_stall_cycles over its event counts with the default weights of
 *    the `host` / skylake-sp preset (asl.lat, in cycles). The split is then
 *    scaled so that its parts add up to the measured stall cycles: with
 *    the default latencies it is exact, with another preset the shares are
 *    approximate but the total is still the simulator's.
 *  - Severity = estimated stall cycles of the problem / the program's
 *    estimated cycles (est_cycles) over the same window, so that severities
 *    of different properties compare. Without est_cycles (count backend)
 *    each property falls back to a documented share (docs/properties.md).
 */
#ifndef AMEBA_AGENT_LUA_PROPLIB_H
#define AMEBA_AGENT_LUA_PROPLIB_H

static const char sandbox_proplib[] =
	"local asl = ...\n"
	"asl.lat = { l2_hit = 14, llc_hit = 70, mem_local = 220, mem_remote = 360,\n"
	"            intervention = 120, inval = 100, tlb_miss = 30 }\n"
	"local function pos(x) if x ~= x or x < 0 then return 0 end return x end\n"
	/* values of metric m in v (a table metric -> number), 0 when absent */
	"local function get(v, m) return v[m] or 0 end\n"
	"-- the stall cycles of a table of values, split by cause\n"
	"function asl.stall_of(v)\n"
	"  local L = asl.lat\n"
	"  local c = {}\n"
	"  local iv = get(v, 'intervention')\n"
	"  c.l2 = pos(get(v, 'l1d_miss') - get(v, 'l2_miss')) * L.l2_hit\n"
	"  c.llc = pos(get(v, 'l2_miss') - get(v, 'llc_miss') - iv) * L.llc_hit\n"
	"  c.mem_local = get(v, 'mem_local') * L.mem_local\n"
	"  c.mem_remote = get(v, 'mem_remote') * L.mem_remote\n"
	"  c.intervention = iv * L.intervention\n"
	"  c.inval = get(v, 'inval_sent') * L.inval\n"
	"  c.tlb = get(v, 'tlb_miss') * L.tlb_miss\n"
	"  -- coherence: misses served by another cache or, clean, by the LLC,\n"
	"  -- plus the invalidations that writes had to send\n"
	"  local coh_clean = math.min(pos(get(v, 'coh_miss') - iv), pos(get(v, 'l2_miss') - get(v, 'llc_miss') - iv))\n"
	"  c.coh = c.intervention + coh_clean * L.llc_hit + c.inval\n"
	"  c.model = c.l2 + c.llc + c.mem_local + c.mem_remote + c.intervention + c.inval + c.tlb\n"
	"  local measured = v.est_stall_cycles\n"
	"  c.scale = (measured and c.model > 0) and measured / c.model or 1\n"
	"  for _, k in ipairs({ 'l2', 'llc', 'mem_local', 'mem_remote', 'intervention', 'inval', 'tlb', 'coh' }) do\n"
	"    c[k] = c[k] * c.scale\n"
	"  end\n"
	"  c.miss = c.l2 + c.llc + c.mem_local + c.mem_remote + c.intervention\n"
	"  c.mem = c.mem_local + c.mem_remote\n"
	"  c.total = measured or c.model\n"
	"  return c\n"
	"end\n"
	"function asl.stall(ctx) return asl.stall_of(ctx.v) end\n"
	"-- the values of thread index i (1-based) as a table metric -> number\n"
	"function asl.thread_values(ctx, i)\n"
	"  local v = {}\n"
	"  for m, arr in pairs(ctx.t) do v[m] = arr[i] end\n"
	"  return v\n"
	"end\n"
	"-- severity: cycles / the program's estimated cycles; `fallback` (a share)\n"
	"-- when the backend estimates no cycles\n"
	"function asl.severity(ctx, cycles, fallback)\n"
	"  local total = ctx.program.est_cycles\n"
	"  if total and total > 0 then return math.min(1, pos(cycles) / total) end\n"
	"  return fallback or 0\n"
	"end\n"
	"-- confidence: the context's, lowered for estimates by the relative error\n"
	"-- of a count of n samples (1 / sqrt(n))\n"
	"function asl.confidence(ctx)\n"
	"  local c = ctx.confidence or 1\n"
	"  local n = ctx.samples or 0\n"
	"  if n > 0 then c = c * math.max(0, 1 - 1 / math.sqrt(n)) end\n"
	"  return c\n"
	"end\n"
	"-- ctx.extra (`key=value` lines) parsed: kv[key] = value; line[off] =\n"
	"-- { coh, coh_false, writes }; word[tid][off] = { writes, reads }\n"
	"function asl.extra(ctx)\n"
	"  local r = { kv = {}, line = {}, word = {}, nr_lines = 0 }\n"
	"  local s = ctx.extra\n"
	"  if type(s) ~= 'string' then return r end\n"
	"  for key, val in s:gmatch('([^%s=]+)=([^\\n]*)') do\n"
	"    r.kv[key] = val\n"
	"    local off = key:match('^line%.(%d+)$')\n"
	"    if off then\n"
	"      local a, b, w = val:match('^%s*(%d+)%s*,%s*(%d+)%s*,%s*(%d+)')\n"
	"      if a then\n"
	"        r.line[tonumber(off)] = { coh = tonumber(a), coh_false = tonumber(b), writes = tonumber(w) }\n"
	"        r.nr_lines = r.nr_lines + 1\n"
	"      end\n"
	"    else\n"
	"      local tid, woff = key:match('^w%.(%d+)%.(%d+)$')\n"
	"      local w, rd = val:match('^%s*(%d+)%s*,%s*(%d+)')\n"
	"      if tid and w then\n"
	"        tid = tonumber(tid)\n"
	"        r.word[tid] = r.word[tid] or {}\n"
	"        r.word[tid][tonumber(woff)] = { writes = tonumber(w), reads = tonumber(rd) }\n"
	"      end\n"
	"    end\n"
	"  end\n"
	"  return r\n"
	"end\n"
	"-- the keys of a table, sorted\n"
	"function asl.sorted_keys(t)\n"
	"  local k = {}\n"
	"  for key in pairs(t) do k[#k + 1] = key end\n"
	"  table.sort(k)\n"
	"  return k\n"
	"end\n"
	"-- per-thread rates miss/ref over the threads with at least min_refs refs:\n"
	"-- { r = rates, ids = thread ids, ref = refs, miss = misses, idx = ctx index }\n"
	"function asl.rates(ctx, miss_m, ref_m, min_refs)\n"
	"  local out = { r = {}, ids = {}, ref = {}, miss = {}, idx = {} }\n"
	"  local refs, miss = ctx.t[ref_m], ctx.t[miss_m]\n"
	"  if not refs or not miss then return out end\n"
	"  for i = 1, ctx.nr_threads do\n"
	"    if refs[i] >= (min_refs or 1) then\n"
	"      local k = #out.r + 1\n"
	"      out.r[k], out.ids[k], out.ref[k], out.miss[k], out.idx[k] = miss[i] / refs[i], ctx.threads[i], refs[i], miss[i], i\n"
	"    end\n"
	"  end\n"
	"  return out\n"
	"end\n"
	"-- the stall cycles per event of metric m on this context (0 when none)\n"
	"function asl.per_event(ctx, cycles, m)\n"
	"  local n = ctx.v[m] or 0\n"
	"  if n <= 0 then return 0 end\n"
	"  return cycles / n\n"
	"end\n"
	"-- the threads (ids) whose value of metric m is at least share of the largest\n"
	"function asl.threads_with(ctx, m, share)\n"
	"  local t = ctx.t[m]\n"
	"  if not t then return {} end\n"
	"  local top = asl.max(t)\n"
	"  local out = {}\n"
	"  for i = 1, ctx.nr_threads do\n"
	"    if top > 0 and t[i] > 0 and t[i] >= (share or 0) * top then out[#out + 1] = ctx.threads[i] end\n"
	"  end\n"
	"  return out\n"
	"end\n";

#endif /* AMEBA_AGENT_LUA_PROPLIB_H */
