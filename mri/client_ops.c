/*
 * client_ops.c - the MRI client's typed requests: discovery (process,
 * threads, objects, bins, regions, metrics, backend), attach, experiments
 * and samples, each a request through mri_cl_call() and its reply parsed into
 * mri.h's structs (client.c holds the session and its Notes).
 */
#include "client_int.h"

/* ---- discovery ---- */

static int do_process(struct mri_session *s, struct mri_process_info *out)
{
	cJSON *root;
	const cJSON *r;
	int err = mri_cl_call(s, mri_cl_request("process"), &root, &r);

	memset(out, 0, sizeof(*out));
	if (err)
		return err;
	mri_cl_slot_reset(s, SLOT_PROCESS);
	s->slots[SLOT_PROCESS].root = root;
	out->pid = (int32_t)mri_cl_num_u64(mri_json_get(r, "pid"));
	out->protocol = (uint32_t)mri_cl_num_u64(mri_json_get(r, "protocol"));
	out->nr_threads = (uint32_t)mri_cl_num_u64(mri_json_get(r, "nr_threads"));
	out->attached = mri_json_type(mri_json_get(r, "attached")) == cJSON_True;
	out->active = mri_json_type(mri_json_get(r, "active")) == cJSON_True;
	out->program = mri_cl_str_of(mri_json_get(r, "program"));
	out->runtime_version = mri_cl_str_of(mri_json_get(r, "runtime_version"));
	out->backend = mri_cl_str_of(mri_json_get(r, "backend"));
	return 0;
}

int mri_process(struct mri_session *s, struct mri_process_info *out)
{
	return GUARDED(s, do_process(s, out));
}

static int add_uint(cJSON *req, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return mri_json_add(req, key, cJSON_CreateRaw(buf));
}

static int do_threads(struct mri_session *s, uint32_t offset, struct mri_thread_info *out, uint32_t max,
		      uint32_t *nr_total)
{
	cJSON *req, *root;
	const cJSON *r, *e;
	uint32_t n = 0;
	int err;

	if (max == 0)
		return 0;
	if (max > MAX_PAGE)
		max = MAX_PAGE;
	req = mri_cl_request("threads");
	if (add_uint(req, "offset", offset) || add_uint(req, "limit", max))
		req = mri_cl_drop(req);
	err = mri_cl_call(s, req, &root, &r);
	if (err)
		return err;
	cJSON_ArrayForEach(e, mri_json_get(r, "threads")) {
		if (n == max)
			break;
		out[n].id = (uint32_t)mri_cl_num_u64(mri_json_get(e, "id"));
		out[n].tid = (int32_t)mri_cl_num_u64(mri_json_get(e, "tid"));
		out[n].exited = mri_json_type(mri_json_get(e, "exited")) == cJSON_True;
		n++;
	}
	if (nr_total)
		*nr_total = (uint32_t)mri_cl_num_u64(mri_json_get(r, "nr_total"));
	cJSON_Delete(root);
	return (int)n;
}

int mri_threads(struct mri_session *s, uint32_t offset, struct mri_thread_info *out, uint32_t max,
		uint32_t *nr_total)
{
	return GUARDED(s, do_threads(s, offset, out, max, nr_total));
}

static int kind_of(const char *name)
{
	for (int k = 0; k < MRI_OBJ_NR_KINDS; k++)
		if (name && !strcmp(name, mri_obj_kind_name(k)))
			return k;
	return MRI_OBJ_OTHER;
}

static int do_objects(struct mri_session *s, const struct mri_object_query *q, uint32_t *cursor,
		      struct mri_object *out, uint32_t max)
{
	cJSON *req, *root;
	const cJSON *r, *e, *next;
	uint32_t n = 0;
	int err;

