/*
 * dispatch.h - the MRI dispatcher: one request (JSON text) in, one reply
 * (JSON text) out, plus the events a session produces over time.
 *
 * The dispatcher is pure with respect to the monitor: everything it learns
 * or changes goes through a struct mri_monitor_ops. The runtime supplies the
 * real table (monitor/mri_server.c, over the mon_* functions); unit tests
 * and the fuzzer supply fakes (tests/mri/fake_ops.c). It validates every
 * field of every request at this boundary, so the ops may trust their
 * arguments (a range has start < end, a metric is in range, counts are
 * within the MRI_MAX_* limits).
 *
 * Threading: one dispatcher serves one session and is called by one thread
 * at a time (the server holds a lock around it). Ops are called on that
 * thread.
 */
#ifndef AMEBA_MRI_DISPATCH_H
#define AMEBA_MRI_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "mri.h"
#include "protocol.h"

#define MRI_NAME_MAX 2048		/* bytes of an object or bin name, with the NUL */
#define MRI_MAX_RANGES 65536		/* ranges over all counters of an experiment */
#define MRI_MAX_THREAD_IDS 65536	/* thread ids over all counters of an experiment */
#define MRI_MAX_PAGE 4096		/* objects, bins or threads in one reply */
#define MRI_MAX_SAMPLES 4096		/* samples in one reply */
#define MRI_OBJECT_SCAN 1000000		/* object records one request may examine */
#define MRI_REPLY_BUDGET (MRI_MSG_MAX - 65536)	/* a listing stops growing here */

/* Facts about the process (mri_process_info without the session's view). */
struct mri_proc_rec {
	int32_t pid;
	uint32_t nr_threads;
	int active;
	const char *program;		/* owned by the ops; valid until the next call */
	const char *backend;		/* NULL when none was ever started */
};

struct mri_backend_rec {
	const char *name;		/* NULL when no backend was ever started */
	uint32_t nr_metrics;
	int metrics[AMEBA_M_NR];
	const char *geometry;		/* NULL: "not applicable" */
};

/* A validated counter: ranges already include the objects' extents. */
struct mri_cond {
	int metric;
	uint32_t nr_ranges;
	const struct mri_range *ranges;
	uint32_t nr_threads;
	const uint32_t *threads;
	/* site bins (ids of the table nr_bins() refreshed last, resolved from
	 * the request's names): every block of theirs, also later ones */
	uint32_t nr_bins;
	const uint32_t *bins;		/* or MRI_BIN_STACK, MRI_BIN_TLS */
	/* bins (the same ids) whose blocks the ranges do not count */
	uint32_t nr_except;
	const uint32_t *except;
};

/*
 * Kind bins in mri_cond.bins: every thread's stack ("[stack]") or static TLS
 * block ("[tls]"), the oracle's bins of those kinds. The bins op lists them
 * after the site bins under those names.
 */
#define MRI_BIN_STACK (UINT32_MAX - 2)
#define MRI_BIN_TLS (UINT32_MAX - 1)

/* One thread's row of a reading: vals[nr], and before[nr] or NULL (see
 * cond_read). */
typedef void (*mri_per_thread_fn)(uint32_t thread_id, const uint64_t *vals, const uint64_t *before,
				  uint32_t nr, void *arg);

/*
 * What the dispatcher asks of a monitor. ctx is the table's own pointer,
 * passed back first. All callbacks are required but cond_swap.
 */
/* What a sampled reading says besides its values (struct mri_reading). */
struct mri_sampled_rec {
	uint32_t bursts, bursts_read;
	double fraction;
	uint64_t accesses;
};

struct mri_monitor_ops {
	/* The process: pid, program, threads, activity. 0 or an error. */
	int (*process)(void *ctx, struct mri_proc_rec *out);

	/* Threads ever registered; thread(id) fills out or returns
	 * AMEBA_ENOENT for an id without a record (yet). */
	uint32_t (*nr_threads)(void *ctx);
	int (*thread)(void *ctx, uint32_t id, struct mri_thread_info *out);

