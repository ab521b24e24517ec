/*
 * report.c - the report as JSON (docs/report-schema.md) and as a table.
 *
 * Notes:
 *  - The table is rendered from the JSON tree only, so a saved report
 *    re-renders (`ameba report FILE`) exactly as the run printed it.
 *  - Numbers: severities and shares are fractions 0..1 in JSON and
 *    percentages in the table; counts are JSON numbers (doubles, exact to
 *    2^53).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "report.h"

static const char *iso_time(const struct timespec *ts, char *buf, size_t len)
{
	struct tm tm;

	gmtime_r(&ts->tv_sec, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts->tv_nsec / 1000000);
	return buf;
}

static double ts_diff_s(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* A rounded value that prints without float noise. */
static double round6(double x)
{
	return round(x * 1e6) / 1e6;
}

static cJSON *metric_object(const uint8_t *has, const double *values)
{
	cJSON *o = cJSON_CreateObject();

	for (int m = 0; o && m < AMEBA_M_NR; m++)
		if (has[m])
			cJSON_AddNumberToObject(o, ameba_metric_info(m)->name, values[m]);
	return o;
}

/* "6.1M", "655.4k", "512": a count for a sentence. */
static const char *count_text(double v, char *buf, size_t len)
{
	if (v >= 1e9)
		snprintf(buf, len, "%.1fG", v / 1e9);
	else if (v >= 1e6)
		snprintf(buf, len, "%.1fM", v / 1e6);
	else if (v >= 1e3)
		snprintf(buf, len, "%.1fk", v / 1e3);
	else
		snprintf(buf, len, "%.0f", v);
	return buf;
}

/*
 * The "coverage" block: how much of the program's count of the run's metric
 * the report accounts for, and what is missing. Two losses are measured:
 *   share            the measured objects' counts over the program's count in
 *                    the same window(s) (null when no object was measured);
 *   window_of_search the program's count in those windows over its count in
 *                    all the search's experiments (the agent's own total
 *                    counter, search.c): what the search saw but the final
 *                    measurement did not (the intervals spent searching).
 *                    When an experiment had no room for that counter, the
 *                    windows' length over the search's span stands in for it
 *                    (by time, `window_of_search_by`: "time").
 * Their product is the coverage; below AGENT_COVERAGE_MIN every finding's
 * confidence is multiplied by coverage / AGENT_COVERAGE_MIN (*factor).
 * What the program did after the search ended (the target ran on) is named
 * in `missing` but not measured, so it changes no figure.
 */
static cJSON *coverage_json(const struct agent_search *s, double *factor)
{
	const struct agent_coverage *cov = &s->coverage;
	const char *metric = ameba_metric_info(s->primary_metric)->name;
	double search_s = ts_diff_s(&s->started, &s->ended);
	/* only provisional objects (a search that never measured its finds):
	 * their shares, each over its own window, summed, and the longest window */
	int prov = !cov->nr_objects && cov->nr_provisional;
	double total = prov ? cov->prov_total : cov->total;
	uint64_t window_ns = prov ? cov->prov_window_ns : cov->nr_objects ? cov->window_ns : s->measured_ns;
	double window_s = (double)window_ns / 1e9;
	double share = -1, of_search = -1, c = 1;
	int by_count = cov->searched_exact && cov->nr_searched && (cov->nr_objects || prov);
	cJSON *o = cJSON_CreateObject(), *miss;
	char msg[512], a[32], b[32];

	*factor = 1;
	if (!o)
		return NULL;
	if (cov->nr_objects && cov->total > 0)
		share = cov->attributed < cov->total ? cov->attributed / cov->total : 1;
	else if (prov)
		share = cov->prov_share < 1 ? cov->prov_share : 1;
	if (by_count && cov->searched > 0)
		of_search = total < cov->searched ? total / cov->searched : 1;
	else if (!by_count && search_s > 0 && window_s > 0)
		of_search = window_s < search_s ? window_s / search_s : 1;
	if (share >= 0)
		c *= share;
	if (of_search >= 0)
		c *= of_search;
	if (c < AGENT_COVERAGE_MIN)
		*factor = c / AGENT_COVERAGE_MIN;

	cJSON_AddStringToObject(o, "metric", metric);
	cJSON_AddStringToObject(o, "basis", cov->nr_objects ? "measured" : prov ? "provisional" : "none");
	cJSON_AddNumberToObject(o, "objects", cov->nr_objects);
	cJSON_AddNumberToObject(o, "windows", cov->nr_windows);
	cJSON_AddNumberToObject(o, "window_s", round6(window_s));
	cJSON_AddNumberToObject(o, "search_s", round6(search_s));
	if (cov->searched_exact && cov->nr_searched)
		cJSON_AddNumberToObject(o, "searched", cov->searched);
	else
		cJSON_AddNullToObject(o, "searched");
	if (cov->nr_objects) {
		cJSON_AddNumberToObject(o, "total", cov->total);
		cJSON_AddNumberToObject(o, "attributed", cov->attributed);
	} else if (prov) {
		cJSON_AddNumberToObject(o, "total", cov->prov_total);
		cJSON_AddNullToObject(o, "attributed");
	} else {
		cJSON_AddNullToObject(o, "total");
		cJSON_AddNullToObject(o, "attributed");
	}
	if (of_search >= 0)
		cJSON_AddNumberToObject(o, "window_of_search", round6(of_search));
	else
		cJSON_AddNullToObject(o, "window_of_search");
	cJSON_AddStringToObject(o, "window_of_search_by", by_count ? metric : "time");
	if (share >= 0)
		cJSON_AddNumberToObject(o, "share", round6(share));
	else
		cJSON_AddNullToObject(o, "share");
	cJSON_AddNumberToObject(o, "coverage", round6(c));
	cJSON_AddNumberToObject(o, "threshold", AGENT_COVERAGE_MIN);
	cJSON_AddNumberToObject(o, "factor", round6(*factor));
	miss = cJSON_AddArrayToObject(o, "missing");
	if (s->world.sampled && !s->world.bursts) {
		snprintf(msg, sizeof(msg), "sampled simulation measured no burst in the %.2f s "
			 "searched: nothing was simulated and every count is 0; search longer "
			 "(--duration) or simulate every access (--exact)", search_s);
		cJSON_AddItemToArray(miss, cJSON_CreateString(msg));
	}
	if (of_search >= 0 && of_search < AGENT_COVERAGE_MIN) {
		if (by_count)
			snprintf(msg, sizeof(msg), "%.1f%% of the %s the search saw (%s of %s) fell outside "
				 "the measured window (%.2f s of %.2f s): counted while the strategy "
				 "searched, not in the figures", 100 * (1 - of_search), metric,
				 count_text(cov->searched - total, a, sizeof(a)),
				 count_text(cov->searched, b, sizeof(b)), window_s, search_s);
		else
			snprintf(msg, sizeof(msg), "the measured window (%.2f s) covers %.1f%% of the "
				 "%.2f s searched: what the program did while the strategy searched is "
				 "not in the figures", window_s, 100 * of_search, search_s);
		cJSON_AddItemToArray(miss, cJSON_CreateString(msg));
	}
	if (prov && share < AGENT_COVERAGE_MIN) {
		snprintf(msg, sizeof(msg), "the objects found account for %.1f%% of the %s, each over "
			 "its own window: %.1f%% was not attributed", 100 * share, metric,
			 100 * (1 - share));
		cJSON_AddItemToArray(miss, cJSON_CreateString(msg));
	} else if (share >= 0 && share < AGENT_COVERAGE_MIN) {
		snprintf(msg, sizeof(msg), "%.1f%% of the %s counted in the measured window (%s of %s) "
			 "was not attributed to the %u objects measured: objects the strategy did "
			 "not measure (unsearched regions, small objects, stacks)",
			 100 * (1 - share), metric, count_text(cov->total - cov->attributed, a, sizeof(a)),
			 count_text(cov->total, b, sizeof(b)), cov->nr_objects);
		cJSON_AddItemToArray(miss, cJSON_CreateString(msg));
	}
	if (prov) {
		snprintf(msg, sizeof(msg), "no object was measured after the search: the %u found "
			 "have counts from while the strategy searched (provisional), over windows of "
			 "at most %.2f s", cov->nr_provisional, window_s);
		cJSON_AddItemToArray(miss, cJSON_CreateString(msg));
	} else if (cov->nr_provisional) {
		snprintf(msg, sizeof(msg), "%u object%s only have counts from while the strategy "
			 "searched (provisional), not counted as attributed", cov->nr_provisional,
			 cov->nr_provisional == 1 ? "" : "s");
		cJSON_AddItemToArray(miss, cJSON_CreateString(msg));
	}
	if (s->end != AGENT_END_EXITED) {
		snprintf(msg, sizeof(msg), "the search ended (%s) before the program did: what it did "
			 "afterwards is not in the report", agent_end_name(s->end));
		cJSON_AddItemToArray(miss, cJSON_CreateString(msg));
	}
	return o;
}