	if (*cursor == MRI_END || max == 0)
		return 0;
	if (max > MAX_PAGE)
		max = MAX_PAGE;
	req = mri_cl_request("objects");
	if (add_uint(req, "offset", *cursor) || add_uint(req, "limit", max))
		req = mri_cl_drop(req);
	if (req && q && q->kinds) {
		cJSON *k = cJSON_CreateArray();

		if (mri_json_add(req, "kinds", k))
			req = mri_cl_drop(req);
		for (int i = 0; req && i < MRI_OBJ_NR_KINDS; i++)
			if ((q->kinds & 1u << i) && mri_json_push(k, cJSON_CreateString(mri_obj_kind_name(i))))
				req = mri_cl_drop(req);
	}
	if (req && q && q->live_only && mri_json_add(req, "live", cJSON_CreateBool(1)))
		req = mri_cl_drop(req);
	if (req && q && q->name && mri_json_add(req, "name", cJSON_CreateString(q->name)))
		req = mri_cl_drop(req);
	if (req && mri_json_add(req, "compact", cJSON_CreateBool(1)))
		req = mri_cl_drop(req);
	err = mri_cl_call(s, req, &root, &r);
	if (err)
		return err;
	mri_cl_slot_reset(s, SLOT_OBJECTS);
	s->slots[SLOT_OBJECTS].root = root;
	s->objects_total = (uint32_t)mri_cl_num_u64(mri_json_get(r, "nr_total"));
	s->objects_freed = mri_json_get(r, "nr_freed") ? mri_cl_num_u64(mri_json_get(r, "nr_freed"))
						       : UINT64_MAX;
	if (mri_json_get(r, "rows")) {
		/* the compact form: [id, kind, start, end, size, site, bin, live, name] */
		const cJSON *names = mri_json_get(r, "names");
		uint32_t nr_names = mri_json_count(names), k = 0;
		const cJSON **name_of = calloc(nr_names + 1, sizeof(*name_of));

		if (!name_of)
			return mri_cl_set_err(s, AMEBA_ENOMEM, "out of memory");
		cJSON_ArrayForEach(e, names)
			name_of[k++] = e;
		cJSON_ArrayForEach(e, mri_json_get(r, "rows")) {
			const cJSON *f[11] = { NULL }, *x;
			uint32_t i = 0, ni;

			if (n == max)
				break;
			cJSON_ArrayForEach(x, e)
				if (i < 11)
					f[i++] = x;
			if (i < 9)
				continue;	/* a malformed row: skip it */
			ni = (uint32_t)mri_cl_num_u64(f[8]);
			out[n].id = (uint32_t)mri_cl_num_u64(f[0]);
			out[n].kind = (int)mri_cl_num_u64(f[1]);
			if (out[n].kind < 0 || out[n].kind >= MRI_OBJ_NR_KINDS)
				out[n].kind = MRI_OBJ_OTHER;
			out[n].start = mri_cl_num_u64(f[2]);
			out[n].end = mri_cl_num_u64(f[3]);
			out[n].sz_bytes = mri_cl_num_u64(f[4]);
			out[n].site_id = (uint32_t)mri_cl_num_u64(f[5]);
			out[n].bin_id = mri_json_type(f[6]) == cJSON_Number && f[6]->valuedouble >= 0 ?
				(uint32_t)mri_cl_num_u64(f[6]) : MRI_NO_BIN;
			out[n].live = mri_cl_num_u64(f[7]) != 0;
			out[n].name = ni < nr_names ? mri_cl_str_of(name_of[ni]) : NULL;
			/* a file mapping's row adds [.., path, offset] */
			out[n].file = i == 11 ? mri_cl_str_of(f[9]) : NULL;
			out[n].file_off = out[n].file ? mri_cl_num_u64(f[10]) : 0;
			n++;
		}
		free(name_of);
		next = mri_json_get(r, "next_offset");
		*cursor = mri_json_type(next) == cJSON_Number ? (uint32_t)mri_cl_num_u64(next) : MRI_END;
		return (int)n;
	}
	cJSON_ArrayForEach(e, mri_json_get(r, "objects")) {
		const cJSON *bin = mri_json_get(e, "bin");

		if (n == max)
			break;
		out[n].id = (uint32_t)mri_cl_num_u64(mri_json_get(e, "id"));
		out[n].kind = kind_of(mri_cl_str_of(mri_json_get(e, "kind")));
		out[n].name = mri_cl_str_of(mri_json_get(e, "name"));
		out[n].start = mri_cl_hex_u64(mri_json_get(e, "start"));
		out[n].end = mri_cl_hex_u64(mri_json_get(e, "end"));
		out[n].sz_bytes = mri_cl_num_u64(mri_json_get(e, "size"));
		out[n].site_id = (uint32_t)mri_cl_num_u64(mri_json_get(e, "site"));
		out[n].bin_id = mri_json_type(bin) == cJSON_Number ? (uint32_t)mri_cl_num_u64(bin) : MRI_NO_BIN;
		out[n].live = mri_json_type(mri_json_get(e, "live")) == cJSON_True;
		out[n].file = mri_cl_str_of(mri_json_get(e, "file"));
		out[n].file_off = out[n].file ? mri_cl_num_u64(mri_json_get(e, "offset")) : 0;
		n++;
	}
	next = mri_json_get(r, "next_offset");
	*cursor = mri_json_type(next) == cJSON_Number ? (uint32_t)mri_cl_num_u64(next) : MRI_END;
	return (int)n;
}

