/*
 * backend_sim.h - what the sim backend's C (backend_sim.c) and its x86-64
 * assembly line entry (backend_sim_x86.c) share: the counter slots the
 * assembly adds to, and the entries it falls back on.
 */
#ifndef AMEBA_MON_BACKEND_SIM_H
#define AMEBA_MON_BACKEND_SIM_H

#include <stdint.h>

#include "mon.h"
#include "sim/sim_core.h"	/* struct mon_sim_lf: the line filter; sim_mf_hit */

struct mon_sim_core;

/* The counter slots of a plain L1 hit's metrics (backend_sim.c: slot_of) */
enum { SLOT_MEM_REF = 0, SLOT_READS = 1, SLOT_WRITES = 2, SLOT_EST_CYCLES = 24 };
/*
 * The line filter's outcome slots (mon.h mon_counts_outcomes), after the
 * backend's 26 metrics: kind 2 * level + write, level 0 an L1 hit, 1 an
 * LLC hit, 2 memory (SIM_LEAN_*: no L2, no TLB model, one node where the
 * filter runs); backend_sim.c sim_activate sets their rows.
 */
enum { SLOT_OUTCOME = 26 };

/* A plain access's counts into the object's counter vector v: an access;
 * rd, wr: 1 for a read, a write; its cycles */
static inline __attribute__((always_inline)) void mon_sim_count_plain(uint64_t *v, unsigned rd,
								       unsigned wr, uint64_t cycles)
{
	mon_count_add(v, SLOT_MEM_REF, 1);
	mon_count_add(v, SLOT_READS, rd);
	mon_count_add(v, SLOT_WRITES, wr);
	mon_count_add(v, SLOT_EST_CYCLES, cycles);
}

/* An L1 hit on the fast paths into v: the core's hit latency */
static inline __attribute__((always_inline)) void mon_sim_count_l1_hit(uint64_t *v, uint32_t wfs,
									const struct mon_sim_core *c)
{
	mon_sim_count_plain(v, wfs & MON_ACC_READ, (wfs & MON_ACC_WRITE) >> 1, c->l1_hit_cycles);
}

/* The C line entry, and its miss half (the core held, in_rt raised) */
void mon_sim_line_fast_c(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc)
	MON_HIDDEN;
void mon_sim_line_miss_c(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc)
	MON_HIDDEN;

/* The events ep of an access that was not a plain L1 hit, into ev (its
 * counter vector when it has one), then the inval_recv credit */
struct mon_sim_events;
void mon_sim_report(struct mon_thread *t, struct mon_sim_core *c, const struct mon_sim_events *ep,
		    unsigned flags, uintptr_t pc, struct mon_events *ev) MON_HIDDEN;

/* AMEBA_WHATIF (backend_sim_whatif.c): the kind of fix simulated (0: none;
 * set by mon_backend_sim_whatif_wanted), and an access of its run - rewritten,
 * simulated and counted into ev */
extern int mon_sim_whatif_kind MON_HIDDEN;
void mon_sim_whatif_access(struct mon_thread *t, struct mon_sim_core *c, struct mon_obj *obj,
			   uintptr_t addr, uint32_t sz, unsigned flags, uintptr_t pc,
			   struct mon_events *ev) MON_HIDDEN;

/* Whether t's core may batch (batch.c): solo, on the lean path, no what-if,
 * not ordered mode */
int mon_sim_batch_ok(const struct mon_thread *t) MON_HIDDEN;

/*
 * The calling thread's line filter (sim.h, docs/simulator.md "The line
 * filter"): its core's, set by the thread itself when the core may use one
 * (sim_thread_start), else the empty one, MON_SIM_LF_NONE (never NULL).
 */
extern __thread struct mon_sim_lf *mon_sim_lf MON_HIDDEN
	__attribute__((tls_model("initial-exec")));
extern struct mon_sim_core mon_sim_lf_none_core MON_HIDDEN;
#define MON_SIM_LF_NONE (&mon_sim_lf_none_core.lf)

/* The filter's miss (backend_sim.c): the miss half at once, without the
 * line entry's search of the remembered lines, which the filter on does
 * not keep */
void mon_sim_lf_miss(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc)
	MON_HIDDEN;
