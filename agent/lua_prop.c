/*
 * lua_prop.c - properties written in Lua 5.4, each in a sandbox of its own.
 *
 * Notes:
 *  - One lua_State per property file, created with lua_newstate() and the
 *    agent's allocator, which refuses to grow the state beyond
 *    limits->mem_bytes (16 MiB by default). Lua then raises a memory error
 *    (after an emergency collection), which ends the call.
 *  - Libraries: base, string, table, math, utf8, and the `asl` helpers
 *    below, extended by the property library's cost model and ctx.extra
 *    parser (lua_proplib.h, run in the same sandbox right after the
 *    prelude). Not opened: io, os, package, debug, coroutine. Removed from
 *    base: dofile, loadfile, load, require, collectgarbage; string.dump.
 *    Chunks are loaded in text mode only (no precompiled bytecode).
 *  - A count hook runs every AGENT_LUA_HOOK_EVERY VM instructions: it keeps
 *    the current line (for memory errors, whose messages have none) and
 *    raises "instruction limit exceeded" once a call has run
 *    limits->nr_instructions instructions. From then on the hook fires on
 *    every instruction, so a property that catches the error with pcall
 *    cannot make progress either.
 *  - Every call into Lua (the file's chunk, each property function) is a
 *    lua_pcall with a message handler that adds "file:line:" when the error
 *    lacks it; messages are rewritten to carry the full path of the file.
 *  - Not bounded: the time of a single call into C (a pathological
 *    string.find pattern on a 16 MiB string). Documented.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "agent.h"
#include "lua_proplib.h"
#include "plugins.h"
#include "search.h"

#define AGENT_LUA_HOOK_EVERY 100
#define AGENT_LUA_MAX_FILE (1u << 20)

struct agent_lua {
	lua_State *L;
	char *path;
	char short_src[LUA_IDSIZE];	/* how Lua names the chunk in messages */
	size_t mem_used, mem_limit;
	int mem_exceeded;
	uint64_t instr_used, instr_limit;
	int instr_exceeded;
	int last_line;
	int ref_prop;			/* registry: the property table */
	int ref_params;			/* registry: the parameter table, or LUA_NOREF */
	struct ameba_param *params;	/* declared parameters (owned) */
	uint32_t nr_params;
	const struct agent_property *prop;
};

/* ---- the sandbox ---- */

static void *sandbox_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct agent_lua *l = ud;
	size_t old = ptr ? osize : 0;
	void *np;

	if (nsize == 0) {
		free(ptr);
		l->mem_used -= old;
		return NULL;
	}
	if (nsize > old && l->mem_used - old + nsize > l->mem_limit) {
		l->mem_exceeded = 1;
		return NULL;
	}
	np = realloc(ptr, nsize);
	if (!np)
		return NULL;
	l->mem_used = l->mem_used - old + nsize;
	return np;
}

static struct agent_lua *sandbox_of(lua_State *L)
{
	void *ud;

	lua_getallocf(L, &ud);
	return ud;
}

static void sandbox_hook(lua_State *L, lua_Debug *ar)
{
	struct agent_lua *l = sandbox_of(L);

	l->instr_used += l->instr_exceeded ? 1 : AGENT_LUA_HOOK_EVERY;
	if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0)
		l->last_line = ar->currentline;
	if (l->instr_used <= l->instr_limit)
		return;
	if (!l->instr_exceeded) {
		l->instr_exceeded = 1;
		lua_sethook(L, sandbox_hook, LUA_MASKCOUNT, 1);
	}
	lua_pushfstring(L, "%s:%d: instruction limit exceeded (%I instructions per call); "
			"a loop that does not end?", ar->short_src, ar->currentline,
			(lua_Integer)l->instr_limit);
	lua_error(L);
}

/* Arms the limits for one call. */
static void sandbox_arm(struct agent_lua *l)
{
	l->instr_used = 0;
	l->instr_exceeded = 0;
	l->last_line = 0;
	lua_sethook(l->L, sandbox_hook, LUA_MASKCOUNT, AGENT_LUA_HOOK_EVERY);
}

/*
 * Message handler: make sure the message says where, preferring the
 * innermost line of the property's own file (an error inside an asl helper
 * or a library function is reported at the property's line that called it).
 */
static int sandbox_msgh(lua_State *L)
{
	struct agent_lua *l = sandbox_of(L);
	const char *msg = lua_tostring(L, 1);
	size_t n = strlen(l->short_src);
	lua_Debug ar;

	if (!msg) {
		if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
			msg = lua_tostring(L, -1);
		else
			msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
	}
	if (n && !strncmp(msg, l->short_src, n) && msg[n] == ':' && msg[n + 1] >= '0' &&
	    msg[n + 1] <= '9')
		return 1;
	for (int level = 1; lua_getstack(L, level, &ar); level++) {
		if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0 && !strcmp(ar.short_src, l->short_src)) {
			lua_pushfstring(L, "%s:%d: %s", ar.short_src, ar.currentline, msg);
			return 1;
		}
	}
	lua_pushstring(L, msg);
	return 1;
}

/*
 * asl.severity_of(saved_cycles, est_cycles): ameba_severity_of() for Lua
 * (and ASL-compiled) properties; -1 when est_cycles is nil or not positive.
 */
static int prop_lua_severity_of(lua_State *L)
{
	double saved = luaL_checknumber(L, 1);
	double total = luaL_optnumber(L, 2, 0);

	lua_pushnumber(L, ameba_severity_of(saved, total));
	return 1;
}

