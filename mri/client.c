/*
 * client.c - the MRI client library: mri.h over a transport (a Unix socket to
 * another process, or the runtime's in-process dispatcher).
 *
 * Notes:
 *  - Requests are synchronous: a call sends one request and waits for the
 *    reply carrying its id. Events (interval readings, thread start/exit,
 *    target exit) may arrive in between; they are queued for
 *    mri_next_event. A reply with another id - the late answer to a request
 *    that timed out - is dropped.
 *  - The exit event ends the session: the call waiting for a reply returns
 *    AMEBA_EEXITED at once (the server answers nothing after it), and the
 *    event's final reading stays available through mri_final_reading.
 *  - Results point into the parsed reply, which is kept per function (a
 *    "slot") until the same function is called again.
 *  - mri_open_local() uses the transport the runtime registered
 *    (mri_set_local_open, transport.h): this library never names the
 *    runtime, so tools link it without libameba-rt.
 */
#include "client_int.h"

/* The runtime's in-process transport, once the runtime linked into this
 * program has offered it (transport.h); NULL without a runtime. */
static mri_local_open_fn local_open;

void mri_set_local_open(mri_local_open_fn fn)
{
	__atomic_store_n(&local_open, fn, __ATOMIC_RELEASE);
}

int mri_cl_set_err(struct mri_session *s, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	return code;
}

void mri_cl_slot_reset(struct mri_session *s, enum slot k)
{
	struct slot_mem *m = &s->slots[k];

	cJSON_Delete(m->root);
	m->root = NULL;
	for (size_t i = 0; i < sizeof(m->mem) / sizeof(m->mem[0]); i++) {
		free(m->mem[i]);
		m->mem[i] = NULL;
	}
}

/* ---- the socket transport ---- */

struct sock_tr {
	int fd;
	struct mri_reader rd;
};

static int sock_send(void *ctx, const char *msg, size_t len, int timeout_ms)
{
	struct sock_tr *st = ctx;

	return mri_send_frame(st->fd, msg, len, timeout_ms);
}

static int sock_recv(void *ctx, char **msg, size_t *len, int timeout_ms)
{
	struct sock_tr *st = ctx;
	uint32_t n = 0;
	int r = mri_recv_frame(st->fd, &st->rd, msg, &n, timeout_ms);

	*len = n;
	return r;
}

static void sock_close(void *ctx)
{
	struct sock_tr *st = ctx;

	close(st->fd);
	mri_reader_destroy(&st->rd);
	free(st);
}

/* ---- sessions ---- */

static struct mri_session *session_new(void)
{
	struct mri_session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->objects_freed = UINT64_MAX;
	s->timeout_ms = DEFAULT_TIMEOUT_MS;
	s->next_id = 1;
	return s;
}

void mri_cl_enter(struct mri_session *s)
{
	if (s->connected && s->tr.enter)
		s->tr.enter(s->tr.ctx);
}

void mri_cl_leave(struct mri_session *s)
{
	if (s->connected && s->tr.leave)
		s->tr.leave(s->tr.ctx);
}

/* Queues an event text (taking it); drops the oldest beyond the cap. */
static void evq_push(struct mri_session *s, char *msg)
{
	if (!s->evq) {
		s->evq = calloc(EVENT_QUEUE_MAX, sizeof(*s->evq));
		if (!s->evq) {
			free(msg);
			s->evq_dropped++;
			return;
		}
	}
	if (s->evq_nr == EVENT_QUEUE_MAX) {
		free(s->evq[s->evq_head]);
		s->evq_head = (s->evq_head + 1) % EVENT_QUEUE_MAX;
		s->evq_nr--;
		s->evq_dropped++;
	}
	s->evq[(s->evq_head + s->evq_nr) % EVENT_QUEUE_MAX] = msg;
	s->evq_nr++;
}

static char *evq_pop(struct mri_session *s)
{
	char *m;

	if (!s->evq_nr)
		return NULL;
	m = s->evq[s->evq_head];
	s->evq_head = (s->evq_head + 1) % EVENT_QUEUE_MAX;
	s->evq_nr--;
	return m;
}

uint64_t mri_cl_num_u64(const cJSON *j)
{
	if (mri_json_type(j) != cJSON_Number || !(j->valuedouble >= 0))
		return 0;
	if (j->valuedouble >= 18446744073709551615.0)
		return UINT64_MAX;
	return (uint64_t)j->valuedouble;
}

uint64_t mri_cl_hex_u64(const cJSON *j)
{
	if (mri_json_type(j) == cJSON_String && j->valuestring)
		return strtoull(j->valuestring, NULL, 16);
	return mri_cl_num_u64(j);
}