	/*
	 * Object records: ids 0 .. nr_objects()-1. object(id) fills out; with
	 * name != NULL it also writes the object's name there (at most
	 * MRI_NAME_MAX bytes, NUL-terminated) and sets out->name to it, else
	 * out->name is NULL (naming a heap block may symbolise: skip it when
	 * a filter already rejects the object). AMEBA_ENOENT for a bad id.
	 */
	uint32_t (*nr_objects)(void *ctx);
	int (*object)(void *ctx, uint32_t id, struct mri_object *out, char *name);
	/* Optional: how many records have stopped being live so far (only
	 * grows). NULL: the objects reply carries no nr_freed. */
	uint64_t (*nr_freed)(void *ctx);

	/* Site bins: ids 0 .. nr_bins()-1. nr_bins() refreshes the table when
	 * new sites appeared (slow: symbolises). bin() as object(). */
	uint32_t (*nr_bins)(void *ctx);
	int (*bin)(void *ctx, uint32_t id, struct mri_bin *out, char *name);
	/* The label of the bin of allocation site site_id (a sample's site_id,
	 * 1-based) into name (MRI_NAME_MAX bytes, refreshing the bins like
	 * nr_bins()). 0 or AMEBA_ENOENT for a site the monitor has no bin for. */
	int (*site_label)(void *ctx, uint32_t site_id, char *name);

	/* Names of the backends the monitor has, into names[0 .. max);
	 * returns how many. */
	uint32_t (*backends)(void *ctx, const char **names, uint32_t max);

	/*
	 * Starts counting with backend (NULL: the default) and writes the name
	 * of the one started to *chosen. 0, AMEBA_ENOENT (unknown name),
	 * AMEBA_EBUSY (another backend runs in this process), or the backend's
	 * error. Called once per attach.
	 */
	int (*attach)(void *ctx, const char *backend, const char **chosen);
	/* Disarms counters and samples and returns the monitor to the state it
	 * had before attach. Called once per successful attach. */
	void (*detach)(void *ctx);
	/* The backend in use. */
	int (*backend)(void *ctx, struct mri_backend_rec *out);

	/* mon_cond_arm / mon_cond_read (mon.h): nr == 0 disarms. */
	int (*cond_arm)(void *ctx, const struct mri_cond *c, uint32_t nr, uint64_t *gen);
	/*
	 * cond_arm and the oracle mark `label` at the instant the counters
	 * start (mon_oracle_mark_armed): returns cond_arm's result; the mark's
	 * goes to *mark_err as mark() would return it, with path and why.
	 * NULL: the dispatcher arms, then asks mark() (a mark some time after).
	 */
	int (*cond_arm_mark)(void *ctx, const struct mri_cond *c, uint32_t nr, uint64_t *gen,
			     const char *label, char *path, size_t len, char *why, size_t wlen,
			     int *mark_err);
	/* before[nr]: mon_cond_read's (what served counters' objects counted
	 * until the arm); all 0 from a monitor that serves none. */
	int (*cond_read)(void *ctx, uint64_t gen, uint64_t *total, uint64_t *before, uint32_t nr,
			 mri_per_thread_fn per_thread, void *arg);
	/* Optional (NULL: start cannot replace): arms c in place of
	 * generation old_gen and reads old_gen as cond_read would in the same
	 * instant (mon_cond_arm_swap). On failure old_gen stays armed. */
	int (*cond_swap)(void *ctx, const struct mri_cond *c, uint32_t nr, uint64_t *gen,
			 uint64_t old_gen, uint64_t *total, uint64_t *before, uint32_t old_nr,
			 mri_per_thread_fn per_thread, void *arg);

