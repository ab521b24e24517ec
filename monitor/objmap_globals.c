/*
 * objmap_globals.c - the object map's globals: one record per data symbol
 * of each loaded module (the executable and its libraries, from their ELF
 * symbol tables), published as an immutable module set that lookups read
 * without a lock, and the ranges of instrumented code. objmap.c holds the
 * map's Notes.
 */
#include "objmap_int.h"

/* ------------------------------------------------------------------------ */
/* Globals and modules                                                      */
/* ------------------------------------------------------------------------ */

struct text_range {
	uintptr_t lo, hi;
};

struct gsym {
	uintptr_t start, end;
	struct mon_obj *obj;
};

struct module {
	uint32_t idx;		/* dense, in order of discovery: site_id of its globals */
	uint8_t instrumented;	/* built with ameba cc */
	uint8_t is_rt;		/* holds the runtime's code */
	uint8_t live;		/* still loaded */
	uint8_t seen;		/* found by the current scan */
	char *path;
	uintptr_t base;		/* dlpi_addr */
	const void *phdr;	/* dlpi_phdr: with base and path, the module's identity */
	uintptr_t data_lo, data_hi;	/* span of its globals */
	uint32_t nr_text;
	struct text_range text[MON_ELFSYMS_MAX_SEGS];
	uint32_t nr_gsyms;
	struct gsym *gsyms;	/* sorted by start, disjoint, immutable */
	struct mon_elfsyms syms;	/* owns the names */
	struct module *next;
};

/* What lookups read: immutable once published. */
struct modset {
	uint32_t nr_mods;
	struct module **mods;	/* loaded modules with globals, by data_lo */
	uint32_t nr_itext;
	struct text_range *itext;	/* text of instrumented modules, sorted */
};

static struct modset empty_modset;
static struct modset *cur_modset = &empty_modset;
pthread_mutex_t mon_objmap_mod_lock = PTHREAD_MUTEX_INITIALIZER;
static struct module *all_mods;
static uint32_t nr_all_mods;

/* Names of the runtime's own data, never the program's. */
static int rt_name(const char *n)
{
	static const char *const prefixes[] = { "mon_", "ameba_", "__ameba", "mri_", "__tsan" };

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(n, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

/* Alias preference at one address: global binding, then fewer underscores. */
static int sym_better(const struct mon_elfsym *a, const struct mon_elfsym *b)
{
	int ga = a->bind != STB_LOCAL, gb = b->bind != STB_LOCAL;

	if (ga != gb)
		return ga > gb;
	return strspn(a->name, "_") < strspn(b->name, "_");
}

struct gcand {
	uintptr_t start, end;
	const struct mon_elfsym *sym;
};

static int cmp_gcand(const void *a, const void *b)
{
	const struct gcand *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return sym_better(x->sym, y->sym) ? -1 : sym_better(y->sym, x->sym);
}

/*
 * The globals of m from its symbols: STT_OBJECT with a size, not the
 * runtime's; sorted; at one address the best alias wins and a symbol inside
 * an earlier one is dropped, so the array is disjoint. Leaves m empty when
 * out of memory.
 */
static void module_build_globals(struct module *m)
{
	struct gcand *c;
	uint32_t nr = 0, k = 0;

	if (!m->syms.nr_syms)
		return;
	c = mon_malloc(m->syms.nr_syms * sizeof(*c));
	if (!c)
		return;
	for (uint32_t i = 0; i < m->syms.nr_syms; i++) {
		const struct mon_elfsym *s = &m->syms.syms[i];
		uintptr_t start = m->base + s->value;

		if (s->type != STT_OBJECT || !s->sz_bytes || s->rt_unit || rt_name(s->name))
			continue;
		if (start + s->sz_bytes < start)
			continue;
		c[nr].start = start;
		c[nr].end = start + s->sz_bytes;
		c[nr].sym = s;
		nr++;
	}
	qsort(c, nr, sizeof(*c), cmp_gcand);
	m->gsyms = mon_calloc(nr ? nr : 1, sizeof(*m->gsyms));
	if (!m->gsyms) {
		mon_free(c);
		return;
	}
	for (uint32_t i = 0; i < nr; i++) {
		struct mon_obj *o;

		if (k && c[i].start < m->gsyms[k - 1].end)
			continue;	/* alias or nested: the first (best) one stays */
		o = mon_objmap_obj_new(NULL, MON_OBJ_GLOBAL, c[i].start, c[i].end,
				       c[i].end - c[i].start, m->idx, 0, c[i].sym->name);
		if (!o)
			break;
		m->gsyms[k].start = c[i].start;
		m->gsyms[k].end = c[i].end;
		m->gsyms[k].obj = o;
		k++;
	}
	m->nr_gsyms = k;
	if (k) {
		m->data_lo = m->gsyms[0].start;
		m->data_hi = m->gsyms[k - 1].end;
	}
	mon_free(c);
}

/* Does this module hold the runtime's code (our own function)? */
static int module_holds_rt(const struct dl_phdr_info *info)
{
	uintptr_t self = (uintptr_t)&mon_objmap_init;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && self >= lo && self - lo < ph->p_memsz)
			return 1;
	}
	return 0;
}

static struct module *module_new(const struct dl_phdr_info *info, int is_main)
{
	struct module *m = mon_calloc(1, sizeof(*m));
	char exe[PATH_MAX];
	const char *path = info->dlpi_name;

