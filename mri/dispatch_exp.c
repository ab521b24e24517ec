/*
 * dispatch_exp.c - the MRI dispatcher's experiment requests: start (the
 * counters' where-sets parsed and checked, the product form expanded),
 * read and stop. The protocol: docs/mri.md; the dispatcher: dispatch.c.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ameba/ameba.h"
#include "dispatch_int.h"

/* ---- ops: experiments ---- */

/* Parsed counters of a start request; arrays owned here. */
struct counters {
	uint32_t nr;
	struct mri_cond *c;
	struct mri_range *ranges;	/* all counters' ranges, back to back */
	uint32_t *threads;
	uint32_t *bins;			/* all counters' bin ids, back to back (grows) */
	uint32_t nr_ranges, nr_threads, nr_bins, cap_bins;
	/* the bin table's names, read once per request (bins named) */
	char **bin_names;
	uint32_t nr_bin_names;
};

static void counters_free(struct counters *cs)
{
	free(cs->c);
	free(cs->ranges);
	free(cs->threads);
	free(cs->bins);
	for (uint32_t i = 0; i < cs->nr_bin_names; i++)
		free(cs->bin_names[i]);
	free(cs->bin_names);
}

/* Reads the names of the monitor's bins (refreshing its table) once. */
static int bin_names_load(struct mri_req *r, struct counters *cs)
{
	struct mri_disp *d = r->d;
	uint32_t nr;
	char *name;

	if (cs->bin_names)
		return 0;
	nr = d->ops->nr_bins(d->ctx);
	cs->bin_names = calloc(nr + 1, sizeof(*cs->bin_names));
	name = malloc(MRI_NAME_MAX);
	if (!cs->bin_names || !name) {
		free(name);
		return mri_req_nomem(r);
	}
	for (uint32_t id = 0; id < nr; id++) {
		struct mri_bin b;

		cs->nr_bin_names = id + 1;
		if (d->ops->bin(d->ctx, id, &b, name) || !b.name)
			continue;
		cs->bin_names[id] = strdup(b.name);
		if (!cs->bin_names[id]) {
			free(name);
			return mri_req_nomem(r);
		}
	}
	free(name);
	return 0;
}

/*
 * The path an error about a counter names: "counters[i]", then ".field"
 * (field not NULL), "[k]" and "[sub]" (each not NO_IDX), into buf. Written
 * without printf: a start makes one for every counter, range and object
 * it lists (thousands, for every metric on a strategy's units).
 */
#define NO_IDX UINT32_MAX

static char *path_put(char *p, char *end, const char *s)
{
	while (*s && p < end)
		*p++ = *s++;
	return p;
}

static char *path_idx(char *p, char *end, uint32_t v)
{
	char t[24] = "[", *e = mri_put_u64(t + 1, v);

	*e++ = ']';
	*e = '\0';
	return path_put(p, end, t);
}

static const char *cpath(char *buf, size_t len, uint32_t i, const char *field, uint32_t k, uint32_t sub)
{
	char *p = buf, *end = buf + len - 1;

	p = path_idx(path_put(p, end, "counters"), end, i);
	if (field)
		p = path_put(path_put(p, end, "."), end, field);
	if (k != NO_IDX)
		p = path_idx(p, end, k);
	if (sub != NO_IDX)
		p = path_idx(p, end, sub);
	*p = '\0';
	return buf;
}

