/*
 * plugin.c - finding and loading strategies and properties, and evaluating
 * a property on a context (include/ameba/plugin.h is the ABI).
 *
 * Notes:
 *  - A .so plugin exports ameba_strategy_entry and/or ameba_property_entry.
 *    The descriptor's abi_version must equal AMEBA_PLUGIN_ABI_VERSION. Its
 *    struct_size may be smaller than ours (an older plugin: we copy what it
 *    has and the tail reads as zero) or larger (a newer one: accepted only
 *    when every byte beyond our struct is zero), as libpfm4 does.
 *  - Plugins are dlopen()ed RTLD_NOW | RTLD_LOCAL: unresolved symbols fail
 *    at load time with the loader's message, and two plugins never see each
 *    other's symbols.
 *  - A plugin that fails to load, or a property that fails while it runs, is
 *    reported once and left out; the run goes on without it.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent.h"
#include "asl.h"
#include "plugins.h"
#include "search.h"

static const char *const ctx_kind_names[] = {
	[AMEBA_CTX_PROGRAM] = "program",
	[AMEBA_CTX_OBJECT] = "object",
	[AMEBA_CTX_REGION] = "region",
	[AMEBA_CTX_LINE] = "line",
};

static const char *const obj_kind_names[] = {
	[AMEBA_OBJ_GLOBAL] = "global", [AMEBA_OBJ_HEAP] = "heap",   [AMEBA_OBJ_MMAP] = "mmap",
	[AMEBA_OBJ_STACK] = "stack",   [AMEBA_OBJ_TLS] = "tls",     [AMEBA_OBJ_OTHER] = "other",
	[AMEBA_OBJ_BIN] = "bin",
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

const char *agent_ctx_kind_name(int kind)
{
	if (kind < 0 || (size_t)kind >= ARRAY_SIZE(ctx_kind_names))
		return NULL;
	return ctx_kind_names[kind];
}

int agent_ctx_kind_by_name(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(ctx_kind_names); i++)
		if (!strcmp(ctx_kind_names[i], name))
			return (int)i;
	return -1;
}

const char *agent_obj_kind_name(int kind)
{
	if (kind < 0 || (size_t)kind >= ARRAY_SIZE(obj_kind_names))
		return "other";
	return obj_kind_names[kind];
}

int agent_obj_kind_by_name(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(obj_kind_names); i++)
		if (!strcmp(obj_kind_names[i], name))
			return (int)i;
	return -1;
}

void agent_plugins_init(struct agent_plugins *pl)
{
	memset(pl, 0, sizeof(*pl));
	pl->lua_limits.mem_bytes = AGENT_LUA_MEM_DEFAULT;
	pl->lua_limits.nr_instructions = AGENT_LUA_INSTR_DEFAULT;
}

void agent_plugins_warn(struct agent_plugins *pl, const char *fmt, ...)
{
	char buf[1024], **w;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (!pl->quiet) {
		agent_progress_clear();
		fprintf(stderr, "ameba: %s\n", buf);
	}
	w = realloc(pl->warnings, (pl->nr_warnings + 1) * sizeof(*w));
	if (!w)
		return;
	pl->warnings = w;
	w[pl->nr_warnings] = strdup(buf);
	if (w[pl->nr_warnings])
		pl->nr_warnings++;
}

static void property_release(struct agent_property *p)
{
	free(p->name);
	free(p->summary);
	free(p->refines);
	for (uint32_t i = 0; i < p->nr_explains; i++)
		free(p->explains[i]);
	free(p->explains);
	free(p->path);
	free(p->error);
	agent_params_free(&p->values);
	agent_params_free(&p->overrides);
	if (p->lua)
		agent_lua_free(p->lua);
	memset(p, 0, sizeof(*p));
}

static void strategy_release(struct agent_strategy *s)
{
	free(s->name);
	free(s->path);
	memset(s, 0, sizeof(*s));
}

void agent_plugins_destroy(struct agent_plugins *pl)
{
	for (uint32_t i = 0; i < pl->nr_props; i++)
		property_release(&pl->props[i]);
	for (uint32_t i = 0; i < pl->nr_strategies; i++)
		strategy_release(&pl->strategies[i]);
	for (uint32_t i = 0; i < pl->nr_warnings; i++)
		free(pl->warnings[i]);
	/* after the tables: their strings may point into the plugins */
	for (uint32_t i = 0; i < pl->nr_dls; i++)
		dlclose(pl->dls[i]);
	free(pl->dls);
	free(pl->props);
	free(pl->strategies);
	free(pl->warnings);
	memset(pl, 0, sizeof(*pl));
}

