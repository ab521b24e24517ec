/*
 * test_dispatch.c - the MRI dispatcher (mri/dispatch.c) against the fake
 * monitor of fake_ops.h: a table of malformed and out-of-order requests,
 * each of which must get an error reply naming the field (and the session
 * goes on), then whole sessions: discovery, attach, experiments with
 * cumulative values and deltas, interval and thread events, samples, the
 * exit event, detach on session end, and the reply-size cap. Finally
 * allocation-failure injection: a whole session is replayed failing the
 * k-th allocation made inside the dispatcher, for every k; each run must
 * answer every request (an error reply, or ENOMEM when not even that can be
 * built) and leave no allocation behind.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dispatch.h"
#include "fake_ops.h"
#include "json.h"

static struct fake_mon f;
static struct mri_disp *d;

/* ---- allocation-failure injection (this program's malloc family) ---- */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static int inject;		/* inside a dispatcher call: count, maybe fail */
static long fail_at = -1;	/* fail the allocation with this number once */
static long nr_allocs;		/* allocations counted since the run began */
static long live;		/* allocations minus frees while tracking */
static int tracking;

static int should_fail(void)
{
	if (!inject)
		return 0;
	return nr_allocs++ == fail_at;
}

void *malloc(size_t n)
{
	void *p = should_fail() ? NULL : __libc_malloc(n);

	if (p && tracking)
		live++;
	return p;
}

void *calloc(size_t nr, size_t n)
{
	void *p = should_fail() ? NULL : __libc_calloc(nr, n);

	if (p && tracking)
		live++;
	return p;
}

void *realloc(void *old, size_t n)
{
	void *p;

	if (should_fail())
		return NULL;
	p = __libc_realloc(old, n);
	if (p && !old && tracking)
		live++;
	return p;
}

void free(void *p)
{
	if (p && tracking)
		live--;
	__libc_free(p);
}

/* Sends text (len bytes) and returns the parsed reply; *rc the status. */
static cJSON *send_len(const char *text, size_t len, int *rc)
{
	char *reply = NULL;
	size_t rlen = 0;
	cJSON *j;

	inject = 1;
	*rc = mri_disp_handle(d, text, len, &reply, &rlen);
	inject = 0;
	if (*rc == AMEBA_ENOMEM && fail_at >= 0) {
		CHECK(reply == NULL);
		return NULL;
	}
	CHECK(reply != NULL);
	if (!reply)
		return NULL;
	CHECK(rlen == strlen(reply));
	CHECK(rlen <= MRI_MSG_MAX);
	j = cJSON_Parse(reply);
	CHECK(j != NULL);	/* every reply is JSON */
	CHECK(mri_json_type(mri_json_get(j, "v")) == cJSON_Number &&
	      mri_json_get(j, "v")->valuedouble == 1);
	free(reply);
	return j;
}

static cJSON *send_req(const char *text, int *rc)
{
	return send_len(text, strlen(text), rc);
}

/* A request that must succeed; returns its result object (in *root). */
static const cJSON *ok(int line, const char *text, cJSON **root)
{
	int rc;

	*root = send_req(text, &rc);
	CHECK_AT(line, rc >= 0);
	if (mri_json_type(mri_json_get(*root, "ok")) != cJSON_True) {
		const cJSON *m = mri_json_get(mri_json_get(*root, "error"), "message");

		fprintf(stderr, "line %d: %s -> %s\n", line, text,
			m && m->valuestring ? m->valuestring : "?");
		CHECK_AT(line, 0);
	}
	return mri_json_get(*root, "result");
}

static void ok_drop(int line, const char *text)
{
	cJSON *root;

	ok(line, text, &root);
	cJSON_Delete(root);
}

static double num(const cJSON *j)
{
	return mri_json_type(j) == cJSON_Number ? j->valuedouble : -1;
}

enum state { FRESH, HELLO, ATTACHED, RUNNING };

static void session(enum state s)
{
	if (d) {
		mri_disp_end(d);
		mri_disp_free(d);
	}
	fake_init(&f);
	d = mri_disp_new(&fake_ops, &f, 77);
	CHECK(d != NULL);
	if (s >= HELLO)
		ok_drop(__LINE__, "{\"v\":1,\"id\":1,\"op\":\"hello\",\"client\":\"test\"}");
	if (s >= ATTACHED)
		ok_drop(__LINE__, "{\"v\":1,\"id\":2,\"op\":\"attach\"}");
	if (s >= RUNNING)
		ok_drop(__LINE__, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":"
			"[{\"metric\":\"mem_ref\",\"objects\":[1]},{\"metric\":\"writes\"}]}");
}

/* ---- malformed and out-of-order requests ---- */

struct bad {
	int line;
	enum state state;
	const char *req;
	int code;		/* AMEBA_E* expected */
	const char *says;	/* a piece of the message */
	int id;			/* the reply echoes this id (-1: null) */
};

#define NEST "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
#define NEST10 NEST NEST NEST NEST NEST NEST NEST NEST NEST NEST NEST NEST