/* First pass: sizes, so that one allocation holds every range. */
static int count_counters(struct mri_req *r, const cJSON *jc, struct counters *cs)
{
	static const char *const fields[] = { "metric", "ranges", "objects", "bins", "threads", "except",
					      NULL };
	const cJSON *e;
	uint32_t i = 0;
	uint64_t ranges = 0, threads = 0, bins = 0;

	cJSON_ArrayForEach(e, jc) {
		char path[48];
		uint32_t n;
		const cJSON *x;
		char b[80];

		cpath(path, sizeof(path), i++, NULL, NO_IDX, NO_IDX);
		if (mri_json_type(e) != cJSON_Object)
			return mri_req_fail(r, AMEBA_EINVAL, "%s: %s is not an object such as "
				    "{\"metric\":\"mem_ref\",\"objects\":[17]}", path, mri_json_show(e, b, sizeof(b)));
		if (mri_req_fields(r, e, path, fields))
			return r->code;
		/* where-sets (ranges, objects, bins) share the range budget;
		 * fields[1..3] name them, fields[4] is threads */
		for (int k = 1; k <= 5; k++) {
			uint32_t max = k == 4 ? MRI_MAX_THREAD_IDS : MRI_MAX_RANGES;
			char p2[64];

			if (!(x = mri_json_get(e, fields[k])))
				continue;
			cpath(p2, sizeof(p2), i - 1, fields[k], NO_IDX, NO_IDX);
			if (mri_req_array(r, x, p2, max, &n))
				return r->code;
			if (k == 4)
				threads += n;
			else
				ranges += n;
			if (k == 3 || k == 5)
				bins += n;
		}
		if (ranges > MRI_MAX_RANGES)
			return mri_req_fail(r, AMEBA_ERANGE, "counters: more than %u ranges, objects and bins "
				    "in one experiment; measure fewer places at once", MRI_MAX_RANGES);
		if (threads > MRI_MAX_THREAD_IDS)
			return mri_req_fail(r, AMEBA_ERANGE, "counters: more than %u thread ids in one experiment",
				    MRI_MAX_THREAD_IDS);
	}
	cs->nr_ranges = (uint32_t)ranges;
	cs->nr_threads = (uint32_t)threads;
	cs->nr_bins = (uint32_t)bins;
	return 0;
}

static int bin_push(struct mri_req *r, struct counters *cs, uint32_t *bo, uint32_t id)
{
	if (*bo == cs->cap_bins) {
		uint32_t cap = cs->cap_bins ? 2 * cs->cap_bins : 64;
		uint32_t *v = realloc(cs->bins, cap * sizeof(*v));

		if (!v)
			return mri_req_nomem(r);
		cs->bins = v;
		cs->cap_bins = cap;
	}
	cs->bins[(*bo)++] = id;
	return 0;
}

/*
 * Counter i's list of bin names x (field "bins" or "except") into cs->bins
 * from *bo on, *nr of them: site bins by name, or when a later site with
 * the same first frame deepened the name ("xmalloc@u.c:12" became
 * "xmalloc@u.c:12 <- load@io.c:88" and "... <- save@io.c:90"), every bin it
 * became: what the name meant when the client listed it; "[stack]" and
 * "[tls]" as the kind bins.
 */
static int parse_bin_names(struct mri_req *r, const cJSON *x, uint32_t i, const char *field,
			   struct counters *cs, uint32_t *bo, uint32_t *nr)
{
	const cJSON *y;
	char path[96], b2[80];
	uint32_t k = 0;

	if (bin_names_load(r, cs))
		return r->code;
	cJSON_ArrayForEach(y, x) {
		const char *bname;
		size_t len;
		uint32_t nr_match = 0;

		cpath(path, sizeof(path), i, field, k++, NO_IDX);
		if (mri_req_str(r, y, path, MRI_NAME_MAX - 1, &bname))
			return r->code;
		len = strlen(bname);
		if (!strcmp(bname, "[stack]") || !strcmp(bname, "[tls]")) {
			if (bin_push(r, cs, bo, bname[1] == 's' ? MRI_BIN_STACK : MRI_BIN_TLS))
				return r->code;
			(*nr)++;
			continue;
		}
		for (int pass = 0; pass < 2 && !nr_match; pass++) {
			for (uint32_t id = 0; id < cs->nr_bin_names; id++) {
				const char *n = cs->bin_names[id];

				if (!n || (pass == 0 ? strcmp(n, bname) != 0 :
					   strncmp(n, bname, len) != 0 || strncmp(n + len, " <- ", 4) != 0))
					continue;
				if (bin_push(r, cs, bo, id))
					return r->code;
				(*nr)++;
				nr_match++;
			}
		}
		if (!nr_match)
			return mri_req_fail(r, AMEBA_ENOENT, "%s: no bin named %s (the target has %u; "
				    "list them with the bins op: a bin is named by its allocation "
				    "site, e.g. \"make_table@app.c:66\", or is \"[stack]\" or \"[tls]\")",
				    path, mri_json_show(y, b2, sizeof(b2)), cs->nr_bin_names);
	}
	if (k == 0) {
		snprintf(path, sizeof(path), "counters[%u].%s", i, field);
		if (field[0] == 'e')
			return mri_req_fail(r, AMEBA_EINVAL, "%s: an empty list excepts nothing; leave it "
				    "out", path);
		return mri_req_fail(r, AMEBA_EINVAL, "%s: an empty list counts nothing; leave it out "
			    "(with ranges and objects) to count the whole address space", path);
	}
	return 0;
}

