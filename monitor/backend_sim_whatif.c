/*
 * backend_sim_whatif.c - the sim backend's what-if runs (AMEBA_WHATIF,
 * docs/whatif.md): one object's fix simulated - its accesses moved to a
 * new layout or a thread's own copy, or their events corrected - so that
 * the agent (agent/whatif.c) can compare simulated run times. The what-if
 * backend (mon_backend_sim_whatif, backend_sim.c) has no inline paths:
 * every access comes through its sim_access, and from there here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mon.h"
#include "sim/sim_core.h"
#include "backend_sim.h"

/*
 * What-if (AMEBA_WHATIF=KIND:OBJECT, read once): the run simulates a
 * program in which one object's problem is fixed, so that the agent can
 * compare simulated run times (agent/whatif.c, docs/whatif.md). OBJECT is
 * a report's object name: a global's symbol, or a heap or mapping's site
 * (func@file:line). Kinds:
 *   pad   each thread's accesses to the object go to a copy of its own
 *         (what padding every thread's words to lines of their own gives
 *         when the threads use disjoint words: no line of it is shared);
 *   huge  the object's pages are 2 MiB for the TLB: its accesses' TLB cost
 *         is that of a per-thread shadow TLB of 2 MiB pages (as many L1
 *         and L2 entries as the geometry's TLBs, fully associative, LRU)
 *         instead of the simulator's (whose 4 KiB entries of the object
 *         still take room from the others': slightly pessimistic);
 *   local every memory access to the object is local (first touch by the
 *         thread that uses it): a remote one costs mem_local instead, and
 *         one whose line another node's LLC holds (the set-up's first
 *         touch left it there; the user's own would have left it in its
 *         node's LLC) costs an LLC hit;
 *   private  as pad, and a hit on the copy costs nothing: the object's
 *         updates kept in a local variable (a register) of each thread and
 *         combined once at the end, the usual fix of a contended
 *         accumulator (a miss on the copy, its first touch, still costs);
 *   transpose  the object's dominant strided walk made sequential: the
 *         object stored transposed (rows of the learnt stride S become
 *         columns), which is what interchanging the loops of a column walk
 *         gives its cache lines and pages;
 *   rowpad  each row of the learnt stride S padded by one cache line (a
 *         leading dimension that is not a power of two).
 * transpose and rowpad learn the row stride S and element size e from the
 * run: the distance between a thread's consecutive accesses to the object,
 * counted over its first WHATIF_LEARN accesses that move by a line or more
 * (a sequential initialisation teaches nothing and is skipped). S is the
 * most frequent such distance when it is at least half of them; else the
 * object has no strided walk and the run simulates the program as it is
 * (the oracle says so: mon_backend_sim_whatif_json). Accesses before the
 * decision use the object's own addresses: their lines are cold again in
 * the new layout (at most one pass over the object, a small pessimism).
 * The what-if backend has no inline fast paths: every access comes through
 * sim_access, which rewrites the address (pad, transpose, rowpad) or
 * corrects the access's events (huge, local) around the simulator.
 */
enum { WHATIF_NONE, WHATIF_PAD, WHATIF_HUGE, WHATIF_LOCAL, WHATIF_TRANSPOSE, WHATIF_ROWPAD,
       WHATIF_PRIVATE };

#define WHATIF_LEARN 4096
#define WHATIF_CAND 8
#define WHATIF_STEPS 4096	/* (pc, thread) step trackers, a power of two */
#define WHATIF_ACC_MAX (1u << 24)	/* bytes of a row of accumulators */

#define WHATIF_TLB_MAX 2048
struct whatif_tlb {
	uint32_t nr1, nr2;			/* entries in use of the L1 / L2 shadow */
	uint64_t now;
	uint64_t page1[WHATIF_TLB_MAX], used1[WHATIF_TLB_MAX];
	uint64_t page2[WHATIF_TLB_MAX], used2[WHATIF_TLB_MAX];
};

int mon_sim_whatif_kind;