struct agent_strategy *agent_plugins_strategy(struct agent_plugins *pl, const char *name)
{
	for (uint32_t i = 0; i < pl->nr_strategies; i++)
		if (!strcmp(pl->strategies[i].name, name))
			return &pl->strategies[i];
	return NULL;
}

struct agent_property *agent_plugins_property(struct agent_plugins *pl, const char *name)
{
	for (uint32_t i = 0; i < pl->nr_props; i++)
		if (!strcmp(pl->props[i].name, name))
			return &pl->props[i];
	return NULL;
}

void agent_property_disable(struct agent_plugins *pl, struct agent_property *p, const char *msg)
{
	if (p->disabled)
		return;
	p->disabled = 1;
	free(p->error);
	p->error = strdup(msg);
	agent_plugins_warn(pl, "%s; property %s disabled, the others continue", msg, p->name);
}

/*
 * Copies a plugin descriptor of their_size bytes into dst (our_size bytes),
 * applying the ABI rules of plugin.h. Returns 0 or AMEBA_EABI with msg set.
 */
static int desc_adopt(void *dst, size_t our_size, const void *src, const char *path,
		      const char *what, char *msg, size_t len)
{
	const uint32_t *hdr = src;	/* abi_version, struct_size */
	uint32_t abi = hdr[0], their_size = hdr[1];

	if (abi != AMEBA_PLUGIN_ABI_VERSION) {
		snprintf(msg, len,
			 "%s: refused: %s plugin built for plugin ABI version %u, this ameba %s "
			 "speaks version %d; rebuild it against this ameba's include/ameba/plugin.h",
			 path, what, abi, AMEBA_VERSION_STRING, AMEBA_PLUGIN_ABI_VERSION);
		return AMEBA_EABI;
	}
	if (their_size < 2 * sizeof(uint32_t)) {
		snprintf(msg, len, "%s: refused: %s descriptor says struct_size %u, smaller than its "
			 "own header; set struct_size = sizeof(the descriptor)", path, what, their_size);
		return AMEBA_EABI;
	}
	if (their_size > our_size) {
		const unsigned char *tail = (const unsigned char *)src + our_size;

		for (size_t i = 0; i < their_size - our_size; i++)
			if (tail[i]) {
				snprintf(msg, len, "%s: refused: %s descriptor is %u bytes and uses "
					 "fields beyond this ameba's %zu (a newer plugin); upgrade "
					 "ameba or rebuild the plugin against this one", path, what,
					 their_size, our_size);
				return AMEBA_EABI;
			}
	}
	memset(dst, 0, our_size);
	memcpy(dst, src, their_size < our_size ? their_size : our_size);
	return 0;
}

