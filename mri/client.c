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
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "json.h"
#include "mri.h"
#include "protocol.h"
#include "transport.h"

#define DEFAULT_TIMEOUT_MS 10000
#define MARK_TIMEOUT_MS 120000		/* a mark is an oracle dump */
#define EVENT_QUEUE_MAX 4096
#define MAX_PAGE 4096			/* the server's limit of one listing page */

/* Per-function storage of results (see the notes). */
enum slot {
	SLOT_PROCESS, SLOT_THREADS, SLOT_OBJECTS, SLOT_BINS, SLOT_REGIONS, SLOT_METRICS,
	SLOT_BACKEND, SLOT_READ, SLOT_STOP, SLOT_EVENT, SLOT_FINAL, SLOT_NR
};

struct slot_mem {
	cJSON *root;
	void *mem[6];
};

struct mri_session {
	uint32_t objects_total;		/* nr_total of the last objects reply */
	uint64_t objects_freed;		/* its nr_freed; UINT64_MAX: not given */
	struct mri_transport tr;
	int connected;
	int timeout_ms;
	uint64_t next_id;
	int exited;
	int attached;
	char err[1024];
	/* events received while waiting for replies: a ring of message texts */
	char **evq;
	uint32_t evq_head, evq_nr;
	uint64_t evq_dropped;
	/* the final reading carried by the exit event (arrays in SLOT_FINAL) */
	int has_final;
	struct mri_reading final;
	int keep_error_reply;		/* call() hands back error replies too (mri_request) */
	int product;			/* the server takes counters in the product form */
	struct slot_mem slots[SLOT_NR];
	/*
	 * Bin labels of the sites samples hit, by site id (samples_read names
	 * them). Labels handed out stay valid until mri_close, also when a
	 * site's label deepens: the replaced ones are kept in old_labels.
	 */
	char **site_label;
	uint32_t nr_site_label;
	char **old_labels;
	uint32_t nr_old_labels, cap_old_labels;
};

/* The runtime's in-process transport, when this program is linked with it. */
extern int mri_rt_local_open(struct mri_transport *t, char *msg, size_t len) __attribute__((weak));

static int set_err(struct mri_session *s, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int set_err(struct mri_session *s, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	return code;
}

static void slot_reset(struct mri_session *s, enum slot k)
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

static void enter(struct mri_session *s)
{
	if (s->connected && s->tr.enter)
		s->tr.enter(s->tr.ctx);
}

static void leave(struct mri_session *s)
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

static uint64_t num_u64(const cJSON *j)
{
	if (mri_json_type(j) != cJSON_Number || !(j->valuedouble >= 0))
		return 0;
	if (j->valuedouble >= 18446744073709551615.0)
		return UINT64_MAX;
	return (uint64_t)j->valuedouble;
}

static uint64_t hex_u64(const cJSON *j)
{
	if (mri_json_type(j) == cJSON_String && j->valuestring)
		return strtoull(j->valuestring, NULL, 16);
	return num_u64(j);
}

static const char *str_of(const cJSON *j)
{
	return mri_json_type(j) == cJSON_String ? j->valuestring : NULL;
}

/* [index, value, ...] (the non-zero entries) into v[nr]. */
static void pairs_into(const cJSON *a, uint64_t *v, uint32_t nr)
{
	const cJSON *x;

	for (x = mri_json_type(a) == cJSON_Array ? a->child : NULL; x && x->next; x = x->next->next) {
		uint64_t j = num_u64(x);

		if (j < nr)
			v[j] = num_u64(x->next);
	}
}

/* Fills r from a reading object; arrays go into slot k. */
static int parse_reading(struct mri_session *s, enum slot k, const cJSON *o, struct mri_reading *r)
{
	const cJSON *vals = mri_json_get(o, "values"), *dl = mri_json_get(o, "deltas");
	const cJSON *th = mri_json_get(o, "threads"), *e;
	uint64_t *v, *dv, *tv = NULL, *bv = NULL, *tbv = NULL;
	uint32_t *tid = NULL, nr = mri_json_count(vals), i = 0;

	memset(r, 0, sizeof(*r));
	if (mri_json_type(o) != cJSON_Object)
		return AMEBA_EPROTO;
	r->experiment = num_u64(mri_json_get(o, "experiment"));
	r->seq = num_u64(mri_json_get(o, "seq"));
	r->t_ns = num_u64(mri_json_get(o, "t_ns"));
	r->dt_ns = num_u64(mri_json_get(o, "dt_ns"));
	v = calloc(nr + 1, sizeof(*v));
	dv = calloc(nr + 1, sizeof(*dv));
	if (!v || !dv) {
		free(v);
		free(dv);
		return AMEBA_ENOMEM;
	}
	cJSON_ArrayForEach(e, vals) {
		if (i < nr)
			v[i++] = num_u64(e);
	}
	i = 0;
	cJSON_ArrayForEach(e, dl) {
		if (i < nr)
			dv[i++] = num_u64(e);
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
			tid[t] = (uint32_t)num_u64(mri_json_get(e, "id"));
			cJSON_ArrayForEach(x, mri_json_get(e, "values")) {
				if (i < nr)
					tv[(size_t)t * nr + i++] = num_u64(x);
			}
			/* [index, value, ...]: the non-zero values only */
			pairs_into(mri_json_get(e, "sparse"), tv + (size_t)t * nr, nr);
			if (tbv)
				pairs_into(mri_json_get(e, "before"), tbv + (size_t)t * nr, nr);
			t++;
		}
		r->nr_threads = nt;
	}
	free(s->slots[k].mem[0]);
	free(s->slots[k].mem[1]);
	free(s->slots[k].mem[2]);
	free(s->slots[k].mem[3]);
	free(s->slots[k].mem[4]);
	free(s->slots[k].mem[5]);
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
	if (mri_json_type(rd) == cJSON_Object && parse_reading(s, SLOT_FINAL, rd, &s->final) == 0)
		s->has_final = 1;
}