static struct {
	char target[512];
	uint8_t *site_match;		/* per site id: 0 unknown, 1 no, 2 yes */
	uint32_t nr_sites;
	struct whatif_tlb *tlb[256];	/* huge: per thread (id % 256) */
	/* transpose, rowpad: the learnt shape (state 0 learning, 1 applied,
	 * 2 no strided walk), per-thread last address, candidate strides */
	int state;
	uint64_t stride, elem, nr_far;
	uint64_t cand[WHATIF_CAND], cand_nr[WHATIF_CAND], size_nr[5];
	/* transpose, while learning: the far steps of reads (per candidate
	 * and in all), and of those the ones the thread wrote between (a
	 * write to anything but its stack; writes[] counts them per thread)
	 * - a column reduction writes between its columns only */
	uint64_t cand_rd[WHATIF_CAND], cand_rd_wr[WHATIF_CAND], rd_far, rd_far_wr;
	uint64_t writes[4096];
	/* then, the stride known, until two column changes were seen: the
	 * reads' S steps and other far steps (column changes), and of each the
	 * ones with a write between */
	uint64_t s_rd, s_rd_wr, wraps, wraps_wr;
	int reduce_open;	/* transpose: still counting (whatif_reduce_decide) */
	int reduce;	/* the walk is a column reduction: accumulators (whatif_layout) */
	struct whatif_step {
		uint64_t key;	/* (pc, thread) + 1; 0 free */
		uintptr_t last;
		uint64_t nr_s, nr_other;
		uint64_t wr_mark;	/* the thread's writes[] at the last access */
	} *steps;
	struct { uint32_t idx; uint8_t *bits; } seen[16];	/* new-layout lines touched */
} whatif;

int mon_backend_sim_whatif_wanted(void)
{
	const char *e = getenv("AMEBA_WHATIF");
	const char *colon;

	if (!e || !*e)
		return 0;
	colon = strchr(e, ':');
	if (!colon || !colon[1]) {
		mon_log("AMEBA_WHATIF=%s: want KIND:OBJECT (pad, private, huge, local, transpose, rowpad); "
			"ignored", e);
		return 0;
	}
	if (!strncmp(e, "pad:", 4))
		mon_sim_whatif_kind = WHATIF_PAD;
	else if (!strncmp(e, "huge:", 5))
		mon_sim_whatif_kind = WHATIF_HUGE;
	else if (!strncmp(e, "local:", 6))
		mon_sim_whatif_kind = WHATIF_LOCAL;
	else if (!strncmp(e, "private:", 8))
		mon_sim_whatif_kind = WHATIF_PRIVATE;
	else if (!strncmp(e, "transpose", 9) && (e[9] == ':' || e[9] == '/'))
		mon_sim_whatif_kind = WHATIF_TRANSPOSE;
	else if (!strncmp(e, "rowpad", 6) && (e[6] == ':' || e[6] == '/'))
		mon_sim_whatif_kind = WHATIF_ROWPAD;
	else {
		mon_log("AMEBA_WHATIF=%s: unknown kind (pad, private, huge, local, transpose, rowpad); "
			"ignored", e);
		return 0;
	}
	if (mon_sim_whatif_kind == WHATIF_TRANSPOSE || mon_sim_whatif_kind == WHATIF_ROWPAD) {
		const char *sl = strchr(e, '/');
		unsigned long long st = 0, el = 0;

		/* KIND/STRIDE/ELEMENT: the shape given (a learning run's), applied
		 * from the first access */
		if (sl && sl < colon) {
			if (sscanf(sl, "/%llu/%llu:", &st, &el) != 2 || st < MON_LINE_SIZE || !el ||
			    (el & (el - 1)) || el > 16 || st % el) {
				mon_log("AMEBA_WHATIF=%s: want KIND/STRIDE/ELEMENT:OBJECT with STRIDE >= %u "
					"a multiple of ELEMENT (1, 2, 4, 8 or 16); ignored", e,
					MON_LINE_SIZE);
				mon_sim_whatif_kind = WHATIF_NONE;
				return 0;
			}
			whatif.stride = st;
			whatif.elem = el;
			whatif.state = 1;
		}
		whatif.steps = mon_calloc(WHATIF_STEPS, sizeof(*whatif.steps));
		if (!whatif.steps) {
			mon_log("AMEBA_WHATIF=%s: out of memory; ignored", e);
			mon_sim_whatif_kind = WHATIF_NONE;
			return 0;
		}
	}
	snprintf(whatif.target, sizeof(whatif.target), "%s", colon + 1);
	return 1;
}

