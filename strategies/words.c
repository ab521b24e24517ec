/*
 * words.c - the `words` strategy: which thread touches which words of one
 * object or cache line, counted exactly (the watch backend's hardware
 * breakpoints; any backend that counts small ranges works).
 *
 * Notes:
 *  - The target: object=NAME (an object of the host's table; a library
 *    global "name (libfoo.so)" also matches its bare name), or addr=0x...
 *    (the cache line holding that address). line=K picks the K-th cache
 *    line of the object (default 0), and bytes= how many bytes from there
 *    (default: one cache line, or less when the object is smaller). An
 *    object that does not exist (yet: a heap block to come) is waited for
 *    during 50 empty intervals, then the search ends with ENOENT.
 *  - The bytes are cut into words of `word` bytes (default 8, aligned) and
 *    measured in turns of `slots` words (the breakpoints a thread has, 4
 *    on x86): one counter per word, per thread. Every word is measured in
 *    `rounds` turns; a word's figures are the sums over its turns. With a
 *    single turn (object of at most `slots` words) and rounds=0, the same
 *    words are measured until the target exits or --duration ends, and the
 *    watch backend keeps its breakpoints armed across intervals, so the
 *    counts are exact over the whole window.
 *  - Contexts: one LINE context per cache line measured, with per-thread
 *    totals of the metric and, in `extra`, one line per word:
 *        word +8 (b) T1=0 T2=1000000
 *    (offset in the object, the field there when the host can name it -
 *    a global of the executable with DWARF, host->field_name - then the
 *    count of each thread). Properties
 *    read which threads wrote which words from there (disjoint words on
 *    one line: false sharing).
 *  - The counts are a thread's accesses while its breakpoints were armed;
 *    threads created during an interval are counted from the next one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ameba/plugin.h"
#include "strategy_util.h"

#define LINE_BYTES 64
#define MAX_WORDS 512

static const struct ameba_param words_params[] = {
	{ "object", AMEBA_PARAM_STRING, "", "object to measure (its name in the report)" },
	{ "addr", AMEBA_PARAM_STRING, "", "or: an address (0x...): the cache line holding it" },
	{ "line", AMEBA_PARAM_INT, "0", "which cache line of the object (0 = the first)" },
	{ "bytes", AMEBA_PARAM_INT, "64", "bytes to measure from there (max 4096)" },
	{ "word", AMEBA_PARAM_INT, "8", "word size in bytes: 1, 2, 4 or 8" },
	{ "slots", AMEBA_PARAM_INT, "4", "words measured at once (the backend's breakpoints)" },
	{ "rounds", AMEBA_PARAM_INT, "0", "turns per word (0: measure until the target exits)" },
	{ "metric", AMEBA_PARAM_METRIC, "writes", "writes, or mem_ref (reads and writes)" },
};

struct words {
	const struct ameba_host *host;
	char *object;
	uintptr_t addr;
	int line, metric;
	uint32_t bytes, word, slots, rounds;
	/* the measured span */
	struct ameba_object obj;	/* own copy */
	char *obj_name;
	uintptr_t start, end;
	uint32_t nr_words;
	int found;
	/* turns */
	uint32_t next_word, turns_done, nr_turn_words;
	struct ameba_counter counters[64];
	uintptr_t ranges[128];
	char **fields;			/* [nr_words]: DWARF field name or NULL */
	/* results: [word][thread] */
	uint64_t *counts;
	uint32_t nr_threads_cap;
	uint64_t window_ns;
	/* contexts */
	struct ameba_context *ctxs;
	uint32_t nr_ctxs;
	int told_empty;			/* the "counted nothing" warning was given */
	double *pt;
	uint32_t *ids;
	char **extra;
};

