/*
 * plugin.h - the plugin ABI of the ameba agent: strategies and properties
 * (the AMEBA model of seed 004: fixed base classes in the tool, concrete
 * strategies and properties loaded at run time).
 *
 *   Strategy         how to search: proposes experiments, reads their
 *                    results, and names the contexts worth evaluating.
 *   Property         what a problem is: condition, confidence, severity
 *                    (APART Specification Language), evaluated on a context.
 *   PropertyContext  the performance data a property is evaluated on
 *                    (struct ameba_context): one object, bin or region, with
 *                    totals and per-thread arrays (ParPerf-style).
 *   ContextProvider  the connection to the monitor (struct ameba_host): the
 *                    agent runs the experiments a strategy plans through the
 *                    MRI, so strategies never talk to the monitor directly.
 *
 * A plugin is a shared object exporting one entry symbol:
 *
 *   const struct ameba_strategy_desc *ameba_strategy_entry(void);
 *   const struct ameba_property_desc *ameba_property_entry(void);
 *
 * The returned descriptor starts with abi_version and struct_size. The
 * loader refuses a descriptor whose abi_version differs from
 * AMEBA_PLUGIN_ABI_VERSION, and accepts a struct_size smaller than its own
 * (an older plugin: the missing tail reads as zero) or larger (a newer one:
 * the unknown tail must be zero), as libpfm4 does.
 *
 * All ranges are half-open [start, end). Strings are UTF-8, owned by the
 * side that created them, and valid for the duration stated per field.
 * Callbacks run on the agent's main thread, one at a time.
 */
