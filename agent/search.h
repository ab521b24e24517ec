/*
 * search.h - the search loop (AMEBA's online iterative search) and the
 * evaluation of properties on the contexts a strategy found.
 *
 *   agent_search_run():  refresh -> plan -> experiment -> observe, until
 *                        the strategy is done, the budget (--duration) is
 *                        spent, the target exits, or *stop is raised; then
 *                        the properties are evaluated on the strategy's
 *                        contexts and the findings ranked.
 */
#ifndef AMEBA_AGENT_SEARCH_H
#define AMEBA_AGENT_SEARCH_H

#include <signal.h>
#include <stdint.h>
#include <time.h>

#include "plugins.h"
#include "provider.h"

/* ---- findings ---- */

struct agent_finding {
	char *property;
	char *refined_from;	/* the more general property that also held, or NULL */
	double severity;
	double confidence;
	int ctx_kind;		/* enum ameba_ctx_kind */
	int has_object;
	struct {
		char *name;
		int kind;	/* enum ameba_obj_kind */
		char *site;
		uint64_t sz_bytes;
		uint64_t addr;
		uint32_t nr_blocks;
	} object;
	char *region;
	uint64_t line;
	uint32_t *threads;
	uint32_t nr_threads;
	char *evidence;
	char *advice;
	/*
	 * Ranking (agent_findings_rank): the context's est_stall_cycles over
	 * the program's est_cycles, the most that the findings shown on it
	 * may add up to (-1: no time model); the severity the property
	 * computed when the shown one leaves out a part another finding on
	 * the same context already counts (else equal to severity), and that
	 * finding's property (NULL: none); the symptoms this root cause
	 * explains, absorbed under it.
	 */
	double stall_budget;
	double severity_own;
	char *overlaps;
	struct agent_finding *absorbed;
	uint32_t nr_absorbed;
};

struct agent_findings {
	struct agent_finding *v;
	uint32_t nr, cap;
};

/*
 * Evaluates every selected property on every context, walking the refines
 * hierarchy: a property is evaluated on a context only when the property it
 * refines holds there, and when both hold only the more specific one is
 * kept (with refined_from set). Appends to out; 0 or AMEBA_ENOMEM.
 */
int agent_evaluate(struct agent_plugins *pl, const struct ameba_context *ctxs, uint32_t nr,
		   int primary_metric, struct agent_findings *out);
/* Ranks by severity, then confidence, then property and context name. */
void agent_findings_sort(struct agent_findings *f);
/*
 * One finding per root cause (docs/properties.md, "Root causes and
 * symptoms"): sorts, then moves every finding that a higher-ranked
 * finding's property `explains` (directly or as a refinement of a property
 * it explains) on the same context, with a thread in common, under that
 * finding (absorbed), when its severity is at most the cause's; a symptom
 * costlier than its cause stays, with only the part the cause does not
 * explain. Then the findings shown on one context are capped, in rank
 * order, so that they add up to at most the context's stall budget; and
 * sorted again. 0 or AMEBA_ENOMEM (f is then still valid, partly ranked).
 */
int agent_findings_rank(const struct agent_plugins *pl, struct agent_findings *f);
void agent_findings_free(struct agent_findings *f);

/* ---- the loop ---- */

struct agent_obj_summary {
	char *name;
	int kind;
	char *site;
	uint64_t sz_bytes;
	uint64_t addr;
	uint32_t nr_blocks;
	uint8_t has[AMEBA_M_NR];
	double values[AMEBA_M_NR];
	/* the program's totals over the object's own window (its context's
	 * program[]), the window's length, and the oracle mark that starts it
	 * (NULL: none written) */
	double window[AMEBA_M_NR];
	uint64_t window_ns;
	char *mark;
	/* the strategy's counts while it searched (over window_ns), not a
	 * final measurement: not comparable with the others' shares */
	int provisional;
};

/*
 * How much of the program's count of the run's metric the measured objects
 * account for (the report's "coverage", docs/report-schema.md): every
 * object context with a final measurement, not only the top objects the
 * summary keeps, over the distinct windows they were measured in.
 */