/*
 * asl.stall_of(v): ameba_stall_of() for Lua properties, on a table of
 * metric values by name (ctx.v, or one thread's, asl.thread_values()); a
 * metric absent from v is not measured. Returns the split as a table (the
 * fields of struct ameba_stall).
 */
static int prop_lua_stall_of(lua_State *L)
{
	uint8_t has[AMEBA_M_NR] = { 0 };
	double v[AMEBA_M_NR] = { 0 };
	struct ameba_stall c;

	luaL_checktype(L, 1, LUA_TTABLE);
	for (int m = 0; m < AMEBA_M_NR; m++) {
		if (lua_getfield(L, 1, ameba_metric_info(m)->name) == LUA_TNUMBER) {
			has[m] = 1;
			v[m] = lua_tonumber(L, -1);
		}
		lua_pop(L, 1);
	}
	ameba_stall_of(has, v, AMEBA_M_NR, &c);
	lua_createtable(L, 0, 13);
#define STALL_FIELD(f) (lua_pushnumber(L, c.f), lua_setfield(L, -2, #f))
	STALL_FIELD(l2);
	STALL_FIELD(llc);
	STALL_FIELD(mem_local);
	STALL_FIELD(mem_remote);
	STALL_FIELD(intervention);
	STALL_FIELD(inval);
	STALL_FIELD(tlb);
	STALL_FIELD(coh);
	STALL_FIELD(miss);
	STALL_FIELD(mem);
	STALL_FIELD(model);
	STALL_FIELD(scale);
	STALL_FIELD(total);
#undef STALL_FIELD
	return 1;
}

static int sandbox_print(lua_State *L)
{
	struct agent_lua *l = sandbox_of(L);
	int n = lua_gettop(L);

	fprintf(stderr, "ameba: %s:", l->path);
	for (int i = 1; i <= n; i++)
		fprintf(stderr, " %s", luaL_tolstring(L, i, NULL)), lua_pop(L, 1);
	fputc('\n', stderr);
	return 0;
}

/*
 * Helpers every property can use (the ASL vocabulary over per-thread
 * arrays: sum, max, min, mean over an index range; element-wise ratios;
 * formatting). Loaded before the property file.
 */
static const char sandbox_prelude[] =
	"local asl = {}\n"
	"local function range(t, i, j) return i or 1, j or #t end\n"
	"function asl.sum(t, i, j) local s = 0 i, j = range(t, i, j) for k = i, j do s = s + t[k] end return s end\n"
	"function asl.max(t, i, j) local m i, j = range(t, i, j) for k = i, j do if m == nil or t[k] > m then m = t[k] end end return m or 0 end\n"
	"function asl.min(t, i, j) local m i, j = range(t, i, j) for k = i, j do if m == nil or t[k] < m then m = t[k] end end return m or 0 end\n"
	"function asl.mean(t, i, j) i, j = range(t, i, j) if j < i then return 0 end return asl.sum(t, i, j) / (j - i + 1) end\n"
	"function asl.argmax(t) local a for k = 1, #t do if a == nil or t[k] > t[a] then a = k end end return a end\n"
	"function asl.argmin(t) local a for k = 1, #t do if a == nil or t[k] < t[a] then a = k end end return a end\n"
	"function asl.ratio(a, b) local r = {} for k = 1, #a do local d = b[k] r[k] = (d and d ~= 0) and a[k] / d or 0 end return r end\n"
	"function asl.map(t, f) local r = {} for k = 1, #t do r[k] = f(t[k], k) end return r end\n"
	"function asl.select(t, f) local r = {} for k = 1, #t do if f(t[k], k) then r[#r + 1] = t[k] end end return r end\n"
	"function asl.pct(x) return string.format('%.1f%%', 100 * (x or 0)) end\n"
	"function asl.count(n)\n"
	"  n = n or 0\n"
	"  if n >= 1e9 then return string.format('%.1fG', n / 1e9) end\n"
	"  if n >= 1e6 then return string.format('%.1fM', n / 1e6) end\n"
	"  if n >= 1e4 then return string.format('%.1fk', n / 1e3) end\n"
	"  return string.format('%.0f', n)\n"
	"end\n"
	"function asl.bytes(n)\n"
	"  n = n or 0\n"
	"  if n >= 1 << 30 then return string.format('%.1f GiB', n / (1 << 30)) end\n"
	"  if n >= 1 << 20 then return string.format('%.1f MiB', n / (1 << 20)) end\n"
	"  if n >= 1 << 10 then return string.format('%.1f KiB', n / (1 << 10)) end\n"
	"  return string.format('%d B', n)\n"
	"end\n"
	"function asl.threads(ids)\n"
	"  local out, k = {}, 1\n"
	"  while k <= #ids do\n"
	"    local j = k\n"
	"    while j < #ids and ids[j + 1] == ids[j] + 1 do j = j + 1 end\n"
	"    out[#out + 1] = (j > k) and (ids[k] .. '-' .. ids[j]) or tostring(ids[k])\n"
	"    k = j + 1\n"
	"  end\n"
	"  return table.concat(out, ',')\n"
	"end\n"
	"return asl\n";