/* Error code and message of an {"error":{...}} object. */
static int take_error(struct mri_session *s, const cJSON *err, const char *what)
{
	int code = (int)(mri_json_type(mri_json_get(err, "code")) == cJSON_Number ?
			 mri_json_get(err, "code")->valuedouble : AMEBA_EPROTO);
	const char *m = str_of(mri_json_get(err, "message"));

	if (code >= 0 || code <= -AMEBA_E_NR)
		code = AMEBA_EPROTO;
	return set_err(s, code, "%s%s", what, m ? m : ameba_strerror(code));
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
		name = str_of(mri_json_get(m, "event"));
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

static int call(struct mri_session *s, cJSON *req, cJSON **root, const cJSON **result)
{
	uint64_t id = s->next_id++, deadline;
	char *txt, idbuf[24];
	int err;

	*root = NULL;
	if (result)
		*result = NULL;
	if (!s->connected) {
		cJSON_Delete(req);
		return set_err(s, s->exited ? AMEBA_EEXITED : AMEBA_EIO, "%s",
			       s->exited ? "the target process exited" : "the session is not connected");
	}
	if (s->exited) {
		cJSON_Delete(req);
		return set_err(s, AMEBA_EEXITED, "the target process exited; its last counts are in "
			       "mri_final_reading");
	}
	snprintf(idbuf, sizeof(idbuf), "%" PRIu64, id);
	if (!req || mri_json_add(req, "v", cJSON_CreateNumber(MRI_PROTOCOL_VERSION)) ||
	    mri_json_add(req, "id", cJSON_CreateRaw(idbuf))) {
		cJSON_Delete(req);
		return set_err(s, AMEBA_ENOMEM, "out of memory");
	}
	txt = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (!txt)
		return set_err(s, AMEBA_ENOMEM, "out of memory");
	err = s->tr.send(s->tr.ctx, txt, strlen(txt), s->timeout_ms);
	cJSON_free(txt);
	if (err == AMEBA_ERANGE)
		return set_err(s, err, "the request exceeds the %u-byte message limit; send fewer "
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
			return set_err(s, err, "cannot send the request: %s", ameba_strerror(err));
		if (got == AMEBA_ETIMEDOUT)
			return set_err(s, got, "no reply from the target within %d ms", s->timeout_ms);
		if (got == AMEBA_EEXITED) {
			s->exited = 1;
			return set_err(s, got, "connection closed: the target exited or ended the session");
		}
		if (got == AMEBA_ERANGE)
			return set_err(s, AMEBA_EPROTO, "the target sent a message over the %u-byte limit",
				       MRI_MSG_MAX);
		if (got < 0)
			return set_err(s, got, "connection to the target lost: %s", ameba_strerror(got));
		m = mri_json_parse(msg, len);
		if (!m) {
			free(msg);
			return set_err(s, AMEBA_EPROTO, "the target sent something that is not JSON");
		}
		ev = mri_json_get(m, "event");
		if (ev) {
			const char *name = str_of(ev);

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
				return set_err(s, AMEBA_EEXITED, "the target process exited; its last counts "
					       "are in mri_final_reading");
			}
			evq_push(s, msg);
			cJSON_Delete(m);
			continue;
		}
		free(msg);
		jid = mri_json_get(m, "id");
		if (mri_json_type(jid) != cJSON_Number || num_u64(jid) != id) {
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
static cJSON *request(const char *op)
{
	cJSON *r = cJSON_CreateObject();

	if (mri_json_add(r, "op", cJSON_CreateString(op))) {
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}

/* Frees a request that could not be completed; call() then reports ENOMEM. */
static cJSON *drop(cJSON *req)
{
	cJSON_Delete(req);
	return NULL;
}

/* call() for requests whose result carries nothing the caller keeps. */
static int call_simple(struct mri_session *s, cJSON *req)
{
	cJSON *root;
	int err = call(s, req, &root, NULL);

	cJSON_Delete(root);
	return err;
}

static int hello(struct mri_session *s)
{
	cJSON *req = request("hello"), *root;
	const cJSON *res;
	char who[64];
	int err;

	snprintf(who, sizeof(who), "libameba-mri pid %d", (int)getpid());
	if (req && mri_json_add(req, "client", cJSON_CreateString(who)))
		req = drop(req);
	err = call(s, req, &root, &res);
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
		return set_err(s, AMEBA_EINVAL, "socket path %s is longer than %zu bytes", path,
			       sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return set_err(s, AMEBA_EIO, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;

		close(fd);
		if (e == EACCES || e == EPERM)
			return set_err(s, AMEBA_EPERM, "permission denied: %s belongs to another user; "
				       "run as the target's user or as root", path);
		if (e == ENOENT)
			return set_err(s, AMEBA_ENOENT, "%s does not exist", path);
		if (e == ECONNREFUSED)
			return set_err(s, AMEBA_ENOENT, "%s: nobody listens (a stale socket: the process "
				       "exec'd a program without the ameba runtime, or exited)", path);
		return set_err(s, AMEBA_EIO, "connect %s: %s", path, strerror(e));
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		close(fd);
		return set_err(s, AMEBA_ENOMEM, "out of memory");
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

	return err ? set_err(s, err, "%s", why) : 0;
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
		return set_err(s, AMEBA_EINVAL, "no socket path given");
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
		return set_err(s, AMEBA_ENOENT, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return set_err(s, AMEBA_EPERM, "refusing %s: %s is not a directory (a symlink or a "
			       "file); remove it", path, dir);
	if (st.st_uid != uid)
		return set_err(s, AMEBA_EPERM, "refusing %s: its directory %s belongs to %s, not to "
			       "the target's %s; remove the directory (the target then makes a "
			       "directory of its own)", path, dir, uid_text(st.st_uid, who, sizeof(who)),
			       uid_text(uid, want, sizeof(want)));
	if (st.st_mode & 077)
		return set_err(s, AMEBA_EPERM, "refusing %s: its directory %s has mode %04o (others "
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
		return set_err(s, AMEBA_EIO, "%s: SO_PEERCRED: %s", path, strerror(errno));
	if (cred.uid != uid || cred.pid != pid)
		return set_err(s, AMEBA_EPERM, "refusing %s: it is served by process %d of %s, not by "
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
		return set_err(s, AMEBA_EINVAL, "pid %d is not a process id", (int)pid);
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	if (stat(proc, &st))
		return set_err(s, AMEBA_ENOENT, "no process %d", (int)pid);
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
		return set_err(s, first_code, "%s", first_err);
	return set_err(s, AMEBA_ENOENT, "process %d has no MRI socket (tried %s): is it built with "
		       "`ameba cc`, and running without AMEBA_MRI=0?", (int)pid, tried);
}

int mri_open_local(struct mri_session **out)
{
	struct mri_session *s = session_new();
	int err;

	*out = s;
	if (!s)
		return AMEBA_ENOMEM;
	if (!mri_rt_local_open)
		return set_err(s, AMEBA_ENOTSUP, "mri_open_local needs a program linked with "
			       "libameba-rt (built with `ameba cc`)");
	err = mri_rt_local_open(&s->tr, s->err, sizeof(s->err));
	if (err)
		return err;
	s->connected = 1;
	enter(s);
	err = hello(s);
	leave(s);
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
		enter(s);
		s->timeout_ms = t < 0 || t > 2000 ? 2000 : t;
		call_simple(s, request("bye"));
		leave(s);
	}
	disconnect(s);
	for (int k = 0; k < SLOT_NR; k++)
		slot_reset(s, (enum slot)k);
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
		return set_err(s, AMEBA_EINVAL, "timeout_ms %d: want -1 (no limit) or >= 0", timeout_ms);
	s->timeout_ms = timeout_ms;
	return 0;
}

/* Brackets a typed call: enter/leave around the transport work. */
#define GUARDED(s, expr)                  \
	({                                \
		int r_;                   \
		enter(s);                 \
		r_ = (expr);              \
		leave(s);                 \
		r_;                       \
	})

int mri_ping(struct mri_session *s)
{
	return GUARDED(s, call_simple(s, request("ping")));
}

static int do_mark(struct mri_session *s, const char *label, int *written, char *path,
		   size_t len)
{
	cJSON *req = request("mark"), *root;
	const cJSON *r;
	const char *t;
	int err, was = s->timeout_ms;

	if (req && mri_json_add(req, "label", cJSON_CreateString(label ? label : "")))
		req = drop(req);
	/* the target writes the whole snapshot before it replies: as long as
	 * an oracle dump takes (seconds for a million objects) */
	if (was >= 0 && was < MARK_TIMEOUT_MS)
		s->timeout_ms = MARK_TIMEOUT_MS;
	err = call(s, req, &root, &r);
	s->timeout_ms = was;
	if (err)
		return err;
	*written = mri_json_type(mri_json_get(r, "written")) == cJSON_True;
	t = str_of(mri_json_get(r, *written ? "path" : "why"));
	if (len)
		snprintf(path, len, "%s", t ? t : "");
	cJSON_Delete(root);
	return 0;
}

int mri_mark(struct mri_session *s, const char *label, int *written, char *path, size_t len)
{
	return GUARDED(s, do_mark(s, label, written, path, len));
}

/* ---- discovery ---- */

static int do_process(struct mri_session *s, struct mri_process_info *out)
{
	cJSON *root;
	const cJSON *r;
	int err = call(s, request("process"), &root, &r);

	memset(out, 0, sizeof(*out));
	if (err)
		return err;
	slot_reset(s, SLOT_PROCESS);
	s->slots[SLOT_PROCESS].root = root;
	out->pid = (int32_t)num_u64(mri_json_get(r, "pid"));
	out->protocol = (uint32_t)num_u64(mri_json_get(r, "protocol"));
	out->nr_threads = (uint32_t)num_u64(mri_json_get(r, "nr_threads"));
	out->attached = mri_json_type(mri_json_get(r, "attached")) == cJSON_True;
	out->active = mri_json_type(mri_json_get(r, "active")) == cJSON_True;
	out->program = str_of(mri_json_get(r, "program"));
	out->runtime_version = str_of(mri_json_get(r, "runtime_version"));
	out->backend = str_of(mri_json_get(r, "backend"));
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
	req = request("threads");
	if (add_uint(req, "offset", offset) || add_uint(req, "limit", max))
		req = drop(req);
	err = call(s, req, &root, &r);
	if (err)
		return err;
	cJSON_ArrayForEach(e, mri_json_get(r, "threads")) {
		if (n == max)
			break;
		out[n].id = (uint32_t)num_u64(mri_json_get(e, "id"));
		out[n].tid = (int32_t)num_u64(mri_json_get(e, "tid"));
		out[n].exited = mri_json_type(mri_json_get(e, "exited")) == cJSON_True;
		n++;
	}
	if (nr_total)
		*nr_total = (uint32_t)num_u64(mri_json_get(r, "nr_total"));
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
	req = request("objects");
	if (add_uint(req, "offset", *cursor) || add_uint(req, "limit", max))
		req = drop(req);
	if (req && q && q->kinds) {
		cJSON *k = cJSON_CreateArray();

		if (mri_json_add(req, "kinds", k))
			req = drop(req);
		for (int i = 0; req && i < MRI_OBJ_NR_KINDS; i++)
			if ((q->kinds & 1u << i) && mri_json_push(k, cJSON_CreateString(mri_obj_kind_name(i))))
				req = drop(req);
	}
	if (req && q && q->live_only && mri_json_add(req, "live", cJSON_CreateBool(1)))
		req = drop(req);
	if (req && q && q->name && mri_json_add(req, "name", cJSON_CreateString(q->name)))
		req = drop(req);
	if (req && mri_json_add(req, "compact", cJSON_CreateBool(1)))
		req = drop(req);
	err = call(s, req, &root, &r);
	if (err)
		return err;
	slot_reset(s, SLOT_OBJECTS);
	s->slots[SLOT_OBJECTS].root = root;
	s->objects_total = (uint32_t)num_u64(mri_json_get(r, "nr_total"));
	s->objects_freed = mri_json_get(r, "nr_freed") ? num_u64(mri_json_get(r, "nr_freed"))
						       : UINT64_MAX;
	if (mri_json_get(r, "rows")) {
		/* the compact form: [id, kind, start, end, size, site, bin, live, name] */
		const cJSON *names = mri_json_get(r, "names");
		uint32_t nr_names = mri_json_count(names), k = 0;
		const cJSON **name_of = calloc(nr_names + 1, sizeof(*name_of));

		if (!name_of)
			return set_err(s, AMEBA_ENOMEM, "out of memory");
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
			ni = (uint32_t)num_u64(f[8]);
			out[n].id = (uint32_t)num_u64(f[0]);
			out[n].kind = (int)num_u64(f[1]);
			if (out[n].kind < 0 || out[n].kind >= MRI_OBJ_NR_KINDS)
				out[n].kind = MRI_OBJ_OTHER;
			out[n].start = num_u64(f[2]);
			out[n].end = num_u64(f[3]);
			out[n].sz_bytes = num_u64(f[4]);
			out[n].site_id = (uint32_t)num_u64(f[5]);
			out[n].bin_id = mri_json_type(f[6]) == cJSON_Number && f[6]->valuedouble >= 0 ?
				(uint32_t)num_u64(f[6]) : MRI_NO_BIN;
			out[n].live = num_u64(f[7]) != 0;
			out[n].name = ni < nr_names ? str_of(name_of[ni]) : NULL;
			/* a file mapping's row adds [.., path, offset] */
			out[n].file = i == 11 ? str_of(f[9]) : NULL;
			out[n].file_off = out[n].file ? num_u64(f[10]) : 0;
			n++;
		}
		free(name_of);
		next = mri_json_get(r, "next_offset");
		*cursor = mri_json_type(next) == cJSON_Number ? (uint32_t)num_u64(next) : MRI_END;
		return (int)n;
	}
	cJSON_ArrayForEach(e, mri_json_get(r, "objects")) {
		const cJSON *bin = mri_json_get(e, "bin");

		if (n == max)
			break;
		out[n].id = (uint32_t)num_u64(mri_json_get(e, "id"));
		out[n].kind = kind_of(str_of(mri_json_get(e, "kind")));
		out[n].name = str_of(mri_json_get(e, "name"));
		out[n].start = hex_u64(mri_json_get(e, "start"));
		out[n].end = hex_u64(mri_json_get(e, "end"));
		out[n].sz_bytes = num_u64(mri_json_get(e, "size"));
		out[n].site_id = (uint32_t)num_u64(mri_json_get(e, "site"));
		out[n].bin_id = mri_json_type(bin) == cJSON_Number ? (uint32_t)num_u64(bin) : MRI_NO_BIN;
		out[n].live = mri_json_type(mri_json_get(e, "live")) == cJSON_True;
		out[n].file = str_of(mri_json_get(e, "file"));
		out[n].file_off = out[n].file ? num_u64(mri_json_get(e, "offset")) : 0;
		n++;
	}
	next = mri_json_get(r, "next_offset");
	*cursor = mri_json_type(next) == cJSON_Number ? (uint32_t)num_u64(next) : MRI_END;
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
	req = request("bins");
	if (add_uint(req, "offset", *cursor) || add_uint(req, "limit", max))
		req = drop(req);
	err = call(s, req, &root, &r);
	if (err)
		return err;
	slot_reset(s, SLOT_BINS);
	s->slots[SLOT_BINS].root = root;
	cJSON_ArrayForEach(e, mri_json_get(r, "bins")) {
		if (n == max)
			break;
		out[n].id = (uint32_t)num_u64(mri_json_get(e, "id"));
		out[n].name = str_of(mri_json_get(e, "name"));
		out[n].nr_objects = num_u64(mri_json_get(e, "nr_objects"));
		out[n].sz_bytes = num_u64(mri_json_get(e, "size"));
		out[n].via = str_of(mri_json_get(e, "via"));
		n++;
	}
	next = mri_json_get(r, "next_offset");
	*cursor = mri_json_type(next) == cJSON_Number ? (uint32_t)num_u64(next) : MRI_END;
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
	int err = call(s, request("regions"), &root, &r);

	if (err)
		return err;
	slot_reset(s, SLOT_REGIONS);
	s->slots[SLOT_REGIONS].root = root;
	cJSON_ArrayForEach(e, mri_json_get(r, "regions")) {
		if (n == max)
			break;
		out[n].id = (uint32_t)num_u64(mri_json_get(e, "id"));
		out[n].kind = str_of(mri_json_get(e, "kind"));
		out[n].name = str_of(mri_json_get(e, "name"));
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
	int err = call(s, request("metrics"), &root, &r);

	if (err)
		return err;
	slot_reset(s, SLOT_METRICS);
	s->slots[SLOT_METRICS].root = root;
	cJSON_ArrayForEach(e, mri_json_get(r, "metrics")) {
		if (n == max)
			break;
		out[n].name = str_of(mri_json_get(e, "name"));
		out[n].metric = ameba_metric_by_name(out[n].name);
		out[n].unit = str_of(mri_json_get(e, "unit"));
		out[n].desc = str_of(mri_json_get(e, "desc"));
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
	int err = call(s, request("backend"), &root, &r);

	memset(out, 0, sizeof(*out));
	if (err)
		return err;
	slot_reset(s, SLOT_BACKEND);
	s->slots[SLOT_BACKEND].root = root;
	out->name = str_of(mri_json_get(r, "name"));
	out->geometry = str_of(mri_json_get(r, "geometry"));
	cJSON_ArrayForEach(e, mri_json_get(r, "metrics")) {
		int m = ameba_metric_by_name(str_of(e));

		if (m >= 0 && out->nr_metrics < AMEBA_M_NR)
			out->metrics[out->nr_metrics++] = m;
	}
	cJSON_ArrayForEach(e, mri_json_get(r, "backends")) {
		if (out->nr_backends < MRI_MAX_BACKENDS && str_of(e))
			out->backends[out->nr_backends++] = str_of(e);
	}
	return 0;
}

int mri_backend(struct mri_session *s, struct mri_backend_info *out)
{
	return GUARDED(s, do_backend(s, out));
}

/* ---- attach ---- */

static int do_attach(struct mri_session *s, const char *backend)
{
	cJSON *req = request("attach");
	int err;

	if (req && backend && mri_json_add(req, "backend", cJSON_CreateString(backend))) {
		cJSON_Delete(req);
		req = NULL;
	}
	err = call_simple(s, req);
	if (!err)
		s->attached = 1;
	return err;
}

int mri_attach(struct mri_session *s, const char *backend)
{
	return GUARDED(s, do_attach(s, backend));
}

int mri_detach(struct mri_session *s)
{
	int err = GUARDED(s, call_simple(s, request("detach")));

	if (!err)
		s->attached = 0;
	return err;
}

/* ---- experiments ---- */

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
	if (c->nr_bins) {
		a = cJSON_CreateArray();
		if (mri_json_add(o, "bins", a))
			return -1;
		for (uint32_t i = 0; i < c->nr_bins; i++)
			if (!c->bins[i] || mri_json_push(a, cJSON_CreateString(c->bins[i])))
				return -1;
	}
	if (c->nr_except) {
		a = cJSON_CreateArray();
		if (mri_json_add(o, "except", a))
			return -1;
		for (uint32_t i = 0; i < c->nr_except; i++)
			if (!c->except[i] || mri_json_push(a, cJSON_CreateString(c->except[i])))
				return -1;
	}
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
	cJSON *req = request("start"), *arr = NULL, *root;
	const cJSON *r;
	int err, was = s->timeout_ms;
	uint32_t places;

	for (uint32_t i = 0; i < nr; i++)
		if (!ameba_metric_info(c[i].metric)) {
			cJSON_Delete(req);
			return set_err(s, AMEBA_EINVAL, "counter %u: metric %d is not an AMEBA_M_* value",
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
		return set_err(s, AMEBA_ENOMEM, "out of memory");
	}
	if ((interval_ms && add_uint(req, "interval_ms", interval_ms)) ||
	    (replace && add_uint(req, "replace", *replace)) ||
	    (mark && mri_json_add(req, "mark", cJSON_CreateString(mark)))) {
		cJSON_Delete(req);
		return set_err(s, AMEBA_ENOMEM, "out of memory");
	}
	/* with a mark, the reply waits for the snapshot (as mri_mark's) */
	if (mark && was >= 0 && was < MARK_TIMEOUT_MS)
		s->timeout_ms = MARK_TIMEOUT_MS;
	err = call(s, req, &root, &r);
	s->timeout_ms = was;
	if (err)
		return err;
	if (experiment)
		*experiment = num_u64(mri_json_get(r, "experiment"));
	if (replace) {
		struct mri_reading tmp;

		err = parse_reading(s, SLOT_STOP, mri_json_get(r, "replaced"), final ? final : &tmp);
		if (err) {
			cJSON_Delete(root);
			return set_err(s, err, "cannot read the replaced experiment's reading: %s",
				       ameba_strerror(err));
		}
	}
	if (mark) {
		const cJSON *m = mri_json_get(r, "mark");
		const char *t;

		*written = mri_json_type(mri_json_get(m, "written")) == cJSON_True;
		t = str_of(mri_json_get(m, *written ? "path" : "why"));
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
		return set_err(s, AMEBA_EINVAL, "mri_experiment_start_marked needs a mark label");
	return GUARDED(s, do_start(s, c, nr, interval_ms, mark, experiment, written, path, len, NULL,
				   NULL));
}

static int do_read(struct mri_session *s, uint64_t experiment, unsigned flags, enum slot k,
		   const char *op, struct mri_reading *out)
{
	cJSON *req = request(op), *root;
	const cJSON *r;
	struct mri_reading tmp;
	int err;

	if (add_uint(req, "experiment", experiment) ||
	    ((flags & MRI_READ_THREADS) && (mri_json_add(req, "threads", cJSON_CreateBool(1)) ||
					      mri_json_add(req, "sparse", cJSON_CreateBool(1)))))
		req = drop(req);
	err = call(s, req, &root, &r);
	if (err)
		return err;
	err = parse_reading(s, k, r, out ? out : &tmp);
	cJSON_Delete(root);
	if (err)
		return set_err(s, err, "cannot read the reading: %s", ameba_strerror(err));
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
	cJSON *req = request("samples_start");

	if (!mi) {
		cJSON_Delete(req);
		return set_err(s, AMEBA_EINVAL, "metric %d is not an AMEBA_M_* value", metric);
	}
	if (mri_json_add(req, "metric", cJSON_CreateString(mi->name)) ||
	    add_uint(req, "period", period) || mri_json_add(req, "random", cJSON_CreateBool(randomized)) ||
	    add_uint(req, "seed", seed))
		req = drop(req);
	return call_simple(s, req);
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
	cJSON *req = request("samples_read"), *root;
	const cJSON *r, *e;
	uint32_t n = 0;
	int err;

	if (max == 0)
		max = 1;
	if (max > 4096)
		max = 4096;
	if (add_uint(req, "max", max))
		req = drop(req);
	err = call(s, req, &root, &r);
	if (err)
		return err;
	/* the labels first: the samples point at them */
	cJSON_ArrayForEach(e, mri_json_get(r, "sites")) {
		const cJSON *x = e->child;

		if (x && site_label_set(s, (uint32_t)num_u64(x), str_of(x->next))) {
			cJSON_Delete(root);
			return set_err(s, AMEBA_ENOMEM, "out of memory naming sample sites");
		}
	}
	cJSON_ArrayForEach(e, mri_json_get(r, "samples")) {
		const cJSON *x = e->child, *site;

		if (n == max)
			break;
		out[n].addr = hex_u64(x);
		out[n].pc = x ? hex_u64(x->next) : 0;
		out[n].thread_id = x && x->next ? (uint32_t)num_u64(x->next->next) : 0;
		out[n].weight = x && x->next && x->next->next ? (uint32_t)num_u64(x->next->next->next) : 0;
		/* the fifth element: an older server sends four */
		site = x && x->next && x->next->next && x->next->next->next ?
		       x->next->next->next->next : NULL;
		out[n].site_id = site ? (uint32_t)num_u64(site) : 0;
		out[n].site = out[n].site_id && out[n].site_id < s->nr_site_label ?
			      s->site_label[out[n].site_id] : NULL;
		n++;
	}
	if (lost)
		*lost = num_u64(mri_json_get(r, "lost"));
	cJSON_Delete(root);
	return (int)n;
}

int mri_samples_read(struct mri_session *s, struct mri_sample *out, uint32_t max, uint64_t *lost)
{
	return GUARDED(s, do_samples_read(s, out, max, lost));
}

int mri_samples_stop(struct mri_session *s)
{
	return GUARDED(s, call_simple(s, request("samples_stop")));
}

/* ---- events ---- */

static int do_subscribe(struct mri_session *s, unsigned mask)
{
	cJSON *req = request("subscribe"), *a = cJSON_CreateArray();

	if (mri_json_add(req, "events", a) ||
	    ((mask & MRI_SUB_THREADS) && mri_json_push(a, cJSON_CreateString("threads"))) ||
	    ((mask & MRI_SUB_REGIONS) && mri_json_push(a, cJSON_CreateString("regions")))) {
		cJSON_Delete(req);
		req = NULL;
	}
	return call_simple(s, req);
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
	const char *name = str_of(mri_json_get(m, "event"));
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
		ev->thread_id = (uint32_t)num_u64(mri_json_get(data, "id"));
		ev->tid = (int32_t)num_u64(mri_json_get(data, "tid"));
	} else if (!strcmp(name, "interval")) {
		ev->kind = MRI_EV_INTERVAL;
		known = parse_reading(s, SLOT_EVENT, data, &ev->reading) == 0;
	} else if (!strcmp(name, "exit")) {
		const cJSON *rd = mri_json_get(data, "reading");

		ev->kind = MRI_EV_EXIT;
		s->exited = 1;
		if (mri_json_type(rd) == cJSON_Object)
			parse_reading(s, SLOT_EVENT, rd, &ev->reading);
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
			return set_err(s, AMEBA_EEXITED, "the target process exited");
		if (deadline != UINT64_MAX) {
			uint64_t now = mri_now_ns();

			left = now >= deadline ? 0 : (int)((deadline - now) / 1000000ull);
		}
		got = s->tr.recv(s->tr.ctx, &msg, &len, left);
		if (got == AMEBA_ETIMEDOUT)
			return set_err(s, got, "no event within %d ms", timeout_ms);
		if (got == AMEBA_EEXITED) {
			s->exited = 1;
			return set_err(s, got, "connection closed: the target exited");
		}
		if (got < 0)
			return set_err(s, got, "connection to the target lost: %s", ameba_strerror(got));
		m = mri_json_parse(msg, len);
		if (!mri_json_get(m, "event")) {
			cJSON_Delete(m);	/* a late reply */
			free(msg);
			continue;
		}
		if (!strcmp(str_of(mri_json_get(m, "event")) ?: "", "exit"))
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
		return set_err(s, AMEBA_ENOENT, "no final reading: no experiment was running when the "
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
		return set_err(s, AMEBA_EINVAL, "the request is not a JSON object");
	}
	/* call() adds v and id: drop any the caller wrote. */
	cJSON_DeleteItemFromObjectCaseSensitive(req, "v");
	cJSON_DeleteItemFromObjectCaseSensitive(req, "id");
	s->keep_error_reply = 1;
	err = call(s, req, &root, NULL);
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
