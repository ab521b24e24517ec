/*
 * batch.c - the access batch (issue 24; docs/simulator.md "The access
 * batch"): the plain access hooks of a thread whose core runs solo on the
 * lean path append (address, wfs) records here instead of calling into
 * the simulator, and the batch is simulated in one loop when it is full or
 * before anything that could change the order of accesses or the objects
 * they belong to.
 *
 * Exactness: a record is simulated exactly as its hook would have
 * delivered it (the same line entry or mon_access, the same arguments but
 * pc, in the same order), only later. What may happen between the hook and
 * its simulation is confined to what cannot change an access's counts:
 *   - objects are born and die only in interposers (allocation, free,
 *     mmap, munmap, dlopen, dlclose, the thread's end), which simulate the
 *     batch first (intercept.c's track_thread, track_free; rt.c);
 *   - any other delivery (mon_access: range hooks, atomics, mem and str
 *     functions, volatile and _pc hooks) simulates the batch first, so the
 *     simulator sees every access of the thread in program order;
 *   - a second thread (mon_thread_wrap_start), fork, ignore and the exit
 *     turn the batch off after simulating it;
 *   - what another thread changes (the agent arms conditional counters or
 *     sample streams, sampled mode starts, the analysis detaches) is
 *     looked at once per batch: the whole batch is simulated in the state
 *     found at its end, as if the change had come at the batch's first
 *     record - at most MON_BATCH_RECS accesses from where it came, which
 *     the agent, running on another thread, cannot tell apart. But no
 *     batch is simulated while a counter set is armed (mon_batch_hold,
 *     around cond.c's arm): a batch simulated between the served counters'
 *     snapshot and an exact mark's reading (the mark, then) made the two
 *     disagree (a window's report 27 accesses above the oracle's exit
 *     minus mark, a program of hits in batch mode);
 *   - the exit event's reading (mri_server.c) comes after the exiting
 *     thread's batch is simulated (without, up to MON_BATCH_RECS of its
 *     last accesses counted in the oracle at exit and not in the report).
 * pc is not recorded: the lean path counts nothing by code address (only
 * sampled mode, sample streams, what-ifs and invalidations received do,
 * and none of them batches). A signal handler's accesses are delivered at
 * once while a batch is simulated (end is NULL then); one that lands
 * between a hook's load of pos and its store loses its own accesses
 * (the interrupted hook writes the same slot).
 */
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "mon.h"
#include "backend_sim.h"
#include "sim/sim_core.h"

#define BATCH_BYTES (2 * MON_BATCH_RECS * sizeof(uint64_t))

/*
 * The batch is on unless AMEBA_SIM_BATCH=0. Measured on the long kernels
 * (docs/simulator.md "The access batch"): always on, it saved 3-15% of
 * the instructions but cost CPU time where the program's own loads miss
 * the host's caches one after another (chase, gemm's column walk): the
 * single entry's prefetch of the address overlapped that miss with the
 * access's simulation, which the batch moves away from it. The policy
 * below (a batch of many misses rests) keeps it to where it gains.
 */
static int batch_wanted(void)
{
	const char *e = getenv("AMEBA_SIM_BATCH");

	if (!e || !*e || (e[0] == '1' && !e[1]))
		return 1;
	if (e[0] == '0' && !e[1])
		return 0;
	mon_log("AMEBA_SIM_BATCH=%s: not 0 or 1; the access batch stays on", e);
	return 1;
}

struct mon_batch mon_batch;

/*
 * The policy: a full batch more than AMEBA_SIM_BATCH_MISS % (default 25)
 * of whose records missed the L1 rests: the batch stays off for the next
 * BATCH_REST lean misses, twice as many after each batch that rests again
 * (up to BATCH_REST_MAX), BATCH_REST again after one that does not. Where
 * the program's own loads miss the host's caches one after another, the
 * single entry simulates an access while the program's miss is under way;
 * the batch simulates it later and the program waits for every miss
 * (docs/simulator.md "The access batch"). 100 or more: never rests.
 *
 * The lean path's part is one decrement of mon_batch.tick per miss
 * (mon_batch_lean_miss): while the batch is simulated the tick counts its
 * misses down from TICK_COUNTING; otherwise it runs out after the rest, or
 * after BATCH_REST misses when the batch could not go on, and
 * mon_batch_tick looks again (a test of the rest's count at every miss
 * cost chase ~12 instructions a miss).
 */