static int open_sandbox_libs(lua_State *L)
{
	static const luaL_Reg libs[] = {
		{ LUA_GNAME, luaopen_base },
		{ LUA_STRLIBNAME, luaopen_string },
		{ LUA_TABLIBNAME, luaopen_table },
		{ LUA_MATHLIBNAME, luaopen_math },
		{ LUA_UTF8LIBNAME, luaopen_utf8 },
		{ NULL, NULL },
	};
	static const char *const removed[] = { "dofile", "loadfile", "load", "require",
					       "collectgarbage", NULL };

	for (const luaL_Reg *lib = libs; lib->func; lib++) {
		luaL_requiref(L, lib->name, lib->func, 1);
		lua_pop(L, 1);
	}
	for (int i = 0; removed[i]; i++) {
		lua_pushnil(L);
		lua_setglobal(L, removed[i]);
	}
	lua_getglobal(L, LUA_STRLIBNAME);
	lua_pushnil(L);
	lua_setfield(L, -2, "dump");
	lua_pop(L, 1);
	lua_pushcfunction(L, sandbox_print);
	lua_setglobal(L, "print");
	return 0;
}

/*
 * Rewrites "short_src:LINE: text" as "path:LINE: text" so the user sees the
 * file's full path (Lua shortens long chunk names).
 */
static void sandbox_message(struct agent_lua *l, const char *raw, char *msg, size_t len)
{
	size_t n = strlen(l->short_src);

	if (!raw)
		raw = "(no message)";
	if (!strncmp(raw, l->short_src, n) && raw[n] == ':')
		snprintf(msg, len, "%s%s", l->path, raw + n);
	else if (!strncmp(raw, l->path, strlen(l->path)))
		snprintf(msg, len, "%s", raw);
	else
		snprintf(msg, len, "%s: %s", l->path, raw);
}

/*
 * Calls the function on top of the stack (below its nargs arguments) under
 * the limits. On success nres results are left on the stack; on failure
 * msg says why and the stack is as before the function was pushed.
 */
static int sandbox_call(struct agent_lua *l, int nargs, int nres, int fn_line, char *msg,
			size_t len)
{
	lua_State *L = l->L;
	int base = lua_gettop(L) - nargs, rc;

	lua_pushcfunction(L, sandbox_msgh);
	lua_insert(L, base);
	sandbox_arm(l);
	l->mem_exceeded = 0;
	rc = lua_pcall(L, nargs, nres, base);
	lua_sethook(L, NULL, 0, 0);
	if (rc == LUA_OK) {
		lua_remove(L, base);
		return 0;
	}
	if (rc == LUA_ERRMEM || l->mem_exceeded) {
		int line = l->last_line ? l->last_line : fn_line;

		snprintf(msg, len, "%s:%d: memory limit exceeded (%zu MiB per property state); "
			 "a table or string that grows without bound?", l->path, line,
			 l->mem_limit >> 20);
	} else {
		sandbox_message(l, lua_tostring(L, -1), msg, len);
	}
	lua_settop(L, base - 1);
	return AMEBA_EPROTO;
}

/* ---- loading ---- */

static int field_type(lua_State *L, int idx, const char *key)
{
	return lua_getfield(L, idx, key);
}

static int cmp_param(const void *a, const void *b)
{
	return strcmp(((const struct ameba_param *)a)->name, ((const struct ameba_param *)b)->name);
}

/* Reads the params table at index t into l->params. */
static int load_params(struct agent_lua *l, int t, char *msg, size_t len)
{
	lua_State *L = l->L;
	uint32_t cap = 0;

	lua_pushnil(L);
	while (lua_next(L, t)) {
		struct ameba_param *p;
		char buf[64];

		if (lua_type(L, -2) != LUA_TSTRING) {
			snprintf(msg, len, "%s: params: keys must be names, e.g. params = { threshold = 0.05 }",
				 l->path);
			lua_pop(L, 2);
			return AMEBA_EINVAL;
		}
		if (l->nr_params == cap) {
			cap = cap ? 2 * cap : 8;
			p = realloc(l->params, cap * sizeof(*p));
			if (!p) {
				lua_pop(L, 2);
				return AMEBA_ENOMEM;
			}
			l->params = p;
		}
		p = &l->params[l->nr_params];
		memset(p, 0, sizeof(*p));
		if (lua_isinteger(L, -1)) {
			p->type = AMEBA_PARAM_INT;
			snprintf(buf, sizeof(buf), "%lld", (long long)lua_tointeger(L, -1));
		} else if (lua_type(L, -1) == LUA_TNUMBER) {
			p->type = AMEBA_PARAM_DOUBLE;
			snprintf(buf, sizeof(buf), "%.15g", lua_tonumber(L, -1));
		} else if (lua_type(L, -1) == LUA_TSTRING) {
			const char *k = lua_tostring(L, -2);
			size_t kl = strlen(k);

			p->type = (!strcmp(k, "metric") || (kl > 7 && !strcmp(k + kl - 7, "_metric")))
					  ? AMEBA_PARAM_METRIC : AMEBA_PARAM_STRING;
			if (p->type == AMEBA_PARAM_METRIC && ameba_metric_by_name(lua_tostring(L, -1)) < 0) {
				snprintf(msg, len, "%s: params.%s: '%s' is not a metric (see `ameba list "
					 "metrics`)", l->path, k, lua_tostring(L, -1));
				lua_pop(L, 2);
				return AMEBA_EINVAL;
			}
			snprintf(buf, sizeof(buf), "%s", lua_tostring(L, -1));
		} else {
			snprintf(msg, len, "%s: params.%s: the default must be a number or a string, "
				 "got a %s", l->path, lua_tostring(L, -2), luaL_typename(L, -1));
			lua_pop(L, 2);
			return AMEBA_EINVAL;
		}
		p->name = strdup(lua_tostring(L, -2));
		p->def = strdup(buf);
		p->help = "";
		if (!p->name || !p->def) {
			free((char *)p->name);
			free((char *)p->def);
			lua_pop(L, 2);
			return AMEBA_ENOMEM;
		}
		l->nr_params++;
		lua_pop(L, 1);
	}
	qsort(l->params, l->nr_params, sizeof(*l->params), cmp_param);
	return 0;
}

