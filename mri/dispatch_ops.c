/*
 * dispatch_ops.c - the MRI ops: one handler per request "op", each
 * validating its fields (through dispatch.c's helpers, so errors name the
 * field, the bad value and the fix), calling the monitor through struct
 * mri_monitor_ops and filling the result. docs/mri.md documents each.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ameba/ameba.h"
#include "dispatch_int.h"

/* ---- ops: session ---- */

static cJSON *op_list(void);

static int op_hello(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", "client", NULL };
	struct mri_disp *d = r->d;
	struct mri_proc_rec p = { 0 };
	const cJSON *c = mri_json_get(r->msg, "client");
	const char *client = NULL;
	cJSON *feat;

	if (mri_req_fields(r, r->msg, "hello", fields))
		return r->code;
	if (c && mri_req_str(r, c, "client", 256, &client))
		return r->code;
	if (d->hello)
		return mri_req_fail(r, AMEBA_EPROTO, "hello was already answered (request id %" PRIu64
			    "); a session says hello once", d->hello_id);
	if (d->ops->process(d->ctx, &p))
		return mri_req_fail(r, AMEBA_EIO, "cannot read the process facts");
	if (mri_json_add(r->result, "server", cJSON_CreateString("ameba-rt")) ||
	    mri_json_add(r->result, "runtime_version", cJSON_CreateString(AMEBA_VERSION_STRING)) ||
	    mri_json_add(r->result, "protocol", cJSON_CreateNumber(MRI_PROTOCOL_VERSION)) ||
	    mri_json_add(r->result, "pid", cJSON_CreateNumber(p.pid)) ||
	    mri_json_add(r->result, "max_message_bytes", cJSON_CreateNumber(MRI_MSG_MAX)) ||
	    mri_json_add(r->result, "ops", op_list()) ||
	    /* what a client may use beyond protocol 1's first form */
	    mri_json_add(r->result, "features", (feat = cJSON_CreateArray())) ||
	    mri_json_push(feat, cJSON_CreateString("counters_product")))
		return mri_req_nomem(r);
	d->hello = 1;
	return 0;
}

static int op_ping(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", NULL };

	return mri_req_fields(r, r->msg, "ping", fields);
}

static int op_bye(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", NULL };

	if (mri_req_fields(r, r->msg, "bye", fields))
		return r->code;
	r->close = 1;
	return 0;
}

static int op_process(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", NULL };
	struct mri_disp *d = r->d;
	struct mri_proc_rec p = { 0 };
	cJSON *res = r->result;

	if (mri_req_fields(r, r->msg, "process", fields))
		return r->code;
	if (d->ops->process(d->ctx, &p))
		return mri_req_fail(r, AMEBA_EIO, "cannot read the process facts");
	if (mri_json_add(res, "pid", cJSON_CreateNumber(p.pid)) ||
	    mri_json_add(res, "program", cJSON_CreateString(p.program ? p.program : "")) ||
	    mri_json_add(res, "runtime_version", cJSON_CreateString(AMEBA_VERSION_STRING)) ||
	    mri_json_add(res, "protocol", cJSON_CreateNumber(MRI_PROTOCOL_VERSION)) ||
	    mri_json_add(res, "nr_threads", mri_json_u64(p.nr_threads)) ||
	    mri_json_add(res, "attached", cJSON_CreateBool(d->attached)) ||
	    mri_json_add(res, "active", cJSON_CreateBool(p.active)) ||
	    mri_json_add(res, "backend", p.backend ? cJSON_CreateString(p.backend) : cJSON_CreateNull()))
		return mri_req_nomem(r);
	return 0;
}

/* ---- ops: discovery ---- */

static int op_threads(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", "offset", "limit", NULL };
	struct mri_disp *d = r->d;
	uint64_t off, lim;
	uint32_t nr, id;
	cJSON *arr;

	if (mri_req_fields(r, r->msg, "threads", fields) ||
	    mri_req_opt_uint(r, r->msg, "offset", 0, UINT32_MAX, 0, &off) ||
	    mri_req_opt_uint(r, r->msg, "limit", 1, MRI_MAX_PAGE, 1024, &lim))
		return r->code;
	nr = d->ops->nr_threads(d->ctx);
	arr = cJSON_CreateArray();
	if (mri_json_add(r->result, "threads", arr))
		return mri_req_nomem(r);
	for (id = (uint32_t)off; id < nr && lim > 0; id++) {
		struct mri_thread_info t;
		cJSON *o;

		if (d->ops->thread(d->ctx, id, &t))
			continue;	/* id reserved, thread not registered yet */
		o = cJSON_CreateObject();
		if (mri_json_push(arr, o) || mri_json_add(o, "id", mri_json_u64(t.id)) ||
		    mri_json_add(o, "tid", cJSON_CreateNumber(t.tid)) ||
		    mri_json_add(o, "exited", cJSON_CreateBool(t.exited)))
			return mri_req_nomem(r);
		lim--;
	}
	if (mri_json_add(r->result, "nr_total", mri_json_u64(nr)) ||
	    mri_json_add(r->result, "next_offset", id < nr ? mri_json_u64(id) : cJSON_CreateNull()))
		return mri_req_nomem(r);
	return 0;
}