static int parse_counter(struct mri_req *r, const cJSON *e, uint32_t i, const struct mri_backend_rec *b,
			 struct counters *cs, uint32_t *ro, uint32_t *to, uint32_t *bo)
{
	struct mri_disp *d = r->d;
	struct mri_cond *c = &cs->c[i];
	const cJSON *jm = mri_json_get(e, "metric"), *x, *y;
	const char *mname;
	char path[96], b2[80];
	uint32_t k, nr_listed = 0;
	int m, had_where = 0;

	cpath(path, sizeof(path), i, "metric", NO_IDX, NO_IDX);
	if (!jm)
		return mri_req_fail(r, AMEBA_EINVAL, "%s is missing (e.g. \"mem_ref\"; see `ameba list metrics`)",
			    path);
	if (mri_req_str(r, jm, path, 64, &mname))
		return r->code;
	m = ameba_metric_by_name(mname);
	if (m < 0)
		return mri_req_fail(r, AMEBA_EINVAL, "%s: unknown metric %s; see `ameba list metrics`", path,
			    mri_json_show(jm, b2, sizeof(b2)));
	if (!mri_backend_has(b, m)) {
		char list[512];
		size_t o = 0;

		list[0] = '\0';
		for (uint32_t j = 0; j < b->nr_metrics && o < sizeof(list); j++)
			o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", j ? ", " : "",
					      ameba_metric_info(b->metrics[j])->name);
		return mri_req_fail(r, AMEBA_ENOTSUP, "%s: backend %s does not provide %s (it provides: %s)",
			    path, b->name ? b->name : "?", mname, list);
	}
	c->metric = m;
	c->ranges = cs->ranges + *ro;
	c->threads = cs->threads + *to;

	k = 0;
	if ((x = mri_json_get(e, "ranges"))) {
		had_where = 1;
		cJSON_ArrayForEach(y, x) {
			struct mri_range *rg = &cs->ranges[*ro];
			char p[112];

			cpath(path, sizeof(path), i, "ranges", k, NO_IDX);
			if (mri_json_type(y) != cJSON_Array || !y->child || !y->child->next ||
			    y->child->next->next)
				return mri_req_fail(r, AMEBA_EINVAL, "%s: %s is not a pair [start, end] such as "
					    "[\"0x1000\", \"0x2000\"]", path, mri_json_show(y, b2, sizeof(b2)));
			cpath(p, sizeof(p), i, "ranges", k, 0);
			if (mri_req_addr(r, y->child, p, &rg->start))
				return r->code;
			cpath(p, sizeof(p), i, "ranges", k, 1);
			if (mri_req_addr(r, y->child->next, p, &rg->end))
				return r->code;
			if (rg->start >= rg->end)
				return mri_req_fail(r, AMEBA_EINVAL, "%s: start 0x%" PRIx64 " is not below end 0x%"
					    PRIx64 " (a range is [start, end))", path, rg->start, rg->end);
			(*ro)++;
			c->nr_ranges++;
			nr_listed++;
			k++;
		}
	}
	if ((x = mri_json_get(e, "objects"))) {
		uint32_t nr_obj = d->ops->nr_objects(d->ctx);

		had_where = 1;
		k = 0;
		cJSON_ArrayForEach(y, x) {
			struct mri_object o;
			uint64_t id;

			cpath(path, sizeof(path), i, "objects", k++, NO_IDX);
			if (mri_req_uint(r, y, path, 0, UINT32_MAX, &id))
				return r->code;
			if (id >= nr_obj || d->ops->object(d->ctx, (uint32_t)id, &o, NULL))
				return mri_req_fail(r, AMEBA_ENOENT, "%s: no object %" PRIu64 " (the target has "
					    "%u; list them with the objects op)", path, id, nr_obj);
			nr_listed++;
			if (o.start >= o.end)
				continue;	/* an empty object covers no address */
			cs->ranges[*ro].start = o.start;
			cs->ranges[*ro].end = o.end;
			(*ro)++;
			c->nr_ranges++;
		}
	}
	if ((x = mri_json_get(e, "bins"))) {
		/* an offset until every counter is parsed: cs->bins grows */
		c->bins = (const uint32_t *)(uintptr_t)*bo;
		if (parse_bin_names(r, x, i, "bins", cs, bo, &c->nr_bins))
			return r->code;
	}
	if ((x = mri_json_get(e, "except"))) {
		c->except = (const uint32_t *)(uintptr_t)*bo;
		if (parse_bin_names(r, x, i, "except", cs, bo, &c->nr_except))
			return r->code;
	}
	if (c->nr_except && !had_where) {
		snprintf(path, sizeof(path), "counters[%u].except", i);
		return mri_req_fail(r, AMEBA_EINVAL, "%s: takes blocks out of the counter's ranges and "
			    "objects, and this counter has none (it counts everything); give it ranges",
			    path);
	}
	/* The monitor reads "no ranges" as "everywhere": an empty where-set
	 * must not turn into the total. */
	if (had_where && c->nr_ranges == 0 && c->nr_bins == 0) {
		snprintf(path, sizeof(path), "counters[%u]", i);
		if (nr_listed)
			return mri_req_fail(r, AMEBA_EINVAL, "%s.objects: every object named is empty (size "
				    "0); such a counter would count nothing", path);
		return mri_req_fail(r, AMEBA_EINVAL, "%s: an empty \"ranges\"/\"objects\" list counts "
			    "nothing; leave both out to count the whole address space", path);
	}
	k = 0;
	if ((x = mri_json_get(e, "threads"))) {
		cJSON_ArrayForEach(y, x) {
			uint64_t t;

			cpath(path, sizeof(path), i, "threads", k++, NO_IDX);
			if (mri_req_uint(r, y, path, 0, UINT32_MAX - 1, &t))
				return r->code;
			cs->threads[(*to)++] = (uint32_t)t;
			c->nr_threads++;
		}
		if (k == 0) {
			snprintf(path, sizeof(path), "counters[%u].threads", i);
			return mri_req_fail(r, AMEBA_EINVAL, "%s: an empty list counts no thread; leave it out "
				    "to count every thread", path);
		}
	}
	return 0;
}