/* Is obj the what-if's object? Sites are symbolised once each. */
static int whatif_match(const struct mon_obj *obj)
{
	if (obj->kind == MON_OBJ_GLOBAL)
		return obj->name && !strcmp(obj->name, whatif.target);
	if (obj->kind != MON_OBJ_HEAP && obj->kind != MON_OBJ_MMAP)
		return 0;
	if (obj->site_id >= whatif.nr_sites) {
		uint32_t n = mon_site_nr() + 64;
		uint8_t *m = mon_realloc(whatif.site_match, n);

		if (!m)
			return 0;
		memset(m + whatif.nr_sites, 0, n - whatif.nr_sites);
		whatif.site_match = m;
		whatif.nr_sites = n;
		if (obj->site_id >= n)
			return 0;
	}
	if (!whatif.site_match[obj->site_id]) {
		char name[512];
		const char *sn = mon_site_name(obj->site_id, name, sizeof(name));
		size_t l = sn ? strlen(sn) : 0;

		/* the site's name, alone or as the head of a bin label
		 * ("matrix.bin <- map_input@..." ends with it, "x@a.h:1 <- y" starts) */
		whatif.site_match[obj->site_id] =
			l && (!strcmp(whatif.target, sn) ||
			      (!strncmp(whatif.target, sn, l) && !strncmp(whatif.target + l, " <- ", 4)) ||
			      (strlen(whatif.target) > l + 4 &&
			       !strcmp(whatif.target + strlen(whatif.target) - l, sn) &&
			       !strncmp(whatif.target + strlen(whatif.target) - l - 4, " <- ", 4))) ? 2 : 1;
	}
	return whatif.site_match[obj->site_id] == 2;
}

/* pad: thread t's private copy of obj, at the same offset within a line
 * (the access stays within one line), 4 GiB apart per thread, above any
 * address of the program (the simulator keys lines and pages by address). */
static inline uintptr_t whatif_pad(const struct mon_thread *t, const struct mon_obj *obj,
				   uintptr_t addr)
{
	return ((uintptr_t)1 << 46) + ((uintptr_t)(t->id & 4095) << 32) +
	       (obj->start & (MON_LINE_SIZE - 1)) + (addr - obj->start);
}

/* transpose, rowpad: the step tracker of (pc, thread): the last address
 * it accessed in the object, and how many of its steps were the learnt
 * stride S and how many were not. */
static struct whatif_step *whatif_step_of(const struct mon_thread *t, uintptr_t pc, int add)
{
	uint64_t key = ((uint64_t)pc << 12) ^ (t->id & 4095), h = key * 0x9e3779b97f4a7c15ull;

	for (unsigned i = 0; i < WHATIF_STEPS; i++) {
		struct whatif_step *st = &whatif.steps[((h >> 52) + i) & (WHATIF_STEPS - 1)];

		if (st->key == key + 1)
			return st;
		if (!st->key) {
			if (!add)
				return NULL;
			st->key = key + 1;
			return st;
		}
	}
	return NULL;	/* table full: the access keeps its address */
}

/*
 * transpose: is the walk a column reduction (sums[j] += s after each
 * column walk, s in a register)? Its reads step by S with no write
 * between (at most 1 in 10), and it writes between columns (the far steps
 * that are not S: at least 2, 9 in 10 with a write). Interchanged, the
 * register becomes a row of per-column accumulators, read and written at
 * every element. Decided once two column changes were seen: within the
 * learning steps, or later for a matrix of more rows than those (the
 * accesses before the decision have no accumulator).
 */
