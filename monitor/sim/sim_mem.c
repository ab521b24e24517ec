/*
 * sim_mem.c - the simulator's memory and its address-keyed tables: anonymous
 * mappings, set-associative arrays, the NUMA page table (first touch), the
 * fully associative LRU shadow and the first-reference set of the 3C
 * classification.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "sim_int.h"

#if defined(__SANITIZE_THREAD__)
#define SIM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SIM_TSAN 1
#endif
#endif

/*
 * Anonymous private mappings, reserved without swap (MAP_NORESERVE): large
 * tables cost only the pages they touch. In the runtime, mmap is interposed,
 * so the simulator calls the system call directly; under ThreadSanitizer it
 * calls libc so that TSan's shadow of the range is reset.
 */
void *sim_map(size_t sz)
{
	void *p;

	if (!sz)
		return NULL;
	sz = (sz + 4095) & ~(size_t)4095;
#ifdef SIM_TSAN
	p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
#else
	p = (void *)syscall(SYS_mmap, NULL, sz, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
#endif
	return p == MAP_FAILED ? NULL : p;
}

/*
 * Whether this process's addresses all lie below 2^47, as the LLC's 32-bit
 * keys need (sim_llc.k32, SIM_KEY32): a page asked for at 2^50 lands there
 * only where the kernel runs 5-level page tables, and only then does
 * anything map above 2^47 (Linux grants high addresses to a hint above it
 * alone). Elsewhere than x86-64, no (aarch64's user space may span 52 bits).
 */
int sim_low_addresses(void)
{
#if !defined(__x86_64__)
	return 0;
#else
	void *hint = (void *)((uintptr_t)1 << 50), *p;

#ifdef SIM_TSAN
	p = mmap(hint, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
#else
	p = (void *)syscall(SYS_mmap, hint, 4096, PROT_NONE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
#endif
	if (p == MAP_FAILED)
		return 0;
	sim_unmap(p, 4096);
	return (uintptr_t)p < ((uintptr_t)1 << 47);
#endif
}

/*
 * A table that every simulated miss touches at a random place (the LLC):
 * from 1 MiB up, whole 2 MiB pages mapped with one spare so that its start
 * can be aligned to a huge page, and advised to use huge pages (when the
 * kernel's THP mode allows: "madvise" or "always"). *map and *map_sz
 * receive what sim_unmap needs. Its host TLB misses otherwise come on top
 * of the program's own (random kernel: a 32 MiB array beside a 1.5 MiB LLC).
 */
void *sim_map_huge(size_t sz, void **map, size_t *map_sz)
{
	const size_t hsz = (size_t)2 << 20;
	uintptr_t p;

	if (sz < hsz / 2) {	/* small: the host's caches hold it anyway */
		*map_sz = sz;
		return *map = sim_map(sz);
	}
	/* whole huge pages: the kernel backs only an aligned 2 MiB extent
	 * that lies within the mapping */
	sz = (sz + hsz - 1) & ~(hsz - 1);
	*map_sz = sz + hsz;
	*map = sim_map(*map_sz);
	if (!*map)
		return NULL;
	p = ((uintptr_t)*map + hsz - 1) & ~(uintptr_t)(hsz - 1);
#ifdef SIM_TSAN
	madvise((void *)p, sz, MADV_HUGEPAGE);
#else
	syscall(SYS_madvise, (void *)p, sz, MADV_HUGEPAGE);
#endif
	return (void *)p;	/* failure to advise: small pages, no harm */
}

void sim_unmap(void *p, size_t sz)
{
	if (!p || !sz)
		return;
	sz = (sz + 4095) & ~(size_t)4095;
#ifdef SIM_TSAN
	munmap(p, sz);
#else
	syscall(SYS_munmap, p, sz);
#endif
}

void sim_lock_slow(uint32_t *l)
{
	for (unsigned spins = 0;; spins++) {
		if (!__atomic_load_n(l, __ATOMIC_RELAXED) &&
		    !__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
			return;
		if (spins < 256)
			sim_cpu_relax();
		else
			sched_yield();	/* the holder was preempted: give it the CPU */
	}
}

static size_t align64(size_t x)
{
	return (x + 63) & ~(size_t)63;
}

int sim_cache_init(struct sim_cache *k, uint64_t nr_sets, uint32_t assoc, uint32_t line_shift,
		   int repl, unsigned flags)
{
	uint64_t stride = assoc + (repl == MRI_GEOM_LRU ? assoc : 1);
	size_t n = (size_t)nr_sets * stride;
	size_t o_meta = align64(n * sizeof(uint64_t));
	size_t total = align64(o_meta + ((flags & SIM_CA_META) ? n * sizeof(struct sim_meta) : 0));
	char *base = sim_map(total);

	if (!base)
		return AMEBA_ENOMEM;
	k->map = base;
	k->map_sz = total;
	k->key = (uint64_t *)base;
	k->stride = stride;
	k->meta = (flags & SIM_CA_META) ? (struct sim_meta *)(base + o_meta) : NULL;
	k->clock = 1;	/* LRU stamps >= 2: 0 and 1 rank empty and invalidated ways */
	k->nr_sets = nr_sets;
	k->pow2 = (nr_sets & (nr_sets - 1)) == 0;
	k->set_mask = k->pow2 ? nr_sets - 1 : 0;
	k->assoc = assoc;
	k->line_shift = line_shift;
	k->repl = (uint8_t)repl;
	k->plru_levels = repl == MRI_GEOM_PLRU ? (uint8_t)sim_log2(assoc) : 0;
	return 0;
}

uint64_t sim_stamp_renumber_at = SIM_STAMP_RENUMBER;

int sim_sse41;

void mon_sim_sse41(int on)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;

	sim_sse41 = on && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_1);
#else
	(void)on;
	sim_sse41 = 0;
#endif
}

void sim_lru_renumber(struct sim_cache *k)
{
	if (k->repl != MRI_GEOM_LRU || k->assoc > 64)
		return;	/* no stamps; the lean path's L1 has 8 ways */
	for (uint64_t set = 0; set < k->nr_sets; set++) {
		uint64_t *st = k->key + set * k->stride + k->assoc, old[64];
		uint32_t n = k->assoc;

		for (uint32_t w = 0; w < n; w++)
			old[w] = st[w];
		for (uint32_t w = 0; w < n; w++) {
			uint64_t rank = 0;

			if (old[w] < 2)
				continue;	/* empty, invalidated */
			for (uint32_t x = 0; x < n; x++)
				rank += old[x] >= 2 && old[x] < old[w];
			st[w] = 2 + rank;
		}
	}
	k->clock = 1 + k->assoc;
}

void sim_cache_fini(struct sim_cache *k)
{
	sim_unmap(k->map, k->map_sz);
	k->map = NULL;
	k->map_sz = 0;
}

/* ---- NUMA page table ----
 * Regions of SIM_PAGE_REGION_PAGES pages in an open-addressing table whose
 * keys are claimed with a CAS; each region gets a leaf of one 64-bit entry
 * per page: 0 untouched, else bit 63 | node << 40 | core << 32 | tid. The
 * first CAS of an entry is the first touch. */
#define SIM_PAGE_REGIONS (1u << 16)

int sim_pages_init(struct sim_pages *p)
{
	size_t o_leaf = align64(SIM_PAGE_REGIONS * (sizeof(uint64_t) + sizeof(uint32_t)));
	size_t total = o_leaf + (size_t)SIM_PAGE_REGIONS * SIM_PAGE_REGION_PAGES * sizeof(uint64_t);
	char *base = sim_map(total);

	if (!base)
		return AMEBA_ENOMEM;
	p->map = base;
	p->map_sz = total;
	p->rkey = (uint64_t *)base;
	p->rleaf = (uint32_t *)(base + SIM_PAGE_REGIONS * sizeof(uint64_t));
	p->leaf = (uint64_t *)(base + o_leaf);
	p->rmask = SIM_PAGE_REGIONS - 1;
	p->max_leaves = SIM_PAGE_REGIONS;
	p->nr_leaves = 0;
	p->overflows = 0;
	return 0;
}

void sim_pages_fini(struct sim_pages *p)
{
	sim_unmap(p->map, p->map_sz);
	p->map = NULL;
}

/* The entry of page, creating its region when create; NULL when absent / full. */
static uint64_t *page_entry(struct sim_pages *p, uint64_t page, int create)
{
	uint64_t region = page / SIM_PAGE_REGION_PAGES, want = region + 1;
	uint32_t h = (uint32_t)sim_hash64(region) & p->rmask;

	for (uint32_t probe = 0; probe <= p->rmask; probe++, h = (h + 1) & p->rmask) {
		uint64_t k = __atomic_load_n(&p->rkey[h], __ATOMIC_ACQUIRE);
		if (k == 0) {
			if (!create)
				return NULL;
			uint64_t zero = 0;
			if (!__atomic_compare_exchange_n(&p->rkey[h], &zero, want, 0,
							 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				k = zero;	/* somebody claimed it: re-check this slot */
			} else {
				uint32_t leaf = __atomic_fetch_add(&p->nr_leaves, 1, __ATOMIC_RELAXED);
				if (leaf >= p->max_leaves)
					leaf = UINT32_MAX - 1;	/* full: mark the region untracked */
				__atomic_store_n(&p->rleaf[h], leaf + 1, __ATOMIC_RELEASE);
				k = want;
			}
		}
		if (k != want)
			continue;
		uint32_t li;
		while ((li = __atomic_load_n(&p->rleaf[h], __ATOMIC_ACQUIRE)) == 0)
			sim_cpu_relax();	/* the creator is publishing the leaf */
		if (li == UINT32_MAX)
			return NULL;
		return &p->leaf[(size_t)(li - 1) * SIM_PAGE_REGION_PAGES + page % SIM_PAGE_REGION_PAGES];
	}
	return NULL;
}

uint32_t sim_page_home(struct mon_sim *s, struct mon_sim_core *c, uint64_t page)
{
	if (s->g.nr_nodes == 1)
		return 0;
	if (s->g.placement == MRI_GEOM_INTERLEAVE)
		return (uint32_t)(page % s->g.nr_nodes);
	uint64_t *e = page_entry(&s->pages, page, 1);
	if (sim_unlikely(!e)) {
		__atomic_fetch_add(&s->pages.overflows, 1, __ATOMIC_RELAXED);
		return (uint32_t)(page % s->g.nr_nodes);
	}
	uint64_t v = __atomic_load_n(e, __ATOMIC_ACQUIRE);
	if (!v) {
		uint64_t mine = 1ull << 63 | (uint64_t)c->node << 40 | (uint64_t)c->id << 32 |
				__atomic_load_n(&c->tid, __ATOMIC_RELAXED);
		if (__atomic_compare_exchange_n(e, &v, mine, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return c->node;
	}
	return (uint32_t)(v >> 40) & 0xff;
}

int sim_page_lookup(struct mon_sim *s, uint64_t page, struct mon_sim_page *out)
{
	uint64_t *e = page_entry(&s->pages, page, 0);
	uint64_t v = e ? __atomic_load_n(e, __ATOMIC_ACQUIRE) : 0;

	if (!v)
		return AMEBA_ENOENT;
	out->node = (uint32_t)(v >> 40) & 0xff;
	out->first_core = (uint32_t)(v >> 32) & 0xff;
	out->first_tid = (uint32_t)v;
	return 0;
}

/* ---- fully associative LRU shadow ----
 * A hash (open addressing, linear probing) from line to a node; a node is
 * in the front segment (the mapping's first bytes) or in a doubly linked
 * LRU list, whose node 0 is the head (sim_core.h, struct sim_shadow).
 * A line that leaves leaves a tombstone in its slot, which a line that
 * probes past it takes; when the lines and the tombstones fill half the
 * hash, it is built again from the nodes (shadow_rehash). The hash has
 * four slots a line, so that takes cap lines leaving at least (each
 * leaves one tombstone). (A deletion that shifted the cluster back, the
 * tombstone's predecessor, was 13% of a default run of
 * bench/sim_speed_long's chase: every miss of a line the shadow does not
 * hold evicts one, and each step of the shift is a branch on a hash.) */
int sim_shadow_init(struct sim_shadow *sh, uint32_t cap)
{
	uint32_t hsize = 1;
	while (hsize < 4 * cap)
		hsize <<= 1;
	size_t o_hkey = align64(sizeof(struct sim_shadow_seg));
	size_t o_hval = align64(o_hkey + (size_t)hsize * 8);
	size_t o_node = align64(o_hval + (size_t)hsize * 4);
	size_t o_free = align64(o_node + (size_t)(cap + 1) * sizeof(struct sim_snode));
	size_t total = align64(o_free + (size_t)(cap + 1) * 4);
	char *base = sim_map(total);

	if (!base)
		return AMEBA_ENOMEM;
	sh->map = base;
	sh->map_sz = total;
	struct sim_shadow_seg *g = (struct sim_shadow_seg *)base;
	for (int j = 0; j < SIM_SHADOW_SEG; j++)
		g->line[j] = UINT64_MAX;	/* stamps 0 */
	sh->hkey = (uint64_t *)(base + o_hkey);
	sh->hval = (uint32_t *)(base + o_hval);
	sh->node = (struct sim_snode *)(base + o_node);
	sh->free = (uint32_t *)(base + o_free);
	sh->hmask = hsize - 1;
	sh->hshift = 64 - sim_log2(hsize);
	sh->cap = cap;
	sh->nr = 0;
	sh->tombs = 0;
	sh->node[0].prev = sh->node[0].next = 0;
	sh->free_top = 0;
	for (uint32_t i = cap; i >= 1; i--) {
		sh->free[sh->free_top++] = i;
		sh->node[i].line = UINT64_MAX;
	}
	return 0;
}

void sim_shadow_fini(struct sim_shadow *sh)
{
	sim_unmap(sh->map, sh->map_sz);
	sh->map = NULL;
}

static inline uint32_t shadow_slot(const struct sim_shadow *sh, uint64_t line)
{
	return (uint32_t)((line * 0x9E3779B97F4A7C15ull) >> sh->hshift);
}

static inline void list_unlink(struct sim_shadow *sh, uint32_t n)
{
	struct sim_snode *x = &sh->node[n];

	sh->node[x->prev].next = x->next;
	sh->node[x->next].prev = x->prev;
}

static inline void list_push_front(struct sim_shadow *sh, uint32_t n)
{
	struct sim_snode *head = &sh->node[0], *x = &sh->node[n];

	x->prev = 0;
	x->next = head->next;
	sh->node[head->next].prev = n;
	head->next = n;
}

/* Finds line: 1 and its slot, else 0 and the slot where it goes (the
 * first tombstone on its way, else the empty slot that ended it) */
static int shadow_hfind(const struct sim_shadow *sh, uint64_t line, uint32_t *slot)
{
	uint32_t i = shadow_slot(sh, line), t = UINT32_MAX;
	uint64_t k;

	while ((k = sh->hkey[i])) {
		if (k == line + 1) {
			*slot = i;
			return 1;
		}
		if (k == SIM_SHADOW_TOMB && t == UINT32_MAX)
			t = i;
		i = (i + 1) & sh->hmask;
	}
	*slot = t == UINT32_MAX ? i : t;
	return 0;
}

/* Line leaves slot i */
static inline void shadow_hdel(struct sim_shadow *sh, uint32_t i)
{
	sh->hkey[i] = SIM_SHADOW_TOMB;
	sh->tombs++;
}

/* Line goes into slot i (shadow_hfind's), node n */
static inline void shadow_hput(struct sim_shadow *sh, uint32_t i, uint64_t line, uint32_t n)
{
	sh->tombs -= sh->hkey[i] == SIM_SHADOW_TOMB;
	sh->hkey[i] = line + 1;
	sh->hval[i] = n;
	sh->node[n].slot = i;
}

/* The hash again from the nodes, without tombstones */
static void shadow_rehash(struct sim_shadow *sh)
{
	memset(sh->hkey, 0, ((size_t)sh->hmask + 1) * sizeof(*sh->hkey));
	sh->tombs = 0;
	for (uint32_t n = 1; n <= sh->cap; n++) {
		uint64_t line = sh->node[n].line;
		uint32_t i;

		if (line == UINT64_MAX)
			continue;
		/* no tombstone and no line twice: the first empty slot */
		for (i = shadow_slot(sh, line); sh->hkey[i]; i = (i + 1) & sh->hmask)
			;
		shadow_hput(sh, i, line, n);
	}
}

/* Half the hash taken by lines and tombstones: built again */
static inline void shadow_hcheck(struct sim_shadow *sh)
{
	if (sim_unlikely(2 * (sh->nr + sh->tombs) > sh->hmask + 1))
		shadow_rehash(sh);
}

/* Node n (out of the list) becomes the most recently used: into the
 * segment's oldest slot (an empty one first), whose line goes to the
 * list's front; without a segment (cap <= SIM_SHADOW_SEG), to the front */
/* The segment's stamps renumbered 1.. in their order (empty slots keep 0),
 * before its clock reaches SIM_SHADOW_CLOCK_MAX: once in ~65,000 uses */
static void shadow_renumber(struct sim_shadow_seg *g)
{
	uint16_t st[SIM_SHADOW_SEG];
	uint64_t n = 0;

	for (int j = 0; j < SIM_SHADOW_SEG; j++) {
		uint16_t r = 0;

		for (int k = 0; k < SIM_SHADOW_SEG; k++)
			r += g->stamp[k] && g->stamp[k] <= g->stamp[j];
		st[j] = g->stamp[j] ? r : 0;
		n += g->stamp[j] != 0;
	}
	memcpy(g->stamp, st, sizeof(st));
	g->clock = n;
}

/* the slot of the oldest stamp (an empty slot's 0 first), the first of equals */
static int shadow_oldest(const struct sim_shadow_seg *g)
{
	_Static_assert(SIM_SHADOW_SEG == 8, "shadow_oldest: one phminposuw");
#ifdef __SSE2__
	if (sim_likely(sim_sse41)) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)g->stamp), r;

		__asm__("phminposuw %1, %0" : "=x"(r) : "x"(a));
		return (int)((uint32_t)_mm_cvtsi128_si32(r) >> 16);
	}
#endif
	int v = 0;

	for (int j = 1; j < SIM_SHADOW_SEG; j++)
		v = g->stamp[j] < g->stamp[v] ? j : v;
	return v;
}

static void shadow_front(struct sim_shadow *sh, uint32_t n)
{
	struct sim_shadow_seg *g = sh->map;

	if (sh->cap <= SIM_SHADOW_SEG) {
		list_push_front(sh, n);
		return;
	}
	int v = shadow_oldest(g);	/* the clock has room: sim_shadow_access renumbered */
	if (g->line[v] != UINT64_MAX)
		list_push_front(sh, g->node[v]);
	g->line[v] = sh->node[n].line;
	g->node[v] = n;
	g->stamp[v] = (uint16_t)++g->clock;
}

/* A use of node n of the list */
static void shadow_use(struct sim_shadow *sh, uint32_t n)
{
	if (sh->cap <= SIM_SHADOW_SEG && sh->node[0].next == n)
		return;		/* no segment, and the front already */
	list_unlink(sh, n);
	shadow_front(sh, n);
}

int sim_shadow_access(struct sim_shadow *sh, uint64_t line, uint32_t *hint)
{
	uint32_t i, n = *hint;

	if (sim_unlikely(((struct sim_shadow_seg *)sh->map)->clock + 1 >= SIM_SHADOW_CLOCK_MAX))
		shadow_renumber(sh->map);
	if (sim_shadow_seg_touch(sh, line))
		return 1;
	/* a node found now is in the list */
	if (n && n <= sh->cap && sh->node[n].line == line) {	/* the node we had */
		shadow_use(sh, n);
		return 1;
	}
	if (shadow_hfind(sh, line, &i)) {
		n = sh->hval[i];
		*hint = n;
		shadow_use(sh, n);
		return 1;
	}
	/* evict the LRU line: the list's tail (the segment holds fewer lines
	 * than cap, so the list holds one) */
	if (sh->nr == sh->cap) {	/* its node is the line's */
		n = sh->node[0].prev;
		list_unlink(sh, n);
		shadow_hdel(sh, sh->node[n].slot);
	} else {
		n = sh->free[--sh->free_top];
		sh->nr++;
	}
	*hint = n;
	sh->node[n].line = line;
	shadow_hput(sh, i, line, n);
	shadow_front(sh, n);
	shadow_hcheck(sh);
	return 0;
}

void sim_shadow_remove(struct sim_shadow *sh, uint64_t line)
{
	struct sim_shadow_seg *g = sh->map;
	uint32_t i;
	int j = 0;

	if (!sh->map || !shadow_hfind(sh, line, &i))
		return;
	uint32_t n = sh->hval[i];
	while (j < SIM_SHADOW_SEG && g->line[j] != line)
		j++;
	if (j < SIM_SHADOW_SEG) {	/* the slot empties: the others keep their order */
		g->line[j] = UINT64_MAX;
		g->stamp[j] = 0;
	} else {
		list_unlink(sh, n);
	}
	shadow_hdel(sh, i);
	sh->node[n].line = UINT64_MAX;
	sh->free[sh->free_top++] = n;
	sh->nr--;
}

/* ---- first-reference set: per 2 MiB region a bitmap of lines ---- */
#define SIM_SEEN_REGIONS (1u << 14)	/* hash slots; half of them may be used */

int sim_seen_init(struct sim_seen *sn, uint32_t line_shift)
{
	uint32_t leaf_words = (1u << (SIM_SEEN_REGION_SHIFT - line_shift)) / 64;
	if (!leaf_words)
		leaf_words = 1;
	size_t o_leaf = align64((size_t)SIM_SEEN_REGIONS * 12);
	/* SIM_SEEN_REGIONS / 2 leaves of 2 MiB: 16 GiB of footprint per core */
	size_t total = o_leaf + (size_t)(SIM_SEEN_REGIONS / 2) * leaf_words * 8;
	char *base;

	base = sim_map(total);
	if (!base)
		return AMEBA_ENOMEM;
	sn->map = base;
	sn->map_sz = total;
	sn->rkey = (uint64_t *)base;
	sn->rleaf = (uint32_t *)(base + (size_t)SIM_SEEN_REGIONS * 8);
	sn->leaves = (uint64_t *)(base + o_leaf);
	sn->rmask = SIM_SEEN_REGIONS - 1;
	sn->nr_leaves = 0;
	sn->max_leaves = SIM_SEEN_REGIONS / 2;	/* keep the probe chains short */
	sn->leaf_words = leaf_words;
	return 0;
}

void sim_seen_fini(struct sim_seen *sn)
{
	sim_unmap(sn->map, sn->map_sz);
	sn->map = NULL;
}

int sim_seen_insert(struct sim_seen *sn, uint64_t line, uint32_t line_shift)
{
	uint32_t per_region_shift = SIM_SEEN_REGION_SHIFT - line_shift;
	uint64_t region = line >> per_region_shift, bit = line & ((1ull << per_region_shift) - 1);
	uint64_t *leaf;

	if (sn->memo_region == region + 1) {
		leaf = sn->memo_leaf;
	} else {
		uint32_t h = (uint32_t)sim_hash64(region) & sn->rmask;
		while (sn->rkey[h] && sn->rkey[h] != region + 1)
			h = (h + 1) & sn->rmask;
		if (!sn->rkey[h]) {
			if (sn->nr_leaves == sn->max_leaves)
				return -1;
			sn->rkey[h] = region + 1;
			sn->rleaf[h] = sn->nr_leaves++;
		}
		leaf = &sn->leaves[(size_t)sn->rleaf[h] * sn->leaf_words];
		sn->memo_region = region + 1;
		sn->memo_leaf = leaf;
	}
	uint64_t *w = &leaf[bit >> 6];
	uint64_t m = 1ull << (bit & 63);
	if (*w & m)
		return 0;
	*w |= m;
	return 1;
}