const char *mri_cl_str_of(const cJSON *j)
{
	return mri_json_type(j) == cJSON_String ? j->valuestring : NULL;
}

/* [index, value, ...] (the non-zero entries) into v[nr]. */
static void pairs_into(const cJSON *a, uint64_t *v, uint32_t nr)
{
	const cJSON *x;

	for (x = mri_json_type(a) == cJSON_Array ? a->child : NULL; x && x->next; x = x->next->next) {
		uint64_t j = mri_cl_num_u64(x);

		if (j < nr)
			v[j] = mri_cl_num_u64(x->next);
	}
}

/* Fills r from a reading object; arrays go into slot k. */
int mri_cl_parse_reading(struct mri_session *s, enum slot k, const cJSON *o, struct mri_reading *r)
{
	const cJSON *vals = mri_json_get(o, "values"), *dl = mri_json_get(o, "deltas");
	const cJSON *th = mri_json_get(o, "threads"), *e;
	uint64_t *v, *dv, *tv = NULL, *bv = NULL, *tbv = NULL;
	uint32_t *tid = NULL, nr = mri_json_count(vals), i = 0;

	memset(r, 0, sizeof(*r));
	if (mri_json_type(o) != cJSON_Object)
		return AMEBA_EPROTO;
	r->experiment = mri_cl_num_u64(mri_json_get(o, "experiment"));
	r->seq = mri_cl_num_u64(mri_json_get(o, "seq"));
	r->t_ns = mri_cl_num_u64(mri_json_get(o, "t_ns"));
	r->dt_ns = mri_cl_num_u64(mri_json_get(o, "dt_ns"));
	v = calloc(nr + 1, sizeof(*v));
	dv = calloc(nr + 1, sizeof(*dv));
	if (!v || !dv) {
		free(v);
		free(dv);
		return AMEBA_ENOMEM;
	}
	cJSON_ArrayForEach(e, vals) {
		if (i < nr)
			v[i++] = mri_cl_num_u64(e);
	}
	i = 0;
	cJSON_ArrayForEach(e, dl) {
		if (i < nr)
			dv[i++] = mri_cl_num_u64(e);
	}
	if (mri_json_type(mri_json_get(o, "before")) == cJSON_Array) {
		bv = calloc(nr + 1, sizeof(*bv));
		if (!bv) {
			free(v);
			free(dv);
			return AMEBA_ENOMEM;
		}
		pairs_into(mri_json_get(o, "before"), bv, nr);
	}
	if (mri_json_type(th) == cJSON_Array) {
		uint32_t nt = mri_json_count(th), t = 0;

		tid = calloc(nt + 1, sizeof(*tid));
		tv = calloc((size_t)nt * nr + 1, sizeof(*tv));
		if (bv)
			tbv = calloc((size_t)nt * nr + 1, sizeof(*tbv));
		if (!tid || !tv || (bv && !tbv)) {
			free(v);
			free(dv);
			free(bv);
			free(tid);
			free(tv);
			free(tbv);
			return AMEBA_ENOMEM;
		}
		cJSON_ArrayForEach(e, th) {
			const cJSON *x;

			i = 0;
			tid[t] = (uint32_t)mri_cl_num_u64(mri_json_get(e, "id"));
			cJSON_ArrayForEach(x, mri_json_get(e, "values")) {
				if (i < nr)
					tv[(size_t)t * nr + i++] = mri_cl_num_u64(x);
			}
			/* [index, value, ...]: the non-zero values only */
			pairs_into(mri_json_get(e, "sparse"), tv + (size_t)t * nr, nr);
			if (tbv)
				pairs_into(mri_json_get(e, "before"), tbv + (size_t)t * nr, nr);
			t++;
		}
		r->nr_threads = nt;
	}
	/* sampled mode: the intervals of the values and of the deltas */
	if (mri_json_type(mri_json_get(o, "ci")) == cJSON_Array) {
		const cJSON *sm = mri_json_get(o, "sampled");
		double *ci = calloc(2 * (size_t)nr + 1, sizeof(*ci));

		if (ci) {
			for (i = 0; i < 2 * nr; i++)
				ci[i] = -1;
			i = 0;
			cJSON_ArrayForEach(e, mri_json_get(o, "ci")) {
				if (i < nr && mri_json_type(e) == cJSON_Number)
					ci[i] = e->valuedouble;
				i++;
			}
			i = 0;
			cJSON_ArrayForEach(e, mri_json_get(o, "ci_deltas")) {
				if (i < nr && mri_json_type(e) == cJSON_Number)
					ci[nr + i] = e->valuedouble;
				i++;
			}
			r->sampled = 1;
			r->ci = ci;
			r->ci_deltas = ci + nr;
			r->bursts = (uint32_t)mri_cl_num_u64(mri_json_get(sm, "bursts"));
			r->bursts_read = (uint32_t)mri_cl_num_u64(mri_json_get(sm, "bursts_read"));
			r->accesses = mri_cl_num_u64(mri_json_get(sm, "accesses"));
			e = mri_json_get(sm, "fraction");
			r->fraction = mri_json_type(e) == cJSON_Number ? e->valuedouble : 0;
		}
		free(s->slots[k].mem[6]);
		s->slots[k].mem[6] = ci;
	} else {
		free(s->slots[k].mem[6]);
		s->slots[k].mem[6] = NULL;
	}
	for (int m = 0; m < 6; m++)
		free(s->slots[k].mem[m]);
	s->slots[k].mem[0] = v;
	s->slots[k].mem[1] = dv;
	s->slots[k].mem[2] = tid;
	s->slots[k].mem[3] = tv;
	s->slots[k].mem[4] = bv;
	s->slots[k].mem[5] = tbv;
	r->nr = nr;
	r->values = v;
	r->deltas = dv;
	r->thread_ids = tid;
	r->thread_values = tv;
	r->before = bv;
	r->thread_before = tbv;
	return 0;
}