static cJSON *object_json(const struct mri_object *o)
{
	cJSON *j = cJSON_CreateObject();

	if (!j || mri_json_add(j, "id", mri_json_u64(o->id)) ||
	    mri_json_add(j, "kind", cJSON_CreateString(mri_obj_kind_name(o->kind) ?: "other")) ||
	    mri_json_add(j, "name", cJSON_CreateString(o->name ? o->name : "")) ||
	    mri_json_add(j, "start", mri_json_hex(o->start)) || mri_json_add(j, "end", mri_json_hex(o->end)) ||
	    mri_json_add(j, "size", mri_json_u64(o->sz_bytes)) ||
	    mri_json_add(j, "site", mri_json_u64(o->site_id)) ||
	    mri_json_add(j, "bin", o->bin_id == MRI_NO_BIN ? cJSON_CreateNull() : mri_json_u64(o->bin_id)) ||
	    mri_json_add(j, "live", cJSON_CreateBool(o->live)) ||
	    (o->file && (mri_json_add(j, "file", cJSON_CreateString(o->file)) ||
			 mri_json_add(j, "offset", mri_json_u64(o->file_off))))) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

/* A growing text buffer for the compact listing (built without cJSON nodes). */
struct tbuf {
	char *p;
	size_t len, cap;
	int err;
};

static void tb_need(struct tbuf *b, size_t n)
{
	char *q;
	size_t cap;

	if (b->err || b->len + n + 1 <= b->cap)
		return;
	cap = b->cap ? 2 * b->cap : 65536;
	while (cap < b->len + n + 1)
		cap *= 2;
	q = realloc(b->p, cap);
	if (!q) {
		b->err = AMEBA_ENOMEM;
		return;
	}
	b->p = q;
	b->cap = cap;
}

static void tb_printf(struct tbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_printf(struct tbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	tb_need(b, 160);
	if (b->err)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= b->cap - b->len) {
		b->err = AMEBA_ENOMEM;	/* never: 160 bytes hold a row of numbers */
		return;
	}
	b->len += (size_t)n;
}

/* s as a JSON string. */
static void tb_str(struct tbuf *b, const char *s)
{
	tb_need(b, mri_json_str_cost(s) + 1);
	if (b->err)
		return;
	b->p[b->len++] = '"';
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			b->p[b->len++] = '\\';
			b->p[b->len++] = (char)c;
		} else if (c < 0x20) {
			b->len += (size_t)snprintf(b->p + b->len, 7, "\\u%04x", c);
		} else {
			b->p[b->len++] = (char)c;
		}
	}
	b->p[b->len++] = '"';
	b->p[b->len] = '\0';
}

/*
 * The compact listing: "rows" [[id, kind, start, end, size, site, bin, live,
 * name], ...] (numbers; kind the index of mri_obj_kind_name, bin -1 for
 * none, name an index into "names") and "names" [string, ...], each site
 * label once per page. Written as raw JSON text: a page of 4,096 objects is
 * two cJSON nodes instead of ~45,000 (the CPU of the server thread, which
 * competes with the program's threads, was the cost of listing a million
 * blocks).
 */
static int objects_compact(struct mri_req *r, struct tbuf *rows, struct tbuf *names)
{
	cJSON *jr, *jn;

	tb_printf(rows, "]");
	tb_printf(names, "]");
	if (rows->err || names->err)
		return mri_req_nomem(r);
	jr = cJSON_CreateRaw(rows->p);
	if (mri_json_add(r->result, "rows", jr))
		return mri_req_nomem(r);
	jn = cJSON_CreateRaw(names->p);
	if (mri_json_add(r->result, "names", jn))
		return mri_req_nomem(r);
	return 0;
}

