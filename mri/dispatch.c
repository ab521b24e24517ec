/*
 * dispatch.c - the MRI dispatcher's session: the envelope of a request (v,
 * id, op), replies and error replies, field validation, readings of the
 * experiment, and the events a session produces. The ops themselves are in
 * dispatch_ops.c; docs/mri.md is the contract (every op, field and error is
 * documented there).
 *
 * Notes:
 *  - Every field is validated at this boundary, and an error names the
 *    field with its path ("counters[1].ranges[0][1]"), the bad value and, where
 *    there is one, the fix. The ops then trust their arguments.
 *  - Unknown fields are refused: a misspelt "intervall_ms" silently ignored
 *    would run a different experiment than the one asked for.
 *  - A session moves through hello -> (attach -> (start -> read* -> stop)*
 *    -> detach)* -> bye. A request out of that order gets an error reply and
 *    the session goes on; nothing a client sends ends a session except bye
 *    or closing the connection.
 *  - Replies never exceed MRI_MSG_MAX: listings stop growing at
 *    MRI_REPLY_BUDGET bytes and say where to continue, and a reply that
 *    still came out too large is replaced by an error.
 *  - Counter values are written as exact decimal integers (cJSON raw
 *    values): a double would round counts above 2^53.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ameba/ameba.h"
#include "dispatch_int.h"

/* ---- small helpers ---- */

static const char *const error_names[AMEBA_E_NR] = {
	"OK", "ENOMEM", "EINVAL", "ENOENT", "EIO", "EPROTO", "ENOTSUP", "EPERM",
	"EABI", "EBUSY", "EEXITED", "ETIMEDOUT", "ERANGE", "ENOPMU",
};

const char *mri_error_name(int code)
{
	if (code > 0 || -code >= AMEBA_E_NR)
		return "EUNKNOWN";
	return error_names[-code];
}

static const char *const kind_names[MRI_OBJ_NR_KINDS] = {
	"global", "heap", "mmap", "stack", "tls", "other",
};

const char *mri_obj_kind_name(int kind)
{
	return kind >= 0 && kind < MRI_OBJ_NR_KINDS ? kind_names[kind] : NULL;
}

cJSON *mri_json_u64(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return cJSON_CreateRaw(buf);
}

cJSON *mri_json_hex(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return cJSON_CreateString(buf);
}

char *mri_put_u64(char *p, uint64_t v)
{
	char t[20];
	int n = 0;

	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = t[--n];
	return p;
}

/*
 * A JSON array of integers as one raw node, written here: v[0..nr), or
 * with sparse the pairs i, v[i] of the non-zero values only. One node and
 * one string instead of a node and a formatted string per number: a read
 * of every metric on 150 objects sends some 20,000 numbers.
 */
static cJSON *u64_list(const uint64_t *v, uint32_t nr, int sparse)
{
	char *buf = malloc((size_t)nr * (sparse ? 42 : 21) + 3), *p = buf;
	cJSON *a;

	if (!buf)
		return NULL;
	*p++ = '[';
	for (uint32_t i = 0; i < nr; i++) {
		if (sparse && !v[i])
			continue;
		if (p > buf + 1)
			*p++ = ',';
		if (sparse) {
			p = mri_put_u64(p, i);
			*p++ = ',';
		}
		p = mri_put_u64(p, v[i]);
	}
	*p++ = ']';
	*p = '\0';
	a = cJSON_CreateRaw(buf);
	free(buf);
	return a;
}

cJSON *mri_json_u64_array(const uint64_t *v, uint32_t nr)
{
	return u64_list(v, nr, 0);
}

/* Bytes a string takes in JSON output, quotes included (upper bound). */
size_t mri_json_str_cost(const char *s)
{
	size_t n = 2;

	for (; s && *s; s++)
		n += (unsigned char)*s < 0x20 || *s == '"' || *s == '\\' ? 6 : 1;
	return n;
}

