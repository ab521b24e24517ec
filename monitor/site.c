/*
 * site.c - allocation sites: capture (frame-pointer walk), deduplication into
 * dense ids, and symbolisation of code addresses with elfutils libdw.
 *
 * Notes:
 *  - A site is the sequence of return addresses of an allocation call, up
 *    to MON_SITE_MAX_FRAMES, innermost first: frames[0] is the caller of the
 *    interposed function. Equal sequences are one site. Sites are finer than
 *    what a reader can tell apart (two calls on one line, the callers of an
 *    xmalloc wrapper): sitebins.c groups them into bins by symbolised name,
 *    so that blocks of one source-level allocation site aggregate (Gibson).
 *  - The walk follows saved frame pointers: [fp] = caller's fp, [fp + 8] =
 *    return address. Each fp must lie in the thread's stack, be 8-aligned
 *    and grow strictly (callers sit higher). Only code built with frame
 *    pointers keeps rbp meaningful, so the walk goes on past a frame only
 *    while that frame's pc is in instrumented code (ameba cc adds
 *    -fno-omit-frame-pointer); a libc frame ends it rather than adding
 *    garbage that would split one site into many. Unknown stack bounds (no
 *    thread record yet) give a one-frame site.
 *  - The site table is read without locks: sites live in fixed chunks that
 *    never move, and an open-addressing table of (hash, id) words is
 *    published with release stores; insertion takes site_lock. A table that
 *    grows is replaced and the old one leaked (tables double, so the leak
 *    is below the final table's size).
 *  - Symbolisation (rare, slow) runs under sym_lock with one Dwfl for the
 *    process, re-reported when modules were loaded since. Results are
 *    cached per pc forever, so returned strings stay valid. libdw allocates
 *    with malloc: the calling thread's in_rt is raised around it.
 *  - Return addresses point after the call: they are looked up at pc - 1 so
 *    that the line is the call's.
 *  - debuginfod is never contacted from inside the profiled process: when
 *    DEBUGINFOD_URLS is set only local build-id paths are searched.
 *  - DWARF (inlined scopes, file:line) is read only from a module's own
 *    file; a separate debug file (/usr/lib/debug, libc6-dbg) gives the
 *    function name from its symbol table but no file:line. Its DWARF is
 *    compressed: the first libc frame of a site (__libc_start_call_main
 *    above main) cost 0.2 G instructions of inflate at exit, 6% of a short
 *    run (bench-sim-speed, dense kernel), for a file:line inside glibc.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mon.h"

#define LOAD_RLX(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* ---- the site table ---- */

#define SITE_CHUNK_SHIFT 10
#define SITE_CHUNK (1u << SITE_CHUNK_SHIFT)
#define SITE_NR_CHUNKS 4096		/* 4M sites */
#define SITE_TAB_MIN 1024

struct site_tab {
	uint32_t cap;			/* power of two */
	uint32_t nr;			/* used slots (site_lock) */
	uint64_t slot[];		/* hash << 32 | id; 0 = empty */
};

static struct mon_site *site_chunks[SITE_NR_CHUNKS];
static uint32_t site_nr;		/* ids 1..site_nr are complete (atomic) */
static struct site_tab *site_tab;	/* published (atomic) */
static pthread_mutex_t site_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t sym_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t site_once = PTHREAD_ONCE_INIT;

static void site_fork_prepare(void)
{
	pthread_mutex_lock(&sym_lock);
	pthread_mutex_lock(&site_lock);
}

static void site_fork_parent(void)
{
	pthread_mutex_unlock(&site_lock);
	pthread_mutex_unlock(&sym_lock);
}

static void site_fork_child(void)
{
	pthread_mutex_init(&site_lock, NULL);
	pthread_mutex_init(&sym_lock, NULL);
}

static void site_init_once(void)
{
	pthread_atfork(site_fork_prepare, site_fork_parent, site_fork_child);
}

static inline struct mon_site *site_at(uint32_t id)
{
	struct mon_site *chunk = LOAD_ACQ(&site_chunks[id >> SITE_CHUNK_SHIFT]);

	return chunk ? &chunk[id & (SITE_CHUNK - 1)] : NULL;
}