static int op_objects(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", "offset", "limit", "kinds", "live",
					      "name", "compact", NULL };
	struct mri_disp *d = r->d;
	const cJSON *jk = mri_json_get(r->msg, "kinds"), *jn = mri_json_get(r->msg, "name"), *e;
	const char *want_name = NULL;
	uint64_t off, lim;
	uint32_t kinds = 0, nr, id, scanned = 0, nr_kinds, k = 0;
	size_t cost = 0;
	int live_only, compact, rc;
	char *name;
	cJSON *arr = NULL;
	struct tbuf rows = { 0 }, names = { 0 };
	uint32_t *bin_name = NULL, nr_bins = 0, nr_names = 0;
	uint64_t freed;

	if (mri_req_fields(r, r->msg, "objects", fields) ||
	    mri_req_opt_bool(r, r->msg, "compact", 0, &compact) ||
	    mri_req_opt_uint(r, r->msg, "offset", 0, UINT32_MAX, 0, &off) ||
	    mri_req_opt_uint(r, r->msg, "limit", 1, MRI_MAX_PAGE, 1024, &lim) ||
	    mri_req_opt_bool(r, r->msg, "live", 0, &live_only))
		return r->code;
	if (jn && mri_req_str(r, jn, "name", MRI_NAME_MAX - 1, &want_name))
		return r->code;
	if (jk) {
		if (mri_req_array(r, jk, "kinds", MRI_OBJ_NR_KINDS * 2, &nr_kinds))
			return r->code;
		cJSON_ArrayForEach(e, jk) {
			char path[32], b[80];
			const char *s;
			int m;

			snprintf(path, sizeof(path), "kinds[%u]", k++);
			if (mri_req_str(r, e, path, 16, &s))
				return r->code;
			for (m = 0; m < MRI_OBJ_NR_KINDS; m++)
				if (!strcmp(s, mri_obj_kind_name(m)))
					break;
			if (m == MRI_OBJ_NR_KINDS)
				return mri_req_fail(r, AMEBA_EINVAL, "%s: unknown kind %s (known: global, heap, "
					    "mmap, stack, tls, other)", path, mri_json_show(e, b, sizeof(b)));
			kinds |= 1u << m;
		}
	}
	if (compact) {
		/* names of site bins once per page: bin id -> name index + 1 */
		nr_bins = d->ops->nr_bins(d->ctx);
		bin_name = calloc(nr_bins + 1, sizeof(*bin_name));
		if (!bin_name)
			return mri_req_nomem(r);
		tb_printf(&rows, "[");
		tb_printf(&names, "[");
	} else {
		arr = cJSON_CreateArray();
		if (mri_json_add(r->result, "objects", arr))	/* consumes arr either way */
			return mri_req_nomem(r);
	}
	name = malloc(MRI_NAME_MAX);
	if (!name) {
		free(bin_name);
		free(rows.p);
		free(names.p);
		return mri_req_nomem(r);
	}
	/* read before the scan: a free during it shows as a change next time */
	freed = d->ops->nr_freed ? d->ops->nr_freed(d->ctx) : UINT64_MAX;
	nr = d->ops->nr_objects(d->ctx);
	for (id = (uint32_t)off; id < nr && lim > 0; id++) {
		struct mri_object o = { 0 };	/* fields a monitor leaves alone stay 0 (file) */
		cJSON *j;

		/* Bound the work of one request: the reply says where to go on. */
		if (++scanned > MRI_OBJECT_SCAN || cost > MRI_REPLY_BUDGET)
			break;
		if (d->ops->object(d->ctx, id, &o, NULL))
			continue;
		if ((kinds && !(kinds & 1u << o.kind)) || (live_only && !o.live))
			continue;
		if (d->ops->object(d->ctx, id, &o, name))
			continue;
		if (want_name && strcmp(want_name, o.name ? o.name : ""))
			continue;
		if (compact) {
			uint32_t ni;
			int shared = o.bin_id != MRI_NO_BIN && o.bin_id < nr_bins;

			if (shared && bin_name[o.bin_id]) {
				ni = bin_name[o.bin_id] - 1;
			} else {
				ni = nr_names++;
				if (shared)
					bin_name[o.bin_id] = nr_names;
				if (ni)
					tb_printf(&names, ",");
				tb_str(&names, o.name ? o.name : "");
				cost += mri_json_str_cost(o.name);
			}
			tb_printf(&rows, "%s[%u,%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%u,%lld,%d,%u",
				  rows.len > 1 ? "," : "", o.id, o.kind, o.start, o.end, o.sz_bytes,
				  o.site_id, o.bin_id == MRI_NO_BIN ? -1ll : (long long)o.bin_id,
				  o.live, ni);
			if (o.file) {	/* a file mapping: its path and offset */
				tb_printf(&rows, ",");
				tb_str(&rows, o.file);
				tb_printf(&rows, ",%" PRIu64, o.file_off);
				cost += mri_json_str_cost(o.file) + 24;
			}
			tb_printf(&rows, "]");
			cost += 80;
			lim--;
			continue;
		}
		j = object_json(&o);
		if (!j || mri_json_push(arr, j)) {
			free(name);
			free(bin_name);
			return mri_req_nomem(r);
		}
		cost += 160 + mri_json_str_cost(o.name);
		lim--;
	}
	free(name);
	free(bin_name);
	if (compact) {
		rc = objects_compact(r, &rows, &names);
		free(rows.p);
		free(names.p);
		if (rc)
			return rc;
	}
	if (mri_json_add(r->result, "nr_total", mri_json_u64(nr)) ||
	    (freed != UINT64_MAX && mri_json_add(r->result, "nr_freed", mri_json_u64(freed))) ||
	    mri_json_add(r->result, "next_offset", id < nr ? mri_json_u64(id) : cJSON_CreateNull()))
		return mri_req_nomem(r);
	return 0;
}

