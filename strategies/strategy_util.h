/*
 * strategy_util.h - small helpers shared by the built-in strategies (not
 * part of the plugin ABI: third-party strategies need only plugin.h).
 *
 * Notes:
 *  - Header-only (static inline): every strategy is its own .so, and the
 *    helpers are too small to deserve a library of their own.
 *  - The metric names come from ameba-common (ameba_metric_by_name), which
 *    every built-in strategy links in hidden.
 */
#ifndef AMEBA_STRATEGY_UTIL_H
#define AMEBA_STRATEGY_UTIL_H

#include <stdio.h>
#include <string.h>

#include "ameba/plugin.h"

/* Whether the host's backend measures metric m. */
static inline int strategy_host_has(const struct ameba_host *h, int m)
{
	for (uint32_t i = 0; i < h->nr_metrics; i++)
		if (h->metrics[i] == m)
			return 1;
	return 0;
}

/*
 * The metrics a strategy measures, from its `metrics` parameter: "all" (or
 * NULL) means every metric of the backend but `samples`; otherwise names
 * joined by '+'. The ordering metric primary is always included. Fills
 * out[AMEBA_M_NR] and *nr; returns 0, or AMEBA_EINVAL with msg (256 bytes)
 * naming the bad name and the fix.
 */
static inline int strategy_metrics_select(const struct ameba_host *host, const char *metrics,
					  int primary, int *out, uint32_t *nr, char *msg)
{
	int have = 0;

	*nr = 0;
	if (!metrics || !strcmp(metrics, "all")) {
		for (uint32_t i = 0; i < host->nr_metrics && *nr < AMEBA_M_NR; i++)
			if (host->metrics[i] != AMEBA_M_SAMPLES)
				out[(*nr)++] = host->metrics[i];
	} else {
		char buf[512], *tok, *save = NULL;

		snprintf(buf, sizeof(buf), "%s", metrics);
		for (tok = strtok_r(buf, "+", &save); tok; tok = strtok_r(NULL, "+", &save)) {
			int m = ameba_metric_by_name(tok);

			if (m < 0 || !strategy_host_has(host, m)) {
				snprintf(msg, 256, "metrics=%s: '%s' is %s; write all or names joined "
					 "by '+'", metrics, tok, m < 0 ? "not a metric" :
					 "not measured by this backend");
				return AMEBA_EINVAL;
			}
			if (*nr < AMEBA_M_NR)
				out[(*nr)++] = m;
		}
	}
	for (uint32_t i = 0; i < *nr; i++)
		have |= out[i] == primary;
	if (!have && *nr < AMEBA_M_NR)
		out[(*nr)++] = primary;
	return 0;
}

#endif /* AMEBA_STRATEGY_UTIL_H */