/* A short, printable rendering of a JSON value for error messages. */
const char *mri_json_show(const cJSON *j, char *buf, size_t len)
{
	size_t o = 0;

	switch (mri_json_type(j)) {
	case cJSON_Invalid:
		snprintf(buf, len, "nothing");
		break;
	case cJSON_False:
		snprintf(buf, len, "false");
		break;
	case cJSON_True:
		snprintf(buf, len, "true");
		break;
	case cJSON_NULL:
		snprintf(buf, len, "null");
		break;
	case cJSON_Number:
		snprintf(buf, len, "%.17g", j->valuedouble);
		break;
	case cJSON_String:
		buf[o++] = '"';
		for (const char *s = j->valuestring; *s && o + 6 < len; s++) {
			unsigned char c = (unsigned char)*s;

			if (s - j->valuestring >= 48) {
				o += (size_t)snprintf(buf + o, len - o, "...");
				break;
			}
			if (c < 0x20 || c == 0x7f || c == '"' || c == '\\')
				o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
			else
				buf[o++] = (char)c;
		}
		snprintf(buf + o, len - o, "\"");
		break;
	case cJSON_Array:
		snprintf(buf, len, "an array");
		break;
	case cJSON_Object:
		snprintf(buf, len, "an object");
		break;
	default:
		snprintf(buf, len, "a raw value");
		break;
	}
	return buf;
}

/* Records the request's failure (the first one wins) and returns code. */
int mri_req_fail(struct mri_req *r, int code, const char *fmt, ...)
{
	va_list ap;

	if (r->code)
		return r->code;
	r->code = code;
	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	return code;
}

int mri_req_nomem(struct mri_req *r)
{
	return mri_req_fail(r, AMEBA_ENOMEM, "out of memory in the target while building the reply");
}

/* ---- field validation ---- */

/* Refuses keys of obj not in allowed[] (NULL-terminated); where names obj. */
int mri_req_fields(struct mri_req *r, const cJSON *obj, const char *where, const char *const *allowed)
{
	const cJSON *f;

	cJSON_ArrayForEach(f, obj) {
		int ok = 0;
		char list[256];
		size_t o = 0;

		for (const char *const *a = allowed; *a; a++)
			if (f->string && !strcmp(f->string, *a))
				ok = 1;
		if (ok)
			continue;
		list[0] = '\0';
		for (const char *const *a = allowed; *a && o < sizeof(list); a++)
			o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", o ? ", " : "", *a);
		return mri_req_fail(r, AMEBA_EINVAL, "%s: unknown field \"%.64s\" (known: %s)", where,
			    f->string ? f->string : "", list);
	}
	return 0;
}

/* An integer in [lo, hi] (hi <= 2^53). */
int mri_req_uint(struct mri_req *r, const cJSON *j, const char *name, uint64_t lo, uint64_t hi,
		     uint64_t *out)
{
	char b[80];
	double v;

	if (mri_json_type(j) != cJSON_Number)
		return mri_req_fail(r, AMEBA_EINVAL, "%s: %s is not a number; want an integer in %" PRIu64
			    "..%" PRIu64, name, mri_json_show(j, b, sizeof(b)), lo, hi);
	v = j->valuedouble;
	/* v == v rejects NaN, which the parser cannot produce but a fake could. */
	if (!(v == v) || v < (double)lo || v > (double)hi || v != (double)(uint64_t)v)
		return mri_req_fail(r, AMEBA_ERANGE, "%s: %s is not an integer in %" PRIu64 "..%" PRIu64,
			    name, mri_json_show(j, b, sizeof(b)), lo, hi);
	*out = (uint64_t)v;
	return 0;
}

/* An optional integer field of obj: def when absent. */
int mri_req_opt_uint(struct mri_req *r, const cJSON *obj, const char *key, uint64_t lo, uint64_t hi,
		    uint64_t def, uint64_t *out)
{
	const cJSON *j = mri_json_get(obj, key);

	if (!j) {
		*out = def;
		return 0;
	}
	return mri_req_uint(r, j, key, lo, hi, out);
}

int mri_req_opt_bool(struct mri_req *r, const cJSON *obj, const char *key, int def, int *out)
{
	const cJSON *j = mri_json_get(obj, key);
	char b[80];

	if (!j) {
		*out = def;
		return 0;
	}
	if (mri_json_type(j) != cJSON_True && mri_json_type(j) != cJSON_False)
		return mri_req_fail(r, AMEBA_EINVAL, "%s: %s is not true or false", key, mri_json_show(j, b, sizeof(b)));
	*out = mri_json_type(j) == cJSON_True;
	return 0;
}