const struct mon_site *mon_site_get(uint32_t id)
{
	if (!id || id > LOAD_ACQ(&site_nr))
		return NULL;
	return site_at(id);
}

uint32_t mon_site_nr(void)
{
	return LOAD_ACQ(&site_nr);
}

void mon_site_count(uint32_t site_id, size_t sz_bytes)
{
	struct mon_site *s;

	if (!site_id || site_id > LOAD_ACQ(&site_nr) || !(s = site_at(site_id)))
		return;
	__atomic_fetch_add(&s->nr_allocs, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->sz_bytes_total, sz_bytes, __ATOMIC_RELAXED);
}

static uint32_t frames_hash(const uintptr_t *f, uint32_t n, const char *file)
{
	uint64_t h = (0x9e3779b97f4a7c15ull ^ n) + (uintptr_t)file * 0x2545f4914f6cdd1dull;

	for (uint32_t i = 0; i < n; i++) {
		h ^= f[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 33;
	}
	return (uint32_t)(h ^ (h >> 32));
}

/* The id of the site with frames f[0..n) (and file) in tab, or 0. No lock. */
static uint32_t tab_find(const struct site_tab *tab, uint32_t h, const uintptr_t *f, uint32_t n,
			 const char *file)
{
	uint32_t mask;

	if (!tab)
		return 0;
	mask = tab->cap - 1;
	for (uint32_t i = h & mask, k = 0; k < tab->cap; i = (i + 1) & mask, k++) {
		uint64_t v = LOAD_ACQ(&tab->slot[i]);
		const struct mon_site *s;

		if (!v)
			return 0;
		if ((uint32_t)(v >> 32) != h)
			continue;
		s = site_at((uint32_t)v);
		if (s && s->nr_frames == n && s->file == file && !memcmp(s->frames, f, n * sizeof(*f)))
			return s->id;
	}
	return 0;
}

static void tab_put(struct site_tab *tab, uint64_t v)
{
	uint32_t mask = tab->cap - 1;

	for (uint32_t i = (uint32_t)(v >> 32) & mask;; i = (i + 1) & mask) {
		if (!tab->slot[i]) {
			STORE_REL(&tab->slot[i], v);
			tab->nr++;
			return;
		}
	}
}

/* Makes room for one more entry (site_lock held): 0 or AMEBA_ENOMEM. */
static int tab_reserve(void)
{
	struct site_tab *old = site_tab, *tab;
	uint32_t cap;

	if (old && (old->nr + 1) * 2 <= old->cap)
		return 0;
	cap = old ? old->cap * 2 : SITE_TAB_MIN;
	tab = mon_calloc(1, sizeof(*tab) + cap * sizeof(tab->slot[0]));
	if (!tab)
		return AMEBA_ENOMEM;
	tab->cap = cap;
	if (old)
		for (uint32_t i = 0; i < old->cap; i++)
			if (old->slot[i])
				tab_put(tab, old->slot[i]);
	/* The old table is leaked: lock-free readers may still probe it. */
	STORE_REL(&site_tab, tab);
	return 0;
}

/* Finds or adds the site with frames f[0..n) and file: its id, or 0 when out of memory. */
static uint32_t site_insert(uint32_t h, const uintptr_t *f, uint32_t n, const char *file)
{
	uint32_t id;

	pthread_once(&site_once, site_init_once);
	pthread_mutex_lock(&site_lock);
	id = tab_find(site_tab, h, f, n, file);
	if (!id) {
		uint32_t c = (site_nr + 1) >> SITE_CHUNK_SHIFT;
		struct mon_site *s;

		if (c >= SITE_NR_CHUNKS || tab_reserve())
			goto out;
		if (!site_chunks[c]) {
			struct mon_site *chunk = mon_calloc(SITE_CHUNK, sizeof(*chunk));

			if (!chunk)
				goto out;
			STORE_REL(&site_chunks[c], chunk);
		}
		id = site_nr + 1;
		s = site_at(id);
		s->id = id;
		s->nr_frames = n;
		s->file = file;
		memcpy(s->frames, f, n * sizeof(*f));
		tab_put(site_tab, (uint64_t)h << 32 | id);
		STORE_REL(&site_nr, id);
	}
out:
	pthread_mutex_unlock(&site_lock);
	return id;
}

/* Appends the callers above frame fp to frames[n..]; returns the new count. */
static uint32_t walk_frames(struct mon_thread *t, uintptr_t fp, uintptr_t *frames, uint32_t n)
{
	uintptr_t lo, hi;

	if (!t || !fp)
		return n;
	lo = t->stack_lo;
	hi = t->stack_hi;
	if (lo >= hi || hi - lo < 16)
		return n;
	/* frames[n - 1] returns into a function whose frame is the caller of
	 * fp's; its saved rbp is a frame pointer only if it was built with them:
	 * the program's instrumented code and the runtime's own. */
	while (n < MON_SITE_MAX_FRAMES &&
	       (mon_objmap_pc_instrumented(frames[n - 1]) || mon_pc_in_runtime(frames[n - 1]))) {
		uintptr_t next, pc;

		if (fp < lo || fp > hi - 16 || (fp & 7))
			break;
		next = ((const uintptr_t *)fp)[0];
		if (next <= fp || next > hi - 16 || (next & 7))
			break;
		pc = ((const uintptr_t *)next)[1];
		if (pc < 4096)
			break;
		frames[n++] = pc;
		fp = next;
	}
	return n;
}

uint32_t mon_site_capture_file(struct mon_thread *t, uintptr_t ret_pc, void *frame, const char *file)
{
	uintptr_t frames[MON_SITE_MAX_FRAMES];
	uint32_t n = 0, h, id;

	if (!ret_pc)
		return 0;
	frames[n++] = ret_pc;
	n = walk_frames(t, (uintptr_t)frame, frames, n);
	h = frames_hash(frames, n, file);
	id = tab_find(LOAD_ACQ(&site_tab), h, frames, n, file);
	return id ? id : site_insert(h, frames, n, file);
}

uint32_t mon_site_capture(struct mon_thread *t, uintptr_t ret_pc, void *frame)
{
	return mon_site_capture_file(t, ret_pc, frame, NULL);
}

/* ---- symbolisation ---- */

/*
 * One function scope at a code address (mon_site_start): the first is the
 * function the address is in (the innermost inlined one), each next one the
 * function that scope was inlined into, at the line of the inlined call.
 */
struct vframe {
	const char *func;
	const char *file;	/* full path as in DWARF, or NULL */
	int line;
	uint32_t code_bytes;	/* the scope's code over all its ranges; 0 = unknown */
};

#define SCOPE_MAX 8		/* inlined scopes kept per code address */

struct sym_ent {
	uintptr_t pc;
	int found;
	struct mon_frame_info fi;
	int chain_done;		/* chain looked up (atomic; set once, under sym_lock) */
	uint32_t nr_chain;	/* 0 when there are no DWARF scopes */
	struct vframe *chain;	/* [nr_chain], innermost first */
	struct sym_ent *next;
};

#define SYM_NR_BUCKETS 4096

static struct sym_ent *sym_buckets[SYM_NR_BUCKETS];	/* sym_lock */
static Dwfl *sym_dwfl;
static int sym_dwfl_failed;
static unsigned long long sym_mod_gen;	/* dlpi_adds + dlpi_subs at the last report */
/* own_dwarf's answers per module (sym_lock); reset by every report: modules may go */
static struct {
	Dwfl_Module *mod;
	int has;
} own_dwarf_memo[64];
static unsigned own_dwarf_nr;

static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file, const char *debuglink, GElf_Word crc, char **debuginfo_file)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	if (urls && *urls)
		return dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file, debuglink,
						    crc, debuginfo_file);
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file, debuglink, crc,
					    debuginfo_file);
}