static int name_ok(const char *s)
{
	if (!s || !*s)
		return 0;
	for (; *s; s++)
		if (!(*s == '_' || *s == '-' || *s == '.' || (*s >= '0' && *s <= '9') ||
		      (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
			return 0;
	return 1;
}

/* Appends *p to the table, replacing a property of the same name. */
static int props_add(struct agent_plugins *pl, struct agent_property *p, int from_scan)
{
	struct agent_property *old = agent_plugins_property(pl, p->name), *v;

	if (old) {
		agent_plugins_warn(pl, "note: property %s from %s replaces the one from %s", p->name,
				   p->path, old->path);
		property_release(old);
		p->explicit_file = !from_scan;
		*old = *p;
		return 0;
	}
	v = realloc(pl->props, (pl->nr_props + 1) * sizeof(*v));
	if (!v)
		return AMEBA_ENOMEM;
	pl->props = v;
	p->explicit_file = !from_scan;
	pl->props[pl->nr_props++] = *p;
	return 0;
}

static int strategies_add(struct agent_plugins *pl, struct agent_strategy *s)
{
	struct agent_strategy *old = agent_plugins_strategy(pl, s->name), *v;

	if (old) {
		agent_plugins_warn(pl, "note: strategy %s from %s replaces the one from %s", s->name,
				   s->path, old->path);
		strategy_release(old);
		*old = *s;
		return 0;
	}
	v = realloc(pl->strategies, (pl->nr_strategies + 1) * sizeof(*v));
	if (!v)
		return AMEBA_ENOMEM;
	pl->strategies = v;
	pl->strategies[pl->nr_strategies++] = *s;
	return 0;
}

/* Fills p from a C property descriptor (already adopted into p->desc). */
static int prop_from_desc(struct agent_property *p, const char *path, char *msg, size_t len)
{
	const struct ameba_property_desc *d = &p->desc;

	if (!name_ok(d->name)) {
		snprintf(msg, len, "%s: refused: property name '%s' is empty or has characters other "
			 "than letters, digits, '_', '-' and '.'", path, d->name ? d->name : "(null)");
		return AMEBA_EINVAL;
	}
	if (!d->evaluate) {
		snprintf(msg, len, "%s: refused: property %s has no evaluate() callback", path, d->name);
		return AMEBA_EINVAL;
	}
	if (!agent_ctx_kind_name(d->ctx_kind)) {
		snprintf(msg, len, "%s: refused: property %s has ctx_kind %d; use an AMEBA_CTX_* value",
			 path, d->name, d->ctx_kind);
		return AMEBA_EINVAL;
	}
	if (d->nr_needs > AMEBA_M_NR || (d->nr_needs && !d->needs)) {
		snprintf(msg, len, "%s: refused: property %s: bad needs array (%u entries)", path,
			 d->name, d->nr_needs);
		return AMEBA_EINVAL;
	}
	for (uint32_t i = 0; i < d->nr_needs; i++) {
		if (!ameba_metric_info(d->needs[i])) {
			snprintf(msg, len, "%s: refused: property %s needs metric %d, which is not an "
				 "AMEBA_M_* value", path, d->name, d->needs[i]);
			return AMEBA_EINVAL;
		}
		p->needs[p->nr_needs++] = d->needs[i];
	}
	if (d->nr_params && !d->params) {
		snprintf(msg, len, "%s: refused: property %s declares %u params but no array", path,
			 d->name, d->nr_params);
		return AMEBA_EINVAL;
	}
	p->name = strdup(d->name);
	p->summary = strdup(d->summary ? d->summary : "");
	p->refines = d->refines && *d->refines ? strdup(d->refines) : NULL;
	p->ctx_kind = d->ctx_kind;
	p->params = d->params;
	p->nr_params = d->nr_params;
	if (!p->name || !p->summary || (d->refines && *d->refines && !p->refines))
		return AMEBA_ENOMEM;
	for (uint32_t i = 0; d->explains && d->explains[i]; i++) {
		if (i >= 64) {
			snprintf(msg, len, "%s: refused: property %s: explains has more than 64 "
				 "names, or lacks its NULL terminator", path, d->name);
			return AMEBA_EINVAL;
		}
		if (agent_property_add_explains(p, d->explains[i]))
			return AMEBA_ENOMEM;
	}
	return 0;
}

int agent_property_add_explains(struct agent_property *p, const char *name)
{
	char **v = realloc(p->explains, (p->nr_explains + 1) * sizeof(*v));

	if (!v)
		return AMEBA_ENOMEM;
	p->explains = v;
	v[p->nr_explains] = strdup(name);
	if (!v[p->nr_explains])
		return AMEBA_ENOMEM;
	p->nr_explains++;
	return 0;
}

static int strat_check(const struct ameba_strategy_desc *d, const char *path, char *msg,
		       size_t len)
{
	if (!name_ok(d->name)) {
		snprintf(msg, len, "%s: refused: strategy name '%s' is empty or has characters other "
			 "than letters, digits, '_', '-' and '.'", path, d->name ? d->name : "(null)");
		return AMEBA_EINVAL;
	}
	if (!d->create || !d->plan || !d->observe || !d->contexts || !d->destroy) {
		snprintf(msg, len, "%s: refused: strategy %s lacks one of create, plan, observe, "
			 "contexts, destroy", path, d->name);
		return AMEBA_EINVAL;
	}
	if (d->nr_params && !d->params) {
		snprintf(msg, len, "%s: refused: strategy %s declares %u params but no array", path,
			 d->name, d->nr_params);
		return AMEBA_EINVAL;
	}
	return 0;
}

static int load_so(struct agent_plugins *pl, const char *path, int from_scan)
{
	char msg[1024];
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ameba_strategy_entry_fn sentry;
	ameba_property_entry_fn pentry;
	int loaded = 0, rc;

	if (!dl) {
		agent_plugins_warn(pl, "%s: refused: cannot load: %s", path, dlerror());
		return AMEBA_EIO;
	}
	*(void **)&sentry = dlsym(dl, AMEBA_STRATEGY_ENTRY);
	*(void **)&pentry = dlsym(dl, AMEBA_PROPERTY_ENTRY);
	if (!sentry && !pentry) {
		agent_plugins_warn(pl, "%s: refused: exports neither %s nor %s (see "
				   "docs/writing-properties.md)", path, AMEBA_STRATEGY_ENTRY,
				   AMEBA_PROPERTY_ENTRY);
		dlclose(dl);
		return AMEBA_EINVAL;
	}
	if (sentry) {
		struct agent_strategy s = { 0 };
		const struct ameba_strategy_desc *d = sentry();

		if (!d) {
			agent_plugins_warn(pl, "%s: refused: %s() returned NULL", path, AMEBA_STRATEGY_ENTRY);
		} else if ((rc = desc_adopt(&s.desc, sizeof(s.desc), d, path, "strategy", msg,
					    sizeof(msg))) ||
			   (rc = strat_check(&s.desc, path, msg, sizeof(msg)))) {
			agent_plugins_warn(pl, "%s", msg);
		} else {
			s.name = strdup(s.desc.name);
			s.path = strdup(path);
			if (!s.name || !s.path || strategies_add(pl, &s)) {
				free(s.name);
				free(s.path);
				agent_plugins_warn(pl, "%s: out of memory", path);
			} else {
				loaded++;
			}
		}
	}
	if (pentry) {
		struct agent_property p = { 0 };
		const struct ameba_property_desc *d = pentry();

		p.lang = AGENT_PROP_C;
		if (!d) {
			agent_plugins_warn(pl, "%s: refused: %s() returned NULL", path, AMEBA_PROPERTY_ENTRY);
		} else if ((rc = desc_adopt(&p.desc, sizeof(p.desc), d, path, "property", msg,
					    sizeof(msg))) ||
			   (rc = prop_from_desc(&p, path, msg, sizeof(msg)))) {
			if (rc == AMEBA_ENOMEM)
				snprintf(msg, sizeof(msg), "%s: out of memory", path);
			agent_plugins_warn(pl, "%s", msg);
			property_release(&p);
		} else if (!(p.path = strdup(path)) || props_add(pl, &p, from_scan)) {
			agent_plugins_warn(pl, "%s: out of memory", path);
			property_release(&p);
		} else {
			loaded++;
		}
	}
	if (!loaded) {
		dlclose(dl);
		return AMEBA_EABI;
	}
	/* Handles stay open until agent_plugins_destroy(): a replaced plugin's
	 * code may still be referenced by nothing, but closing late is harmless. */
	{
		void **v = realloc(pl->dls, (pl->nr_dls + 1) * sizeof(*v));

		if (!v) {
			agent_plugins_warn(pl, "%s: out of memory", path);
			return AMEBA_ENOMEM;
		}
		pl->dls = v;
		pl->dls[pl->nr_dls++] = dl;
	}
	return 0;
}

static int load_lua(struct agent_plugins *pl, const char *path, int from_scan)
{
	struct agent_property p = { 0 };
	char msg[1024];
	int rc;

	p.lang = AGENT_PROP_LUA;
	rc = agent_lua_load(&p, path, &pl->lua_limits, msg, sizeof(msg));
	if (rc) {
		agent_plugins_warn(pl, "%s; property not loaded, the others continue", msg);
		property_release(&p);
		return rc;
	}
	p.path = strdup(path);
	if (!p.path || props_add(pl, &p, from_scan)) {
		agent_plugins_warn(pl, "%s: out of memory", path);
		property_release(&p);
		return AMEBA_ENOMEM;
	}
	return 0;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);

	return a >= b && !strcmp(s + a - b, suf);
}

/*
 * An ASL file (asl.c): compiled to one Lua chunk per property, each loaded
 * into its own sandbox as a .lua file would be. A syntax or semantic error
 * leaves the whole file out with "path:line:col: message".
 */
static int load_asl(struct agent_plugins *pl, const char *path, int from_scan)
{
	struct asl_unit u;
	size_t text_len = 0;
	char msg[1024], *text = agent_read_file(path, &text_len);
	int rc, loaded = 0;

	if (!text) {
		agent_plugins_warn(pl, "%s: cannot read: %s; property not loaded, the others "
				   "continue", path, strerror(errno));
		return AMEBA_EIO;
	}
	rc = asl_compile(path, text, text_len, &u, msg, sizeof(msg));
	free(text);
	if (rc) {
		agent_plugins_warn(pl, "%s; property file not loaded, the others continue", msg);
		return rc;
	}
	for (uint32_t i = 0; i < u.nr_props; i++) {
		struct agent_property p = { 0 };

		p.lang = AGENT_PROP_LUA;
		rc = agent_lua_load_text(&p, path, u.props[i].lua, u.props[i].lua_len,
					 &pl->lua_limits, msg, sizeof(msg));
		if (rc) {
			agent_plugins_warn(pl, "%s (in the Lua compiled from property %s, line %d); "
					   "property not loaded, the others continue", msg,
					   u.props[i].name, u.props[i].line);
			property_release(&p);
			continue;
		}
		p.path = strdup(path);
		if (!p.path || props_add(pl, &p, from_scan)) {
			agent_plugins_warn(pl, "%s: out of memory", path);
			property_release(&p);
			continue;
		}
		loaded++;
	}
	asl_unit_free(&u);
	return loaded ? 0 : AMEBA_EINVAL;
}

int agent_plugins_add_file(struct agent_plugins *pl, const char *path, int from_scan)
{
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode)) {
		agent_plugins_warn(pl, "%s: cannot load property: %s", path,
				   errno ? strerror(errno) : "not a regular file");
		return AMEBA_ENOENT;
	}
	if (has_suffix(path, ".so"))
		return load_so(pl, path, from_scan);
	if (has_suffix(path, ".lua"))
		return load_lua(pl, path, from_scan);
	if (has_suffix(path, ".asl"))
		return load_asl(pl, path, from_scan);
	agent_plugins_warn(pl, "%s: not a plugin: expected a .lua or .asl property or a .so plugin",
			   path);
	return AMEBA_EINVAL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Loads every *.so, *.lua and *.asl of dir in name order; returns 1 if dir exists. */
static int scan_dir(struct agent_plugins *pl, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL, path[4096];
	uint32_t nr = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char **v;

		if (e->d_name[0] == '.' || !(has_suffix(e->d_name, ".so") || has_suffix(e->d_name, ".lua") ||
					     has_suffix(e->d_name, ".asl")))
			continue;
		v = realloc(names, (nr + 1) * sizeof(*v));
		if (!v)
			break;
		names = v;
		names[nr] = strdup(e->d_name);
		if (names[nr])
			nr++;
	}
	closedir(d);
	qsort(names, nr, sizeof(*names), cmp_str);
	for (uint32_t i = 0; i < nr; i++) {
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (!stat(path, &st) && S_ISREG(st.st_mode))
			agent_plugins_add_file(pl, path, 1);
		free(names[i]);
	}
	free(names);
	return 1;
}