static const struct bad bad[] = {
	{ __LINE__, HELLO, "", AMEBA_EPROTO, "empty message", -1 },
	{ __LINE__, HELLO, "{", AMEBA_EPROTO, "not JSON", -1 },
	{ __LINE__, HELLO, "nul", AMEBA_EPROTO, "not JSON", -1 },
	{ __LINE__, HELLO, "[1,2]", AMEBA_EPROTO, "a request is a JSON object", -1 },
	{ __LINE__, HELLO, "\"hello\"", AMEBA_EPROTO, "a request is a JSON object", -1 },
	{ __LINE__, HELLO, "{}", AMEBA_EPROTO, "v is missing", -1 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":1,\"op\":\"ping\"} {}", AMEBA_EPROTO, "trailing bytes", -1 },
	{ __LINE__, HELLO, "{\"v\":2,\"id\":5,\"op\":\"ping\"}", AMEBA_EABI,
	  "unsupported protocol version 2; this server speaks version 1", 5 },
	{ __LINE__, HELLO, "{\"v\":\"1\",\"id\":5,\"op\":\"ping\"}", AMEBA_EPROTO, "v: \"1\" is not a protocol version", 5 },
	{ __LINE__, HELLO, "{\"v\":1.5,\"id\":5,\"op\":\"ping\"}", AMEBA_EPROTO, "not a protocol version", 5 },
	{ __LINE__, HELLO, "{\"v\":1,\"op\":\"ping\"}", AMEBA_EPROTO, "id is missing", -1 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":-1,\"op\":\"ping\"}", AMEBA_ERANGE, "id: -1 is not an integer", -1 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":1.5,\"op\":\"ping\"}", AMEBA_ERANGE, "id: 1.5", -1 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":\"7\",\"op\":\"ping\"}", AMEBA_EINVAL, "id: \"7\" is not a number", -1 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":1e300,\"op\":\"ping\"}", AMEBA_ERANGE, "id: 1.0000000000000001e+300", -1 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":9}", AMEBA_EPROTO, "op is missing", 9 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":9,\"op\":7}", AMEBA_EINVAL, "op: 7 is not a string", 9 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":9,\"op\":\"frobnicate\"}", AMEBA_EINVAL, "unknown op \"frobnicate\"", 9 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":9,\"op\":\"\\u0001x\\\"\"}", AMEBA_EINVAL, "unknown op \"\\x01x\\x22\"", 9 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":1,\"op\":\"ping\",\"x\":" NEST10 "}", AMEBA_EPROTO, "not JSON", -1 },
	/* order */
	{ __LINE__, FRESH, "{\"v\":1,\"id\":3,\"op\":\"ping\"}", AMEBA_EPROTO, "send hello first", 3 },
	{ __LINE__, FRESH, "{\"v\":1,\"id\":3,\"op\":\"attach\"}", AMEBA_EPROTO, "send hello first", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"hello\"}", AMEBA_EPROTO, "hello was already answered (request id 1)", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"detach\"}", AMEBA_EINVAL, "not attached", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"mem_ref\"}]}", AMEBA_EINVAL, "not attached: send attach before start", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"samples_start\",\"metric\":\"writes\",\"period\":7}", AMEBA_EINVAL, "not attached", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"attach\"}", AMEBA_EINVAL, "already attached (backend count); detach first", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"read\",\"experiment\":101}", AMEBA_ENOENT, "no experiment is running; send start first", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"stop\",\"experiment\":101}", AMEBA_ENOENT, "no experiment is running", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"samples_read\"}", AMEBA_ENOENT, "no sample stream is running; send samples_start first", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"samples_stop\"}", AMEBA_ENOENT, "no sample stream", 3 },
	{ __LINE__, RUNNING, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"mem_ref\"}]}", AMEBA_EBUSY, "experiment 101 is running; stop it first", 3 },
	{ __LINE__, RUNNING, "{\"v\":1,\"id\":3,\"op\":\"read\"}", AMEBA_EINVAL, "experiment is missing", 3 },
	{ __LINE__, RUNNING, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"mem_ref\"}],\"replace\":999}", AMEBA_ENOENT, "replace: 999 is not running (experiment 101 is)", 3 },
	{ __LINE__, RUNNING, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"mem_ref\"}],\"replace\":101,\"mark\":\"m\"}", AMEBA_EINVAL, "replace: a marked experiment starts from zero", 3 },
	{ __LINE__, RUNNING, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"mem_ref\"}],\"replace\":\"101\"}", AMEBA_EINVAL, "replace: \"101\" is not a number", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"mem_ref\"}],\"replace\":101}", AMEBA_ENOENT, "replace: no experiment is running; leave replace out", 3 },
	{ __LINE__, RUNNING, "{\"v\":1,\"id\":3,\"op\":\"read\",\"experiment\":999}", AMEBA_ENOENT, "experiment: 999 is not running (experiment 101 is)", 3 },
	{ __LINE__, RUNNING, "{\"v\":1,\"id\":3,\"op\":\"stop\",\"experiment\":\"101\"}", AMEBA_EINVAL, "experiment: \"101\" is not a number", 3 },
	/* fields */
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"ping\",\"x\":1}", AMEBA_EINVAL, "ping: unknown field \"x\" (known: v, id, op)", 3 },
	{ __LINE__, FRESH, "{\"v\":1,\"id\":3,\"op\":\"hello\",\"client\":5}", AMEBA_EINVAL, "client: 5 is not a string", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"threads\",\"offset\":\"a\"}", AMEBA_EINVAL, "offset: \"a\" is not a number", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"threads\",\"limit\":0}", AMEBA_ERANGE, "limit: 0 is not an integer in 1..4096", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"threads\",\"limit\":5000}", AMEBA_ERANGE, "limit: 5000", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"objects\",\"offset\":4294967296}", AMEBA_ERANGE, "offset: 4294967296", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"objects\",\"kinds\":\"heap\"}", AMEBA_EINVAL, "kinds: \"heap\" is not an array", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"objects\",\"kinds\":[\"heap\",\"bogus\"]}", AMEBA_EINVAL, "kinds[1]: unknown kind \"bogus\"", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"objects\",\"kinds\":[1]}", AMEBA_EINVAL, "kinds[0]: 1 is not a string", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"objects\",\"live\":\"yes\"}", AMEBA_EINVAL, "live: \"yes\" is not true or false", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"objects\",\"compact\":1}", AMEBA_EINVAL, "compact: 1 is not true or false", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"objects\",\"name\":[]}", AMEBA_EINVAL, "name: an array is not a string", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"attach\",\"backend\":\"nosuch\"}", AMEBA_ENOENT, "backend: unknown backend \"nosuch\"; this runtime has: count", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"attach\",\"backend\":\"sim\"}", AMEBA_EBUSY, "one backend per process lifetime", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"attach\",\"backend\":5}", AMEBA_EINVAL, "backend: 5 is not a string", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\"}", AMEBA_EINVAL, "counters is missing", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":{}}", AMEBA_EINVAL, "counters: an object is the product form and needs \"metrics\" and \"where\"", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":{\"metrics\":[\"reads\"],\"where\":[{}],\"metric\":1}}", AMEBA_EINVAL, "counters: unknown field \"metric\"", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":{\"metrics\":\"reads\",\"where\":[{}]}}", AMEBA_EINVAL, "counters.metrics: \"reads\" is not an array", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":{\"metrics\":[\"reads\"],\"where\":[{},5]}}", AMEBA_EINVAL, "counters.where[1]: 5 is not an object such as {\"objects\":[17]}", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":{\"metrics\":[\"reads\",\"l1_mis\"],\"where\":[{}]}}", AMEBA_EINVAL, "counters[1].metric: unknown metric \"l1_mis\"", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":{\"metrics\":[\"reads\"],\"where\":[{\"metric\":\"writes\"}]}}", AMEBA_EINVAL, "counters.where[0]: a place of the product form has no \"metric\"", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":{\"metrics\":[],\"where\":[{}]}}", AMEBA_EINVAL, "counters: the list is empty", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[]}", AMEBA_EINVAL, "counters: the list is empty", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[5]}", AMEBA_EINVAL, "counters[0]: 5 is not an object", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{}]}", AMEBA_EINVAL, "counters[0].metric is missing", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"where\":1}]}", AMEBA_EINVAL, "counters[0]: unknown field \"where\"", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\"},{\"metric\":\"l1_mis\"}]}", AMEBA_EINVAL, "counters[1].metric: unknown metric \"l1_mis\"; see `ameba list metrics`", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"l1d_miss\"}]}", AMEBA_ENOTSUP, "counters[0].metric: backend count does not provide l1d_miss (it provides: mem_ref, reads, writes)", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"ranges\":[[\"0x2000\",\"0x1000\"]]}]}", AMEBA_EINVAL, "counters[0].ranges[0]: start 0x2000 is not below end 0x1000", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"ranges\":[[\"0x1000\",\"0x1000\"]]}]}", AMEBA_EINVAL, "start 0x1000 is not below end 0x1000", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"ranges\":[[\"0x1000\"]]}]}", AMEBA_EINVAL, "counters[0].ranges[0]: an array is not a pair [start, end]", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"ranges\":[[1,2,3]]}]}", AMEBA_EINVAL, "not a pair", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"ranges\":[[\"0xZZ\",\"0x2000\"]]}]}", AMEBA_EINVAL, "counters[0].ranges[0][0]: \"0xZZ\" is not an address; use a hex string", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"ranges\":[[\"0x1\",\"0x12345678901234567\"]]}]}", AMEBA_EINVAL, "ranges[0][1]: \"0x12345678901234567\" is not an address", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"ranges\":[[\"0x\",\"0x2\"]]}]}", AMEBA_EINVAL, "\"0x\" is not an address", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"ranges\":[[-5,2]]}]}", AMEBA_ERANGE, "ranges[0][0]: -5 is not an integer", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"ranges\":[]}]}", AMEBA_EINVAL, "counters[0]: an empty \"ranges\"/\"objects\" list counts nothing", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"bins\":[\"make@a.c:1\",\"nope@x.c:9\"]}]}", AMEBA_ENOENT, "counters[0].bins[1]: no bin named \"nope@x.c:9\" (the target has 2; list them with the bins op", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"bins\":[]}]}", AMEBA_EINVAL, "counters[0].bins: an empty list counts nothing", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"except\":[\"[tls]\"]}]}", AMEBA_EINVAL, "counters[0].except: takes blocks out of the counter's ranges and objects, and this counter has none", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"ranges\":[[\"0x1\",\"0x2\"]],\"except\":[\"nope@x.c:9\"]}]}", AMEBA_ENOENT, "counters[0].except[0]: no bin named \"nope@x.c:9\"", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"ranges\":[[\"0x1\",\"0x2\"]],\"except\":[]}]}", AMEBA_EINVAL, "counters[0].except: an empty list excepts nothing", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"bins\":[0]}]}", AMEBA_EINVAL, "counters[0].bins[0]: 0 is not a string", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"bins\":\"make@a.c:1\"}]}", AMEBA_EINVAL, "counters[0].bins: \"make@a.c:1\" is not an array", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"objects\":[99]}]}", AMEBA_ENOENT, "counters[0].objects[0]: no object 99 (the target has 11", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"objects\":[2]}]}", AMEBA_EINVAL, "counters[0].objects: every object named is empty", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"threads\":[]}]}", AMEBA_EINVAL, "counters[0].threads: an empty list counts no thread", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\",\"threads\":[0,-1]}]}", AMEBA_ERANGE, "counters[0].threads[1]: -1", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"start\",\"interval_ms\":5,\"counters\":[{\"metric\":\"reads\"}]}", AMEBA_ERANGE, "interval_ms: 5 is below the minimum of 10 ms", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"samples_start\",\"metric\":\"writes\"}", AMEBA_EINVAL, "period is missing", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"samples_start\",\"metric\":\"writes\",\"period\":0}", AMEBA_ERANGE, "period: 0", 3 },
	{ __LINE__, ATTACHED, "{\"v\":1,\"id\":3,\"op\":\"samples_start\",\"metric\":\"tlb_miss\",\"period\":7}", AMEBA_ENOTSUP, "backend count does not provide tlb_miss", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"subscribe\"}", AMEBA_EINVAL, "events is missing", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"subscribe\",\"events\":[\"threads\",\"foo\"]}", AMEBA_EINVAL, "events[1]: unknown event \"foo\"", 3 },
	{ __LINE__, RUNNING, "{\"v\":1,\"id\":3,\"op\":\"read\",\"experiment\":101,\"threads\":1}", AMEBA_EINVAL, "threads: 1 is not true or false", 3 },
	{ __LINE__, RUNNING, "{\"v\":1,\"id\":3,\"op\":\"read\",\"experiment\":101,\"sparse\":\"y\"}", AMEBA_EINVAL, "sparse: \"y\" is not true or false", 3 },
	{ __LINE__, FRESH, "{\"v\":1,\"id\":3,\"op\":\"mark\",\"label\":\"a\"}", AMEBA_EPROTO, "send hello first", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"mark\"}", AMEBA_EINVAL, "label is missing: name the mark", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"mark\",\"label\":7}", AMEBA_EINVAL, "label: 7 is not a string", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"mark\",\"label\":\"\"}", AMEBA_EINVAL, "must not be empty or start with '.'", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"mark\",\"label\":\"..\"}", AMEBA_EINVAL, "label: \"..\" must not be empty or start with '.'", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"mark\",\"label\":\"a/b\"}", AMEBA_EINVAL, "label: \"a/b\" has the character '/'; use letters, digits", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"mark\",\"label\":\"a b\"}", AMEBA_EINVAL, "has the character ' '", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"mark\",\"label\":\"x12345678901234567890123456789012345678901234567890123456789012345\"}", AMEBA_ERANGE, "is longer than 64 bytes", 3 },
	{ __LINE__, HELLO, "{\"v\":1,\"id\":3,\"op\":\"mark\",\"label\":\"a\",\"path\":\"/etc/x\"}", AMEBA_EINVAL, "mark: unknown field \"path\" (known: v, id, op, label)", 3 },
};