static void whatif_reduce_decide(void)
{
	if (!whatif.reduce_open || whatif.wraps < 2)
		return;
	whatif.reduce_open = 0;
	whatif.reduce = whatif.s_rd && 10 * whatif.s_rd_wr <= whatif.s_rd &&
			10 * whatif.wraps_wr >= 9 * whatif.wraps;
	if (whatif.reduce)
		mon_log("what-if: a column reduction (no write within %llu of %llu column steps, "
			"one between %llu of %llu columns): per-column accumulators",
			(unsigned long long)(whatif.s_rd - whatif.s_rd_wr),
			(unsigned long long)whatif.s_rd, (unsigned long long)whatif.wraps_wr,
			(unsigned long long)whatif.wraps);
}

/* While the shape is learnt (state 0): a step of d bytes of size sz; rd:
 * the access is a read (1, and 2 when the thread wrote since the step's
 * last access), else 0. */
static void whatif_learn(uint64_t d, uint32_t sz, int rd)
{
	unsigned k = sz >= 16 ? 4 : sz >= 8 ? 3 : sz >= 4 ? 2 : sz >= 2 ? 1 : 0;
	unsigned i, v = 0;

	whatif.size_nr[k]++;
	if (d < MON_LINE_SIZE)
		return;
	for (i = 0; i < WHATIF_CAND; i++) {
		if (whatif.cand[i] == d)
			break;
		if (whatif.cand_nr[i] < whatif.cand_nr[v])
			v = i;
	}
	if (i == WHATIF_CAND) {	/* replace the rarest (its count carries over) */
		i = v;
		whatif.cand[i] = d;
	}
	whatif.cand_nr[i]++;
	if (rd) {
		whatif.cand_rd[i]++;
		whatif.rd_far++;
		whatif.cand_rd_wr[i] += rd == 2;
		whatif.rd_far_wr += rd == 2;
	}
	if (++whatif.nr_far < WHATIF_LEARN)
		return;
	v = 0;
	for (i = 1; i < WHATIF_CAND; i++)
		if (whatif.cand_nr[i] > whatif.cand_nr[v])
			v = i;
	k = 0;
	for (i = 1; i < 5; i++)
		if (whatif.size_nr[i] > whatif.size_nr[k])
			k = i;
	whatif.elem = (uint64_t)1 << k;
	whatif.stride = whatif.cand[v];
	whatif.state = 2 * whatif.cand_nr[v] >= whatif.nr_far && whatif.stride % whatif.elem == 0 ? 1 : 2;
	mon_log("what-if: %s (stride %llu B in %llu of %llu far steps; element %llu B)",
		whatif.state == 1 ? "applied" : "no dominant strided walk, not applied",
		(unsigned long long)whatif.stride, (unsigned long long)whatif.cand_nr[v],
		(unsigned long long)whatif.nr_far, (unsigned long long)whatif.elem);
	whatif.s_rd = whatif.cand_rd[v];
	whatif.s_rd_wr = whatif.cand_rd_wr[v];
	whatif.wraps = whatif.rd_far - whatif.cand_rd[v];
	whatif.wraps_wr = whatif.rd_far_wr - whatif.cand_rd_wr[v];
	whatif.reduce_open = mon_sim_whatif_kind == WHATIF_TRANSPOSE && whatif.state == 1 &&
			     whatif.stride / whatif.elem * 8 <= WHATIF_ACC_MAX;
	whatif_reduce_decide();
}

/*
 * transpose, rowpad: addr in obj's new layout, in a region of its own per
 * object (16 GiB each, above pad's; page offset kept); addr itself while
 * learning, without a strided walk, or for an object too large. rowpad is
 * a layout and applies to every access; transpose stands for the loop
 * interchange, so it applies to the accesses of the instructions that walk
 * with stride S (most of their steps are S), and the others (a sequential
 * initialisation or checksum) keep the object's own addresses.
 */