static const Dwfl_Callbacks sym_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = find_debuginfo,
};

static int mod_gen_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	*(unsigned long long *)arg = info->dlpi_adds + info->dlpi_subs;
	return 1;
}

static unsigned long long mod_gen(void)
{
	unsigned long long g = 0;

	dl_iterate_phdr(mod_gen_cb, &g);
	return g;
}

/* (Re)reports the process's modules to sym_dwfl: 0 or AMEBA_ENOENT. */
static int dwfl_report(void)
{
	if (!sym_dwfl) {
		if (sym_dwfl_failed)
			return AMEBA_ENOENT;
		sym_dwfl = dwfl_begin(&sym_callbacks);
		if (!sym_dwfl) {
			sym_dwfl_failed = 1;
			return AMEBA_ENOENT;
		}
	}
	sym_mod_gen = mod_gen();
	own_dwarf_nr = 0;
	dwfl_report_begin(sym_dwfl);
	if (dwfl_linux_proc_report(sym_dwfl, getpid()) != 0) {
		dwfl_report_end(sym_dwfl, NULL, NULL);
		return AMEBA_ENOENT;
	}
	dwfl_report_end(sym_dwfl, NULL, NULL);
	return 0;
}

static const char *dup_or_null(const char *s)
{
	return s ? mon_strdup(s) : NULL;
}