/* A mark's label (jl, from field `field`): *label, or the request fails. */
int mri_disp_mark_label(struct mri_req *r, const cJSON *jl, const char *field, const char **label)
{
	char b[80];

	if (mri_req_str(r, jl, field, MRI_MARK_LABEL_MAX, label))
		return r->code;
	if (!(*label)[0] || (*label)[0] == '.')
		return mri_req_fail(r, AMEBA_EINVAL, "%s: %s must not be empty or start with '.'",
				    field, mri_json_show(jl, b, sizeof(b)));
	for (const char *p = *label; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '.' || *p == '_' || *p == '-'))
			return mri_req_fail(r, AMEBA_EINVAL, "%s: %s has the character '%c'; use "
					    "letters, digits, '.', '_' and '-' (it names a file)",
					    field, mri_json_show(jl, b, sizeof(b)), *p);
	return 0;
}

/* The "mark" member of a reply (mark, or start with a mark). */
int mri_disp_mark_result(struct mri_req *r, cJSON *to, const char *label, int err,
			 const char *path, const char *why)
{
	if (mri_json_add(to, "label", cJSON_CreateString(label)) ||
	    mri_json_add(to, "written", cJSON_CreateBool(!err)) ||
	    (!err && mri_json_add(to, "path", cJSON_CreateString(path))) ||
	    (err && mri_json_add(to, "why", cJSON_CreateString(why))))
		return mri_req_nomem(r);
	return 0;
}

/*
 * The product form of "counters": {"metrics":[M...],"where":[W...]} stands
 * for every metric on every where-set, metric-major: counter m * |where| + w
 * counts metrics[m] on where[w] (each W an object of the fields a counter
 * has besides "metric"). What a strategy asks for all metrics on its units
 * in a message |metrics| times shorter. Expanded here into the list form,
 * whose counters refer to the where-sets' fields instead of copying them;
 * NULL with r failed.
 */