static cJSON *threads_array(const uint32_t *ids, uint32_t nr)
{
	cJSON *a = cJSON_CreateArray();

	for (uint32_t i = 0; a && i < nr; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
	return a;
}

static cJSON *finding_json(const struct agent_finding *f, uint32_t rank)
{
	cJSON *j = cJSON_CreateObject(), *ctx, *obj;

	cJSON_AddNumberToObject(j, "rank", rank);
	cJSON_AddStringToObject(j, "property", f->property);
	cJSON_AddNumberToObject(j, "severity", round6(f->severity));
	cJSON_AddNumberToObject(j, "confidence", round6(f->confidence));
	ctx = cJSON_AddObjectToObject(j, "context");
	cJSON_AddStringToObject(ctx, "kind", agent_ctx_kind_name(f->ctx_kind));
	if (f->has_object) {
		char addr[32];

		obj = cJSON_AddObjectToObject(ctx, "object");
		cJSON_AddStringToObject(obj, "name", f->object.name);
		cJSON_AddStringToObject(obj, "kind", agent_obj_kind_name(f->object.kind));
		if (f->object.site)
			cJSON_AddStringToObject(obj, "site", f->object.site);
		else
			cJSON_AddNullToObject(obj, "site");
		cJSON_AddNumberToObject(obj, "size", (double)f->object.sz_bytes);
		snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)f->object.addr);
		cJSON_AddStringToObject(obj, "addr", addr);
		cJSON_AddNumberToObject(obj, "blocks", f->object.nr_blocks);
	} else {
		cJSON_AddNullToObject(ctx, "object");
	}
	if (f->region)
		cJSON_AddStringToObject(ctx, "region", f->region);
	else
		cJSON_AddNullToObject(ctx, "region");
	if (f->ctx_kind == AMEBA_CTX_LINE) {
		char line[32];

		snprintf(line, sizeof(line), "0x%llx", (unsigned long long)f->line);
		cJSON_AddStringToObject(ctx, "line", line);
	}
	cJSON_AddItemToObject(ctx, "threads", threads_array(f->threads, f->nr_threads));
	cJSON_AddStringToObject(j, "evidence", f->evidence ? f->evidence : "");
	cJSON_AddStringToObject(j, "advice", f->advice ? f->advice : "");
	if (f->refined_from)
		cJSON_AddStringToObject(j, "refined_from", f->refined_from);
	else
		cJSON_AddNullToObject(j, "refined_from");
	if (f->severity_own != f->severity) {
		cJSON_AddNumberToObject(j, "severity_own", round6(f->severity_own));
		if (f->overlaps)
			cJSON_AddStringToObject(j, "overlaps", f->overlaps);
	}
	/* the symptoms this root cause explains, with the root's rank */
	if (f->nr_absorbed) {
		cJSON *a = cJSON_AddArrayToObject(j, "absorbed");

		for (uint32_t i = 0; i < f->nr_absorbed; i++)
			cJSON_AddItemToArray(a, finding_json(&f->absorbed[i], rank));
	}
	return j;
}