/* The same in x86-64 assembly for the usual case (backend_sim_x86.c), which
 * jumps to mon_sim_lf_miss for any other (sim_lf_miss_x86_rd for a read,
 * sim_lf_miss_x86_wr for a write); it serves while the filter's on
 * is MON_SIM_LF_ON_ASM (sim.h: set where the filter is installed for the
 * backend's assembly line entry on a host with SSE4.1, in a core of the
 * kind it simulates) and sampled mode does not settle cold LLC sets
 * (mon_sim_lf_cold, mon_backend_sim_sampled's: not 0 while it does) */
#if defined(__x86_64__) && defined(__GNUC__)
/* c: the core whose filter saw the miss (t's, which it checks before any
 * change); llc_set: the miss's LLC set where the hook prefetched it
 * (mon_sim_lf_miss_on), which it takes as the set to search while c is of
 * the filter's kind (lf_init: the two agree there) */
void sim_lf_miss_x86_rd(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc,
			struct mon_sim_core *c, const char *llc_set) MON_HIDDEN;
void sim_lf_miss_x86_wr(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc,
			struct mon_sim_core *c, const char *llc_set) MON_HIDDEN;
/* the read's miss or the write's: two copies, whose fill, hit and count
 * know which (wfs is a constant in every hook: the choice costs nothing) */
#define SIM_LF_MISS(t, addr, wfs, pc, c, llc_set)                                          \
	(((wfs) & MON_ACC_WRITE) ? sim_lf_miss_x86_wr : sim_lf_miss_x86_rd)(t, addr, wfs, pc, \
									     c, llc_set)
#else
#define SIM_LF_MISS(t, addr, wfs, pc, c, llc_set) mon_sim_lf_miss(t, addr, wfs, pc)
#endif
extern int mon_sim_lf_cold MON_HIDDEN;
/*
 * The C line entry and the filter's C side without a frame pointer (the
 * runtime is built with one, for site capture, which never walks through
 * them: they run no interposer): one more register for the hit path, three
 * instructions less per access.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define LINE_FAST_ATTR __attribute__((optimize("omit-frame-pointer")))
#else
#define LINE_FAST_ATTR
#endif

/* mon_sim_lf_access's access to a line whose entry e of filter f is a
 * split one (sim.h), the filter seen on: within the entry's bytes, with the
 * rights it needs, the same hit (counted into the entry's tag); else the
 * filter's miss */
void mon_sim_lf_split_hit(struct mon_sim_lf *f, const struct mon_sim_lf_ent *e,
			  struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc)
	MON_HIDDEN;

/* the core whose filter f is (sim.c lf_init: the L1's clock and the memo
 * of the last line are the core's, at fixed offsets from f: no pointer to
 * load) */
static inline struct mon_sim_core *mon_sim_lf_core(struct mon_sim_lf *f)
{
	return (struct mon_sim_core *)((char *)f - __builtin_offsetof(struct mon_sim_core, lf));
}

/* mon_sim_lf_access's miss while the filter is on (the caller saw it so):
 * the miss half, which takes the core and checks it is still solo (the
 * filter goes off for good with the core held); the filter resting, the
 * split entries are not looked at (mon_sim_lf_miss_resting) */