static cJSON *counters_expand(struct mri_req *r, const cJSON *jc)
{
	static const char *const fields[] = { "metrics", "where", NULL };
	const cJSON *jm = mri_json_get(jc, "metrics"), *jw = mri_json_get(jc, "where"), *m, *w;
	uint32_t nm, nw, k = 0;
	cJSON *out;
	char b[80];

	if (mri_req_fields(r, jc, "counters", fields))
		return NULL;
	if (!jm || !jw) {
		mri_req_fail(r, AMEBA_EINVAL, "counters: an object is the product form and needs "
			     "\"metrics\" and \"where\", e.g. {\"metrics\":[\"mem_ref\",\"l1d_miss\"],"
			     "\"where\":[{\"objects\":[17]},{}]}; or give a list of counters");
		return NULL;
	}
	if (mri_req_array(r, jm, "counters.metrics", MRI_MAX_COUNTERS, &nm) ||
	    mri_req_array(r, jw, "counters.where", MRI_MAX_COUNTERS, &nw))
		return NULL;
	if ((uint64_t)nm * nw > MRI_MAX_COUNTERS) {
		mri_req_fail(r, AMEBA_ERANGE, "counters: %u metrics on %u places make %" PRIu64
			     " counters, more than %u in one experiment", nm, nw, (uint64_t)nm * nw,
			     MRI_MAX_COUNTERS);
		return NULL;
	}
	cJSON_ArrayForEach(w, jw) {
		if (mri_json_type(w) != cJSON_Object) {
			mri_req_fail(r, AMEBA_EINVAL, "counters.where[%u]: %s is not an object such as "
				     "{\"objects\":[17]} ({} counts the whole address space)", k,
				     mri_json_show(w, b, sizeof(b)));
			return NULL;
		}
		if (mri_json_get(w, "metric")) {
			mri_req_fail(r, AMEBA_EINVAL, "counters.where[%u]: a place of the product form "
				     "has no \"metric\" (the metrics are listed in \"metrics\")", k);
			return NULL;
		}
		k++;
	}
	if (!(out = cJSON_CreateArray())) {
		mri_req_nomem(r);
		return NULL;
	}
	cJSON_ArrayForEach(m, jm) {
		cJSON_ArrayForEach(w, jw) {
			cJSON *c = cJSON_CreateObject();
			const cJSON *f;

			if (!c || !cJSON_AddItemToArray(out, c) ||
			    !cJSON_AddItemReferenceToObject(c, "metric", (cJSON *)m))
				goto nomem;
			for (f = w->child; f; f = f->next)
				if (!f->string || !cJSON_AddItemReferenceToObject(c, f->string, (cJSON *)f))
					goto nomem;
		}
	}
	return out;
nomem:
	cJSON_Delete(out);
	mri_req_nomem(r);
	return NULL;
}

static int start_counters(struct mri_req *r, const cJSON *jc);

int mri_disp_op_start(struct mri_req *r)
{
	const cJSON *jc = mri_json_get(r->msg, "counters");
	cJSON *expanded = NULL;
	int err;

	if (mri_json_type(jc) == cJSON_Object && !(jc = expanded = counters_expand(r, jc)))
		return r->code;
	err = start_counters(r, jc);
	cJSON_Delete(expanded);
	return err;
}

