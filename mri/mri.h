/*
 * mri.h - the Monitoring Request Interface (MRI): how a tool asks ameba's
 * monitor *what* to count (a metric), *where* (address ranges, objects), for
 * *whom* (threads) and *when* (experiments), after Kereku & Gerndt's MRI for
 * the EPC monitor (design.md section 6).
 *
 * One API, two ways to reach a monitor:
 *   mri_open_pid()    a running program built with `ameba cc`, through its
 *                     MRI socket (the wire protocol of docs/mri.md)
 *   mri_open_local()  the monitor of the calling process itself (only in a
 *                     program linked with libameba-rt); requests run the
 *                     same dispatcher in-process, without a socket
 *
 * Conventions:
 *  - The opaque session handle comes first in every call. Functions return 0
 *    (or a non-negative count where stated) on success and a negative
 *    AMEBA_E* code on failure; ameba_strerror() names the code and
 *    mri_errmsg() gives the whole story of the last failure (the server's
 *    message names the bad field and value).
 *  - Ranges are half-open [start, end).
 *  - Strings and arrays inside results belong to the session and stay valid
 *    until the next call of the same function on the session (an event's
 *    until the next mri_next_event) or mri_close(). Copy what you keep.
 *  - A session is used by one thread at a time.
 *  - Counter values are exact 64-bit integers on the wire; this library
 *    reads them exactly up to 2^53 (about 104 days of a billion events per
 *    second).
 *
 * A typical session:
 *
 *     struct mri_session *s;
 *     if (mri_open_pid(&s, pid, 5000)) { fprintf(stderr, "%s\n", mri_errmsg(s)); ... }
 *     mri_attach(s, NULL);                           // start the default backend
 *     struct mri_counter c[2] = {
 *         { .metric = AMEBA_M_L1D_MISS, .nr_objects = 1, .objects = &grid_id },
 *         { .metric = AMEBA_M_L1D_MISS },            // everything: the total
 *     };
 *     uint64_t exp;
 *     mri_experiment_start(s, c, 2, 0, &exp);
 *     ... wait ...
 *     struct mri_reading r;
 *     mri_experiment_read(s, exp, 0, &r);            // r.values[i], r.deltas[i]
 *     mri_experiment_stop(s, exp, NULL);
 *     mri_detach(s);                                 // the target is dormant again
 *     mri_close(s);
 */
#ifndef AMEBA_MRI_H
#define AMEBA_MRI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ameba/ameba.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MRI_PROTOCOL_VERSION 1

struct mri_session;

/* ---- sessions ---- */

/*
 * Connects to the MRI server of process pid. The socket is looked for in the
 * target's $XDG_RUNTIME_DIR/ameba/PID.sock (read from /proc/PID/environ),
 * then the caller's $XDG_RUNTIME_DIR/ameba/, then /tmp/ameba-UID/ for the
 * target's and the caller's uid. timeout_ms bounds connecting and every later
 * request (-1: no limit; mri_set_timeout changes it).
 *
 * Like sqlite3_open, *out receives a session even when the call fails (unless
 * memory ran out, then *out is NULL): read mri_errmsg(*out), then
 * mri_close(*out). Errors: AMEBA_ENOENT (no such process, or no socket: not
 * built with ameba cc, or AMEBA_MRI=0), AMEBA_EPERM (another user's process,
 * or refused by the server), AMEBA_EBUSY (another client is attached),
 * AMEBA_EABI (the server speaks another protocol version), AMEBA_ETIMEDOUT,
 * AMEBA_EIO.
 */
AMEBA_API int mri_open_pid(struct mri_session **out, pid_t pid, int timeout_ms);

/* Like mri_open_pid, for an explicit socket path. */
AMEBA_API int mri_open_path(struct mri_session **out, const char *socket_path, int timeout_ms);

/*
 * Opens a session on the calling process's own monitor. Only one session
 * (local or remote) can be open on a process at a time: AMEBA_EBUSY
 * otherwise. AMEBA_ENOTSUP when the program is not linked with libameba-rt.
 */
AMEBA_API int mri_open_local(struct mri_session **out);

/*
 * Ends the session: a still attached session detaches first (the target
 * goes dormant again), then the connection closes. s may be NULL.
 */
AMEBA_API void mri_close(struct mri_session *s);

/* The last failure of s in one line (never NULL; "" before any failure). */
AMEBA_API const char *mri_errmsg(const struct mri_session *s);