/* A string of at most maxlen bytes without NUL. */
int mri_req_str(struct mri_req *r, const cJSON *j, const char *name, size_t maxlen, const char **out)
{
	char b[80];

	if (mri_json_type(j) != cJSON_String || !j->valuestring)
		return mri_req_fail(r, AMEBA_EINVAL, "%s: %s is not a string", name, mri_json_show(j, b, sizeof(b)));
	if (strlen(j->valuestring) > maxlen)
		return mri_req_fail(r, AMEBA_ERANGE, "%s: %s is longer than %zu bytes", name,
			    mri_json_show(j, b, sizeof(b)), maxlen);
	*out = j->valuestring;
	return 0;
}

/*
 * An address: a string "0x" followed by 1 to 16 hex digits, or an integer
 * number up to 2^53 (JSON numbers are doubles; larger addresses need the
 * string form).
 */
int mri_req_addr(struct mri_req *r, const cJSON *j, const char *name, uint64_t *out)
{
	char b[80];

	if (mri_json_type(j) == cJSON_Number)
		return mri_req_uint(r, j, name, 0, MAX_INTEGER, out);
	if (mri_json_type(j) == cJSON_String && j->valuestring) {
		const char *s = j->valuestring;
		uint64_t v = 0;
		size_t n = 0;

		if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
			for (s += 2; *s && n <= 16; s++, n++) {
				int c = *s, d;

				if (c >= '0' && c <= '9')
					d = c - '0';
				else if (c >= 'a' && c <= 'f')
					d = c - 'a' + 10;
				else if (c >= 'A' && c <= 'F')
					d = c - 'A' + 10;
				else
					break;
				v = v << 4 | (uint64_t)d;
			}
			if (!*s && n >= 1 && n <= 16) {
				*out = v;
				return 0;
			}
		}
	}
	return mri_req_fail(r, AMEBA_EINVAL, "%s: %s is not an address; use a hex string such as "
		    "\"0x7f3a2c001000\"", name, mri_json_show(j, b, sizeof(b)));
}

/* An array of at most max elements. */
int mri_req_array(struct mri_req *r, const cJSON *j, const char *name, uint32_t max, uint32_t *nr)
{
	char b[80];
	uint32_t n = 0;
	const cJSON *e;

	if (mri_json_type(j) != cJSON_Array)
		return mri_req_fail(r, AMEBA_EINVAL, "%s: %s is not an array", name, mri_json_show(j, b, sizeof(b)));
	cJSON_ArrayForEach(e, j) {
		if (++n > max)
			return mri_req_fail(r, AMEBA_ERANGE, "%s: more than %u elements", name, max);
	}
	*nr = n;
	return 0;
}

/* ---- readings ---- */

/* [index, value, ...] of the non-zero entries of v[nr]. */
static cJSON *pairs_array(const uint64_t *v, uint32_t nr)
{
	return u64_list(v, nr, 1);
}

struct thread_rows {
	cJSON *arr;
	int err;
	int sparse;		/* the client reads "sparse" rows */
	uint64_t bytes;		/* estimated size of the rows so far */
	uint32_t nr_threads;	/* threads with a row */
};

/*
 * One thread's row: "values" (all counters), or with sparse, when that is
 * shorter, "sparse": [index, value, ...] of the non-zero values only (a
 * thread touches a few objects of the many counted). The rows stop at
 * MRI_REPLY_BUDGET bytes (estimated at 21 per number): the read fails with
 * ERANGE before the target builds a reply it could not send.
 */
static void add_thread_row(uint32_t thread_id, const uint64_t *vals, const uint64_t *before,
			   uint32_t nr, void *arg)
{
	struct thread_rows *tr = arg;
	uint32_t nr_nonzero = 0, nr_before = 0;
	cJSON *row;

	if (tr->err)
		return;
	for (uint32_t i = 0; i < nr; i++) {
		nr_nonzero += vals[i] != 0;
		nr_before += before && before[i] != 0;
	}
	tr->nr_threads++;
	tr->bytes += 24 + 21ull * (tr->sparse && 2 * nr_nonzero < nr ? 2 * nr_nonzero : nr) +
		     42ull * nr_before;
	if (tr->bytes > MRI_REPLY_BUDGET) {
		tr->err = AMEBA_ERANGE;
		return;
	}
	row = cJSON_CreateObject();
	if (mri_json_push(tr->arr, row) || mri_json_add(row, "id", mri_json_u64(thread_id)) ||
	    (nr_before && mri_json_add(row, "before", pairs_array(before, nr)))) {
		tr->err = AMEBA_ENOMEM;
		return;
	}
	if (!tr->sparse || 2 * nr_nonzero >= nr) {
		if (mri_json_add(row, "values", mri_json_u64_array(vals, nr)))
			tr->err = AMEBA_ENOMEM;
		return;
	}
	if (mri_json_add(row, "sparse", pairs_array(vals, nr)))
		tr->err = AMEBA_ENOMEM;
}

