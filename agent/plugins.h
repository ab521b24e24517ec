/*
 * plugins.h - the agent's side of the plugin ABI (include/ameba/plugin.h):
 * parameter specs, the search path, loading strategies (.so) and properties
 * (.so and sandboxed Lua files), and evaluating a property on a context.
 *
 * Lifecycle: agent_plugins_init() -> agent_plugins_scan() (the search path)
 * and agent_plugins_add_file() (--property FILE) -> agent_plugins_link()
 * (resolves `refines`, applies --property selections) -> evaluations ->
 * agent_plugins_destroy().
 *
 * A plugin that cannot be loaded is never fatal: it is reported once on
 * stderr (and kept in the warning list for the report) and left out; a
 * property whose code fails while it runs is disabled the same way, and the
 * others continue.
 */
#ifndef AMEBA_AGENT_PLUGINS_H
#define AMEBA_AGENT_PLUGINS_H

#include <stddef.h>
#include <stdint.h>

#include "ameba/plugin.h"

/* ---- parameters: "name:k=v,k=v" (params.c) ---- */

/* An owned list of name=value pairs; .view is what plugins see. */
struct agent_params {
	uint32_t nr;
	char **names;
	char **values;
	struct ameba_params view;	/* points at names/values */
};

/*
 * Splits "name:k=v,k=v" (or just "name") into *name (malloc'ed) and the
 * pairs. Returns 0, or AMEBA_EINVAL with err (len bytes) saying what is
 * wrong and how to write it, or AMEBA_ENOMEM.
 */
int agent_spec_parse(const char *spec, char **name, struct agent_params *out, char *err,
		     size_t len);

/*
 * Builds the parameter values of a plugin: every declared parameter with its
 * default, overridden by given (may be NULL). Rejects an unknown key and a
 * value that does not parse as the declared type (int, finite double, metric
 * name), naming the plugin (who), the key, the value and the fix.
 * Returns 0, AMEBA_EINVAL (err set) or AMEBA_ENOMEM.
 */
int agent_params_resolve(const char *who, const struct ameba_param *decl, uint32_t nr_decl,
			 const struct agent_params *given, struct agent_params *out, char *err,
			 size_t len);
/* Adds or replaces one pair. 0 or AMEBA_ENOMEM. */
int agent_params_set(struct agent_params *p, const char *name, const char *value);
void agent_params_free(struct agent_params *p);
/* "k=v,k=v" into buf; returns buf. */
const char *agent_params_format(const struct agent_params *p, char *buf, size_t len);

/* ---- loaded plugins ---- */

enum agent_prop_lang {
	AGENT_PROP_C,
	AGENT_PROP_LUA,
};

struct agent_lua;	/* lua_prop.c */
struct agent_ci_tab;	/* estimates.c */

struct agent_property {
	char *name;
	char *summary;
	char *refines;		/* name of the more general property, or NULL */
	char *path;		/* the file it came from */
	int lang;		/* enum agent_prop_lang */
	int ctx_kind;		/* enum ameba_ctx_kind */
	int needs[AMEBA_M_NR];
	uint32_t nr_needs;
	const struct ameba_param *params;	/* declared parameters */
	uint32_t nr_params;
	struct agent_params values;	/* resolved parameter values */
	struct agent_params overrides;	/* from --property NAME:k=v */
	int selected;		/* evaluated in this run */
	int explicit_file;	/* loaded by --property FILE: always selected */
	int disabled;		/* failed; error says why */
	char *error;
	struct agent_property *parent;	/* resolved `refines`, or NULL */
	unsigned depth;		/* 0 for a root of the hierarchy */
	/*
	 * `explains`: the properties (and, through `refines`, their
	 * refinements) whose findings on the same context are symptoms of this
	 * one; agent_findings_rank() absorbs them under its finding.
	 */
	char **explains;
	uint32_t nr_explains;
	/*
	 * `evaluate_where = "metric"`: also evaluated, as a root, on every
	 * context where that metric is non-zero and the property it refines
	 * does not hold (coherence properties on every object with coherence
	 * events, not only hot ones). has_where 0: only where the parent holds.
	 */
	int has_where;
	int where_metric;
	/* C plugins */
	struct ameba_property_desc desc;	/* copy, zero-extended to our size */
	/* Lua plugins */
	struct agent_lua *lua;
};

struct agent_strategy {
	char *name;
	char *path;
	struct ameba_strategy_desc desc;	/* copy, zero-extended to our size */
};

/* Sandbox limits of each Lua state (per call for instructions). */
struct agent_lua_limits {
	size_t mem_bytes;		/* default 16 MiB */
	uint64_t nr_instructions;	/* default 10 M per call */
};

#define AGENT_LUA_MEM_DEFAULT (16u << 20)
/* a state holding more after an evaluation is collected at once (lua_prop.c) */
#define AGENT_LUA_GC_AT (2u << 20)
#define AGENT_LUA_INSTR_DEFAULT 10000000ull

/*
 * What the agent saw of one target thread over the run, indexed by ameba
 * thread id (search.c keeps them from each refresh of the thread table, a
 * snapshot): the snapshot that first listed it, and the first and last
 * snapshots that saw it alive (-1: it lived and ended between two
 * snapshots). The properties' concurrency rules read them (ctx.life,
 * asl.users: docs/properties.md, "Concurrent users").
 */
