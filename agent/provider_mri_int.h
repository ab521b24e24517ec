/*
 * provider_mri_int.h - the MRI provider's state, shared by provider_mri.c
 * (experiments, readings, open and close; its Notes describe the whole)
 * and provider_mri_world.c (the cached world: objects, bins, threads).
 */
#ifndef AMEBA_PROVIDER_MRI_INT_H
#define AMEBA_PROVIDER_MRI_INT_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mri/mri.h"
#include "provider.h"

#define AGENT_MRI_FULL_EVERY 10
#define AGENT_MRI_BINS_ALWAYS 512	/* bins listed on every refresh up to this many */
#define AGENT_MRI_LIST_NS 100000000ull	/* an incremental listing stops after 100 ms */
#define AGENT_MRI_MAX_GAPS 64		/* ranges of ids skipped to list the newest first */
#define AGENT_MRI_PAGE 4096
#define AGENT_MRI_SLICE_MS 50
#define AGENT_MRI_TIMEOUT_MS 10000

struct mri_prov {
	struct agent_provider base;
	struct mri_session *s;
	int32_t pid;
	char err[512];

	/* sampled mode (agent_sampling): the rule, since when, what the
	 * readings said */
	struct agent_sampling smp;
	uint64_t t_attach_ns;
	int sampled;
	double sampled_since_s;
	uint64_t bursts;
	double fraction, rel_ci_sum;
	uint64_t nr_rel_ci;
	struct agent_world *world;	/* the tables refresh() filled last: the sampled
					 * figures there are kept current (note_sampled) */
	double *ci;			/* [ci_cap]: the last reading's ci_deltas */
	uint32_t ci_cap;

	char *program;
	char *backend;
	int metrics[AMEBA_M_NR];
	uint32_t nr_metrics;

	/* objects, sorted by start; names owned */
	struct ameba_object *objs;
	uint32_t nr_objs, cap_objs;
	uint32_t nr_sorted;		/* objs[0, nr_sorted) are in order */
	uint32_t next_offset;
	uint32_t nr_rows_dropped;		/* readings without per-thread rows */
	struct agent_gap { uint32_t lo, hi; } gaps[AGENT_MRI_MAX_GAPS];	/* ids not listed yet */
	uint32_t nr_gaps;
	uint32_t sweep_offset, sweep_end;	/* a sweep for frees: ids [0, sweep_end) */
	uint64_t sweep_freed;		/* the monitor's nr_freed when the last sweep began */
	/* per id below sweep_end, a start address's bits 4-35 (0: none): the
	 * known object's when the sweep began (known), the live block the
	 * sweep listed (seen). The monitor recycles a freed block's id for a
	 * new block (monitor/fold.c): the same id with another start is
	 * another object. */
	uint32_t *known, *seen;
	uint32_t seen_cap;
	uint32_t nr_refresh;
	/* object names, interned (Notes): an open-addressing set, owned */
	char **names;
	uint32_t nr_names, cap_names;
	struct mri_object *page;

	struct ameba_object *bins;
	uint32_t nr_bins;
	struct mri_bin *bin_page;

	struct ameba_thread *threads;
	uint32_t nr_threads, cap_threads;
	struct mri_thread_info *thread_page;

	/* the running experiment */
	int running;
	uint64_t exp_id;
	uint64_t exp_sig;
	uint32_t exp_nr;
	uint64_t *prev;			/* [exp_nr] cumulative values at the last reading */
	/* the threads' cumulative rows at the last reading (take_reading):
	 * column c (prev_pt + c * exp_nr) is thread prev_ids[c]'s, and
	 * prev_col[id] is its column + 1 (0: none) */
	uint64_t *prev_pt;
	uint32_t *prev_ids, *prev_col;
	uint32_t prev_nt, prev_nt_cap, prev_col_cap;
	struct mri_counter *mc;
	struct mri_range *mranges;
	uint32_t cap_mc, cap_mranges;
	uint64_t *ctr_sig;		/* [exp_nr] signature of each counter */
	/* counts of the previous experiment after its last reading, carried
	 * into the identical counters of the next one (see exp_switch) */
	uint64_t *carry;		/* [exp_nr] */
	uint64_t *carry_pt;		/* [carry_nt * exp_nr], thread carry_ids[k]'s at k */
	uint32_t *carry_ids;
	uint32_t carry_nt;

	/* results of the last experiment: exp_nr counters, rb.nt threads
	 * (rb.ids: the threads of the rows' entries) */
	struct agent_resbuf rb;
	uint32_t *res_at;		/* [res_at_cap]: thread id -> entry + 1 (take_reading) */
	uint32_t res_at_cap;
	/* the first reading of newly started counters: their "before" */
	int fresh;
	uint64_t *before, *before_pt;
	const uint64_t **before_rows;
	int exited;
	int final_pending;		/* exited; the final reading not delivered yet */

	/* the sample stream, when an experiment asks for one */
	int smp_metric;
	uint64_t smp_period;
	int smp_random;
	struct mri_sample *smp_page;
	struct ameba_sample *samples;	/* this interval's, drained so far */
	uint32_t nr_samples, cap_samples;
	uint64_t smp_lost;		/* this interval's lost samples so far */
};

/* provider_mri.c */
void mp_set_err(struct mri_prov *p, const char *what, int rc);

/* provider_mri_world.c */
void mp_objs_clear(struct mri_prov *p);
uint64_t mp_now_ns(void);
void mp_bins_free(struct ameba_object *b, uint32_t n);
int mp_refresh(struct agent_provider *base, struct agent_world *w);

/* The sampled-mode figures into the world refresh() filled last. */
void mp_world_sampling(struct mri_prov *p);

#endif
