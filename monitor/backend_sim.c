/*
 * backend_sim.c - the `sim` backend: every access runs through the cache
 * simulator (monitor/sim/, Notes in sim.c) and the events it caused become
 * metric events of the accessed object.
 *
 * Configuration (read once, at activation):
 *   AMEBA_PRESET   host (default), zen4, skylake-sp, r10000, or a config file
 *   AMEBA_SYSFS    what the host preset reads instead of /sys (mri/geom.c)
 *   AMEBA_NODES    NUMA nodes (overrides the preset)
 *   AMEBA_SIM_CORES  simulated cores (default: the preset's, 64); thread id
 *                  n runs on core n % cores
 *   AMEBA_SIM_3C   0 turns the compulsory/capacity/conflict split off
 *   AMEBA_SIM_TLB  0 turns the TLB model off (tlb_miss stays 0)
 *   AMEBA_SIM_LEAN 0 keeps every access on the general path (the lean
 *                  miss path gives the same counts; for tests)
 *   AMEBA_SIM_VERBOSE  1 logs the geometry at activation
 *   AMEBA_SIM_ORDER  time (default): with two threads or more, one merger
 *                  thread simulates every thread's logged accesses in
 *                  simulated-time order (seq.c); host: each thread simulates
 *                  its own, in the order the host runs them
 *   AMEBA_SIM_ASM  0 uses the C line entry instead of the x86-64 assembly
 *                  one (same counts; read when the backend is chosen)
 *
 * inval_recv: an invalidation is caused by one thread's write but received
 * by another thread's cached copy, which belongs to whatever object that
 * thread last accessed in the line. The simulator queues each invalidation
 * in the victim core's mailbox; the victim applies it at the start of its
 * next access and keeps (line, cookie = object id of its last access to the
 * line). After that access the backend, on the victim's own thread, collects
 * them and credits inval_recv to the victim's counters of that object
 * (mon_counts_get is owner-thread only, and this is the owner), plus the
 * conditional counters and sample streams at the line's address. The
 * credit is thus late by at most one access of the victim; a thread that
 * never accesses memory again after being invalidated is not credited.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mon.h"
#include "seq.h"
#include "sim/sim_core.h"	/* sim_hit: the simulator's L1 hit path, inline */
#include "sim/sim_lean.h"	/* the lean path, inline in the miss half */
#include "backend_sim.h"

static struct mon_sim *sim;	/* atomic: set once by activation */
static int settle_cold;		/* mon_backend_sim_sampled */

/* The counter slot of each metric: its position in sim_metrics, which
 * mon_counts_configure keeps (checked at activation). Constants, so that
 * counting an event is one add to a fixed offset. */
static const uint16_t slot_of[AMEBA_M_NR] = {
	[AMEBA_M_MEM_REF] = 0,		[AMEBA_M_READS] = 1,		[AMEBA_M_WRITES] = 2,
	[AMEBA_M_L1D_MISS] = 3,		[AMEBA_M_L1D_MISS_RD] = 4,	[AMEBA_M_L1D_MISS_WR] = 5,
	[AMEBA_M_L2_MISS] = 6,		[AMEBA_M_L2_MISS_RD] = 7,	[AMEBA_M_L2_MISS_WR] = 8,
	[AMEBA_M_LLC_MISS] = 9,		[AMEBA_M_LLC_MISS_RD] = 10,	[AMEBA_M_LLC_MISS_WR] = 11,
	[AMEBA_M_TLB_MISS] = 12,
	[AMEBA_M_COH_MISS] = 13,	[AMEBA_M_COH_MISS_TRUE] = 14,	[AMEBA_M_COH_MISS_FALSE] = 15,
	[AMEBA_M_INVAL_SENT] = 16,	[AMEBA_M_INVAL_RECV] = 17,	[AMEBA_M_INTERVENTION] = 18,
	[AMEBA_M_MEM_LOCAL] = 19,	[AMEBA_M_MEM_REMOTE] = 20,
	[AMEBA_M_CONFLICT_MISS] = 21,	[AMEBA_M_CAPACITY_MISS] = 22,	[AMEBA_M_COMPULSORY_MISS] = 23,
	[AMEBA_M_EST_CYCLES] = 24,	[AMEBA_M_EST_STALL_CYCLES] = 25,
};

static const int sim_metrics[] = {
	AMEBA_M_MEM_REF,	AMEBA_M_READS,		AMEBA_M_WRITES,
	AMEBA_M_L1D_MISS,	AMEBA_M_L1D_MISS_RD,	AMEBA_M_L1D_MISS_WR,
	AMEBA_M_L2_MISS,	AMEBA_M_L2_MISS_RD,	AMEBA_M_L2_MISS_WR,
	AMEBA_M_LLC_MISS,	AMEBA_M_LLC_MISS_RD,	AMEBA_M_LLC_MISS_WR,
	AMEBA_M_TLB_MISS,
	AMEBA_M_COH_MISS,	AMEBA_M_COH_MISS_TRUE,	AMEBA_M_COH_MISS_FALSE,
	AMEBA_M_INVAL_SENT,	AMEBA_M_INVAL_RECV,	AMEBA_M_INTERVENTION,
	AMEBA_M_MEM_LOCAL,	AMEBA_M_MEM_REMOTE,
	AMEBA_M_CONFLICT_MISS,	AMEBA_M_CAPACITY_MISS,	AMEBA_M_COMPULSORY_MISS,
	AMEBA_M_EST_CYCLES,	AMEBA_M_EST_STALL_CYCLES,
};

/* A decimal environment value in [lo, hi], or -1 (absent or bad: logged). */
long mon_sim_env_num(const char *name, long lo, long hi)
{
	const char *v = getenv(name);
	char *end;
	long x;

	if (!v || !*v)
		return -1;
	x = strtol(v, &end, 10);
	if (*end || x < lo || x > hi) {
		mon_log("%s=%s ignored: want a number in %ld..%ld", name, v, lo, hi);
		return -1;
	}
	return x;
}