/* mri_disp_op_start with the counters in the list form. */
static int start_counters(struct mri_req *r, const cJSON *jc)
{
	static const char *const fields[] = { "v", "id", "op", "counters", "interval_ms", "mark",
					      "replace", NULL };
	struct mri_disp *d = r->d;
	const cJSON *e;
	const cJSON *jl = mri_json_get(r->msg, "mark"), *jr = mri_json_get(r->msg, "replace");
	cJSON *replaced = NULL;
	uint64_t *nprev, *ncur, old_id = 0;
	struct counters cs = { 0 };
	struct mri_backend_rec b;
	uint64_t interval, gen = 0;
	uint32_t i = 0, ro = 0, to = 0, bo = 0;
	const char *label = NULL;
	char path[4200] = "", why[4400] = "";
	int err, mark_err = 0;

	if (mri_req_fields(r, r->msg, "start", fields) ||
	    mri_req_opt_uint(r, r->msg, "interval_ms", 0, MAX_INTERVAL_MS, 0, &interval))
		return r->code;
	if (jl && mri_disp_mark_label(r, jl, "mark", &label))
		return r->code;
	if (interval && interval < MIN_INTERVAL_MS)
		return mri_req_fail(r, AMEBA_ERANGE, "interval_ms: %" PRIu64 " is below the minimum of %d ms "
			    "(0 turns interval events off)", interval, MIN_INTERVAL_MS);
	if (!d->attached)
		return mri_req_fail(r, AMEBA_EINVAL, "not attached: send attach before start");
	if (jr) {
		if (mri_req_uint(r, jr, "replace", 0, MAX_INTEGER, &old_id))
			return r->code;
		if (jl)
			return mri_req_fail(r, AMEBA_EINVAL, "replace: a marked experiment starts "
				    "from zero at its mark; stop the running one and start without replace");
		if (!d->exp_on)
			return mri_req_fail(r, AMEBA_ENOENT, "replace: no experiment is running; leave "
				    "replace out");
		if (old_id != d->exp_id)
			return mri_req_fail(r, AMEBA_ENOENT, "replace: %" PRIu64 " is not running "
				    "(experiment %" PRIu64 " is)", old_id, d->exp_id);
		if (!d->ops->cond_swap)
			return mri_req_fail(r, AMEBA_ENOTSUP, "replace: this monitor cannot replace "
				    "an experiment; stop it, then start");
	} else if (d->exp_on) {
		return mri_req_fail(r, AMEBA_EBUSY, "experiment %" PRIu64 " is running; stop it first "
			    "or start with \"replace\": %" PRIu64 " (one experiment at a time)",
			    d->exp_id, d->exp_id);
	}
	if (!jc)
		return mri_req_fail(r, AMEBA_EINVAL, "counters is missing: a list such as "
			    "[{\"metric\":\"mem_ref\"}], or the product form {\"metrics\":[...],"
			    "\"where\":[...]}");
	if (mri_req_array(r, jc, "counters", MRI_MAX_COUNTERS, &cs.nr))
		return r->code;
	if (cs.nr == 0)
		return mri_req_fail(r, AMEBA_EINVAL, "counters: the list is empty; give at least one counter");
	if (count_counters(r, jc, &cs))
		return r->code;
	cs.c = calloc(cs.nr, sizeof(*cs.c));
	cs.ranges = calloc(cs.nr_ranges + 1, sizeof(*cs.ranges));
	cs.threads = calloc(cs.nr_threads + 1, sizeof(*cs.threads));
	if (!cs.c || !cs.ranges || !cs.threads) {
		counters_free(&cs);
		return mri_req_nomem(r);
	}
	mri_disp_backend_rec(d, &b);
	cJSON_ArrayForEach(e, jc) {
		if (parse_counter(r, e, i++, &b, &cs, &ro, &to, &bo)) {
			counters_free(&cs);
			return r->code;
		}
	}
	for (uint32_t j = 0; j < cs.nr; j++) {
		cs.c[j].bins = cs.c[j].nr_bins ? cs.bins + (uintptr_t)cs.c[j].bins : NULL;
		cs.c[j].except = cs.c[j].nr_except ? cs.bins + (uintptr_t)cs.c[j].except : NULL;
	}
	nprev = calloc(cs.nr, sizeof(*nprev));
	ncur = calloc(cs.nr, sizeof(*ncur));
	if (!nprev || !ncur) {
		free(nprev);
		free(ncur);
		counters_free(&cs);
		return mri_req_nomem(r);
	}
	if (jr) {
		/* the old experiment's last reading, taken as the new one starts */
		replaced = mri_disp_read_swap(d, 2, cs.c, cs.nr, &gen, &err);
		counters_free(&cs);
		if (!replaced) {
			free(nprev);
			free(ncur);
			return mri_req_fail(r, err, "the monitor refused the counters (experiment %"
				    PRIu64 " runs on): %s", old_id, ameba_strerror(err));
		}
		mri_disp_forget_experiment(d);
		d->exp_prev = nprev;
		d->exp_cur = ncur;
		goto armed;
	}
	d->exp_prev = nprev;
	d->exp_cur = ncur;
	if (label && d->ops->cond_arm_mark) {
		err = d->ops->cond_arm_mark(d->ctx, cs.c, cs.nr, &gen, label, path, sizeof(path), why,
					    sizeof(why), &mark_err);
	} else {
		err = d->ops->cond_arm(d->ctx, cs.c, cs.nr, &gen);
		if (!err && label && d->ops->mark)
			mark_err = d->ops->mark(d->ctx, label, path, sizeof(path), why, sizeof(why));
		else if (!err && label) {
			mark_err = AMEBA_ENOENT;
			snprintf(why, sizeof(why), "this monitor writes no oracle marks");
		}
	}
	counters_free(&cs);
	if (err) {
		mri_disp_forget_experiment(d);
		return mri_req_fail(r, err, "the monitor refused the counters: %s", ameba_strerror(err));
	}
armed:
	d->exp_on = 1;
	d->exp_id = gen;
	d->exp_nr = i;
	d->exp_seq = 0;
	d->exp_prev_ns = d->ops->now_ns(d->ctx);
	d->interval_ms = (uint32_t)interval;
	d->next_tick_ns = interval ? d->exp_prev_ns + interval * 1000000ull : UINT64_MAX;
	if (mri_json_add(r->result, "experiment", mri_json_u64(gen)) ||
	    mri_json_add(r->result, "nr_counters", mri_json_u64(d->exp_nr)) ||
	    mri_json_add(r->result, "t_ns", mri_json_u64(d->exp_prev_ns)) ||
	    (replaced && mri_json_add(r->result, "replaced", replaced)))
		return mri_req_nomem(r);
	if (label) {
		/* the experiment runs whatever became of the mark: a mark is
		 * evidence, and its failure is in the reply, not an error */
		cJSON *m = cJSON_CreateObject();

		if (mri_json_add(r->result, "mark", m) ||
		    mri_disp_mark_result(r, m, label, mark_err, path, why[0] ? why : ameba_strerror(mark_err)))
			return mri_req_nomem(r);
	}
	return 0;
}