static void test_bad(void)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const struct bad *b = &bad[i];
		const cJSON *err, *msg, *id;
		cJSON *r;
		int rc;

		session(b->state);
		r = send_req(b->req, &rc);
		CHECK_AT(b->line, rc == MRI_DISP_OK);
		CHECK_AT(b->line, mri_json_type(mri_json_get(r, "ok")) == cJSON_False);
		err = mri_json_get(r, "error");
		msg = mri_json_get(err, "message");
		CHECK_AT(b->line, num(mri_json_get(err, "code")) == b->code);
		CHECK_AT(b->line, mri_json_type(mri_json_get(err, "name")) == cJSON_String &&
			 !strcmp(mri_json_get(err, "name")->valuestring, mri_error_name(b->code)));
		if (!msg || !msg->valuestring || !strstr(msg->valuestring, b->says)) {
			fprintf(stderr, "line %d: message \"%s\" lacks \"%s\"\n", b->line,
				msg && msg->valuestring ? msg->valuestring : "(none)", b->says);
			CHECK_AT(b->line, 0);
		}
		id = mri_json_get(r, "id");
		if (b->id < 0)
			CHECK_AT(b->line, mri_json_type(id) == cJSON_NULL);
		else
			CHECK_AT(b->line, num(id) == b->id);
		if (b->code == AMEBA_EABI)
			CHECK_AT(b->line, mri_json_type(mri_json_get(err, "supported")) == cJSON_Array);
		cJSON_Delete(r);
		/* The session goes on: a good request right after is answered. */
		if (b->state >= HELLO)
			ok_drop(b->line, "{\"v\":1,\"id\":42,\"op\":\"ping\"}");
	}
}

/* Bytes that are not text at all, with explicit lengths (NULs inside). */
static void test_binary(void)
{
	static const char nul_inside[] = "{\"v\":1,\0\"id\":1}";
	cJSON *r;
	int rc;

	session(HELLO);
	r = send_len(nul_inside, sizeof(nul_inside) - 1, &rc);
	CHECK(mri_json_type(mri_json_get(r, "ok")) == cJSON_False);
	cJSON_Delete(r);
	r = send_len("\xff\xfe\x00\x01", 4, &rc);
	CHECK(mri_json_type(mri_json_get(r, "ok")) == cJSON_False);
	cJSON_Delete(r);
	/* A valid request given a length that cuts it short. */
	r = send_len("{\"v\":1,\"id\":1,\"op\":\"ping\"}", 10, &rc);
	CHECK(mri_json_type(mri_json_get(r, "ok")) == cJSON_False);
	cJSON_Delete(r);
}

/* ---- whole sessions ---- */

static const cJSON *item(const cJSON *arr, int i)
{
	const cJSON *e = arr ? arr->child : NULL;

	while (e && i-- > 0)
		e = e->next;
	return e;
}

static const char *str(const cJSON *j)
{
	return mri_json_type(j) == cJSON_String ? j->valuestring : NULL;
}

