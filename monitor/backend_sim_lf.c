/*
 * backend_sim_lf.c - the sim backend's side of the line filter
 * (monitor/sim/sim.h struct mon_sim_lf, docs/simulator.md "The line
 * filter" and "The solo thread's mode"): the thread's filter, and which of
 * the three ways of delivering a solo lean thread's accesses it uses.
 * backend_sim.c installs the filter (sim_thread_start) and takes its misses
 * (mon_sim_lf_miss), the hooks take its hits (backend_sim.h,
 * mon_sim_lf_access).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mon.h"
#include "sim/sim_core.h"
#include "backend_sim.h"

/* The empty filter (backend_sim.h), a core's so that its entries are where
 * the hooks look (MON_SIM_LF_TAB): its thread ignores, so that the hooks
 * take their general side before looking at an entry; none holds a line */
static struct mon_thread lf_none_thread = { .ignore = 1 };
struct mon_sim_core mon_sim_lf_none_core = {
	.lf = { .ent = mon_sim_lf_none_core.lf_tab, .thread = &lf_none_thread },
	.lf_tab = { [0 ...(1u << MON_SIM_LF_BITS) - 1] = { .line = UINT64_MAX } },
};

__thread struct mon_sim_lf *mon_sim_lf __attribute__((tls_model("initial-exec"))) =
	MON_SIM_LF_NONE;

/*
 * The mode (docs/simulator.md, "The solo thread's mode"). A solo thread on
 * the lean path with a line filter has three ways of delivering its
 * accesses, each exact, whose cost depends on the program more than any
 * count predicts:
 *   FILTER  the filter on: the hooks take L1 hits themselves, the rest goes
 *           straight to the miss half (mon_sim_lf_miss); every access the
 *           simulator takes writes its filter entry (~12 instructions)
 *   SINGLE  the filter resting (no entries written), each access through
 *           the line entry from the hook
 *   BATCH   the access batch (batch.c): the hooks append records, a loop
 *           simulates them; cheapest per access, but the program's own
 *           loads no longer overlap the simulation of earlier accesses
 *           (a dependent chain of host misses waits for each)
 * Measured on the long kernels before the filter's misses skipped the
 * line entry, each was the fastest somewhere (hashtab: BATCH; stream,
 * gemm: FILTER; rmw, chase: SINGLE), by up to 18% of the time. So the
 * owner times them: every window of L1 misses (4,096;
 * AMEBA_SIM_MODE_WINDOW) it reads the time stamp counter. Only misses
 * count (not the L1 hits that a mode's own shortcut - the filter, the
 * remembered lines - did not take, which differ by mode): the simulation
 * is exact in every mode, so a window is the same accesses in each. A
 * probe runs the incumbent (the running mode) and each challenger in
 * turn, the incumbent again after each (I C1 I C2 I), each step
 * PROBE_WINDOWS windows after one it does not measure (the switch's),
 * keeping each step's cheapest window; a challenger wins when it was
 * cheaper than both incumbent steps around it (probe_choice), the
 * cheapest winner runs for `stay` windows: STAY_MIN, doubling (up to
 * STAY_MAX) while probes choose the same mode. Comparing a challenger
 * with the windows right before and after it, not with the incumbent's
 * best anywhere in the probe, keeps a phased program from making the
 * mode that happened to run in a cheap phase look cheap.
 * AMEBA_SIM_MODE=filter|single|batch pins a mode (auto: the default).
 */
enum { MODE_FILTER, MODE_SINGLE, MODE_BATCH, MODES };
#define PROBE_WINDOWS 2
#define STAY_MIN 16
#define STAY_MAX 1024

static const char *const mode_names[MODES] = { "filter", "single", "batch" };

/* a probe's steps: the incumbent, a challenger, the incumbent, ... */
#define PROBE_STEPS (2 * MODES - 1)

static __thread struct {
	uint64_t tsc;			/* at the last look */
	uint64_t cost[PROBE_STEPS];	/* the probe's cheapest window per step */
	uint32_t left;			/* windows left in this mode, or step */
	uint32_t stay;			/* the last choice's stay */
	uint8_t mode, chosen;		/* running; chosen by the last probe */
	uint8_t probe;			/* in a probe: 1 + its step, 0: none */
	uint8_t n;			/* the probe's modes */
	uint8_t order[MODES];		/* the incumbent, then the challengers */
	uint8_t skip;			/* the window ending next is a switch's */
	uint8_t started;
} st __attribute__((tls_model("initial-exec")));

/* For AMEBA_SIM_VERBOSE=1: the windows run in each mode, the probes and
 * how many of them left the incumbent (the owner's; read at exit) */
static uint64_t nr_windows[MODES], nr_probes, nr_left;
static int log_once;

