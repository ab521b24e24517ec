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

__thread struct mon_sim_lf *mon_sim_lf __attribute__((tls_model("initial-exec")));

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
 * owner times them: every window of lean misses (4,096;
 * AMEBA_SIM_MODE_WINDOW) it reads the time stamp counter. A probe runs
 * each mode for PROBE_WINDOWS windows after one it does not measure (the
 * switch's), keeps each mode's cheapest window, and the cheapest mode then runs for `stay` windows:
 * STAY_MIN, doubling (up to STAY_MAX) while probes choose the same mode.
 * Every mode simulates the same accesses, so a window (a number of lean
 * misses) is the same work in each, wherever the program is steady.
 * AMEBA_SIM_MODE=filter|single|batch pins a mode (auto: the default).
 */
enum { MODE_FILTER, MODE_SINGLE, MODE_BATCH, MODES };
#define PROBE_WINDOWS 2
#define STAY_MIN 16
#define STAY_MAX 1024

static const char *const mode_names[MODES] = { "filter", "single", "batch" };

static __thread struct {
	uint64_t tsc;			/* at the last look */
	uint64_t cost[MODES];		/* the probe's cheapest window per mode */
	uint32_t left;			/* windows left in this mode, or probe step */
	uint32_t stay;			/* the last choice's stay */
	uint8_t mode, chosen;		/* running; chosen by the last probe */
	uint8_t probe;			/* the probe's step (1: order[0]), 0: none */
	uint8_t n;			/* the probe's modes */
	uint8_t order[MODES];		/* the probe's modes, in turn */
	uint8_t skip;			/* the window ending next is a switch's */
	uint8_t started;
} st __attribute__((tls_model("initial-exec")));

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
	__atomic_store_n(&f->on, m == MODE_FILTER, __ATOMIC_RELAXED);
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

/* A probe chose m, its modes' cheapest windows in st.cost (a function of
 * its own: test sim_line_filter stops here) */
static __attribute__((noinline)) void mode_chosen(int m)
{
	st.stay = m == st.chosen && st.stay ? (st.stay < STAY_MAX ? 2 * st.stay : STAY_MAX)
					    : STAY_MIN;
	st.chosen = (uint8_t)m;
	__asm__ __volatile__("" ::: "memory");
}

/* A probe from the running mode (its windows need no switch) */
static void probe_start(struct mon_thread *t)
{
	st.n = 0;
	st.order[st.n++] = st.mode;
	for (int i = 0; i < MODES; i++)
		if (i != st.mode && (i != MODE_BATCH || batch_possible(t)))
			st.order[st.n++] = (uint8_t)i;
	for (int i = 0; i < MODES; i++)
		st.cost[i] = UINT64_MAX;
	st.probe = 1;
	st.left = PROBE_WINDOWS;
}

/* A measured window of d ticks in the running mode */
static void window(struct mon_thread *t, struct mon_sim_core *c, uint64_t d)
{
	int best;

	if (!st.probe) {
		if (--st.left == 0)
			probe_start(t);
		return;
	}
	if (d < st.cost[st.mode])
		st.cost[st.mode] = d;
	if (--st.left)
		return;
	if (st.probe < st.n) {
		set_mode(t, c, st.order[st.probe++]);
		st.left = PROBE_WINDOWS;
		st.skip = 1;
		return;
	}
	best = st.order[0];
	for (int i = 1; i < st.n; i++)
		if (st.cost[st.order[i]] < st.cost[best])
			best = st.order[i];
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
			mon_sim_lf = NULL;
			if (mon_batch.owner == t)
				mon_batch.chooser = MON_BATCH_RULE;
		}
		return;
	}
	f->tick = f->window;
	f->clock0 = c->l1.clock;
	f->notes = 0;
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