struct agent_thread_life {
	int32_t seen;
	int32_t from, to;
};

struct agent_plugins {
	struct agent_strategy *strategies;
	uint32_t nr_strategies;
	struct agent_property *props;
	uint32_t nr_props;
	char **warnings;	/* every message printed about a plugin */
	uint32_t nr_warnings;
	void **dls;		/* dlopen handles, closed by destroy */
	uint32_t nr_dls;
	struct agent_lua_limits lua_limits;
	int quiet;		/* do not print warnings (still recorded) */
	/* the search's view of the threads' lifetimes, or NULL (nr_lives 0):
	 * every thread is then taken as concurrent with every other; and the
	 * most threads besides main seen alive in one snapshot (0: unknown) */
	const struct agent_thread_life *lives;
	uint32_t nr_lives;
	uint32_t max_alive;
	/* sampled mode: the search's objects' 95% intervals (ctx.ci), or NULL */
	const struct agent_ci_tab *ci_tab;
};

void agent_plugins_init(struct agent_plugins *pl);
void agent_plugins_destroy(struct agent_plugins *pl);

/*
 * The search path: the built-in directory (<libdir>, i.e. build/lib/ameba),
 * $XDG_CONFIG_HOME/ameba/plugins (default ~/.config/ameba/plugins), then
 * each extra directory in order. D/strategies and D/properties are scanned
 * for *.so and *.lua, and so is D itself except for the built-in directory
 * (whose top level holds the runtime, never a plugin). A later plugin of
 * the same name replaces an earlier one (a note says so). Returns the
 * number of directories that existed.
 */
int agent_plugins_scan(struct agent_plugins *pl, const char *const *extra_dirs, uint32_t nr_extra);

/* Loads one file (.so or .lua) as given by --property FILE or the scan.
 * 0 when it loaded, else a negative code (the warning is recorded). */
int agent_plugins_add_file(struct agent_plugins *pl, const char *path, int from_scan);

/*
 * Resolves the refines hierarchy and the selection. select_names (may be
 * empty) are the --property NAME[:k=v] specs: when any is given only those
 * properties (and the properties refining them, recursively) are
 * evaluated, plus everything loaded with --property FILE. Parameter
 * overrides are validated here. Returns 0 or AMEBA_EINVAL (err set: an
 * unknown name or a bad parameter, a usage error).
 */
int agent_plugins_link(struct agent_plugins *pl, const char *const *select_specs, uint32_t nr,
		       char *err, size_t len);

/* Appends name to p's `explains` list. 0 or AMEBA_ENOMEM. */
int agent_property_add_explains(struct agent_property *p, const char *name);

struct agent_strategy *agent_plugins_strategy(struct agent_plugins *pl, const char *name);
struct agent_property *agent_plugins_property(struct agent_plugins *pl, const char *name);

/* Records and (unless quiet) prints "ameba: <msg>" on stderr. */
void agent_plugins_warn(struct agent_plugins *pl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Disables p with the message (recorded and printed once). */
void agent_property_disable(struct agent_plugins *pl, struct agent_property *p, const char *msg);

/* ---- evaluation ---- */

struct agent_verdict {
	struct ameba_verdict v;
	uint32_t nr_threads;		/* threads involved; 0 with threads_set = none */
	uint32_t threads[256];
	int threads_set;		/* the property named its threads */
};

/*
 * Evaluates p on ctx. primary_metric is the run's --metric (Lua: ctx.metric).
 * Returns 0 (out filled; out->v.holds says whether the condition holds),
 * 1 when p does not apply (wrong context kind, a needed metric not
 * measured), or a negative code when the property failed: it is then
 * disabled with a message naming the file and line.
 */
int agent_property_eval(struct agent_plugins *pl, struct agent_property *p,
			const struct ameba_context *ctx, int primary_metric,
			struct agent_verdict *out);

/* ---- Lua properties (lua_prop.c) ---- */

/*
 * Loads a Lua property file into its own sandboxed state and fills p's
 * descriptive fields. 0, or a negative code with msg set (file:line: what).
 */
int agent_lua_load(struct agent_property *p, const char *path,
		   const struct agent_lua_limits *lim, char *msg, size_t len);
/* The same from a buffer holding the chunk's text; messages name path. */
int agent_lua_load_text(struct agent_property *p, const char *path, const char *text,
			size_t text_len, const struct agent_lua_limits *lim, char *msg, size_t len);
/* Runs the property's functions on ctx. Same returns as agent_property_eval
 * minus the kind/needs checks; msg is set on failure. */
int agent_lua_eval(const struct agent_plugins *pl, struct agent_property *p,
		   const struct ameba_context *ctx,
		   int primary_metric, struct agent_verdict *out, char *msg, size_t len);
void agent_lua_free(struct agent_lua *l);

/* Names of the context kinds as properties write them ("object", ...);
 * NULL when out of range. agent_ctx_kind_by_name returns -1 if unknown. */
const char *agent_ctx_kind_name(int kind);
int agent_ctx_kind_by_name(const char *name);
/* "global", "heap", "mmap", "stack", "tls", "other", "bin". */
const char *agent_obj_kind_name(int kind);
int agent_obj_kind_by_name(const char *name);

#endif