static int op_bins(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", "offset", "limit", NULL };
	struct mri_disp *d = r->d;
	uint64_t off, lim;
	uint32_t nr, id;
	size_t cost = 0;
	char *name;
	cJSON *arr;

	if (mri_req_fields(r, r->msg, "bins", fields) ||
	    mri_req_opt_uint(r, r->msg, "offset", 0, UINT32_MAX, 0, &off) ||
	    mri_req_opt_uint(r, r->msg, "limit", 1, MRI_MAX_PAGE, 1024, &lim))
		return r->code;
	arr = cJSON_CreateArray();
	if (mri_json_add(r->result, "bins", arr))
		return mri_req_nomem(r);
	name = malloc(MRI_NAME_MAX);
	if (!name)
		return mri_req_nomem(r);
	nr = d->ops->nr_bins(d->ctx);
	/* the site bins, then the two kind bins (ids nr, nr + 1) */
	for (id = (uint32_t)off; id < nr + 2 && lim > 0 && cost <= MRI_REPLY_BUDGET; id++) {
		struct mri_bin b = { 0 };	/* fields a monitor leaves alone stay 0 (via) */
		cJSON *o;

		if (id >= nr) {
			b.id = id;
			b.name = id == nr ? "[stack]" : "[tls]";
		} else if (d->ops->bin(d->ctx, id, &b, name)) {
			continue;
		}
		o = cJSON_CreateObject();
		if (mri_json_push(arr, o) || mri_json_add(o, "id", mri_json_u64(b.id)) ||
		    mri_json_add(o, "name", cJSON_CreateString(b.name ? b.name : "")) ||
		    mri_json_add(o, "nr_objects", mri_json_u64(b.nr_objects)) ||
		    mri_json_add(o, "size", mri_json_u64(b.sz_bytes)) ||
		    (b.via && mri_json_add(o, "via", cJSON_CreateString(b.via)))) {
			free(name);
			return mri_req_nomem(r);
		}
		cost += 80 + mri_json_str_cost(b.name) + (b.via ? mri_json_str_cost(b.via) : 0);
		lim--;
	}
	free(name);
	if (mri_json_add(r->result, "nr_total", mri_json_u64(nr + 2)) ||
	    mri_json_add(r->result, "next_offset", id < nr + 2 ? mri_json_u64(id) : cJSON_CreateNull()))
		return mri_req_nomem(r);
	return 0;
}

/* No region is tracked yet (function and OpenMP regions come with a later
 * runtime): the list is honestly empty. */
static int op_regions(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", NULL };

	if (mri_req_fields(r, r->msg, "regions", fields))
		return r->code;
	if (mri_json_add(r->result, "regions", cJSON_CreateArray()))
		return mri_req_nomem(r);
	return 0;
}

/* Is metric m provided by the backend in use? */
int mri_backend_has(const struct mri_backend_rec *b, int m)
{
	for (uint32_t i = 0; i < b->nr_metrics; i++)
		if (b->metrics[i] == m)
			return 1;
	return 0;
}

int mri_disp_backend_rec(struct mri_disp *d, struct mri_backend_rec *b)
{
	memset(b, 0, sizeof(*b));
	if (d->ops->backend(d->ctx, b))
		memset(b, 0, sizeof(*b));
	if (b->nr_metrics > AMEBA_M_NR)
		b->nr_metrics = AMEBA_M_NR;
	return 0;
}

static int op_metrics(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", NULL };
	struct mri_backend_rec b;
	cJSON *arr;

	if (mri_req_fields(r, r->msg, "metrics", fields))
		return r->code;
	mri_disp_backend_rec(r->d, &b);
	arr = cJSON_CreateArray();
	if (mri_json_add(r->result, "metrics", arr))
		return mri_req_nomem(r);
	for (int m = 0; m < AMEBA_M_NR; m++) {
		const struct ameba_metric_info *mi = ameba_metric_info(m);
		cJSON *o = cJSON_CreateObject();

		if (mri_json_push(arr, o) || mri_json_add(o, "name", cJSON_CreateString(mi->name)) ||
		    mri_json_add(o, "unit", cJSON_CreateString(mi->unit)) ||
		    mri_json_add(o, "desc", cJSON_CreateString(mi->desc)) ||
		    mri_json_add(o, "available",
				 cJSON_CreateBool(r->d->attached && mri_backend_has(&b, m))))
			return mri_req_nomem(r);
	}
	return 0;
}

static cJSON *metric_names(const struct mri_backend_rec *b)
{
	cJSON *a = cJSON_CreateArray();

	for (uint32_t i = 0; a && i < b->nr_metrics; i++) {
		const struct ameba_metric_info *mi = ameba_metric_info(b->metrics[i]);

		if (mi && mri_json_push(a, cJSON_CreateString(mi->name))) {
			cJSON_Delete(a);
			return NULL;
		}
	}
	return a;
}