int mri_objects(struct mri_session *s, const struct mri_object_query *q, uint32_t *cursor,
		struct mri_object *out, uint32_t max)
{
	return GUARDED(s, do_objects(s, q, cursor, out, max));
}

uint32_t mri_objects_total(const struct mri_session *s)
{
	return s ? s->objects_total : 0;
}

uint64_t mri_objects_freed(const struct mri_session *s)
{
	return s ? s->objects_freed : UINT64_MAX;
}

static int do_bins(struct mri_session *s, uint32_t *cursor, struct mri_bin *out, uint32_t max)
{
	cJSON *req, *root;
	const cJSON *r, *e, *next;
	uint32_t n = 0;
	int err;

	if (*cursor == MRI_END || max == 0)
		return 0;
	if (max > MAX_PAGE)
		max = MAX_PAGE;
	req = mri_cl_request("bins");
	if (add_uint(req, "offset", *cursor) || add_uint(req, "limit", max))
		req = mri_cl_drop(req);
	err = mri_cl_call(s, req, &root, &r);
	if (err)
		return err;
	mri_cl_slot_reset(s, SLOT_BINS);
	s->slots[SLOT_BINS].root = root;
	cJSON_ArrayForEach(e, mri_json_get(r, "bins")) {
		if (n == max)
			break;
		out[n].id = (uint32_t)mri_cl_num_u64(mri_json_get(e, "id"));
		out[n].name = mri_cl_str_of(mri_json_get(e, "name"));
		out[n].nr_objects = mri_cl_num_u64(mri_json_get(e, "nr_objects"));
		out[n].sz_bytes = mri_cl_num_u64(mri_json_get(e, "size"));
		out[n].via = mri_cl_str_of(mri_json_get(e, "via"));
		n++;
	}
	next = mri_json_get(r, "next_offset");
	*cursor = mri_json_type(next) == cJSON_Number ? (uint32_t)mri_cl_num_u64(next) : MRI_END;
	return (int)n;
}

int mri_bins(struct mri_session *s, uint32_t *cursor, struct mri_bin *out, uint32_t max)
{
	return GUARDED(s, do_bins(s, cursor, out, max));
}

static int do_regions(struct mri_session *s, struct mri_region *out, uint32_t max)
{
	cJSON *root;
	const cJSON *r, *e;
	uint32_t n = 0;
	int err = mri_cl_call(s, mri_cl_request("regions"), &root, &r);

	if (err)
		return err;
	mri_cl_slot_reset(s, SLOT_REGIONS);
	s->slots[SLOT_REGIONS].root = root;
	cJSON_ArrayForEach(e, mri_json_get(r, "regions")) {
		if (n == max)
			break;
		out[n].id = (uint32_t)mri_cl_num_u64(mri_json_get(e, "id"));
		out[n].kind = mri_cl_str_of(mri_json_get(e, "kind"));
		out[n].name = mri_cl_str_of(mri_json_get(e, "name"));
		n++;
	}
	return (int)n;
}

int mri_regions(struct mri_session *s, struct mri_region *out, uint32_t max)
{
	return GUARDED(s, do_regions(s, out, max));
}