static void log_modes(void)
{
	mon_log("sim: the solo thread's mode: windows of %u L1 misses: %llu filter, %llu single, "
		"%llu batch; %llu probes, %llu of them chose another mode", mon_sim_lf_window(),
		(unsigned long long)nr_windows[MODE_FILTER],
		(unsigned long long)nr_windows[MODE_SINGLE],
		(unsigned long long)nr_windows[MODE_BATCH], (unsigned long long)nr_probes,
		(unsigned long long)nr_left);
}

/* AMEBA_SIM_MODE: a pinned mode, or MODES for auto */
static int pinned_mode(void)
{
	static int m = -1;
	const char *e;

	if (m >= 0)
		return m;
	e = getenv("AMEBA_SIM_MODE");
	m = MODES;
	if (e && *e && strcmp(e, "auto") != 0) {
		for (int i = 0; i < MODES; i++)
			if (strcmp(e, mode_names[i]) == 0)
				m = i;
		if (m == MODES)
			mon_log("AMEBA_SIM_MODE=%s: not auto, filter, single or batch; using auto", e);
	}
	return m;
}

uint32_t mon_sim_lf_window(void)
{
	static uint32_t w;

	if (!w) {
		long x = mon_sim_env_num("AMEBA_SIM_MODE_WINDOW", 16, 1l << 20);

		w = x > 0 ? (uint32_t)x : 4096;
	}
	return w;
}