/* "sim, count" */
static const char *backend_list(struct mri_disp *d, char *buf, size_t len)
{
	const char *names[MRI_MAX_BACKENDS];
	uint32_t n = d->ops->backends(d->ctx, names, MRI_MAX_BACKENDS);
	size_t o = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < n && i < MRI_MAX_BACKENDS && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "", names[i]);
	return buf;
}

static int op_backend(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", NULL };
	struct mri_disp *d = r->d;
	const char *names[MRI_MAX_BACKENDS];
	struct mri_backend_rec b;
	uint32_t n;
	cJSON *all;

	if (mri_req_fields(r, r->msg, "backend", fields))
		return r->code;
	all = cJSON_CreateArray();
	if (mri_json_add(r->result, "backends", all))	/* consumes all either way */
		return mri_req_nomem(r);
	mri_disp_backend_rec(d, &b);
	n = d->ops->backends(d->ctx, names, MRI_MAX_BACKENDS);
	for (uint32_t i = 0; i < n && i < MRI_MAX_BACKENDS; i++)
		if (mri_json_push(all, cJSON_CreateString(names[i])))
			return mri_req_nomem(r);
	if (mri_json_add(r->result, "name", b.name ? cJSON_CreateString(b.name) : cJSON_CreateNull()) ||
	    mri_json_add(r->result, "attached", cJSON_CreateBool(d->attached)) ||
	    mri_json_add(r->result, "metrics", metric_names(&b)) ||
	    mri_json_add(r->result, "geometry",
			 cJSON_CreateString(b.geometry ? b.geometry : "not applicable")))
		return mri_req_nomem(r);
	return 0;
}

/* ---- ops: attach ---- */

/* A sampled-mode configuration (obj; where names it in errors) into *out:
 * 0, else the request's error. */
static int sampling_of(struct mri_req *r, const cJSON *obj, const char *where,
		       struct mri_sampling *out)
{
	static const char *const sfields[] = { "v", "id", "op", "period_us", "warm_us", "burst_us",
					       "seed", NULL };
	uint64_t v[4];

	if (mri_json_type(obj) != cJSON_Object)
		return mri_req_fail(r, AMEBA_EINVAL, "%s: want an object such as "
			    "{\"period_us\":20000,\"warm_us\":2000,\"burst_us\":4000}", where);
	if (mri_req_fields(r, obj, where, sfields) ||
	    mri_req_opt_uint(r, obj, "period_us", 100, 3600000000ull, MRI_SAMPLED_PERIOD_US, &v[0]) ||
	    mri_req_opt_uint(r, obj, "warm_us", 0, 3600000000ull, MRI_SAMPLED_WARM_US, &v[1]) ||
	    mri_req_opt_uint(r, obj, "burst_us", 10, 3600000000ull, MRI_SAMPLED_BURST_US, &v[2]) ||
	    mri_req_opt_uint(r, obj, "seed", 0, UINT64_MAX, 0, &v[3]))
		return r->code;
	if (!r->d->ops->sampled)
		return mri_req_fail(r, AMEBA_ENOTSUP, "%s: this monitor has no sampled mode; "
			    "count exactly (attach without \"sampled\")", where);
	*out = (struct mri_sampling){ .period_us = (uint32_t)v[0], .warm_us = (uint32_t)v[1],
				      .burst_us = (uint32_t)v[2], .seed = v[3] };
	return 0;
}

/* The session's monitor goes sampled now (an experiment running goes on:
 * its estimates add to its exact counts so far). */
static int op_sampled(struct mri_req *r)
{
	struct mri_sampling sc;
	int err;

	if (sampling_of(r, r->msg, "sampled", &sc))
		return r->code;
	if (!r->d->attached)
		return mri_req_fail(r, AMEBA_EINVAL, "not attached; attach first");
	if ((err = r->d->ops->sampled(r->d->ctx, &sc)))
		return mri_req_fail(r, err, "cannot start sampled mode: %s%s", ameba_strerror(err),
			    err == AMEBA_EBUSY ? " (it runs already)" :
			    err == AMEBA_ENOTSUP ? " (the target writes an exact oracle, AMEBA_ORACLE)" : "");
	if (mri_json_add(r->result, "mode", cJSON_CreateString("sampled")))
		return mri_req_nomem(r);
	return 0;
}