/* Is line n (of the new layout) of obj touched for the first time? Marks
 * it. 0 when it cannot tell (more than 16 objects of the site). */
static int whatif_first_touch(const struct mon_obj *obj, uint64_t n)
{
	uint8_t **bits = NULL;

	for (unsigned i = 0; i < 16 && !bits; i++)
		if (whatif.seen[i].bits && whatif.seen[i].idx == obj->idx)
			bits = &whatif.seen[i].bits;
		else if (!whatif.seen[i].bits) {
			whatif.seen[i].idx = obj->idx;
			whatif.seen[i].bits = mon_calloc(1, ((uint64_t)1 << 34) / MON_LINE_SIZE / 8);
			if (!whatif.seen[i].bits)
				return 0;
			bits = &whatif.seen[i].bits;
		}
	if (!bits)
		return 0;
	n /= MON_LINE_SIZE;
	if ((*bits)[n / 8] & (1u << (n % 8)))
		return 0;
	(*bits)[n / 8] |= (uint8_t)(1u << (n % 8));
	return 1;
}

static uintptr_t whatif_layout(const struct mon_thread *t, const struct mon_obj *obj,
			       uintptr_t addr, uint32_t sz, unsigned flags, uintptr_t pc, int target,
			       int *first, uintptr_t *acc)
{
	struct whatif_step *st = whatif_step_of(t, pc, target);
	uint64_t o = addr - obj->start, S, e, size, r, rem, n, d;
	uint64_t wr = whatif.writes[t->id & 4095];

	if (!st)
		return addr;
	d = st->last ? (addr > st->last ? addr - st->last : st->last - addr) : 0;
	st->last = addr;
	if (whatif.state == 0 && d && target)
		whatif_learn(d, sz, flags & MON_ACC_WRITE ? 0 : st->wr_mark != wr ? 2 : 1);
	else if (whatif.reduce_open && target && d >= MON_LINE_SIZE && !(flags & MON_ACC_WRITE)) {
		if (d == whatif.stride) {
			whatif.s_rd++;
			whatif.s_rd_wr += st->wr_mark != wr;
		} else {
			whatif.wraps++;
			whatif.wraps_wr += st->wr_mark != wr;
			whatif_reduce_decide();
		}
	}
	st->wr_mark = wr;
	if (whatif.state != 1)
		return addr;
	S = whatif.stride;
	e = whatif.elem;
	if (d == S)
		st->nr_s++;
	else if (d)
		st->nr_other++;
	if (mon_sim_whatif_kind == WHATIF_TRANSPOSE && st->nr_s <= st->nr_other)
		return addr;
	size = obj->end - obj->start;
	r = o / S;
	rem = o % S;
	if (mon_sim_whatif_kind == WHATIF_TRANSPOSE) {
		uint64_t rows = (size + S - 1) / S;
		n = (rem / e) * rows * e + r * e + rem % e;
		/* a column reduction's read: its column's accumulator, 8 B, in
		 * a row of them per object (above the new layouts' regions) */
		if (whatif.reduce && !(flags & MON_ACC_WRITE))
			*acc = ((uintptr_t)7 << 44) + ((uintptr_t)(obj->idx & 1023) << 24) +
			       (rem / e) * 8;
	} else {
		n = r * (S + MON_LINE_SIZE) + rem;
	}
	if (size > ((uint64_t)1 << 33) || n >= ((uint64_t)1 << 34) - 4096)
		return addr;
	*first = whatif_first_touch(obj, n + (obj->start & 4095));
	return ((uintptr_t)3 << 45) + ((uintptr_t)(obj->idx & 1023) << 34) +
	       (obj->start & 4095) + n;
}