#define BATCH_REST 4096
#define BATCH_REST_MAX (1u << 20)
#define TICK_COUNTING (1u << 31)
static int batch_miss_pct(void)
{
	static int pct = -1;

	if (pct < 0) {
		const char *e = getenv("AMEBA_SIM_BATCH_MISS");
		char *end;
		long v = e && *e ? strtol(e, &end, 10) : 25;

		if (e && *e && (*end || v < 0)) {
			mon_log("AMEBA_SIM_BATCH_MISS=%s: not a percentage (0-100); using 25", e);
			v = 25;
		}
		pct = v > 100 ? 100 : (int)v;
	}
	return pct;
}

/* The batch rests (a function of its own: test sim_batch stops here) */
static __attribute__((noinline)) void batch_rest(void)
{
	uint32_t r = mon_batch.rest ? mon_batch.rest : BATCH_REST;

	mon_batch.tick = r;
	mon_batch.rest = r < BATCH_REST_MAX ? 2 * r : BATCH_REST_MAX;
	__asm__ __volatile__("" ::: "memory");
}

/* Whether t may batch now: its owner, the sim backend's line entry on a
 * solo lean core, nothing armed, no sampled mode, not ignoring. */
static int batch_allowed(struct mon_thread *t)
{
	const struct mon_backend_ops *b = __atomic_load_n(&mon_backend, __ATOMIC_RELAXED);

	return mon_batch.owner == t && mon_batch.base && !t->ignore &&
	       __atomic_load_n(&mon_active, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&mon_hot.sampling, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&mon_hot.tally, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&mon_any_armed, __ATOMIC_RELAXED) &&
	       (b == &mon_backend_sim || b == &mon_backend_sim_c) && t->started == b &&
	       mon_sim_batch_ok(t) && mon_batch.want && mon_batch.chooser != MON_BATCH_CHOSEN_OFF;
}

/* The hooks take the batch's path (mon_hot.batch) while it is on or holds
 * records, and only then: off and empty, they pay one test for it, the
 * one they make for sampled mode's tally. */
static void divert(void)
{
	int on = mon_batch.end || (mon_batch.pos && mon_batch.pos != mon_batch.base);

	if (__atomic_load_n(&mon_hot.batch, __ATOMIC_RELAXED) != on)
		__atomic_store_n(&mon_hot.batch, on, __ATOMIC_RELAXED);
}

static void set_end(uint64_t *end)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&mon_batch.end, end, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	divert();
}

/*
 * The records [p, e) through the sim backend's line entry, its L1 hit
 * inline: what sim_line_fast_x86 does for each, with the core held and
 * in_rt raised from one hit to the next instead of around each. A record
 * the hit does not take goes where the assembly sends it: the miss half
 * (mon_sim_line_miss_c, the core held; it leaves), or the C entry when
 * the remembered line's tag is stale.
 */
/* the loop without a frame pointer: one more register for the hits */
#if defined(__GNUC__) && !defined(__clang__)
#define LOOP_ATTR __attribute__((optimize("omit-frame-pointer")))
#else
#define LOOP_ATTR
#endif

enum { HIT, MISS, STALE };

/* The L1 hit of one record a, wfs within one line, the core held (the
 * assembly entry's, sim_l0_hit_at with no_calls): HIT counted, or MISS
 * (the miss half takes it) or STALE (the C entry) having changed nothing. */
static inline __attribute__((always_inline)) int hit_one(struct mon_sim_core *c, uintptr_t a,
							  uint32_t wfs)
{
	uint64_t line = a >> c->l1.line_shift;
	const struct mon_obj *o;
	int mru = line == c->last_line, j;

	if (mru) {
		j = (int)c->last_j;
	} else {
		j = sim_l0_search(c, line);
		if (mon_unlikely(j < 0))
			return MISS;
	}
	o = (const struct mon_obj *)c->l0.tag[j][0];
	if (mon_unlikely(!o || !(__atomic_load_n(&o->flags, __ATOMIC_RELAXED) & MON_OBJF_LIVE)))
		return STALE;
	if (mon_unlikely(!sim_l0_hit_at(c, line, j, mru, (wfs & MON_ACC_WRITE) != 0, o->idx, 1,
					c->l0.tag[j])))
		return MISS;
	mon_sim_count_l1_hit((uint64_t *)c->l0.tag[j][1], wfs, c);
	return HIT;
}