static int op_attach(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", "backend", "sampled", NULL };
	struct mri_disp *d = r->d;
	const cJSON *jb = mri_json_get(r->msg, "backend"), *js = mri_json_get(r->msg, "sampled");
	const char *want = NULL, *chosen = NULL;
	struct mri_backend_rec b;
	struct mri_sampling sc = { 0 };
	char list[128];
	int err;

	if (mri_req_fields(r, r->msg, "attach", fields))
		return r->code;
	if (jb && mri_json_type(jb) != cJSON_NULL && mri_req_str(r, jb, "backend", 32, &want))
		return r->code;
	if (js && sampling_of(r, js, "sampled", &sc))
		return r->code;
	if (d->attached)
		return mri_req_fail(r, AMEBA_EINVAL, "already attached (backend %s); detach first",
			    d->backend ? d->backend : "?");
	err = d->ops->attach(d->ctx, want, &chosen);
	if (err == AMEBA_ENOENT)
		return mri_req_fail(r, err, "backend: unknown backend \"%s\"; this runtime has: %s", want,
			    backend_list(d, list, sizeof(list)));
	if (err == AMEBA_EBUSY) {
		mri_disp_backend_rec(d, &b);
		return mri_req_fail(r, err, "backend: \"%s\" cannot start: backend %s already runs in this "
			    "process (one backend per process lifetime); attach with \"backend\":\"%s\" "
			    "or without a backend", want ? want : "", b.name ? b.name : "?",
			    b.name ? b.name : "?");
	}
	if (err)
		return mri_req_fail(r, err, "cannot start backend %s: %s", want ? want : "(default)",
			    ameba_strerror(err));
	if (js && (err = d->ops->sampled(d->ctx, &sc))) {
		d->ops->detach(d->ctx);
		return mri_req_fail(r, err, "sampled: cannot start sampled mode: %s%s",
			    ameba_strerror(err), err == AMEBA_EBUSY ? " (another session started it)" :
			    err == AMEBA_ENOTSUP ? " (the target writes an exact oracle, AMEBA_ORACLE)" : "");
	}
	d->attached = 1;
	d->backend = chosen;
	mri_disp_backend_rec(d, &b);
	if (mri_json_add(r->result, "backend", cJSON_CreateString(chosen ? chosen : "")) ||
	    mri_json_add(r->result, "metrics", metric_names(&b)) ||
	    mri_json_add(r->result, "mode", cJSON_CreateString(js ? "sampled" : "exact")))
		return mri_req_nomem(r);
	return 0;
}

/* Stops what the session runs on the monitor (experiment, samples). */
void mri_disp_quiesce(struct mri_disp *d)
{
	if (d->exp_on) {
		d->ops->cond_arm(d->ctx, NULL, 0, NULL);
		mri_disp_forget_experiment(d);
	}
	if (d->samples_on) {
		d->ops->sample_arm(d->ctx, 0, 0, 0, 0);
		d->samples_on = 0;
	}
}

static int op_detach(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", NULL };
	struct mri_disp *d = r->d;

	if (mri_req_fields(r, r->msg, "detach", fields))
		return r->code;
	if (!d->attached)
		return mri_req_fail(r, AMEBA_EINVAL, "not attached");
	mri_disp_quiesce(d);
	d->ops->detach(d->ctx);
	d->attached = 0;
	d->backend = NULL;
	return 0;
}

/* ---- ops: samples ---- */

static int op_samples_start(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", "metric", "period", "random", "seed",
					      NULL };
	struct mri_disp *d = r->d;
	const cJSON *jm = mri_json_get(r->msg, "metric"), *jp = mri_json_get(r->msg, "period");
	struct mri_backend_rec b;
	uint64_t period, seed;
	const char *mname;
	int randomized, m, err;
	char b2[80];

	if (mri_req_fields(r, r->msg, "samples_start", fields) ||
	    mri_req_opt_bool(r, r->msg, "random", 0, &randomized) ||
	    mri_req_opt_uint(r, r->msg, "seed", 0, MAX_INTEGER, 1, &seed))
		return r->code;
	if (!jm)
		return mri_req_fail(r, AMEBA_EINVAL, "metric is missing (e.g. \"l1d_miss\")");
	if (mri_req_str(r, jm, "metric", 64, &mname))
		return r->code;
	if (!jp)
		return mri_req_fail(r, AMEBA_EINVAL, "period is missing: deliver every period-th event "
			    "(a prime such as 10007 avoids aliasing with loop strides)");
	if (mri_req_uint(r, jp, "period", 1, 1ull << 40, &period))
		return r->code;
	if (!d->attached)
		return mri_req_fail(r, AMEBA_EINVAL, "not attached: send attach before samples_start");
	m = ameba_metric_by_name(mname);
	if (m < 0)
		return mri_req_fail(r, AMEBA_EINVAL, "metric: unknown metric %s; see `ameba list metrics`",
			    mri_json_show(jm, b2, sizeof(b2)));
	mri_disp_backend_rec(d, &b);
	if (!mri_backend_has(&b, m))
		return mri_req_fail(r, AMEBA_ENOTSUP, "metric: backend %s does not provide %s",
			    b.name ? b.name : "?", mname);
	err = d->ops->sample_arm(d->ctx, m, period, randomized, seed);
	if (err)
		return mri_req_fail(r, err, "the monitor refused the sample stream: %s", ameba_strerror(err));
	d->samples_on = 1;
	d->sample_metric = m;
	return 0;
}

