/*
 * provider.h - the ContextProvider: the agent's connection to a monitor
 * (AMEBA, seed 004). The search loop sees only this interface; the MRI
 * implementation (provider_mri.c) talks to a target through mri/mri.h, and
 * a scripted fake (provider_fake.c) serves the unit tests.
 *
 *   refresh()     discovery: backend, metrics, threads, objects, bins
 *   experiment()  arms the counters (and sample stream) of one experiment,
 *                 waits one interval, reads the values, disarms
 *   close()       detaches; the target continues unharmed
 *
 * All calls run on the agent's main thread. A provider reports the end of
 * the target by AMEBA_EEXITED from refresh() or res->r.target_exited from
 * experiment() (whose values then hold what was counted until the end, as
 * far as the monitor could deliver them).
 */
#ifndef AMEBA_AGENT_PROVIDER_H
#define AMEBA_AGENT_PROVIDER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "ameba/plugin.h"

/* What the monitor knows, as the strategies' host tables. Owned by the
 * provider; valid until the next refresh() or close(). */
struct agent_world {
	int32_t pid;
	const char *program;		/* executable path or name */
	const char *backend;		/* "count", "sim", ... */
	int exact;
	/* sampled mode: since when (s after the attach; 0: from the start),
	 * the bursts measured, the share of the accesses they simulated, the
	 * mean relative half-width of the 95% interval of each interval's
	 * largest count (-1: unknown) */
	int sampled;
	double sampled_since_s;
	uint64_t bursts;
	double fraction, rel_ci;
	uint32_t period_us, warm_us, burst_us;
	int metrics[AMEBA_M_NR];
	uint32_t nr_metrics;
	const struct ameba_object *objects;	/* sorted by start, non-overlapping */
	uint32_t nr_objects;
	const struct ameba_object *bins;
	uint32_t nr_bins;
	const struct ameba_thread *threads;	/* indexed by dense id */
	uint32_t nr_threads;
};

/* The values of one experiment; owned by the provider, valid until the next
 * experiment() or close(). */
struct agent_exp_result {
	struct ameba_results r;
	int interrupted;		/* *stop was set during the interval */
	/* sampled mode: ci[i] the half-width of the 95% interval of counter
	 * i's value (-1: unknown); NULL for exact counts */
	const double *ci;
	/* exp->mark: whether the monitor wrote it, and its path (or why not) */
	int mark_taken;			/* with the experiment's start (exact): no separate mark */
	int mark_written;
	char mark_note[512];
};

struct agent_provider;

struct agent_provider_ops {
	const char *name;
	/* Fills *w with the current tables. 0, AMEBA_EEXITED, or AMEBA_E*. */
	int (*refresh)(struct agent_provider *p, struct agent_world *w);
	/*
	 * Runs exp for interval_ms (exp->interval_ms when non-zero). Returns
	 * early, with the values counted so far, when *stop becomes non-zero
	 * (res->interrupted) or the target exits (res->r.target_exited).
	 * 0 or AMEBA_E* (AMEBA_EINVAL / AMEBA_ENOTSUP: the monitor refused the
	 * request; msg says why).
	 */
	int (*experiment)(struct agent_provider *p, const struct ameba_experiment *exp,
			  uint32_t interval_ms, const volatile sig_atomic_t *stop,
			  struct agent_exp_result *res);
	/* The last error in words (may be ""), never NULL. */
	const char *(*error)(struct agent_provider *p);
	/* Detaches and frees p. */
	void (*close)(struct agent_provider *p);
};

struct agent_provider {
	const struct agent_provider_ops *ops;
	/* Optional: called once, right after the first experiment is armed
	 * (`ameba run` then lets the target's main() start). */
	void (*armed)(void *arg);
	void *armed_arg;
	/* Optional (set by the search): a note for the user that does not stop
	 * the measurement (breakpoints a thread refused, ...): printed and kept
	 * in the report's warnings. NULL: the provider says nothing. */
	void (*warn)(void *arg, const char *msg);
	void *warn_arg;
};

/* ---- result buffers (resbuf.c): how a provider hands out its values ---- */

struct agent_resbuf {
	uint64_t *values;		/* [nr] */
	uint64_t *pt;			/* [nr * nt]: counter i's row at i * nt */
	const uint64_t **rows;		/* [nr]: the rows handed out, or NULL */
	uint32_t *ids;			/* [nt]: the threads of the entries */
	/* after a switch (agent_resbuf_carry()): what values and pt include of
	 * the replaced experiment, AMEBA_NOT_CARRIED in carried[i] for a
	 * counter that had no identical one (ameba_results.carried) */
	uint64_t *carried;		/* [nr] */
	uint64_t *carried_pt;		/* [nr * nt], as pt */
	const uint64_t **carried_rows;	/* [nr] */
	uint32_t nr, nt;
	int has_ids;			/* else entry k is thread k's */
	int has_carry;
	size_t cap_values, cap_pt, cap_rows, cap_ids, cap_carried, cap_carried_pt, cap_carried_rows;
};

/* Zeroed buffers for nr counters and nt threads (ids: theirs, or NULL for
 * 0..nt-1). 0, or AMEBA_ENOMEM with b empty (nr = nt = 0). */
int agent_resbuf_reset(struct agent_resbuf *b, uint32_t nr, uint32_t nt, const uint32_t *ids);
/* Counter i's per-thread row. */
static inline uint64_t *agent_resbuf_row(struct agent_resbuf *b, uint32_t i)
{
	return b->pt + (size_t)i * b->nt;
}
/* Zeroed carry buffers for b's counters and threads, handed out with the
 * values (ameba_results.carried). 0 or AMEBA_ENOMEM. */