static int param_u32(const struct ameba_params *ps, const char *name, uint32_t lo, uint32_t hi,
		     uint32_t *out, char *msg)
{
	const char *v = ameba_param_get(ps, name);
	char *end;
	long n;

	if (!v)
		return 0;
	n = strtol(v, &end, 0);
	if (*end || n < (long)lo || n > (long)hi) {
		snprintf(msg, 256, "%s=%s: want %u..%u", name, v, lo, hi);
		return AMEBA_EINVAL;
	}
	*out = (uint32_t)n;
	return 0;
}

static int words_create(const struct ameba_host *host, const struct ameba_params *ps,
			void **state, char *msg)
{
	struct words *st = calloc(1, sizeof(*st));
	const char *v;
	uint32_t line = 0;
	int rc;

	if (!st)
		return AMEBA_ENOMEM;
	st->host = host;
	st->bytes = LINE_BYTES;
	st->word = 8;
	st->slots = 4;
	st->metric = AMEBA_M_WRITES;
	if ((rc = param_u32(ps, "bytes", 1, 4096, &st->bytes, msg)) ||
	    (rc = param_u32(ps, "word", 1, 8, &st->word, msg)) ||
	    (rc = param_u32(ps, "slots", 1, 64, &st->slots, msg)) ||
	    (rc = param_u32(ps, "rounds", 0, 1000000, &st->rounds, msg)) ||
	    (rc = param_u32(ps, "line", 0, 1u << 30, &line, msg)))
		goto fail;
	st->line = (int)line;
	if (st->word & (st->word - 1)) {
		snprintf(msg, 256, "word=%u: want 1, 2, 4 or 8", st->word);
		rc = AMEBA_EINVAL;
		goto fail;
	}
	v = ameba_param_get(ps, "metric");
	if (v && *v) {
		st->metric = ameba_metric_by_name(v);
		if (st->metric < 0) {
			snprintf(msg, 256, "metric=%s: no such metric", v);
			rc = AMEBA_EINVAL;
			goto fail;
		}
	}
	v = ameba_param_get(ps, "object");
	if (v && *v)
		st->object = strdup(v);
	v = ameba_param_get(ps, "addr");
	if (v && *v) {
		char *end;

		st->addr = (uintptr_t)strtoull(v, &end, 0);
		if (*end || !st->addr) {
			snprintf(msg, 256, "addr=%s: want an address such as 0x601040", v);
			rc = AMEBA_EINVAL;
			goto fail;
		}
	}
	if (!st->object && !st->addr) {
		snprintf(msg, 256, "which object? give object=NAME (see the objects of an "
			 "`ameba attach` report) or addr=0x...");
		rc = AMEBA_EINVAL;
		goto fail;
	}
	*state = st;
	return 0;
fail:
	free(st->object);
	free(st);
	return rc;
}

static int name_matches(const char *name, const char *want)
{
	size_t n = strlen(want);

	if (!name)
		return 0;
	return !strcmp(name, want) || (!strncmp(name, want, n) && !strncmp(name + n, " (", 2));
}

/*
 * Names the measured words after the fields of the object's type, when the
 * host can tell (a global of the target's executable with DWARF: the
 * host's field_name, plugin.h).
 */
static void words_fields(struct words *st)
{
	const struct ameba_host *h = st->host;

	if (!AMEBA_HOST_HAS(h, field_name) || !h->field_name || st->obj.kind != AMEBA_OBJ_GLOBAL)
		return;
	st->fields = calloc(st->nr_words, sizeof(*st->fields));
	if (!st->fields)
		return;
	for (uint32_t w = 0; w < st->nr_words; w++) {
		char buf[256];
		uint64_t o = st->start + (uint64_t)w * st->word - st->obj.start;

		if (!h->field_name(h, &st->obj, o, buf, sizeof(buf)) && buf[0])
			st->fields[w] = strdup(buf);
	}
}