/*
 * An object's share of the stall cycles over its own window (its share of
 * the run's metric without a time model): where the memory time goes.
 */
static double stall_share(const struct agent_search *s, const struct agent_obj_summary *o,
			  const char **metric)
{
	int m = AMEBA_M_EST_STALL_CYCLES;
	double prog;

	if (!o->has[m])
		m = s->primary_metric;
	*metric = ameba_metric_info(m) ? ameba_metric_info(m)->name : "?";
	prog = o->window[m] > 0 ? o->window[m] : s->program_totals[m];
	if (!(prog > 0))
		return 0;
	return o->values[m] / prog < 1 ? o->values[m] / prog : 1;
}

/*
 * The verdict: "nothing significant" when no finding reaches
 * AGENT_SIGNIFICANT_SEVERITY, with the top objects by their share of the
 * stall cycles (provisional ones left out: not comparable).
 */
static cJSON *summary_json(const struct agent_search *s)
{
	cJSON *sum = cJSON_CreateObject(), *a;
	uint32_t order[AGENT_SUMMARY_TOP_OBJECTS], n = 0;
	double best = 0;

	for (uint32_t i = 0; i < s->findings.nr; i++)
		if (s->findings.v[i].severity > best)
			best = s->findings.v[i].severity;
	cJSON_AddStringToObject(sum, "verdict", best >= AGENT_SIGNIFICANT_SEVERITY ?
				"findings" : "nothing significant");
	cJSON_AddNumberToObject(sum, "threshold", AGENT_SIGNIFICANT_SEVERITY);
	/* insertion into the top AGENT_SUMMARY_TOP_OBJECTS by stall share */
	for (uint32_t i = 0; i < s->nr_objects; i++) {
		const char *m;
		double x = stall_share(s, &s->objects[i], &m);
		uint32_t k;

		if (s->objects[i].provisional || !(round6(x) > 0))	/* a share that prints as 0 is no top object */
			continue;
		for (k = n; k > 0; k--) {
			const char *m2;

			if (stall_share(s, &s->objects[order[k - 1]], &m2) >= x)
				break;
			if (k < AGENT_SUMMARY_TOP_OBJECTS)
				order[k] = order[k - 1];
		}
		if (k < AGENT_SUMMARY_TOP_OBJECTS) {
			order[k] = i;
			if (n < AGENT_SUMMARY_TOP_OBJECTS)
				n++;
		}
	}
	/* then provisional objects (a strategy's counts while it searched, over
	 * their own window), marked, while there is room */
	for (uint32_t i = 0; i < s->nr_objects && n < AGENT_SUMMARY_TOP_OBJECTS; i++)
		if (s->objects[i].provisional)
			order[n++] = i;
	a = cJSON_AddArrayToObject(sum, "top_objects");
	for (uint32_t k = 0; k < n; k++) {
		const struct agent_obj_summary *o = &s->objects[order[k]];
		cJSON *j = cJSON_CreateObject();
		const char *m;
		double x = stall_share(s, o, &m);

		cJSON_AddStringToObject(j, "name", o->name);
		cJSON_AddStringToObject(j, "kind", agent_obj_kind_name(o->kind));
		cJSON_AddNumberToObject(j, "size", (double)o->sz_bytes);
		cJSON_AddNumberToObject(j, "blocks", o->nr_blocks);
		cJSON_AddNumberToObject(j, "stall_share", round6(x));
		cJSON_AddStringToObject(j, "metric", m);
		if (o->provisional) {
			cJSON_AddBoolToObject(j, "provisional", 1);
			cJSON_AddNumberToObject(j, "seconds", round6((double)o->window_ns / 1e9));
		}
		cJSON_AddItemToArray(a, j);
	}
	return sum;
}