static void test_discovery(void)
{
	const cJSON *r, *o;
	cJSON *root;

	session(FRESH);
	r = ok(__LINE__, "{\"v\":1,\"id\":12345678901,\"op\":\"hello\"}", &root);
	CHECK(num(mri_json_get(root, "id")) == 12345678901.0);
	CHECK(num(mri_json_get(r, "protocol")) == 1);
	CHECK(num(mri_json_get(r, "pid")) == 4242);
	CHECK(num(mri_json_get(r, "max_message_bytes")) == MRI_MSG_MAX);
	CHECK(mri_json_count(mri_json_get(r, "ops")) == 21);
	CHECK_STR(str(item(mri_json_get(r, "features"), 0)), "counters_product");
	cJSON_Delete(root);

	r = ok(__LINE__, "{\"v\":1,\"id\":2,\"op\":\"process\"}", &root);
	CHECK_STR(str(mri_json_get(r, "program")), "/fake/prog");
	CHECK(num(mri_json_get(r, "nr_threads")) == 3);
	CHECK(mri_json_type(mri_json_get(r, "attached")) == cJSON_False);
	CHECK(mri_json_type(mri_json_get(r, "backend")) == cJSON_NULL);
	cJSON_Delete(root);

	r = ok(__LINE__, "{\"v\":1,\"id\":3,\"op\":\"threads\",\"offset\":1,\"limit\":1}", &root);
	CHECK(mri_json_count(mri_json_get(r, "threads")) == 1);
	CHECK(num(mri_json_get(item(mri_json_get(r, "threads"), 0), "id")) == 1);
	CHECK(num(mri_json_get(item(mri_json_get(r, "threads"), 0), "tid")) == 4243);
	CHECK(num(mri_json_get(r, "next_offset")) == 2);
	CHECK(num(mri_json_get(r, "nr_total")) == 3);
	cJSON_Delete(root);
	r = ok(__LINE__, "{\"v\":1,\"id\":3,\"op\":\"threads\",\"offset\":2}", &root);
	CHECK(mri_json_type(mri_json_get(item(mri_json_get(r, "threads"), 0), "exited")) == cJSON_True);
	CHECK(mri_json_type(mri_json_get(r, "next_offset")) == cJSON_NULL);
	cJSON_Delete(root);

	r = ok(__LINE__, "{\"v\":1,\"id\":4,\"op\":\"objects\"}", &root);
	CHECK(mri_json_count(mri_json_get(r, "objects")) == FAKE_NR_OBJECTS);
	o = item(mri_json_get(r, "objects"), 1);
	CHECK_STR(str(mri_json_get(o, "name")), "garr");
	CHECK_STR(str(mri_json_get(o, "kind")), "global");
	CHECK_STR(str(mri_json_get(o, "start")), "0x1000");
	CHECK_STR(str(mri_json_get(o, "end")), "0x2000");
	CHECK(num(mri_json_get(o, "size")) == 4096);
	CHECK(mri_json_type(mri_json_get(o, "bin")) == cJSON_NULL);
	o = item(mri_json_get(r, "objects"), 8);
	CHECK_STR(str(mri_json_get(o, "name")), "quote\"back\\slash");
	o = item(mri_json_get(r, "objects"), 5);
	CHECK(num(mri_json_get(o, "bin")) == 1);
	CHECK(num(mri_json_get(o, "site")) == 2);
	CHECK(mri_json_get(o, "file") == NULL && mri_json_get(o, "offset") == NULL);
	o = item(mri_json_get(r, "objects"), 9);	/* a file mapping: its path and offset */
	CHECK_STR(str(mri_json_get(o, "file")), "/data/in.mat");
	CHECK(num(mri_json_get(o, "offset")) == 8192);
	CHECK(mri_json_type(mri_json_get(r, "next_offset")) == cJSON_NULL);
	cJSON_Delete(root);

	/* the compact form: the same objects as rows of numbers, names once */
	r = ok(__LINE__, "{\"v\":1,\"id\":4,\"op\":\"objects\",\"compact\":true}", &root);
	CHECK(mri_json_get(r, "objects") == NULL);
	CHECK(mri_json_count(mri_json_get(r, "rows")) == FAKE_NR_OBJECTS);
	o = item(mri_json_get(r, "rows"), 1);		/* garr: global, [0x1000, 0x2000) */
	CHECK(mri_json_count(o) == 9);
	CHECK(num(item(o, 0)) == 1);
	CHECK(num(item(o, 1)) == 0);
	CHECK(num(item(o, 2)) == 4096);
	CHECK(num(item(o, 3)) == 8192);
	CHECK(num(item(o, 4)) == 4096);
	CHECK(num(item(o, 6)) == -1);
	CHECK_STR(str(item(mri_json_get(r, "names"), (int)num(item(o, 8)))), "garr");
	o = item(mri_json_get(r, "rows"), 8);
	CHECK_STR(str(item(mri_json_get(r, "names"), (int)num(item(o, 8)))), "quote\"back\\slash");
	o = item(mri_json_get(r, "rows"), 5);
	CHECK(num(item(o, 5)) == 2);
	CHECK(num(item(o, 6)) == 1);
	CHECK(mri_json_count(o) == 9);
	o = item(mri_json_get(r, "rows"), 9);		/* a file mapping's row adds path, offset */
	CHECK(mri_json_count(o) == 11);
	CHECK_STR(str(item(o, 9)), "/data/in.mat");
	CHECK(num(item(o, 10)) == 8192);
	CHECK(mri_json_count(mri_json_get(r, "names")) < FAKE_NR_OBJECTS);	/* one per bin */
	CHECK(mri_json_type(mri_json_get(r, "next_offset")) == cJSON_NULL);
	cJSON_Delete(root);

	r = ok(__LINE__, "{\"v\":1,\"id\":5,\"op\":\"objects\",\"kinds\":[\"heap\"]}", &root);
	CHECK(mri_json_count(mri_json_get(r, "objects")) == 3);
	cJSON_Delete(root);
	r = ok(__LINE__, "{\"v\":1,\"id\":5,\"op\":\"objects\",\"kinds\":[\"heap\",\"mmap\"],\"live\":true}",
	       &root);
	CHECK(mri_json_count(mri_json_get(r, "objects")) == 3);	/* 3, 5 and 9; 4 is freed */
	CHECK(num(mri_json_get(item(mri_json_get(r, "objects"), 2), "id")) == 9);
	cJSON_Delete(root);
	r = ok(__LINE__, "{\"v\":1,\"id\":6,\"op\":\"objects\",\"name\":\"make@a.c:1\"}", &root);
	CHECK(mri_json_count(mri_json_get(r, "objects")) == 2);
	cJSON_Delete(root);
	r = ok(__LINE__, "{\"v\":1,\"id\":7,\"op\":\"objects\",\"offset\":3,\"limit\":2}", &root);
	CHECK(mri_json_count(mri_json_get(r, "objects")) == 2);
	CHECK(num(mri_json_get(r, "next_offset")) == 5);
	cJSON_Delete(root);

	r = ok(__LINE__, "{\"v\":1,\"id\":8,\"op\":\"bins\"}", &root);
	/* the two site bins, then the kind bins */
	CHECK(mri_json_count(mri_json_get(r, "bins")) == 4);
	CHECK_STR(str(mri_json_get(item(mri_json_get(r, "bins"), 1), "name")), "grow@b.c:2");
	CHECK_STR(str(mri_json_get(item(mri_json_get(r, "bins"), 2), "name")), "[stack]");
	CHECK_STR(str(mri_json_get(item(mri_json_get(r, "bins"), 3), "name")), "[tls]");
	CHECK(num(mri_json_get(item(mri_json_get(r, "bins"), 3), "id")) == 3);
	CHECK(num(mri_json_get(r, "nr_total")) == 4);
	CHECK(mri_json_type(mri_json_get(r, "next_offset")) == cJSON_NULL);
	cJSON_Delete(root);
	r = ok(__LINE__, "{\"v\":1,\"id\":8,\"op\":\"bins\",\"offset\":1,\"limit\":2}", &root);
	CHECK(mri_json_count(mri_json_get(r, "bins")) == 2);
	CHECK_STR(str(mri_json_get(item(mri_json_get(r, "bins"), 1), "name")), "[stack]");
	CHECK(num(mri_json_get(r, "next_offset")) == 3);
	cJSON_Delete(root);

	r = ok(__LINE__, "{\"v\":1,\"id\":9,\"op\":\"regions\"}", &root);
	CHECK(mri_json_type(mri_json_get(r, "regions")) == cJSON_Array);
	CHECK(mri_json_count(mri_json_get(r, "regions")) == 0);
	cJSON_Delete(root);

	r = ok(__LINE__, "{\"v\":1,\"id\":10,\"op\":\"metrics\"}", &root);
	CHECK(mri_json_count(mri_json_get(r, "metrics")) == AMEBA_M_NR);
	CHECK(mri_json_type(mri_json_get(item(mri_json_get(r, "metrics"), 0), "available")) == cJSON_False);
	cJSON_Delete(root);

	r = ok(__LINE__, "{\"v\":1,\"id\":11,\"op\":\"backend\"}", &root);
	CHECK(mri_json_type(mri_json_get(r, "name")) == cJSON_NULL);
	CHECK_STR(str(mri_json_get(r, "geometry")), "not applicable");
	CHECK_STR(str(item(mri_json_get(r, "backends"), 0)), "count");
	cJSON_Delete(root);
}