/* Per-request timeout in ms for later calls (-1: no limit). 0 or AMEBA_EINVAL. */
AMEBA_API int mri_set_timeout(struct mri_session *s, int timeout_ms);

/* Round trip of the cheapest request (the server answers without touching
 * the monitor): a liveness check and the unit of protocol cost. */
AMEBA_API int mri_ping(struct mri_session *s);

/* ---- discovery ---- */

struct mri_process_info {
	int32_t pid;
	uint32_t protocol;		/* MRI_PROTOCOL_VERSION of the server */
	uint32_t nr_threads;		/* threads ever registered (ids 0 .. nr-1) */
	int attached;			/* this session has attached a backend */
	int active;			/* the hooks deliver accesses now: attached,
					 * or counting for AMEBA_ORACLE */
	const char *program;		/* /proc/PID/exe */
	const char *runtime_version;	/* AMEBA_VERSION_STRING of the target */
	const char *backend;		/* the backend in use, or NULL */
};
AMEBA_API int mri_process(struct mri_session *s, struct mri_process_info *out);

struct mri_thread_info {
	uint32_t id;			/* ameba thread id: 0 = main, then creation order */
	int32_t tid;			/* OS thread id */
	int exited;
};
/*
 * Fills out[0 .. max) with the threads whose id is offset or more, in id
 * order. Returns how many were filled; *nr_total (optional) receives the
 * number of threads ever registered.
 */
AMEBA_API int mri_threads(struct mri_session *s, uint32_t offset, struct mri_thread_info *out,
			  uint32_t max, uint32_t *nr_total);

/* Object kinds, in the order of the wire names "global", "heap", "mmap",
 * "stack", "tls", "other". */
enum mri_obj_kind {
	MRI_OBJ_GLOBAL,
	MRI_OBJ_HEAP,
	MRI_OBJ_MMAP,
	MRI_OBJ_STACK,
	MRI_OBJ_TLS,
	MRI_OBJ_OTHER,
	MRI_OBJ_NR_KINDS
};
/* Wire name of a kind ("heap"), or NULL when out of range. */
AMEBA_API const char *mri_obj_kind_name(int kind);

#define MRI_END UINT32_MAX		/* cursor value: the listing is complete */
#define MRI_NO_BIN UINT32_MAX		/* bin_id of an object that is not in a site bin */

struct mri_object {
	uint32_t id;			/* the object's id in the target (its table index) */
	int kind;			/* enum mri_obj_kind */
	int live;			/* not freed / unmapped / unloaded */
	uint32_t site_id;		/* heap, mmap: allocation site; else 0 */
	uint32_t bin_id;		/* heap, mmap: the site bin (mri_bins); else MRI_NO_BIN */
	uint64_t start, end;		/* [start, end) */
	uint64_t sz_bytes;		/* requested size */
	const char *name;		/* global: symbol; heap, mmap: site-bin label
					 * "func@file.c:LINE" (a file mapping's starts with the
					 * file: "in.mat <- load@io.c:52"); "[stack T3]",
					 * "[tls T3]", "[other]" */
	const char *file;		/* mmap of a file: the file's full path; else NULL */
	uint64_t file_off;		/* mmap of a file: the file offset at start; else 0 */
};

struct mri_object_query {
	uint32_t kinds;			/* bits (1u << MRI_OBJ_*) of the kinds wanted; 0: all */
	int live_only;			/* skip freed blocks and unloaded globals */
	const char *name;		/* only objects with exactly this name, or NULL */
};

/*
 * One page of the object table. *cursor is where to continue: start at 0;
 * each call advances it, and sets it to MRI_END when the table is exhausted.
 * A page may hold fewer than max objects without being the last one (the
 * server bounds the work and the reply size of one request). q may be NULL.
 * Returns the number of objects filled.
 */
AMEBA_API int mri_objects(struct mri_session *s, const struct mri_object_query *q,
			  uint32_t *cursor, struct mri_object *out, uint32_t max);
/* The size of the object table (ids below it exist) in the last objects reply. */
AMEBA_API uint32_t mri_objects_total(const struct mri_session *s);
/* Records that had stopped being live (freed, unmapped, unloaded, ended
 * threads) when the last objects reply was made; only grows. UINT64_MAX
 * when the monitor did not say (no objects reply yet, an older monitor). */
AMEBA_API uint64_t mri_objects_freed(const struct mri_session *s);