/* The experiment field of read / stop must name the running experiment. */
static int want_experiment(struct mri_req *r)
{
	struct mri_disp *d = r->d;
	const cJSON *je = mri_json_get(r->msg, "experiment");
	uint64_t id;

	if (!je)
		return mri_req_fail(r, AMEBA_EINVAL, "experiment is missing: the id that start returned");
	if (mri_req_uint(r, je, "experiment", 0, MAX_INTEGER, &id))
		return r->code;
	if (!d->exp_on)
		return mri_req_fail(r, AMEBA_ENOENT, "experiment: no experiment is running; send start first");
	if (id != d->exp_id)
		return mri_req_fail(r, AMEBA_ENOENT, "experiment: %" PRIu64 " is not running (experiment %"
			    PRIu64 " is)", id, d->exp_id);
	return 0;
}

int mri_disp_op_read(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", "experiment", "threads", "sparse", NULL };
	struct mri_disp *d = r->d;
	int per_thread, sparse, err;
	cJSON *o;

	if (mri_req_fields(r, r->msg, "read", fields) || mri_req_opt_bool(r, r->msg, "threads", 0, &per_thread) ||
	    mri_req_opt_bool(r, r->msg, "sparse", 0, &sparse) || want_experiment(r))
		return r->code;
	/* rows are written only for threads that counted something, sparse
	 * when asked; add_thread_row stops them at the reply budget */
	o = mri_disp_read_now(d, per_thread ? 1 + sparse : 0, &err);
	if (!o && err == AMEBA_ERANGE)
		return mri_req_fail(r, err, "threads: the rows of %u counters for the threads that "
			    "counted do not fit in one reply (%u bytes)%s; read totals (\"threads\":false) "
			    "or use fewer counters", d->exp_nr, MRI_MSG_MAX,
			    sparse ? "" : "; \"sparse\":true lists non-zero values only");
	if (!o)
		return mri_req_fail(r, err, "cannot read experiment %" PRIu64 ": %s", d->exp_id,
			    ameba_strerror(err));
	cJSON_Delete(r->result);
	r->result = o;
	return 0;
}

int mri_disp_op_stop(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", "experiment", NULL };
	struct mri_disp *d = r->d;
	int err;
	cJSON *o;

	if (mri_req_fields(r, r->msg, "stop", fields) || want_experiment(r))
		return r->code;
	o = mri_disp_read_now(d, 0, &err);
	d->ops->cond_arm(d->ctx, NULL, 0, NULL);
	mri_disp_forget_experiment(d);
	if (!o)
		return mri_req_fail(r, err, "experiment stopped, but its last reading failed: %s",
			    ameba_strerror(err));
	cJSON_Delete(r->result);
	r->result = o;
	return 0;
}