/* Finds the span to measure in the host's objects. 0, or 1 when not (yet) there. */
static int words_locate(struct words *st)
{
	const struct ameba_host *h = st->host;
	const struct ameba_object *o = NULL;
	uintptr_t s, e;

	for (uint32_t i = 0; i < h->nr_objects && !o; i++) {
		const struct ameba_object *c = ameba_host_object(h, i);

		if (st->object ? name_matches(c->name, st->object) :
		    (st->addr >= c->start && st->addr < c->end))
			o = c;
	}
	if (!o && st->object)
		return 1;
	if (st->object) {
		s = o->start + (uintptr_t)st->line * LINE_BYTES;
		if (st->line)
			s &= ~(uintptr_t)(LINE_BYTES - 1);
		e = s + st->bytes;
		if (e > o->end)
			e = o->end;
		if (s >= o->end)
			return 1;
	} else {
		s = st->addr & ~(uintptr_t)(LINE_BYTES - 1);
		e = s + st->bytes;
	}
	s &= ~(uintptr_t)(st->word - 1);
	st->start = s;
	st->end = e;
	st->nr_words = (uint32_t)((e - s + st->word - 1) / st->word);
	if (st->nr_words > MAX_WORDS)
		st->nr_words = MAX_WORDS;
	if (o) {
		st->obj = *o;
		st->obj_name = strdup(o->name ? o->name : "?");
		st->obj.name = st->obj_name;
		st->obj.site = NULL;
	} else {
		char nm[64];

		snprintf(nm, sizeof(nm), "[line 0x%lx]", (unsigned long)s);
		st->obj_name = strdup(nm);
		st->obj = (struct ameba_object){ .id = s, .kind = AMEBA_OBJ_OTHER,
						 .name = st->obj_name, .start = s, .end = e,
						 .sz_bytes = e - s, .nr_blocks = 1, .live = 1 };
	}
	st->counts = calloc(st->nr_words, sizeof(*st->counts));
	st->found = st->counts != NULL;
	if (st->found)
		words_fields(st);
	return st->found ? 0 : AMEBA_ENOMEM;
}

static int threads_grow(struct words *st, uint32_t nr)
{
	uint64_t *c;

	if (nr <= st->nr_threads_cap)
		return 0;
	c = calloc((size_t)st->nr_words * nr, sizeof(*c));
	if (!c)
		return AMEBA_ENOMEM;
	for (uint32_t w = 0; w < st->nr_words; w++)
		for (uint32_t t = 0; t < st->nr_threads_cap; t++)
			c[(size_t)w * nr + t] = st->counts[(size_t)w * st->nr_threads_cap + t];
	free(st->counts);
	st->counts = c;
	st->nr_threads_cap = nr;
	return 0;
}

static int words_plan(void *state, struct ameba_experiment *exp)
{
	struct words *st = state;
	uint32_t n;
	int rc;

	if (!st->found) {
		rc = words_locate(st);
		if (rc < 0)
			return rc;
		if (rc) {
			/* not there yet (a heap block to come): watch nothing for a while */
			st->host->log(st->host, "words: %s not found yet",
				      st->object ? st->object : "address");
			/* "plan() failed: no such object" ends the search, named */
			if (st->turns_done++ >= 50)
				return AMEBA_ENOENT;
			ameba_experiment_reset(exp);
			return 0;
		}
		st->turns_done = 0;
		st->host->log(st->host, "watching %s [0x%lx, 0x%lx): %u words of %u bytes, %u at "
			      "a time", st->obj_name, (unsigned long)st->start,
			      (unsigned long)st->end, st->nr_words, st->word, st->slots);
	}
	if (st->rounds &&
	    st->turns_done >= st->rounds * ((st->nr_words + st->slots - 1) / st->slots))
		return 1;
	n = st->nr_words - st->next_word;
	if (n > st->slots)
		n = st->slots;
	for (uint32_t k = 0; k < n; k++) {
		uintptr_t a = st->start + (uintptr_t)(st->next_word + k) * st->word;
		uintptr_t b = a + st->word < st->end ? a + st->word : st->end;

		st->ranges[2 * k] = a;
		st->ranges[2 * k + 1] = b;
		st->counters[k] = (struct ameba_counter){ .metric = st->metric, .nr_ranges = 1,
							  .ranges = &st->ranges[2 * k],
							  .per_thread = 1,
							  .tag = st->next_word + k };
	}
	st->nr_turn_words = n;
	ameba_experiment_reset(exp);
	exp->nr_counters = n;
	exp->counters = st->counters;
	return 0;
}