	/* Optional (NULL: no sampled mode): starts sampled mode after attach
	 * (cfg NULL stops it). 0 or an AMEBA_E* code. */
	int (*sampled)(void *ctx, const struct mri_sampling *cfg);
	/* Optional: after a cond_read or cond_swap of gen in sampled mode, the
	 * 95% half-widths of its values and deltas (-1: unknown) and *out; 0,
	 * else AMEBA_ENOENT (exact counts: the reading says nothing more). */
	int (*cond_info)(void *ctx, uint64_t gen, double *ci, double *ci_delta, uint32_t nr,
			 struct mri_sampled_rec *out);

	/* mon_sample_arm / mon_sample_drain (period == 0 disarms). */
	int (*sample_arm)(void *ctx, int metric, uint64_t period, int randomized, uint64_t seed);
	uint32_t (*sample_drain)(void *ctx, struct mri_sample *out, uint32_t max, uint64_t *lost);

	/* CLOCK_MONOTONIC in ns (a fake may return a scripted clock). */
	uint64_t (*now_ns)(void *ctx);

	/*
	 * mon_oracle_mark (mon.h): writes the oracle mark `label` (validated:
	 * MRI_MARK_LABEL_MAX bytes of [A-Za-z0-9._-], not starting with '.')
	 * and its path to path[len]: 0; AMEBA_ENOENT when the target writes
	 * no oracle, why[wlen] saying so (a reply, not an error); other codes
	 * are errors, why saying what failed. NULL: no marks in this monitor.
	 */
	int (*mark)(void *ctx, const char *label, char *path, size_t len, char *why, size_t wlen);
};

#define MRI_MARK_LABEL_MAX 64

struct mri_disp;

/*
 * A dispatcher for one session; peer_pid is the client's pid (for
 * messages; 0 when unknown). NULL when out of memory.
 */
struct mri_disp *mri_disp_new(const struct mri_monitor_ops *ops, void *ctx, int32_t peer_pid);

/*
 * Ends the session's effects on the monitor: stops the experiment and the
 * sample stream and detaches when attached. Idempotent. Call it when the
 * client leaves, however it leaves.
 */
void mri_disp_end(struct mri_disp *d);

/* Frees d without calling any op (a forked child discarding its parent's
 * session, or after mri_disp_end). d may be NULL. */
void mri_disp_free(struct mri_disp *d);

enum mri_disp_status {
	MRI_DISP_OK = 0,		/* send the reply, keep the session */
	MRI_DISP_CLOSE = 1,		/* send the reply, then end the session ("bye") */
};

/*
 * Handles one request of len bytes (need not be NUL-terminated). *reply
 * receives the reply text (malloc'd, NUL-terminated; *reply_len its length)
 * - an error reply for anything malformed or out of order. Returns
 * MRI_DISP_OK, MRI_DISP_CLOSE, or AMEBA_ENOMEM (then *reply is NULL).
 */
int mri_disp_handle(struct mri_disp *d, const char *req, size_t len, char **reply, size_t *reply_len);

/*
 * An error reply without a request to parse (e.g. an oversized frame):
 * id is unknown (null). NULL when out of memory.
 */
char *mri_disp_error_text(int code, const char *msg, size_t *len);

/*
 * When the next timed event is due (CLOCK_MONOTONIC ns, ops->now_ns's
 * clock), UINT64_MAX when none: the server sleeps until then.
 */
uint64_t mri_disp_next_due_ns(struct mri_disp *d);

/*
 * The next event that is due now: returns 1 and sets *ev (malloc'd text)
 * and *len, 0 when there is none, AMEBA_ENOMEM. Call until it returns 0.
 */
int mri_disp_poll_event(struct mri_disp *d, char **ev, size_t *len);

/* The "exit" event: the final reading of the running experiment (if any).
 * NULL when out of memory. Later requests are answered with AMEBA_EEXITED. */
char *mri_disp_exit_event(struct mri_disp *d, size_t *len);

/* Name of an AMEBA_E* code on the wire ("EINVAL"); "EUNKNOWN" otherwise. */
const char *mri_error_name(int code);

#endif /* AMEBA_MRI_DISPATCH_H */