/* Listings stop growing before a reply would pass the message limit. */
static void test_reply_budget(void)
{
	const cJSON *r;
	cJSON *root;
	uint32_t n, total = 0, off = 0;

	session(HELLO);
	f.nr_objects = 6000;
	f.name_len = 2000;	/* 4096 of these would be 8 MB */
	for (int round = 0; round < 100; round++) {
		char req[128];
		const cJSON *next;

		snprintf(req, sizeof(req), "{\"v\":1,\"id\":1,\"op\":\"objects\",\"offset\":%u,\"limit\":4096}",
			 off);
		r = ok(__LINE__, req, &root);
		n = mri_json_count(mri_json_get(r, "objects"));
		CHECK(n > 0 && n < 4096);
		total += n;
		next = mri_json_get(r, "next_offset");
		if (mri_json_type(next) != cJSON_Number) {
			cJSON_Delete(root);
			break;
		}
		CHECK(num(next) == off + n);
		off = (uint32_t)num(next);
		cJSON_Delete(root);
	}
	CHECK_EQ_U64(total, 6000);
}

/*
 * start with replace: the old experiment's last reading comes with the
 * reply, taken as the new one starts (fake: two ticks, threads 0 and 1 at
 * 20 and 40 each); the new one starts from zero.
 */
static void test_replace(void)
{
	const cJSON *r, *old;
	cJSON *root;

	session(RUNNING);
	fake_tick(&f);
	fake_tick(&f);
	r = ok(__LINE__, "{\"v\":1,\"id\":4,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\"}],"
	       "\"replace\":101}", &root);
	CHECK(num(mri_json_get(r, "experiment")) == 102);
	CHECK(num(mri_json_get(r, "nr_counters")) == 1);
	old = mri_json_get(r, "replaced");
	CHECK(num(mri_json_get(old, "experiment")) == 101);
	CHECK(num(item(mri_json_get(old, "values"), 0)) == 40);
	CHECK(num(item(mri_json_get(old, "values"), 1)) == 80);
	CHECK(mri_json_count(mri_json_get(old, "threads")) == 2);
	CHECK(mri_json_get(old, "before") == NULL);	/* the fake serves nothing */
	cJSON_Delete(root);
	CHECK_EQ_U64(f.nr_cond, 1);
	CHECK_EQ_U64(f.cond_metric[0], AMEBA_M_READS);
	r = ok(__LINE__, "{\"v\":1,\"id\":5,\"op\":\"read\",\"experiment\":102}", &root);
	CHECK(num(item(mri_json_get(r, "values"), 0)) == 0);
	CHECK(num(mri_json_get(r, "seq")) == 1);
	cJSON_Delete(root);
}

/*
 * The product form: 2 metrics on 3 places are 6 counters, metric-major,
 * each place's fields shared by both metrics.
 */
static void test_product(void)
{
	const cJSON *r;
	cJSON *root;

	session(ATTACHED);
	r = ok(__LINE__, "{\"v\":1,\"id\":4,\"op\":\"start\",\"counters\":{\"metrics\":[\"reads\","
	       "\"writes\"],\"where\":[{\"objects\":[1]},{\"ranges\":[[65536,65792],[\"0x20000\","
	       "\"0x20040\"]],\"threads\":[1]},{}]}}", &root);
	CHECK(num(mri_json_get(r, "nr_counters")) == 6);
	cJSON_Delete(root);
	CHECK_EQ_U64(f.nr_cond, 6);
	for (int m = 0; m < 2; m++) {
		CHECK_EQ_U64(f.cond_metric[3 * m], m ? AMEBA_M_WRITES : AMEBA_M_READS);
		CHECK_EQ_U64(f.cond_metric[3 * m + 2], m ? AMEBA_M_WRITES : AMEBA_M_READS);
		CHECK_EQ_U64(f.cond_nr_ranges[3 * m], 1);
		CHECK_EQ_U64(f.first_start[3 * m], 0x1000);
		CHECK_EQ_U64(f.cond_nr_ranges[3 * m + 1], 2);
		CHECK_EQ_U64(f.first_start[3 * m + 1], 0x10000);
		CHECK_EQ_U64(f.cond_nr_ranges[3 * m + 2], 0);
	}
}