/* The line where the function on top of the stack is defined, or 0. */
static int fn_line(lua_State *L)
{
	lua_Debug ar;

	lua_pushvalue(L, -1);
	if (!lua_getinfo(L, ">S", &ar))
		return 0;
	return ar.linedefined > 0 ? ar.linedefined : 0;
}

static int load_table(struct agent_lua *l, struct agent_property *p, char *msg, size_t len)
{
	lua_State *L = l->L;
	int t = lua_gettop(L), type, rc;
	static const char *const fns[] = { "condition", "severity" };
	static const char *const opt_fns[] = { "confidence", "evidence", "advice", "threads" };

	if (!lua_istable(L, t)) {
		snprintf(msg, len, "%s: the file must return a property table, e.g. return { name = "
			 "\"MyProperty\", condition = function(ctx, p) ... end, severity = ... }; it "
			 "returned a %s", l->path, luaL_typename(L, t));
		return AMEBA_EINVAL;
	}
	if (field_type(L, t, "name") != LUA_TSTRING || !lua_tostring(L, -1)[0]) {
		snprintf(msg, len, "%s: the property table has no name = \"...\" string", l->path);
		return AMEBA_EINVAL;
	}
	p->name = strdup(lua_tostring(L, -1));
	lua_pop(L, 1);
	for (const char *c = p->name ? p->name : ""; *c; c++)
		if (!(*c == '_' || *c == '-' || *c == '.' || (*c >= '0' && *c <= '9') ||
		      (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z'))) {
			snprintf(msg, len, "%s: name '%s' may only have letters, digits, '_', '-', '.'",
				 l->path, p->name);
			return AMEBA_EINVAL;
		}
	type = field_type(L, t, "summary");
	p->summary = strdup(type == LUA_TSTRING ? lua_tostring(L, -1) : "");
	lua_pop(L, 1);
	type = field_type(L, t, "refines");
	if (type == LUA_TSTRING && lua_tostring(L, -1)[0])
		p->refines = strdup(lua_tostring(L, -1));
	else if (type != LUA_TNIL && type != LUA_TSTRING) {
		snprintf(msg, len, "%s: refines must be the name of another property (a string)",
			 l->path);
		return AMEBA_EINVAL;
	}
	lua_pop(L, 1);
	type = field_type(L, t, "explains");
	if (type == LUA_TTABLE) {
		lua_Integer n = luaL_len(L, -1);

		for (lua_Integer i = 1; i <= n; i++) {
			lua_geti(L, -1, i);
			if (lua_type(L, -1) != LUA_TSTRING || !lua_tostring(L, -1)[0]) {
				snprintf(msg, len, "%s: explains[%lld] must be a property name (a "
					 "string), e.g. explains = { \"ThreadMissRate\" }", l->path,
					 (long long)i);
				return AMEBA_EINVAL;
			}
			if (agent_property_add_explains(p, lua_tostring(L, -1)))
				return AMEBA_ENOMEM;
			lua_pop(L, 1);
		}
	} else if (type != LUA_TNIL) {
		snprintf(msg, len, "%s: explains must be a list of property names, e.g. explains = "
			 "{ \"ThreadMissRate\" }", l->path);
		return AMEBA_EINVAL;
	}
	lua_pop(L, 1);
	type = field_type(L, t, "evaluate_where");
	if (type == LUA_TSTRING && ameba_metric_by_name(lua_tostring(L, -1)) >= 0) {
		p->has_where = 1;
		p->where_metric = ameba_metric_by_name(lua_tostring(L, -1));
	} else if (type != LUA_TNIL) {
		snprintf(msg, len, "%s: evaluate_where must be a metric name (`ameba list metrics`), "
			 "e.g. evaluate_where = \"coh_miss\"; got %s", l->path,
			 type == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1));
		return AMEBA_EINVAL;
	}
	lua_pop(L, 1);
	type = field_type(L, t, "context");
	if (type == LUA_TNIL) {
		p->ctx_kind = AMEBA_CTX_OBJECT;
	} else if (type != LUA_TSTRING || agent_ctx_kind_by_name(lua_tostring(L, -1)) < 0) {
		snprintf(msg, len, "%s: context must be \"object\", \"region\", \"program\" or "
			 "\"line\"; got %s", l->path,
			 type == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1));
		return AMEBA_EINVAL;
	} else {
		p->ctx_kind = agent_ctx_kind_by_name(lua_tostring(L, -1));
	}
	lua_pop(L, 1);
	type = field_type(L, t, "needs");
	if (type == LUA_TTABLE) {
		lua_Integer n = luaL_len(L, -1);

		for (lua_Integer i = 1; i <= n; i++) {
			int m;

			lua_geti(L, -1, i);
			m = lua_type(L, -1) == LUA_TSTRING ? ameba_metric_by_name(lua_tostring(L, -1)) : -1;
			if (m < 0) {
				snprintf(msg, len, "%s: needs[%lld]: '%s' is not a metric; `ameba list "
					 "metrics` prints the names", l->path, (long long)i,
					 lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?");
				return AMEBA_EINVAL;
			}
			if (p->nr_needs < AMEBA_M_NR)
				p->needs[p->nr_needs++] = m;
			lua_pop(L, 1);
		}
	} else if (type != LUA_TNIL) {
		snprintf(msg, len, "%s: needs must be a list of metric names, e.g. needs = "
			 "{ \"l1d_miss\", \"mem_ref\" }", l->path);
		return AMEBA_EINVAL;
	}
	lua_pop(L, 1);
	type = field_type(L, t, "params");
	if (type == LUA_TTABLE) {
		rc = load_params(l, lua_gettop(L), msg, len);
		if (rc)
			return rc;
	} else if (type != LUA_TNIL) {
		snprintf(msg, len, "%s: params must be a table of defaults, e.g. params = "
			 "{ threshold = 0.05 }", l->path);
		return AMEBA_EINVAL;
	}
	lua_pop(L, 1);
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		if (field_type(L, t, fns[i]) != LUA_TFUNCTION) {
			snprintf(msg, len, "%s: property %s has no %s = function(ctx, p) ... end",
				 l->path, p->name, fns[i]);
			return AMEBA_EINVAL;
		}
		lua_pop(L, 1);
	}
	for (size_t i = 0; i < sizeof(opt_fns) / sizeof(opt_fns[0]); i++) {
		type = field_type(L, t, opt_fns[i]);
		if (type != LUA_TNIL && type != LUA_TFUNCTION &&
		    !(type == LUA_TSTRING && strcmp(opt_fns[i], "threads")) &&
		    !(type == LUA_TNUMBER && !strcmp(opt_fns[i], "confidence"))) {
			snprintf(msg, len, "%s: property %s: %s must be a function(ctx, p)%s", l->path,
				 p->name, opt_fns[i],
				 !strcmp(opt_fns[i], "confidence") ? " or a number" :
				 !strcmp(opt_fns[i], "threads") ? "" : " or a string");
			return AMEBA_EINVAL;
		}
		lua_pop(L, 1);
	}
	if (!p->name || !p->summary)
		return AMEBA_ENOMEM;
	lua_pushvalue(L, t);
	l->ref_prop = luaL_ref(L, LUA_REGISTRYINDEX);
	p->params = l->params;
	p->nr_params = l->nr_params;
	return 0;
}