static inline __attribute__((always_inline)) void mon_sim_lf_miss_on(struct mon_sim_lf *f,
								     struct mon_thread *t,
								     uintptr_t addr, uint32_t wfs,
								     uintptr_t pc)
{
	const char *set;
	uint64_t line;

	__builtin_prefetch((const void *)addr);
	/* the LLC set the miss half looks up: from f, one load away, where the
	 * miss half reached it through four (chase -3 to -6%;
	 * docs/simulator.md); handed on with the core, which f is part of
	 * (sim.c lf_init), so that the miss half's first loads wait on no load
	 * of its own */
	line = addr >> MON_LINE_SHIFT;
	set = f->llc_pf + (line & f->llc_pf_mask) * MON_SIM_LF_LLC_SET;
	__builtin_prefetch(set);
	/* a miss on the line after the last miss's: a walk, whose next miss
	 * is likely the next line - its LLC set, and the one after, ahead
	 * (stream 0.78 and 0.85 of the time; a walk of one stream only: the
	 * others within the host's noise; docs/simulator.md, "the next set").
	 * From the fourth line in a row, the program's own line
	 * MON_SIM_LF_WALK_AHEAD lines on as well: the host's memory is slower
	 * than the simulator's time per line times its prefetchers' reach
	 * (docs/simulator.md, "The program's walk") */
	if (line == f->pf_line + 1) {
		__builtin_prefetch(set + MON_SIM_LF_LLC_SET);
		__builtin_prefetch(set + 2 * MON_SIM_LF_LLC_SET);
		if (f->pf_run == 2)
			__builtin_prefetch(
				(const void *)(addr + (MON_SIM_LF_WALK_AHEAD << MON_LINE_SHIFT)));
		else
			f->pf_run++;
	} else {
		f->pf_run = 0;
	}
	f->pf_line = line;
	SIM_LF_MISS(t, addr, wfs, pc, mon_sim_lf_core(f), set);
}

/* mon_sim_lf_access's miss while the filter rests: the backend's line
 * entry; 0 when the backend is not the filter's (nothing done). The
 * backend changes only to ordered mode, on the owner's own thread (its
 * second thread), whose accesses the gate then keeps from here; user is
 * NULL once the filter is off for good, stored after on (sim.c) */
static inline __attribute__((always_inline)) int mon_sim_lf_miss_resting(struct mon_sim_lf *f,
									  struct mon_thread *t,
									  uintptr_t addr,
									  uint32_t wfs,
									  uintptr_t pc)
{
	const struct mon_backend_ops *b;

	__builtin_prefetch((const void *)addr);
	b = __atomic_load_n(&f->user, __ATOMIC_RELAXED);
	if (b != __atomic_load_n(&mon_backend, __ATOMIC_RELAXED))
		return 0;
	b->line_fast(t, addr, wfs, pc);
	return 1;
}

/* mon_sim_lf_access's hit through entry e of f: a read, or a write the
 * entry allows (e->wok) - the L1's LRU stamp, the count; for a write's
 * E -> M (e->wok MON_SIM_LF_UPGRADE, once per line filled by a read),
 * mon_sim_lf_upgrade_hit out of line, after which nothing is live: the
 * write hooks then save no register on entry (their hit kept two of its
 * values in rbx and rbp, pushed and popped at every call) */
static inline __attribute__((always_inline)) void mon_sim_lf_hit_plain(struct mon_sim_lf *f,
									const struct mon_sim_lf_ent *e,
									unsigned flags)
{
	struct mon_sim_core *c;
	uint64_t *v;

	c = mon_sim_lf_core(f);
	f->key[e->i + f->assoc] = ++c->l1.clock;	/* the L1 is LRU */
	c->last_line = UINT64_MAX;
	/* the L1 hit's one add: its outcome (a plain hook's access reads or
	 * writes, never both) */
	v = (uint64_t *)e->tag[1];
	mon_count_add(v, SLOT_OUTCOME + ((flags & MON_ACC_WRITE) != 0), 1);
}
void mon_sim_lf_upgrade_hit(struct mon_sim_lf *f, const struct mon_sim_lf_ent *e) MON_HIDDEN;
static inline __attribute__((always_inline)) void mon_sim_lf_hit_at(struct mon_sim_lf *f,
								     const struct mon_sim_lf_ent *e,
								     unsigned flags)
{
	if ((flags & MON_ACC_WRITE) && mon_unlikely(e->wok == MON_SIM_LF_UPGRADE))
		mon_sim_lf_upgrade_hit(f, e);
	else
		mon_sim_lf_hit_plain(f, e, flags);
}