cJSON *agent_report_build(const struct agent_search *s, const struct agent_run_info *ri,
			  const struct agent_plugins *pl)
{
	cJSON *root = cJSON_CreateObject(), *a, *o, *t;
	char buf[64], sbuf[256];
	int m = s->primary_metric;
	double factor = 1;

	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "schema", AGENT_REPORT_SCHEMA);
	cJSON_AddNumberToObject(root, "version", AGENT_REPORT_VERSION);
	cJSON_AddStringToObject(root, "ameba_version", AMEBA_VERSION_STRING);
	cJSON_AddStringToObject(root, "mode", ri->mode);
	cJSON_AddStringToObject(root, "program", s->program ? s->program : "?");
	cJSON_AddNumberToObject(root, "pid", s->pid);
	a = cJSON_AddArrayToObject(root, "command");
	for (int i = 0; i < ri->nr_command; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(ri->command[i]));
	cJSON_AddStringToObject(root, "backend", s->backend ? s->backend : "unknown");
	cJSON_AddBoolToObject(root, "exact", s->exact);
	/* the provider keeps these current in the world (the last readings
	 * come after the last refresh) */
	cJSON_AddStringToObject(root, "sim_mode", s->world.sampled ? "sampled" : "exact");
	if (s->world.sampled) {
		o = cJSON_AddObjectToObject(root, "sampling");
		cJSON_AddNumberToObject(o, "since_s", round6(s->world.sampled_since_s));
		cJSON_AddNumberToObject(o, "period_us", s->world.period_us);
		cJSON_AddNumberToObject(o, "warm_us", s->world.warm_us);
		cJSON_AddNumberToObject(o, "burst_us", s->world.burst_us);
		cJSON_AddNumberToObject(o, "bursts", (double)s->world.bursts);
		cJSON_AddNumberToObject(o, "fraction_simulated", round6(s->world.fraction));
		if (s->world.rel_ci >= 0)
			cJSON_AddNumberToObject(o, "interval_rel_ci95", round6(s->world.rel_ci));
	}
	a = cJSON_AddArrayToObject(root, "metrics");
	for (uint32_t i = 0; i < s->nr_metrics; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(ameba_metric_info(s->metrics[i])->name));
	cJSON_AddStringToObject(root, "metric", ameba_metric_info(m) ? ameba_metric_info(m)->name : "mem_ref");

	o = cJSON_AddObjectToObject(root, "strategy");
	if (s->strat && s->strat_b) {
		/* a chain: "a,b", b's parameters as "b.key" */
		snprintf(sbuf, sizeof(sbuf), "%s,%s", s->strat->name, s->strat_b->name);
		cJSON_AddStringToObject(o, "name", sbuf);
	} else {
		cJSON_AddStringToObject(o, "name", s->strat ? s->strat->name : "none");
	}
	t = cJSON_AddObjectToObject(o, "params");
	for (uint32_t i = 0; i < s->strat_params.nr; i++)
		cJSON_AddStringToObject(t, s->strat_params.names[i], s->strat_params.values[i]);
	for (uint32_t i = 0; s->strat_b && i < s->strat_b_params.nr; i++) {
		snprintf(sbuf, sizeof(sbuf), "%s.%s", s->strat_b->name, s->strat_b_params.names[i]);
		cJSON_AddStringToObject(t, sbuf, s->strat_b_params.values[i]);
	}

	a = cJSON_AddArrayToObject(root, "properties");
	for (uint32_t i = 0; pl && i < pl->nr_props; i++) {
		const struct agent_property *p = &pl->props[i];

		if (!p->selected)
			continue;
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", p->name);
		cJSON_AddStringToObject(o, "file", p->path ? p->path : "");
		cJSON_AddStringToObject(o, "lang", p->lang == AGENT_PROP_LUA ? "lua" : "c");
		cJSON_AddStringToObject(o, "status", p->disabled ? "disabled" : "ok");
		if (p->disabled && p->error)
			cJSON_AddStringToObject(o, "error", p->error);
		if (p->refines)
			cJSON_AddStringToObject(o, "refines", p->refines);
		t = cJSON_AddObjectToObject(o, "params");
		for (uint32_t k = 0; k < p->values.nr; k++)
			cJSON_AddStringToObject(t, p->values.names[k], p->values.values[k]);
		cJSON_AddItemToArray(a, o);
	}

	cJSON_AddStringToObject(root, "started", iso_time(&s->started, buf, sizeof(buf)));
	cJSON_AddStringToObject(root, "ended", iso_time(&s->ended, buf, sizeof(buf)));
	cJSON_AddNumberToObject(root, "duration_s", round6(ts_diff_s(&s->started, &s->ended)));
	cJSON_AddNumberToObject(root, "measured_s", round6((double)s->measured_ns / 1e9));
	cJSON_AddNumberToObject(root, "interval_ms", ri->interval_ms);
	cJSON_AddBoolToObject(root, "partial", s->partial);
	cJSON_AddStringToObject(root, "reason", agent_end_name(s->end));
	if (s->error[0])
		cJSON_AddStringToObject(root, "error", s->error);
	cJSON_AddNumberToObject(root, "iterations", s->nr_iterations);
	cJSON_AddNumberToObject(root, "contexts", s->nr_contexts);

	o = cJSON_AddObjectToObject(root, "target");
	cJSON_AddStringToObject(o, "state", ri->target_state == AGENT_TARGET_RUNNING ? "running" :
				ri->target_state == AGENT_TARGET_EXITED ? "exited" :
				ri->target_state == AGENT_TARGET_KILLED ? "killed" : "ended");
	if (ri->target_state == AGENT_TARGET_EXITED)
		cJSON_AddNumberToObject(o, "exit_status", ri->target_exit_code);
	else
		cJSON_AddNullToObject(o, "exit_status");
	if (ri->target_state == AGENT_TARGET_KILLED)
		cJSON_AddStringToObject(o, "signal", sigabbrev_np(ri->target_signal) ?
					sigabbrev_np(ri->target_signal) : "?");
	else
		cJSON_AddNullToObject(o, "signal");
	if (ri->target_wall_s >= 0 && ri->target_state != AGENT_TARGET_RUNNING)
		cJSON_AddNumberToObject(o, "wall_s", round6(ri->target_wall_s));
	else
		cJSON_AddNullToObject(o, "wall_s");
	cJSON_AddNumberToObject(root, "agent_cpu_s", round6(ri->agent_cpu_s));

	cJSON_AddItemToObject(root, "totals", metric_object(s->program_has, s->program_totals));
	cJSON_AddItemToObject(root, "coverage", coverage_json(s, &factor));

	a = cJSON_AddArrayToObject(root, "findings");
	for (uint32_t i = 0; i < s->findings.nr; i++)
		cJSON_AddItemToArray(a, finding_json(&s->findings.v[i], i + 1));
	/* a uniform factor: the ranking (severity, then confidence) stays */
	if (factor < 1)
		cJSON_ArrayForEach(o, a) {
			cJSON *conf = cJSON_GetObjectItemCaseSensitive(o, "confidence");

			if (cJSON_IsNumber(conf))
				cJSON_SetNumberValue(conf, round6(conf->valuedouble * factor));
		}

	a = cJSON_AddArrayToObject(root, "objects");
	for (uint32_t i = 0; i < s->nr_objects; i++) {
		const struct agent_obj_summary *os = &s->objects[i];
		char addr[32];
		/* a share is over the object's own window (a strategy may measure
		 * objects over different windows: nway's rescans) */
		double prog = os->window[m] > 0 ? os->window[m] : s->program_totals[m];
		cJSON *w;

		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", os->name);
		cJSON_AddStringToObject(o, "kind", agent_obj_kind_name(os->kind));
		if (os->site)
			cJSON_AddStringToObject(o, "site", os->site);
		else
			cJSON_AddNullToObject(o, "site");
		cJSON_AddNumberToObject(o, "size", (double)os->sz_bytes);
		snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)os->addr);
		cJSON_AddStringToObject(o, "addr", addr);
		cJSON_AddNumberToObject(o, "blocks", os->nr_blocks);
		/* sampled: the object's estimate and the program's come from
		 * different counters and may differ by their error (an object
		 * that is all of the misses came out at 1.001 of them) */
		cJSON_AddNumberToObject(o, "share", round6(prog > 0 ? fmin(1.0, os->values[m] / prog) : 0));
		cJSON_AddItemToObject(o, "totals", metric_object(os->has, os->values));
		if (s->world.sampled) {
			/* sampled: the 95% half-widths of the totals and of the share */
			cJSON *ci = cJSON_CreateObject();
			double sh;

			for (int k = 0; k < AMEBA_M_NR; k++) {
				double h = os->has[k] ? agent_ci_half(s->ci_tab, os->name, k, os->values[k]) : -1;

				if (h >= 0)
					cJSON_AddNumberToObject(ci, ameba_metric_info(k)->name, round6(h));
			}
			cJSON_AddItemToObject(o, "ci95", ci);
			sh = agent_ci_share_half(s->ci_tab, os->name, m, os->values[m], prog);
			if (sh >= 0)
				cJSON_AddNumberToObject(o, "share_ci95", round6(sh));
		}
		w = cJSON_AddObjectToObject(o, "window");
		cJSON_AddItemToObject(w, "totals", metric_object(os->has, os->window));
		cJSON_AddNumberToObject(w, "seconds", round6((double)os->window_ns / 1e9));
		if (os->mark)
			cJSON_AddStringToObject(w, "mark", os->mark);
		else
			cJSON_AddNullToObject(w, "mark");
		cJSON_AddBoolToObject(o, "provisional", os->provisional);
		cJSON_AddItemToArray(a, o);
	}

	a = cJSON_AddArrayToObject(root, "threads");
	for (uint32_t i = 0; i < s->nr_threads; i++) {
		const struct agent_thread_summary *ts = &s->threads[i];

		o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", ts->id);
		cJSON_AddNumberToObject(o, "tid", ts->tid);
		cJSON_AddBoolToObject(o, "exited", ts->exited);
		if (ts->has_values)
			cJSON_AddItemToObject(o, "totals", metric_object(s->program_has, ts->values));
		else
			cJSON_AddItemToObject(o, "totals", cJSON_CreateObject());
		cJSON_AddItemToArray(a, o);
	}

	a = cJSON_AddArrayToObject(root, "warnings");
	for (uint32_t i = 0; pl && i < pl->nr_warnings; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(pl->warnings[i]));
	cJSON_AddItemToObject(root, "summary", summary_json(s));
	if (s->views_json)
		cJSON_AddItemToObject(root, "views", cJSON_Duplicate(s->views_json, 1));
	return root;
}