static int sim_activate(void)
{
	struct mri_geom g;
	char err[512];
	const char *preset = getenv("AMEBA_PRESET");
	long x;
	int r;

	if (__atomic_load_n(&sim, __ATOMIC_ACQUIRE))
		return 0;
	if (!preset || !*preset)
		preset = "host";
	r = mri_geom_load(preset, &g, err, sizeof(err));
	if (r) {
		mon_log("AMEBA_PRESET: %s", err);
		return r;
	}
	if ((x = mon_sim_env_num("AMEBA_NODES", 1, MON_SIM_MAX_NODES)) > 0)
		g.nr_nodes = (uint32_t)x;
	if ((x = mon_sim_env_num("AMEBA_SIM_CORES", 1, MON_SIM_MAX_CORES)) > 0)
		g.nr_cores = (uint32_t)x;
	if ((x = mon_sim_env_num("AMEBA_SIM_3C", 0, 1)) >= 0)
		g.three_c = (int)x;
	if (mon_sim_env_num("AMEBA_SIM_TLB", 0, 1) == 0)
		g.tlb1.nr_entries = g.tlb2.nr_entries = 0;
	r = mri_geom_check(&g, err, sizeof(err));
	if (r) {
		mon_log("sim geometry %s: %s", g.name, err);
		return r;
	}
	struct mon_sim *s = mon_sim_new(&g);
	if (!s)
		return AMEBA_ENOMEM;
	/* the counter slots are configured before activate(): every metric of
	 * this backend has the one slot_of says */
	for (size_t i = 0; i < sizeof(sim_metrics) / sizeof(sim_metrics[0]); i++) {
		if (mon_slot_of_metric[sim_metrics[i]] != (int)i || slot_of[sim_metrics[i]] != i) {
			mon_log("sim: metric %d has counter slot %d, backend_sim.c's slot_of says %u "
				"(fix slot_of to follow sim_metrics)", sim_metrics[i],
				mon_slot_of_metric[sim_metrics[i]], (unsigned)slot_of[sim_metrics[i]]);
			mon_sim_destroy(s);
			return AMEBA_EINVAL;
		}
	}
	if (mon_sim_env_num("AMEBA_SIM_VERBOSE", 0, 1) == 1) {
		char buf[2048];
		mri_geom_format(&g, buf, sizeof(buf));
		for (char *line = buf, *nl; *line; line = nl + 1) {
			nl = strchr(line, '\n');
			if (!nl)
				break;
			*nl = 0;
			mon_log("sim: %s", line);
		}
	}
	if (mon_sim_env_num("AMEBA_SIM_LEAN", 0, 1) == 0)
		mon_sim_lean(s, 0);
	if (mon_sim_env_num("AMEBA_SIM_FILTER", 0, 1) == 0)
		mon_sim_lf_enable(s, 0);
	mon_sim_settle_cold(s, __atomic_load_n(&settle_cold, __ATOMIC_RELAXED));
	__atomic_store_n(&sim, s, __ATOMIC_RELEASE);
	return 0;
}

static void lf_install(struct mon_thread *t, struct mon_sim_core *c,
		       const struct mon_backend_ops *b);

static void sim_thread_start(struct mon_thread *t)
{
	struct mon_sim *s = __atomic_load_n(&sim, __ATOMIC_ACQUIRE);
	const struct mon_backend_ops *b = __atomic_load_n(&mon_backend, __ATOMIC_ACQUIRE);
	struct mon_sim_core *c;

	if (s && !t->backend_data)
		t->backend_data = mon_sim_core_get(s, t->id, t->id);
	c = t->backend_data;
	/* only a solo core's thread can ever batch (a second core ends solo
	 * mode for good): the others get no batch page */
	if (c && c->solo)
		mon_batch_thread_start(t);
	if (c)
		lf_install(t, c, b);
}

static void sim_thread_exit(struct mon_thread *t)
{
	struct mon_sim_core *c = t->backend_data;

	if (t == mon_self && mon_sim_lf) {
		mon_sim_lf = NULL;
	}
	if (c) {
		/* invalidations received since the last access stay uncredited */
		mon_sim_core_put(c, t->id);
		t->backend_data = NULL;
	}
}

/*
 * t's counters for an invalidation received on a line whose cookie is
 * object id (host order; t the owner). A cookie outlives its block: the
 * lines a freed heap or mmap block left in the simulated caches name it
 * until they are evicted. Its counts go to t's vector of the block when t
 * has one (t holds the record: fold.c folds the vector), else to the
 * block's site's retired record, where the block's counts go anyway: a new
 * vector of a freed record would make t a holder that fold.c never asks
 * to fold, and the record would stay for good.
 */
static uint64_t *recv_counts(struct mon_thread *t, uint32_t id)
{
	struct mon_obj *o = mon_objmap_get(id), *ret;
	uint64_t *v;

	if (!o || (__atomic_load_n(&o->flags, __ATOMIC_ACQUIRE) & (MON_OBJF_LIVE | MON_OBJF_RETIRED)) ||
	    (o->kind != MON_OBJ_HEAP && o->kind != MON_OBJ_MMAP))
		return mon_counts_get(t, id);
	if ((v = mon_counts_find(t, id)))
		return v;
	ret = mon_objmap_retired(o->site_id, o->kind);
	return ret ? mon_counts_get(t, ret->idx) : NULL;
}

/* Credits the invalidations core c received to the victim objects. */
static void credit_recv(struct mon_thread *t, struct mon_sim_core *c, uintptr_t pc)
{
	struct mon_sim_recv r[32];
	uint32_t n, nr_objs = mon_objmap_nr_objs();
	int slot = mon_slot_of_metric[AMEBA_M_INVAL_RECV];

	while ((n = mon_sim_core_recv(c, r, 32)) > 0) {
		for (uint32_t i = 0; i < n; i++) {
			if (r[i].cookie >= nr_objs)
				continue;
			/* ordered mode: the merger runs this for t, and may not
			 * insert into t's table (t made the vector when it logged
			 * its access to the line) */
			uint64_t *v = mon_seq_engaged() ? mon_counts_find(t, r[i].cookie)
							: recv_counts(t, r[i].cookie);
			if (v && slot >= 0)
				mon_count_add(v, slot, 1);
			if (mon_unlikely(__atomic_load_n(&mon_cond_armed, __ATOMIC_RELAXED) ||
					 __atomic_load_n(&mon_sample_armed, __ATOMIC_RELAXED))) {
				struct mon_events e = { .nr = 0, .counts = NULL };
				struct mon_obj *o = mon_objmap_get(r[i].cookie);
				uintptr_t a = r[i].line_addr;
				if (o && o->start > a && o->start - a < MON_LINE_SIZE)
					a = o->start;	/* the part of the line that is the object */
				mon_ev_add(&e, AMEBA_M_INVAL_RECV, 1);
				if (__atomic_load_n(&mon_cond_armed, __ATOMIC_RELAXED))
					mon_cond_account(t, a, o, &e);
				if (__atomic_load_n(&mon_sample_armed, __ATOMIC_RELAXED))
					mon_sample_account(t, a, pc, o, &e);
			}
		}
		if (n < 32)
			break;
	}
}