struct agent_coverage {
	uint32_t nr_objects;		/* measured object contexts summed */
	uint32_t nr_windows;		/* distinct windows among them */
	uint32_t nr_provisional;	/* objects with a search-time count only */
	/* the provisional objects: the sum of their shares, each over its own
	 * window, and the longest of those windows (its program count, length) */
	double prov_share;
	double prov_total;
	uint64_t prov_window_ns;
	double total;			/* the program's count over those windows */
	double attributed;		/* the objects' counts over them */
	uint64_t window_ns;		/* the longest of the windows */
	/* the program's count over every experiment of the search (the agent's
	 * own total counter, search.c); searched_exact is 0 when an experiment
	 * had no room left for it (MRI_MAX_COUNTERS) */
	double searched;
	int searched_exact;
	uint32_t nr_searched;		/* experiments summed into searched */
};

struct agent_thread_summary {
	uint32_t id;
	int32_t tid;
	int exited;
	struct agent_thread_life life;	/* snapshots (refreshes) it was seen in */
	int has_values;
	double values[AMEBA_M_NR];
};

enum agent_end {
	AGENT_END_COMPLETE,	/* the strategy had nothing left to refine */
	AGENT_END_DURATION,	/* --duration was spent */
	AGENT_END_EXITED,	/* the target exited first */
	AGENT_END_INTERRUPTED,	/* SIGINT / SIGTERM */
	AGENT_END_ERROR,	/* the monitor or the strategy failed */
};

/* "complete", "duration", "target exited", "interrupted", "error". */
const char *agent_end_name(int end);

struct agent_search_opts {
	uint32_t interval_ms;		/* default interval (--interval) */
	uint64_t duration_ms;		/* 0: no budget */
	int primary_metric;		/* --metric, or -1: choose */
	int progress;			/* draw the live progress line on stderr */
	int verbose;			/* host->log lines */
	uint32_t nr_top_objects;	/* objects in the summary (default 20) */
	/* Chains (strat_b set): a strategy that never finishes by itself hands
	 * over to b after this share of duration_ms (0: 0.5), or, without a
	 * --duration, after refine_after_ms (0: only when it finishes). */
	double refine_share;
	uint64_t refine_after_ms;
	const volatile sig_atomic_t *stop;
	/* sample streams for the report's heat strips and line maps
	 * (views.c; --html, --views): one interval in 4 */
	int views_samples;
};

struct agent_search {
	/* inputs */
	struct agent_plugins *pl;
	struct agent_strategy *strat;
	const struct agent_params *strat_given;	/* --strategy NAME:k=v pairs */
	struct agent_strategy *strat_b;		/* --strategy a,b: b, or NULL */
	const struct agent_params *strat_b_given;
	struct agent_provider *prov;
	struct agent_search_opts opts;

	/* outputs (valid after agent_search_run, freed by agent_search_free) */
	struct agent_params strat_params;	/* resolved */
	struct agent_params strat_b_params;	/* resolved, chains */
	int stage;			/* 0: a (or the lone strategy) runs; 1: b */
	uint32_t nr_iterations_a;	/* iterations of a, in a chain */
	uint32_t nr_seeds;		/* contexts a handed to b */
	int end;			/* enum agent_end */
	int partial;
	uint32_t nr_iterations;
	uint32_t nr_contexts;
	int primary_metric;
	struct timespec started, ended;	/* CLOCK_REALTIME */
	uint64_t measured_ns;		/* sum of the experiments' windows */
	char *program;
	char *backend;
	int32_t pid;
	int exact;
	int metrics[AMEBA_M_NR];
	uint32_t nr_metrics;
	struct agent_ci_tab *ci_tab;	/* sampled mode: objects' intervals */
	double program_totals[AMEBA_M_NR];
	uint8_t program_has[AMEBA_M_NR];
	struct agent_findings findings;
	struct agent_obj_summary *objects;
	uint32_t nr_objects;
	struct agent_thread_summary *threads;
	uint32_t nr_threads;
	char error[512];		/* why the run failed, when it did */
	/* thread snapshots taken (refreshes), the threads' lifetimes in them
	 * (copied from threads[] for the properties: pl->lives), the most
	 * threads besides main alive in one */
	int32_t nr_snaps;
	struct agent_thread_life *lives;
	uint32_t max_alive;
	char **marks;			/* labels of the oracle marks the monitor wrote */
	uint32_t nr_marks;
	struct agent_coverage coverage;
	/* the report's `views` (views.c), built when the search ends */
	struct cJSON *views_json;