int agent_write_atomic(const char *path, const char *data, size_t n, const char *opt, char *err,
		       size_t len)
{
	char tmp[4096], dir[4096];
	size_t off = 0;
	int fd, dfd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, len, "cannot write the report %s: %s (choose another place with "
			 "%s FILE)", tmp, strerror(errno), opt);
		return AMEBA_EIO;
	}
	while (off < n) {
		ssize_t w = write(fd, data + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			snprintf(err, len, "cannot write the report %s: %s", tmp,
				 w < 0 ? strerror(errno) : "short write");
			goto fail;
		}
		off += (size_t)w;
	}
	if (fsync(fd)) {
		snprintf(err, len, "cannot sync the report %s: %s", tmp, strerror(errno));
		goto fail;
	}
	close(fd);
	if (rename(tmp, path)) {
		snprintf(err, len, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
		unlink(tmp);
		return AMEBA_EIO;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
fail:
	close(fd);
	unlink(tmp);
	return AMEBA_EIO;
}

int agent_report_write(const cJSON *root, const char *path, char *err, size_t len)
{
	char *text = cJSON_Print(root);
	size_t n;
	int rc;

	if (!text) {
		snprintf(err, len, "%s: out of memory while formatting the report", path);
		return AMEBA_ENOMEM;
	}
	n = strlen(text);
	text[n++] = '\n';	/* cJSON_Print's buffer has room: it replaces the NUL */
	rc = agent_write_atomic(path, text, n, "--output", err, len);
	free(text);
	return rc;
}

cJSON *agent_report_load(const char *path, char *err, size_t len)
{
	char *text = agent_read_file(path, NULL);
	const cJSON *schema, *version;
	cJSON *root;

	if (!text) {
		snprintf(err, len, "cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	root = cJSON_Parse(text);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		int line = 1;

		for (const char *p = text; at && p < at; p++)
			line += *p == '\n';
		snprintf(err, len, "%s:%d: not valid JSON (a report written by `ameba run` is; was "
			 "the file cut or edited?)", path, line);
		free(text);
		return NULL;
	}
	free(text);
	schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
	version = cJSON_GetObjectItemCaseSensitive(root, "version");
	if (!cJSON_IsString(schema) || strcmp(schema->valuestring, AGENT_REPORT_SCHEMA)) {
		snprintf(err, len, "%s: not an ameba report (no \"schema\": \"%s\"); an AMEBA_ORACLE "
			 "dump is shown by `ameba oracle FILE`", path, AGENT_REPORT_SCHEMA);
		cJSON_Delete(root);
		return NULL;
	}
	if (!cJSON_IsNumber(version) || version->valueint != AGENT_REPORT_VERSION) {
		snprintf(err, len, "%s: report schema version %g; this ameba reads version %d "
			 "(upgrade ameba to read newer reports)", path,
			 cJSON_IsNumber(version) ? version->valuedouble : -1.0, AGENT_REPORT_VERSION);
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

/* ---- the table ---- */

const char *agent_threads_text(const uint32_t *ids, uint32_t nr, uint32_t nr_all, char *buf,
			       size_t len)
{
	size_t o = 0;
	uint32_t i = 0;

	buf[0] = '\0';
	if (nr == 0) {
		snprintf(buf, len, "-");
		return buf;
	}
	if (nr_all && nr == nr_all) {
		int every = 1;

		for (uint32_t k = 0; k < nr; k++)
			every &= ids[k] == k;
		if (every) {
			snprintf(buf, len, "all");
			return buf;
		}
	}
	while (i < nr && o < len) {
		uint32_t j = i;

		while (j + 1 < nr && ids[j + 1] == ids[j] + 1)
			j++;
		if (j > i)
			o += (size_t)snprintf(buf + o, len - o, "%s%u-%u", o ? "," : "", ids[i], ids[j]);
		else
			o += (size_t)snprintf(buf + o, len - o, "%s%u", o ? "," : "", ids[i]);
		i = j + 1;
	}
	return buf;
}

static const char *jstr(const cJSON *o, const char *key, const char *def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : def;
}

static double jnum(const cJSON *o, const char *key, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : def;
}

static const char *size_text(double b, char *buf, size_t len)
{
	if (b >= 1 << 30)
		snprintf(buf, len, "%.1f GiB", b / (1 << 30));
	else if (b >= 1 << 20)
		snprintf(buf, len, "%.1f MiB", b / (1 << 20));
	else if (b >= 1 << 10)
		snprintf(buf, len, "%.1f KiB", b / (1 << 10));
	else
		snprintf(buf, len, "%.0f B", b);
	return buf;
}

/* "heap alloc_counters@false_sharing.c:67 (64 B)" */
static const char *context_text(const cJSON *ctx, char *buf, size_t len)
{
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(ctx, "object");
	const char *kind = jstr(ctx, "kind", "?"), *region = jstr(ctx, "region", NULL);
	char sz[32];

	if (cJSON_IsObject(obj)) {
		const char *okind = jstr(obj, "kind", "?");
		double blocks = jnum(obj, "blocks", 1);

		size_text(jnum(obj, "size", 0), sz, sizeof(sz));
		if (!strcmp(okind, "bin"))
			snprintf(buf, len, "bin %s (%.0f blocks, %s)", jstr(obj, "name", "?"), blocks, sz);
		else
			snprintf(buf, len, "%s %s (%s)", okind, jstr(obj, "name", "?"), sz);
		if (!strcmp(kind, "line")) {
			size_t o = strlen(buf);

			snprintf(buf + o, len - o, " line %s", jstr(ctx, "line", "?"));
		}
	} else if (region) {
		snprintf(buf, len, "region %s", region);
	} else {
		snprintf(buf, len, "%s", kind);
	}
	return buf;
}

int agent_parse_min_severity(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno)
		return -1;
	if (*end == '%') {
		v /= 100;
		end++;
	}
	if (*end || !(v >= 0 && v <= 1))
		return -1;
	*out = v;
	return 0;
}

/* "; fixed: x28.0 predicted" for a finding whose fix was simulated (what_if,
 * docs/whatif.md), else "". */
/* Sampled simulation: " (share +-X pts, 95%)" of the context's object
 * (the objects list has its interval), else "". */
static const char *share_ci_text(const cJSON *root, const cJSON *ctx, char *buf, size_t len)
{
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(ctx, "object"), *o;
	const char *name = jstr(obj, "name", NULL);

	buf[0] = '\0';
	if (!name)
		return buf;
	cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(root, "objects"))
		if (!strcmp(jstr(o, "name", ""), name) && jnum(o, "share_ci95", -1) >= 0) {
			snprintf(buf, len, " (%s share +-%.1f pts, 95%%)", jstr(root, "metric", "?"),
				 100 * jnum(o, "share_ci95", 0));
			break;
		}
	return buf;
}

static const char *predicted_text(const cJSON *f, char *buf, size_t len)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(f, "predicted_speedup");

	buf[0] = 0;
	if (cJSON_IsNumber(p))
		snprintf(buf, len, "; fixed: x%.2f predicted", p->valuedouble);
	return buf;
}

/* "; explains P, Q (in the JSON: absorbed)" for a root cause with symptoms, else "". */
static const char *absorbed_text(const cJSON *f, char *buf, size_t len)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(f, "absorbed"), *s;
	size_t n = 0;

	buf[0] = 0;
	if (!cJSON_GetArraySize(a))
		return buf;
	n = (size_t)snprintf(buf, len, "; explains");
	cJSON_ArrayForEach(s, a) {
		if (n >= len)
			break;
		n += (size_t)snprintf(buf + n, len - n, "%s %s", s == a->child ? "" : ",",
				      jstr(s, "property", "?"));
	}
	return buf;
}