/* Keeps the final reading of an exit event (msg is its parsed text). */
static void take_exit(struct mri_session *s, const cJSON *msg)
{
	const cJSON *rd = mri_json_get(mri_json_get(msg, "data"), "reading");

	s->exited = 1;
	if (mri_json_type(rd) == cJSON_Object && mri_cl_parse_reading(s, SLOT_FINAL, rd, &s->final) == 0)
		s->has_final = 1;
}

/* Error code and message of an {"error":{...}} object. */
static int take_error(struct mri_session *s, const cJSON *err, const char *what)
{
	int code = (int)(mri_json_type(mri_json_get(err, "code")) == cJSON_Number ?
			 mri_json_get(err, "code")->valuedouble : AMEBA_EPROTO);
	const char *m = mri_cl_str_of(mri_json_get(err, "message"));

	if (code >= 0 || code <= -AMEBA_E_NR)
		code = AMEBA_EPROTO;
	return mri_cl_set_err(s, code, "%s%s", what, m ? m : ameba_strerror(code));
}

/*
 * Sends req (consumed; "v" and "id" are added) and waits for its reply.
 * On success *root is the parsed reply (the caller frees it) and *result its
 * "result" object. On failure the session's message says why.
 */
/*
 * The target refused a request because it is exiting: its exit event, with
 * the final reading, follows (after the runtime's own exit work: seconds at
 * most). Reads on until it comes, the connection closes or the deadline, so
 * that mri_final_reading() has it when the caller sees AMEBA_EEXITED.
 */
static void await_exit(struct mri_session *s, uint64_t deadline)
{
	while (!s->has_final) {
		uint64_t now = mri_now_ns();
		int left = deadline == UINT64_MAX ? -1 :
			   now >= deadline ? 0 : (int)((deadline - now) / 1000000ull);
		char *msg = NULL;
		size_t len = 0;
		cJSON *m;
		const char *name;

		if (s->tr.recv(s->tr.ctx, &msg, &len, left) < 0)
			break;	/* closed, timed out or lost: no final reading */
		m = mri_json_parse(msg, len);
		name = mri_cl_str_of(mri_json_get(m, "event"));
		if (name) {
			if (!strcmp(name, "exit"))
				take_exit(s, m);
			evq_push(s, msg);
		} else {
			free(msg);	/* a late reply */
		}
		cJSON_Delete(m);
		if (name && !strcmp(name, "exit"))
			break;
	}
	s->exited = 1;
}