/* At most 19 events per access: within MON_EV_MAX. v: ev->counts, kept
 * in a local so that it is not reloaded after every counter store. On
 * x86-64 mon_count_add is one add to memory whose asm names the one
 * counter it changes, so the event fields read after it need no reload
 * (a store through uint64_t * may alias their uint8_t): no copy of the
 * events first (random kernel: ~14 counters per L1 miss). */
#define PUT(m_, n_)                                                   \
	do {                                                          \
		if (v)                                                \
			mon_count_add(v, slot_of[m_], (n_));          \
		else                                                  \
			mon_ev_put(ev, slot_of[m_], (n_));            \
	} while (0)

/* The events of an access that was not a plain L1 hit: into counter vector
 * v, or (v NULL) into ev. */
static inline __attribute__((always_inline)) void report_to(uint64_t *const v,
							  struct mon_events *ev,
							  const struct mon_sim_events *e,
							  unsigned flags)
{
	int wr = (flags & MON_ACC_WRITE) != 0;

	PUT(AMEBA_M_MEM_REF, 1);
	if (flags & MON_ACC_READ)
		PUT(AMEBA_M_READS, 1);
	if (wr)
		PUT(AMEBA_M_WRITES, 1);
	PUT(AMEBA_M_EST_CYCLES, e->est_cycles);
	if (mon_likely(!e->l1_miss && !e->tlb_miss && !e->inval_sent && !e->inval_recv &&
		       !e->est_stall_cycles))
		return;		/* an L1 hit, L1 TLB included */
	if (e->l1_miss) {
		PUT(AMEBA_M_L1D_MISS, 1);
		PUT(wr ? AMEBA_M_L1D_MISS_WR : AMEBA_M_L1D_MISS_RD, 1);
		if (e->l2_miss) {
			PUT(AMEBA_M_L2_MISS, 1);
			PUT(wr ? AMEBA_M_L2_MISS_WR : AMEBA_M_L2_MISS_RD, 1);
		}
		if (e->llc_miss) {
			PUT(AMEBA_M_LLC_MISS, 1);
			PUT(wr ? AMEBA_M_LLC_MISS_WR : AMEBA_M_LLC_MISS_RD, 1);
			PUT(e->mem_remote ? AMEBA_M_MEM_REMOTE : AMEBA_M_MEM_LOCAL, 1);
		}
		/* one test for the three that a single-threaded run without 3C
		 * never has (random kernel: ~10 instructions per miss) */
		if (e->coh | e->cls3c | e->intervention) {
			if (e->coh) {
				PUT(AMEBA_M_COH_MISS, 1);
				PUT(e->coh == MON_SIM_COH_TRUE ? AMEBA_M_COH_MISS_TRUE
							       : AMEBA_M_COH_MISS_FALSE, 1);
			}
			if (e->cls3c == MON_SIM_3C_COMPULSORY)
				PUT(AMEBA_M_COMPULSORY_MISS, 1);
			else if (e->cls3c == MON_SIM_3C_CAPACITY)
				PUT(AMEBA_M_CAPACITY_MISS, 1);
			else if (e->cls3c == MON_SIM_3C_CONFLICT)
				PUT(AMEBA_M_CONFLICT_MISS, 1);
			if (e->intervention)
				PUT(AMEBA_M_INTERVENTION, 1);
		}
	}
	if (e->tlb_miss)
		PUT(AMEBA_M_TLB_MISS, 1);
	if (e->inval_sent)
		PUT(AMEBA_M_INVAL_SENT, e->inval_sent);
	if (e->est_stall_cycles)
		PUT(AMEBA_M_EST_STALL_CYCLES, e->est_stall_cycles);
}

static __attribute__((noinline)) void report(struct mon_thread *t, struct mon_sim_core *c,
					     const struct mon_sim_events *ep, unsigned flags,
					     uintptr_t pc, struct mon_events *ev)
{
	if (mon_likely(ev->counts != NULL))
		report_to(ev->counts, ev, ep, flags);	/* constant offsets, no test per event */
	else
		report_to(NULL, ev, ep, flags);
	if (mon_unlikely(ep->inval_recv))
		credit_recv(t, c, pc);
}

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