struct load_args {
	struct agent_lua *l;
	struct agent_property *p;
	char *msg;
	size_t len;
	int rc;
};

/* lua_CFunction(table, args): runs load_table protected. */
static int load_table_body(lua_State *L)
{
	struct load_args *a = lua_touserdata(L, 2);

	lua_settop(L, 1);
	a->rc = load_table(a->l, a->p, a->msg, a->len);
	return 0;
}

int agent_lua_load(struct agent_property *p, const char *path,
		   const struct agent_lua_limits *lim, char *msg, size_t len)
{
	size_t text_len = 0;
	char *text = agent_read_file(path, &text_len);
	int rc;

	if (!text) {
		snprintf(msg, len, "%s: cannot read: %s", path, strerror(errno));
		return AMEBA_EIO;
	}
	rc = agent_lua_load_text(p, path, text, text_len, lim, msg, len);
	free(text);
	return rc;
}

/* text is the file's contents, or for ASL the Lua compiled from it (asl.c). */
int agent_lua_load_text(struct agent_property *p, const char *path, const char *text,
			size_t text_len, const struct agent_lua_limits *lim, char *msg, size_t len)
{
	struct agent_lua *l = calloc(1, sizeof(*l));
	lua_Debug ar;
	int rc;

	if (!l)
		return AMEBA_ENOMEM;
	l->path = strdup(path);
	l->mem_limit = lim->mem_bytes;
	l->instr_limit = lim->nr_instructions;
	l->ref_prop = l->ref_params = LUA_NOREF;
	l->prop = p;
	p->lua = l;
	if (!l->path)
		return AMEBA_ENOMEM;
	if (text_len > AGENT_LUA_MAX_FILE) {
		snprintf(msg, len, "%s: %zu bytes; a property file may have at most %u", path,
			 text_len, AGENT_LUA_MAX_FILE);
		return AMEBA_ERANGE;
	}
	l->L = lua_newstate(sandbox_alloc, l);
	if (!l->L)
		return AMEBA_ENOMEM;
	open_sandbox_libs(l->L);
	/* the prelude: asl helpers, as a global */
	snprintf(l->short_src, sizeof(l->short_src), "ameba-prelude");
	if (luaL_loadbufferx(l->L, sandbox_prelude, sizeof(sandbox_prelude) - 1, "=ameba-prelude",
			     "t") ||
	    sandbox_call(l, 0, 1, 0, msg, len)) {
		snprintf(msg, len, "%s: internal error: the asl prelude did not load", path);
		return AMEBA_EPROTO;
	}
	lua_setglobal(l->L, "asl");
	/* the cost model's severity (ameba_severity_of, plugin.h), the one
	 * function every property's severity goes through */
	lua_getglobal(l->L, "asl");
	lua_pushcfunction(l->L, prop_lua_severity_of);
	lua_setfield(l->L, -2, "severity_of");
	/* its stall split and latencies (plugin.h: one table for C and Lua) */
	lua_pushcfunction(l->L, prop_lua_stall_of);
	lua_setfield(l->L, -2, "stall_of");
	lua_createtable(l->L, 0, 8);
#define LAT_FIELD(name, cycles) (lua_pushnumber(l->L, cycles), lua_setfield(l->L, -2, #name));
	AMEBA_COST_LATENCIES(LAT_FIELD)
#undef LAT_FIELD
	lua_setfield(l->L, -2, "lat");
	lua_pop(l->L, 1);
	/* the cost model and ctx.extra parser (lua_proplib.h), into asl */
	if (luaL_loadbufferx(l->L, sandbox_proplib, sizeof(sandbox_proplib) - 1,
			     "=ameba-proplib", "t")) {
		snprintf(msg, len, "%s: internal error: the asl property library did not compile",
			 path);
		return AMEBA_EPROTO;
	}
	lua_getglobal(l->L, "asl");
	if (sandbox_call(l, 1, 0, 0, msg, len)) {
		snprintf(msg, len, "%s: internal error: the asl property library did not load", path);
		return AMEBA_EPROTO;
	}

	{
		char chunk[4200];

		snprintf(chunk, sizeof(chunk), "@%s", path);
		rc = luaL_loadbufferx(l->L, text, text_len, chunk, "t");
	}
	if (rc != LUA_OK) {
		size_t pl = strlen(path), n;

		if (rc == LUA_ERRMEM) {
			snprintf(msg, len, "%s: memory limit exceeded while compiling", path);
			return AMEBA_ENOMEM;
		}
		/* the message starts with the chunk's short name, as luaO_chunkid
		 * makes it: "@path" -> path, or "..." and its tail when too long */
		if (pl < LUA_IDSIZE)
			snprintf(l->short_src, sizeof(l->short_src), "%s", path);
		else
			snprintf(l->short_src, sizeof(l->short_src), "...%s",
				 path + pl - (LUA_IDSIZE - 4));
		sandbox_message(l, lua_tostring(l->L, -1), msg, len);
		n = strlen(msg);
		snprintf(msg + n, len - n, " (syntax error)");
		return AMEBA_EPROTO;
	}
	lua_pushvalue(l->L, -1);
	if (lua_getinfo(l->L, ">S", &ar))
		snprintf(l->short_src, sizeof(l->short_src), "%s", ar.short_src);
	rc = sandbox_call(l, 0, 1, 1, msg, len);
	if (rc)
		return rc;
	{
		/* reading the table allocates inside the state: protect it too */
		struct load_args a = { l, p, msg, len, 0 };

		lua_pushcfunction(l->L, load_table_body);
		lua_insert(l->L, -2);
		lua_pushlightuserdata(l->L, &a);
		rc = sandbox_call(l, 2, 0, 1, msg, len);
		if (!rc)
			rc = a.rc;
	}
	lua_settop(l->L, 0);
	return rc;
}