	if (!m)
		return NULL;
	if (is_main || !path || !*path) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		exe[n > 0 ? n : 0] = '\0';
		path = exe;
	}
	m->path = mon_strdup(path);
	m->base = info->dlpi_addr;
	m->phdr = info->dlpi_phdr;
	m->idx = nr_all_mods++;
	m->is_rt = (uint8_t)module_holds_rt(info);
	for (int i = 0; i < info->dlpi_phnum && m->nr_text < MON_ELFSYMS_MAX_SEGS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			m->text[m->nr_text].lo = info->dlpi_addr + ph->p_vaddr;
			m->text[m->nr_text].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
			m->nr_text++;
		}
	}
	if (m->path && mon_elfsyms_read(m->path, &m->syms) == 0) {
		/* An instrumented DSO references the hooks; an executable built by
		 * ameba cc has the runtime (and so __tsan_init) linked in. A runtime
		 * DSO (LD_PRELOAD) defines __tsan_init too but is not instrumented,
		 * and its data is all the runtime's. */
		m->instrumented = (m->syms.flags & MON_ELFSYMS_TSAN_REF) ||
				  (is_main && (m->syms.flags & MON_ELFSYMS_TSAN_INIT));
		if (!(m->is_rt && !is_main))
			module_build_globals(m);
	}
	m->live = 1;
	m->next = all_mods;
	all_mods = m;
	return m;
}

struct scan {
	int nr_seen;
};

static int scan_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *sc = arg;
	int is_main = sc->nr_seen++ == 0;
	const char *name = info->dlpi_name ? info->dlpi_name : "";

	for (struct module *m = all_mods; m; m = m->next) {
		if (m->live && m->base == info->dlpi_addr && m->phdr == info->dlpi_phdr &&
		    (is_main || !*name || (m->path && !strcmp(m->path, name)))) {
			m->seen = 1;
			return 0;
		}
	}
	/* Read it here, under the loader's lock: it cannot be unmapped meanwhile. */
	struct module *m = module_new(info, is_main);

	if (m)
		m->seen = 1;
	return 0;
}

static int cmp_mod(const void *a, const void *b)
{
	const struct module *x = *(struct module *const *)a, *y = *(struct module *const *)b;

	return x->data_lo < y->data_lo ? -1 : x->data_lo > y->data_lo;
}

static int cmp_range(const void *a, const void *b)
{
	const struct text_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Builds and publishes the module set of the live modules (mod_lock held). */
static void modset_publish(void)
{
	struct modset *ms = mon_calloc(1, sizeof(*ms));
	uint32_t nr_mods = 0, nr_text = 0;

	if (!ms)
		return;		/* keep the old set */
	for (struct module *m = all_mods; m; m = m->next) {
		if (!m->live)
			continue;
		nr_mods += m->nr_gsyms > 0;
		if (m->instrumented)
			nr_text += m->nr_text;
	}
	ms->mods = mon_calloc(nr_mods + 1, sizeof(*ms->mods));
	ms->itext = mon_calloc(nr_text + 1, sizeof(*ms->itext));
	if (!ms->mods || !ms->itext) {
		mon_free(ms->mods);
		mon_free(ms->itext);
		mon_free(ms);
		return;
	}
	for (struct module *m = all_mods; m; m = m->next) {
		if (!m->live)
			continue;
		if (m->nr_gsyms)
			ms->mods[ms->nr_mods++] = m;
		if (m->instrumented)
			for (uint32_t i = 0; i < m->nr_text; i++)
				ms->itext[ms->nr_itext++] = m->text[i];
	}
	qsort(ms->mods, ms->nr_mods, sizeof(*ms->mods), cmp_mod);
	qsort(ms->itext, ms->nr_itext, sizeof(*ms->itext), cmp_range);
	/* The previous set is leaked on purpose: lookups on other threads may
	 * still be reading it, and there is one per dlopen/dlclose. */
	STORE_REL(&cur_modset, ms);
}

void mon_objmap_modules_changed(void)
{
	struct mon_thread *t = mon_self;
	struct scan sc = { 0 };

	mon_objmap_boot();
	if (t)
		t->in_rt++;
	pthread_mutex_lock(&mon_objmap_mod_lock);
	for (struct module *m = all_mods; m; m = m->next)
		m->seen = 0;
	dl_iterate_phdr(scan_module, &sc);
	for (struct module *m = all_mods; m; m = m->next) {
		if (!m->live || m->seen)
			continue;
		/* Unloaded: its globals lose LIVE (records and counts stay). */
		m->live = 0;
		for (uint32_t i = 0; i < m->nr_gsyms; i++)
			mon_objmap_kill(m->gsyms[i].obj);
	}
	modset_publish();
	pthread_mutex_unlock(&mon_objmap_mod_lock);
	if (t)
		t->in_rt--;
}

struct mon_obj *mon_objmap_globals_lookup(uintptr_t a, uint64_t *seq)
{
	const struct modset *ms = LOAD_ACQ(&cur_modset);
	const struct module *m;
	uint32_t lo = 0, hi = ms->nr_mods;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (ms->mods[mid]->data_lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	m = ms->mods[lo - 1];
	if (a >= m->data_hi)
		return NULL;
	lo = 0;
	hi = m->nr_gsyms;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (m->gsyms[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || a >= m->gsyms[lo - 1].end)
		return NULL;
	*seq = obj_hit(m->gsyms[lo - 1].obj, a);
	return *seq ? m->gsyms[lo - 1].obj : NULL;
}

int mon_objmap_pc_instrumented(uintptr_t pc)
{
	const struct modset *ms = LOAD_ACQ(&cur_modset);
	uint32_t lo = 0, hi = ms->nr_itext;

	/* The executable's text holds the runtime too, which is not the
	 * program's instrumented code. */
	if (mon_pc_in_runtime(pc))
		return 0;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (ms->itext[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && pc < ms->itext[lo - 1].hi;
}