#define SAMPLE_NAME_BUDGET (256u << 10)	/* bytes of site names in one samples reply */

/*
 * Names site buf[i].site_id in sites ([id, label] pairs) unless an earlier
 * sample of the reply did: the labels of the sites a reply's samples hit,
 * each once (a reply of 4,096 samples holds a few distinct sites). Sent with
 * every reply rather than once per session because a site's label can
 * deepen when new sites appear (docs/mri.md, bins). *budget bounds the
 * bytes of names in one reply (4,096 samples on distinct sites with long
 * names would pass the message limit); a site left unnamed keeps its id,
 * and a later reply names it. 0 or AMEBA_ENOMEM.
 */
static int site_name_once(struct mri_disp *d, cJSON *sites, const struct mri_sample *buf,
			  uint32_t i, size_t *budget)
{
	char name[MRI_NAME_MAX];
	size_t len;
	cJSON *pair;

	if (!buf[i].site_id || !d->ops->site_label)
		return 0;
	for (uint32_t j = 0; j < i; j++)
		if (buf[j].site_id == buf[i].site_id)
			return 0;
	if (d->ops->site_label(d->ctx, buf[i].site_id, name))
		return 0;
	len = strlen(name) + 24;		/* with the id and the JSON around it */
	if (len > *budget)
		return 0;
	*budget -= len;
	pair = cJSON_CreateArray();
	if (mri_json_push(sites, pair) || mri_json_push(pair, mri_json_u64(buf[i].site_id)) ||
	    mri_json_push(pair, cJSON_CreateString(name)))
		return AMEBA_ENOMEM;
	return 0;
}

static int op_samples_read(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", "max", NULL };
	struct mri_disp *d = r->d;
	struct mri_sample *buf;
	uint64_t max, lost = 0;
	uint32_t n;
	cJSON *arr, *sites;
	size_t name_budget = SAMPLE_NAME_BUDGET;

	if (mri_req_fields(r, r->msg, "samples_read", fields) ||
	    mri_req_opt_uint(r, r->msg, "max", 1, MRI_MAX_SAMPLES, 1024, &max))
		return r->code;
	if (!d->samples_on)
		return mri_req_fail(r, AMEBA_ENOENT, "no sample stream is running; send samples_start first");
	arr = cJSON_CreateArray();
	if (mri_json_add(r->result, "samples", arr))
		return mri_req_nomem(r);
	buf = calloc(max, sizeof(*buf));
	if (!buf)
		return mri_req_nomem(r);
	n = d->ops->sample_drain(d->ctx, buf, (uint32_t)max, &lost);
	sites = cJSON_CreateArray();
	if (mri_json_add(r->result, "sites", sites)) {
		free(buf);
		return mri_req_nomem(r);
	}
	for (uint32_t i = 0; i < n && i < max; i++) {
		cJSON *s = cJSON_CreateArray();

		if (mri_json_push(arr, s) || mri_json_push(s, mri_json_hex(buf[i].addr)) ||
		    mri_json_push(s, mri_json_hex(buf[i].pc)) ||
		    mri_json_push(s, mri_json_u64(buf[i].thread_id)) ||
		    mri_json_push(s, mri_json_u64(buf[i].weight)) ||
		    mri_json_push(s, mri_json_u64(buf[i].site_id)) ||
		    site_name_once(d, sites, buf, i, &name_budget)) {
			free(buf);
			return mri_req_nomem(r);
		}
	}
	free(buf);
	if (mri_json_add(r->result, "metric",
			 cJSON_CreateString(ameba_metric_info(d->sample_metric)->name)) ||
	    mri_json_add(r->result, "lost", mri_json_u64(lost)))
		return mri_req_nomem(r);
	return 0;
}

static int op_samples_stop(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", NULL };
	struct mri_disp *d = r->d;

	if (mri_req_fields(r, r->msg, "samples_stop", fields))
		return r->code;
	if (!d->samples_on)
		return mri_req_fail(r, AMEBA_ENOENT, "no sample stream is running");
	d->ops->sample_arm(d->ctx, 0, 0, 0, 0);
	d->samples_on = 0;
	return 0;
}

/* ---- ops: events ---- */

/* Takes the current threads as known: events are about what happens next. */
static int thread_snapshot(struct mri_disp *d)
{
	uint32_t nr = d->ops->nr_threads(d->ctx);

	if (nr > d->thr_cap) {
		uint32_t cap = nr + 1024;
		uint8_t *g = realloc(d->thr_gone, cap);

		if (!g)
			return AMEBA_ENOMEM;
		memset(g + d->thr_cap, 0, cap - d->thr_cap);
		d->thr_gone = g;
		d->thr_cap = cap;
	}
	for (uint32_t id = 0; id < nr; id++) {
		struct mri_thread_info t;

		if (d->ops->thread(d->ctx, id, &t) == 0) {
			d->thr_gone[id] = (uint8_t)(t.exited != 0);
		} else {
			nr = id;	/* not registered yet: announce it when it is */
			break;
		}
	}
	d->thr_seen = nr;
	d->thr_scan = 0;
	d->thr_scanned = 0;
	d->next_thr_ns = d->ops->now_ns(d->ctx) + THREAD_POLL_NS;
	return 0;
}