/* Innermost function at a, inlined functions included; NULL if no DWARF. */
static const char *scope_func(Dwfl_Module *mod, Dwarf_Addr a)
{
	Dwarf_Die *scopes = NULL;
	const char *name = NULL;
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, a, &bias);
	int n;

	if (!cu)
		return NULL;
	n = dwarf_getscopes(cu, a - bias, &scopes);
	for (int i = 0; i < n && !name; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
			name = dwarf_diename(&scopes[i]);
	}
	mon_free(scopes);	/* malloc'ed by libdw: same glibc heap */
	return name;
}

/* Bytes of code in die's ranges (a subprogram or an inlined call); 0 if none. */
static uint32_t scope_bytes(Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	uint64_t sum = 0;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0)
		sum += hi - lo;
	return sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
}

/*
 * The chain of function scopes at a (module address), innermost first, into
 * e->chain; e->fi (the innermost scope's file:line) must be filled. Leaves
 * e->chain NULL when there is no DWARF scope (sym_lock held).
 */
static void scope_chain(Dwfl_Module *mod, Dwarf_Addr a, struct sym_ent *e)
{
	Dwarf_Die *scopes = NULL;
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, a, &bias);
	Dwarf_Files *files = NULL;
	size_t nr_files = 0;
	const char *file = e->fi.file;
	int line = e->fi.line, n;
	struct vframe v[SCOPE_MAX];
	uint32_t nv = 0;

	Dwarf_Die inner;

	if (!cu || (n = dwarf_getscopes(cu, a - bias, &scopes)) <= 0)
		return;
	/* dwarf_getscopes continues an inlined scope with its abstract
	 * definition's scopes; the concrete containers (the caller it was
	 * inlined into) come from dwarf_getscopes_die, as eu-addr2line -i does */
	inner = scopes[0];
	mon_free(scopes);
	scopes = NULL;
	if ((n = dwarf_getscopes_die(&inner, &scopes)) <= 0)
		return;
	if (dwarf_getsrcfiles(cu, &files, &nr_files) != 0)
		files = NULL;
	for (int i = 0; i < n && nv < SCOPE_MAX; i++) {
		int tag = dwarf_tag(&scopes[i]);
		Dwarf_Attribute at;
		Dwarf_Word w;

		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		v[nv].func = dup_or_null(dwarf_diename(&scopes[i]));
		v[nv].file = file == e->fi.file ? file : dup_or_null(file);
		v[nv].line = line;
		v[nv].code_bytes = scope_bytes(&scopes[i]);
		nv++;
		if (tag == DW_TAG_subprogram)
			break;
		/* the next scope's line is where this one was inlined */
		file = NULL;
		line = 0;
		if (files && dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &at), &w) == 0 &&
		    w < nr_files)
			file = dwarf_filesrc(files, w, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &at), &w) == 0)
			line = (int)w;
	}
	mon_free(scopes);	/* malloc'ed by libdw: same glibc heap */
	if (nv && (e->chain = mon_calloc(nv, sizeof(*e->chain)))) {
		memcpy(e->chain, v, nv * sizeof(*v));
		e->nr_chain = nv;
	}
}

/* Does mod's own file carry DWARF (.debug_info)? Cached per module for
 * the life of sym_dwfl (sym_lock held). */
