/*
 * search.c - the online search loop (AMEBA: Strategy x ContextProvider).
 *
 * Notes:
 *  - One iteration: refresh the host tables from the monitor, let the
 *    strategy plan an experiment, run it for one interval through the
 *    provider, hand the values back to the strategy. Properties are
 *    evaluated on the strategy's contexts at the end (and, only while a
 *    progress line is drawn, at most twice a second for "best so far"),
 *    which keeps the agent's own CPU time small.
 *  - The loop ends when plan() says the strategy is done (complete), the
 *    --duration budget is spent, the target exits, *stop is raised
 *    (SIGINT/SIGTERM), or the monitor or strategy fails. A report is
 *    produced in every case; it is partial for the last three.
 *  - Objects in the host tables are the provider's; strategies copy what
 *    they keep, since the tables change at every refresh.
 *  - The first intervals are shortened (warm-up, below): a strategy can
 *    only arm counters for objects it has seen, and a program allocates
 *    its hot objects as it starts.
 *  - Chains (--strategy a,b): a runs until it is done, or - when it never
 *    finishes by itself - until refine_share of --duration (or
 *    refine_after_ms without one) is spent. Its contexts are then copied
 *    (the copies are b's host->seeds and a's part of the report), a is
 *    destroyed and b created on a host of its own. Properties run on the
 *    union: a's contexts, where a context b measured again on the same
 *    object (or line) replaces a's - the refinement carries the evidence
 *    and one object gives one finding - then b's others; b's program
 *    context is dropped when a has one (a's window is the longer). The
 *    object and thread summaries come from a's contexts. When the target
 *    exits during a, the report is a's alone.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "search.h"
#include "views.h"
#include "mri/mri.h"

/* strat_guarded(): the strategy faulted (not an AMEBA_E* code) */
#define AGENT_STRATEGY_CRASHED (-1000)

static const char *const end_names[] = {
	[AGENT_END_COMPLETE] = "complete",
	[AGENT_END_DURATION] = "duration",
	[AGENT_END_EXITED] = "target exited",
	[AGENT_END_INTERRUPTED] = "interrupted",
	[AGENT_END_ERROR] = "error",
};

const char *agent_end_name(int end)
{
	if (end < 0 || end > AGENT_END_ERROR)
		return "error";
	return end_names[end];
}

static int progress_on_screen;