static void test_experiment(void)
{
	const cJSON *r, *v, *dl;
	cJSON *root;
	char *ev;
	size_t len;

	session(HELLO);
	r = ok(__LINE__, "{\"v\":1,\"id\":2,\"op\":\"attach\"}", &root);
	CHECK_STR(str(mri_json_get(r, "backend")), "count");
	CHECK(mri_json_count(mri_json_get(r, "metrics")) == 3);
	cJSON_Delete(root);
	CHECK(f.attached && f.nr_attach == 1);
	r = ok(__LINE__, "{\"v\":1,\"id\":3,\"op\":\"metrics\"}", &root);
	CHECK(mri_json_type(mri_json_get(item(mri_json_get(r, "metrics"), 0), "available")) == cJSON_True);
	CHECK(mri_json_type(mri_json_get(item(mri_json_get(r, "metrics"), 3), "available")) == cJSON_False);
	cJSON_Delete(root);

	/* where: an object, a range given as numbers, and everything */
	r = ok(__LINE__, "{\"v\":1,\"id\":4,\"op\":\"start\",\"interval_ms\":100,\"counters\":["
	       "{\"metric\":\"mem_ref\",\"objects\":[1,2]},"
	       "{\"metric\":\"reads\",\"ranges\":[[65536,65792],[\"0x20000\",\"0x20040\"]],\"threads\":[1]},"
	       "{\"metric\":\"writes\"}]}", &root);
	CHECK(num(mri_json_get(r, "experiment")) == 101);
	CHECK(num(mri_json_get(r, "nr_counters")) == 3);
	cJSON_Delete(root);
	CHECK_EQ_U64(f.nr_cond, 3);
	CHECK_EQ_U64(f.cond_nr_ranges[0], 1);	/* the empty object adds no range */
	CHECK_EQ_U64(f.first_start[0], 0x1000);
	CHECK_EQ_U64(f.cond_nr_ranges[1], 2);
	CHECK_EQ_U64(f.first_start[1], 0x10000);
	CHECK_EQ_U64(f.cond_nr_ranges[2], 0);
	CHECK_EQ_U64(f.cond_metric[1], AMEBA_M_READS);

	fake_tick(&f);
	fake_tick(&f);
	f.now_ns += 30000000;
	r = ok(__LINE__, "{\"v\":1,\"id\":5,\"op\":\"read\",\"experiment\":101}", &root);
	v = mri_json_get(r, "values");
	dl = mri_json_get(r, "deltas");
	CHECK(num(item(v, 0)) == 40 && num(item(v, 1)) == 80 && num(item(v, 2)) == 120);
	CHECK(num(item(dl, 0)) == 40 && num(item(dl, 2)) == 120);
	CHECK(num(mri_json_get(r, "seq")) == 1);
	CHECK(num(mri_json_get(r, "dt_ns")) == 30000000);
	CHECK(mri_json_get(r, "threads") == NULL);
	cJSON_Delete(root);

	fake_tick(&f);
	f.now_ns += 20000000;
	r = ok(__LINE__, "{\"v\":1,\"id\":6,\"op\":\"read\",\"experiment\":101,\"threads\":true}", &root);
	v = mri_json_get(r, "values");
	dl = mri_json_get(r, "deltas");
	CHECK(num(item(v, 0)) == 60 && num(item(v, 1)) == 120 && num(item(v, 2)) == 180);
	CHECK(num(item(dl, 0)) == 20 && num(item(dl, 1)) == 40 && num(item(dl, 2)) == 60);
	CHECK(num(mri_json_get(r, "seq")) == 2);
	CHECK(num(mri_json_get(r, "dt_ns")) == 20000000);
	CHECK(mri_json_count(mri_json_get(r, "threads")) == 2);
	CHECK(num(item(mri_json_get(item(mri_json_get(r, "threads"), 1), "values"), 2)) == 90);
	cJSON_Delete(root);
	/* sparse asked, but the rows are dense (every counter non-zero): "values" */
	r = ok(__LINE__, "{\"v\":1,\"id\":6,\"op\":\"read\",\"experiment\":101,\"threads\":true,"
	       "\"sparse\":true}", &root);
	CHECK(mri_json_count(mri_json_get(r, "threads")) == 2);
	CHECK(num(item(mri_json_get(item(mri_json_get(r, "threads"), 1), "values"), 2)) == 90);
	CHECK(mri_json_get(item(mri_json_get(r, "threads"), 1), "sparse") == NULL);
	cJSON_Delete(root);

	/* Interval events: due 100 ms after the start. */
	CHECK_EQ_U64(mri_disp_next_due_ns(d), 1000000000ull + 100000000ull);
	CHECK(mri_disp_poll_event(d, &ev, &len) == 0);
	f.now_ns = 1000000000ull + 100000000ull;
	fake_tick(&f);
	CHECK(mri_disp_poll_event(d, &ev, &len) == 1);
	root = cJSON_Parse(ev);
	CHECK_STR(str(mri_json_get(root, "event")), "interval");
	r = mri_json_get(root, "data");
	CHECK(num(mri_json_get(r, "seq")) == 4);	/* after 3 reads */
	CHECK(num(item(mri_json_get(r, "deltas"), 0)) == 20);
	cJSON_Delete(root);
	free(ev);
	CHECK(mri_disp_poll_event(d, &ev, &len) == 0);
	CHECK_EQ_U64(mri_disp_next_due_ns(d), 1000000000ull + 200000000ull);
	/* A server that fell behind skips ticks rather than bunching them. */
	f.now_ns += 1000000000ull;
	CHECK(mri_disp_poll_event(d, &ev, &len) == 1);
	free(ev);
	CHECK(mri_disp_poll_event(d, &ev, &len) == 0);
	CHECK_EQ_U64(mri_disp_next_due_ns(d), f.now_ns + 100000000ull);

	/* Samples */
	ok_drop(__LINE__, "{\"v\":1,\"id\":7,\"op\":\"samples_start\",\"metric\":\"writes\",\"period\":101,"
		"\"random\":true,\"seed\":5}");
	CHECK_EQ_U64(f.sample_period, 101);
	r = ok(__LINE__, "{\"v\":1,\"id\":8,\"op\":\"samples_read\",\"max\":2}", &root);
	CHECK(mri_json_count(mri_json_get(r, "samples")) == 2);
	CHECK_STR(str(item(item(mri_json_get(r, "samples"), 1), 0)), "0x1040");
	/* the fifth element is the block's site; its label once per reply */
	CHECK(num(item(item(mri_json_get(r, "samples"), 0), 4)) == 9);
	CHECK(num(item(item(mri_json_get(r, "samples"), 1), 4)) == 9);
	CHECK(mri_json_count(mri_json_get(r, "sites")) == 1);
	CHECK(num(item(item(mri_json_get(r, "sites"), 0), 0)) == 9);
	CHECK_STR(str(item(item(mri_json_get(r, "sites"), 0), 1)), "make_node@list.c:12");
	CHECK(num(mri_json_get(r, "lost")) == 7);
	CHECK_STR(str(mri_json_get(r, "metric")), "writes");
	cJSON_Delete(root);

	/* Stop: the final reading, and the monitor is disarmed. */
	fake_tick(&f);
	r = ok(__LINE__, "{\"v\":1,\"id\":9,\"op\":\"stop\",\"experiment\":101}", &root);
	CHECK(num(item(mri_json_get(r, "values"), 0)) == 100);
	cJSON_Delete(root);
	CHECK_EQ_U64(f.gen, 0);
	CHECK_EQ_U64(mri_disp_next_due_ns(d), UINT64_MAX);

	/* Bins by name, resolved to the monitor's bin ids; with ranges too. */
	r = ok(__LINE__, "{\"v\":1,\"id\":10,\"op\":\"start\",\"counters\":["
	       "{\"metric\":\"reads\",\"bins\":[\"grow@b.c:2\"]},"
	       "{\"metric\":\"reads\",\"bins\":[\"make@a.c:1\",\"grow@b.c:2\"],\"ranges\":[[\"0x1\",\"0x2\"]]},"
	       "{\"metric\":\"reads\"}]}", &root);
	CHECK(num(mri_json_get(r, "experiment")) == 102);
	cJSON_Delete(root);
	CHECK_EQ_U64(f.nr_cond, 3);
	CHECK_EQ_U64(f.cond_nr_bins[0], 1);
	CHECK_EQ_U64(f.cond_first_bin[0], 1);
	CHECK_EQ_U64(f.cond_nr_ranges[0], 0);
	CHECK_EQ_U64(f.cond_nr_bins[1], 2);
	CHECK_EQ_U64(f.cond_first_bin[1], 0);
	CHECK_EQ_U64(f.cond_nr_ranges[1], 1);
	CHECK_EQ_U64(f.cond_nr_bins[2], 0);
	r = ok(__LINE__, "{\"v\":1,\"id\":11,\"op\":\"stop\",\"experiment\":102}", &root);
	cJSON_Delete(root);
	/* A name a later site deepened ("make@a.c:1" became two bins "make@a.c:1
	 * <- ..."): both bins, what the name meant when it was listed. */
	f.deep_bins = 1;
	r = ok(__LINE__, "{\"v\":1,\"id\":11,\"op\":\"start\",\"counters\":["
	       "{\"metric\":\"reads\",\"bins\":[\"make@a.c:1\"]},"
	       "{\"metric\":\"reads\",\"bins\":[\"grow@b.c:2\",\"make@a.c:1 <- init@m.c:9\"]}]}", &root);
	CHECK(num(mri_json_get(r, "experiment")) == 103);
	cJSON_Delete(root);
	CHECK_EQ_U64(f.cond_nr_bins[0], 2);
	CHECK_EQ_U64(f.cond_first_bin[0], 0);
	CHECK_EQ_U64(f.cond_nr_bins[1], 2);
	CHECK_EQ_U64(f.cond_first_bin[1], 1);
	r = ok(__LINE__, "{\"v\":1,\"id\":11,\"op\":\"stop\",\"experiment\":103}", &root);
	cJSON_Delete(root);
	f.deep_bins = 0;
	/* Kind bins and exceptions: the ranges of counter 0 leave out every
	 * TLS block and the blocks of grow@b.c:2; counter 1 counts every stack. */
	r = ok(__LINE__, "{\"v\":1,\"id\":11,\"op\":\"start\",\"counters\":["
	       "{\"metric\":\"reads\",\"ranges\":[[\"0x1\",\"0x2\"]],\"except\":[\"[tls]\",\"grow@b.c:2\"]},"
	       "{\"metric\":\"reads\",\"bins\":[\"[stack]\"]}]}", &root);
	CHECK(num(mri_json_get(r, "experiment")) == 104);
	cJSON_Delete(root);
	CHECK_EQ_U64(f.cond_nr_except[0], 2);
	CHECK_EQ_U64(f.cond_first_except[0], MRI_BIN_TLS);
	CHECK_EQ_U64(f.cond_nr_bins[0], 0);
	CHECK_EQ_U64(f.cond_nr_bins[1], 1);
	CHECK_EQ_U64(f.cond_first_bin[1], MRI_BIN_STACK);
	CHECK_EQ_U64(f.cond_nr_except[1], 0);
	r = ok(__LINE__, "{\"v\":1,\"id\":11,\"op\":\"stop\",\"experiment\":104}", &root);
	cJSON_Delete(root);

	/* A second experiment, then the session ends without detach: the
	 * monitor goes back to dormant all the same. */
	r = ok(__LINE__, "{\"v\":1,\"id\":12,\"op\":\"start\",\"counters\":[{\"metric\":\"reads\"}]}", &root);
	CHECK(num(mri_json_get(r, "experiment")) == 105);
	cJSON_Delete(root);
	mri_disp_end(d);
	CHECK(!f.attached && f.nr_detach == 1 && f.gen == 0 && f.sample_period == 0);
	mri_disp_end(d);	/* idempotent */
	CHECK_EQ_U64(f.nr_detach, 1);
}