void agent_lua_free(struct agent_lua *l)
{
	if (!l)
		return;
	if (l->L)
		lua_close(l->L);
	for (uint32_t i = 0; i < l->nr_params; i++) {
		free((char *)l->params[i].name);
		free((char *)l->params[i].def);
	}
	free(l->params);
	free(l->path);
	free(l);
}

/* ---- evaluation ---- */

/* ctx.share(metric): v[m] / program[m]; nil when m is not measured. */
static int ctx_share(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	double v, prog;

	lua_getfield(L, lua_upvalueindex(1), "v");
	lua_getfield(L, -1, name);
	lua_getfield(L, lua_upvalueindex(1), "program");
	lua_getfield(L, -1, name);
	if (lua_isnil(L, -3) || lua_isnil(L, -1)) {
		lua_pushnil(L);
		return 1;
	}
	v = lua_tonumber(L, -3);
	prog = lua_tonumber(L, -1);
	lua_pushnumber(L, prog > 0 ? v / prog : 0.0);
	return 1;
}

static void push_object(lua_State *L, const struct ameba_object *o)
{
	lua_createtable(L, 0, 8);
	lua_pushstring(L, o->name ? o->name : "?");
	lua_setfield(L, -2, "name");
	lua_pushstring(L, agent_obj_kind_name(o->kind));
	lua_setfield(L, -2, "kind");
	if (o->site) {
		lua_pushstring(L, o->site);
		lua_setfield(L, -2, "site");
	}
	lua_pushinteger(L, (lua_Integer)o->sz_bytes);
	lua_setfield(L, -2, "size");
	lua_pushinteger(L, (lua_Integer)o->start);
	lua_setfield(L, -2, "start");
	lua_pushinteger(L, (lua_Integer)o->end);
	lua_setfield(L, -2, "stop");
	lua_pushinteger(L, (lua_Integer)o->nr_blocks);
	lua_setfield(L, -2, "blocks");
	lua_pushinteger(L, (lua_Integer)o->id);
	lua_setfield(L, -2, "id");
	lua_pushboolean(L, o->live);
	lua_setfield(L, -2, "live");
}