static int words_observe(void *state, const struct ameba_experiment *exp,
			 const struct ameba_results *res)
{
	struct words *st = state;
	int rc = threads_grow(st, strategy_results_width(res));

	if (rc)
		return rc;
	for (uint32_t k = 0; k < res->nr_counters && k < exp->nr_counters; k++) {
		uint32_t w = (uint32_t)exp->counters[k].tag;

		if (w >= st->nr_words || !res->per_thread || !res->per_thread[k])
			continue;
		for (uint32_t e = 0; e < res->nr_threads; e++)
			st->counts[(size_t)w * st->nr_threads_cap + ameba_results_thread(res, e)] +=
				res->per_thread[k][e];
	}
	if (!st->window_ns)
		st->host->log(st->host, "first interval measured: %u words, %u threads, %.3f s",
			      st->nr_turn_words, res->nr_threads, (double)res->elapsed_ns / 1e9);
	st->window_ns += res->elapsed_ns;
	st->next_word += st->nr_turn_words;
	if (st->next_word >= st->nr_words)
		st->next_word = 0;
	st->turns_done++;
	return 0;
}

static void contexts_free(struct words *st)
{
	for (uint32_t i = 0; i < st->nr_ctxs; i++)
		free(st->extra[i]);
	free(st->ctxs);
	free(st->pt);
	free(st->ids);
	free(st->extra);
	st->ctxs = NULL;
	st->pt = NULL;
	st->ids = NULL;
	st->extra = NULL;
	st->nr_ctxs = 0;
}

/* Says why the report has no finding on the span: nothing was counted. */
static void words_tell_empty(struct words *st, uint32_t nt)
{
	const struct ameba_host *h = st->host;
	char what[160];

	st->told_empty = 1;
	if (!AMEBA_HOST_HAS(h, warn) || !h->warn)
		return;
	snprintf(what, sizeof(what), "%s [0x%lx, 0x%lx) (%lu bytes, %u words)", st->obj_name,
		 (unsigned long)st->start, (unsigned long)st->end,
		 (unsigned long)(st->end - st->start), st->nr_words);
	h->warn(h, "no %s of %s counted in %.2f s over %u thread%s: no thread %s these bytes "
		"while they were watched (before the attach, after the target's work, or only "
		"in threads that started during the last interval), or the backend could not "
		"watch them (see any warning above); try another line= or object=, or a longer "
		"--duration", st->metric == AMEBA_M_WRITES ? "write" : "access", what,
		(double)st->window_ns / 1e9, nt, nt == 1 ? "" : "s",
		st->metric == AMEBA_M_WRITES ? "wrote" : "touched");
}