static void test_thread_events(void)
{
	const cJSON *r;
	cJSON *root;
	char *ev;
	size_t len;

	session(HELLO);
	r = ok(__LINE__, "{\"v\":1,\"id\":2,\"op\":\"subscribe\",\"events\":[\"threads\",\"regions\"]}", &root);
	CHECK(mri_json_count(mri_json_get(r, "events")) == 2);
	cJSON_Delete(root);
	/* Nothing changed: no event (thread 2 had exited before). */
	f.now_ns += 200000000;
	CHECK(mri_disp_poll_event(d, &ev, &len) == 0);
	/* Thread 3 starts, thread 1 exits; then thread 4 starts and exits
	 * between two polls: its start comes before its exit. */
	f.nr_threads = 5;
	f.exited[1] = 1;
	f.exited[4] = 1;
	f.now_ns += 200000000;
	{
		static const char *const want[][2] = {
			{ "thread_start", "3" }, { "thread_start", "4" },
			{ "thread_exit", "1" }, { "thread_exit", "4" },
		};
		int seen[4] = { 0 }, n = 0;

		while (mri_disp_poll_event(d, &ev, &len) == 1 && n < 8) {
			root = cJSON_Parse(ev);
			free(ev);
			for (int k = 0; k < 4; k++) {
				if (!strcmp(str(mri_json_get(root, "event")) ?: "", want[k][0]) &&
				    num(mri_json_get(mri_json_get(root, "data"), "id")) == atoi(want[k][1])) {
					seen[k] = ++n;
				}
			}
			cJSON_Delete(root);
		}
		CHECK(seen[0] && seen[1] && seen[2] && seen[3]);
		CHECK(seen[1] < seen[3]);	/* 4 starts before it exits */
		CHECK_EQ_U64(n, 4);
	}
	CHECK(mri_disp_poll_event(d, &ev, &len) == 0);
}

static void test_exit(void)
{
	const cJSON *r;
	cJSON *root;
	char *ev;
	size_t len;
	int rc;

	session(RUNNING);
	fake_tick(&f);
	ev = mri_disp_exit_event(d, &len);
	CHECK(ev != NULL);
	root = cJSON_Parse(ev);
	CHECK_STR(str(mri_json_get(root, "event")), "exit");
	r = mri_json_get(mri_json_get(root, "data"), "reading");
	CHECK(num(mri_json_get(r, "experiment")) == 101);
	CHECK(num(item(mri_json_get(r, "values"), 0)) == 20);
	CHECK(num(item(mri_json_get(r, "values"), 1)) == 40);
	cJSON_Delete(root);
	free(ev);
	/* After exit, requests get a clean "exiting" error. */
	root = send_req("{\"v\":1,\"id\":50,\"op\":\"ping\"}", &rc);
	CHECK(num(mri_json_get(mri_json_get(root, "error"), "code")) == AMEBA_EEXITED);
	cJSON_Delete(root);
	CHECK(mri_disp_poll_event(d, &ev, &len) == 0);

	/* No experiment: the exit event says reading null. */
	session(ATTACHED);
	ev = mri_disp_exit_event(d, &len);
	root = cJSON_Parse(ev);
	CHECK(mri_json_type(mri_json_get(mri_json_get(root, "data"), "reading")) == cJSON_NULL);
	cJSON_Delete(root);
	free(ev);
}