/* Allocation-site bins: the heap and mmap blocks of one source-level site. */
struct mri_bin {
	uint32_t id;
	uint64_t nr_objects;		/* blocks ever allocated at the site */
	uint64_t sz_bytes;		/* bytes ever allocated at the site */
	const char *name;		/* "alloc_counters@false_sharing.c:41" */
	const char *via;		/* the allocation wrapper the site's name skipped,
					 * "xmalloc@util.c:12", or NULL */
};
/* One page of bins, with a cursor as mri_objects. Returns the number filled. */
AMEBA_API int mri_bins(struct mri_session *s, uint32_t *cursor, struct mri_bin *out, uint32_t max);

/* Code regions (functions, OpenMP parallel regions, user phases). None are
 * tracked yet: a later version of the runtime adds them; today this always
 * returns 0 regions. */
struct mri_region {
	uint32_t id;
	const char *kind;
	const char *name;
};
AMEBA_API int mri_regions(struct mri_session *s, struct mri_region *out, uint32_t max);

struct mri_metric {
	int metric;			/* AMEBA_M_* */
	int available;			/* the attached backend provides it */
	const char *name, *unit, *desc;
};
/* The metric table (AMEBA_M_NR entries); returns the number filled. */
AMEBA_API int mri_metrics(struct mri_session *s, struct mri_metric *out, uint32_t max);

#define MRI_MAX_BACKENDS 8

struct mri_backend_info {
	const char *name;		/* the backend in use, or NULL before attach */
	uint32_t nr_metrics;
	int metrics[AMEBA_M_NR];	/* AMEBA_M_* it provides */
	const char *geometry;		/* cache geometry as text; "not applicable"
					 * for backends without one (count) */
	uint32_t nr_backends;
	const char *backends[MRI_MAX_BACKENDS];	/* backends the runtime has */
};
AMEBA_API int mri_backend(struct mri_session *s, struct mri_backend_info *out);

/* ---- attach ---- */

/*
 * Starts counting with the named backend ("sim", "count"); NULL chooses the
 * one already in use, else "sim" when the runtime has it, else "count".
 * A process runs one backend for its lifetime: AMEBA_EBUSY for another name.
 * AMEBA_EINVAL when already attached.
 */
AMEBA_API int mri_attach(struct mri_session *s, const char *backend);

/*
 * Sampled simulation (docs/simulator.md, "Sampled simulation"): between
 * bursts the program only tallies its accesses; every period (drawn from
 * [period/2, 3*period/2]) all threads simulate warm_us uncounted, then
 * burst_us counted. Readings are then estimates with intervals (struct
 * mri_reading). Times in microseconds of wall time.
 */
/*
 * The default cycle (`ameba run`, the MRI's `sampled` without lengths):
 * measured by bench/sampled_accuracy (docs/simulator.md, "Sampled
 * simulation"): against 50/5/10 ms, a three-phase program's shares were
 * off by over 5 points in 1 run of 8 instead of 6, at the same cost;
 * a two-thread false-sharing loop's coherence misses are undercounted more
 * (share error ~10 points instead of ~5).
 */
#define MRI_SAMPLED_PERIOD_US 20000
#define MRI_SAMPLED_WARM_US 2000
#define MRI_SAMPLED_BURST_US 4000

struct mri_sampling {
	uint32_t period_us;
	uint32_t warm_us;
	uint32_t burst_us;
	uint64_t seed;			/* the period generator's (0: a fixed one) */
};

/* mri_attach in sampled mode (cfg NULL: as mri_attach). AMEBA_ENOTSUP from
 * a monitor without sampled mode, AMEBA_EINVAL for bad lengths (period <
 * 100 us, burst < 10 us). */
AMEBA_API int mri_attach_sampled(struct mri_session *s, const char *backend,
				 const struct mri_sampling *cfg);
/* An attached session goes sampled now; a running experiment goes on, its
 * estimates adding to its exact counts so far. AMEBA_EBUSY when sampled
 * already. */
AMEBA_API int mri_sampled(struct mri_session *s, const struct mri_sampling *cfg);

/* Stops the experiment and sample stream and returns the hooks to dormancy
 * (unless AMEBA_ORACLE keeps them counting). AMEBA_EINVAL when not attached. */
AMEBA_API int mri_detach(struct mri_session *s);

/* ---- conditional counters and experiments ---- */

struct mri_range {
	uint64_t start, end;		/* [start, end) */
};

/*
 * One conditional counter: metric x where x who. Where is the union of the
 * ranges and the objects' extents; none of either means the whole address
 * space (the total). Who is a set of ameba thread ids; none means all
 * threads (ids of threads not started yet are allowed).
 */