void agent_progress_clear(void)
{
	if (progress_on_screen) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		progress_on_screen = 0;
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void host_log(const struct ameba_host *h, const char *fmt, ...)
{
	struct agent_search *s = h->agent;
	va_list ap;

	if (!s->opts.verbose)
		return;
	agent_progress_clear();
	fprintf(stderr, "ameba: %s: ", h == &s->host_b ? s->strat_b->name : s->strat->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void host_warn(const struct ameba_host *h, const char *fmt, ...)
{
	struct agent_search *s = h->agent;
	char buf[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	agent_plugins_warn(s->pl, "%s: %s", h == &s->host_b ? s->strat_b->name : s->strat->name,
			   buf);
}

/* The field of a global at a byte offset (plugin.h, field_name). */
static int host_field_name(const struct ameba_host *h, const struct ameba_object *o, uint64_t off,
			   char *buf, size_t len)
{
	struct agent_search *s = h->agent;

	if (!len)
		return -1;
	buf[0] = 0;
	if (!o || o->kind != AMEBA_OBJ_GLOBAL)
		return -1;
	return agent_fields_name(&s->fields, s->world.pid, o->name, off, buf, len);
}

/* The provider's notes (agent_provider.warn): to the report's warnings. */
static void provider_warn(void *arg, const char *msg)
{
	struct agent_search *s = arg;

	agent_plugins_warn(s->pl, "%s", msg);
}

static void host_fill(struct agent_search *s, struct ameba_host *h)
{
	const struct ameba_backend_info *row = ameba_backend_by_name(s->world.backend);

	h->abi_version = AMEBA_PLUGIN_ABI_VERSION;
	h->struct_size = sizeof(*h);
	h->objects = s->world.objects;
	h->nr_objects = s->world.nr_objects;
	h->bins = s->world.bins;
	h->nr_bins = s->world.nr_bins;
	h->threads = s->world.threads;
	h->nr_threads = s->world.nr_threads;
	h->object_size = sizeof(struct ameba_object);
	h->thread_size = sizeof(struct ameba_thread);
	h->metrics = s->world.metrics;
	h->nr_metrics = s->world.nr_metrics;
	h->exact = s->world.exact;
	h->max_counters = AMEBA_MAX_COUNTERS;
	h->max_ranges = AMEBA_MAX_RANGES;
	h->max_message_bytes = AMEBA_MAX_MESSAGE_BYTES;
	h->field_name = host_field_name;
	/* the runtime's backends keep per-object counts (its backend table row) */
	h->whole_objects_free = row && row->where == AMEBA_BACKEND_RUNTIME;
	h->log = host_log;
	h->warn = host_warn;
	h->agent = s;
}

static void host_update(struct agent_search *s)
{
	host_fill(s, &s->host);
	if (s->state_b_live)
		host_fill(s, &s->host_b);	/* seeds stay as they were set */
}

/* ---- context copies (chains) ---- */

static void ctx_release(struct ameba_context *c)
{
	if (c->object) {
		free((char *)c->object->name);
		free((char *)c->object->site);
		free((struct ameba_object *)c->object);
	}
	free((char *)c->region);
	free((uint32_t *)c->thread_ids);
	for (uint32_t m = 0; c->per_thread && m < c->nr_metrics; m++)
		free((double *)c->per_thread[m]);
	free((char *)c->extra);
	free((void *)c->has);	/* the start of its struct ameba_context_data */
	memset(c, 0, sizeof(*c));
}

static int str_clone(const char *src, const char **dst)
{
	*dst = NULL;
	if (!src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : AMEBA_ENOMEM;
}

/*
 * A deep copy of src in this build's layout: a context of a plugin built
 * with fewer fields reads its missing tail as zero, with fewer metrics
 * reads the others as not measured (plugin.h, "Growth").
 */
static int ctx_clone(struct ameba_context *dst, const struct ameba_context *src)
{
	struct ameba_context in = { 0 };
	struct ameba_context_data *d = malloc(sizeof(*d));
	uint32_t nm;
	int rc = 0;

	if (!d) {
		memset(dst, 0, sizeof(*dst));
		return AMEBA_ENOMEM;
	}
	memcpy(&in, src, src->struct_size < sizeof(in) ? src->struct_size : sizeof(in));
	nm = in.nr_metrics < AMEBA_M_NR ? in.nr_metrics : AMEBA_M_NR;
	ameba_context_init(dst, d);
	dst->kind = in.kind;
	dst->line = in.line;
	dst->nr_threads = in.nr_threads;
	dst->confidence = in.confidence;
	dst->nr_samples = in.nr_samples;
	dst->window_ns = in.window_ns;
	memcpy(d->has, in.has, nm * sizeof(*d->has));
	memcpy(d->values, in.values, nm * sizeof(*d->values));
	memcpy(d->program, in.program, nm * sizeof(*d->program));
	if (in.object) {
		struct ameba_object *o = malloc(sizeof(*o));

		if (!o) {
			ctx_release(dst);
			return AMEBA_ENOMEM;
		}
		*o = *in.object;
		o->name = o->site = NULL;
		dst->object = o;
		rc |= str_clone(in.object->name, &o->name);
		rc |= str_clone(in.object->site, &o->site);
	}
	rc |= str_clone(in.region, &dst->region);
	rc |= str_clone(in.extra, &dst->extra);
	if (in.nr_threads && in.thread_ids) {
		uint32_t *ids = malloc(in.nr_threads * sizeof(*ids));

		if (ids)
			memcpy(ids, in.thread_ids, in.nr_threads * sizeof(*ids));
		dst->thread_ids = ids;
		rc |= ids ? 0 : AMEBA_ENOMEM;
	}
	for (uint32_t m = 0; m < nm && in.nr_threads && in.per_thread; m++) {
		double *v;

		if (!in.per_thread[m])
			continue;
		v = malloc(in.nr_threads * sizeof(*v));
		if (v)
			memcpy(v, in.per_thread[m], in.nr_threads * sizeof(*v));
		d->per_thread[m] = v;
		rc |= v ? 0 : AMEBA_ENOMEM;
	}
	if (rc) {
		ctx_release(dst);
		return AMEBA_ENOMEM;
	}
	return 0;
}

int agent_contexts_clone(const struct ameba_context *src, uint32_t nr,
			 struct ameba_context **out)
{
	struct ameba_context *v = calloc(nr + 1, sizeof(*v));

	*out = NULL;
	if (!v)
		return AMEBA_ENOMEM;
	for (uint32_t i = 0; i < nr; i++)
		if (ctx_clone(&v[i], ameba_context_at(src, i))) {
			agent_contexts_free(v, i);
			return AMEBA_ENOMEM;
		}
	*out = v;
	return 0;
}

void agent_contexts_free(struct ameba_context *ctxs, uint32_t nr)
{
	for (uint32_t i = 0; ctxs && i < nr; i++)
		ctx_release(&ctxs[i]);
	free(ctxs);
}

/*
 * A strategy's contexts, in this build's layout: as they are when the
 * strategy was built with this plugin.h (the usual case), else copies
 * (plugin.h, "Growth") valid until the next call. 0 or AMEBA_E*.
 */
static int strat_contexts(struct agent_search *s, const struct agent_strategy *st, void *state,
			  const struct ameba_context **out, uint32_t *nr)
{
	const struct ameba_context *v = NULL;
	uint32_t n = 0;
	int rc;

	*out = NULL;
	*nr = 0;
	rc = st->desc.contexts(state, &v, &n);
	if (rc || !v || !n)
		return rc;
	if (v->struct_size != sizeof(*v) || v->nr_metrics != AMEBA_M_NR) {
		agent_contexts_free(s->norm, s->nr_norm);
	free(s->ctr_norm);
		s->norm = NULL;
		s->nr_norm = 0;
		if (v->struct_size < offsetof(struct ameba_context, nr_metrics) +
		    sizeof(v->nr_metrics))
			return AMEBA_EABI;
		rc = agent_contexts_clone(v, n, &s->norm);
		if (rc)
			return rc;
		s->nr_norm = n;
		v = s->norm;
	}
	*out = v;
	*nr = n;
	return 0;
}

/*
 * The experiment's counters in this build's layout: a strategy built with
 * a smaller struct ameba_counter (plugin.h, "Growth") gets them copied,
 * the missing tail zero. 0 or AMEBA_ENOMEM.
 */
static int counters_ours(struct agent_search *s, struct ameba_experiment *exp)
{
	size_t have = exp->counter_size ? exp->counter_size : sizeof(struct ameba_counter);
	struct ameba_counter *v;

	if (have == sizeof(struct ameba_counter) || !exp->nr_counters)
		return 0;
	v = calloc(exp->nr_counters, sizeof(*v));
	if (!v)
		return AMEBA_ENOMEM;
	for (uint32_t i = 0; i < exp->nr_counters; i++)
		memcpy(&v[i], ameba_experiment_counter(exp, i), have < sizeof(*v) ? have : sizeof(*v));
	free(s->ctr_norm);
	s->ctr_norm = v;
	exp->counters = v;
	exp->counter_size = sizeof(*v);
	return 0;
}

/* Same subject: both the program, or the same object (and line). */
static int ctx_same(const struct ameba_context *x, const struct ameba_context *y)
{
	if (x->kind != y->kind)
		return 0;
	if (x->kind == AMEBA_CTX_PROGRAM)
		return 1;
	if (x->kind == AMEBA_CTX_REGION)
		return x->region && y->region && !strcmp(x->region, y->region);
	if (!x->object || !y->object)
		return 0;
	return x->object->start == y->object->start && x->object->end == y->object->end &&
	       x->object->kind == y->object->kind && x->line == y->line &&
	       !strcmp(x->object->name ? x->object->name : "", y->object->name ? y->object->name : "");
}

/*
 * The union of a chain: a's contexts with b's refinements in their place,
 * then b's other contexts (its program context only when a had none).
 * Returns a malloc'ed array of shallow copies (nr in *nr), or NULL.
 */
static struct ameba_context *chain_union(const struct ameba_context *a, uint32_t nr_a,
					 const struct ameba_context *b, uint32_t nr_b, uint32_t *nr)
{
	struct ameba_context *u = calloc((size_t)nr_a + nr_b + 1, sizeof(*u));
	uint8_t *used = calloc((size_t)nr_b + 1, 1);
	uint32_t n = 0;

	*nr = 0;
	if (!u || !used) {
		free(u);
		free(used);
		return NULL;
	}
	for (uint32_t i = 0; i < nr_a; i++) {
		const struct ameba_context *c = &a[i];

		for (uint32_t j = 0; j < nr_b; j++)
			if (!used[j] && ctx_same(&a[i], &b[j])) {
				used[j] = 1;
				if (b[j].kind != AMEBA_CTX_PROGRAM)
					c = &b[j];
				break;
			}
		u[n++] = *c;
	}
	for (uint32_t j = 0; j < nr_b; j++)
		if (!used[j])
			u[n++] = b[j];
	free(used);
	*nr = n;
	return u;
}

int agent_world_has(const struct agent_world *w, int m)
{
	for (uint32_t i = 0; i < w->nr_metrics; i++)
		if (w->metrics[i] == m)
			return 1;
	return 0;
}

/*
 * One snapshot of the thread table: who is alive now. A thread first listed
 * already exited lived between this snapshot and the last (from = to = -1).
 * Thread ids are dense (0 main, then creation order), so the lives array is
 * indexed by id.
 */
static void threads_snapshot(struct agent_search *s)
{
	const struct agent_world *w = &s->world;
	struct agent_thread_life *l = realloc(s->lives, (s->nr_threads + 1) * sizeof(*l));
	uint32_t alive = 0;

	if (!l)
		return;
	s->lives = l;
	for (uint32_t i = 0; i < s->nr_threads; i++) {
		struct agent_thread_life *t = &s->threads[i].life;
		int listed = i < w->nr_threads;

		if (!listed)
			continue;
		if (!t->seen) {
			/* first listing (snapshots count from 1) */
			t->seen = s->nr_snaps + 1;
			t->from = t->to = -1;
		}
		if (!w->threads[i].exited) {
			if (t->from < 0)
				t->from = s->nr_snaps + 1;
			t->to = s->nr_snaps + 1;
			alive += w->threads[i].id != 0;
		}
	}
	s->nr_snaps++;
	if (alive > s->max_alive)
		s->max_alive = alive;
	for (uint32_t i = 0; i < s->nr_threads; i++)
		l[i] = s->threads[i].life;
	s->pl->lives = l;
	s->pl->nr_lives = s->nr_threads;
	s->pl->max_alive = s->max_alive;
}

/* Keeps what the report needs from the latest tables. */
static void world_keep(struct agent_search *s)
{
	const struct agent_world *w = &s->world;
	struct agent_thread_summary *t;

	if (!s->program && w->program)
		s->program = strdup(w->program);
	if (!s->backend && w->backend)
		s->backend = strdup(w->backend);
	s->pid = w->pid;
	s->exact = w->exact;
	s->nr_metrics = w->nr_metrics;
	memcpy(s->metrics, w->metrics, sizeof(s->metrics));
	if (w->nr_threads >= s->nr_threads) {
		t = realloc(s->threads, (w->nr_threads + 1) * sizeof(*t));
		if (!t)
			return;
		s->threads = t;
		for (uint32_t i = s->nr_threads; i < w->nr_threads; i++)
			memset(&t[i], 0, sizeof(t[i]));
		s->nr_threads = w->nr_threads;
	}
	for (uint32_t i = 0; i < w->nr_threads; i++) {
		s->threads[i].id = w->threads[i].id;
		s->threads[i].tid = w->threads[i].tid;
		s->threads[i].exited = w->threads[i].exited;
	}
	threads_snapshot(s);
}

static int choose_metric(struct agent_search *s)
{
	static const int prefer[] = { AMEBA_M_L1D_MISS, AMEBA_M_MEM_REF };
	const struct agent_world *w = &s->world;

	if (s->opts.primary_metric >= 0) {
		if (agent_world_has(w, s->opts.primary_metric))
			return s->opts.primary_metric;
		{
			size_t o = (size_t)snprintf(s->error, sizeof(s->error),
						    "--metric %s: the %s backend of pid %d does not "
						    "measure it; it measures:",
						    ameba_metric_info(s->opts.primary_metric)->name,
						    w->backend ? w->backend : "?", (int)w->pid);

			for (uint32_t i = 0; i < w->nr_metrics && o < sizeof(s->error); i++)
				o += (size_t)snprintf(s->error + o, sizeof(s->error) - o, " %s",
						      ameba_metric_info(w->metrics[i])->name);
		}
		return AMEBA_ENOTSUP;
	}
	for (size_t i = 0; i < sizeof(prefer) / sizeof(prefer[0]); i++)
		if (agent_world_has(w, prefer[i]))
			return prefer[i];
	if (w->nr_metrics)
		return w->metrics[0];
	snprintf(s->error, sizeof(s->error), "the monitor of pid %d reports no metrics", (int)w->pid);
	return AMEBA_ENOTSUP;
}

/* The strategy running now and its state. */
static struct agent_strategy *stage_strat(struct agent_search *s)
{
	return s->stage ? s->strat_b : s->strat;
}

static void *stage_state(struct agent_search *s)
{
	return s->stage ? s->state_b : s->state;
}

/* A strategy's plan() or observe() under the guard (guard.c). */
struct strat_call {
	struct agent_strategy *st;
	void *state;
	struct ameba_experiment *exp;
	const struct ameba_results *res;	/* NULL: plan() */
};

static int strat_call_fn(void *arg)
{
	struct strat_call *c = arg;

	return c->res ? c->st->desc.observe(c->state, c->exp, c->res) :
			c->st->desc.plan(c->state, c->exp);
}

/*
 * Calls the stage's plan() (res NULL) or observe(). A strategy that
 * crashed is not called again, not even to be destroyed (its state may
 * be anything): the search ends with the error, and the report keeps what
 * the other stage found.
 */
static int strat_guarded(struct agent_search *s, struct ameba_experiment *exp,
			 const struct ameba_results *res)
{
	struct strat_call c = { stage_strat(s), stage_state(s), exp, res };
	int sig, rc = agent_guard_call(strat_call_fn, &c, &sig);

	if (sig) {
		snprintf(s->error, sizeof(s->error), "strategy %s crashed with SIG%s in %s(); its "
			 "contexts are lost", c.st->name, sigabbrev_np(sig) ? sigabbrev_np(sig) : "?",
			 res ? "observe" : "plan");
		if (s->stage)
			s->state_b_live = 0;
		else
			s->state_live = 0;
		return AGENT_STRATEGY_CRASHED;
	}
	return rc;
}

static void progress_draw(struct agent_search *s, int force)
{
	const struct ameba_context *ctxs = NULL;
	uint32_t nr = 0;
	double t = now_s();
	char best[160] = "", note[160] = "";
	struct agent_findings f = { 0 };

	if (!s->opts.progress || (!force && t - s->last_progress_s < 0.5))
		return;
	s->last_progress_s = t;
	if (strat_contexts(s, stage_strat(s), stage_state(s), &ctxs, &nr) == 0 && nr) {
		/* quietly: a failing property reports itself once anyway */
		agent_evaluate(s->pl, ctxs, nr, s->primary_metric, &f);
		agent_findings_rank(s->pl, &f);
		if (f.nr)
			snprintf(best, sizeof(best), "%s %s %.1f%%", f.v[0].property,
				 f.v[0].has_object ? f.v[0].object.name :
				 f.v[0].region ? f.v[0].region : "program", 100 * f.v[0].severity);
		agent_findings_free(&f);
	}
	if (!best[0] && stage_strat(s)->desc.progress)
		stage_strat(s)->desc.progress(stage_state(s), note, sizeof(note));
	fprintf(stderr, "\r\033[Kameba: iteration %u, %u candidates, best: %s", s->nr_iterations, nr,
		best[0] ? best : note[0] ? note : "-");
	fflush(stderr);
	progress_on_screen = 1;
}

/* Records an oracle mark the strategy asked for (the report names it). */
static void note_mark(struct agent_search *s, const char *label, const struct agent_exp_result *res)
{
	char **v;

	if (s->opts.verbose) {
		agent_progress_clear();
		fprintf(stderr, "ameba: oracle mark %s: %s%s\n", label,
			res->mark_written ? "" : "not written: ", res->mark_note);
	}
	if (!res->mark_written)
		return;
	v = realloc(s->marks, (s->nr_marks + 1) * sizeof(*v));
	if (!v)
		return;
	s->marks = v;
	if ((v[s->nr_marks] = strdup(label)))
		s->nr_marks++;
}

/* The value of KEY in a context's extra text ("key=value" lines), its length
 * in *len; NULL when no line sets KEY. */
static const char *extra_value(const char *extra, const char *key, size_t *len)
{
	size_t kl = strlen(key);

	for (const char *p = extra; p && *p;) {
		size_t n = strcspn(p, "\n");

		if (n > kl && p[kl] == '=' && !strncmp(p, key, kl)) {
			*len = n - kl - 1;
			return p + kl + 1;
		}
		p += n;
		if (*p)
			p++;
	}
	return NULL;
}

/* The mark named by a context's "mark=LABEL" line, when the monitor wrote it. */
static char *context_mark(const struct agent_search *s, const char *extra)
{
	size_t n;
	const char *v = extra_value(extra, "mark", &n);

	for (uint32_t i = 0; v && i < s->nr_marks; i++)
		if (strlen(s->marks[i]) == n && !strncmp(s->marks[i], v, n))
			return strdup(s->marks[i]);
	return NULL;
}

/* A strategy's own counts over the intervals that measured the object while
 * it searched (nway: measured=search_intervals), not a final measurement */
static int context_provisional(const char *extra)
{
	size_t n;
	const char *v = extra_value(extra, "measured", &n);

	return v && n == strlen("search_intervals") && !strncmp(v, "search_intervals", n);
}

/*
 * The coverage of the run's metric m by the measured object contexts. A
 * window is told apart by its length and its program count (nway measures
 * everything it found over one window, restarted by a rescan; objects
 * measured over one window all carry the same pair).
 */
static void summarize_coverage(struct agent_search *s, const struct ameba_context *ctxs,
			       uint32_t nr, int m)
{
	struct agent_coverage *cov = &s->coverage;
	struct {
		uint64_t ns;
		double total;
	} win[64];	/* the distinct windows (nway: one per rescan) */
	uint32_t nr_win = 0;

	cov->nr_objects = cov->nr_windows = cov->nr_provisional = 0;
	cov->total = cov->attributed = 0;
	cov->window_ns = 0;
	cov->prov_share = cov->prov_total = 0;
	cov->prov_window_ns = 0;
	for (uint32_t i = 0; i < nr; i++) {
		const struct ameba_context *c = &ctxs[i];
		int seen = 0;

		if (c->kind != AMEBA_CTX_OBJECT || !c->object || !c->has[m])
			continue;
		if (context_provisional(c->extra)) {
			cov->nr_provisional++;
			if (c->program[m] > 0)
				cov->prov_share += c->values[m] / c->program[m];
			if (c->program[m] > cov->prov_total) {
				cov->prov_total = c->program[m];
				cov->prov_window_ns = c->window_ns;
			}
			continue;
		}
		cov->nr_objects++;
		cov->attributed += c->values[m];
		for (uint32_t j = 0; j < nr_win && !seen; j++)
			seen = win[j].ns == c->window_ns && win[j].total == c->program[m];
		if (seen)
			continue;
		if (nr_win < sizeof(win) / sizeof(win[0])) {
			win[nr_win].ns = c->window_ns;
			win[nr_win++].total = c->program[m];
		}
		cov->nr_windows++;
		cov->total += c->program[m];
		if (c->window_ns > cov->window_ns)
			cov->window_ns = c->window_ns;
	}
}

void agent_summarize_contexts(struct agent_search *s, const struct ameba_context *ctxs,
			      uint32_t nr)
{
	uint32_t n = 0, n_meas, cap = s->opts.nr_top_objects ? s->opts.nr_top_objects : 20;
	const struct ameba_context **objs = calloc(nr + 1, sizeof(*objs));
	int m = s->primary_metric;

	summarize_coverage(s, ctxs, nr, m);
	for (uint32_t i = 0; i < nr; i++) {
		const struct ameba_context *c = &ctxs[i];

		if (c->kind == AMEBA_CTX_PROGRAM) {
			for (int k = 0; k < AMEBA_M_NR; k++) {
				s->program_has[k] = c->has[k];
				s->program_totals[k] = c->values[k];
			}
			for (uint32_t t = 0; t < c->nr_threads; t++) {
				uint32_t id = c->thread_ids[t];

				if (id >= s->nr_threads)
					continue;
				s->threads[id].has_values = 1;
				for (int k = 0; k < AMEBA_M_NR; k++)
					s->threads[id].values[k] = c->per_thread[k] ? c->per_thread[k][t] : 0;
			}
		} else if (c->kind == AMEBA_CTX_OBJECT && c->object && objs &&
			   !context_provisional(c->extra)) {
			objs[n++] = c;
			if (!s->program_has[m] && c->has[m]) {
				for (int k = 0; k < AMEBA_M_NR; k++) {
					s->program_has[k] = c->has[k];
					s->program_totals[k] = c->program[k];
				}
			}
		}
	}
	/* provisional figures after the measured ones: their shares are over
	 * other, shorter windows */
	n_meas = n;
	for (uint32_t i = 0; i < nr && objs; i++)
		if (ctxs[i].kind == AMEBA_CTX_OBJECT && ctxs[i].object &&
		    context_provisional(ctxs[i].extra))
			objs[n++] = &ctxs[i];
	/* each part heaviest first by the run's metric (insertion sort: n is small) */
	for (uint32_t i = 1; i < n; i++) {
		const struct ameba_context *x = objs[i];
		uint32_t j = i, lo = i < n_meas ? 0 : n_meas;

		while (j > lo && objs[j - 1]->values[m] < x->values[m]) {
			objs[j] = objs[j - 1];
			j--;
		}
		objs[j] = x;
	}
	if (n > cap)
		n = cap;
	s->objects = calloc(n + 1, sizeof(*s->objects));
	if (!s->objects) {
		free(objs);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct ameba_context *c = objs[i];
		struct agent_obj_summary *o = &s->objects[s->nr_objects];

		if (c->values[m] <= 0 && s->nr_objects > 0)
			continue;	/* provisional ones may follow */
		o->name = strdup(c->object->name ? c->object->name : "?");
		o->kind = c->object->kind;
		o->site = c->object->site ? strdup(c->object->site) : NULL;
		o->sz_bytes = c->object->sz_bytes;
		o->addr = c->object->start;
		o->nr_blocks = c->object->nr_blocks;
		memcpy(o->has, c->has, sizeof(o->has));
		memcpy(o->values, c->values, sizeof(o->values));
		memcpy(o->window, c->program, sizeof(o->window));
		o->window_ns = c->window_ns;
		o->mark = context_mark(s, c->extra);
		o->provisional = i >= n_meas;
		if (o->name) {
			agent_views_thread_row(s, o->name, c);
			s->nr_objects++;
		}
	}
	free(objs);
}

/*
 * The agent's own count of the run's metric over the whole address space,
 * for the report's coverage: the index of a counter of exp that counts it
 * already (metric m, no ranges, bins or thread list), or of one appended to
 * a copy of the experiment (*sent, with *ext, *ext_bins, *ext_except to
 * free), or UINT32_MAX when the experiment has no room for another counter
 * or memory ran out (the coverage then says the count is not exact).
 */
static uint32_t total_counter(const struct ameba_experiment *exp, int m,
			      struct ameba_experiment *sent, struct ameba_counter **ext,
			      struct ameba_counter_bins **ext_bins,
			      struct ameba_counter_bins **ext_except)
{
	uint32_t n = exp->nr_counters;

	*sent = *exp;
	*ext = NULL;
	*ext_bins = *ext_except = NULL;
	for (uint32_t i = 0; i < n; i++) {
		const struct ameba_counter *c = &exp->counters[i];

		if (c->metric == m && !c->nr_ranges && !c->nr_threads &&
		    !(exp->counter_bins && exp->counter_bins[i].nr))
			return i;
	}
	if (n >= MRI_MAX_COUNTERS)
		return UINT32_MAX;
	*ext = calloc(n + 1, sizeof(**ext));
	if (exp->counter_bins)
		*ext_bins = calloc(n + 1, sizeof(**ext_bins));
	if (exp->counter_except)
		*ext_except = calloc(n + 1, sizeof(**ext_except));
	if (!*ext || (exp->counter_bins && !*ext_bins) || (exp->counter_except && !*ext_except)) {
		free(*ext);
		free(*ext_bins);
		free(*ext_except);
		*ext = NULL;
		*ext_bins = *ext_except = NULL;
		return UINT32_MAX;
	}
	if (n)
		memcpy(*ext, exp->counters, n * sizeof(**ext));
	(*ext)[n].metric = m;
	sent->counters = *ext;
	sent->nr_counters = n + 1;
	if (*ext_bins) {
		memcpy(*ext_bins, exp->counter_bins, n * sizeof(**ext_bins));
		sent->counter_bins = *ext_bins;
	}
	if (*ext_except) {
		memcpy(*ext_except, exp->counter_except, n * sizeof(**ext_except));
		sent->counter_except = *ext_except;
	}
	return n;
}

/*
 * The target exited before the first interval was measured: the report
 * would otherwise be an empty ranking that looks like "nothing to fix".
 */
static void tell_unmeasured(struct agent_search *s, double t0)
{
	if (s->pl)
		agent_plugins_warn(s->pl, "the target exited %.2f s after the search began, before "
				   "its first interval was measured: nothing was measured and the "
				   "report ranks nothing; attach while the program does its work, or "
				   "use `ameba run` to measure it from its start", now_s() - t0);
}

/* Final evaluation: contexts -> findings, summary. */
static void finish(struct agent_search *s)
{
	const struct ameba_context *ctxs = NULL;
	uint32_t nr = 0;

	if (s->stage == 1) {
		struct ameba_context *u;

		if (!s->state_b_live ||
		    strat_contexts(s, s->strat_b, s->state_b, &ctxs, &nr) || !ctxs)
			nr = 0;
		u = chain_union(s->seeds, s->nr_seeds, ctxs, nr, &s->nr_contexts);
		if (u)
			agent_evaluate(s->pl, u, s->nr_contexts, s->primary_metric, &s->findings);
		free(u);
		agent_findings_rank(s->pl, &s->findings);
		agent_summarize_contexts(s, s->seeds, s->nr_seeds);
		s->views_json = agent_views_json(s);
		return;
	}
	if (!s->state_live)
		return;
	if (strat_contexts(s, s->strat, s->state, &ctxs, &nr) || !ctxs)
		nr = 0;
	s->nr_contexts = nr;
	agent_evaluate(s->pl, ctxs, nr, s->primary_metric, &s->findings);
	agent_findings_rank(s->pl, &s->findings);
	agent_summarize_contexts(s, ctxs, nr);
	s->views_json = agent_views_json(s);
}

/*
 * Resolves the parameters of st: the defaults, what the user gave, and the
 * run's metric for a strategy that takes `metric`. 0 or AMEBA_E* (s->error).
 */
static int strat_params(struct agent_search *s, const struct agent_strategy *st,
			const struct agent_params *user, struct agent_params *out)
{
	struct agent_params given = { 0 };
	int has_metric_param = 0, user_metric = 0, rc;
	char who[128];

	snprintf(who, sizeof(who), "strategy %s", st->name);
	for (uint32_t i = 0; i < st->desc.nr_params; i++)
		has_metric_param |= !strcmp(st->desc.params[i].name, "metric");
	for (uint32_t i = 0; user && i < user->nr; i++) {
		user_metric |= !strcmp(user->names[i], "metric");
		if (agent_params_set(&given, user->names[i], user->values[i])) {
			agent_params_free(&given);
			return AMEBA_ENOMEM;
		}
	}
	/* a strategy that takes `metric` defaults to the run's --metric */
	if (has_metric_param && !user_metric &&
	    agent_params_set(&given, "metric", ameba_metric_info(s->primary_metric)->name)) {
		agent_params_free(&given);
		return AMEBA_ENOMEM;
	}
	rc = agent_params_resolve(who, st->desc.params, st->desc.nr_params, &given, out, s->error,
				  sizeof(s->error));
	agent_params_free(&given);
	return rc;
}

/* Whether any of the contexts counted anything (a value above 0). */
static int contexts_counted(const struct ameba_context *v, uint32_t nr)
{
	for (uint32_t i = 0; i < nr; i++)
		for (uint32_t m = 0; m < AMEBA_M_NR; m++)
			if (v[i].has[m] && v[i].values[m] > 0)
				return 1;
	return 0;
}

/*
 * Chains: whether a, which is not done, may hand over at its share of the
 * time: not while its contexts have counted nothing, for b would have
 * nothing to refine and end the search at once (a sampled attach whose
 * first burst came late ended with an empty report).
 */
static int chain_ready(struct agent_search *s)
{
	const struct ameba_context *ctxs = NULL;
	uint32_t nr = 0;

	if (strat_contexts(s, s->strat, s->state, &ctxs, &nr) || !ctxs)
		nr = 0;
	return contexts_counted(ctxs, nr);
}

/*
 * Chains: a hands over to b. a's contexts are copied (b's seeds), a is
 * destroyed, b is created. 0, or AMEBA_E* with s->error set (the report
 * then holds a's contexts).
 */
static int chain_switch(struct agent_search *s)
{
	const struct ameba_context *ctxs = NULL;
	uint32_t nr = 0;
	char msg[256] = "";
	int rc;

	if (strat_contexts(s, s->strat, s->state, &ctxs, &nr) || !ctxs)
		nr = 0;
	rc = agent_contexts_clone(ctxs, nr, &s->seeds);
	if (rc) {
		snprintf(s->error, sizeof(s->error), "out of memory copying %u contexts of strategy "
			 "%s for %s", nr, s->strat->name, s->strat_b->name);
		return rc;
	}
	s->nr_seeds = nr;
	s->strat->desc.destroy(s->state);
	s->state_live = 0;
	s->stage = 1;
	s->nr_iterations_a = s->nr_iterations;
	if (s->opts.verbose) {
		agent_progress_clear();
		fprintf(stderr, "ameba: %s hands %u contexts to %s after %u iterations\n",
			s->strat->name, nr, s->strat_b->name, s->nr_iterations);
	}
	rc = strat_params(s, s->strat_b, s->strat_b_given, &s->strat_b_params);
	if (rc)
		return rc;
	host_fill(s, &s->host_b);
	s->host_b.seeds = s->seeds;
	s->host_b.nr_seeds = s->nr_seeds;
	rc = s->strat_b->desc.create(&s->host_b, &s->strat_b_params.view, &s->state_b, msg);
	if (rc) {
		snprintf(s->error, sizeof(s->error), "strategy %s (%s) refused to start after %s: %s",
			 s->strat_b->name, s->strat_b->path, s->strat->name,
			 msg[0] ? msg : ameba_strerror(rc));
		return rc;
	}
	s->state_b_live = 1;
	return 0;
}

int agent_search_run(struct agent_search *s)
{
	const struct agent_strategy *st = s->strat;
	char msg[256] = "";
	double t0, deadline, handover = INFINITY;
	int rc, stop_reason = -1, a_done = 0;

	clock_gettime(CLOCK_REALTIME, &s->started);
	s->coverage.searched_exact = 1;
	if (s->pl) {
		s->prov->warn = provider_warn;
		s->prov->warn_arg = s;
	}
	t0 = now_s();
	deadline = s->opts.duration_ms ? t0 + (double)s->opts.duration_ms / 1e3 : INFINITY;
	s->primary_metric = s->opts.primary_metric >= 0 ? s->opts.primary_metric : AMEBA_M_MEM_REF;

	rc = s->prov->ops->refresh(s->prov, &s->world);
	if (rc == AMEBA_EEXITED) {
		s->end = AGENT_END_EXITED;
		s->partial = 1;
		tell_unmeasured(s, t0);
		goto out;
	}
	if (rc) {
		snprintf(s->error, sizeof(s->error), "cannot read the target's objects and threads: "
			 "%s%s%s", ameba_strerror(rc), *s->prov->ops->error(s->prov) ? ": " : "",
			 s->prov->ops->error(s->prov));
		return rc;
	}
	world_keep(s);
	rc = choose_metric(s);
	if (rc < 0)
		return rc;
	s->primary_metric = rc;

	rc = strat_params(s, st, s->strat_given, &s->strat_params);
	if (rc)
		return rc;
	if (s->strat_b) {
		/* b's parameters are checked before anything is measured */
		struct agent_params probe = { 0 };

		rc = strat_params(s, s->strat_b, s->strat_b_given, &probe);
		agent_params_free(&probe);
		if (rc)
			return rc;
	}
	host_update(s);
	rc = st->desc.create(&s->host, &s->strat_params.view, &s->state, msg);
	if (rc) {
		snprintf(s->error, sizeof(s->error), "strategy %s (%s) refused to start: %s", st->name,
			 st->path, msg[0] ? msg : ameba_strerror(rc));
		return rc;
	}
	s->state_live = 1;
	if (s->strat_b) {
		double share = s->opts.refine_share > 0 && s->opts.refine_share < 1 ?
			       s->opts.refine_share : 0.5;

		if (deadline != INFINITY)
			handover = t0 + share * (double)s->opts.duration_ms / 1e3;
		else if (s->opts.refine_after_ms)
			handover = t0 + (double)s->opts.refine_after_ms / 1e3;
	}

	for (;;) {
		struct ameba_experiment exp;
		struct agent_exp_result res;
		struct ameba_experiment sent;
		struct ameba_counter *ext;
		struct ameba_counter_bins *ext_bins, *ext_except;
		uint32_t tot;
		uint32_t interval_ms;
		double tot_value;
		double t = now_s();

		if (s->opts.stop && *s->opts.stop) {
			stop_reason = AGENT_END_INTERRUPTED;
			break;
		}
		if (t >= deadline) {
			stop_reason = AGENT_END_DURATION;
			break;
		}
		if (s->strat_b && s->stage == 0 && t >= handover && (a_done || chain_ready(s))) {
			if (chain_switch(s)) {
				stop_reason = AGENT_END_ERROR;
				break;
			}
			st = s->strat_b;
		}
		if (s->nr_iterations > 0) {
			rc = s->prov->ops->refresh(s->prov, &s->world);
			if (rc == AMEBA_EEXITED) {
				stop_reason = AGENT_END_EXITED;
				break;
			}
			if (rc) {
				snprintf(s->error, sizeof(s->error), "the monitor failed: %s%s%s",
					 ameba_strerror(rc), *s->prov->ops->error(s->prov) ? ": " : "",
					 s->prov->ops->error(s->prov));
				stop_reason = AGENT_END_ERROR;
				break;
			}
			world_keep(s);
			host_update(s);
		}
		memset(&exp, 0, sizeof(exp));
		exp.struct_size = sizeof(exp);
		rc = strat_guarded(s, &exp, NULL);
		if (rc == AGENT_STRATEGY_CRASHED) {
			stop_reason = AGENT_END_ERROR;
			break;
		}
		if (rc == 1 && s->strat_b && s->stage == 0) {
			/* a is done: b refines what it found, from the next iteration */
			handover = t;
			a_done = 1;
			continue;
		}
		if (rc == 1) {
			stop_reason = AGENT_END_COMPLETE;
			break;
		}
		if (rc < 0) {
			snprintf(s->error, sizeof(s->error), "strategy %s: plan() failed: %s", st->name,
				 ameba_strerror(rc));
			stop_reason = AGENT_END_ERROR;
			break;
		}
		exp.struct_size = sizeof(exp);	/* whatever the plugin wrote there */
		if (counters_ours(s, &exp)) {
			snprintf(s->error, sizeof(s->error), "out of memory copying the %u counters of "
				 "strategy %s", exp.nr_counters, st->name);
			stop_reason = AGENT_END_ERROR;
			break;
		}
		interval_ms = exp.interval_ms ? exp.interval_ms : s->opts.interval_ms;
		/*
		 * Warm-up: the first intervals are short (5, 10, 20, 40, 80 ms) so
		 * that objects allocated as the program starts get counters of
		 * their own at once instead of after a whole --interval.
		 */
		if (!exp.interval_ms && s->nr_iterations < 8 && (5u << s->nr_iterations) < interval_ms)
			interval_ms = 5u << s->nr_iterations;
		if (deadline != INFINITY && t + interval_ms / 1e3 > deadline)
			interval_ms = (uint32_t)((deadline - t) * 1e3) + 1;
		tot = UINT32_MAX;
		sent = exp;
		ext = NULL;
		ext_bins = ext_except = NULL;
		if (s->coverage.searched_exact)
			tot = total_counter(&exp, s->primary_metric, &sent, &ext, &ext_bins,
					    &ext_except);
		agent_views_plan(s, &exp, &sent, interval_ms);
		memset(&res, 0, sizeof(res));
		rc = s->prov->ops->experiment(s->prov, &sent, interval_ms, s->opts.stop, &res);
		if (rc == AMEBA_ENOTSUP && ext) {
			/* a backend that counts only ranges (watch): no total from now on */
			s->coverage.searched_exact = 0;
			tot = UINT32_MAX;
			sent.sample_period = 0;	/* exp ran, with no stream of ours */
			memset(&res, 0, sizeof(res));
			rc = s->prov->ops->experiment(s->prov, &exp, interval_ms, s->opts.stop, &res);
		}
		free(ext);
		free(ext_bins);
		free(ext_except);
		tot_value = NAN;
		if (rc == 0) {
			/* the strategy sees its own counters only */
			if (tot != UINT32_MAX && tot < res.r.nr_counters && res.r.values) {
				tot_value = (double)res.r.values[tot];
				s->coverage.searched += (double)res.r.values[tot];
				s->coverage.nr_searched++;
			} else {
				s->coverage.searched_exact = 0;
			}
			if (res.r.nr_counters > exp.nr_counters)
				res.r.nr_counters = exp.nr_counters;
		}
		if (rc == AMEBA_EEXITED) {
			stop_reason = AGENT_END_EXITED;
			break;
		}
		if (rc) {
			snprintf(s->error, sizeof(s->error), "the monitor refused experiment %u of "
				 "strategy %s: %s%s%s", s->nr_iterations + 1, st->name,
				 ameba_strerror(rc), *s->prov->ops->error(s->prov) ? ": " : "",
				 s->prov->ops->error(s->prov));
			stop_reason = AGENT_END_ERROR;
			break;
		}
		if (exp.mark)
			note_mark(s, exp.mark, &res);
		agent_ci_note(&s->ci_tab, &exp, res.ci, res.r.values, &s->world);
		if (s->pl)
			s->pl->ci_tab = s->ci_tab;	/* the properties' ctx.ci */
		res.r.struct_size = sizeof(res.r);
		res.r.sample_size = sizeof(struct ameba_sample);
		agent_views_observe(s, &exp, &sent, &res, t - t0, tot_value);
		rc = strat_guarded(s, &exp, &res.r);
		s->nr_iterations++;
		s->measured_ns += res.r.elapsed_ns;
		if (rc == AGENT_STRATEGY_CRASHED) {
			stop_reason = AGENT_END_ERROR;
			break;
		}
		if (rc < 0) {
			snprintf(s->error, sizeof(s->error), "strategy %s: observe() failed: %s",
				 st->name, ameba_strerror(rc));
			stop_reason = AGENT_END_ERROR;
			break;
		}
		progress_draw(s, 0);
		if (res.r.target_exited) {
			stop_reason = AGENT_END_EXITED;
			break;
		}
		if (res.interrupted) {
			stop_reason = AGENT_END_INTERRUPTED;
			break;
		}
	}
	s->end = stop_reason;
	s->partial = stop_reason == AGENT_END_EXITED || stop_reason == AGENT_END_INTERRUPTED ||
		     stop_reason == AGENT_END_ERROR;
	if (stop_reason == AGENT_END_EXITED && !s->nr_iterations)
		tell_unmeasured(s, t0);
	if (s->opts.progress)
		progress_draw(s, 1);
	agent_progress_clear();
	finish(s);
out:
	clock_gettime(CLOCK_REALTIME, &s->ended);
	return 0;
}

void agent_search_free(struct agent_search *s)
{
	if (s->pl && s->pl->ci_tab == s->ci_tab)
		s->pl->ci_tab = NULL;
	agent_ci_free(s->ci_tab);
	s->ci_tab = NULL;
	if (s->state_live)
		s->strat->desc.destroy(s->state);
	s->state_live = 0;
	if (s->state_b_live)
		s->strat_b->desc.destroy(s->state_b);
	s->state_b_live = 0;
	agent_contexts_free(s->seeds, s->nr_seeds);
	agent_contexts_free(s->norm, s->nr_norm);
	s->seeds = NULL;
	s->nr_seeds = 0;
	agent_params_free(&s->strat_params);
	agent_params_free(&s->strat_b_params);
	agent_fields_close(s->fields);
	s->fields = NULL;
	agent_views_free(s->views);
	s->views = NULL;
	cJSON_Delete(s->views_json);
	s->views_json = NULL;
	agent_findings_free(&s->findings);
	for (uint32_t i = 0; i < s->nr_objects; i++) {
		free(s->objects[i].name);
		free(s->objects[i].site);
		free(s->objects[i].mark);
	}
	free(s->objects);
	for (uint32_t i = 0; i < s->nr_marks; i++)
		free(s->marks[i]);
	free(s->marks);
	free(s->threads);
	if (s->pl && s->pl->lives == s->lives) {
		s->pl->lives = NULL;
		s->pl->nr_lives = 0;
	}
	free(s->lives);
	s->lives = NULL;
	free(s->program);
	free(s->backend);
	s->objects = NULL;
	s->threads = NULL;
	s->program = s->backend = NULL;
	s->nr_objects = s->nr_threads = 0;
}