/* One record outside the held loop: where its hook would have sent it. */
static __attribute__((noinline)) void one(struct mon_thread *t, uintptr_t a, uint32_t wfs)
{
	const struct mon_backend_ops *b = __atomic_load_n(&mon_backend, __ATOMIC_RELAXED);
	void (*lf)(struct mon_thread *, uintptr_t, uint32_t, uintptr_t) = b ? mon_line_entry(b) : NULL;

	if (lf && mon_access_plain(t, b, a, MON_FAST_SZ(wfs)))
		lf(t, a, wfs, 0);
	else
		mon_access(a, MON_FAST_SZ(wfs), MON_FAST_FLAGS(wfs), 0);
}

static LOOP_ATTR void run_sim_c(struct mon_thread *t, struct mon_sim_core *c, const uint64_t *p,
			      const uint64_t *e)
{
	while (p < e) {
		mon_rt_enter(t);
		if (mon_unlikely(!sim_core_try_enter(c))) {
			mon_rt_leave(t);
			one(t, p[0], (uint32_t)p[1]);
			p += 2;
			continue;
		}
		if (mon_unlikely(!c->solo))
			goto leave_one;
		/* held: hits until anything else (every record lies within one
		 * MON_LINE_SIZE line, BATCH_APPEND, so within one L1 line of
		 * at least that size, simulate) */
		for (;;) {
			uintptr_t a = (uintptr_t)p[0];
			uint32_t wfs = (uint32_t)p[1];
			int r = hit_one(c, a, wfs);

			if (mon_unlikely(r != HIT)) {
				if (r == MISS) {
					mon_sim_line_miss_c(t, a, wfs, 0);	/* leaves */
				} else {
					sim_core_exit(c, 0);
					mon_rt_leave(t);
					mon_sim_line_fast_c(t, a, wfs, 0);
				}
				p += 2;
				break;
			}
			p += 2;
			if (mon_unlikely(p >= e)) {
				sim_core_exit(c, 0);
				mon_rt_leave(t);
				return;
			}
		}
		continue;
leave_one:
		sim_core_exit(c, 0);
		mon_rt_leave(t);
		one(t, p[0], (uint32_t)p[1]);
		p += 2;
	}
}

/* The records [p, e) through the line entry, the hits in a loop */
static void run_sim(struct mon_thread *t, struct mon_sim_core *c, const uint64_t *p,
		    const uint64_t *e)
{
#ifdef SIM_BATCH_HITS
	if (mon_likely(c->l1.line_shift == MON_LINE_SHIFT)) {
		for (;;) {
			p = SIM_BATCH_HITS(t, c, p, e);
			if (p >= e)
				return;
			one(t, p[0], (uint32_t)p[1]);
			p += 2;
		}
	}
#endif
	run_sim_c(t, c, p, e);
}

void mon_batch_hold(int on)
{
	if (!on) {
		__atomic_store_n(&mon_batch.hold, 0, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&mon_batch.hold, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&mon_batch.running, __ATOMIC_SEQ_CST))
		sched_yield();	/* a batch is a few microseconds */
}

/* In a fork's child: the thread that held the batch or ran it may not
 * have survived */
void mon_batch_after_fork(void)
{
	__atomic_store_n(&mon_batch.hold, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&mon_batch.running, 0, __ATOMIC_RELAXED);
}

/* The batch's side of mon_batch_hold: running, unless an arm holds it */
static void run_begin(void)
{
	for (;;) {
		__atomic_store_n(&mon_batch.running, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&mon_batch.hold, __ATOMIC_SEQ_CST))
			return;
		__atomic_store_n(&mon_batch.running, 0, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&mon_batch.hold, __ATOMIC_ACQUIRE))
			sched_yield();
	}
}

/* Simulates [base, pos) with the batch off and pos NULL meanwhile (a
 * signal handler's accesses are delivered at once, a flush they would
 * start does nothing, the lean path does not turn the batch on); leaves it
 * off, empty. */