int mri_cl_call(struct mri_session *s, cJSON *req, cJSON **root, const cJSON **result)
{
	uint64_t id = s->next_id++, deadline;
	char *txt, idbuf[24];
	int err;

	*root = NULL;
	if (result)
		*result = NULL;
	if (!s->connected) {
		cJSON_Delete(req);
		return mri_cl_set_err(s, s->exited ? AMEBA_EEXITED : AMEBA_EIO, "%s",
				      s->exited ? "the target process exited" : "the session is not connected");
	}
	if (s->exited) {
		cJSON_Delete(req);
		return mri_cl_set_err(s, AMEBA_EEXITED, "the target process exited; its last counts are in "
				      "mri_final_reading");
	}
	snprintf(idbuf, sizeof(idbuf), "%" PRIu64, id);
	if (!req || mri_json_add(req, "v", cJSON_CreateNumber(MRI_PROTOCOL_VERSION)) ||
	    mri_json_add(req, "id", cJSON_CreateRaw(idbuf))) {
		cJSON_Delete(req);
		return mri_cl_set_err(s, AMEBA_ENOMEM, "out of memory");
	}
	txt = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (!txt)
		return mri_cl_set_err(s, AMEBA_ENOMEM, "out of memory");
	err = s->tr.send(s->tr.ctx, txt, strlen(txt), s->timeout_ms);
	cJSON_free(txt);
	if (err == AMEBA_ERANGE)
		return mri_cl_set_err(s, err, "the request exceeds the %u-byte message limit; send fewer "
				      "ranges or objects at once", MRI_MSG_MAX);
	/* A peer that hung up may still have left a message (refusal, exit)
	 * in the socket: read on and let that explain. */
	deadline = s->timeout_ms < 0 ? UINT64_MAX : mri_now_ns() + (uint64_t)s->timeout_ms * 1000000ull;
	for (;;) {
		int left = -1, got;
		char *msg = NULL;
		size_t len = 0;
		cJSON *m;
		const cJSON *jid, *ev;

		if (deadline != UINT64_MAX) {
			uint64_t now = mri_now_ns();

			left = now >= deadline ? 0 : (int)((deadline - now) / 1000000ull);
		}
		if (err && (left < 0 || left > 500))
			left = 500;	/* the send failed: only an explanation can still come */
		got = s->tr.recv(s->tr.ctx, &msg, &len, left);
		if (got == AMEBA_ETIMEDOUT && err)
			return mri_cl_set_err(s, err, "cannot send the request: %s", ameba_strerror(err));
		if (got == AMEBA_ETIMEDOUT)
			return mri_cl_set_err(s, got, "no reply from the target within %d ms", s->timeout_ms);
		if (got == AMEBA_EEXITED) {
			s->exited = 1;
			return mri_cl_set_err(s, got, "connection closed: the target exited or ended the session");
		}
		if (got == AMEBA_ERANGE)
			return mri_cl_set_err(s, AMEBA_EPROTO, "the target sent a message over the %u-byte limit",
					      MRI_MSG_MAX);
		if (got < 0)
			return mri_cl_set_err(s, got, "connection to the target lost: %s", ameba_strerror(got));
		m = mri_json_parse(msg, len);
		if (!m) {
			free(msg);
			return mri_cl_set_err(s, AMEBA_EPROTO, "the target sent something that is not JSON");
		}
		ev = mri_json_get(m, "event");
		if (ev) {
			const char *name = mri_cl_str_of(ev);

			if (name && !strcmp(name, "refused")) {
				free(msg);
				err = take_error(s, mri_json_get(m, "error"), "refused by the target: ");
				cJSON_Delete(m);
				return err;
			}
			if (name && !strcmp(name, "exit")) {
				take_exit(s, m);
				evq_push(s, msg);
				cJSON_Delete(m);
				return mri_cl_set_err(s, AMEBA_EEXITED, "the target process exited; its last counts "
						      "are in mri_final_reading");
			}
			evq_push(s, msg);
			cJSON_Delete(m);
			continue;
		}
		free(msg);
		jid = mri_json_get(m, "id");
		if (mri_json_type(jid) != cJSON_Number || mri_cl_num_u64(jid) != id) {
			cJSON_Delete(m);	/* the late reply of an abandoned request */
			continue;
		}
		if (mri_json_type(mri_json_get(m, "ok")) != cJSON_True) {
			err = take_error(s, mri_json_get(m, "error"), "");
			if (s->keep_error_reply)
				*root = m;
			else
				cJSON_Delete(m);
			if (err == AMEBA_EEXITED)
				await_exit(s, deadline);
			return err;
		}
		*root = m;
		if (result)
			*result = mri_json_get(m, "result");
		return 0;
	}
}

