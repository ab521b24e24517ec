/*
 * views.h - the report's `views` (views.c): per-interval series, the
 * search trace, sampled heat strips and line maps, the thread x object
 * matrix, gathered while the search runs for the HTML report.
 */
#ifndef AMEBA_AGENT_VIEWS_H
#define AMEBA_AGENT_VIEWS_H

#include <cjson/cJSON.h>

#include "search.h"

/* Before experiment exp runs: adds the views' sample stream to *sent (the
 * copy the provider arms) in the intervals that take one. */
void agent_views_plan(struct agent_search *s, const struct ameba_experiment *exp,
		      struct ameba_experiment *sent, uint32_t interval_ms);
/* After it ran (before the strategy observes): the series, the trace and
 * the samples; hides samples the strategy did not ask for. tot_value: the
 * agent's own count of the run's metric, NAN when none. */
void agent_views_observe(struct agent_search *s, const struct ameba_experiment *exp,
			 const struct ameba_experiment *sent, struct agent_exp_result *res,
			 double start_s, double tot_value);
/* A report object's final per-thread values (the thread x object matrix). */
void agent_views_thread_row(struct agent_search *s, const char *name,
			    const struct ameba_context *c);
/* The report's `views` member, or NULL when nothing was gathered. */
cJSON *agent_views_json(struct agent_search *s);
void agent_views_free(struct agent_views *v);

#endif