static cJSON *deltas_array(const struct mri_disp *d)
{
	uint64_t *dv = malloc(((size_t)d->exp_nr + 1) * sizeof(*dv));
	cJSON *a;

	if (!dv)
		return NULL;
	/* Values only grow while a set stays armed; clamp anyway so that a
	 * misbehaving monitor cannot produce a 2^64 - k delta. */
	for (uint32_t i = 0; i < d->exp_nr; i++)
		dv[i] = d->exp_cur[i] >= d->exp_prev[i] ? d->exp_cur[i] - d->exp_prev[i] : 0;
	a = u64_list(dv, d->exp_nr, 0);
	free(dv);
	return a;
}

/* Half-widths as whole counts, -1 where unknown. */
static cJSON *ci_list(const double *v, uint32_t nr)
{
	cJSON *a = cJSON_CreateArray();

	for (uint32_t i = 0; a && i < nr; i++)
		if (mri_json_push(a, cJSON_CreateNumber(v[i] < 0 ? -1 : (double)(uint64_t)(v[i] + 0.5)))) {
			cJSON_Delete(a);
			return NULL;
		}
	return a;
}

/* A sampled reading's members (docs/mri.md, "read"): 0, or -1 when out of
 * memory. Nothing for exact counts. */
static int add_sampled(struct mri_disp *d, cJSON *o)
{
	double *ci = calloc(2 * (size_t)d->exp_nr + 1, sizeof(*ci));
	struct mri_sampled_rec rec = { 0 };
	cJSON *sm;
	int err = 0;

	if (!ci)
		return -1;
	if (d->ops->cond_info(d->ctx, d->exp_id, ci, ci + d->exp_nr, d->exp_nr, &rec) == 0)
		err = mri_json_add(o, "mode", cJSON_CreateString("sampled")) ||
		      mri_json_add(o, "ci", ci_list(ci, d->exp_nr)) ||
		      mri_json_add(o, "ci_deltas", ci_list(ci + d->exp_nr, d->exp_nr)) ||
		      mri_json_add(o, "sampled", (sm = cJSON_CreateObject())) ||
		      mri_json_add(sm, "bursts", mri_json_u64(rec.bursts)) ||
		      mri_json_add(sm, "bursts_read", mri_json_u64(rec.bursts_read)) ||
		      mri_json_add(sm, "fraction", cJSON_CreateNumber(rec.fraction)) ||
		      mri_json_add(sm, "accesses", mri_json_u64(rec.accesses)) ? -1 : 0;
	free(ci);
	return err;
}

/*
 * Reads the running experiment into a reading object: values since the
 * start, deltas since the previous reading. per_thread adds the rows.
 */
cJSON *mri_disp_read_now(struct mri_disp *d, int per_thread, int *err)
{
	return mri_disp_read_swap(d, per_thread, NULL, 0, NULL, err);
}

/*
 * mri_disp_read_now, or with c (nr counters) the reading at the instant
 * the monitor arms c in place of the running experiment (cond_swap); *gen
 * the new experiment's. On failure the old experiment still runs.
 */