static int do_metrics(struct mri_session *s, struct mri_metric *out, uint32_t max)
{
	cJSON *root;
	const cJSON *r, *e;
	uint32_t n = 0;
	int err = mri_cl_call(s, mri_cl_request("metrics"), &root, &r);

	if (err)
		return err;
	mri_cl_slot_reset(s, SLOT_METRICS);
	s->slots[SLOT_METRICS].root = root;
	cJSON_ArrayForEach(e, mri_json_get(r, "metrics")) {
		if (n == max)
			break;
		out[n].name = mri_cl_str_of(mri_json_get(e, "name"));
		out[n].metric = ameba_metric_by_name(out[n].name);
		out[n].unit = mri_cl_str_of(mri_json_get(e, "unit"));
		out[n].desc = mri_cl_str_of(mri_json_get(e, "desc"));
		out[n].available = mri_json_type(mri_json_get(e, "available")) == cJSON_True;
		n++;
	}
	return (int)n;
}

int mri_metrics(struct mri_session *s, struct mri_metric *out, uint32_t max)
{
	return GUARDED(s, do_metrics(s, out, max));
}

static int do_backend(struct mri_session *s, struct mri_backend_info *out)
{
	cJSON *root;
	const cJSON *r, *e;
	int err = mri_cl_call(s, mri_cl_request("backend"), &root, &r);

	memset(out, 0, sizeof(*out));
	if (err)
		return err;
	mri_cl_slot_reset(s, SLOT_BACKEND);
	s->slots[SLOT_BACKEND].root = root;
	out->name = mri_cl_str_of(mri_json_get(r, "name"));
	out->geometry = mri_cl_str_of(mri_json_get(r, "geometry"));
	cJSON_ArrayForEach(e, mri_json_get(r, "metrics")) {
		int m = ameba_metric_by_name(mri_cl_str_of(e));

		if (m >= 0 && out->nr_metrics < AMEBA_M_NR)
			out->metrics[out->nr_metrics++] = m;
	}
	cJSON_ArrayForEach(e, mri_json_get(r, "backends")) {
		if (out->nr_backends < MRI_MAX_BACKENDS && mri_cl_str_of(e))
			out->backends[out->nr_backends++] = mri_cl_str_of(e);
	}
	return 0;
}

int mri_backend(struct mri_session *s, struct mri_backend_info *out)
{
	return GUARDED(s, do_backend(s, out));
}

/* ---- attach ---- */

static int do_attach(struct mri_session *s, const char *backend, const struct mri_sampling *cfg)
{
	cJSON *req = mri_cl_request("attach"), *sm;
	int err;

	if (req && backend && mri_json_add(req, "backend", cJSON_CreateString(backend))) {
		cJSON_Delete(req);
		req = NULL;
	}
	if (req && cfg &&
	    (mri_json_add(req, "sampled", (sm = cJSON_CreateObject())) ||
	     mri_json_add(sm, "period_us", cJSON_CreateNumber(cfg->period_us)) ||
	     mri_json_add(sm, "warm_us", cJSON_CreateNumber(cfg->warm_us)) ||
	     mri_json_add(sm, "burst_us", cJSON_CreateNumber(cfg->burst_us)) ||
	     (cfg->seed && mri_json_add(sm, "seed", cJSON_CreateNumber((double)cfg->seed))))) {
		cJSON_Delete(req);
		req = NULL;
	}
	err = mri_cl_call_simple(s, req);
	if (!err)
		s->attached = 1;
	return err;
}

int mri_attach(struct mri_session *s, const char *backend)
{
	return GUARDED(s, do_attach(s, backend, NULL));
}

int mri_attach_sampled(struct mri_session *s, const char *backend, const struct mri_sampling *cfg)
{
	return GUARDED(s, do_attach(s, backend, cfg));
}