static int own_dwarf(Dwfl_Module *mod)
{
	Dwarf_Addr bias;
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int has = 0;

	for (unsigned i = 0; i < own_dwarf_nr; i++)
		if (own_dwarf_memo[i].mod == mod)
			return own_dwarf_memo[i].has;
	elf = dwfl_module_getelf(mod, &bias);
	if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0) {
		while (!has && (scn = elf_nextscn(elf, scn)) != NULL) {
			GElf_Shdr sh;
			const char *name;

			if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
			    (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
			    strcmp(name, ".debug_info") == 0)
				has = 1;
		}
	}
	if (own_dwarf_nr < sizeof(own_dwarf_memo) / sizeof(own_dwarf_memo[0])) {
		own_dwarf_memo[own_dwarf_nr].mod = mod;
		own_dwarf_memo[own_dwarf_nr++].has = has;
	}
	return has;
}

/* Resolves pc (a return address) into e (sym_lock held). */
static void sym_resolve(uintptr_t pc, struct sym_ent *e)
{
	Dwarf_Addr a = pc - 1;
	Dwfl_Module *mod;
	Dwfl_Line *line;
	const char *func, *mname;

	if (!sym_dwfl && dwfl_report())
		return;
	mod = dwfl_addrmodule(sym_dwfl, a);
	if (!mod && mod_gen() != sym_mod_gen && dwfl_report() == 0)
		mod = dwfl_addrmodule(sym_dwfl, a);	/* loaded since the last report */
	if (!mod)
		return;
	mname = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	if (!own_dwarf(mod)) {
		/* the symbol table only (see the Notes) */
		func = dwfl_module_addrname(mod, a);
		e->fi.func = dup_or_null(func);
		e->fi.module = dup_or_null(mname);
		e->found = e->fi.func != NULL;
		return;
	}
	func = scope_func(mod, a);
	if (!func)
		func = dwfl_module_addrname(mod, a);
	line = dwfl_module_getsrc(mod, a);
	if (line) {
		int lineno = 0;
		const char *file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);

		e->fi.file = dup_or_null(file);
		e->fi.line = lineno;
	}
	e->fi.func = dup_or_null(func);
	e->fi.module = dup_or_null(mname);
	e->found = e->fi.func || e->fi.file;
}

/* The cache entry of pc, symbolised on first use; NULL when out of memory.
 * Entries are immutable once made and live for ever. */
static const struct sym_ent *sym_get(uintptr_t pc)
{
	uint32_t b = (uint32_t)((pc * 0x9e3779b97f4a7c15ull) >> 52) & (SYM_NR_BUCKETS - 1);
	struct mon_thread *t = mon_self;
	struct sym_ent *e;

	if (t)
		t->in_rt++;
	pthread_once(&site_once, site_init_once);
	pthread_mutex_lock(&sym_lock);
	for (e = sym_buckets[b]; e && e->pc != pc; e = e->next)
		;
	if (!e) {
		e = mon_calloc(1, sizeof(*e));
		if (e) {
			e->pc = pc;
			sym_resolve(pc, e);
			e->next = sym_buckets[b];
			sym_buckets[b] = e;
		}
	}
	pthread_mutex_unlock(&sym_lock);
	if (t)
		t->in_rt--;
	return e;
}

/*
 * The cache entry of pc with its chain of inlined scopes, looked up on
 * first use. Only a frame that may be a wrapper needs it (mon_site_start):
 * dwarf_getscopes_die walks the compilation unit from its root.
 */