cJSON *mri_disp_read_swap(struct mri_disp *d, int per_thread, const struct mri_cond *c,
			  uint32_t nr, uint64_t *gen, int *err)
{
	uint64_t now = d->ops->now_ns(d->ctx), *before = calloc(d->exp_nr + 1, sizeof(*before));
	struct thread_rows tr = { .sparse = per_thread > 1 };
	cJSON *o = cJSON_CreateObject();
	int any_before = 0;

	*err = AMEBA_ENOMEM;
	if (!o || !before) {
		free(before);
		cJSON_Delete(o);
		return NULL;
	}
	tr.bytes = 42ull * d->exp_nr;	/* the values and deltas arrays */
	if (per_thread && !(tr.arr = cJSON_CreateArray()))
		goto fail;
	*err = c ? d->ops->cond_swap(d->ctx, c, nr, gen, d->exp_id, d->exp_cur, before, d->exp_nr,
				     per_thread ? add_thread_row : NULL, &tr) :
		   d->ops->cond_read(d->ctx, d->exp_id, d->exp_cur, before, d->exp_nr,
				     per_thread ? add_thread_row : NULL, &tr);
	if (*err)
		goto fail;
	if (tr.err && c) {
		/* swapped already: the old experiment's rows did not fit (or
		 * there was no memory for them); its totals still do */
		cJSON_Delete(tr.arr);
		tr.arr = NULL;
		per_thread = 0;
	} else if (tr.err) {
		*err = tr.err;
		goto fail;
	}
	*err = AMEBA_ENOMEM;
	if (mri_json_add(o, "experiment", mri_json_u64(d->exp_id)) ||
	    mri_json_add(o, "seq", mri_json_u64(d->exp_seq + 1)) || mri_json_add(o, "t_ns", mri_json_u64(now)) ||
	    mri_json_add(o, "dt_ns", mri_json_u64(now >= d->exp_prev_ns ? now - d->exp_prev_ns : 0)) ||
	    mri_json_add(o, "values", mri_json_u64_array(d->exp_cur, d->exp_nr)) ||
	    mri_json_add(o, "deltas", deltas_array(d)))
		goto fail;
	for (uint32_t i = 0; i < d->exp_nr; i++)
		any_before |= before[i] != 0;
	if (any_before && mri_json_add(o, "before", pairs_array(before, d->exp_nr)))
		goto fail;
	if (d->ops->cond_info && add_sampled(d, o))
		goto fail;
	if (per_thread) {
		cJSON *a = tr.arr;

		tr.arr = NULL;
		if (mri_json_add(o, "threads", a))
			goto fail;
	}
	/* Only a reading that reached the reply moves the baseline. */
	memcpy(d->exp_prev, d->exp_cur, d->exp_nr * sizeof(*d->exp_prev));
	d->exp_prev_ns = now;
	d->exp_seq++;
	free(before);
	*err = 0;
	return o;
fail:
	free(before);
	cJSON_Delete(tr.arr);
	cJSON_Delete(o);
	return NULL;
}

void mri_disp_forget_experiment(struct mri_disp *d)
{
	d->exp_on = 0;
	d->exp_nr = 0;
	free(d->exp_prev);
	free(d->exp_cur);
	d->exp_prev = d->exp_cur = NULL;
	d->next_tick_ns = UINT64_MAX;
}

/* ---- the request loop ---- */

struct mri_disp *mri_disp_new(const struct mri_monitor_ops *ops, void *ctx, int32_t peer_pid)
{
	struct mri_disp *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->ops = ops;
	d->ctx = ctx;
	d->peer_pid = peer_pid;
	d->next_tick_ns = UINT64_MAX;
	return d;
}

void mri_disp_end(struct mri_disp *d)
{
	if (!d)
		return;
	mri_disp_quiesce(d);
	if (d->attached) {
		d->ops->detach(d->ctx);
		d->attached = 0;
	}
}

void mri_disp_free(struct mri_disp *d)
{
	if (!d)
		return;
	free(d->exp_prev);
	free(d->exp_cur);
	free(d->thr_gone);
	free(d);
}

/* Prints root; NULL when out of memory. */
static char *print(cJSON *root, size_t *len)
{
	char *txt = cJSON_PrintUnformatted(root), *out;
	size_t n;

	if (!txt)
		return NULL;
	/* cJSON's buffer comes from cJSON's allocator: hand the caller one of
	 * ours, so that free() is always right. */
	n = strlen(txt);
	out = malloc(n + 1);
	if (out)
		memcpy(out, txt, n + 1);
	cJSON_free(txt);
	if (out && len)
		*len = n;
	return out;
}

/* {"v":1,"id":ID|null,"ok":false,"error":{...}}; extra (optional, consumed)
 * becomes error.supported. */