static int do_sampled(struct mri_session *s, const struct mri_sampling *cfg)
{
	cJSON *req = mri_cl_request("sampled");

	if (req && (mri_json_add(req, "period_us", cJSON_CreateNumber(cfg->period_us)) ||
		    mri_json_add(req, "warm_us", cJSON_CreateNumber(cfg->warm_us)) ||
		    mri_json_add(req, "burst_us", cJSON_CreateNumber(cfg->burst_us)) ||
		    (cfg->seed && mri_json_add(req, "seed", cJSON_CreateNumber((double)cfg->seed))))) {
		cJSON_Delete(req);
		req = NULL;
	}
	return mri_cl_call_simple(s, req);
}

int mri_sampled(struct mri_session *s, const struct mri_sampling *cfg)
{
	if (!cfg)
		return AMEBA_EINVAL;
	return GUARDED(s, do_sampled(s, cfg));
}

int mri_detach(struct mri_session *s)
{
	int err = GUARDED(s, mri_cl_call_simple(s, mri_cl_request("detach")));

	if (!err)
		s->attached = 0;
	return err;
}

/* ---- experiments ---- */

/* o[key] = the n names (bins or exceptions); -1 on a NULL name or no memory. */
static int names_json(cJSON *o, const char *key, const char *const *names, uint32_t n)
{
	cJSON *a = cJSON_CreateArray();

	if (mri_json_add(o, key, a))
		return -1;
	for (uint32_t i = 0; i < n; i++)
		if (!names[i] || mri_json_push(a, cJSON_CreateString(names[i])))
			return -1;
	return 0;
}

/* c's where-set (every field but the metric) into o; -1 when out of memory. */
static int where_json(cJSON *o, const struct mri_counter *c)
{
	cJSON *a;

	if (c->nr_ranges) {
		a = cJSON_CreateArray();
		if (mri_json_add(o, "ranges", a))
			return -1;
		for (uint32_t i = 0; i < c->nr_ranges; i++) {
			cJSON *p = cJSON_CreateArray();
			char b[24];

			if (mri_json_push(a, p))
				return -1;
			snprintf(b, sizeof(b), "0x%" PRIx64, c->ranges[i].start);
			if (mri_json_push(p, cJSON_CreateString(b)))
				return -1;
			snprintf(b, sizeof(b), "0x%" PRIx64, c->ranges[i].end);
			if (mri_json_push(p, cJSON_CreateString(b)))
				return -1;
		}
	}
	if (c->nr_objects) {
		a = cJSON_CreateArray();
		if (mri_json_add(o, "objects", a))
			return -1;
		for (uint32_t i = 0; i < c->nr_objects; i++)
			if (mri_json_push(a, cJSON_CreateNumber(c->objects[i])))
				return -1;
	}
	if ((c->nr_bins && names_json(o, "bins", c->bins, c->nr_bins)) ||
	    (c->nr_except && names_json(o, "except", c->except, c->nr_except)))
		return -1;
	if (c->nr_threads) {
		a = cJSON_CreateArray();
		if (mri_json_add(o, "threads", a))
			return -1;
		for (uint32_t i = 0; i < c->nr_threads; i++)
			if (mri_json_push(a, cJSON_CreateNumber(c->threads[i])))
				return -1;
	}
	return 0;
}