static const struct sym_ent *sym_get_chain(uintptr_t pc)
{
	struct sym_ent *e = (struct sym_ent *)sym_get(pc);
	struct mon_thread *t = mon_self;
	Dwfl_Module *mod;

	if (!e || __atomic_load_n(&e->chain_done, __ATOMIC_ACQUIRE))
		return e;
	if (t)
		t->in_rt++;
	pthread_mutex_lock(&sym_lock);
	if (!e->chain_done) {
		mod = sym_dwfl ? dwfl_addrmodule(sym_dwfl, pc - 1) : NULL;
		if (mod && own_dwarf(mod))
			scope_chain(mod, pc - 1, e);
		__atomic_store_n(&e->chain_done, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&sym_lock);
	if (t)
		t->in_rt--;
	return e;
}

int mon_symbolize(uintptr_t pc, struct mon_frame_info *out)
{
	const struct sym_ent *e = sym_get(pc);

	memset(out, 0, sizeof(*out));
	if (e)
		*out = e->fi;
	return !e ? AMEBA_ENOMEM : e->found ? 0 : AMEBA_ENOENT;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

const char *mon_frame_label(uintptr_t pc, char *buf, size_t len)
{
	struct mon_frame_info fi = { 0 };

	mon_symbolize(pc, &fi);
	if (fi.func && fi.file)
		snprintf(buf, len, "%s@%s:%d", fi.func, base_name(fi.file), fi.line);
	else if (fi.func)
		snprintf(buf, len, "%s@%s", fi.func, fi.module ? base_name(fi.module) : "?");
	else
		snprintf(buf, len, "0x%lx@%s", (unsigned long)pc, fi.module ? base_name(fi.module) : "?");
	return buf;
}

/* ---- allocation wrappers ---- */

/*
 * Functions that only forward to the allocator under another name, by
 * convention of common code bases: gnulib and git (x*), Phoenix and others
 * (CALLOC ...), GLib (g_*, when built with ameba cc), PHP (e*), Tcl (ck*),
 * Redis (z*), FFmpeg (av_*), and the plain safe_ / my_ / checked_ forms.
 */
static const char *const wrapper_default[] = {
	"xmalloc", "xcalloc", "xrealloc", "xzalloc", "xmallocz", "xstrdup", "xstrndup", "xmemdup",
	"xnmalloc", "xreallocarray", "MALLOC", "CALLOC", "REALLOC", "g_malloc", "g_malloc0",
	"g_malloc_n", "g_malloc0_n", "g_realloc", "g_try_malloc", "g_try_malloc0", "g_new",
	"g_new0", "emalloc", "ecalloc", "erealloc", "ckalloc", "ckrealloc", "zmalloc", "zcalloc",
	"zrealloc", "av_malloc", "av_mallocz", "av_calloc", "safe_malloc", "safe_calloc",
	"safe_realloc", "checked_malloc", "checked_calloc", "my_malloc", "my_calloc", "my_realloc",
};

#define WRAPPER_MAX 256		/* names in the list */
#define WRAPPER_MAX_BYTES 256	/* code of a header function that only forwards */

static const char *wrapper_names[WRAPPER_MAX];
static uint32_t wrapper_nr;
static pthread_once_t wrapper_once = PTHREAD_ONCE_INIT;

static int wrapper_find(const char *name, size_t n)
{
	for (uint32_t i = 0; i < wrapper_nr; i++)
		if (strlen(wrapper_names[i]) == n && !strncmp(wrapper_names[i], name, n))
			return (int)i;
	return -1;
}

/* Adds (op '+') or removes (op '-') name[0..n) from the list. */
static void wrapper_edit(char op, const char *name, size_t n)
{
	int i = wrapper_find(name, n);
	char *dup;

	if (op == '-') {
		if (i >= 0)
			wrapper_names[i] = wrapper_names[--wrapper_nr];
		return;
	}
	if (i >= 0 || n == 0)
		return;
	if (wrapper_nr == WRAPPER_MAX) {
		mon_log("AMEBA_ALLOC_WRAPPERS: more than %d names; '%.*s' and later ones are ignored",
			WRAPPER_MAX, (int)n, name);
		return;
	}
	if ((dup = mon_malloc(n + 1))) {
		memcpy(dup, name, n);
		dup[n] = '\0';
		wrapper_names[wrapper_nr++] = dup;
	}
}

/*
 * AMEBA_ALLOC_WRAPPERS: a comma-separated list of function names. When its
 * first entry starts with '+' or '-' the list edits the default ("+name"
 * adds, "-name" removes); otherwise it replaces the default ("" = none).
 * Blanks around names are ignored.
 */
static void wrapper_init(void)
{
	const char *env = getenv("AMEBA_ALLOC_WRAPPERS"), *p;

	while (env && (*env == ' ' || *env == '\t'))
		env++;
	if (!env || *env == '+' || *env == '-')
		for (size_t i = 0; i < sizeof(wrapper_default) / sizeof(wrapper_default[0]); i++)
			wrapper_names[wrapper_nr++] = wrapper_default[i];
	for (p = env; p && *p;) {
		const char *end = strchr(p, ',');
		size_t n;
		char op = '+';

		if (!end)
			end = p + strlen(p);
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p < end && (*p == '+' || *p == '-'))
			op = *p++;
		n = (size_t)(end - p);
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		wrapper_edit(op, p, n);
		p = *end ? end + 1 : end;
	}
}

int mon_alloc_wrapper_named(const char *func)
{
	if (!func)
		return 0;
	pthread_once(&wrapper_once, wrapper_init);
	return wrapper_find(func, strlen(func)) >= 0;
}

/* A header of the program: .h/.hh/.hpp/.hxx outside the system's include
 * directories (std::allocator & co. keep their names: docs/objmap.md). */
static int program_header(const char *path)
{
	const char *dot = strrchr(path, '.');

	if (!dot || strchr(dot, '/'))
		return 0;
	if (strcmp(dot, ".h") && strcmp(dot, ".hh") && strcmp(dot, ".hpp") && strcmp(dot, ".hxx"))
		return 0;
	return strncmp(path, "/usr/include/", 13) && strncmp(path, "/usr/lib/", 9) &&
	       strncmp(path, "/usr/local/include/", 19);
}

static int vframe_wrapper(const struct vframe *v)
{
	if (mon_alloc_wrapper_named(v->func))
		return 1;
	return v->file && program_header(v->file) && v->code_bytes && v->code_bytes <= WRAPPER_MAX_BYTES;
}

/* The label of scope d of the frame at pc: "func@file:line" as mon_frame_label. */
static void vframe_label(uintptr_t pc, const struct sym_ent *e, uint32_t d, char *buf, size_t len)
{
	const struct vframe *v = &e->chain[d];

	if (d == 0 || !v->file)
		mon_frame_label(pc, buf, len);
	else
		snprintf(buf, len, "%s@%s:%d", v->func ? v->func : "?", base_name(v->file), v->line);
}

uint32_t mon_site_start(const struct mon_site *s, char *label, size_t len, char *via, size_t vlen)
{
	uint32_t first = 0;

	if (via && vlen)
		via[0] = '\0';
	if (!s || !s->nr_frames) {
		snprintf(label, len, "[unknown site]");
		return 0;
	}
	for (uint32_t k = 0; k < s->nr_frames; k++) {
		if (mon_objmap_pc_instrumented(s->frames[k])) {
			first = k;
			break;
		}
	}
	for (uint32_t k = first; k < s->nr_frames; k++) {
		const struct sym_ent *e = sym_get(s->frames[k]);
		int next_known = k + 1 < s->nr_frames && mon_objmap_pc_instrumented(s->frames[k + 1]);

		/* the innermost scope is no wrapper by name or by file: it names the
		 * site, and its inlined callers need not be looked up */
		if (e && !mon_alloc_wrapper_named(e->fi.func) &&
		    !(e->fi.file && program_header(e->fi.file))) {
			mon_frame_label(s->frames[k], label, len);
			return k;
		}
		e = sym_get_chain(s->frames[k]);
		if (!e || !e->nr_chain) {	/* no scopes to judge: this frame names it */
			mon_frame_label(s->frames[k], label, len);
			return k;
		}
		for (uint32_t d = 0; d < e->nr_chain; d++) {
			/* a wrapper yields only to a known caller */
			if ((d + 1 == e->nr_chain && !next_known) || !vframe_wrapper(&e->chain[d])) {
				vframe_label(s->frames[k], e, d, label, len);
				return k;
			}
			if (via && vlen && !via[0])
				vframe_label(s->frames[k], e, d, via, vlen);
		}
		/* every scope of frame k is a wrapper: on to its caller */
	}
	mon_frame_label(s->frames[first], label, len);	/* not reached */
	return first;
}

const char *mon_site_name(uint32_t site_id, char *buf, size_t len)
{
	if (!len)
		return buf;
	mon_site_start(mon_site_get(site_id), buf, len, NULL, 0);
	return buf;
}