/* A request object {"op": op}. */
cJSON *mri_cl_request(const char *op)
{
	cJSON *r = cJSON_CreateObject();

	if (mri_json_add(r, "op", cJSON_CreateString(op))) {
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}

/* Frees a request that could not be completed; mri_cl_call() then reports ENOMEM. */
cJSON *mri_cl_drop(cJSON *req)
{
	cJSON_Delete(req);
	return NULL;
}

/* mri_cl_call() for requests whose result carries nothing the caller keeps. */
int mri_cl_call_simple(struct mri_session *s, cJSON *req)
{
	cJSON *root;
	int err = mri_cl_call(s, req, &root, NULL);

	cJSON_Delete(root);
	return err;
}

static int hello(struct mri_session *s)
{
	cJSON *req = mri_cl_request("hello"), *root;
	const cJSON *res;
	char who[64];
	int err;

	snprintf(who, sizeof(who), "libameba-mri pid %d", (int)getpid());
	if (req && mri_json_add(req, "client", cJSON_CreateString(who)))
		req = mri_cl_drop(req);
	err = mri_cl_call(s, req, &root, &res);
	if (err == AMEBA_EABI)
		snprintf(s->err + strlen(s->err), sizeof(s->err) - strlen(s->err),
			 " (this client speaks MRI protocol %d)", MRI_PROTOCOL_VERSION);
	if (!err) {
		const cJSON *f;

		cJSON_ArrayForEach(f, mri_json_get(res, "features"))
			if (mri_json_type(f) == cJSON_String && !strcmp(f->valuestring, "counters_product"))
				s->product = 1;
	}
	cJSON_Delete(root);
	return err;
}

static void disconnect(struct mri_session *s)
{
	if (s->connected && s->tr.close)
		s->tr.close(s->tr.ctx);
	s->connected = 0;
}

/* Connects to path; 0 or an error with the message set. */
static int connect_path(struct mri_session *s, const char *path, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct sock_tr *st;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return mri_cl_set_err(s, AMEBA_EINVAL, "socket path %s is longer than %zu bytes", path,
				      sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return mri_cl_set_err(s, AMEBA_EIO, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;

		close(fd);
		if (e == EACCES || e == EPERM)
			return mri_cl_set_err(s, AMEBA_EPERM, "permission denied: %s belongs to another user; "
					      "run as the target's user or as root", path);
		if (e == ENOENT)
			return mri_cl_set_err(s, AMEBA_ENOENT, "%s does not exist", path);
		if (e == ECONNREFUSED)
			return mri_cl_set_err(s, AMEBA_ENOENT, "%s: nobody listens (a stale socket: the process "
					      "exec'd a program without the ameba runtime, or exited)", path);
		return mri_cl_set_err(s, AMEBA_EIO, "connect %s: %s", path, strerror(e));
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		close(fd);
		return mri_cl_set_err(s, AMEBA_ENOMEM, "out of memory");
	}
	st->fd = fd;
	mri_reader_init(&st->rd, MRI_MSG_MAX);
	s->tr = (struct mri_transport){ .ctx = st, .send = sock_send, .recv = sock_recv,
					.close = sock_close };
	s->connected = 1;
	s->timeout_ms = timeout_ms;
	return 0;
}

/* In the runtime libcjson is loaded on first use (mri/json.h). */
static int json_gate(struct mri_session *s)
{
	const char *why;
	int err = mri_json_ready(&why);

	return err ? mri_cl_set_err(s, err, "%s", why) : 0;
}

int mri_open_path(struct mri_session **out, const char *socket_path, int timeout_ms)
{
	struct mri_session *s = session_new();
	int err;

	*out = s;
	if (!s)
		return AMEBA_ENOMEM;
	if ((err = json_gate(s)))
		return err;
	if (!socket_path)
		return mri_cl_set_err(s, AMEBA_EINVAL, "no socket path given");
	err = connect_path(s, socket_path, timeout_ms);
	if (!err)
		err = hello(s);
	if (err)
		disconnect(s);
	return err;
}

/* value of NAME= in the NUL-separated environment block of pid, or "". */
static void target_env(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64];
	size_t nlen = strlen(name);
	char *env;
	ssize_t n;
	int fd;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	env = malloc(1 << 20);
	if (!env) {
		close(fd);
		return;
	}
	n = read(fd, env, (1 << 20) - 1);
	close(fd);
	if (n > 0) {
		env[n] = '\0';
		for (char *p = env; p < env + n; p += strlen(p) + 1)
			if (!strncmp(p, name, nlen) && p[nlen] == '=') {
				snprintf(buf, len, "%s", p + nlen + 1);
				break;
			}
	}
	free(env);
}

/* "uid N (name)" of uid into buf. */
static const char *uid_text(uid_t uid, char *buf, size_t len)
{
	struct passwd *pw = getpwuid(uid);

	snprintf(buf, len, "uid %u%s%s%s", (unsigned)uid, pw ? " (" : "", pw ? pw->pw_name : "",
		 pw ? ")" : "");
	return buf;
}

/*
 * Is the directory of socket path the target's: a real directory (not a
 * symlink) owned by uid with no access for others? What keeps another
 * user from standing in for the target's server. 0, or AMEBA_EPERM with
 * the reason.
 */
static int socket_dir_ok(struct mri_session *s, const char *path, uid_t uid)
{
	char dir[300], who[128], want[128];
	const char *slash = strrchr(path, '/');
	struct stat st;

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 0, path);
	if (lstat(dir, &st))
		return mri_cl_set_err(s, AMEBA_ENOENT, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return mri_cl_set_err(s, AMEBA_EPERM, "refusing %s: %s is not a directory (a symlink or a "
				      "file); remove it", path, dir);
	if (st.st_uid != uid)
		return mri_cl_set_err(s, AMEBA_EPERM, "refusing %s: its directory %s belongs to %s, not to "
				      "the target's %s; remove the directory (the target then makes a "
				      "directory of its own)", path, dir, uid_text(st.st_uid, who, sizeof(who)),
				      uid_text(uid, want, sizeof(want)));
	if (st.st_mode & 077)
		return mri_cl_set_err(s, AMEBA_EPERM, "refusing %s: its directory %s has mode %04o (others "
				      "may replace the socket); chmod 700 it", path, dir,
				      (unsigned)(st.st_mode & 07777));
	return 0;
}

/* The server on the connected socket is process pid of uid? 0, or
 * AMEBA_EPERM with the reason. */
static int peer_ok(struct mri_session *s, const char *path, pid_t pid, uid_t uid)
{
	struct sock_tr *st = s->tr.ctx;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	char who[128], want[128];

	if (getsockopt(st->fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen))
		return mri_cl_set_err(s, AMEBA_EIO, "%s: SO_PEERCRED: %s", path, strerror(errno));
	if (cred.uid != uid || cred.pid != pid)
		return mri_cl_set_err(s, AMEBA_EPERM, "refusing %s: it is served by process %d of %s, not by "
				      "the target (process %d of %s)", path, (int)cred.pid,
				      uid_text(cred.uid, who, sizeof(who)), (int)pid,
				      uid_text(uid, want, sizeof(want)));
	return 0;
}

int mri_open_pid(struct mri_session **out, pid_t pid, int timeout_ms)
{
	struct mri_session *s = session_new();
	char cand[8][300], xdg[256], tried[2400], first_err[1024] = "";
	glob_t gl = { 0 };
	struct stat st;
	uid_t target_uid;
	int nr = 0, err = AMEBA_ENOENT, first_code = 0;
	size_t o = 0;
	char proc[64];
	const char *mine;

	*out = s;
	if (!s)
		return AMEBA_ENOMEM;
	if ((err = json_gate(s)))
		return err;
	if (pid <= 0)
		return mri_cl_set_err(s, AMEBA_EINVAL, "pid %d is not a process id", (int)pid);
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	if (stat(proc, &st))
		return mri_cl_set_err(s, AMEBA_ENOENT, "no process %d", (int)pid);
	target_uid = st.st_uid;

	/* Where the target's runtime put its socket (docs/mri.md, "Socket"). */
	target_env(pid, "XDG_RUNTIME_DIR", xdg, sizeof(xdg));
	if (xdg[0] == '/')
		snprintf(cand[nr++], sizeof(cand[0]), "%s/ameba/%d.sock", xdg, (int)pid);
	mine = getenv("XDG_RUNTIME_DIR");
	if (mine && mine[0] == '/' && strcmp(mine, xdg))
		snprintf(cand[nr++], sizeof(cand[0]), "%s/ameba/%d.sock", mine, (int)pid);
	snprintf(cand[nr++], sizeof(cand[0]), "/tmp/ameba-%u/%d.sock", (unsigned)target_uid, (int)pid);
	if (geteuid() != target_uid)
		snprintf(cand[nr++], sizeof(cand[0]), "/tmp/ameba-%u/%d.sock", (unsigned)geteuid(),
			 (int)pid);
	/* where a target puts it when /tmp/ameba-UID is not its own */
	snprintf(cand[nr], sizeof(cand[0]), "/tmp/ameba-%u.*/%d.sock", (unsigned)target_uid, (int)pid);
	if (glob(cand[nr], 0, NULL, &gl) == 0)
		for (size_t g = 0; g < gl.gl_pathc && nr < 8; g++)
			snprintf(cand[nr++], sizeof(cand[0]), "%s", gl.gl_pathv[g]);
	globfree(&gl);

	tried[0] = '\0';
	for (int i = 0; i < nr; i++) {
		o += (size_t)snprintf(tried + o, o < sizeof(tried) ? sizeof(tried) - o : 0, "%s%s",
				      i ? ", " : "", cand[i]);
		if (o >= sizeof(tried))
			o = sizeof(tried);
		if (stat(cand[i], &st) && errno == ENOENT)
			continue;
		err = socket_dir_ok(s, cand[i], target_uid);
		if (!err) {
			err = connect_path(s, cand[i], timeout_ms);
			if (!err && (err = peer_ok(s, cand[i], pid, target_uid)))
				disconnect(s);
		}
		if (!err) {
			err = hello(s);
			if (err)
				disconnect(s);
			return err;
		}
		if (!first_code) {
			first_code = err;
			snprintf(first_err, sizeof(first_err), "%s", s->err);
		}
	}
	if (first_code)
		return mri_cl_set_err(s, first_code, "%s", first_err);
	return mri_cl_set_err(s, AMEBA_ENOENT, "process %d has no MRI socket (tried %s): is it built with "
			      "`ameba cc`, and running without AMEBA_MRI=0?", (int)pid, tried);
}

int mri_open_local(struct mri_session **out)
{
	struct mri_session *s = session_new();
	mri_local_open_fn opener = __atomic_load_n(&local_open, __ATOMIC_ACQUIRE);
	int err;

	*out = s;
	if (!s)
		return AMEBA_ENOMEM;
	if (!opener)
		return mri_cl_set_err(s, AMEBA_ENOTSUP, "mri_open_local needs a program linked with "
				      "libameba-rt (built with `ameba cc`)");
	err = opener(&s->tr, s->err, sizeof(s->err));
	if (err)
		return err;
	s->connected = 1;
	mri_cl_enter(s);
	err = hello(s);
	mri_cl_leave(s);
	if (err)
		disconnect(s);
	return err;
}

void mri_close(struct mri_session *s)
{
	if (!s)
		return;
	if (s->connected && !s->exited) {
		int t = s->timeout_ms;

		/* bye ends the session on the server side at once (it detaches
		 * anyway when the connection drops; this just says so). */
		mri_cl_enter(s);
		s->timeout_ms = t < 0 || t > 2000 ? 2000 : t;
		mri_cl_call_simple(s, mri_cl_request("bye"));
		mri_cl_leave(s);
	}
	disconnect(s);
	for (int k = 0; k < SLOT_NR; k++)
		mri_cl_slot_reset(s, (enum slot)k);
	while (s->evq_nr)
		free(evq_pop(s));
	free(s->evq);
	for (uint32_t i = 0; i < s->nr_site_label; i++)
		free(s->site_label[i]);
	free(s->site_label);
	for (uint32_t i = 0; i < s->nr_old_labels; i++)
		free(s->old_labels[i]);
	free(s->old_labels);
	free(s);
}

const char *mri_errmsg(const struct mri_session *s)
{
	return s ? s->err : "out of memory";
}

int mri_set_timeout(struct mri_session *s, int timeout_ms)
{
	if (timeout_ms < -1)
		return mri_cl_set_err(s, AMEBA_EINVAL, "timeout_ms %d: want -1 (no limit) or >= 0", timeout_ms);
	s->timeout_ms = timeout_ms;
	return 0;
}


int mri_ping(struct mri_session *s)
{
	return GUARDED(s, mri_cl_call_simple(s, mri_cl_request("ping")));
}

static int do_mark(struct mri_session *s, const char *label, int *written, char *path,
		   size_t len)
{
	cJSON *req = mri_cl_request("mark"), *root;
	const cJSON *r;
	const char *t;
	int err, was = s->timeout_ms;

	if (req && mri_json_add(req, "label", cJSON_CreateString(label ? label : "")))
		req = mri_cl_drop(req);
	/* the target writes the whole snapshot before it replies: as long as
	 * an oracle dump takes (seconds for a million objects) */
	if (was >= 0 && was < MARK_TIMEOUT_MS)
		s->timeout_ms = MARK_TIMEOUT_MS;
	err = mri_cl_call(s, req, &root, &r);
	s->timeout_ms = was;
	if (err)
		return err;
	*written = mri_json_type(mri_json_get(r, "written")) == cJSON_True;
	t = mri_cl_str_of(mri_json_get(r, *written ? "path" : "why"));
	if (len)
		snprintf(path, len, "%s", t ? t : "");
	cJSON_Delete(root);
	return 0;
}

int mri_mark(struct mri_session *s, const char *label, int *written, char *path, size_t len)
{
	return GUARDED(s, do_mark(s, label, written, path, len));
}

/* ---- events ---- */

static int do_subscribe(struct mri_session *s, unsigned mask)
{
	cJSON *req = mri_cl_request("subscribe"), *a = cJSON_CreateArray();

	if (mri_json_add(req, "events", a) ||
	    ((mask & MRI_SUB_THREADS) && mri_json_push(a, cJSON_CreateString("threads"))) ||
	    ((mask & MRI_SUB_REGIONS) && mri_json_push(a, cJSON_CreateString("regions")))) {
		cJSON_Delete(req);
		req = NULL;
	}
	return mri_cl_call_simple(s, req);
}

int mri_subscribe(struct mri_session *s, unsigned mask)
{
	return GUARDED(s, do_subscribe(s, mask));
}

/* Turns an event text into *ev (slot SLOT_EVENT). 1 = an event, 0 = not an
 * event we know (skip it). */
static int parse_event(struct mri_session *s, char *msg, struct mri_event *ev)
{
	cJSON *m = mri_json_parse(msg, strlen(msg));
	const char *name = mri_cl_str_of(mri_json_get(m, "event"));
	const cJSON *data = mri_json_get(m, "data");
	int known = 1;

	free(msg);
	memset(ev, 0, sizeof(*ev));
	if (!name) {
		cJSON_Delete(m);
		return 0;
	}
	if (!strcmp(name, "thread_start") || !strcmp(name, "thread_exit")) {
		ev->kind = name[7] == 's' ? MRI_EV_THREAD_START : MRI_EV_THREAD_EXIT;
		ev->thread_id = (uint32_t)mri_cl_num_u64(mri_json_get(data, "id"));
		ev->tid = (int32_t)mri_cl_num_u64(mri_json_get(data, "tid"));
	} else if (!strcmp(name, "interval")) {
		ev->kind = MRI_EV_INTERVAL;
		known = mri_cl_parse_reading(s, SLOT_EVENT, data, &ev->reading) == 0;
	} else if (!strcmp(name, "exit")) {
		const cJSON *rd = mri_json_get(data, "reading");

		ev->kind = MRI_EV_EXIT;
		s->exited = 1;
		if (mri_json_type(rd) == cJSON_Object)
			mri_cl_parse_reading(s, SLOT_EVENT, rd, &ev->reading);
	} else if (!strcmp(name, "region")) {
		ev->kind = MRI_EV_REGION;
	} else {
		known = 0;
	}
	cJSON_Delete(m);
	return known;
}

static int do_next_event(struct mri_session *s, struct mri_event *ev, int timeout_ms)
{
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : mri_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	char *msg;

	for (;;) {
		int left = -1, got;
		size_t len;
		cJSON *m;

		msg = evq_pop(s);
		if (msg) {
			if (parse_event(s, msg, ev))
				return 0;
			continue;
		}
		if (s->exited || !s->connected)
			return mri_cl_set_err(s, AMEBA_EEXITED, "the target process exited");
		if (deadline != UINT64_MAX) {
			uint64_t now = mri_now_ns();

			left = now >= deadline ? 0 : (int)((deadline - now) / 1000000ull);
		}
		got = s->tr.recv(s->tr.ctx, &msg, &len, left);
		if (got == AMEBA_ETIMEDOUT)
			return mri_cl_set_err(s, got, "no event within %d ms", timeout_ms);
		if (got == AMEBA_EEXITED) {
			s->exited = 1;
			return mri_cl_set_err(s, got, "connection closed: the target exited");
		}
		if (got < 0)
			return mri_cl_set_err(s, got, "connection to the target lost: %s", ameba_strerror(got));
		m = mri_json_parse(msg, len);
		if (!mri_json_get(m, "event")) {
			cJSON_Delete(m);	/* a late reply */
			free(msg);
			continue;
		}
		if (!strcmp(mri_cl_str_of(mri_json_get(m, "event")) ?: "", "exit"))
			take_exit(s, m);
		cJSON_Delete(m);
		if (parse_event(s, msg, ev))
			return 0;
	}
}

int mri_next_event(struct mri_session *s, struct mri_event *ev, int timeout_ms)
{
	return GUARDED(s, do_next_event(s, ev, timeout_ms));
}

int mri_final_reading(struct mri_session *s, struct mri_reading *out)
{
	if (!s->has_final)
		return mri_cl_set_err(s, AMEBA_ENOENT, "no final reading: no experiment was running when the "
				      "target exited, or the connection was lost before the exit event");
	*out = s->final;
	return 0;
}

static int do_request(struct mri_session *s, const char *json, char **reply)
{
	cJSON *req = json ? mri_json_parse(json, strlen(json)) : NULL, *root = NULL;
	int err;

	*reply = NULL;
	if (mri_json_type(req) != cJSON_Object) {
		cJSON_Delete(req);
		return mri_cl_set_err(s, AMEBA_EINVAL, "the request is not a JSON object");
	}
	/* mri_cl_call() adds v and id: drop any the caller wrote. */
	cJSON_DeleteItemFromObjectCaseSensitive(req, "v");
	cJSON_DeleteItemFromObjectCaseSensitive(req, "id");
	s->keep_error_reply = 1;
	err = mri_cl_call(s, req, &root, NULL);
	s->keep_error_reply = 0;
	if (root) {
		*reply = cJSON_PrintUnformatted(root);
		cJSON_Delete(root);
	} else {
		cJSON *e = cJSON_CreateObject();

		if (!mri_json_add(e, "code", cJSON_CreateNumber(err)) &&
		    !mri_json_add(e, "message", cJSON_CreateString(s->err)))
			*reply = cJSON_PrintUnformatted(e);
		cJSON_Delete(e);
	}
	return err;
}

int mri_request(struct mri_session *s, const char *json, char **reply)
{
	return GUARDED(s, do_request(s, json, reply));
}