/*
 * The report's verdict is "nothing significant": prints (when out is not
 * NULL) one line saying so and where the memory time goes, the summary's
 * top objects with their share of the stall cycles. Returns 1 then, else 0
 * (also for a report written before the summary existed).
 */
static int nothing_significant(const cJSON *root, FILE *out)
{
	const cJSON *sum = cJSON_GetObjectItemCaseSensitive(root, "summary"), *o;
	const cJSON *findings = cJSON_GetObjectItemCaseSensitive(root, "findings");
	const cJSON *top = cJSON_GetArrayItem(findings, 0);
	char sz[32], ctext[512];

	if (strcmp(jstr(sum, "verdict", ""), "nothing significant"))
		return 0;
	if (!out)
		return 1;
	fprintf(out, "nothing significant: no finding reaches severity %.1f%%",
		100 * jnum(sum, "threshold", 0));
	if (top)
		fprintf(out, " (the largest: %.2f%% %s on %s)", 100 * jnum(top, "severity", 0),
			jstr(top, "property", "?"),
			context_text(cJSON_GetObjectItemCaseSensitive(top, "context"), ctext,
				     sizeof(ctext)));
	fputc('\n', out);
	if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(sum, "top_objects")))
		fprintf(out, "where the memory time goes (share of %s):\n",
			jstr(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(sum, "top_objects"), 0),
			     "metric", "est_stall_cycles"));
	cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(sum, "top_objects")) {
		int prov = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "provisional"));

		fprintf(out, "  %5.1f%%%s %s %s (", 100 * jnum(o, "stall_share", 0), prov ? "~" : " ",
			jstr(o, "kind", "?"), jstr(o, "name", "?"));
		fprintf(out, "%s)", size_text(jnum(o, "size", 0), sz, sizeof(sz)));
		if (prov)
			fprintf(out, " (provisional: over the %.2f s the search measured it in, not "
				"the others' window)", jnum(o, "seconds", 0));
		fputc('\n', out);
	}
	return 1;
}