static void simulate(struct mon_thread *t)
{
	const uint64_t *p, *e;
	const struct mon_backend_ops *b;
	void (*lf)(struct mon_thread *, uintptr_t, uint32_t, uintptr_t);
	struct mon_sim_core *c = t->backend_data;

	run_begin();
	p = mon_batch.base;
	e = mon_batch.pos;
	set_end(NULL);
	mon_batch.pos = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	b = __atomic_load_n(&mon_backend, __ATOMIC_ACQUIRE);
	lf = b ? mon_line_entry(b) : NULL;
	if (lf && (b == &mon_backend_sim || b == &mon_backend_sim_c) && c &&
	    c->l1.line_shift >= MON_LINE_SHIFT && t->started == b && !t->ignore &&
	    !__atomic_load_n(&mon_hot.sampling, __ATOMIC_RELAXED)) {
		run_sim(t, c, p, e);
	} else {
		/* as the hooks: sampled mode tallies, or counts what it delivers */
		for (; p < e; p += 2)
			if (!MON_SAMPLED_SKIP(t, p[0], 0))
				one(t, p[0], (uint32_t)p[1]);
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	mon_batch.pos = mon_batch.base;
	divert();
	__atomic_store_n(&mon_batch.running, 0, __ATOMIC_RELEASE);
}

void mon_batch_flush(struct mon_thread *t)
{
	int was_on = mon_batch.end != NULL;
	uint32_t n, misses;

	if (mon_unlikely(mon_batch.owner != t || t->in_rt || !mon_batch.pos))
		return;		/* not t's, the runtime's own call, or a flush running */
	n = (uint32_t)(mon_batch.pos - mon_batch.base) / 2;
	mon_batch.tick = TICK_COUNTING;
	simulate(t);
	misses = TICK_COUNTING - mon_batch.tick;
	mon_batch.tick = BATCH_REST;
	if (!was_on || !batch_allowed(t))
		return;
	/* judged on full batches: a flush at a call comes after a few
	 * records, which say little */
	if (n == MON_BATCH_RECS && mon_batch.chooser == MON_BATCH_RULE &&
	    misses * 100 > n * (uint32_t)batch_miss_pct()) {
		batch_rest();	/* off: misses want the single entry */
		return;
	}
	if (n == MON_BATCH_RECS)
		mon_batch.rest = BATCH_REST;
	set_end(mon_batch.base + 2 * MON_BATCH_RECS);
}

void mon_batch_off(struct mon_thread *t)
{
	if (!t || mon_batch.owner != t)
		return;
	if (mon_batch.pos && mon_batch.pos != mon_batch.base && !t->in_rt)
		simulate(t);
	set_end(NULL);
}

void mon_batch_tick(struct mon_thread *t)
{
	/* with AMEBA_SIM_BATCH=0, the next look after 2^32 misses */
	mon_batch.tick = mon_batch.want ? BATCH_REST : 0;
	if (mon_batch.want && !mon_batch.end && mon_batch.pos == mon_batch.base &&
	    batch_allowed(t))
		set_end(mon_batch.base + 2 * MON_BATCH_RECS);
}

void mon_batch_thread_start(struct mon_thread *t)
{
	struct mon_thread *none = NULL;
	void *p;

	/* a page of its own, not the heap the program's blocks come from,
	 * and mapped with or without AMEBA_SIM_BATCH: the program's blocks
	 * and mappings land at the same addresses either way */
	if (__atomic_load_n(&mon_batch.owner, __ATOMIC_ACQUIRE))
		return;
	p = mmap(NULL, BATCH_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	if (!__atomic_compare_exchange_n(&mon_batch.owner, &none, t, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		munmap(p, BATCH_BYTES);
		return;
	}
	mon_batch.want = batch_wanted();
	mon_batch.tick = mon_batch.want ? 1 : 0;	/* on at the first lean miss */
	mon_batch.base = mon_batch.pos = p;
}

void mon_batch_thread_exit(struct mon_thread *t)
{
	uint64_t *p;

	if (mon_batch.owner != t)
		return;
	mon_batch_off(t);
	p = mon_batch.base;
	mon_batch.base = mon_batch.pos = NULL;
	__atomic_store_n(&mon_batch.owner, NULL, __ATOMIC_RELEASE);
	if (p)
		munmap(p, BATCH_BYTES);
}