static struct {
	int kind;
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

/* t's line filter (sim.h): its core c's, when t owns c (ordered mode's
 * merger starts others') and b has a line entry (not what-if's) */
static void lf_install(struct mon_thread *t, struct mon_sim_core *c,
		       const struct mon_backend_ops *b)
{
	if (t == mon_self && (b == &mon_backend_sim || b == &mon_backend_sim_c) && !whatif.kind &&
	    !t->seq && (mon_sim_lf = mon_sim_lf_install(c, t->id, b))) {
		mon_sim_lf->tick = mon_sim_lf->window = mon_sim_lf_window();
		mon_sim_lf->hits = mon_sim_lf->notes = 0;
	}
}

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
		whatif.kind = WHATIF_PAD;
	else if (!strncmp(e, "huge:", 5))
		whatif.kind = WHATIF_HUGE;
	else if (!strncmp(e, "local:", 6))
		whatif.kind = WHATIF_LOCAL;
	else if (!strncmp(e, "private:", 8))
		whatif.kind = WHATIF_PRIVATE;
	else if (!strncmp(e, "transpose", 9) && (e[9] == ':' || e[9] == '/'))
		whatif.kind = WHATIF_TRANSPOSE;
	else if (!strncmp(e, "rowpad", 6) && (e[6] == ':' || e[6] == '/'))
		whatif.kind = WHATIF_ROWPAD;
	else {
		mon_log("AMEBA_WHATIF=%s: unknown kind (pad, private, huge, local, transpose, rowpad); "
			"ignored", e);
		return 0;
	}
	if (whatif.kind == WHATIF_TRANSPOSE || whatif.kind == WHATIF_ROWPAD) {
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
				whatif.kind = WHATIF_NONE;
				return 0;
			}
			whatif.stride = st;
			whatif.elem = el;
			whatif.state = 1;
		}
		whatif.steps = mon_calloc(WHATIF_STEPS, sizeof(*whatif.steps));
		if (!whatif.steps) {
			mon_log("AMEBA_WHATIF=%s: out of memory; ignored", e);
			whatif.kind = WHATIF_NONE;
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
	whatif.reduce_open = whatif.kind == WHATIF_TRANSPOSE && whatif.state == 1 &&
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
	if (whatif.kind == WHATIF_TRANSPOSE && st->nr_s <= st->nr_other)
		return addr;
	size = obj->end - obj->start;
	r = o / S;
	rem = o % S;
	if (whatif.kind == WHATIF_TRANSPOSE) {
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

	if (!whatif.kind)
		return;
	fputs(",\"what_if\":{\"kind\":\"", f);
	fputs(kinds[whatif.kind], f);
	fputs("\"", f);
	if (whatif.kind == WHATIF_TRANSPOSE || whatif.kind == WHATIF_ROWPAD)
		fprintf(f, ",\"applied\":%s,\"stride\":%llu,\"element\":%llu,\"far_steps\":%llu",
			whatif.state == 1 ? "true" : "false", (unsigned long long)whatif.stride,
			(unsigned long long)whatif.elem, (unsigned long long)whatif.nr_far);
	if (whatif.kind == WHATIF_TRANSPOSE)
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
static int32_t whatif_tlb_cycles(const struct mon_sim_events *e)
{
	const struct mri_geom_lat *lat = &mon_sim_geom_of(sim)->lat;

	return e->tlb1_miss ? (int32_t)(e->tlb_miss ? lat->tlb_miss : lat->tlb2_hit) : 0;
}

/* huge, local: the access's events as they would be with the fix. warm
 * (local): before the access, its line was in another node's LLC. */
static void whatif_correct(const struct mon_thread *t, uintptr_t addr, int warm,
			   struct mon_sim_events *e)
{
	const struct mri_geom_lat *lat = &mon_sim_geom_of(sim)->lat;
	const struct mri_geom *g = mon_sim_geom_of(sim);
	int32_t d = 0;

	if (whatif.kind == WHATIF_LOCAL) {
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
	} else if (whatif.kind == WHATIF_HUGE && g->tlb1.nr_entries) {	/* (no TLB model: no change) */
		struct whatif_tlb *w = whatif.tlb[t->id & 255];
		uint64_t key = addr >> 21;
		uint32_t cap1 = g->tlb1.nr_entries < WHATIF_TLB_MAX ? g->tlb1.nr_entries : WHATIF_TLB_MAX;
		uint32_t cap2 = g->tlb2.nr_entries < WHATIF_TLB_MAX ? g->tlb2.nr_entries : WHATIF_TLB_MAX;
		int32_t before = whatif_tlb_cycles(e);
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
	if (whatif.kind == WHATIF_TRANSPOSE && whatif.state == 1 &&
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
	d = whatif_tlb_cycles(&e2) - whatif_tlb_cycles(&e);
	e.tlb1_miss = e2.tlb1_miss;
	e.tlb_miss = e2.tlb_miss;
	e.est_cycles = (uint32_t)((int32_t)e.est_cycles + d);
	if (e.est_stall_cycles || d > 0)
		e.est_stall_cycles = (uint32_t)((int32_t)e.est_stall_cycles + d);
	report(t, c, &e, flags, pc, ev);
}

/* An access simulated as it is, its events counted into ev. */
static inline __attribute__((always_inline)) void sim_plain(struct mon_thread *t,
							     struct mon_sim_core *c,
							     struct mon_obj *obj, uintptr_t addr,
							     uint32_t sz, unsigned flags, uintptr_t pc,
							     struct mon_events *ev)
{
	struct mon_sim_events e;
	int wr = (flags & MON_ACC_WRITE) != 0;

	if (mon_likely(!mon_sim_access(c, addr, sz, wr, obj->idx, &e))) {
		/* a plain L1 hit: what report() would report, with less work */
		uint64_t *const v = ev->counts;
		PUT(AMEBA_M_MEM_REF, 1);
		if (flags & MON_ACC_READ)
			PUT(AMEBA_M_READS, 1);
		if (wr)
			PUT(AMEBA_M_WRITES, 1);
		PUT(AMEBA_M_EST_CYCLES, e.est_cycles);
		return;
	}
	report(t, c, &e, flags, pc, ev);
}

/* transpose, a column reduction: after a moved read, its column's
 * accumulator (at acc) read and written, counted as the object's. */
static __attribute__((noinline)) void whatif_accumulate(struct mon_thread *t,
							 struct mon_sim_core *c,
							 struct mon_obj *obj, uintptr_t acc,
							 uintptr_t pc, struct mon_events *ev)
{
	sim_plain(t, c, obj, acc, 8, MON_ACC_READ, pc, ev);
	sim_plain(t, c, obj, acc, 8, MON_ACC_WRITE, pc, ev);
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
	if (whatif.kind == WHATIF_TRANSPOSE && (whatif.state == 0 || whatif.reduce_open) &&
	    (flags & MON_ACC_WRITE) && obj->kind != MON_OBJ_STACK)
		whatif.writes[t->id & 4095]++;	/* for a column reduction's learning */
	if (!whatif_wants(obj))
		return 0;
	if (whatif.kind == WHATIF_PAD || whatif.kind == WHATIF_PRIVATE) {
		*addr = whatif_pad(t, obj, *addr);
		*fix = whatif.kind == WHATIF_PRIVATE;
	} else if (whatif.kind == WHATIF_TRANSPOSE || whatif.kind == WHATIF_ROWPAD) {
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
				sim_plain(t, c, obj, moved, sz, flags, pc, ev);
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

static void sim_access(struct mon_thread *t, struct mon_obj *obj, uintptr_t addr, uint32_t sz,
		       unsigned flags, uintptr_t pc, struct mon_events *ev)
{
	struct mon_sim_core *c = t->backend_data;
	struct mon_sim_events e;
	int wr = (flags & MON_ACC_WRITE) != 0, fix = 0;

	if (mon_unlikely(!c)) {
		sim_thread_start(t);
		c = t->backend_data;
		if (!c)
			return;
	}
	if (mon_unlikely(whatif.kind) && whatif_access(t, c, obj, &addr, sz, flags, pc, ev, &fix))
		return;
	if (mon_unlikely(fix)) {
		int warm = whatif.kind == WHATIF_LOCAL && mon_sim_llc_elsewhere(c, addr);
		int r = mon_sim_access(c, addr, sz, wr, obj->idx, &e);

		if (!r) {	/* a plain hit's events: all zero but its cycles */
			uint32_t cyc = e.est_cycles;
			memset(&e, 0, sizeof(e));
			e.est_cycles = whatif.kind == WHATIF_PRIVATE ? 0 : cyc;
		}
		if (whatif.kind != WHATIF_PRIVATE)
			whatif_correct(t, addr, warm, &e);
		report(t, c, &e, flags, pc, ev);
		return;
	}
	sim_plain(t, c, obj, addr, sz, flags, pc, ev);
}

/*
 * Object cache way w's tag for the L1 line of addr (mon_sim_access_tagged,
 * sim_hit): the object and t's counter vector of it, when the whole line
 * lies in the object, so that sim_line_fast may count any access within
 * that line into them while the object lives; else none.
 */
static inline void line_tag(const struct mon_thread *t, const struct mon_sim_core *c,
			    uintptr_t addr, unsigned w, uintptr_t tag[2])
{
	uintptr_t lo = addr & ~(((uintptr_t)1 << c->l1.line_shift) - 1);
	uintptr_t hi = lo + ((uintptr_t)1 << c->l1.line_shift);
	int whole = lo >= t->cache.start[w] && hi - 1 <= t->cache.end[w] - 1 && hi > lo;

	tag[0] = whole ? (uintptr_t)t->cache.obj[w] : 0;
	tag[1] = whole ? (uintptr_t)t->cache.counts[w] : 0;
}

/* A plain L1 hit's events (an access; rd, wr: 1 for a read, a write; its
 * cycles) into the object's counter vector v. */
static inline __attribute__((always_inline)) void count_plain(uint64_t *v, unsigned rd, unsigned wr,
							       uint64_t cycles)
{
	mon_count_add(v, SLOT_MEM_REF, 1);
	mon_count_add(v, SLOT_READS, rd);
	mon_count_add(v, SLOT_WRITES, wr);
	mon_count_add(v, SLOT_EST_CYCLES, cycles);
}

/* An L1 hit on the fast paths: the core's hit latency. */
static inline __attribute__((always_inline)) void count_l1_hit(uint64_t *v, uint32_t wfs,
								const struct mon_sim_core *c)
{
	count_plain(v, wfs & MON_ACC_READ, (wfs & MON_ACC_WRITE) >> 1, c->l1_hit_cycles);
}

/* The events of mon_sim_access_lean's outcome o (SIM_LEAN_*) into v, as
 * report_to counts the same access's events: no L2 (an L1 miss missed the
 * private caches), one node (memory is local), no coherence, no 3C. */
static inline __attribute__((always_inline)) void count_lean(uint64_t *v, unsigned flags,
							      unsigned o,
							      const struct mon_sim_core *c)
{
	unsigned wr = (flags & MON_ACC_WRITE) >> 1, lvl = o & 3;
	uint32_t cyc = c->lean_cyc[o];

	count_plain(v, flags & MON_ACC_READ, wr, cyc);
	if (mon_likely(!o))
		return;
	if (lvl) {
		mon_count_add(v, slot_of[AMEBA_M_L1D_MISS], 1);
		mon_count_add(v, wr ? slot_of[AMEBA_M_L1D_MISS_WR] : slot_of[AMEBA_M_L1D_MISS_RD], 1);
		mon_count_add(v, slot_of[AMEBA_M_L2_MISS], 1);
		mon_count_add(v, wr ? slot_of[AMEBA_M_L2_MISS_WR] : slot_of[AMEBA_M_L2_MISS_RD], 1);
		if (lvl == SIM_LEAN_MEM) {
			mon_count_add(v, slot_of[AMEBA_M_LLC_MISS], 1);
			mon_count_add(v, wr ? slot_of[AMEBA_M_LLC_MISS_WR]
					    : slot_of[AMEBA_M_LLC_MISS_RD], 1);
			mon_count_add(v, slot_of[AMEBA_M_MEM_LOCAL], 1);
		}
	}
	if (o & SIM_LEAN_WALK)
		mon_count_add(v, slot_of[AMEBA_M_TLB_MISS], 1);
	mon_count_add(v, slot_of[AMEBA_M_EST_STALL_CYCLES], cyc - c->l1_hit_cycles);
}

/* Any other access's events e into v (the miss halves), then the
 * inval_recv credit. */
static inline __attribute__((always_inline)) void count_events(struct mon_thread *t,
								struct mon_sim_core *c, uint64_t *v,
								const struct mon_sim_events *e,
								unsigned flags, uintptr_t pc)
{
	report_to(v, NULL, e, flags);	/* v != NULL: constant offsets */
	if (mon_unlikely(e->inval_recv))
		credit_recv(t, c, pc);
}

/*
 * sim_fast's access when sim_hit declined it (or t has no core yet). The
 * object's counters exist (mon_access checked), so the events go straight
 * into them: no struct mon_events (zeroing its arrays alone cost ~40
 * instructions per call) and no call to report().
 */
static __attribute__((noinline)) void sim_piece(struct mon_thread *t, uintptr_t addr, uint32_t wfs,
						uintptr_t pc)
{
	struct mon_sim_core *c = t->backend_data;
	struct mon_sim_events e;
	unsigned w = MON_FAST_WAY(wfs), flags = MON_FAST_FLAGS(wfs);
	uint64_t *const v = t->cache.counts[w];
	int wr = (flags & MON_ACC_WRITE) != 0;
	uintptr_t tag[2];

	if (!v)
		__builtin_unreachable();	/* mon_access took access_events then */
	mon_rt_enter(t);
	if (mon_unlikely(!c)) {
		sim_thread_start(t);
		c = t->backend_data;
	}
	if (mon_unlikely(!c)) {
		/* no simulator: nothing to count */
	} else if (line_tag(t, c, addr, w, tag),
		   !mon_sim_access_tagged(c, addr, MON_FAST_SZ(wfs), wr, t->cache.obj[w]->idx, &e,
					  tag[0], tag[1])) {
		count_plain(v, flags & MON_ACC_READ, (unsigned)wr, e.est_cycles);
	} else {
		count_events(t, c, v, &e, flags, pc);
	}
	mon_rt_leave(t);
}

/*
 * The fast entry with the object known (mon_backend_ops.fast, after
 * sim_line_fast declined): an L1 hit on one of the lines the core accessed
 * last is simulated and counted here, inline, without a call or a struct
 * of events, and the line's entry takes the object's tag (its old one was
 * none or stale, or sim_line_fast would have counted it); anything else
 * goes to sim_piece.
 */
static void sim_fast(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc)
{
	struct mon_sim_core *c = t->backend_data;

	if (mon_likely(c != NULL)) {
		unsigned w = MON_FAST_WAY(wfs);
		uintptr_t tag[2];
		int hit;

		mon_rt_enter(t);
		line_tag(t, c, addr, w, tag);
		hit = sim_hit(c, addr, MON_FAST_SZ(wfs), (wfs & MON_ACC_WRITE) != 0,
			      t->cache.obj[w]->idx, tag);
		if (mon_likely(hit))
			count_l1_hit(t->cache.counts[w], wfs, c);
		mon_rt_leave(t);
		if (mon_likely(hit))
			return;
	}
	sim_piece(t, addr, wfs, pc);
}

/* sim_line_fast's hit on entry j of c->l0 (mru: j is the last line's), when its
 * tag names a live object (entry j is then c->last_j); else *retry.
 * no_calls: as sim_l0_hit_at's. */
static inline __attribute__((always_inline)) int line_hit(struct mon_sim_core *c, uint64_t line,
							   int j, int mru, uint32_t wfs, int *retry,
							   int no_calls)
{
	const struct mon_obj *o = (const struct mon_obj *)c->l0.tag[j][0];

	if (mon_likely(o != NULL) &&
	    mon_likely(__atomic_load_n(&o->flags, __ATOMIC_RELAXED) & MON_OBJF_LIVE))
		return sim_l0_hit_at(c, line, j, mru, (wfs & MON_ACC_WRITE) != 0, o->idx,
				     no_calls);
	*retry = 1;
	return 0;
}

/* After a line_hit: counts it into the counter vector of the hit's entry
 * (c->last_j now: loaded here, not kept in a register or a stack slot
 * through the hit) and leaves the core and the runtime. */
static inline __attribute__((always_inline)) void line_hit_done(struct mon_thread *t,
								 struct mon_sim_core *c,
								 uint32_t wfs)
{
	uint64_t *v = (uint64_t *)c->l0.tag[c->last_j][1];

	sim_core_exit(c, 0);
	count_l1_hit(v, wfs, c);
	mon_rt_leave(t);
}

/*
 * The C line entry without a frame pointer (the runtime is built with one, for
 * site capture, which never walks through it: it runs no interposer): one
 * more register for the hit path, three instructions less per access.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define LINE_FAST_ATTR __attribute__((optimize("omit-frame-pointer")))
#else
#define LINE_FAST_ATTR
#endif

/* The lean path for c, lean its c->lean as a constant (SIM_LEAN_FIT_*:
 * sim_lean_body inline, the associativities constants), or -1: read it
 * (mon_sim_access_lean, a call). */
static inline __attribute__((always_inline)) int lean_access(struct mon_sim_core *c,
							      uintptr_t addr, uint32_t size,
							      int is_write, uint32_t cookie,
							      const int lean)
{
	switch (lean) {
	case SIM_LEAN_FIT_8_16:
		return sim_lean_body(c, addr, size, is_write, cookie, 8, 16);
	case SIM_LEAN_FIT_12_16:
		return sim_lean_body(c, addr, size, is_write, cookie, 12, 16);
	case SIM_LEAN_FIT:
		return sim_lean_body(c, addr, size, is_write, cookie, 0, 0);
	}
	return mon_sim_access_lean(c, addr, size, is_write, cookie);
}

/* line_rest's access through the general miss path, the core held and
 * in_rt raised, c->cur_tag set, w the object's way: out of line, so that
 * the lean path's callers save no registers for it (~17 instructions a
 * miss of pushes and pops, chase) */
static __attribute__((noinline)) void held_general(struct mon_thread *t, struct mon_sim_core *c,
						   uintptr_t addr, uint32_t wfs, uintptr_t pc,
						   unsigned w)
{
	uint64_t *const v = t->cache.counts[w];
	unsigned flags = MON_FAST_FLAGS(wfs);
	int wr = (flags & MON_ACC_WRITE) != 0;
	struct mon_sim_events e;

	if (!mon_sim_access_held(c, addr, MON_FAST_SZ(wfs), wr, t->cache.obj[w]->idx, &e))
		count_plain(v, flags & MON_ACC_READ, (unsigned)wr, e.est_cycles);
	else
		count_events(t, c, v, &e, flags, pc);
	mon_rt_leave(t);
}

/*
 * The line entries' hit (the assembly's, line_hit's) on a remembered line
 * whose tag names a live object, for an access they left only because the
 * 3C shadow needed an update (a call, which they do not make): the same
 * hit with the call, counted into the tag's vector. The core held and
 * in_rt raised by the caller; 1 with both left, else 0 with nothing
 * changed. Without it such a hit took the object cache and the general
 * path (jacobi under the design preset: ~495 instructions per access).
 */
static inline __attribute__((always_inline)) int line_hit_shadow(struct mon_thread *t,
								  struct mon_sim_core *c,
								  uintptr_t addr, uint32_t wfs)
{
	uint64_t line = addr >> c->l1.line_shift;
	int mru, j, stale = 0;

	if ((!c->solo && __atomic_load_n(&c->mail, __ATOMIC_RELAXED)) ||
	    (j = sim_l0_find(c, line, &mru)) < 0 || !line_hit(c, line, j, mru, wfs, &stale, 0))
		return 0;
	line_hit_done(t, c, wfs);
	return 1;
}

/*
 * The line entry's miss half: an access the L1 hit did not take, held
 * (the core entered and in_rt raised by the caller) or not, retry when the
 * line was found and would hit but for its tag (see mon_sim_line_fast_c);
 * lean as lean_access's.
 */
static inline __attribute__((always_inline)) void line_rest(struct mon_thread *t,
							     struct mon_sim_core *c, uintptr_t addr,
							     uint32_t wfs, uintptr_t pc, int held,
							     int retry, const int lean)
{
	int w;

	if (held && !retry && c->three_c && line_hit_shadow(t, c, addr, wfs))
		return;
	/* what mon_access_cached would do first, without the calls */
	if (mon_likely((w = mon_objcache_way(t, addr)) >= 0) &&
	    mon_likely(addr + MON_FAST_SZ(wfs) <= t->cache.end[w]) && mon_likely(t->cache.counts[w])) {
		if (mon_likely(held && !retry)) {
			/* a miss, or a line not remembered: still in the core and
			 * in the runtime, straight to the simulator's miss path */
			line_tag(t, c, addr, (unsigned)w, c->cur_tag);
			if (lean < 0 ? c->lean != SIM_LEAN_NO : lean != SIM_LEAN_NO) {
				unsigned flags = MON_FAST_FLAGS(wfs);
				int o = lean_access(c, addr, MON_FAST_SZ(wfs),
						    (flags & MON_ACC_WRITE) != 0,
						    t->cache.obj[w]->idx, lean);
				if (mon_likely(o >= 0)) {
					count_lean(t->cache.counts[w], flags, (unsigned)o, c);
					mon_batch_lean_miss(t);
					if (mon_unlikely(--c->lf.tick == 0))
						mon_sim_lf_look(t, c);
					mon_rt_leave(t);
					return;
				}
			}
			held_general(t, c, addr, wfs, pc, (unsigned)w);
			return;
		}
		if (held) {
			sim_core_exit(c, 0);
			mon_rt_leave(t);
		}
		if (mon_unlikely(retry))
			sim_fast(t, addr, wfs | (uint32_t)w << 8, pc);
		else
			sim_piece(t, addr, wfs | (uint32_t)w << 8, pc);
		return;
	}
	if (held) {
		sim_core_exit(c, 0);
		mon_rt_leave(t);
	}
	mon_access_cached(t, addr, wfs, pc);
}

/*
 * The line entry (mon_backend_ops.line_fast), before the object cache: an
 * L1 hit on one of the lines the core accessed last, whose entry's tag
 * names a live object holding the whole line, is simulated and counted
 * into the tag's counter vector - one line comparison finds the line in
 * the simulator and its object. What mon_access would have found: objects
 * never overlap, an object's range never changes, and a record that was
 * accessed (every cached one) is never recycled, so a live one is still
 * the object at that line (the object cache relies on the same). The
 * tags are the core's owner thread's (mon_sim_core_get clears them for a
 * new owner); a shared core never takes this path (sim_core_try_enter).
 * Anything else: the object cache (inline, mon_objcache_way), then
 * sim_piece, or sim_fast when the line was found and would hit but for
 * its tag (sim_fast tries it again and gives it the tag), or
 * mon_access_cached when the object cache does not settle it.
 */
LINE_FAST_ATTR void mon_sim_line_fast_c(struct mon_thread *t, uintptr_t addr, uint32_t wfs,
					 uintptr_t pc)
{
	struct mon_sim_core *c = t->backend_data;
	int retry = 0, held = 0;

	if (mon_likely(c != NULL)) {
		uint32_t shift = c->l1.line_shift;
		uint64_t line = addr >> shift;
		int hit = 0, j;

		mon_rt_enter(t);
		/* sz >= 1, and the access within one MON_LINE_SIZE line
		 * (mon_access): within one L1 line as well when that is no
		 * smaller */
		if (mon_likely(shift >= MON_LINE_SHIFT ||
			       line == (addr + MON_FAST_SZ(wfs) - 1) >> shift) &&
		    mon_likely(sim_core_try_enter(c))) {
			held = 1;
			if (c->solo || !__atomic_load_n(&c->mail, __ATOMIC_RELAXED)) {
				/* the line of the last access, else a search: two
				 * copies of the hit code, each for a constant mru */
				if (line == c->last_line)
					hit = line_hit(c, line, (int)c->last_j, 1, wfs, &retry, 1);
				else if ((j = sim_l0_search(c, line)) >= 0)
					hit = line_hit(c, line, j, 0, wfs, &retry, 1);
			}
			if (mon_likely(hit)) {
				line_hit_done(t, c, wfs);
				return;
			}
		}
		if (!held)
			mon_rt_leave(t);
	}
	line_rest(t, c, addr, wfs, pc, held, retry, -1);
}

/* The miss half for each lean kind, the kind a constant: one function
 * with the lean path inline, one call per miss (two, through
 * mon_sim_access_lean, had two prologues and the argument passing: ~25
 * instructions a miss, stream) */
#define LINE_MISS_VARIANT(name, lean)                                                  \
	static __attribute__((noinline)) void name(struct mon_thread *t, uintptr_t addr, \
						   uint32_t wfs, uintptr_t pc)            \
	{                                                                               \
		line_rest(t, t->backend_data, addr, wfs, pc, 1, 0, lean);              \
	}
LINE_MISS_VARIANT(line_miss_8_16, SIM_LEAN_FIT_8_16)
LINE_MISS_VARIANT(line_miss_12_16, SIM_LEAN_FIT_12_16)
LINE_MISS_VARIANT(line_miss_any, SIM_LEAN_FIT)
LINE_MISS_VARIANT(line_miss_general, SIM_LEAN_NO)
#undef LINE_MISS_VARIANT

/* The miss half alone, for the assembly entry and the batch: the core held
 * and in_rt raised, the access no hit of the remembered lines. */
LINE_FAST_ATTR void mon_sim_line_miss_c(struct mon_thread *t, uintptr_t addr, uint32_t wfs,
					 uintptr_t pc)
{
	const struct mon_sim_core *c = t->backend_data;

	switch (c->lean) {
	case SIM_LEAN_FIT_8_16:
		line_miss_8_16(t, addr, wfs, pc);
		return;
	case SIM_LEAN_FIT_12_16:
		line_miss_12_16(t, addr, wfs, pc);
		return;
	case SIM_LEAN_FIT:
		line_miss_any(t, addr, wfs, pc);
		return;
	}
	line_miss_general(t, addr, wfs, pc);
}

#undef PUT

size_t mon_backend_sim_geometry(char *buf, size_t len)
{
	struct mon_sim *s = __atomic_load_n(&sim, __ATOMIC_ACQUIRE);

	return s ? mri_geom_format(mon_sim_geom_of(s), buf, len) : 0;
}

/* For rt.c's fork handler: the child's simulator must not wait for the
 * threads that did not survive. */
void mon_backend_sim_forget(struct mon_thread *t)
{
	const struct mon_backend_ops *b = __atomic_load_n(&mon_backend, __ATOMIC_ACQUIRE);
	struct mon_sim_core *c;

	if (b != &mon_backend_sim && b != &mon_backend_sim_c && b != &mon_backend_sim_whatif &&
	    b != &mon_backend_sim_seq)
		return;
	c = t->backend_data;
	/* a shared core's tags are never read (mon_sim_core_get) */
	if (!c || (__atomic_load_n(&c->shared, __ATOMIC_RELAXED) & SIM_SHARED))
		return;
	memset(c->l0.tag, 0, sizeof(c->l0.tag));
	c->cur_tag[0] = c->cur_tag[1] = 0;
	mon_sim_core_lf_forget(c);
}

void mon_backend_sim_sampled(int on)
{
	struct mon_sim *s;

	__atomic_store_n(&settle_cold, on, __ATOMIC_RELAXED);
	s = __atomic_load_n(&sim, __ATOMIC_ACQUIRE);
	if (s)
		mon_sim_settle_cold(s, on);
}

uint64_t mon_backend_sim_l2_lines(void)
{
	struct mon_sim *s = __atomic_load_n(&sim, __ATOMIC_ACQUIRE);
	const struct mri_geom *g = s ? mon_sim_geom_of(s) : NULL;

	if (!g)
		return 0;
	/* without an L2 the L1 is the private level to refresh */
	return g->l2.sz_bytes ? g->l2.sz_bytes / g->l2.line_bytes
			      : g->l1d.sz_bytes / g->l1d.line_bytes;
}

void mon_backend_sim_after_fork(void)
{
	struct mon_sim *s = __atomic_load_n(&sim, __ATOMIC_ACQUIRE);

	if (s)
		mon_sim_after_fork(s);
}

/* The backend, with the line entry of this machine (SIM_LINE_FAST), and
 * the same with the C line entry, which AMEBA_SIM_ASM=0 selects (rt.c): the
 * tests compare the two. */
int mon_sim_batch_ok(const struct mon_thread *t)
{
	const struct mon_sim_core *c = t->backend_data;

	/* (not with the line filter on: the hooks consult it only undiverted) */
	return c && c->solo && c->lean && !__atomic_load_n(&c->shared, __ATOMIC_RELAXED) &&
	       !whatif.kind && !t->seq && !__atomic_load_n(&c->lf.on, __ATOMIC_RELAXED);
}

#define SIM_OPS(line_fast_fn)                                               \
	{                                                                   \
		.name = "sim", .metrics = sim_metrics,                      \
		.nr_metrics = sizeof(sim_metrics) / sizeof(sim_metrics[0]), \
		.activate = sim_activate, .thread_start = sim_thread_start, \
		.thread_exit = sim_thread_exit, .access = sim_access,       \
		.fast = sim_fast, .line_fast = line_fast_fn,                \
	}
const struct mon_backend_ops mon_backend_sim = SIM_OPS(SIM_LINE_FAST);
const struct mon_backend_ops mon_backend_sim_c = SIM_OPS(mon_sim_line_fast_c);
/* AMEBA_WHATIF: every access through sim_access (no inline paths) */
const struct mon_backend_ops mon_backend_sim_whatif = {
	.name = "sim", .metrics = sim_metrics,
	.nr_metrics = sizeof(sim_metrics) / sizeof(sim_metrics[0]),
	.activate = sim_activate, .thread_start = sim_thread_start,
	.thread_exit = sim_thread_exit, .access = sim_access,
};

/* Ordered mode (seq.c): the application's threads log their accesses; the
 * merger thread calls sim_access (mon_backend_sim's) for each, in simulated
 * time order. No inline entries: every access goes to the log. */
static void seq_thread_start(struct mon_thread *t)
{
	mon_seq_thread_start(t);
}

static void seq_thread_exit(struct mon_thread *t)
{
	mon_seq_thread_exit(t);
}

static void seq_access(struct mon_thread *t, struct mon_obj *obj, uintptr_t addr, uint32_t sz,
		       unsigned flags, uintptr_t pc, struct mon_events *ev)
{
	mon_seq_access(t, obj, addr, sz, flags, pc, ev->counts);
}

const struct mon_backend_ops mon_backend_sim_seq = {
	.name = "sim", .metrics = sim_metrics,
	.nr_metrics = sizeof(sim_metrics) / sizeof(sim_metrics[0]),
	.thread_start = seq_thread_start, .thread_exit = seq_thread_exit, .access = seq_access,
};