static void test_bye_and_errors(void)
{
	cJSON *root;
	char *txt;
	size_t len;
	int rc;

	session(HELLO);
	root = send_req("{\"v\":1,\"id\":2,\"op\":\"bye\"}", &rc);
	CHECK(rc == MRI_DISP_CLOSE);
	cJSON_Delete(root);
	/* bye is also accepted before hello (a client giving up early). */
	session(FRESH);
	root = send_req("{\"v\":1,\"id\":2,\"op\":\"bye\"}", &rc);
	CHECK(rc == MRI_DISP_CLOSE);
	cJSON_Delete(root);

	/* The error text the server sends for an oversized frame. */
	txt = mri_disp_error_text(AMEBA_ERANGE, "message of 9999999 bytes exceeds", &len);
	root = cJSON_Parse(txt);
	CHECK(mri_json_type(mri_json_get(root, "id")) == cJSON_NULL);
	CHECK(num(mri_json_get(mri_json_get(root, "error"), "code")) == AMEBA_ERANGE);
	CHECK_STR(str(mri_json_get(mri_json_get(root, "error"), "name")), "ERANGE");
	cJSON_Delete(root);
	free(txt);
	CHECK_STR(mri_error_name(AMEBA_EEXITED), "EEXITED");
	CHECK_STR(mri_error_name(5), "EUNKNOWN");
	CHECK_STR(mri_error_name(-100), "EUNKNOWN");
	CHECK_STR(mri_obj_kind_name(MRI_OBJ_MMAP), "mmap");
	CHECK(mri_obj_kind_name(MRI_OBJ_NR_KINDS) == NULL);
}

/* One whole session; under injection a request may fail, never crash. */
static void session_script(void)
{
	static const char *const reqs[] = {
		"{\"v\":1,\"id\":1,\"op\":\"hello\"}",
		"{\"v\":1,\"id\":2,\"op\":\"process\"}",
		"{\"v\":1,\"id\":3,\"op\":\"threads\"}",
		"{\"v\":1,\"id\":4,\"op\":\"objects\",\"kinds\":[\"heap\",\"global\"]}",
		"{\"v\":1,\"id\":4,\"op\":\"objects\",\"compact\":true}",
		"{\"v\":1,\"id\":5,\"op\":\"bins\"}",
		"{\"v\":1,\"id\":6,\"op\":\"regions\"}",
		"{\"v\":1,\"id\":7,\"op\":\"metrics\"}",
		"{\"v\":1,\"id\":8,\"op\":\"backend\",\"x\":1}",
		"{\"v\":1,\"id\":9,\"op\":\"attach\"}",
		"{\"v\":1,\"id\":10,\"op\":\"backend\"}",
		"{\"v\":1,\"id\":11,\"op\":\"subscribe\",\"events\":[\"threads\"]}",
		"{\"v\":1,\"id\":12,\"op\":\"start\",\"interval_ms\":10,\"counters\":[{\"metric\":\"mem_ref\","
		"\"objects\":[1,3]},{\"metric\":\"reads\",\"ranges\":[[\"0x1\",\"0x2\"]],\"threads\":[1]}]}",
		"{\"v\":1,\"id\":13,\"op\":\"read\",\"experiment\":101,\"threads\":true}",
		"{\"v\":1,\"id\":13,\"op\":\"read\",\"experiment\":101,\"threads\":true,\"sparse\":true}",
		"{\"v\":1,\"id\":14,\"op\":\"samples_start\",\"metric\":\"writes\",\"period\":3}",
		"{\"v\":1,\"id\":15,\"op\":\"samples_read\"}",
		"{\"v\":2,\"id\":16,\"op\":\"ping\"}",
		"{\"v\":1,\"id\":17,\"op\":\"stop\",\"experiment\":101}",
		"{\"v\":1,\"id\":18,\"op\":\"detach\"}",
		"{\"v\":1,\"id\":19,\"op\":\"bye\"}",
	};
	char *txt;
	size_t len;

	fake_init(&f);
	inject = 1;
	d = mri_disp_new(&fake_ops, &f, 77);
	inject = 0;
	if (!d)
		return;
	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		int rc;
		cJSON *r = send_req(reqs[i], &rc);

		cJSON_Delete(r);
		fake_tick(&f);
		f.now_ns += 20000000;
		if (i == 12)
			f.nr_threads = 4;
		inject = 1;
		while (mri_disp_poll_event(d, &txt, &len) == 1)
			free(txt);
		inject = 0;
	}
	inject = 1;
	txt = mri_disp_exit_event(d, &len);
	free(txt);
	txt = mri_disp_error_text(AMEBA_ERANGE, "x", &len);
	free(txt);
	mri_disp_end(d);
	mri_disp_free(d);
	inject = 0;
	d = NULL;
}

static void test_alloc_failures(void)
{
	long total, k;

	/* Count the allocations of a clean run, then fail each in turn. */
	fail_at = -1;
	nr_allocs = 0;
	session_script();
	total = nr_allocs;
	if (total == 0) {
		/* Under valgrind (or another allocator replacement) this
		 * program's malloc is not the one called. */
		printf("allocation failures: not injected (malloc is replaced)\n");
		return;
	}
	CHECK(total > 100);
	for (k = 0; k < total; k++) {
		nr_allocs = 0;
		fail_at = k;
		live = 0;
		tracking = 1;
		session_script();
		tracking = 0;
		if (live != 0) {
			fprintf(stderr, "allocation %ld failed: %ld allocations left behind\n", k, live);
			CHECK(0);
		}
	}
	fail_at = -1;
	printf("allocation failures injected: %ld\n", k);
}

/* mark: written (path), without an oracle (a reply saying why), a failed write (an error). */
static void test_mark(void)
{
	const cJSON *r;
	cJSON *root;
	int rc;

	session(HELLO);
	r = ok(__LINE__, "{\"v\":1,\"id\":5,\"op\":\"mark\",\"label\":\"w-1\"}", &root);
	CHECK(mri_json_type(mri_json_get(r, "written")) == cJSON_False);
	CHECK(mri_json_get(r, "path") == NULL);
	CHECK(strstr(mri_json_get(r, "why")->valuestring, "without AMEBA_ORACLE") != NULL);
	CHECK(!strcmp(mri_json_get(r, "label")->valuestring, "w-1"));
	CHECK(f.nr_marks == 0);
	cJSON_Delete(root);

	f.oracle = 1;
	r = ok(__LINE__, "{\"v\":1,\"id\":6,\"op\":\"mark\",\"label\":\"nway-2.b_c\"}", &root);
	CHECK(mri_json_type(mri_json_get(r, "written")) == cJSON_True);
	CHECK(!strcmp(mri_json_get(r, "path")->valuestring, "/fake/o.json.mark-nway-2.b_c"));
	CHECK(mri_json_get(r, "why") == NULL);
	CHECK(f.nr_marks == 1 && !strcmp(f.last_mark, "nway-2.b_c"));
	cJSON_Delete(root);

	f.oracle = AMEBA_EIO;
	root = send_req("{\"v\":1,\"id\":7,\"op\":\"mark\",\"label\":\"w\"}", &rc);
	CHECK(rc == MRI_DISP_OK);
	CHECK(mri_json_type(mri_json_get(root, "ok")) == cJSON_False);
	CHECK(num(mri_json_get(mri_json_get(root, "error"), "code")) == AMEBA_EIO);
	CHECK(strstr(mri_json_get(mri_json_get(root, "error"), "message")->valuestring,
		     "mark w: cannot write /fake/o.json.mark-w: disk full") != NULL);
	CHECK(f.nr_marks == 1);
	cJSON_Delete(root);
	ok_drop(__LINE__, "{\"v\":1,\"id\":8,\"op\":\"ping\"}");
}

int main(void)
{
	test_bad();
	test_mark();
	test_binary();
	test_discovery();
	test_reply_budget();
	test_experiment();
	test_product();
	test_replace();
	test_thread_events();
	test_exit();
	test_bye_and_errors();
	mri_disp_end(d);
	mri_disp_free(d);
	d = NULL;
	test_alloc_failures();
	return check_done();
}