/*
 * The hooks' line filter (tsan_abi.c, DEFINE_ACCESS): an access of sz
 * bytes of the calling thread at code address pc, the hooks active and
 * mon_hot.gate zero (nothing armed, not sampled, not diverted). 0 when it
 * does not take the line entry's path (in the runtime or ignored, across
 * two lines, the backend not the filter's): nothing done. Else 1, the
 * access delivered: when the filter says it hits the L1 of the thread's
 * core - the line still where its entry says, with the rights the access
 * needs, in the object of its tag, which holds the whole line and lives
 * (the entries of a dead object are forgotten when it dies: backend_sim.c
 * lf_obj_dead, so the hit tests no flag of it) - having made the
 * hit's one change (the line's LRU stamp; the memo of the last line
 * forgotten: the line entries' guess that it is most recently used no
 * longer holds) and counted its events (mon_sim_count_l1_hit's); else straight
 * from here (what the hook's general side would have done after the same
 * tests) to the filter's miss while it is on, to the backend's line entry
 * while it rests. A hit does not look at the filter's user: every entry
 * is written by the owner while the filter is on, and the filter goes off
 * for good (user NULL) only with every entry forgotten (sim.c), and the
 * backend changes only to ordered mode, which the gate says - so the
 * backend test is the miss side's. The entry looked at is that of the
 * access's first line, its line compared with the access's last: the same
 * for an access within one line, and never equal for one across two
 * (adjacent lines never share an entry: mon_sim_lf_slot), which thus takes
 * the miss side, where it is told apart - no test of its own on the hit
 * (-3 instructions). A thread without a filter has the empty one
 * (MON_SIM_LF_NONE: its thread quiet) - no test of the pointer either
 * (-2). The entries are at a constant offset from f (MON_SIM_LF_TAB): no
 * load of f->ent before the entry's. The access's code address is the
 * hook's return address (the caller: a hook that inlines this), read only
 * where a miss hands it on: as an argument it was loaded on the hit too.
 */
#define MON_SIM_LF_PC ((uintptr_t)__builtin_return_address(0))
static inline __attribute__((always_inline)) int mon_sim_lf_access(uintptr_t addr, uint32_t sz,
								    unsigned flags)
{
	struct mon_sim_lf *f = mon_sim_lf;
	const struct mon_sim_lf_ent *e;
	struct mon_thread *t;
	const uint64_t line = (addr + sz - 1) >> MON_LINE_SHIFT;	/* the last */

	_Static_assert(sizeof(*e) == 64 && MON_LINE_SHIFT == 6, "mon_sim_lf_slot_off");
	e = (const struct mon_sim_lf_ent *)((const char *)MON_SIM_LF_TAB(f) +
					    mon_sim_lf_slot_off(addr));
	t = f->thread;	/* mon_self: only its owner's pointer is set */
	if (mon_thread_quiet(t))
		return 0;
	if (mon_unlikely(e->line != line || f->key[e->i] != e->want ||
			 ((flags & MON_ACC_WRITE) && e->wok != 1))) {
		const uint32_t wfs = MON_FAST_WFS(0, flags, sz);

		if ((flags & MON_ACC_WRITE) && e->wok == MON_SIM_LF_UPGRADE && e->line == line &&
		    f->key[e->i] == e->want) {
			mon_sim_lf_upgrade_hit(f, e);
			return 1;
		}

		if ((addr & (MON_LINE_SIZE - 1)) > MON_LINE_SIZE - sz)
			return 0;	/* across two lines (then line is the second) */
		if (__atomic_load_n(&f->on, __ATOMIC_RELAXED)) {
			/* a line its object shares with others: out of line
			 * (a tail call, which saves no register here) */
			if (mon_unlikely(e->line == (line | MON_SIM_LF_SPLIT)))
				mon_sim_lf_split_hit(f, e, t, addr, wfs, MON_SIM_LF_PC);
			else
				mon_sim_lf_miss_on(f, t, addr, wfs, MON_SIM_LF_PC);
			return 1;
		}
		return mon_sim_lf_miss_resting(f, t, addr, wfs, MON_SIM_LF_PC);
	}
	mon_sim_lf_hit_plain(f, e, flags);
	return 1;
}

/*
 * Ordered mode's merger (seq_merge.c plain_hits), before mon_sim_seq_access:
 * the L1 hits the merger's filter takes (sim_core.h sim_mf_hit_run), inline,
 * no call, for a run of logged accesses of the thread of sim core `core`.
 * mon_sim_seq_hold enters the core into r (0: it cannot, nothing changed;
 * a fix being simulated, no filter, the core held still); then each
 * mon_sim_seq_hit, an access (wfs) to the object of index cookie counted
 * into v, returns 1 when the filter takes it (the merger's clock then
 * advances by mon_sim_seq_hit_cycles), else 0, nothing changed; then
 * mon_sim_seq_unhold(core, r, hits) leaves. Holding the core over the run
 * is what the merger's single thread allows: nothing else simulates while
 * it runs, and a thread that would hold the core still waits for it to
 * leave.
 */