/* Pushes the Lua view of ctx (see docs/writing-properties.md). */
static void push_ctx(lua_State *L, const struct ameba_context *ctx, int primary)
{
	int c;

	lua_createtable(L, 0, 16);
	c = lua_gettop(L);
	lua_pushstring(L, agent_ctx_kind_name(ctx->kind) ? agent_ctx_kind_name(ctx->kind) : "?");
	lua_setfield(L, c, "kind");
	if (ctx->object) {
		push_object(L, ctx->object);
		lua_setfield(L, c, "object");
	}
	if (ctx->region) {
		lua_pushstring(L, ctx->region);
		lua_setfield(L, c, "region");
	}
	if (ctx->kind == AMEBA_CTX_LINE) {
		lua_pushinteger(L, (lua_Integer)ctx->line);
		lua_setfield(L, c, "line");
	}
	lua_createtable(L, 0, 8);	/* v */
	lua_createtable(L, 0, 8);	/* program */
	lua_createtable(L, 0, 8);	/* has */
	lua_createtable(L, 0, 8);	/* t */
	for (int m = 0; m < AMEBA_M_NR; m++) {
		const char *name = ameba_metric_info(m)->name;

		if (!ctx->has[m])
			continue;
		lua_pushnumber(L, ctx->values[m]);
		lua_setfield(L, c + 1, name);
		lua_pushnumber(L, ctx->program[m]);
		lua_setfield(L, c + 2, name);
		lua_pushboolean(L, 1);
		lua_setfield(L, c + 3, name);
		if (ctx->per_thread[m]) {
			lua_createtable(L, (int)ctx->nr_threads, 0);
			for (uint32_t i = 0; i < ctx->nr_threads; i++) {
				lua_pushnumber(L, ctx->per_thread[m][i]);
				lua_rawseti(L, -2, (lua_Integer)i + 1);
			}
			lua_setfield(L, c + 4, name);
		}
	}
	lua_setfield(L, c, "t");
	lua_setfield(L, c, "has");
	lua_setfield(L, c, "program");
	lua_setfield(L, c, "v");
	lua_createtable(L, (int)ctx->nr_threads, 0);
	for (uint32_t i = 0; i < ctx->nr_threads; i++) {
		lua_pushinteger(L, ctx->thread_ids[i]);
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
	lua_setfield(L, c, "threads");
	lua_pushinteger(L, ctx->nr_threads);
	lua_setfield(L, c, "nr_threads");
	lua_pushnumber(L, ctx->confidence);
	lua_setfield(L, c, "confidence");
	lua_pushinteger(L, (lua_Integer)ctx->nr_samples);
	lua_setfield(L, c, "samples");
	lua_pushnumber(L, (double)ctx->window_ns / 1e9);
	lua_setfield(L, c, "window_s");
	if (ameba_metric_info(primary)) {
		lua_pushstring(L, ameba_metric_info(primary)->name);
		lua_setfield(L, c, "metric");
	}
	if (ctx->extra) {
		lua_pushstring(L, ctx->extra);
		lua_setfield(L, c, "extra");
	}
	lua_pushvalue(L, c);
	lua_pushcclosure(L, ctx_share, 1);
	lua_setfield(L, c, "share");
}

static void push_params(struct agent_lua *l, const struct agent_property *p)
{
	lua_State *L = l->L;

	if (l->ref_params != LUA_NOREF) {
		lua_rawgeti(L, LUA_REGISTRYINDEX, l->ref_params);
		return;
	}
	lua_createtable(L, 0, (int)p->values.nr);
	for (uint32_t i = 0; i < p->values.nr; i++) {
		int type = AMEBA_PARAM_STRING;

		for (uint32_t k = 0; k < l->nr_params; k++)
			if (!strcmp(l->params[k].name, p->values.names[i]))
				type = l->params[k].type;
		if (type == AMEBA_PARAM_INT)
			lua_pushinteger(L, strtoll(p->values.values[i], NULL, 0));
		else if (type == AMEBA_PARAM_DOUBLE)
			lua_pushnumber(L, strtod(p->values.values[i], NULL));
		else
			lua_pushstring(L, p->values.values[i]);
		lua_setfield(L, -2, p->values.names[i]);
	}
	lua_pushvalue(L, -1);
	l->ref_params = luaL_ref(L, LUA_REGISTRYINDEX);
}

struct eval_args {
	const struct agent_plugins *pl;
	struct agent_lua *l;
	struct agent_property *p;
	const struct ameba_context *ctx;
	int primary;
	struct agent_verdict *out;
};

/*
 * Calls prop[key](ctx, p) (ctx at ci, params at pi), leaving one result. A
 * field that is not a function is its own result (advice = "text").
 * Errors propagate to the protected call around eval_body().
 */
static int call_field(lua_State *L, struct agent_lua *l, const char *key, int ci, int pi)
{
	int line;

	lua_rawgeti(L, LUA_REGISTRYINDEX, l->ref_prop);
	lua_getfield(L, -1, key);
	lua_remove(L, -2);
	if (lua_type(L, -1) != LUA_TFUNCTION)
		return 0;
	line = fn_line(L);
	lua_pushvalue(L, ci);
	lua_pushvalue(L, pi);
	lua_call(L, 2, 1);
	return line;
}

static double want_number(lua_State *L, struct agent_lua *l, const char *key, int line)
{
	double d;

	if (lua_type(L, -1) != LUA_TNUMBER)
		luaL_error(L, "%s:%d: %s() returned %s, want a number", l->short_src, line, key,
			   luaL_typename(L, -1));
	d = lua_tonumber(L, -1);
	lua_pop(L, 1);
	return d;
}

static void want_string(lua_State *L, struct agent_lua *l, const char *key, int line, char *buf,
			size_t buf_len)
{
	if (lua_isnil(L, -1))
		buf[0] = '\0';
	else if (lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER)
		snprintf(buf, buf_len, "%s", lua_tostring(L, -1));
	else
		luaL_error(L, "%s:%d: %s returned %s, want a string", l->short_src, line, key,
			   luaL_typename(L, -1));
	lua_pop(L, 1);
}

/*
 * ctx.life[i] = { seen, from, to } for thread index i (the snapshots of the
 * thread table that listed it first and saw it alive first and last; from
 * and to are -1 when it lived between two snapshots), absent when the
 * agent has no lifetimes (then every thread counts as concurrent with
 * every other); ctx.max_alive: the most threads besides main seen alive
 * at once (0: unknown).
 */
static void push_lives(lua_State *L, int c, const struct agent_plugins *pl,
		       const struct ameba_context *ctx)
{
	if (!pl || !pl->lives || !ctx->thread_ids)
		return;
	lua_createtable(L, (int)ctx->nr_threads, 0);
	for (uint32_t i = 0; i < ctx->nr_threads; i++) {
		const struct agent_thread_life *t;

		if (ctx->thread_ids[i] >= pl->nr_lives)
			continue;
		t = &pl->lives[ctx->thread_ids[i]];
		lua_createtable(L, 0, 3);
		lua_pushinteger(L, t->seen);
		lua_setfield(L, -2, "seen");
		lua_pushinteger(L, t->from);
		lua_setfield(L, -2, "from");
		lua_pushinteger(L, t->to);
		lua_setfield(L, -2, "to");
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
	lua_setfield(L, c, "life");
	lua_pushinteger(L, pl->max_alive);
	lua_setfield(L, c, "max_alive");
}

/*
 * ctx.ci[metric]: in sampled mode, the half-width of the 95% interval of an
 * object context's v[metric] (the search's intervals of the objects'
 * totals, estimates.c), for the metrics that have one; absent otherwise.
 * ctx.share_ci[metric]: the same for its share of the program.
 */
static void push_ci(lua_State *L, int c, const struct agent_plugins *pl,
		    const struct ameba_context *ctx)
{
	if (!pl || !pl->ci_tab || !ctx->object || !ctx->object->name)
		return;
	for (int share = 0; share < 2; share++) {
		int any = 0;

		lua_createtable(L, 0, 4);
		for (int m = 0; m < AMEBA_M_NR; m++) {
			const char *name = ctx->object->name;
			double h = !ctx->has[m] ? -1 :
				   share ? agent_ci_share_half(pl->ci_tab, name, m, ctx->values[m],
							       ctx->program[m]) :
					   agent_ci_half(pl->ci_tab, name, m, ctx->values[m]);

			if (h < 0)
				continue;
			lua_pushnumber(L, h);
			lua_setfield(L, -2, ameba_metric_info(m)->name);
			any = 1;
		}
		if (any)
			lua_setfield(L, c, share ? "share_ci" : "ci");
		else
			lua_pop(L, 1);
	}
}

/* lua_CFunction(args): one evaluation, run protected by agent_lua_eval. */
static int eval_body(lua_State *L)
{
	struct eval_args *a = lua_touserdata(L, 1);
	struct agent_lua *l = a->l;
	struct agent_verdict *out = a->out;
	int ci, pi, line;

	push_ctx(L, a->ctx, a->primary);
	ci = lua_gettop(L);
	push_lives(L, ci, a->pl, a->ctx);
	push_ci(L, ci, a->pl, a->ctx);
	push_params(l, a->p);
	pi = lua_gettop(L);

	call_field(L, l, "condition", ci, pi);
	out->v.holds = lua_toboolean(L, -1);
	lua_pop(L, 1);
	if (!out->v.holds)
		return 0;
	line = call_field(L, l, "confidence", ci, pi);
	if (lua_isnil(L, -1))
		lua_pop(L, 1);
	else
		out->v.confidence = want_number(L, l, "confidence", line);
	line = call_field(L, l, "severity", ci, pi);
	out->v.severity = want_number(L, l, "severity", line);
	line = call_field(L, l, "evidence", ci, pi);
	want_string(L, l, "evidence", line, out->v.evidence, sizeof(out->v.evidence));
	line = call_field(L, l, "advice", ci, pi);
	want_string(L, l, "advice", line, out->v.advice, sizeof(out->v.advice));
	line = call_field(L, l, "threads", ci, pi);
	if (lua_istable(L, -1)) {
		lua_Integer n = luaL_len(L, -1);

		out->threads_set = 1;
		out->nr_threads = 0;
		for (lua_Integer i = 1; i <= n && out->nr_threads < 256; i++) {
			lua_geti(L, -1, i);
			if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0)
				luaL_error(L, "%s:%d: threads()[%d] is not a thread id (an integer >= 0)",
					   l->short_src, line, (int)i);
			out->threads[out->nr_threads++] = (uint32_t)lua_tointeger(L, -1);
			lua_pop(L, 1);
		}
	} else if (!lua_isnil(L, -1)) {
		luaL_error(L, "%s:%d: threads() returned %s, want a list of thread ids", l->short_src,
			   line, luaL_typename(L, -1));
	}
	return 0;
}

int agent_lua_eval(const struct agent_plugins *pl, struct agent_property *p,
		   const struct ameba_context *ctx, int primary_metric, struct agent_verdict *out,
		   char *msg, size_t len)
{
	struct agent_lua *l = p->lua;
	struct eval_args a = { pl, l, p, ctx, primary_metric, out };
	int rc;

	if (!l->L) {
		snprintf(msg, len, "%s: property state is closed", l->path);
		return AMEBA_EINVAL;
	}
	lua_settop(l->L, 0);
	lua_pushcfunction(l->L, eval_body);
	lua_pushlightuserdata(l->L, &a);
	rc = sandbox_call(l, 1, 0, 0, msg, len);
	lua_settop(l->L, 0);
	if (rc) {
		/* the state may be out of memory: give its memory back now */
		lua_close(l->L);
		l->L = NULL;
	} else if (l->mem_used > AGENT_LUA_GC_AT) {
		/* a context of thousands of threads leaves megabytes of
		 * tables: collect them now rather than at twice the live size
		 * (every property's state, and its memory limit, would hold
		 * them: 63 of the agent's 113 MB with 10,000 threads) */
		lua_gc(l->L, LUA_GCCOLLECT);
	}
	return rc;
}