/*
 * root/strategies, root/properties and (for user directories) root itself.
 * The built-in directory's own top level holds the runtime and the gate
 * library, which must never be dlopen()ed into the agent.
 */
static int scan_root(struct agent_plugins *pl, const char *root, int top_level)
{
	char sub[4200];
	int found = 0;

	snprintf(sub, sizeof(sub), "%s/strategies", root);
	found |= scan_dir(pl, sub);
	snprintf(sub, sizeof(sub), "%s/properties", root);
	found |= scan_dir(pl, sub);
	if (top_level)
		found |= scan_dir(pl, root);
	return found;
}

int agent_plugins_scan(struct agent_plugins *pl, const char *const *extra_dirs, uint32_t nr_extra)
{
	char dir[4096];
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	int nr = 0;

	if (!agent_libdir(dir, sizeof(dir)))
		nr += scan_root(pl, dir, 0);
	if (xdg && *xdg) {
		snprintf(dir, sizeof(dir), "%s/ameba/plugins", xdg);
		nr += scan_root(pl, dir, 1);
	} else if (home && *home) {
		snprintf(dir, sizeof(dir), "%s/.config/ameba/plugins", home);
		nr += scan_root(pl, dir, 1);
	}
	for (uint32_t i = 0; i < nr_extra; i++) {
		struct stat st;

		if (stat(extra_dirs[i], &st) || !S_ISDIR(st.st_mode)) {
			agent_plugins_warn(pl, "--plugin-path %s: not a directory", extra_dirs[i]);
			continue;
		}
		nr += scan_root(pl, extra_dirs[i], 1);
	}
	return nr;
}