	/* internal */
	struct ameba_host host;
	struct agent_world world;
	void *state;
	int state_live;
	struct ameba_host host_b;
	void *state_b;
	int state_b_live;
	struct ameba_context *seeds;	/* deep copies of a's contexts */
	struct ameba_context *norm;	/* a plugin's contexts in our layout */
	uint32_t nr_norm;
	struct ameba_counter *ctr_norm;	/* a plugin's counters in our layout */
	double last_progress_s;
	int progress_drawn;
	struct agent_fields *fields;	/* the host's field_name() (fields.c) */
	struct agent_views *views;	/* views.c */
};

/*
 * Deep copies of contexts (the object, strings, thread ids and per-thread
 * arrays are owned by the copy). 0 or AMEBA_ENOMEM (nothing left owned).
 */
int agent_contexts_clone(const struct ameba_context *src, uint32_t nr,
			 struct ameba_context **out);
void agent_contexts_free(struct ameba_context *ctxs, uint32_t nr);

/*
 * The report's summary of the final contexts: the program's and threads'
 * totals, and the top objects (s->objects), heaviest first by the primary
 * metric, provisional ones (a strategy's counts while it searched,
 * `measured=search_intervals` in the context's extra) after the others.
 */
void agent_summarize_contexts(struct agent_search *s, const struct ameba_context *ctxs,
			      uint32_t nr);

/*
 * Runs the search. Returns 0 when the outputs are filled (for every end,
 * including AGENT_END_ERROR once the strategy ran), or a negative code
 * before anything could be measured (s->error says why: a strategy that
 * refused its parameters, a metric the backend lacks).
 */
int agent_search_run(struct agent_search *s);
void agent_search_free(struct agent_search *s);

/*
 * fields.c: the field of global var at byte off ("a", "s.b", "[3].x"),
 * from the DWARF of process pid's executable, into buf; 0, or -1 when it
 * cannot tell. *f caches the open debug information (NULL at first).
 */
struct agent_fields;
int agent_fields_name(struct agent_fields **f, int32_t pid, const char *var, uint64_t off,
		      char *buf, size_t len);
void agent_fields_close(struct agent_fields *f);

/* Whether the backend of w measures metric m. */
int agent_world_has(const struct agent_world *w, int m);

/* Clears the progress line if one is drawn (before other stderr output). */
void agent_progress_clear(void);

/* ---- sampled mode: objects' 95% intervals (estimates.c) ---- */
struct agent_ci_tab;
struct agent_world;
/* Adds what one sampled interval (ci: its counters' half-widths, NULL:
 * exact; values: their values) says about the objects exp's counters
 * measure whole. */
void agent_ci_note(struct agent_ci_tab **t, const struct ameba_experiment *exp, const double *ci,
		   const uint64_t *values, const struct agent_world *w);
/* Adds an interval of half-width half (-1: unknown) to the object's total
 * of metric. 0 or AMEBA_ENOMEM. */
int agent_ci_add(struct agent_ci_tab **t, const char *name, int metric, double half);
/* The half-width of the 95% interval of the object's total of metric over
 * the run (value: the total), or -1 (not measured whole, or some interval
 * had none): the bursts' variance and the bias the metric keeps whatever
 * their number (estimates.c, bias_rel). */
double agent_ci_half(const struct agent_ci_tab *t, const char *name, int metric, double value);
/* The half-width of the 95% interval of the object's share value / prog of
 * metric, prog the program's count over the object's window: the object's
 * interval and the one of the program's counter in the same readings,
 * taken as independent (their estimates come from different counters, and
 * the program's was seen off by more than the object's), and the bias
 * term. -1 as above. */
double agent_ci_share_half(const struct agent_ci_tab *t, const char *name, int metric,
			   double value, double prog);
void agent_ci_free(struct agent_ci_tab *t);

#endif