static cJSON *error_reply(int has_id, uint64_t id, int code, const char *msg, cJSON *extra)
{
	cJSON *err = cJSON_CreateObject(), *root;

	if (mri_json_add(err, "code", cJSON_CreateNumber(code)) ||
	    mri_json_add(err, "name", cJSON_CreateString(mri_error_name(code))) ||
	    mri_json_add(err, "message", cJSON_CreateString(msg))) {
		cJSON_Delete(err);
		cJSON_Delete(extra);
		return NULL;
	}
	if (extra && mri_json_add(err, "supported", extra)) {	/* consumes extra */
		cJSON_Delete(err);
		return NULL;
	}
	root = cJSON_CreateObject();
	if (mri_json_add(root, "v", cJSON_CreateNumber(MRI_PROTOCOL_VERSION)) ||
	    mri_json_add(root, "id", has_id ? mri_json_u64(id) : cJSON_CreateNull()) ||
	    mri_json_add(root, "ok", cJSON_CreateBool(0))) {
		cJSON_Delete(err);
		cJSON_Delete(root);
		return NULL;
	}
	if (mri_json_add(root, "error", err)) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

char *mri_disp_error_text(int code, const char *msg, size_t *len)
{
	cJSON *root = error_reply(0, 0, code, msg, NULL);
	char *txt = root ? print(root, len) : NULL;

	cJSON_Delete(root);
	return txt;
}

/* Checks the envelope (v, id, op); returns the op or NULL after mri_req_fail(). */
static const struct mri_op_entry *envelope(struct mri_req *r, int *has_id, uint64_t *id)
{
	const cJSON *jv = mri_json_get(r->msg, "v"), *ji = mri_json_get(r->msg, "id");
	const cJSON *jo = mri_json_get(r->msg, "op");
	char b[80];
	uint64_t v;
	const char *op;

	if (ji && mri_req_uint(r, ji, "id", 0, MAX_INTEGER, id) == 0)
		*has_id = 1;
	if (r->code)
		return NULL;
	if (!jv) {
		mri_req_fail(r, AMEBA_EPROTO, "v is missing: every message carries \"v\":%d",
		     MRI_PROTOCOL_VERSION);
		return NULL;
	}
	if (mri_json_type(jv) != cJSON_Number || jv->valuedouble != MRI_PROTOCOL_VERSION) {
		if (mri_json_type(jv) == cJSON_Number && mri_req_uint(r, jv, "v", 0, MAX_INTEGER, &v) == 0) {
			r->err_extra = cJSON_CreateArray();
			mri_json_push(r->err_extra, cJSON_CreateNumber(MRI_PROTOCOL_VERSION));
			mri_req_fail(r, AMEBA_EABI, "v: unsupported protocol version %" PRIu64 "; this server "
			     "speaks version %d", v, MRI_PROTOCOL_VERSION);
		} else {
			r->code = 0;
			mri_req_fail(r, AMEBA_EPROTO, "v: %s is not a protocol version; send \"v\":%d",
			     mri_json_show(jv, b, sizeof(b)), MRI_PROTOCOL_VERSION);
		}
		return NULL;
	}
	if (!*has_id) {
		mri_req_fail(r, AMEBA_EPROTO, "id is missing: every request carries an integer \"id\" that "
		     "the reply echoes");
		return NULL;
	}
	if (!jo) {
		mri_req_fail(r, AMEBA_EPROTO, "op is missing: say what to do, e.g. \"op\":\"hello\"");
		return NULL;
	}
	if (mri_req_str(r, jo, "op", 32, &op))
		return NULL;
	r->op = op;
	for (size_t i = 0; i < mri_disp_nr_ops; i++)
		if (!strcmp(mri_disp_ops[i].name, op))
			return &mri_disp_ops[i];
	mri_req_fail(r, AMEBA_EINVAL, "op: unknown op %s (known: hello, ping, process, threads, objects, "
	     "bins, regions, metrics, backend, attach, detach, start, read, stop, samples_start, "
	     "samples_read, samples_stop, subscribe, mark, bye)", mri_json_show(jo, b, sizeof(b)));
	return NULL;
}

int mri_disp_handle(struct mri_disp *d, const char *req, size_t len, char **reply, size_t *reply_len)
{
	struct mri_req r = { .d = d };
	const struct mri_op_entry *op = NULL;
	cJSON *root = NULL, *parsed = NULL;
	const char *end = NULL;
	uint64_t id = 0;
	int has_id = 0;

	*reply = NULL;
	*reply_len = 0;
	if (len == 0) {
		mri_req_fail(&r, AMEBA_EPROTO, "empty message: a request is a JSON object");
		goto reply;
	}
	parsed = cJSON_ParseWithLengthOpts(req, len, &end, 0);
	if (!parsed) {
		size_t at = end && end >= req && end <= req + len ? (size_t)(end - req) : 0;

		mri_req_fail(&r, AMEBA_EPROTO, "not JSON: syntax error at byte %zu of %zu", at, len);
		goto reply;
	}
	while (end && end < req + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
		end++;
	if (end && end < req + len) {
		mri_req_fail(&r, AMEBA_EPROTO, "trailing bytes after the JSON value at byte %zu of %zu: send one "
		     "object per message", (size_t)(end - req), len);
		goto reply;
	}
	if (mri_json_type(parsed) != cJSON_Object) {
		mri_req_fail(&r, AMEBA_EPROTO, "a request is a JSON object such as "
		     "{\"v\":1,\"id\":1,\"op\":\"hello\"}");
		goto reply;
	}
	r.msg = parsed;
	op = envelope(&r, &has_id, &id);
	if (!op)
		goto reply;
	if (d->exited) {
		mri_req_fail(&r, AMEBA_EEXITED, "the target process is exiting; no request is served any more");
		goto reply;
	}
	if (!d->hello && strcmp(op->name, "hello") && strcmp(op->name, "bye")) {
		mri_req_fail(&r, AMEBA_EPROTO, "send hello first: a session starts with "
		     "{\"v\":1,\"id\":1,\"op\":\"hello\"}");
		goto reply;
	}
	r.result = cJSON_CreateObject();
	if (!r.result) {
		mri_req_nomem(&r);
		goto reply;
	}
	if (op->fn(&r) && !r.code)
		mri_req_nomem(&r);
	if (!r.code && !strcmp(op->name, "hello"))
		d->hello_id = id;
reply:
	if (r.code) {
		root = error_reply(has_id, id, r.code, r.err, r.err_extra);
		r.err_extra = NULL;
	} else {
		cJSON *res = r.result;

		root = cJSON_CreateObject();
		if (mri_json_add(root, "v", cJSON_CreateNumber(MRI_PROTOCOL_VERSION)) ||
		    mri_json_add(root, "id", mri_json_u64(id)) ||
		    mri_json_add(root, "ok", cJSON_CreateBool(1))) {
			cJSON_Delete(root);
			root = NULL;
		} else {
			r.result = NULL;	/* the add below consumes it either way */
			if (mri_json_add(root, "result", res)) {
				cJSON_Delete(root);
				root = NULL;
			}
		}
		if (!root)
			root = error_reply(has_id, id, AMEBA_ENOMEM, "out of memory in the target", NULL);
	}
	cJSON_Delete(r.result);
	cJSON_Delete(r.err_extra);
	cJSON_Delete(parsed);
	if (!root)
		return AMEBA_ENOMEM;
	*reply = print(root, reply_len);
	cJSON_Delete(root);
	if (*reply && *reply_len > MRI_MSG_MAX) {
		char msg[160];

		free(*reply);
		snprintf(msg, sizeof(msg), "the reply would exceed the %u-byte message limit; ask for "
			 "less (a smaller limit, fewer counters)", MRI_MSG_MAX);
		root = error_reply(has_id, id, AMEBA_ERANGE, msg, NULL);
		*reply = root ? print(root, reply_len) : NULL;
		cJSON_Delete(root);
	}
	if (!*reply)
		return AMEBA_ENOMEM;
	return r.close ? MRI_DISP_CLOSE : MRI_DISP_OK;
}

/* ---- events ---- */

static char *event_text(const char *name, cJSON *data, size_t *len)
{
	cJSON *root = cJSON_CreateObject();
	char *txt = NULL;

	if (mri_json_add(root, "v", cJSON_CreateNumber(MRI_PROTOCOL_VERSION)) ||
	    mri_json_add(root, "event", cJSON_CreateString(name))) {
		cJSON_Delete(data);
		cJSON_Delete(root);
		return NULL;
	}
	if (!mri_json_add(root, "data", data))	/* consumes data either way */
		txt = print(root, len);
	cJSON_Delete(root);
	return txt;
}

uint64_t mri_disp_next_due_ns(struct mri_disp *d)
{
	uint64_t due = d->exited ? UINT64_MAX : d->next_tick_ns;

	if (!d->exited && (d->subs & MRI_SUB_THREADS) && d->next_thr_ns < due)
		due = d->next_thr_ns;
	return due;
}

static int thread_event(struct mri_disp *d, const char *name, uint32_t id, const struct mri_thread_info *t,
			char **ev, size_t *len)
{
	cJSON *data = cJSON_CreateObject();

	if (mri_json_add(data, "id", mri_json_u64(id)) || mri_json_add(data, "tid", cJSON_CreateNumber(t->tid))) {
		cJSON_Delete(data);
		return AMEBA_ENOMEM;
	}
	*ev = event_text(name, data, len);
	return *ev ? 1 : AMEBA_ENOMEM;
}

/* One thread event that is due, if any. */
static int poll_threads(struct mri_disp *d, uint64_t now, char **ev, size_t *len)
{
	uint32_t nr = d->ops->nr_threads(d->ctx);
	struct mri_thread_info t;

	if (nr > d->thr_cap) {
		uint32_t cap = nr + 1024;
		uint8_t *g = realloc(d->thr_gone, cap);

		if (!g)
			return AMEBA_ENOMEM;
		memset(g + d->thr_cap, 0, cap - d->thr_cap);
		d->thr_gone = g;
		d->thr_cap = cap;
	}
	/* New threads first, in id order: a start always precedes its exit. */
	if (d->thr_seen < nr && d->ops->thread(d->ctx, d->thr_seen, &t) == 0) {
		uint32_t id = d->thr_seen++;

		return thread_event(d, "thread_start", id, &t, ev, len);
	}
	/* Then exits, round robin over a bounded number of records per round. */
	while (d->thr_seen > 0 && d->thr_scanned < d->thr_seen && d->thr_scanned < THREAD_SCAN) {
		uint32_t id = d->thr_scan;

		d->thr_scan = (d->thr_scan + 1) % d->thr_seen;
		d->thr_scanned++;
		if (d->thr_gone[id] || d->ops->thread(d->ctx, id, &t) || !t.exited)
			continue;
		d->thr_gone[id] = 1;
		return thread_event(d, "thread_exit", id, &t, ev, len);
	}
	d->thr_scanned = 0;
	d->next_thr_ns = now + THREAD_POLL_NS;
	return 0;
}

int mri_disp_poll_event(struct mri_disp *d, char **ev, size_t *len)
{
	uint64_t now;

	*ev = NULL;
	if (d->exited)
		return 0;
	now = d->ops->now_ns(d->ctx);
	if (d->exp_on && now >= d->next_tick_ns) {
		int err;
		cJSON *o = mri_disp_read_now(d, 0, &err);

		/* Late ticks are skipped, not bunched: the next is one interval
		 * from now. */
		d->next_tick_ns += (uint64_t)d->interval_ms * 1000000ull;
		if (d->next_tick_ns <= now)
			d->next_tick_ns = now + (uint64_t)d->interval_ms * 1000000ull;
		if (!o)
			return err == AMEBA_ENOMEM ? err : 0;
		*ev = event_text("interval", o, len);
		return *ev ? 1 : AMEBA_ENOMEM;
	}
	if ((d->subs & MRI_SUB_THREADS) && now >= d->next_thr_ns)
		return poll_threads(d, now, ev, len);
	return 0;
}

char *mri_disp_exit_event(struct mri_disp *d, size_t *len)
{
	cJSON *data = cJSON_CreateObject(), *o = NULL;
	int err = 0;

	if (d->exp_on)
		o = mri_disp_read_now(d, 0, &err);
	d->exited = 1;		/* whatever happens below, the session is over */
	if (!data) {
		cJSON_Delete(o);
		return NULL;
	}
	if (mri_json_add(data, "t_ns", mri_json_u64(d->ops->now_ns(d->ctx)))) {
		cJSON_Delete(o);
		cJSON_Delete(data);
		return NULL;
	}
	if (mri_json_add(data, "reading", o ? o : cJSON_CreateNull())) {
		cJSON_Delete(data);
		return NULL;
	}
	return event_text("exit", data, len);
}