static int op_subscribe(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", "events", NULL };
	struct mri_disp *d = r->d;
	const cJSON *je = mri_json_get(r->msg, "events"), *e;
	unsigned subs = 0;
	uint32_t n, k = 0;
	cJSON *arr;

	if (mri_req_fields(r, r->msg, "subscribe", fields))
		return r->code;
	if (!je)
		return mri_req_fail(r, AMEBA_EINVAL, "events is missing: a list such as [\"threads\"]");
	if (mri_req_array(r, je, "events", 8, &n))
		return r->code;
	cJSON_ArrayForEach(e, je) {
		char path[32], b[80];
		const char *s;

		snprintf(path, sizeof(path), "events[%u]", k++);
		if (mri_req_str(r, e, path, 16, &s))
			return r->code;
		if (!strcmp(s, "threads"))
			subs |= MRI_SUB_THREADS;
		else if (!strcmp(s, "regions"))
			subs |= MRI_SUB_REGIONS;
		else
			return mri_req_fail(r, AMEBA_EINVAL, "%s: unknown event %s (known: threads, regions; "
				    "interval and exit events are always sent)", path,
				    mri_json_show(e, b, sizeof(b)));
	}
	if ((subs & MRI_SUB_THREADS) && !(d->subs & MRI_SUB_THREADS) && thread_snapshot(d))
		return mri_req_nomem(r);
	d->subs = subs;
	arr = cJSON_CreateArray();
	if (mri_json_add(r->result, "events", arr) ||
	    ((subs & MRI_SUB_THREADS) && mri_json_push(arr, cJSON_CreateString("threads"))) ||
	    ((subs & MRI_SUB_REGIONS) && mri_json_push(arr, cJSON_CreateString("regions"))))
		return mri_req_nomem(r);
	return 0;
}

/* ---- ops: mark ---- */

/*
 * An oracle snapshot now (docs/mri.md, `mark`): the monitor writes it when
 * the target runs with AMEBA_ORACLE; without, the reply says so (a tool
 * asks for marks whether or not an oracle is kept: it is not an error).
 */
static int op_mark(struct mri_req *r)
{
	static const char *const fields[] = { "v", "id", "op", "label", NULL };
	struct mri_disp *d = r->d;
	const cJSON *jl = mri_json_get(r->msg, "label");
	const char *label;
	char path[4200], why[4400];
	int err;

	if (mri_req_fields(r, r->msg, "mark", fields))
		return r->code;
	if (!jl)
		return mri_req_fail(r, AMEBA_EINVAL, "label is missing: name the mark, e.g. "
				    "\"label\":\"window-1\" (the file is the oracle's name + .mark-LABEL)");
	if (mri_disp_mark_label(r, jl, "label", &label))
		return r->code;
	why[0] = '\0';
	path[0] = '\0';
	err = d->ops->mark ? d->ops->mark(d->ctx, label, path, sizeof(path), why, sizeof(why)) :
	      AMEBA_ENOENT;
	if (!d->ops->mark)
		snprintf(why, sizeof(why), "this monitor writes no oracle marks");
	if (err && err != AMEBA_ENOENT)
		return mri_req_fail(r, err, "mark %s: %s", label, why[0] ? why : ameba_strerror(err));
	return mri_disp_mark_result(r, r->result, label, err, path, why);
}

const struct mri_op_entry mri_disp_ops[] = {
	{ "hello", op_hello },
	{ "sampled", op_sampled },
	{ "ping", op_ping },
	{ "process", op_process },
	{ "threads", op_threads },
	{ "objects", op_objects },
	{ "bins", op_bins },
	{ "regions", op_regions },
	{ "metrics", op_metrics },
	{ "backend", op_backend },
	{ "attach", op_attach },
	{ "detach", op_detach },
	{ "start", mri_disp_op_start },
	{ "read", mri_disp_op_read },
	{ "stop", mri_disp_op_stop },
	{ "samples_start", op_samples_start },
	{ "samples_read", op_samples_read },
	{ "samples_stop", op_samples_stop },
	{ "subscribe", op_subscribe },
	{ "mark", op_mark },
	{ "bye", op_bye },
};

const size_t mri_disp_nr_ops = sizeof(mri_disp_ops) / sizeof(mri_disp_ops[0]);

static cJSON *op_list(void)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && i < mri_disp_nr_ops; i++)
		if (mri_json_push(a, cJSON_CreateString(mri_disp_ops[i].name))) {
			cJSON_Delete(a);
			return NULL;
		}
	return a;
}