struct mri_counter {
	int metric;			/* AMEBA_M_*, provided by the backend */
	uint32_t nr_ranges;
	const struct mri_range *ranges;
	uint32_t nr_objects;
	const uint32_t *objects;	/* object ids (mri_objects) */
	uint32_t nr_threads;
	const uint32_t *threads;
	/* Site bins by name (mri_bins): every heap/mmap block of theirs, also
	 * blocks allocated after the start, resolved by the monitor per access */
	uint32_t nr_bins;
	const char *const *bins;
	/* Bins (names as in bins) whose blocks the ranges and objects do not
	 * count: an address search measures the rest of the space apart from
	 * the units it measures by bin (docs/mri.md, start) */
	uint32_t nr_except;
	const char *const *except;
};

/*
 * Counter values at one instant. values[i] counts since the experiment
 * started; deltas[i] since the previous reading of the experiment (read or
 * interval event); t_ns is the target's CLOCK_MONOTONIC at the reading and
 * dt_ns the time since the previous one. With MRI_READ_THREADS, one row of
 * nr values per thread that counted anything: thread_values[k * nr + i] is
 * counter i of thread thread_ids[k].
 * before (NULL when the monitor sent none): what each counter's objects
 * counted from their births until the experiment started, for counters the
 * monitor serves from its per-object counts (docs/mri.md, "before");
 * thread_before[k * nr + i] the same per thread (NULL when none).
 */
struct mri_reading {
	uint64_t experiment;
	uint64_t seq;			/* 1 for the first reading, then +1 */
	uint64_t t_ns, dt_ns;
	uint32_t nr;
	const uint64_t *values;
	const uint64_t *deltas;
	uint32_t nr_threads;
	const uint32_t *thread_ids;
	const uint64_t *thread_values;
	const uint64_t *before;
	const uint64_t *thread_before;
	/*
	 * Sampled mode (mri_attach_sampled): values, deltas and rows are
	 * estimates; ci[i] and ci_deltas[i] the half-widths of the 95%
	 * intervals of values[i] and deltas[i] (-1: unknown, too few bursts).
	 * sampled == 0 (and ci NULL) in exact mode.
	 */
	int sampled;
	const double *ci, *ci_deltas;
	uint32_t bursts, bursts_read;	/* since the start; in this reading's window */
	double fraction;		/* accesses simulated in bursts / all accesses */
	uint64_t accesses;		/* accesses since the start */
};

#define MRI_READ_THREADS (1u << 0)

#define MRI_MAX_COUNTERS 4096		/* counters in one experiment */

/*
 * Arms counters c[0 .. nr) and starts an experiment: every counter starts at
 * zero now. interval_ms > 0 asks for an MRI_EV_INTERVAL event with a reading
 * every interval_ms (mri_next_event). *experiment receives its id. One
 * experiment runs at a time (AMEBA_EBUSY); needs an attached session.
 */
AMEBA_API int mri_experiment_start(struct mri_session *s, const struct mri_counter *c, uint32_t nr,
				   uint32_t interval_ms, uint64_t *experiment);

/*
 * The same, with the oracle mark `mark` (as mri_mark's) taken at the instant
 * the counters start: the target reads its oracle counts while every thread
 * waits to count into the new counters, so the mark and the experiment
 * cover exactly the same events (to one in-flight access per thread;
 * docs/oracle.md). *written and path[len] as mri_mark's. The experiment
 * starts whether or not the mark could be written.
 */
AMEBA_API int mri_experiment_start_marked(struct mri_session *s, const struct mri_counter *c,
					  uint32_t nr, uint32_t interval_ms, const char *mark,
					  uint64_t *experiment, int *written, char *path,
					  size_t len);

/*
 * Starts c in place of the running experiment `running` in one step: no
 * access falls between the two. final (optional) receives the old one's
 * last reading, per thread, taken in the same instant. AMEBA_ENOTSUP from
 * a monitor that cannot (stop, then start). On failure `running` runs on.
 */
AMEBA_API int mri_experiment_replace(struct mri_session *s, uint64_t running,
				     const struct mri_counter *c, uint32_t nr, uint32_t interval_ms,
				     uint64_t *experiment, struct mri_reading *final);

/* Reads the running experiment now (flags: MRI_READ_THREADS). */
AMEBA_API int mri_experiment_read(struct mri_session *s, uint64_t experiment, unsigned flags,
				  struct mri_reading *out);