/* Shown in the table: severity at least min (a finding without one is shown). */
static int finding_shown(const cJSON *f, double min)
{
	const cJSON *sev = cJSON_GetObjectItemCaseSensitive(f, "severity");

	return !cJSON_IsNumber(sev) || sev->valuedouble >= min;
}

/*
 * The coverage lines above the table: under the threshold a warning with
 * the coverage and the confidence factor, then what is missing ("warning:"
 * lines then, "note:" lines when the figures still cover enough).
 */
static void coverage_table(const cJSON *cov, FILE *out)
{
	const cJSON *mi, *share = cJSON_GetObjectItemCaseSensitive(cov, "share");
	double factor = jnum(cov, "factor", 1);

	if (!cov)
		return;
	if (factor < 1) {
		fprintf(out, "warning: the figures account for %.1f%% of the program's %s (under %.0f%%): "
			"window %.2f s of %.2f s searched", 100 * jnum(cov, "coverage", 0),
			jstr(cov, "metric", "?"), 100 * jnum(cov, "threshold", 0),
			jnum(cov, "window_s", 0), jnum(cov, "search_s", 0));
		if (cJSON_IsNumber(share))
			fprintf(out, ", %.1f%% of it attributed to objects", 100 * share->valuedouble);
		fprintf(out, "; confidences x %.2f\n", factor);
	}
	cJSON_ArrayForEach(mi, cJSON_GetObjectItemCaseSensitive(cov, "missing"))
		if (cJSON_IsString(mi))
			fprintf(out, "%s: %s\n", factor < 1 ? "warning" : "note", mi->valuestring);
}

#define PROP_COL_MAX 40	/* the table's property column at most */

/* s cut to width columns with "..." when longer (table cells), in buf. */
static const char *cell(const char *s, size_t width, char *buf, size_t len)
{
	if (strlen(s) <= width || width < 4 || len < width + 1)
		return s;
	snprintf(buf, len, "%.*s...", (int)(width - 3), s);
	return buf;
}

static void table_raw(const cJSON *root, FILE *out, uint32_t top, double min_severity);

/*
 * The table as text: what the program named (objects, files, advice made
 * from them) may hold control characters; they are printed escaped
 * (\xNN, and \u00NN for the C1 controls in UTF-8) so that a name cannot
 * drive the terminal.
 */
void agent_report_table(const cJSON *root, FILE *out, uint32_t top, double min_severity)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);

	if (!mem) {
		table_raw(root, out, top, min_severity);
		return;
	}
	table_raw(root, mem, top, min_severity);
	fclose(mem);
	for (size_t i = 0, k; i < len; i += k ? k : 1) {
		char e[8];

		k = text[i] == '\n' ? 0 : agent_escape_one((const unsigned char *)text + i, len - i, e);
		if (k)
			fputs(e, out);
		else
			fputc(text[i], out);
	}
	free(text);
}