static void select_subtree(struct agent_plugins *pl, struct agent_property *root)
{
	root->selected = 1;
	for (uint32_t i = 0; i < pl->nr_props; i++)
		if (pl->props[i].parent == root && !pl->props[i].selected)
			select_subtree(pl, &pl->props[i]);
}

int agent_plugins_link(struct agent_plugins *pl, const char *const *select_specs, uint32_t nr,
		       char *err, size_t len)
{
	char msg[1024];
	int rc;

	/* refines -> parent; a cycle or a missing parent makes a root. */
	for (uint32_t i = 0; i < pl->nr_props; i++) {
		struct agent_property *p = &pl->props[i];

		p->parent = p->refines ? agent_plugins_property(pl, p->refines) : NULL;
		if (p->refines && !p->parent)
			agent_plugins_warn(pl, "%s: property %s refines %s, which is not loaded; "
					   "it is evaluated on its own", p->path, p->name, p->refines);
	}
	for (uint32_t i = 0; i < pl->nr_props; i++) {
		struct agent_property *p = &pl->props[i], *q = p->parent;
		unsigned depth = 0;

		while (q && depth <= pl->nr_props) {
			q = q->parent;
			depth++;
		}
		if (depth > pl->nr_props) {
			agent_plugins_warn(pl, "%s: property %s is part of a refines cycle; it is "
					   "evaluated on its own", p->path, p->name);
			p->parent = NULL;
			depth = 0;
		}
		p->depth = depth;
	}
	/* recompute depths after cycle breaking */
	for (uint32_t i = 0; i < pl->nr_props; i++) {
		unsigned depth = 0;

		for (struct agent_property *q = pl->props[i].parent; q && depth <= pl->nr_props; q = q->parent)
			depth++;
		pl->props[i].depth = depth;
	}

	for (uint32_t i = 0; i < pl->nr_props; i++)
		pl->props[i].selected = nr == 0 || pl->props[i].explicit_file;
	for (uint32_t s = 0; s < nr; s++) {
		char *name;
		struct agent_params given;
		struct agent_property *p;

		rc = agent_spec_parse(select_specs[s], &name, &given, err, len);
		if (rc)
			return rc;
		p = agent_plugins_property(pl, name);
		if (!p) {
			size_t o = (size_t)snprintf(err, len, "--property %s: no property of that name "
						    "is loaded; loaded:", name);

			for (uint32_t i = 0; i < pl->nr_props && o < len; i++)
				o += (size_t)snprintf(err + o, len - o, " %s", pl->props[i].name);
			free(name);
			agent_params_free(&given);
			return AMEBA_EINVAL;
		}
		agent_params_free(&p->overrides);
		p->overrides = given;
		select_subtree(pl, p);
		free(name);
	}
	for (uint32_t i = 0; i < pl->nr_props; i++) {
		struct agent_property *p = &pl->props[i];

		snprintf(msg, sizeof(msg), "property %s (%s)", p->name, p->path);
		agent_params_free(&p->values);
		rc = agent_params_resolve(msg, p->params, p->nr_params, &p->overrides, &p->values,
					  err, len);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Default threads of a finding: those carrying at least 1% of the busiest
 * thread's value of the property's key metric (its first need, else the
 * run's metric).
 */
static void default_threads(const struct agent_property *p, const struct ameba_context *ctx,
			    int primary, struct agent_verdict *out)
{
	int m = p->nr_needs ? p->needs[0] : primary;
	const double *v;
	double max = 0;

	out->nr_threads = 0;
	if (m < 0 || m >= AMEBA_M_NR || !ctx->per_thread[m])
		m = AMEBA_M_MEM_REF;
	v = ctx->per_thread[m];
	if (!v)
		return;
	for (uint32_t i = 0; i < ctx->nr_threads; i++)
		if (v[i] > max)
			max = v[i];
	for (uint32_t i = 0; i < ctx->nr_threads && out->nr_threads < ARRAY_SIZE(out->threads); i++)
		if (max > 0 && v[i] >= 0.01 * max)
			out->threads[out->nr_threads++] = ctx->thread_ids[i];
}

struct eval_call {
	struct agent_property *p;
	const struct ameba_context *ctx;
	struct agent_verdict *out;
};

static int eval_c(void *arg)
{
	struct eval_call *c = arg;

	return c->p->desc.evaluate(c->ctx, &c->p->values.view, &c->out->v);
}

int agent_property_eval(struct agent_plugins *pl, struct agent_property *p,
			const struct ameba_context *ctx, int primary_metric,
			struct agent_verdict *out)
{
	char msg[1024];
	int rc;

	if (p->disabled || !p->selected || ctx->kind != p->ctx_kind)
		return 1;
	for (uint32_t i = 0; i < p->nr_needs; i++)
		if (!ctx->has[p->needs[i]])
			return 1;
	memset(out, 0, sizeof(*out));
	out->v.struct_size = sizeof(out->v);
	out->v.confidence = ctx->confidence;
	if (p->lang == AGENT_PROP_LUA) {
		rc = agent_lua_eval(pl, p, ctx, primary_metric, out, msg, sizeof(msg));
		if (rc < 0) {
			agent_property_disable(pl, p, msg);
			return rc;
		}
	} else {
		struct eval_call call = { p, ctx, out };
		int sig;

		rc = agent_guard_call(eval_c, &call, &sig);
		if (sig) {
			snprintf(msg, sizeof(msg), "%s: property %s: evaluate() crashed with SIG%s",
				 p->path, p->name, sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
			agent_property_disable(pl, p, msg);
			return rc;
		}
		if (rc < 0) {
			snprintf(msg, sizeof(msg), "%s: property %s: evaluate() failed: %s", p->path,
				 p->name, ameba_strerror(rc));
			agent_property_disable(pl, p, msg);
			return rc;
		}
		out->v.evidence[sizeof(out->v.evidence) - 1] = '\0';
		out->v.advice[sizeof(out->v.advice) - 1] = '\0';
	}
	if (!out->v.holds)
		return 0;
	out->v.holds = 1;
	if (!isfinite(out->v.severity) || !isfinite(out->v.confidence)) {
		snprintf(msg, sizeof(msg), "%s: property %s: severity %g / confidence %g is not a "
			 "finite number", p->path, p->name, out->v.severity, out->v.confidence);
		agent_property_disable(pl, p, msg);
		return AMEBA_ERANGE;
	}
	out->v.severity = out->v.severity < 0 ? 0 : out->v.severity > 1 ? 1 : out->v.severity;
	out->v.confidence = out->v.confidence < 0 ? 0 : out->v.confidence > 1 ? 1 : out->v.confidence;
	if (!out->threads_set)
		default_threads(p, ctx, primary_metric, out);
	return 0;
}