void mon_backend_sim_whatif_json(FILE *f)
{
	static const char *const kinds[] = { "", "pad", "huge", "local", "transpose", "rowpad",
					     "private" };

	if (!mon_sim_whatif_kind)
		return;
	fputs(",\"what_if\":{\"kind\":\"", f);
	fputs(kinds[mon_sim_whatif_kind], f);
	fputs("\"", f);
	if (mon_sim_whatif_kind == WHATIF_TRANSPOSE || mon_sim_whatif_kind == WHATIF_ROWPAD)
		fprintf(f, ",\"applied\":%s,\"stride\":%llu,\"element\":%llu,\"far_steps\":%llu",
			whatif.state == 1 ? "true" : "false", (unsigned long long)whatif.stride,
			(unsigned long long)whatif.elem, (unsigned long long)whatif.nr_far);
	if (mon_sim_whatif_kind == WHATIF_TRANSPOSE)
		fprintf(f, ",\"reduction\":%s", whatif.reduce ? "true" : "false");
	fputs("}", f);
}

/* One level of the shadow TLB: 1 if page is in it (made most recent),
 * else 0 after putting it in (LRU victim when full). */
static int whatif_tlb_ref(uint64_t *page, uint64_t *used, uint32_t *nr, uint32_t cap,
			  uint64_t key, uint64_t now)
{
	uint32_t v = 0;

	for (uint32_t i = 0; i < *nr; i++) {
		if (page[i] == key) {
			used[i] = now;
			return 1;
		}
		if (used[i] < used[v])
			v = i;
	}
	if (*nr < cap)
		v = (*nr)++;
	page[v] = key;
	used[v] = now;
	return 0;
}

/* The TLB part of an access's cycles (a 2-level TLB: an L2 hit or a walk). */
static int32_t whatif_tlb_cycles(const struct mon_sim_core *c, const struct mon_sim_events *e)
{
	const struct mri_geom_lat *lat = &mon_sim_geom_of(c->sim)->lat;

	return e->tlb1_miss ? (int32_t)(e->tlb_miss ? lat->tlb_miss : lat->tlb2_hit) : 0;
}

/* huge, local: the access's events as they would be with the fix. warm
 * (local): before the access, its line was in another node's LLC. */
static void whatif_correct(const struct mon_thread *t, const struct mon_sim_core *c, uintptr_t addr,
			   int warm, struct mon_sim_events *e)
{
	const struct mri_geom_lat *lat = &mon_sim_geom_of(c->sim)->lat;
	const struct mri_geom *g = mon_sim_geom_of(c->sim);
	int32_t d = 0;

	if (mon_sim_whatif_kind == WHATIF_LOCAL) {
		if (warm && (e->mem_remote || e->mem_local)) {
			/* the set-up left the line in its node's LLC: with the
			 * user's own first touch it is in the user's */
			d = (int32_t)lat->llc_hit -
			    (int32_t)(e->mem_remote ? lat->mem_remote : lat->mem_local);
			e->llc_miss = e->mem_remote = e->mem_local = 0;
		} else if (e->mem_remote) {
			e->mem_remote = 0;
			e->mem_local = 1;
			d = (int32_t)lat->mem_local - (int32_t)lat->mem_remote;
		}
	} else if (mon_sim_whatif_kind == WHATIF_HUGE && g->tlb1.nr_entries) {
		/* (no TLB model: no change) */
		struct whatif_tlb *w = whatif.tlb[t->id & 255];
		uint64_t key = addr >> 21;
		uint32_t cap1 = g->tlb1.nr_entries < WHATIF_TLB_MAX ? g->tlb1.nr_entries : WHATIF_TLB_MAX;
		uint32_t cap2 = g->tlb2.nr_entries < WHATIF_TLB_MAX ? g->tlb2.nr_entries : WHATIF_TLB_MAX;
		int32_t before = whatif_tlb_cycles(c, e);
		int32_t after;

		if (!w && !(w = whatif.tlb[t->id & 255] = mon_calloc(1, sizeof(*w))))
			return;
		w->now++;
		if (whatif_tlb_ref(w->page1, w->used1, &w->nr1, cap1 ? cap1 : 1, key, w->now)) {
			e->tlb1_miss = e->tlb_miss = 0;
			after = 0;
		} else if (cap2 && whatif_tlb_ref(w->page2, w->used2, &w->nr2, cap2, key, w->now)) {
			e->tlb1_miss = 1;
			e->tlb_miss = 0;
			after = (int32_t)lat->tlb2_hit;
		} else {
			e->tlb1_miss = e->tlb_miss = 1;
			after = (int32_t)lat->tlb_miss;
		}
		d = after - before;
	}
	e->est_cycles = (uint32_t)((int32_t)e->est_cycles + d);
	if (e->est_stall_cycles || d > 0)
		e->est_stall_cycles = (uint32_t)((int32_t)e->est_stall_cycles + d);
}