static uint64_t now_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* Whether t can batch at all (the batch's owner, AMEBA_SIM_BATCH on) */
static int batch_possible(const struct mon_thread *t)
{
	return mon_batch.owner == t && mon_batch.want && mon_batch.base;
}

/* c's owner t to mode m (the core held, in the lean path) */
static void set_mode(struct mon_thread *t, struct mon_sim_core *c, int m)
{
	struct mon_sim_lf *f = &c->lf;

	if (m == st.mode && st.started)
		return;
	st.started = 1;
	st.mode = (uint8_t)m;
	/* entries written before are not trusted after a rest */
	mon_sim_core_lf_forget(c);
	__atomic_store_n(&f->on, m == MODE_FILTER ? f->on_as : 0, __ATOMIC_RELAXED);
	if (!batch_possible(t))
		return;
	if (m == MODE_BATCH) {
		mon_batch.chooser = MON_BATCH_CHOSEN_ON;
		/* on at the next lean miss, unless it is on (simulated now) */
		if (mon_batch.pos && !mon_batch.end)
			mon_batch.tick = 1;
	} else {
		/* the batch ends at its next flush (batch_allowed) */
		mon_batch.chooser = MON_BATCH_CHOSEN_OFF;
	}
}

/* A probe chose m, its steps' cheapest windows in st.cost (a function of
 * its own: test sim_line_filter stops here) */
static __attribute__((noinline)) void mode_chosen(int m)
{
	st.stay = m == st.chosen && st.stay ? (st.stay < STAY_MAX ? 2 * st.stay : STAY_MAX)
					    : STAY_MIN;
	st.chosen = (uint8_t)m;
	__asm__ __volatile__("" ::: "memory");
}

/* A probe from the running mode, the incumbent (its windows need no
 * switch) */
static void probe_start(struct mon_thread *t)
{
	st.n = 0;
	st.order[st.n++] = st.mode;
	for (int i = 0; i < MODES; i++)
		if (i != st.mode && (i != MODE_BATCH || batch_possible(t)))
			st.order[st.n++] = (uint8_t)i;
	for (int i = 0; i < PROBE_STEPS; i++)
		st.cost[i] = UINT64_MAX;
	st.probe = 1;
	st.left = PROBE_WINDOWS;
}

/* The probe's choice: the cheapest challenger that was cheaper than the
 * incumbent both just before and just after it, else the incumbent. The
 * steps that bracket a challenger are the nearest in time, so a program
 * whose phases differ in cost does not make a challenger look cheaper
 * for having run in a cheap phase. */
static int probe_choice(void)
{
	int best = st.order[0];
	uint64_t bc = UINT64_MAX;

	for (int j = 1; j < st.n; j++) {
		uint64_t x = st.cost[2 * j - 1];

		if (x < st.cost[2 * j - 2] && x < st.cost[2 * j] && x < bc) {
			best = st.order[j];
			bc = x;
		}
	}
	return best;
}

/* A measured window of d ticks in the running mode */
static void window(struct mon_thread *t, struct mon_sim_core *c, uint64_t d)
{
	int best, step;

	if (!st.probe) {
		if (--st.left == 0)
			probe_start(t);
		return;
	}
	step = st.probe - 1;
	if (d < st.cost[step])
		st.cost[step] = d;
	if (--st.left)
		return;
	if (++step < 2 * st.n - 1) {	/* the next step, after a switch */
		st.probe++;
		set_mode(t, c, st.order[step & 1 ? (step + 1) / 2 : 0]);
		st.left = PROBE_WINDOWS;
		st.skip = 1;
		return;
	}
	best = probe_choice();
	nr_probes++;
	nr_left += best != st.order[0];
	st.probe = 0;
	mode_chosen(best);
	set_mode(t, c, best);
	st.left = st.stay;
}

void mon_sim_lf_look(struct mon_thread *t, struct mon_sim_core *c)
{
	struct mon_sim_lf *f = &c->lf;
	uint64_t now = now_ticks(), d = now - st.tsc;
	int pin = pinned_mode();

	if (!__atomic_load_n(&f->user, __ATOMIC_RELAXED) || t != mon_self || !c->solo) {
		f->tick = UINT32_MAX;	/* off for good, or not this thread's */
		if (t == mon_self) {
			mon_sim_lf = MON_SIM_LF_NONE;
			if (mon_batch.owner == t)
				mon_batch.chooser = MON_BATCH_RULE;
		}
		return;
	}
	f->tick = f->window;
	f->clock0 = c->l1.clock;
	f->notes = 0;
	if (st.started)
		nr_windows[st.mode]++;
	else if (!__atomic_exchange_n(&log_once, 1, __ATOMIC_RELAXED) &&
		 mon_sim_env_num("AMEBA_SIM_VERBOSE", 0, 1) == 1)
		atexit(log_modes);
	st.tsc = now;
	if (pin < MODES) {
		set_mode(t, c, pin == MODE_BATCH && !batch_possible(t) ? MODE_SINGLE : pin);
		return;
	}
	if (!st.started) {	/* the first look: the filter's window from here */
		set_mode(t, c, MODE_FILTER);
		probe_start(t);
		return;
	}
	if (st.skip) {
		st.skip = 0;
		return;
	}
	window(t, c, d);
}

/*
 * A split entry (sim.h): its object holds only some bytes of the line - a
 * block whose first or last line it shares with malloc's header or a
 * neighbour (bzip2's decompression state: its hottest fields in the first
 * line, 3.8 M of 83 M accesses of `bzip2 -d` a megabyte; Lua's 56-byte
 * tables). The entry serves accesses within those bytes as the hook's hit
 * serves a whole line (the same tests of the line's key word and a write's
 * rights); any other access takes the filter's miss, which writes the
 * line's entry again. Out of line: the hook's hit is not made longer for
 * these (its test of the entry's line fails for a split entry). The
 * entry's object lives: lf_obj_dead (backend_sim.c) forgets the split
 * entries of a dying object too.
 */
/* (split_hit's own parameters, kept - noipa - so that its jump here
 * moves no register) */
static LINE_FAST_ATTR __attribute__((noipa)) void split_miss(struct mon_sim_lf *f,
								   const struct mon_sim_lf_ent *e,
								   struct mon_thread *t,
								   uintptr_t addr, uint32_t wfs,
								   uintptr_t pc)
{
	(void)e;
	mon_sim_lf_miss_on(f, t, addr, wfs, pc);
}

/* (backend_sim.h) a write through entry e of f, on E: E -> M, silent (the
 * lean path's write hit), the entry's key word and rights with it, then
 * the write's hit */
LINE_FAST_ATTR void mon_sim_lf_upgrade_hit(struct mon_sim_lf *f, const struct mon_sim_lf_ent *e)
{
	struct mon_sim_lf_ent *w = (struct mon_sim_lf_ent *)e;

	f->key[e->i] = w->want = e->want | 1;
	f->dirty[(uint64_t)e->i * MON_SIM_META_BYTES] = 1;
	w->wok = 1;
	mon_sim_lf_hit_plain(f, e, MON_ACC_WRITE);
}

/* (the hook found e and saw its line's marker; the miss out of line: the
 * hit saves no register) */
LINE_FAST_ATTR void mon_sim_lf_split_hit(struct mon_sim_lf *f, const struct mon_sim_lf_ent *e,
					  struct mon_thread *t, uintptr_t addr, uint32_t wfs,
					  uintptr_t pc)
{
	unsigned flags = MON_FAST_FLAGS(wfs), off = addr & (MON_LINE_SIZE - 1);

	if (off >= e->lo && off + MON_FAST_SZ(wfs) <= e->hi &&
	    (!(flags & MON_ACC_WRITE) || e->wok) && f->key[e->i] == e->want) {
		mon_sim_lf_hit_at(f, e, flags);
		return;
	}
	split_miss(f, e, t, addr, wfs, pc);
}