static cJSON *counter_json(const struct mri_counter *c)
{
	const struct ameba_metric_info *mi = ameba_metric_info(c->metric);
	cJSON *o = cJSON_CreateObject();

	if (!o || !mi || mri_json_add(o, "metric", cJSON_CreateString(mi->name)) || where_json(o, c)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static int same_names(const char *const *a, const char *const *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (a[i] != b[i] && (!a[i] || !b[i] || strcmp(a[i], b[i])))
			return 0;
	return 1;
}

/* a and b count at the same places and threads (metrics aside). */
static int same_where(const struct mri_counter *a, const struct mri_counter *b)
{
	return a->nr_ranges == b->nr_ranges && a->nr_objects == b->nr_objects &&
	       a->nr_threads == b->nr_threads && a->nr_bins == b->nr_bins &&
	       a->nr_except == b->nr_except &&
	       (a->ranges == b->ranges || !a->nr_ranges ||
		!memcmp(a->ranges, b->ranges, a->nr_ranges * sizeof(*a->ranges))) &&
	       (a->objects == b->objects || !a->nr_objects ||
		!memcmp(a->objects, b->objects, a->nr_objects * sizeof(*a->objects))) &&
	       (a->threads == b->threads || !a->nr_threads ||
		!memcmp(a->threads, b->threads, a->nr_threads * sizeof(*a->threads))) &&
	       same_names(a->bins, b->bins, a->nr_bins) && same_names(a->except, b->except, a->nr_except);
}

/*
 * The number of places when c is every metric of a list on every place of
 * a list, metric-major (counter m * places + w: the product form of
 * docs/mri.md, start), with two metrics or more; 0 otherwise.
 */
static uint32_t product_places(const struct mri_counter *c, uint32_t nr)
{
	uint32_t n = 1;

	while (n < nr && c[n].metric == c[0].metric)
		n++;
	if (n == nr || nr % n)
		return 0;
	for (uint32_t m = n; m < nr; m += n)
		for (uint32_t w = 0; w < n; w++)
			if (c[m + w].metric != c[m].metric || !same_where(&c[w], &c[m + w]))
				return 0;
	return n;
}

/* The counters in the product form: {"metrics":[...],"where":[...]}. */
static cJSON *product_json(const struct mri_counter *c, uint32_t nr, uint32_t places)
{
	cJSON *o = cJSON_CreateObject(), *ms = cJSON_CreateArray(), *ws = cJSON_CreateArray();

	if (!o || !ms || !ws) {
		cJSON_Delete(ms);
		cJSON_Delete(ws);
		goto fail;
	}
	if (mri_json_add(o, "metrics", ms) || mri_json_add(o, "where", ws))
		goto fail;
	for (uint32_t m = 0; m < nr; m += places)
		if (mri_json_push(ms, cJSON_CreateString(ameba_metric_info(c[m].metric)->name)))
			goto fail;
	for (uint32_t w = 0; w < places; w++) {
		cJSON *x = cJSON_CreateObject();

		if (mri_json_push(ws, x) || where_json(x, &c[w]))
			goto fail;
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

static int do_start(struct mri_session *s, const struct mri_counter *c, uint32_t nr,
		    uint32_t interval_ms, const char *mark, uint64_t *experiment, int *written,
		    char *path, size_t len, const uint64_t *replace, struct mri_reading *final)
{
	cJSON *req = mri_cl_request("start"), *arr = NULL, *root;
	const cJSON *r;
	int err, was = s->timeout_ms;
	uint32_t places;

	for (uint32_t i = 0; i < nr; i++)
		if (!ameba_metric_info(c[i].metric)) {
			cJSON_Delete(req);
			return mri_cl_set_err(s, AMEBA_EINVAL, "counter %u: metric %d is not an AMEBA_M_* value",
					      i, c[i].metric);
		}
	/* all metrics on the same places: each place once (docs/mri.md) */
	if (s->product && (places = product_places(c, nr))) {
		arr = product_json(c, nr, places);
	} else if ((arr = cJSON_CreateArray())) {
		for (uint32_t i = 0; i < nr; i++)
			if (mri_json_push(arr, counter_json(&c[i]))) {
				cJSON_Delete(arr);
				arr = NULL;
				break;
			}
	}
	if (mri_json_add(req, "counters", arr)) {
		cJSON_Delete(req);
		return mri_cl_set_err(s, AMEBA_ENOMEM, "out of memory");
	}
	if ((interval_ms && add_uint(req, "interval_ms", interval_ms)) ||
	    (replace && add_uint(req, "replace", *replace)) ||
	    (mark && mri_json_add(req, "mark", cJSON_CreateString(mark)))) {
		cJSON_Delete(req);
		return mri_cl_set_err(s, AMEBA_ENOMEM, "out of memory");
	}
	/* with a mark, the reply waits for the snapshot (as mri_mark's) */
	if (mark && was >= 0 && was < MARK_TIMEOUT_MS)
		s->timeout_ms = MARK_TIMEOUT_MS;
	err = mri_cl_call(s, req, &root, &r);
	s->timeout_ms = was;
	if (err)
		return err;
	if (experiment)
		*experiment = mri_cl_num_u64(mri_json_get(r, "experiment"));
	if (replace) {
		struct mri_reading tmp;

		err = mri_cl_parse_reading(s, SLOT_STOP, mri_json_get(r, "replaced"), final ? final : &tmp);
		if (err) {
			cJSON_Delete(root);
			return mri_cl_set_err(s, err, "cannot read the replaced experiment's reading: %s",
					      ameba_strerror(err));
		}
	}
	if (mark) {
		const cJSON *m = mri_json_get(r, "mark");
		const char *t;

		*written = mri_json_type(mri_json_get(m, "written")) == cJSON_True;
		t = mri_cl_str_of(mri_json_get(m, *written ? "path" : "why"));
		if (len)
			snprintf(path, len, "%s", t ? t : "the target's reply has no mark");
	}
	cJSON_Delete(root);
	return 0;
}

int mri_experiment_start(struct mri_session *s, const struct mri_counter *c, uint32_t nr,
			 uint32_t interval_ms, uint64_t *experiment)
{
	return GUARDED(s, do_start(s, c, nr, interval_ms, NULL, experiment, NULL, NULL, 0, NULL, NULL));
}

int mri_experiment_replace(struct mri_session *s, uint64_t running, const struct mri_counter *c,
			   uint32_t nr, uint32_t interval_ms, uint64_t *experiment,
			   struct mri_reading *final)
{
	return GUARDED(s, do_start(s, c, nr, interval_ms, NULL, experiment, NULL, NULL, 0, &running,
				   final));
}

int mri_experiment_start_marked(struct mri_session *s, const struct mri_counter *c, uint32_t nr,
				uint32_t interval_ms, const char *mark, uint64_t *experiment,
				int *written, char *path, size_t len)
{
	if (!mark)
		return mri_cl_set_err(s, AMEBA_EINVAL, "mri_experiment_start_marked needs a mark label");
	return GUARDED(s, do_start(s, c, nr, interval_ms, mark, experiment, written, path, len, NULL,
				   NULL));
}

static int do_read(struct mri_session *s, uint64_t experiment, unsigned flags, enum slot k,
		   const char *op, struct mri_reading *out)
{
	cJSON *req = mri_cl_request(op), *root;
	const cJSON *r;
	struct mri_reading tmp;
	int err;

	if (add_uint(req, "experiment", experiment) ||
	    ((flags & MRI_READ_THREADS) && (mri_json_add(req, "threads", cJSON_CreateBool(1)) ||
					      mri_json_add(req, "sparse", cJSON_CreateBool(1)))))
		req = mri_cl_drop(req);
	err = mri_cl_call(s, req, &root, &r);
	if (err)
		return err;
	err = mri_cl_parse_reading(s, k, r, out ? out : &tmp);
	cJSON_Delete(root);
	if (err)
		return mri_cl_set_err(s, err, "cannot read the reading: %s", ameba_strerror(err));
	return 0;
}

int mri_experiment_read(struct mri_session *s, uint64_t experiment, unsigned flags,
			struct mri_reading *out)
{
	return GUARDED(s, do_read(s, experiment, flags, SLOT_READ, "read", out));
}

int mri_experiment_stop(struct mri_session *s, uint64_t experiment, struct mri_reading *final)
{
	return GUARDED(s, do_read(s, experiment, 0, SLOT_STOP, "stop", final));
}

/* ---- samples ---- */

static int do_samples_start(struct mri_session *s, int metric, uint64_t period, int randomized,
			    uint64_t seed)
{
	const struct ameba_metric_info *mi = ameba_metric_info(metric);
	cJSON *req = mri_cl_request("samples_start");

	if (!mi) {
		cJSON_Delete(req);
		return mri_cl_set_err(s, AMEBA_EINVAL, "metric %d is not an AMEBA_M_* value", metric);
	}
	if (mri_json_add(req, "metric", cJSON_CreateString(mi->name)) ||
	    add_uint(req, "period", period) || mri_json_add(req, "random", cJSON_CreateBool(randomized)) ||
	    add_uint(req, "seed", seed))
		req = mri_cl_drop(req);
	return mri_cl_call_simple(s, req);
}

int mri_samples_start(struct mri_session *s, int metric, uint64_t period, int randomized, uint64_t seed)
{
	return GUARDED(s, do_samples_start(s, metric, period, randomized, seed));
}

#define MAX_SITE_ID (1u << 24)		/* as the monitor's where-sets: larger ids are ignored */

/* Records label as the name of site id. 0 or AMEBA_ENOMEM. */
static int site_label_set(struct mri_session *s, uint32_t id, const char *label)
{
	char *dup;

	if (!id || id > MAX_SITE_ID || !label)
		return 0;
	if (id < s->nr_site_label && s->site_label[id] && !strcmp(s->site_label[id], label))
		return 0;
	if (id >= s->nr_site_label) {
		uint32_t nr = id + 1 > 2 * s->nr_site_label ? id + 1 : 2 * s->nr_site_label;
		char **v = realloc(s->site_label, nr * sizeof(*v));

		if (!v)
			return AMEBA_ENOMEM;
		memset(v + s->nr_site_label, 0, (nr - s->nr_site_label) * sizeof(*v));
		s->site_label = v;
		s->nr_site_label = nr;
	}
	dup = strdup(label);
	if (!dup)
		return AMEBA_ENOMEM;
	if (s->site_label[id]) {	/* deepened: earlier samples still point at it */
		if (s->nr_old_labels == s->cap_old_labels) {
			uint32_t cap = s->cap_old_labels ? 2 * s->cap_old_labels : 16;
			char **v = realloc(s->old_labels, cap * sizeof(*v));

			if (!v) {
				free(dup);
				return AMEBA_ENOMEM;
			}
			s->old_labels = v;
			s->cap_old_labels = cap;
		}
		s->old_labels[s->nr_old_labels++] = s->site_label[id];
	}
	s->site_label[id] = dup;
	return 0;
}

static int do_samples_read(struct mri_session *s, struct mri_sample *out, uint32_t max, uint64_t *lost)
{
	cJSON *req = mri_cl_request("samples_read"), *root;
	const cJSON *r, *e;
	uint32_t n = 0;
	int err;

	if (max == 0)
		max = 1;
	if (max > 4096)
		max = 4096;
	if (add_uint(req, "max", max))
		req = mri_cl_drop(req);
	err = mri_cl_call(s, req, &root, &r);
	if (err)
		return err;
	/* the labels first: the samples point at them */
	cJSON_ArrayForEach(e, mri_json_get(r, "sites")) {
		const cJSON *x = e->child;

		if (x && site_label_set(s, (uint32_t)mri_cl_num_u64(x), mri_cl_str_of(x->next))) {
			cJSON_Delete(root);
			return mri_cl_set_err(s, AMEBA_ENOMEM, "out of memory naming sample sites");
		}
	}
	cJSON_ArrayForEach(e, mri_json_get(r, "samples")) {
		const cJSON *x = e->child, *site;

		if (n == max)
			break;
		out[n].addr = mri_cl_hex_u64(x);
		out[n].pc = x ? mri_cl_hex_u64(x->next) : 0;
		out[n].thread_id = x && x->next ? (uint32_t)mri_cl_num_u64(x->next->next) : 0;
		out[n].weight = x && x->next && x->next->next ? (uint32_t)mri_cl_num_u64(x->next->next->next) : 0;
		/* the fifth element: an older server sends four */
		site = x && x->next && x->next->next && x->next->next->next ?
		       x->next->next->next->next : NULL;
		out[n].site_id = site ? (uint32_t)mri_cl_num_u64(site) : 0;
		out[n].site = out[n].site_id && out[n].site_id < s->nr_site_label ?
			      s->site_label[out[n].site_id] : NULL;
		n++;
	}
	if (lost)
		*lost = mri_cl_num_u64(mri_json_get(r, "lost"));
	cJSON_Delete(root);
	return (int)n;
}

int mri_samples_read(struct mri_session *s, struct mri_sample *out, uint32_t max, uint64_t *lost)
{
	return GUARDED(s, do_samples_read(s, out, max, lost));
}

int mri_samples_stop(struct mri_session *s)
{
	return GUARDED(s, mri_cl_call_simple(s, mri_cl_request("samples_stop")));
}