/* Does an access to obj go through the what-if? Its object's; and for
 * transpose, once the walk is learnt, any heap, mapped or global object's
 * (the instructions that walk the object with stride S are interchanged,
 * and so are their walks of other objects: whatif_layout moves only the
 * accesses of those instructions). */
static inline int whatif_wants(const struct mon_obj *obj)
{
	if (mon_sim_whatif_kind == WHATIF_TRANSPOSE && whatif.state == 1 &&
	    (obj->kind == MON_OBJ_HEAP || obj->kind == MON_OBJ_MMAP || obj->kind == MON_OBJ_GLOBAL))
		return 1;
	return whatif_match(obj);
}

/*
 * transpose, rowpad: the first access to a line of the new layout. Its
 * data is where the program as it is left it (a sequential initialisation
 * may have put the object in the LLC; the twin with the real fix finds it
 * there): the access is simulated and counted at its own address (addr),
 * with the TLB events of the new one, and the new line is then brought in
 * without counting, so that the next accesses find it.
 */
static __attribute__((noinline)) void whatif_first(struct mon_thread *t, struct mon_sim_core *c,
						   struct mon_obj *obj, uintptr_t addr, uintptr_t moved,
						   uint32_t sz, unsigned flags, uintptr_t pc,
						   struct mon_events *ev)
{
	struct mon_sim_events e, e2;
	int wr = (flags & MON_ACC_WRITE) != 0;
	int32_t d;

	if (!mon_sim_access(c, addr, sz, wr, obj->idx, &e)) {
		uint32_t cyc = e.est_cycles;
		memset(&e, 0, sizeof(e));
		e.est_cycles = cyc;
	}
	if (!mon_sim_access(c, moved, sz, wr, obj->idx, &e2))
		memset(&e2, 0, sizeof(e2));
	d = whatif_tlb_cycles(c, &e2) - whatif_tlb_cycles(c, &e);
	e.tlb1_miss = e2.tlb1_miss;
	e.tlb_miss = e2.tlb_miss;
	e.est_cycles = (uint32_t)((int32_t)e.est_cycles + d);
	if (e.est_stall_cycles || d > 0)
		e.est_stall_cycles = (uint32_t)((int32_t)e.est_stall_cycles + d);
	mon_sim_report(t, c, &e, flags, pc, ev);
}

/* An access simulated as it is, its events counted into ev (a plain hit's
 * events, all zero but its cycles, as backend_sim.c's sim_plain counts
 * them) */
static void whatif_plain(struct mon_thread *t, struct mon_sim_core *c, struct mon_obj *obj,
			 uintptr_t addr, uint32_t sz, unsigned flags, uintptr_t pc,
			 struct mon_events *ev)
{
	struct mon_sim_events e;

	if (!mon_sim_access(c, addr, sz, (flags & MON_ACC_WRITE) != 0, obj->idx, &e)) {
		uint32_t cyc = e.est_cycles;
		memset(&e, 0, sizeof(e));
		e.est_cycles = cyc;
	}
	mon_sim_report(t, c, &e, flags, pc, ev);
}

/* transpose, a column reduction: after a moved read, its column's
 * accumulator (at acc) read and written, counted as the object's. */