static int words_contexts(void *state, const struct ameba_context **out, uint32_t *nr)
{
	struct words *st = state;
	uint32_t nt = st->nr_threads_cap, nl;
	uintptr_t first;

	contexts_free(st);
	*out = NULL;
	*nr = 0;
	if (!st->found || !nt) {
		if (st->found && st->window_ns && !st->told_empty)
			words_tell_empty(st, 0);
		return 0;
	}
	first = st->start & ~(uintptr_t)(LINE_BYTES - 1);
	nl = (uint32_t)((st->end - first + LINE_BYTES - 1) / LINE_BYTES);
	st->ctxs = strategy_ctxs_alloc(nl);
	st->pt = calloc((size_t)nl * nt, sizeof(*st->pt));
	st->ids = calloc(nt, sizeof(*st->ids));
	st->extra = calloc(nl, sizeof(*st->extra));
	if (!st->ctxs || !st->pt || !st->ids || !st->extra)
		return AMEBA_ENOMEM;
	for (uint32_t t = 0; t < nt; t++)
		st->ids[t] = t;
	for (uint32_t l = 0; l < nl; l++) {
		struct ameba_context *c = &st->ctxs[l];
		struct ameba_context_data *d = strategy_ctx_data(c);
		uintptr_t ls = first + (uintptr_t)l * LINE_BYTES;
		size_t cap = 64 + (size_t)st->nr_words * (232 + 24 * nt), used = 0;
		char *x = malloc(cap);
		double *pt = st->pt + (size_t)l * nt;

		if (!x)
			return AMEBA_ENOMEM;
		x[0] = 0;
		st->extra[l] = x;
		st->nr_ctxs = l + 1;
		for (uint32_t w = 0; w < st->nr_words; w++) {
			uintptr_t a = st->start + (uintptr_t)w * st->word;

			if (a < ls || a >= ls + LINE_BYTES)
				continue;
			used += (size_t)snprintf(x + used, cap - used, "word +%lu",
						 (unsigned long)(a - st->obj.start));
			if (st->fields && st->fields[w])
				used += (size_t)snprintf(x + used, cap - used, " (%.200s)",
							 st->fields[w]);
			for (uint32_t t = 0; t < nt; t++) {
				uint64_t v = st->counts[(size_t)w * nt + t];

				used += (size_t)snprintf(x + used, cap - used, " T%u=%llu", t,
							 (unsigned long long)v);
				pt[t] += (double)v;
				d->values[st->metric] += (double)v;
			}
			used += (size_t)snprintf(x + used, cap - used, "\n");
		}
		c->kind = AMEBA_CTX_LINE;
		c->object = &st->obj;
		c->line = ls;
		d->has[st->metric] = 1;
		d->program[st->metric] = d->values[st->metric];
		c->nr_threads = nt;
		c->thread_ids = st->ids;
		d->per_thread[st->metric] = pt;
		c->confidence = st->host->exact ? 1.0 : 0.5;
		c->window_ns = st->window_ns;
		c->extra = x;
	}
	/* shares within the measured span: the whole span is the "program" */
	{
		double total = 0;

		for (uint32_t l = 0; l < st->nr_ctxs; l++)
			total += st->ctxs[l].values[st->metric];
		for (uint32_t l = 0; l < st->nr_ctxs; l++)
			strategy_ctx_data(&st->ctxs[l])->program[st->metric] = total;
		if (total == 0 && st->window_ns && !st->told_empty)
			words_tell_empty(st, nt);
	}
	*out = st->ctxs;
	*nr = st->nr_ctxs;
	return 0;
}

static void words_progress(void *state, char *buf, size_t len)
{
	struct words *st = state;

	if (!st->found)
		snprintf(buf, len, "waiting for %s", st->object ? st->object : "the address");
	else
		snprintf(buf, len, "%s: %u words, turn %u", st->obj_name, st->nr_words,
			 st->turns_done);
}

static void words_destroy(void *state)
{
	struct words *st = state;

	contexts_free(st);
	for (uint32_t w = 0; st->fields && w < st->nr_words; w++)
		free(st->fields[w]);
	free(st->fields);
	free(st->counts);
	free(st->object);
	free(st->obj_name);
	free(st);
}

static const struct ameba_strategy_desc words_desc = {
	.abi_version = AMEBA_PLUGIN_ABI_VERSION,
	.struct_size = sizeof(struct ameba_strategy_desc),
	.name = "words",
	.summary = "which thread touches which words of one object or cache line (watch backend)",
	.params = words_params,
	.nr_params = sizeof(words_params) / sizeof(words_params[0]),
	.create = words_create,
	.plan = words_plan,
	.observe = words_observe,
	.contexts = words_contexts,
	.progress = words_progress,
	.destroy = words_destroy,
};

__attribute__((visibility("default"))) const struct ameba_strategy_desc *ameba_strategy_entry(void)
{
	return &words_desc;
}
