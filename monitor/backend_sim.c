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
 *   AMEBA_SIM_ASM  0 uses the C line entry and the C filter miss instead of
 *                  the x86-64 assembly ones (same counts; read when the
 *                  backend is chosen)
 *   AMEBA_SIM_SSE41  0 chooses the L1's victim with SSE2 alone where the
 *                  host has SSE4.1 (same counts; for tests)
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
int mon_sim_lf_cold;		/* sampled mode settles cold LLC sets
				 * (mon_backend_sim_sampled): the assembly miss
				 * leaves those misses to the C */

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

/*
 * The line filter's outcome rows (backend_sim.h SLOT_OUTCOME): what
 * count_lean and mon_sim_count_l1_hit add for each kind, the latencies the
 * cores' lean_cyc and hit cycles take (sim_lean_init, lf_init: the
 * geometry's, no TLB part where the filter runs). Docs: simulator.md,
 * "Counting by outcome".
 */
static void outcome_rows(const struct mri_geom_lat *lat)
{
	struct mon_outcome_row r[MON_OUTCOMES];

	memset(r, 0, sizeof(r));
	for (int k = 0; k < MON_OUTCOMES; k++) {
		const int lvl = k >> 1, wr = k & 1;
		const uint64_t cyc = lvl == SIM_LEAN_LLC ? lat->llc_hit :
				     lvl == SIM_LEAN_MEM ? lat->mem_local : lat->l1_hit;
		struct mon_outcome_row *o = &r[k];
#define ROW(metric, n) (o->slot[o->nr] = slot_of[metric], o->add[o->nr++] = (n))
		ROW(AMEBA_M_MEM_REF, 1);
		ROW(wr ? AMEBA_M_WRITES : AMEBA_M_READS, 1);
		ROW(AMEBA_M_EST_CYCLES, cyc);
		if (lvl) {
			ROW(AMEBA_M_L1D_MISS, 1);
			ROW(wr ? AMEBA_M_L1D_MISS_WR : AMEBA_M_L1D_MISS_RD, 1);
			ROW(AMEBA_M_L2_MISS, 1);
			ROW(wr ? AMEBA_M_L2_MISS_WR : AMEBA_M_L2_MISS_RD, 1);
			ROW(AMEBA_M_EST_STALL_CYCLES, cyc - lat->l1_hit);
		}
		if (lvl == SIM_LEAN_MEM) {
			ROW(AMEBA_M_LLC_MISS, 1);
			ROW(wr ? AMEBA_M_LLC_MISS_WR : AMEBA_M_LLC_MISS_RD, 1);
			ROW(AMEBA_M_MEM_LOCAL, 1);
		}
#undef ROW
	}
	_Static_assert(SIM_LEAN_LLC == 1 && SIM_LEAN_MEM == 2 && MON_OUTCOMES == 6 &&
			       MON_OUTCOME_ROW >= 11,
		       "backend_sim.h SLOT_OUTCOME's kinds");
	mon_counts_outcomes(r, MON_OUTCOMES);
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
	mon_sim_sse41(mon_sim_env_num("AMEBA_SIM_SSE41", 0, 1) != 0);
	mon_sim_settle_cold(s, __atomic_load_n(&mon_sim_lf_cold, __ATOMIC_RELAXED));
	/* the outcome slots whether or not a filter will use them: the
	 * runtime's counter arenas come from the program's heap, and vectors
	 * of one length keep its blocks where they are with the filter on or
	 * off, the lean path on or off, the TLB model on or off (test
	 * sim_line_filter compares them: batch_sync's reallocs moved by a
	 * line, a miss from one block to the next) */
	if (mon_nr_slots != SLOT_OUTCOME) {
		mon_log("sim: %d counter slots, the line filter's outcomes expect %d "
			"(fix SLOT_OUTCOME in backend_sim.h to follow sim_metrics)",
			mon_nr_slots, (int)SLOT_OUTCOME);
		mon_sim_destroy(s);
		return AMEBA_EINVAL;
	}
	outcome_rows(&g.lat);
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

	if (t == mon_self)
		mon_sim_lf = MON_SIM_LF_NONE;
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

/* The metric of an L1 miss's 3C class (MON_SIM_3C_*, not NONE) */
static inline int metric_of_3c(unsigned cls)
{
	return cls == MON_SIM_3C_COMPULSORY ? AMEBA_M_COMPULSORY_MISS
	       : cls == MON_SIM_3C_CAPACITY ? AMEBA_M_CAPACITY_MISS
					    : AMEBA_M_CONFLICT_MISS;
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
			if (e->cls3c)
				PUT(metric_of_3c(e->cls3c), 1);
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

__attribute__((noinline)) void mon_sim_report(struct mon_thread *t, struct mon_sim_core *c,
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

/* The filter installed last: the only one that can be on (a second thread
 * turns it off for good, its entries forgotten) */
static struct mon_sim_lf *lf_last;

/*
 * Object o has died (mon_obj_dead_hook, objmap.c): the entries of the
 * filter whose tag is o - in the slots of the lines it touches (whole
 * lines, and the split entries of the lines it shares), or anywhere when
 * it touches as many lines as the filter has slots - forgotten, and the
 * assembly miss's memo of it (sim.h). A hit through the filter then needs
 * no test that its object lives (a block freed and its address reused at
 * once: the hit would count into the dead record). Entries are written
 * only with a live object's tag (the object cache's and the remembered
 * lines' tests), so every entry's object lives. On the owner's thread, the
 * only program thread while the filter is on; from another (a runtime
 * thread) one store of the line as a hit reads it, as a flag cleared
 * during a hit was before.
 */
static void lf_obj_dead(const struct mon_obj *o)
{
	struct mon_sim_lf *f = __atomic_load_n(&lf_last, __ATOMIC_ACQUIRE);
	uintptr_t start = __atomic_load_n(&o->start, __ATOMIC_RELAXED);
	uintptr_t end = __atomic_load_n(&o->end, __ATOMIC_RELAXED);
	uint64_t first = start >> MON_LINE_SHIFT, stop = ((end - 1) >> MON_LINE_SHIFT) + 1;
	const uint64_t n = 1ull << MON_SIM_LF_BITS;

	if (!f || end <= start)
		return;
	for (int k = 0; k < 2; k++)
		if (f->memo[k].obj == o)
			__atomic_store_n(&f->memo[k].hi, 0, __ATOMIC_RELAXED);
	if (stop - first >= n) {
		for (uint64_t i = 0; i < n; i++)
			if (f->ent[i].tag[0] == (uintptr_t)o)
				__atomic_store_n(&f->ent[i].line, UINT64_MAX, __ATOMIC_RELAXED);
		return;
	}
	for (uint64_t line = first; line < stop; line++) {
		struct mon_sim_lf_ent *e = &f->ent[mon_sim_lf_slot(line)];

		if (e->tag[0] == (uintptr_t)o)
			__atomic_store_n(&e->line, UINT64_MAX, __ATOMIC_RELAXED);
	}
}

/* t's line filter (sim.h): its core c's, when t owns c (ordered mode's
 * merger starts others') and b has a line entry (not what-if's) */
static void lf_install(struct mon_thread *t, struct mon_sim_core *c,
		       const struct mon_backend_ops *b)
{
	struct mon_sim_lf *f;

	if (t == mon_self && (b == &mon_backend_sim || b == &mon_backend_sim_c) && !mon_sim_whatif_kind &&
	    /* the assembly miss with the assembly line entry (AMEBA_SIM_ASM=0:
	     * the C one, which the tests compare) */
	    !t->seq && (f = mon_sim_lf_install(c, t->id, b, b == &mon_backend_sim && sim_sse41))) {
		mon_sim_lf = f;
		__atomic_store_n(&lf_last, mon_sim_lf, __ATOMIC_RELEASE);
		__atomic_store_n(&mon_obj_dead_hook, lf_obj_dead, __ATOMIC_RELEASE);
		mon_sim_lf->thread = t;	/* the hooks' mon_self, one load nearer */
		mon_sim_lf->tick = mon_sim_lf->window = mon_sim_lf_window();
		mon_sim_lf->clock0 = c->l1.clock;
		mon_sim_lf->notes = 0;
	}
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
	mon_sim_report(t, c, &e, flags, pc, ev);
}

static void sim_access(struct mon_thread *t, struct mon_obj *obj, uintptr_t addr, uint32_t sz,
		       unsigned flags, uintptr_t pc, struct mon_events *ev)
{
	struct mon_sim_core *c = t->backend_data;

	if (mon_unlikely(!c)) {
		sim_thread_start(t);
		c = t->backend_data;
		if (!c)
			return;
	}
	if (mon_unlikely(mon_sim_whatif_kind))
		mon_sim_whatif_access(t, c, obj, addr, sz, flags, pc, ev);
	else
		sim_plain(t, c, obj, addr, sz, flags, pc, ev);
}

/*
 * Object cache way w's tag for the L1 line of addr (mon_sim_access_tagged,
 * sim_hit): the object and t's counter vector of it, when the whole line
 * lies in the object, so that sim_line_fast may count any access within
 * that line into them while the object lives; else none.
 */
static inline void line_tag(const struct mon_thread *t, uint32_t shift, uintptr_t addr, unsigned w,
			    uintptr_t tag[2])
{
	uintptr_t lo = addr & ~(((uintptr_t)1 << shift) - 1);
	uintptr_t hi = lo + ((uintptr_t)1 << shift);
	int whole = lo >= t->cache.start[w] && hi - 1 <= t->cache.end[w] - 1 && hi > lo;

	tag[0] = whole ? (uintptr_t)t->cache.obj[w] : 0;
	tag[1] = whole ? (uintptr_t)t->cache.counts[w] : 0;
}

/* The events of mon_sim_access_lean's outcome o (SIM_LEAN_*) into v, as
 * report_to counts the same access's events: an L1 miss missed the
 * private caches but where the L2 hit (SIM_LEAN_L2), one node (memory is
 * local), no coherence; a miss's 3C class, if any, in the outcome. */
static inline __attribute__((always_inline)) void count_lean(uint64_t *v, unsigned flags,
							      unsigned o,
							      const struct mon_sim_core *c)
{
	unsigned wr = (flags & MON_ACC_WRITE) >> 1, lvl = o & 3, cls = o >> SIM_LEAN_3C_SHIFT;
	uint32_t cyc = c->lean_cyc[o & SIM_LEAN_CYC];

	mon_sim_count_plain(v, flags & MON_ACC_READ, wr, cyc);
	if (mon_likely(!o))
		return;
	if (lvl) {
		mon_count_add(v, slot_of[AMEBA_M_L1D_MISS], 1);
		mon_count_add(v, wr ? slot_of[AMEBA_M_L1D_MISS_WR] : slot_of[AMEBA_M_L1D_MISS_RD], 1);
		if (lvl != SIM_LEAN_L2) {
			mon_count_add(v, slot_of[AMEBA_M_L2_MISS], 1);
			mon_count_add(v, wr ? slot_of[AMEBA_M_L2_MISS_WR]
					    : slot_of[AMEBA_M_L2_MISS_RD], 1);
		}
		if (lvl == SIM_LEAN_MEM) {
			mon_count_add(v, slot_of[AMEBA_M_LLC_MISS], 1);
			mon_count_add(v, wr ? slot_of[AMEBA_M_LLC_MISS_WR]
					    : slot_of[AMEBA_M_LLC_MISS_RD], 1);
			mon_count_add(v, slot_of[AMEBA_M_MEM_LOCAL], 1);
		}
	}
	if (o & SIM_LEAN_WALK)
		mon_count_add(v, slot_of[AMEBA_M_TLB_MISS], 1);
	if (cls)
		mon_count_add(v, slot_of[metric_of_3c(cls)], 1);
	mon_count_add(v, slot_of[AMEBA_M_EST_STALL_CYCLES], cyc - c->l1_hit_cycles);
}

/* mon_sim_seq_access's every case but a plain L1 hit (a call of its own:
 * the hit path then saves no register). c: the core the merger passed
 * (NULL: none yet - sim_access starts it). The code address is 0: nothing
 * is armed, and only the armed consumers (credit_recv's) look at it. */
static __attribute__((noinline)) uint64_t seq_access_rest(struct mon_thread *t,
							  struct mon_sim_core *c, uint32_t cookie,
							  uintptr_t addr, uint32_t wfs, uint64_t *v)
{
	const unsigned flags = MON_FAST_FLAGS(wfs);
	const uint32_t sz = MON_FAST_SZ(wfs);
	struct mon_sim_events e;
	struct mon_events ev;	/* counts set: its event arrays stay unused */

	ev.nr = 0;
	ev.counts = v;
	if (mon_unlikely(!c || mon_sim_whatif_kind)) {
		uint64_t before = __atomic_load_n(&v[SLOT_EST_CYCLES], __ATOMIC_RELAXED);

		sim_access(t, mon_objmap_get(cookie), addr, sz, flags, 0, &ev);
		return __atomic_load_n(&v[SLOT_EST_CYCLES], __ATOMIC_RELAXED) - before;
	}
	/* the filter's geometry: the lean path where no directory is involved
	 * (which writes the merger's filter entry itself), counted into the
	 * metrics as the merger's other paths count (counting by outcome stays
	 * undone: docs/simulator.md, "The merger's lean path") */
	if (c->lean == SIM_LEAN_FIT_8_16_64) {
		int o = mon_sim_access_lean_coh(c, addr, sz, (flags & MON_ACC_WRITE) != 0, cookie);

		if (o >= 0) {
			count_lean(v, flags, (unsigned)o, c);
			return c->lean_cyc[o & SIM_LEAN_CYC];
		}
	}
	if (!mon_sim_access_rest(c, addr, sz, (flags & MON_ACC_WRITE) != 0, cookie, &e))
		mon_sim_count_plain(v, flags & MON_ACC_READ, (flags & MON_ACC_WRITE) >> 1, e.est_cycles);
	else
		mon_sim_report(t, c, &e, flags, 0, &ev);
	sim_mf_note(c, addr, sz);
	return e.est_cycles;
}

/*
 * Ordered mode's merger (seq_merge.c): t's logged access to the object
 * of index cookie, simulated and counted into v, t's counter vector of that
 * object - sim_access without the object record (only the what-if runs
 * need it), the indirect call and the events' copy; a plain L1 hit inline
 * (sim_hit), with no call. Nothing armed. Returns the access's estimated
 * cycles (at least 1), the line's entry in the merger's filter written.
 */
uint64_t mon_sim_seq_access(struct mon_thread *t, void *core, uint32_t cookie, uintptr_t addr,
			    uint32_t wfs, uint64_t *v)
{
	struct mon_sim_core *c = core;
	uint64_t cyc;

	if (mon_likely(c && !mon_sim_whatif_kind)) {
		if (sim_hit(c, addr, MON_FAST_SZ(wfs), (wfs & MON_ACC_WRITE) != 0, cookie, NULL)) {
			sim_mf_note(c, addr, MON_FAST_SZ(wfs));
			mon_sim_count_l1_hit(v, wfs, c);
			return c->l1_hit_cycles ? c->l1_hit_cycles : 1;
		}
	}
	cyc = seq_access_rest(t, c, cookie, addr, wfs, v);
	return cyc ? cyc : 1;
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
	} else if (line_tag(t, c->l1.line_shift, addr, w, tag),
		   !mon_sim_access_tagged(c, addr, MON_FAST_SZ(wfs), wr, t->cache.obj[w]->idx, &e,
					  tag[0], tag[1])) {
		mon_sim_count_plain(v, flags & MON_ACC_READ, (unsigned)wr, e.est_cycles);
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
		line_tag(t, c->l1.line_shift, addr, w, tag);
		hit = sim_hit(c, addr, MON_FAST_SZ(wfs), (wfs & MON_ACC_WRITE) != 0,
			      t->cache.obj[w]->idx, tag);
		if (mon_likely(hit))
			mon_sim_count_l1_hit(t->cache.counts[w], wfs, c);
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
				     no_calls, c->l0.tag[j]);
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
	mon_sim_count_l1_hit(v, wfs, c);
	mon_rt_leave(t);
}


/* count_lean's counts as one add (the filter's miss, whose vectors have
 * the outcome slots: SLOT_OUTCOME); o without a TLB part (c64's) */
static inline __attribute__((always_inline)) void count_outcome(uint64_t *v, unsigned flags,
								 unsigned o)
{
	mon_count_add(v, SLOT_OUTCOME + (int)(o & 3) * 2 + ((flags & MON_ACC_WRITE) != 0), 1);
}

/* The lean path for c, lean its c->lean as a constant (SIM_LEAN_FIT_*:
 * sim_lean_body inline, the associativities constants), or -1: read it
 * (mon_sim_access_lean, a call). */
static inline __attribute__((always_inline)) int lean_access(struct mon_sim_core *c,
							      uintptr_t addr, uint32_t size,
							      int is_write, uint32_t cookie,
							      const int lean, const int solo,
							      uintptr_t tag0, uintptr_t tag1)
{
	switch (lean) {
#define LEAN_CASE(kind, name, a1, a3, c64, l2)                                              \
	case kind:                                                                          \
		return sim_lean_body(c, addr, size, is_write, cookie, a1, a3, c64, l2, solo, tag0, \
				     tag1, 0);
		SIM_LEAN_KINDS(LEAN_CASE)
#undef LEAN_CASE
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
		mon_sim_count_plain(v, flags & MON_ACC_READ, (unsigned)wr, e.est_cycles);
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

/* Whether addr's whole 64-byte line lies in the live object of the object
 * cache's hint (line_rest's and lf_miss_whole's usual miss) */
static inline __attribute__((always_inline)) int hint_whole64(const struct mon_thread *t,
							       uintptr_t addr)
{
	uint32_t h = t->cache.hint;
	uintptr_t lo = addr & ~(uintptr_t)63;

	return lo >= t->cache.start[h] && lo + 64 <= t->cache.end[h] &&
	       (__atomic_load_n(&t->cache.obj[h]->flags, __ATOMIC_RELAXED) & MON_OBJF_LIVE);
}

/*
 * The filter's miss (line_rest, c held) of an access at addr to object
 * cache way w, whose object does not hold the whole 64-byte line: the
 * tag words for a split entry (sim.h), the object's bytes of the line in
 * c->lf, when the filter is on (it changes only with the core held) and
 * the object lives (an entry's object always does: lf_obj_dead); else
 * the words are left as they are (no entry).
 */
static inline void lf_split_tag(const struct mon_thread *t, struct mon_sim_core *c,
				uintptr_t addr, unsigned w, uintptr_t *tag0, uintptr_t *tag1)
{
	uintptr_t lo = addr & ~(uintptr_t)(MON_LINE_SIZE - 1), hi = lo + MON_LINE_SIZE;
	uintptr_t start = t->cache.start[w], end = t->cache.end[w];

	if (!__atomic_load_n(&c->lf.on, __ATOMIC_RELAXED) ||
	    !(__atomic_load_n(&t->cache.obj[w]->flags, __ATOMIC_RELAXED) & MON_OBJF_LIVE))
		return;
	c->lf.split_lo = (uint8_t)((start > lo ? start : lo) - lo);
	c->lf.split_hi = (uint8_t)((end < hi ? end : hi) - lo);
	*tag0 = (uintptr_t)t->cache.obj[w] | MON_SIM_LF_TAG_SPLIT;
	*tag1 = (uintptr_t)t->cache.counts[w];
}

/* line_rest's held for a core its caller has seen solo while holding it
 * (solo changes only with the core held: the lean path need not look again) */
#define LINE_HELD_SOLO 2

/*
 * The line entry's miss half: an access the L1 hit did not take, held
 * (the core entered and in_rt raised by the caller; LINE_HELD_SOLO) or
 * not, retry when the line was found and would hit but for its tag (see
 * mon_sim_line_fast_c); lean as lean_access's.
 */
static inline __attribute__((always_inline)) void line_rest(struct mon_thread *t,
							     struct mon_sim_core *c, uintptr_t addr,
							     uint32_t wfs, uintptr_t pc, int held,
							     int retry, const int lean)
{
	int w, whole = 0;

	/* a lean kind (the callers' constant, c->lean) uses the shadow itself
	 * (sim_lean_body) */
	if ((lean < 0 || lean == SIM_LEAN_NO) && held && !retry && c->three_c &&
	    line_hit_shadow(t, c, addr, wfs))
		return;
	if (lean == SIM_LEAN_FIT_8_16_64 && held && !retry) {
		/* the usual miss: its whole 64-byte line in the live object of
		 * the cache's hint, which then holds the access (within one line
		 * on every path here) and is its tag - one range test for the
		 * object cache's and the line tag's (~10 instructions) */
		w = (int)t->cache.hint;
		whole = hint_whole64(t, addr);
	}
	/* what mon_access_cached would do first, without the calls; the solo
	 * core's object cache miss fills the way here, the core held (solo
	 * changes only so: nobody waits for it), as objcache_fill would (but
	 * for a fold inbox to take: that path) - so that a program of many
	 * small blocks takes the lean path after it, not the general one
	 * (Lua's interpreter: ~900 instructions a miss of the object cache
	 * through mon_access_cached) */
	if (!whole && (w = mon_objcache_way(t, addr)) < 0 && held &&
	    (held == LINE_HELD_SOLO || c->solo) && !retry &&
	    !__atomic_load_n(&mon_fold_mail, __ATOMIC_RELAXED))
		w = mon_objcache_fill(t, addr, MON_FAST_SZ(wfs));
	if (mon_likely(whole || (w >= 0 && addr + MON_FAST_SZ(wfs) <= t->cache.end[w])) &&
	    mon_likely(t->cache.counts[w])) {
		if (mon_likely(held && !retry)) {
			/* a miss, or a line not remembered: still in the core and
			 * in the runtime, straight to the simulator's miss path;
			 * the tag of a whole line in locals (the lean path's
			 * entry takes them from there), else in c->cur_tag */
			uintptr_t tag0, tag1;

			if (whole) {
				tag0 = (uintptr_t)t->cache.obj[w];
				tag1 = (uintptr_t)t->cache.counts[w];
			} else {
				line_tag(t, lean == SIM_LEAN_FIT_8_16_64 ? 6 : c->l1.line_shift,
					 addr, (unsigned)w, c->cur_tag);
				tag0 = c->cur_tag[0];
				tag1 = c->cur_tag[1];
				if (held == LINE_HELD_SOLO && lean == SIM_LEAN_FIT_8_16_64 && !tag0)
					lf_split_tag(t, c, addr, (unsigned)w, &tag0, &tag1);
			}
			if (lean < 0 ? c->lean != SIM_LEAN_NO : lean != SIM_LEAN_NO) {
				unsigned flags = MON_FAST_FLAGS(wfs);
				int o = lean_access(c, addr, MON_FAST_SZ(wfs),
						    (flags & MON_ACC_WRITE) != 0,
						    t->cache.obj[w]->idx, lean,
						    held == LINE_HELD_SOLO, tag0, tag1);
				if (mon_likely(o >= 0)) {
					/* the filter's miss: by outcome (its level
					 * only: c64 has no TLB model) */
					if (held == LINE_HELD_SOLO && lean == SIM_LEAN_FIT_8_16_64)
						count_outcome(t->cache.counts[w], flags, (unsigned)o);
					else
						count_lean(t->cache.counts[w], flags, (unsigned)o, c);
					mon_batch_lean_miss(t);
					/* the chooser's tick: misses only */
					if ((o & 3) && mon_unlikely(--c->lf.tick == 0))
						mon_sim_lf_look(t, c);
					mon_rt_leave(t);
					return;
				}
			}
			if (whole) {	/* the general path reads c->cur_tag */
				c->cur_tag[0] = tag0;
				c->cur_tag[1] = tag1;
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
#define LINE_MISS_VARIANT(kind, name, ...)                                                   \
	static __attribute__((noinline)) void line_miss_##name(struct mon_thread *t,          \
							      uintptr_t addr, uint32_t wfs, \
							      uintptr_t pc)                 \
	{                                                                                    \
		line_rest(t, t->backend_data, addr, wfs, pc, 1, 0, kind);                   \
	}
SIM_LEAN_KINDS(LINE_MISS_VARIANT)
LINE_MISS_VARIANT(SIM_LEAN_NO, general)
#undef LINE_MISS_VARIANT

/*
 * The filter's usual miss (c solo and held, in the runtime, its lean kind
 * SIM_LEAN_FIT_8_16_64): the access's whole 64-byte line in the live
 * object of the object cache's hint, and the lean path takes it. Then
 * counts it by outcome, leaves the core and the runtime and returns 1;
 * else returns 0 having changed nothing (lf_miss_rest then takes it the
 * long way: line_rest's). Only what this case needs, so that the function
 * it is inlined in keeps its values in registers (~12 instructions of
 * spills and saved registers fewer a miss than line_rest inline, chase).
 */
static inline __attribute__((always_inline)) int lf_miss_whole(struct mon_thread *t,
								struct mon_sim_core *c,
								uintptr_t addr, uint32_t wfs)
{
	uint32_t h = t->cache.hint;
	const struct mon_obj *o = t->cache.obj[h];
	uint64_t *v = t->cache.counts[h];
	unsigned flags = MON_FAST_FLAGS(wfs);
	int out;

	if (!hint_whole64(t, addr) || !v)
		return 0;
	out = sim_lean_body(c, addr, MON_FAST_SZ(wfs), (flags & MON_ACC_WRITE) != 0, o->idx, 8,
			    16, 1, 0, 1, (uintptr_t)o, (uintptr_t)v, 0);
	if (mon_unlikely(out < 0))
		return 0;
	count_outcome(v, flags, (unsigned)out);
	/* (no tick of the batch's: in filter mode its chooser keeps it off,
	 * and a switch to the batch sets its tick - backend_sim_lf.c set_mode;
	 * the chooser's ticks on misses only, its windows' unit) */
	if ((out & 3) && mon_unlikely(--c->lf.tick == 0))
		mon_sim_lf_look(t, c);
	mon_rt_leave(t);
	return 1;
}

/* The filter's miss in its usual geometry when lf_miss_whole did not take
 * it with the hint (out of line: its registers are not the usual miss's):
 * again once the object cache has found the object (programs that
 * alternate between objects: jacobi, ~2 instructions an access), else
 * line_rest's long way */
static LINE_FAST_ATTR __attribute__((noinline)) void lf_miss_rest(struct mon_thread *t,
								  struct mon_sim_core *c,
								  uintptr_t addr, uint32_t wfs,
								  uintptr_t pc)
{
	if (mon_objcache_way(t, addr) >= 0 && lf_miss_whole(t, c, addr, wfs))
		return;
	line_rest(t, c, addr, wfs, pc, LINE_HELD_SOLO, 0, SIM_LEAN_FIT_8_16_64);
}

/*
 * The filter's miss (mon_sim_lf_access, the filter on and the hook's tests
 * passed): the lines the line entry remembers are written only while the
 * filter rests (sim_memo_insert), so the miss half at once, the core held
 * and in the runtime - inline for the filter's usual geometry and a whole
 * line in the object cache's hint - but for a core a second one took (the
 * C entry).
 */
LINE_FAST_ATTR void mon_sim_lf_miss(struct mon_thread *t, uintptr_t addr, uint32_t wfs,
				     uintptr_t pc)
{
	struct mon_sim_core *c = t->backend_data;

	mon_rt_enter(t);
	if (mon_likely(sim_core_try_enter(c))) {
		if (mon_likely(c->solo)) {
			/* leaves the core and the runtime */
			if (mon_likely(c->lean == SIM_LEAN_FIT_8_16_64)) {
				if (mon_likely(lf_miss_whole(t, c, addr, wfs)))
					return;
				lf_miss_rest(t, c, addr, wfs, pc);
			} else {
				mon_sim_line_miss_c(t, addr, wfs, pc);
			}
			return;
		}
		sim_core_exit(c, 0);
	}
	mon_rt_leave(t);
	mon_sim_line_fast_c(t, addr, wfs, pc);
}

void mon_sim_lf_look_leave(struct mon_thread *t, struct mon_sim_core *c)
{
	mon_sim_lf_look(t, c);
	mon_rt_leave(t);
}

/* The miss half alone, for the assembly entry and the batch: the core held
 * and in_rt raised, the access no hit of the remembered lines. */
LINE_FAST_ATTR void mon_sim_line_miss_c(struct mon_thread *t, uintptr_t addr, uint32_t wfs,
					 uintptr_t pc)
{
	const struct mon_sim_core *c = t->backend_data;

	switch (c->lean) {
#define LINE_MISS_CASE(kind, name, ...)               \
	case kind:                                    \
		line_miss_##name(t, addr, wfs, pc); \
		return;
		SIM_LEAN_KINDS(LINE_MISS_CASE)
#undef LINE_MISS_CASE
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

	__atomic_store_n(&mon_sim_lf_cold, on, __ATOMIC_RELAXED);
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

	/* (not with the line filter on: the hooks consult it only undiverted;
	 * not with 3C: the batch's hits, sim_batch_hits_x86, touch no shadow) */
	return c && c->solo && c->lean && !c->three_c &&
	       !__atomic_load_n(&c->shared, __ATOMIC_RELAXED) &&
	       !mon_sim_whatif_kind && !t->seq && !__atomic_load_n(&c->lf.on, __ATOMIC_RELAXED);
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
 * time order. Every access goes to the log: from the hooks through the line
 * entry (mon_seq_line_fast), from the general path through seq_access. */
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
	.line_fast = mon_seq_line_fast,
};