static __attribute__((noinline)) void whatif_accumulate(struct mon_thread *t,
							 struct mon_sim_core *c,
							 struct mon_obj *obj, uintptr_t acc,
							 uintptr_t pc, struct mon_events *ev)
{
	whatif_plain(t, c, obj, acc, 8, MON_ACC_READ, pc, ev);
	whatif_plain(t, c, obj, acc, 8, MON_ACC_WRITE, pc, ev);
}

/*
 * The what-if's part of an access (AMEBA_WHATIF), out of sim_access's
 * line: 1 when it simulated and counted the access itself (transpose,
 * rowpad: a moved line's first touch, a column reduction's accumulator);
 * else 0, the access to simulate at *addr (pad, private: the thread's
 * copy; transpose, rowpad: the new layout), with *fix set when its events
 * are to be corrected (huge, local, private).
 */
static __attribute__((noinline)) int whatif_access(struct mon_thread *t, struct mon_sim_core *c,
						   struct mon_obj *obj, uintptr_t *addr, uint32_t sz,
						   unsigned flags, uintptr_t pc, struct mon_events *ev,
						   int *fix)
{
	if (mon_sim_whatif_kind == WHATIF_TRANSPOSE && (whatif.state == 0 || whatif.reduce_open) &&
	    (flags & MON_ACC_WRITE) && obj->kind != MON_OBJ_STACK)
		whatif.writes[t->id & 4095]++;	/* for a column reduction's learning */
	if (!whatif_wants(obj))
		return 0;
	if (mon_sim_whatif_kind == WHATIF_PAD || mon_sim_whatif_kind == WHATIF_PRIVATE) {
		*addr = whatif_pad(t, obj, *addr);
		*fix = mon_sim_whatif_kind == WHATIF_PRIVATE;
	} else if (mon_sim_whatif_kind == WHATIF_TRANSPOSE || mon_sim_whatif_kind == WHATIF_ROWPAD) {
		/* one at a time: in host order the threads come here at once */
		static char busy;

		while (__atomic_test_and_set(&busy, __ATOMIC_ACQUIRE))
			;
		int first = 0;
		uintptr_t acc = 0;
		uintptr_t moved = whatif_layout(t, obj, *addr, sz, flags, pc, whatif_match(obj),
						&first, &acc);

		__atomic_clear(&busy, __ATOMIC_RELEASE);
		if (first || acc) {
			if (first)
				whatif_first(t, c, obj, *addr, moved, sz, flags, pc, ev);
			else
				whatif_plain(t, c, obj, moved, sz, flags, pc, ev);
			if (acc)
				whatif_accumulate(t, c, obj, acc, pc, ev);
			return 1;
		}
		*addr = moved;
	} else {
		*fix = 1;
	}
	return 0;
}
void mon_sim_whatif_access(struct mon_thread *t, struct mon_sim_core *c, struct mon_obj *obj,
			   uintptr_t addr, uint32_t sz, unsigned flags, uintptr_t pc,
			   struct mon_events *ev)
{
	struct mon_sim_events e;
	int fix = 0;

	if (whatif_access(t, c, obj, &addr, sz, flags, pc, ev, &fix))
		return;
	if (!fix) {
		whatif_plain(t, c, obj, addr, sz, flags, pc, ev);
		return;
	}
	int warm = mon_sim_whatif_kind == WHATIF_LOCAL && mon_sim_llc_elsewhere(c, addr);

	if (!mon_sim_access(c, addr, sz, (flags & MON_ACC_WRITE) != 0, obj->idx, &e)) {
		/* a plain hit's events: all zero but its cycles */
		uint32_t cyc = e.est_cycles;
		memset(&e, 0, sizeof(e));
		e.est_cycles = mon_sim_whatif_kind == WHATIF_PRIVATE ? 0 : cyc;
	}
	if (mon_sim_whatif_kind != WHATIF_PRIVATE)
		whatif_correct(t, c, addr, warm, &e);
	mon_sim_report(t, c, &e, flags, pc, ev);
}