/* Stops the experiment; final (optional) receives its last reading. */
AMEBA_API int mri_experiment_stop(struct mri_session *s, uint64_t experiment,
				  struct mri_reading *final);

/* ---- sample streams ---- */

struct mri_sample {
	uint64_t addr;			/* data address */
	uint64_t pc;			/* code address of the access */
	uint32_t thread_id;
	uint32_t weight;		/* events of the metric this access caused */
	/* The allocation site of the heap or mmap block the access hit (0: any
	 * other object), and the label of its bin ("make@app.c:12", NULL when
	 * site_id is 0 or has no bin). The label belongs to the session and
	 * stays valid until mri_close; it names the bin as mri_bins does. */
	uint32_t site_id;
	const char *site;
};

/*
 * Delivers every period-th event of metric (per thread); randomized != 0
 * draws each distance uniformly from [period/2, 3*period/2] with a generator
 * seeded from seed. Prime periods avoid locking onto loop strides. Needs an
 * attached session; replaces a running stream.
 */
AMEBA_API int mri_samples_start(struct mri_session *s, int metric, uint64_t period, int randomized,
				uint64_t seed);
/* Moves up to max pending samples into out; *lost (optional) receives the
 * samples dropped since the last read because a thread's buffer was full.
 * Returns the number of samples. */
AMEBA_API int mri_samples_read(struct mri_session *s, struct mri_sample *out, uint32_t max,
			       uint64_t *lost);
AMEBA_API int mri_samples_stop(struct mri_session *s);

/* ---- events ---- */

enum mri_event_kind {
	MRI_EV_THREAD_START = 1,	/* thread_id, tid (subscription MRI_SUB_THREADS) */
	MRI_EV_THREAD_EXIT,		/* thread_id, tid (MRI_SUB_THREADS) */
	MRI_EV_INTERVAL,		/* reading: an experiment with interval_ms */
	MRI_EV_EXIT,			/* the target exited; reading: the final counts of
					 * the running experiment (nr == 0 when none ran) */
	MRI_EV_REGION,			/* region counts (MRI_SUB_REGIONS; none yet) */
};

#define MRI_SUB_THREADS (1u << 0)
#define MRI_SUB_REGIONS (1u << 1)

/* Chooses the optional events (MRI_SUB_*); interval and exit events are
 * always delivered. */
AMEBA_API int mri_subscribe(struct mri_session *s, unsigned mask);

/*
 * Asks the target to write an oracle mark now: a snapshot of its oracle
 * counts, as the file AMEBA_ORACLE's name + ".mark-" + label
 * (docs/oracle.md, "Marks"; label: up to 64 of [A-Za-z0-9._-], not
 * starting with '.'). 0 with *written = 1 and the file's path in
 * path[len]; 0 with *written = 0 and the reason in path[len] when the
 * target runs without AMEBA_ORACLE; AMEBA_E* when the request or the
 * write failed.
 */
AMEBA_API int mri_mark(struct mri_session *s, const char *label, int *written, char *path,
		       size_t len);

struct mri_event {
	int kind;			/* enum mri_event_kind */
	uint32_t thread_id;
	int32_t tid;
	struct mri_reading reading;
};

/*
 * Waits up to timeout_ms (-1: forever, 0: poll) for the next event. Returns
 * 0 with *ev filled, AMEBA_ETIMEDOUT when none came, or AMEBA_EEXITED once
 * the exit event has been returned (or the connection was lost). Events that
 * arrive while another call waits for its reply are queued (the oldest
 * interval events are dropped beyond a few thousand).
 */
AMEBA_API int mri_next_event(struct mri_session *s, struct mri_event *ev, int timeout_ms);

/*
 * After the target exited during an experiment (a call returned
 * AMEBA_EEXITED): its final reading. AMEBA_ENOENT when the exit event
 * carried none (no experiment ran, or the connection was lost without it).
 */
AMEBA_API int mri_final_reading(struct mri_session *s, struct mri_reading *out);

/*
 * Sends one raw request (a JSON object; "v" and "id" are filled in) and
 * returns the reply text in *reply (malloc'd, the caller frees it). Returns
 * 0 when the reply says ok, its error code otherwise (*reply is set in both
 * cases). For debugging and tests; the typed calls above are the API.
 */
AMEBA_API int mri_request(struct mri_session *s, const char *json, char **reply);

#ifdef __cplusplus
}
#endif

#endif /* AMEBA_MRI_H */