#ifndef AMEBA_PLUGIN_H
#define AMEBA_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "ameba/ameba.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * 2: struct ameba_sample gained `site`; samples come as an array, so its
 * element size changed (a version 1 strategy would read them misaligned).
 * 3: struct ameba_results' per-thread rows list the threads present
 * (`thread_ids`) instead of every thread id (a version 2 strategy would
 * take entry k for thread k).
 * 4: every struct that crosses the boundary says its size, and a context's
 * metric vectors are pointer + count (ameba_context.nr_metrics), so that
 * fields and metrics can be added from now on without a new version
 * ("Growth" below).
 *
 * Growth (ABI 4 on). The version changes only when a field changes its
 * meaning or place. New fields are appended, and the side that reads a
 * struct made by the other side tests first that it has them:
 *
 *   made by the agent, read by a plugin: ameba_host, ameba_results (and its
 *     samples), ameba_object, ameba_thread (the host's arrays), the seeds;
 *   made by the agent, filled by a plugin: ameba_experiment (plan()) and
 *     ameba_verdict (evaluate()): struct_size says how much of it the agent
 *     has; a plugin sets fields one by one (ameba_experiment_reset(), never
 *     a memset of its own sizeof) and tests AMEBA_HAS() before setting a
 *     field newer than the agent may know;
 *   made by a plugin, read by the agent: descriptors, ameba_context (in
 *     arrays: the stride is the first element's struct_size), ameba_counter
 *     (the stride is ameba_experiment.counter_size); the agent reads a
 *     missing tail as zero and a metric past nr_metrics as not measured.
 *
 * Arrays of structs are reached through the accessors below
 * (ameba_host_object(), ameba_context_at(), ...), which step by the maker's
 * element size, never by the reader's sizeof. Frozen (they never grow; a
 * change raises the version): ameba_param, ameba_params,
 * ameba_counter_bins.
 */
#define AMEBA_PLUGIN_ABI_VERSION 4

/* Whether the struct *s (of type T, made by the other side) carries field f. */
#define AMEBA_HAS(T, s, f) ((s)->struct_size >= offsetof(T, f) + sizeof(((T *)0)->f))

/* ---- parameters (strategy and property thresholds) ---- */

enum ameba_param_type {
	AMEBA_PARAM_INT,
	AMEBA_PARAM_DOUBLE,
	AMEBA_PARAM_STRING,
	AMEBA_PARAM_METRIC,	/* a metric name, validated against the metric table */
};

struct ameba_param {
	const char *name;	/* e.g. "n", "threshold" */
	int type;		/* enum ameba_param_type */
	const char *def;	/* default, as text */
	const char *help;	/* one line */
};

/* Values given on the command line (--strategy nway:n=10,metric=l2_miss)
 * after the defaults were applied; lookup by name. */
struct ameba_params {
	uint32_t nr;
	const char *const *names;
	const char *const *values;
};

/* ---- what the monitor knows (filled by the agent, read by plugins) ---- */

enum ameba_obj_kind {
	AMEBA_OBJ_GLOBAL,
	AMEBA_OBJ_HEAP,
	AMEBA_OBJ_MMAP,
	AMEBA_OBJ_STACK,
	AMEBA_OBJ_TLS,
	AMEBA_OBJ_OTHER,
	AMEBA_OBJ_BIN,		/* an allocation-site bin: the union of its blocks */
};

struct ameba_object {
	uint64_t id;		/* monitor's object id (bins: their own id space) */
	int kind;		/* enum ameba_obj_kind */
	const char *name;	/* symbol, site label ("alloc@f.c:41"), "[stack T3]" */
	const char *site;	/* allocation site label, or NULL */
	uintptr_t start, end;	/* extent; for bins the hull of their blocks */
	uint64_t sz_bytes;
	uint32_t nr_blocks;	/* bins: blocks of the site; else 1 */
	int live;
};

struct ameba_thread {
	uint32_t id;		/* dense ameba id */
	int32_t tid;		/* OS tid */
	int exited;
};

struct ameba_context;

/*
 * The ContextProvider's side as plugins see it. Valid from create() to
 * destroy(); object and thread arrays are refreshed by the agent between
 * iterations (pointers stay valid until the next plan() call).
 */
struct ameba_host {
	uint32_t abi_version;
	uint32_t struct_size;
	/* Objects sorted by start address, non-overlapping (bins not included). */
	const struct ameba_object *objects;
	uint32_t nr_objects;
	/*
	 * Site bins: every allocation site seen so far, with blocks alive or
	 * not (nr_blocks: blocks ever allocated), then, when the host measures
	 * them, the kind bins "[stack]" (kind AMEBA_OBJ_STACK) and "[tls]"
	 * (AMEBA_OBJ_TLS; site NULL): every thread's stack or TLS block.
	 */
	const struct ameba_object *bins;
	uint32_t nr_bins;
	const struct ameba_thread *threads;
	uint32_t nr_threads;
	/* Metrics the active backend provides (AMEBA_M_*). */
	const int *metrics;
	uint32_t nr_metrics;
	/* Whether the backend counts exactly (sim, count) or estimates (perf). */
	int exact;
	/* Log a line to the agent's output (verbose mode only). */
	void (*log)(const struct ameba_host *h, const char *fmt, ...)
		__attribute__((format(printf, 2, 3)));
	void *agent;		/* the agent's own data; opaque */
	/*
	 * Appended (ABI 1, compatible growth; test struct_size before reading):
	 * the contexts of the strategy that ran before this one in a chain
	 * (--strategy a,b), best first, to be refined. Valid from create() to
	 * destroy(); NULL / 0 for the first strategy of a chain or a lone one.
	 */
	const struct ameba_context *seeds;
	uint32_t nr_seeds;
	/*
	 * Appended (ABI 2, compatible growth; AMEBA_HOST_HAS): the limits of
	 * one experiment -- counters, and address ranges over all its counters
	 * (what the monitor holds and what one MRI request carries) -- and
	 * whether counters on whole objects, bins, kinds or threads cost
	 * nothing per access (the sim and count backends serve them from
	 * their per-object counts, docs/mri.md): then a strategy need not
	 * ration metrics or units, only sub-object ranges cost. A strategy's
	 * max_counters and max_ranges parameters default to these.
	 */
	uint32_t max_counters;
	uint32_t max_ranges;
	int whole_objects_free;
	/*
	 * Appended (ABI 2, compatible growth; AMEBA_HOST_HAS): a line for the
	 * user, whatever the verbosity: printed on stderr and kept in the
	 * report's `warnings`, prefixed with the strategy's name. For what the
	 * user must know to read the result: why a search found nothing, what
	 * it could not measure.
	 */
	void (*warn)(const struct ameba_host *h, const char *fmt, ...)
		__attribute__((format(printf, 2, 3)));
	/*
	 * Appended (ABI 2, compatible growth; AMEBA_HOST_HAS): the largest
	 * message the monitor takes or sends, in bytes (1 MiB over the MRI):
	 * an experiment's request (its ranges, its bins' and exceptions' names)
	 * and its reading (values per counter, per thread) must each fit. A
	 * strategy that sizes either derives its budget from this.
	 */
	uint32_t max_message_bytes;
	/*
	 * Appended (ABI 2, compatible growth; AMEBA_HOST_HAS): the name of the
	 * field at byte off of object o ("a", "s.b", "[3].x") from the
	 * target's debug information, into buf of len bytes; 0, or -1 when the
	 * host cannot tell (not a global of the executable, no DWARF, no
	 * aggregate type there). NULL when the host never can.
	 */
	int (*field_name)(const struct ameba_host *h, const struct ameba_object *o, uint64_t off,
			  char *buf, size_t len);
	/*
	 * ABI 4: the element sizes of objects and bins (struct ameba_object)
	 * and of threads (struct ameba_thread), as the agent built them; use
	 * ameba_host_object(), ameba_host_bin(), ameba_host_thread().
	 */
	uint32_t object_size;
	uint32_t thread_size;
};

/* The monitor's limits for one experiment (the host reports them in
 * max_counters and max_ranges): counters, and ranges that fit one 1 MiB MRI
 * start request (~37 bytes of JSON each) under the monitor's 65,536. */
#define AMEBA_MAX_COUNTERS 4096
#define AMEBA_MAX_RANGES 24000
/* ... and the largest message either way (host->max_message_bytes). */
#define AMEBA_MAX_MESSAGE_BYTES (1u << 20)

/* Whether host carries the field f (a host older than the plugin may not). */
#define AMEBA_HOST_HAS(host, f) AMEBA_HAS(struct ameba_host, host, f)

/*
 * Element i of the host's objects, bins and threads (a host that does not
 * state the sizes, e.g. one made by hand in a test, has this build's).
 */
static inline size_t ameba_host_object_size_(const struct ameba_host *h)
{
	return AMEBA_HOST_HAS(h, object_size) && h->object_size ? h->object_size :
								  sizeof(struct ameba_object);
}

static inline const struct ameba_object *ameba_host_object(const struct ameba_host *h, uint32_t i)
{
	return (const struct ameba_object *)(const void *)((const char *)h->objects +
							    i * ameba_host_object_size_(h));
}

static inline const struct ameba_object *ameba_host_bin(const struct ameba_host *h, uint32_t i)
{
	return (const struct ameba_object *)(const void *)((const char *)h->bins +
							    i * ameba_host_object_size_(h));
}

static inline const struct ameba_thread *ameba_host_thread(const struct ameba_host *h, uint32_t i)
{
	size_t sz = AMEBA_HOST_HAS(h, thread_size) && h->thread_size ? h->thread_size :
								       sizeof(struct ameba_thread);

	return (const struct ameba_thread *)(const void *)((const char *)h->threads + i * sz);
}

/* ---- experiments: what a strategy asks to be measured ---- */

/* One conditional counter: metric x ranges x threads. */
struct ameba_counter {
	int metric;			/* AMEBA_M_* */
	uint32_t nr_ranges;		/* 0 = the whole address space */
	const uintptr_t *ranges;	/* 2 * nr_ranges: start, end, start, end ... */
	uint32_t nr_threads;		/* 0 = all threads */
	const uint32_t *threads;
	int per_thread;			/* also report the value of each thread */
	uint64_t tag;			/* the strategy's own cookie, echoed in results */
};

/* The site bins of one counter's where-set, by name (host->bins[].name). */
struct ameba_counter_bins {
	uint32_t nr;
	const char *const *names;
};

struct ameba_experiment {
	/* Set by the agent before plan(): the bytes of this struct it has. */
	uint32_t struct_size;
	/* Set by the strategy: sizeof(struct ameba_counter) as it was built
	 * (ameba_experiment_reset() does it). */
	uint32_t counter_size;
	uint32_t nr_counters;
	const struct ameba_counter *counters;	/* owned by the strategy until observe() */
	uint32_t interval_ms;			/* 0 = the agent's --interval */
	/* Optional sample stream (sampling strategies): metric, period; 0 = none. */
	int sample_metric;
	uint64_t sample_period;
	int sample_random;			/* period randomised around the mean */
	/*
	 * Appended (ABI 1, compatible growth: the agent zeroes the experiment
	 * before plan()): where-sets by allocation-site bin. NULL, or
	 * [nr_counters]: counter i also counts every access to a heap or mmap
	 * block of the bins counter_bins[i] names, blocks allocated later
	 * included (the monitor resolves the bin per access from the object it
	 * finds anyway, so a bin of 10^5 interleaved blocks costs no ranges and
	 * needs no listing of its blocks). The where-set is the union of the
	 * ranges and the bins; a counter with bins and no ranges counts only
	 * the bins' blocks. A bin unknown to the monitor fails the experiment
	 * (AMEBA_ENOENT).
	 */
	const struct ameba_counter_bins *counter_bins;
	/*
	 * Appended (ABI 1, compatible growth, zeroed like counter_bins): NULL,
	 * or the label of an oracle mark (docs/oracle.md, "Marks": up to 64 of
	 * [A-Za-z0-9._-], not starting with '.') that the agent asks the monitor
	 * to write right after this experiment is armed, when the target runs
	 * with AMEBA_ORACLE; a strategy asks for one where a measurement
	 * window starts, and names it in its contexts (extra: mark=LABEL), so
	 * that a window can be compared with the oracle over the same portion
	 * of the run. Without AMEBA_ORACLE nothing is written and nothing
	 * fails.
	 */
	const char *mark;
	/*
	 * Appended (ABI 1, compatible growth): NULL, or [nr_counters]: bins
	 * whose blocks counter i's ranges do not count (site bins by name, or
	 * the host's "[stack]" / "[tls]" bins: every thread's stack or TLS
	 * block). An address search that measures some units by bin measures
	 * the rest of the address space with these, so that an address range
	 * holding a block of such a unit (also a freed one's address, reused)
	 * does not count its accesses a second time. Only for counters with
	 * ranges.
	 */
	const struct ameba_counter_bins *counter_except;
};

/*
 * What plan() does first: zeroes the part of *exp the agent has (keeping
 * struct_size; 0 there means this build's size) and states this build's
 * counter size.
 */
static inline void ameba_experiment_reset(struct ameba_experiment *exp)
{
	uint32_t size = exp->struct_size;
	unsigned char *p = (unsigned char *)exp;

	if (!size || size > sizeof(*exp))
		size = sizeof(*exp);
	for (uint32_t i = sizeof(exp->struct_size); i < size; i++)
		p[i] = 0;
	exp->counter_size = sizeof(struct ameba_counter);
}

/* Counter i of an experiment, at the strategy's stride. */
static inline const struct ameba_counter *ameba_experiment_counter(const struct ameba_experiment *e,
								  uint32_t i)
{
	size_t stride = e->counter_size ? e->counter_size : sizeof(struct ameba_counter);

	return (const struct ameba_counter *)(const void *)((const char *)e->counters + i * stride);
}

struct ameba_sample {
	uintptr_t addr;
	uintptr_t pc;
	uint32_t thread;
	uint16_t metric;
	uint16_t weight;
	/*
	 * The site-bin label (an ameba_object's site, e.g. "make@app.c:12") of
	 * the heap or mmap block the access hit, as the monitor resolved it
	 * when it took the sample; NULL for any other object or when unknown.
	 * Set also for blocks not listed in host->objects yet or freed since.
	 * Valid until the agent ends.
	 */
	const char *site;
};

struct ameba_results {
	uint32_t struct_size;		/* the agent's sizeof(struct ameba_results) */
	uint32_t sample_size;		/* the agent's sizeof(struct ameba_sample) */
	uint32_t nr_counters;
	const uint64_t *values;		/* [nr_counters], in experiment order */
	/* per_thread[i] is NULL unless counter i asked for it; then it has
	 * nr_threads entries, entry k the value of thread thread_ids[k]
	 * (below): the threads the interval's reading had a row for, in no
	 * particular order; a thread with no entry counted nothing. */
	const uint64_t *const *per_thread;
	uint32_t nr_threads;
	uint64_t elapsed_ns;
	uint32_t nr_samples;
	const struct ameba_sample *samples;
	uint64_t nr_samples_lost;
	int target_exited;		/* the target ended during this interval */
	/*
	 * On the first interval of newly started counters, with a backend
	 * whose per-object counts are exact (NULL otherwise): before[i] is
	 * what counter i's objects counted from their births until the
	 * counters started (the threads alive then); per_thread_before[i]
	 * (NULL unless counter i asked for per-thread values) the same per
	 * thread. A strategy that arms a counter on an object born during the
	 * previous interval adds it to count the object from its birth; the
	 * program's counters counted those accesses in that interval.
	 */
	const uint64_t *before;
	const uint64_t *const *per_thread_before;
	/*
	 * ABI 3: [nr_threads] distinct thread ids (host->threads' `id`) of the
	 * entries of per_thread and per_thread_before; NULL when nr_threads
	 * is 0. A program that starts threads by the thousand has a few
	 * hundred here per interval, not every thread it ever had: a
	 * strategy keeps per-thread figures for the threads it saw. NULL:
	 * entry k is thread k's (ameba_results_thread()).
	 */
	const uint32_t *thread_ids;
	/*
	 * Appended (ABI 4; test AMEBA_HAS first). The interval after a switch
	 * (the strategy's plan changed the counters): the replaced experiment
	 * counted on between the previous interval's reading and the switch,
	 * and counter i's value includes carried[i], what an identical counter
	 * of it (same metric, where-set and threads) counted then, so that no
	 * access goes uncounted; AMEBA_NOT_CARRIED when none was identical:
	 * counter i counts from the switch only. per_thread_carried[i] is the
	 * same per thread (entries as per_thread[i]'s; zeros for a counter not
	 * carried), NULL unless per_thread[i]. Both NULL on an interval that
	 * did not follow a switch. A strategy that sets counters against each
	 * other (shares of a total) subtracts the carry from all of them when
	 * one of them was not carried, so that they cover one span.
	 */
	const uint64_t *carried;
	const uint64_t *const *per_thread_carried;
};

/* ameba_results.carried[i]: counter i had no identical predecessor. */
#define AMEBA_NOT_CARRIED UINT64_MAX

/* Sample i of a result, at the agent's stride. */
static inline const struct ameba_sample *ameba_results_sample(const struct ameba_results *r,
							      uint32_t i)
{
	size_t sz = AMEBA_HAS(struct ameba_results, r, sample_size) && r->sample_size ?
		    r->sample_size : sizeof(struct ameba_sample);

	return (const struct ameba_sample *)(const void *)((const char *)r->samples + i * sz);
}

/* The thread of entry k of a result's per-thread rows. */
static inline uint32_t ameba_results_thread(const struct ameba_results *r, uint32_t k)
{
	return r->thread_ids ? r->thread_ids[k] : k;
}

/* ---- contexts: what properties are evaluated on ---- */

enum ameba_ctx_kind {
	AMEBA_CTX_PROGRAM,	/* the whole program */
	AMEBA_CTX_OBJECT,	/* one object or bin */
	AMEBA_CTX_REGION,	/* a code region (function, parallel region) */
	AMEBA_CTX_LINE,		/* one cache line of an object */
};

/*
 * A PropertyContext: totals and per-thread figures of every metric the
 * backend provides, for one object/region, plus the program's totals for
 * shares. values[m] is indexed by AMEBA_M_* below nr_metrics; has[m] says
 * whether metric m was measured (properties needing an unmeasured metric
 * do not fire). A metric at or past nr_metrics (a context made before the
 * metric existed) is not measured: read through ameba_ctx_has() when m may
 * be newer than the context's maker.
 *
 * The maker owns the vectors; ameba_context_init() points them at a
 * struct ameba_context_data.
 */
struct ameba_context {
	uint32_t struct_size;		/* the maker's sizeof(struct ameba_context) */
	uint32_t nr_metrics;		/* entries of has, values, program, per_thread */
	int kind;			/* enum ameba_ctx_kind */
	const struct ameba_object *object;	/* OBJECT/LINE: the object or bin; else NULL */
	const char *region;		/* REGION: its name; else NULL */
	uintptr_t line;			/* LINE: the line's address */
	const uint8_t *has;		/* [nr_metrics] */
	const double *values;		/* [nr_metrics]: totals over the measured window */
	const double *program;		/* [nr_metrics]: the whole program, same window */
	uint32_t nr_threads;
	const uint32_t *thread_ids;	/* [nr_threads] */
	const double *const *per_thread;	/* [nr_metrics]: [nr_threads] each, or NULL */
	double confidence;		/* 1 = exact counts; lower for estimates */
	uint64_t nr_samples;		/* estimates: samples behind the values */
	uint64_t window_ns;
	/* Strategy-specific evidence as "key=value" lines (e.g. words written
	 * per thread on a line); may be NULL. */
	const char *extra;
};

/* Storage for one context's metric vectors, as this build knows them. */
struct ameba_context_data {
	uint8_t has[AMEBA_M_NR];
	double values[AMEBA_M_NR];
	double program[AMEBA_M_NR];
	const double *per_thread[AMEBA_M_NR];
};

/* Zeroes c and d and makes d c's vectors. */
static inline void ameba_context_init(struct ameba_context *c, struct ameba_context_data *d)
{
	unsigned char *p = (unsigned char *)c, *q = (unsigned char *)d;

	for (size_t i = 0; i < sizeof(*c); i++)
		p[i] = 0;
	for (size_t i = 0; i < sizeof(*d); i++)
		q[i] = 0;
	c->struct_size = sizeof(*c);
	c->nr_metrics = AMEBA_M_NR;
	c->has = d->has;
	c->values = d->values;
	c->program = d->program;
	c->per_thread = d->per_thread;
}

/* Whether ctx measured metric m (also for m past the maker's metrics). */
static inline int ameba_ctx_has(const struct ameba_context *ctx, int m)
{
	return m >= 0 && (uint32_t)m < ctx->nr_metrics && ctx->has[m];
}

/* Element i of an array of contexts (contexts(), host->seeds). */
static inline const struct ameba_context *ameba_context_at(const struct ameba_context *v,
							   uint32_t i)
{
	return (const struct ameba_context *)(const void *)((const char *)v +
							     (size_t)i * v->struct_size);
}

/* ---- strategies ---- */

struct ameba_strategy_desc {
	uint32_t abi_version;		/* AMEBA_PLUGIN_ABI_VERSION */
	uint32_t struct_size;		/* sizeof(struct ameba_strategy_desc) */
	const char *name;		/* "nway" */
	const char *summary;		/* one line for `ameba list strategies` */
	const struct ameba_param *params;
	uint32_t nr_params;

	/* Creates the strategy's state. 0 or AMEBA_E*; on error *state is unset
	 * and msg (if given, 256 bytes) says why (e.g. "n must be >= 2, got 1"). */
	int (*create)(const struct ameba_host *host, const struct ameba_params *params,
		      void **state, char *msg);
	/*
	 * Plans the next experiment into *exp. Returns 0 to run it, 1 when the
	 * search is finished (nothing left to refine), or AMEBA_E*.
	 */
	int (*plan)(void *state, struct ameba_experiment *exp);
	/* The results of the experiment plan() returned last. 0 or AMEBA_E*. */
	int (*observe)(void *state, const struct ameba_experiment *exp,
		       const struct ameba_results *res);
	/*
	 * The contexts found so far, best first, for the properties. The array
	 * and everything it points to stay valid until the next call into the
	 * strategy. May be called at any time (also after a target exit).
	 */
	int (*contexts)(void *state, const struct ameba_context **out, uint32_t *nr);
	/* A one-line progress note ("iteration 7: 10 regions, best grid 22%"). */
	void (*progress)(void *state, char *buf, size_t len);
	void (*destroy)(void *state);
};

/* ---- properties (C form; Lua and ASL properties fill the same fields) ---- */

struct ameba_verdict {
	uint32_t struct_size;	/* set by the agent: the bytes of this struct it has */
	int holds;		/* the condition */
	double confidence;	/* 0..1 */
	double severity;	/* share of the context's (program's) estimated time, 0..1 */
	char evidence[256];	/* the figures that fired the condition */
	char advice[512];	/* the concrete fix */
};

struct ameba_property_desc {
	uint32_t abi_version;
	uint32_t struct_size;
	const char *name;		/* "HotObject" */
	const char *summary;
	const char *refines;		/* name of the more general property, or NULL */
	int ctx_kind;			/* enum ameba_ctx_kind it applies to */
	const int *needs;		/* metrics it reads */
	uint32_t nr_needs;
	const struct ameba_param *params;
	uint32_t nr_params;
	/* Evaluates the property on ctx. 0 (verdict filled) or AMEBA_E*. */
	int (*evaluate)(const struct ameba_context *ctx, const struct ameba_params *params,
			struct ameba_verdict *out);
	/*
	 * Appended (ABI 1, compatible growth; zero in older plugins): NULL, or
	 * a NULL-terminated list of the properties this one explains: their
	 * findings on the same context (and those of their refinements) are
	 * symptoms of this cause and are reported under it ("absorbed",
	 * docs/properties.md, "Root causes and symptoms").
	 */
	const char *const *explains;
};

/*
 * The cost model's severity, the one scale of every property (C, Lua and
 * ASL; design.md section 7): the estimated cycles the program would save if
 * the problem were gone, over the program's estimated cycles in the same
 * window (ameba_context.program[AMEBA_M_EST_CYCLES]), clamped to 0..1.
 * Lua properties reach it as asl.severity(ctx, saved_cycles, fallback) and
 * asl.severity_of(saved_cycles, est_cycles), ASL ones as
 * severity_of(saved_cycles) (docs/properties.md).
 *
 * ameba_severity_of() returns -1 when est_cycles is not positive (a backend
 * without a time model: count, perf); the property then falls back to a
 * documented share of a metric. ameba_severity() does the same for a
 * context that did not measure est_cycles.
 */
static inline double ameba_severity_of(double saved_cycles, double est_cycles)
{
	double s;

	if (!(est_cycles > 0))
		return -1;
	s = saved_cycles / est_cycles;
	if (!(s > 0))		/* negative or NaN: nothing saved */
		return 0;
	return s < 1 ? s : 1;
}

static inline double ameba_severity(const struct ameba_context *ctx, double saved_cycles)
{
	if (!ameba_ctx_has(ctx, AMEBA_M_EST_CYCLES))
		return -1;
	return ameba_severity_of(saved_cycles, ctx->program[AMEBA_M_EST_CYCLES]);
}

/*
 * The cost model's latencies, in cycles: the one table of them. The
 * simulator's skylake-sp and host presets use these values, the Lua
 * library's asl.lat is made from it, and ameba_stall_of() weighs events
 * with it. X(name, cycles).
 */
#define AMEBA_COST_LATENCIES(X)                                                        \
	X(l2_hit, 14) X(llc_hit, 70) X(mem_local, 220) X(mem_remote, 360)              \
	X(intervention, 120) X(inval, 100) X(tlb_miss, 30)

#define AMEBA_LAT_ENUM_(name, cycles) AMEBA_LAT_##name = cycles,
/* AMEBA_LAT_l2_hit ... : the table's values as constants */
enum ameba_cost_lat { AMEBA_COST_LATENCIES(AMEBA_LAT_ENUM_) };
#undef AMEBA_LAT_ENUM_

/*
 * A context's stall cycles split by cause (asl.stall() in Lua is this
 * function): each kind of event weighed by its latency above, then scaled
 * so that the parts add up to the measured est_stall_cycles when the
 * backend measured them (with the default latencies the split is then
 * exact; with another preset the shares are approximate, the total the
 * simulator's).
 *
 *   l2 ... tlb   cycles of L2 hits, LLC hits (not from another core), local
 *                and remote memory, interventions (lines from another
 *                core's cache), invalidations sent, TLB misses
 *   coh          coherence: interventions, coherence misses served clean
 *                by the LLC, and the invalidations writes had to send
 *   miss, mem    l2 + llc + memory + interventions; local + remote memory
 *   total        est_stall_cycles, or the weighed sum when not measured
 */
struct ameba_stall {
	double l2, llc, mem_local, mem_remote, intervention, inval, tlb, coh;
	double miss, mem, model, scale, total;
};

static inline double ameba_pos_(double x)
{
	return x == x && x > 0 ? x : 0;
}

/* The split of metric values v (has[m]: measured; nr entries each). */
static inline void ameba_stall_of(const uint8_t *has, const double *v, uint32_t nr,
				  struct ameba_stall *c)
{
#define AMEBA_V_(m) ((uint32_t)(m) < nr && has[m] ? v[m] : 0)
	double iv = AMEBA_V_(AMEBA_M_INTERVENTION), l2m = AMEBA_V_(AMEBA_M_L2_MISS);
	double llcm = AMEBA_V_(AMEBA_M_LLC_MISS), clean, a, b;
	int measured = (uint32_t)AMEBA_M_EST_STALL_CYCLES < nr && has[AMEBA_M_EST_STALL_CYCLES];

	c->l2 = ameba_pos_(AMEBA_V_(AMEBA_M_L1D_MISS) - l2m) * AMEBA_LAT_l2_hit;
	c->llc = ameba_pos_(l2m - llcm - iv) * AMEBA_LAT_llc_hit;
	c->mem_local = AMEBA_V_(AMEBA_M_MEM_LOCAL) * AMEBA_LAT_mem_local;
	c->mem_remote = AMEBA_V_(AMEBA_M_MEM_REMOTE) * AMEBA_LAT_mem_remote;
	c->intervention = iv * AMEBA_LAT_intervention;
	c->inval = AMEBA_V_(AMEBA_M_INVAL_SENT) * AMEBA_LAT_inval;
	c->tlb = AMEBA_V_(AMEBA_M_TLB_MISS) * AMEBA_LAT_tlb_miss;
	a = ameba_pos_(AMEBA_V_(AMEBA_M_COH_MISS) - iv);
	b = ameba_pos_(l2m - llcm - iv);
	clean = a < b ? a : b;
	c->coh = c->intervention + clean * AMEBA_LAT_llc_hit + c->inval;
	c->model = c->l2 + c->llc + c->mem_local + c->mem_remote + c->intervention + c->inval +
		   c->tlb;
	c->scale = measured && c->model > 0 ? v[AMEBA_M_EST_STALL_CYCLES] / c->model : 1;
	c->l2 *= c->scale;
	c->llc *= c->scale;
	c->mem_local *= c->scale;
	c->mem_remote *= c->scale;
	c->intervention *= c->scale;
	c->inval *= c->scale;
	c->tlb *= c->scale;
	c->coh *= c->scale;
	c->miss = c->l2 + c->llc + c->mem_local + c->mem_remote + c->intervention;
	c->mem = c->mem_local + c->mem_remote;
	c->total = measured ? v[AMEBA_M_EST_STALL_CYCLES] : c->model;
#undef AMEBA_V_
}

/* The split of a context's totals. */
static inline void ameba_stall(const struct ameba_context *ctx, struct ameba_stall *out)
{
	ameba_stall_of(ctx->has, ctx->values, ctx->nr_metrics, out);
}

/* Entry symbols. */
typedef const struct ameba_strategy_desc *(*ameba_strategy_entry_fn)(void);
typedef const struct ameba_property_desc *(*ameba_property_entry_fn)(void);
#define AMEBA_STRATEGY_ENTRY "ameba_strategy_entry"
#define AMEBA_PROPERTY_ENTRY "ameba_property_entry"

/* Helper for plugins: the value of parameter name, or NULL. */
static inline const char *ameba_param_get(const struct ameba_params *p, const char *name)
{
	for (uint32_t i = 0; p && i < p->nr; i++) {
		const char *a = p->names[i], *b = name;

		while (*a && *a == *b)
			a++, b++;
		if (*a == *b)
			return p->values[i];
	}
	return NULL;
}

#ifdef __cplusplus
}
#endif

#endif /* AMEBA_PLUGIN_H */