static inline int mon_sim_seq_hold(void *core, struct sim_mf_run *r)
{
	return !__atomic_load_n(&mon_sim_whatif_kind, __ATOMIC_RELAXED) &&
	       sim_mf_hold((struct mon_sim_core *)core, r);
}

/* Whether the merger's filter of core may take an access at addr (its
 * entry is the line's): the test before mon_sim_seq_hold, so that a miss
 * does not pay for holding the core */
static inline int mon_sim_seq_maybe(const void *core, uintptr_t addr)
{
	const struct mon_sim_core *c = core;
	const uint64_t line = addr >> c->l1.line_shift;

	return c->mf && c->mf[sim_mf_slot(line)].line == line;
}

static inline __attribute__((always_inline)) int mon_sim_seq_hit(struct sim_mf_run *r,
								  uint32_t cookie, uintptr_t addr,
								  uint32_t wfs, uint64_t *v)
{
	if (!sim_mf_hit_run(r, addr, MON_FAST_SZ(wfs), (wfs & MON_ACC_WRITE) != 0, cookie))
		return 0;
	mon_sim_count_plain(v, wfs & MON_ACC_READ, (wfs & MON_ACC_WRITE) >> 1, r->cycles);
	return 1;
}

/* The merger's hits in assembly (backend_sim_x86.c): mon_sim_seq_hit over
 * the log entries ring[(n + k) % SEQ_RING] (seq_int.h), k < max; returns
 * the k it stopped at (an entry not plain, or not a hit). For 64-byte L1
 * lines (r->shift 6). */
#if defined(__x86_64__) && defined(__GNUC__)
struct seq_ent;
uint64_t sim_mf_hits_x86(struct sim_mf_run *r, const struct seq_ent *ring, uint64_t n,
			 uint64_t max) MON_HIDDEN;
#define SIM_MF_HITS sim_mf_hits_x86
#endif

/* The cycles a hit of r advances the merger's clock by: the L1's hit
 * latency, at least 1 */
static inline uint32_t mon_sim_seq_hit_cycles(const struct sim_mf_run *r)
{
	return r->cycles ? r->cycles : 1;
}

static inline void mon_sim_seq_unhold(void *core, const struct sim_mf_run *r, uint64_t hits)
{
	sim_mf_unhold((struct mon_sim_core *)core, r, hits);
}

/* A decimal environment value in [lo, hi], or -1 (absent or bad: logged) */
long mon_sim_env_num(const char *name, long lo, long hi) MON_HIDDEN;

/* The solo thread's mode (backend_sim_lf.c): looked at every window lean
 * misses of t's core c (the filter's tick running out) */
void mon_sim_lf_look(struct mon_thread *t, struct mon_sim_core *c) MON_HIDDEN;
/* The same where the filter's assembly miss ran the tick out (after its
 * count, the core left, t in the runtime): the look, then mon_rt_leave */
void mon_sim_lf_look_leave(struct mon_thread *t, struct mon_sim_core *c) MON_HIDDEN;
/* The window: 4,096 lean misses, or AMEBA_SIM_MODE_WINDOW (16 .. 2^20) */
uint32_t mon_sim_lf_window(void) MON_HIDDEN;

/* The line entry the backend uses: the assembly one where there is one */
#if defined(__x86_64__) && defined(__GNUC__)
void sim_line_fast_x86(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc)
	MON_HIDDEN;
#define SIM_LINE_FAST sim_line_fast_x86
/* The batch's L1 hits (batch.c): the first record of [p, e) not taken */
const uint64_t *sim_batch_hits_x86(struct mon_thread *t, struct mon_sim_core *c, const uint64_t *p,
				   const uint64_t *e) MON_HIDDEN;
#define SIM_BATCH_HITS sim_batch_hits_x86
#else
#define SIM_LINE_FAST mon_sim_line_fast_c
#endif

#endif