int agent_resbuf_carry(struct agent_resbuf *b);
/* Hands b to res: values, a row for each counter of exp that asked for
 * per-thread values, the threads, and the carry if any. */
void agent_resbuf_publish(struct agent_resbuf *b, const struct ameba_experiment *exp,
			  struct agent_exp_result *res);
void agent_resbuf_free(struct agent_resbuf *b);

/* ---- where-sets (whereset.c): what counter i of an experiment counts ---- */

/* The bin of object o in where-sets (its site, "[stack]", "[tls]"), or NULL. */
const char *agent_obj_bin(const struct ameba_object *o);
/* Whether counter c counts thread `thread` (no threads named: all). */
int agent_counter_has_thread(const struct ameba_counter *c, uint32_t thread);
/* Whether o is in one of counter i's bins (agent_obj_bin()). */
int agent_counter_in_bins(const struct ameba_experiment *exp, uint32_t i,
			  const struct ameba_object *o);
/* Whether counter i names bins at all. */
int agent_counter_has_bins(const struct ameba_experiment *exp, uint32_t i);
/* Whether counter i's ranges skip o (its bin is one of the exceptions). */
int agent_counter_excepts(const struct ameba_experiment *exp, uint32_t i,
			  const struct ameba_object *o);
/*
 * Whether counter i counts an access at addr by thread `thread` to object
 * o (NULL: not known): its threads, ranges, bins and exceptions, as
 * plugin.h states them.
 */
int agent_counter_counts(const struct ameba_experiment *exp, uint32_t i, uintptr_t addr,
			 uint32_t thread, const struct ameba_object *o);
/*
 * The one object or bin counter i of exp measures whole, by name (an
 * object of w whose extent is its one range, or its one bin), or NULL: a
 * span, several, a thread list.
 */
const char *agent_counter_object(const struct ameba_experiment *exp, uint32_t i,
				 const struct agent_world *w);
/* The object of nr (sorted by start, non-overlapping) holding addr, or NULL. */
const struct ameba_object *agent_object_at(const struct ameba_object *v, uint32_t nr,
					   uintptr_t addr);

/* ---- the MRI provider (provider_mri.c) ---- */

/*
 * Connects to the monitor of process pid and attaches the backend named
 * backend (NULL: the runtime's choice), waiting up to wait_ms for the
 * socket to appear (0: no wait). child_pid > 0 is a process the agent
 * started: the wait ends early, with AMEBA_EEXITED, when it exits (its wait
 * status in *child_status). On failure NULL is returned, *err holds the
 * code and msg says why, naming the socket path and the fix.
 */
/*
 * Sampled simulation (docs/simulator.md, "Sampled simulation"): exact
 * counts throughout (AGENT_EXACT), sampled from the attach (AGENT_SAMPLED),
 * or exact until after_ms of the attach have passed, then sampled
 * (AGENT_AUTO: short runs stay exact, long ones finish in bounded time).
 * Only with the sim backend; others count exactly.
 */
enum { AGENT_EXACT, AGENT_SAMPLED, AGENT_AUTO };
struct agent_sampling {
	int mode;
	uint64_t after_ms;
	uint32_t period_us, warm_us, burst_us;
};

struct agent_provider *agent_provider_mri_open(int32_t pid, const char *backend, uint32_t wait_ms,
					       int32_t child_pid, int *child_status,
					       const struct agent_sampling *sampling,
					       const volatile sig_atomic_t *stop, int *err,
					       char *msg, size_t len);

/* ---- the fake provider (provider_fake.c): scripted worlds for tests ---- */

/*
 * A fake target: objects with fixed per-interval event rates per thread and
 * metric. A counter's value is the sum, over the objects its ranges cover,
 * of rate x (bytes covered / object size), over the threads it counts
 * (with a span for the thread: bytes of the span covered / span size).
 * The target "exits" after nr_intervals experiments (0: never).
 */
struct agent_fake_object {
	struct ameba_object obj;
	/* rates[t][m]: events per interval of thread t, metric m */
	double rates[8][AMEBA_M_NR];
	/* the rates apply from this experiment on (1-based; 0 = from the first) */
	uint32_t from_experiment;
	/* span[t]: the bytes [start, end) thread t touches, evenly; {0, 0}: the
	 * whole object */
	uintptr_t span[8][2];
};

struct agent_fake_spec {
	const char *program;
	const char *backend;
	const int *metrics;
	uint32_t nr_metrics;
	const struct agent_fake_object *objects;	/* sorted by start */
	uint32_t nr_objects;
	uint32_t nr_threads;		/* <= 8 */
	uint32_t nr_intervals;		/* the target exits after this many; 0 = never */
	uint32_t interval_delay_ms;	/* real time slept per experiment (0: none) */
	uint32_t exit_in_experiment;	/* experiment k (1-based) ends with the exit; 0 never */
};

struct agent_provider *agent_provider_fake_open(const struct agent_fake_spec *spec);
/* Experiments run so far, and the counters of the last one. */
uint32_t agent_provider_fake_nr_experiments(struct agent_provider *p);
uint32_t agent_provider_fake_last_nr_counters(struct agent_provider *p);
/* Counters of experiment k (1-based, up to 64), 0 when unknown. */
uint32_t agent_provider_fake_nr_counters_at(struct agent_provider *p, uint32_t k);

#endif