static void table_raw(const cJSON *root, FILE *out, uint32_t top, double min_severity)
{
	const cJSON *findings = cJSON_GetObjectItemCaseSensitive(root, "findings");
	const cJSON *threads = cJSON_GetObjectItemCaseSensitive(root, "threads");
	const cJSON *strategy = cJSON_GetObjectItemCaseSensitive(root, "strategy");
	const cJSON *f, *w;
	uint32_t nr_all = (uint32_t)cJSON_GetArraySize(threads), rank = 0, shown = 0, heading = 0;
	uint32_t nr_shown = 0, nr_hidden = 0;
	int partial = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "partial"));
	int pw = 22;	/* the property column: the longest name shown, up to PROP_COL_MAX */

	cJSON_ArrayForEach(f, findings) {
		size_t n = strlen(jstr(f, "property", "?"));

		if (finding_shown(f, min_severity))
			nr_shown++;
		else
			nr_hidden++;
		if (finding_shown(f, min_severity) && n > (size_t)pw)
			pw = n > PROP_COL_MAX ? PROP_COL_MAX : (int)n;
	}
	fprintf(out, "ameba: %s (pid %.0f), backend %s, strategy %s, metric %s: %.0f iterations, "
		"%.2f s measured\n", jstr(root, "program", "?"), jnum(root, "pid", 0),
		jstr(root, "backend", "?"), jstr(strategy, "name", "?"), jstr(root, "metric", "?"),
		jnum(root, "iterations", 0), jnum(root, "measured_s", 0));
	if (!strcmp(jstr(root, "sim_mode", "exact"), "sampled")) {
		const cJSON *sm = cJSON_GetObjectItemCaseSensitive(root, "sampling");
		double rel = jnum(sm, "interval_rel_ci95", -1);
		char prec[64] = "";

		if (rel >= 0)
			snprintf(prec, sizeof(prec), ", each interval's total within +-%.1f%% (95%%)",
				 100 * rel);
		fprintf(out, "sampled simulation from %.0f s: %.0f bursts of %.1f ms every ~%.0f ms "
			"simulated %.2f%% of the accesses; counts are estimates%s\n",
			jnum(sm, "since_s", 0),
			jnum(sm, "bursts", 0), jnum(sm, "burst_us", 0) / 1e3,
			jnum(sm, "period_us", 0) / 1e3, 100 * jnum(sm, "fraction_simulated", 0), prec);
	}
	if (partial)
		fprintf(out, "partial report: %s\n", jstr(root, "reason", "?"));
	if (jstr(root, "error", NULL))
		fprintf(out, "error: %s\n", jstr(root, "error", ""));
	coverage_table(cJSON_GetObjectItemCaseSensitive(root, "coverage"), out);
	if (nothing_significant(root, out) && nr_shown) {
		fprintf(out, "%4s %8s %4s %-*s %-39s %-8s %s\n", "rank", "severity", "conf",
			pw, "property", "context", "threads", "evidence");
	} else if (nothing_significant(root, NULL)) {
		/* said above; nothing to rank */
	} else if (nr_shown == 0) {
		const cJSON *objs = cJSON_GetObjectItemCaseSensitive(root, "objects"), *o;
		uint32_t n = 0;

		if (nr_hidden)
			fprintf(out, "no finding reaches severity %.1f%% on the %.0f contexts "
				"measured\n", 100 * min_severity, jnum(root, "contexts", 0));
		else
			fprintf(out, "no property holds on the %.0f contexts measured\n",
				jnum(root, "contexts", 0));
		if (cJSON_GetArraySize(objs))
			fprintf(out, "top objects by %s:\n", jstr(root, "metric", "?"));
		cJSON_ArrayForEach(o, objs) {
			const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "window");
			int prov = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "provisional"));
			char sz[32];

			if (++n > 5)
				break;
			fprintf(out, "  %5.1f%%%s %s %s (%s)", 100 * jnum(o, "share", 0),
				prov ? "~" : " ", jstr(o, "kind", "?"), jstr(o, "name", "?"),
				size_text(jnum(o, "size", 0), sz, sizeof(sz)));
			if (prov)
				fprintf(out, " (provisional: over the %.2f s the search measured it "
					"in, not the others' window)", jnum(w, "seconds", 0));
			fputc('\n', out);
		}
	} else {
		fprintf(out, "%4s %8s %4s %-*s %-39s %-8s %s\n", "rank", "severity", "conf",
			pw, "property", "context", "threads", "evidence");
	}
	cJSON_ArrayForEach(f, findings) {
		const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(f, "context");
		const cJSON *tids = cJSON_GetObjectItemCaseSensitive(ctx, "threads"), *t;
		uint32_t ids[256], nr = 0;
		char ctext[512], ttext[128], atext[256], ptext[64], cut1[64], cut2[128], etext[96];

		rank++;
		if (!finding_shown(f, min_severity))
			continue;
		if (top && shown >= top)
			break;
		cJSON_ArrayForEach(t, tids)	/* a thread id: 0 .. 2^32-1 (a file may hold anything) */
			if (cJSON_IsNumber(t) && nr < 256 && t->valuedouble >= 0 &&
			    t->valuedouble < 4294967296.0)
				ids[nr++] = (uint32_t)t->valuedouble;
		/* dozens of short-lived threads: their number (the JSON lists them) */
		if (strlen(agent_threads_text(ids, nr, nr_all, ttext, sizeof(ttext))) > 24)
			snprintf(ttext, sizeof(ttext), "%u threads", nr);
		fprintf(out, "%4.0f%7.1f%% %5.2f %-*s %-39s %-8s %s%s%s%s\n", jnum(f, "rank", rank),
			100 * jnum(f, "severity", 0), jnum(f, "confidence", 0), pw,
			cell(jstr(f, "property", "?"), (size_t)pw, cut1, sizeof(cut1)),
			cell(context_text(ctx, ctext, sizeof(ctext)), 64, cut2, sizeof(cut2)), ttext,
			jstr(f, "evidence", ""), share_ci_text(root, ctx, etext, sizeof(etext)),
			predicted_text(f, ptext, sizeof(ptext)), absorbed_text(f, atext, sizeof(atext)));
		shown++;
	}
	if (shown < nr_shown)
		fprintf(out, "(%u more findings in the JSON report)\n", nr_shown - shown);
	if (nr_hidden)
		fprintf(out, "(%u finding%s below severity %.1f%% not shown; --min-severity 0 shows "
			"%s)\n", nr_hidden, nr_hidden == 1 ? "" : "s", 100 * min_severity,
			nr_hidden == 1 ? "it" : "them");
	rank = 0;
	cJSON_ArrayForEach(f, findings) {
		const char *advice = jstr(f, "advice", "");
		char ctext[512];

		if (!finding_shown(f, min_severity))
			continue;
		if (++rank > 5 || rank > shown)
			break;
		if (!*advice)
			continue;
		if (!heading++)
			fprintf(out, "advice:\n");
		fprintf(out, "  %.0f. %s on %s: %s\n", jnum(f, "rank", rank), jstr(f, "property", "?"),
			context_text(cJSON_GetObjectItemCaseSensitive(f, "context"), ctext,
				     sizeof(ctext)), advice);
	}
	rank = 0;
	cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(root, "warnings"))
		rank++;
	if (rank)
		fprintf(out, "%u warning%s (plugins refused or disabled); see \"warnings\" in the JSON "
			"report\n", rank, rank == 1 ? "" : "s");
}
