/*
 * mri_server.c - the MRI server inside libameba-rt: a thread that lets one
 * client at a time attach to this process over a Unix socket, the monitor
 * operations the dispatcher (mri/dispatch.c) runs on, and the in-process
 * transport behind mri_open_local() (registered with the client library at
 * mri_server_start, transport.h). docs/mri.md is the user's view.
 *
 * Notes:
 *  - The server thread is not an application thread. It is created with
 *    libc's pthread_create (not our interposer), so it never gets an ameba
 *    thread id, and it runs with mon_self pointing at a private record whose
 *    in_rt is permanently 1: every interposer passes straight through for
 *    it (its own mallocs are not heap objects, its memcpys are not
 *    accesses). It blocks every signal, so the program's handlers never run
 *    on it.
 *  - The application never waits for the server. Application threads touch
 *    MRI state only at exit (the exit event, bounded by timeouts) and in
 *    in-process sessions they opened themselves. A client that stops
 *    reading is dropped after MRI_SEND_TIMEOUT_MS; one that vanishes is
 *    noticed at the next read; either way its session ends as if it had
 *    detached: counters and samples disarmed, the hooks dormant again.
 *  - Socket: $XDG_RUNTIME_DIR/ameba/PID.sock, else /tmp/ameba-UID/PID.sock,
 *    else (that directory is someone else's, or broken) a directory of our
 *    own made by mkdtemp, /tmp/ameba-UID.XXXXXX/PID.sock, removed at exit:
 *    another user who pre-creates /tmp/ameba-UID cannot switch profiling
 *    off. The directory must be ours, a real directory (not a symlink) and
 *    mode 0700: the directory is what keeps other users out; SO_PEERCRED
 *    (same uid, or root) is the second check, and a refused peer is told
 *    why before the connection closes. The client checks the same from
 *    its side (mri/client.c, mri_open_pid). The socket is made on the initialising
 *    thread, before main(): a tool that starts a target can connect at once.
 *  - libcjson is loaded when the first client connects (mri_cjson.c): a
 *    program that is never attached to never loads it.
 *  - Locks: srv.lock guards the session (the dispatcher, who owns it);
 *    srv.send_lock orders writes to the client socket between the server
 *    thread and the exit handler. Order: lock, then send_lock.
 *  - fork: only the forking thread survives, so the child closes what it
 *    inherited (without touching the parent's socket file or session),
 *    returns to dormancy if the parent's client had attached, and starts a
 *    server of its own.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "mon.h"
#include "seq.h"
#include "mri_cjson.h"
#include "dispatch.h"
#include "protocol.h"
#include "transport.h"

#define MRI_SEND_TIMEOUT_MS 1000	/* a client that does not read this long is dropped */
#define MRI_HELLO_TIMEOUT_MS 10000	/* a client that sends nothing this long is dropped */
#define MRI_EXIT_WAIT_MS 1000		/* the exit handler waits at most this for each lock */
#define MRI_REFUSAL_TIMEOUT_MS 200
#define MRI_BACKLOG 8
#define MRI_EVENTS_PER_TURN 64

_Static_assert((int)MRI_OBJ_GLOBAL == (int)MON_OBJ_GLOBAL && (int)MRI_OBJ_HEAP == (int)MON_OBJ_HEAP &&
		       (int)MRI_OBJ_MMAP == (int)MON_OBJ_MMAP && (int)MRI_OBJ_STACK == (int)MON_OBJ_STACK &&
		       (int)MRI_OBJ_TLS == (int)MON_OBJ_TLS && (int)MRI_OBJ_OTHER == (int)MON_OBJ_OTHER &&
		       (int)MRI_OBJ_NR_KINDS == (int)MON_OBJ_NR_KINDS,
	       "the MRI's object kinds are the monitor's");

enum owner { OWNER_NONE, OWNER_REMOTE, OWNER_LOCAL };

static struct {
	pthread_mutex_t lock;		/* the session: disp, owner, peer */
	pthread_mutex_t send_lock;	/* writes to client_fd; exiting */
	int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	int atexit_done;
	int running;			/* a server thread serves this process (atomic) */
	pid_t pid;			/* the process the socket belongs to */
	int listen_fd, client_fd, wake_rd, wake_wr;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char own_dir[sizeof(((struct sockaddr_un *)0)->sun_path)];	/* made by mkdtemp, removed at exit */
	enum owner owner;
	pid_t peer_pid;
	struct mri_disp *disp;
	uint32_t nr_msgs;		/* complete messages of the current client */
	uint64_t accepted_ns;
	int exiting;			/* the exit event was sent: say nothing more */
	int we_activated;		/* attach started delivery; detach stops it */
	int replace_delay_ms;		/* tests: see serve_message */
	struct mri_reader rd;
} srv = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.send_lock = PTHREAD_MUTEX_INITIALIZER,
	.listen_fd = -1, .client_fd = -1, .wake_rd = -1, .wake_wr = -1,
};

/* The server thread's mon_self: in_rt for ever, never registered. */
static struct mon_thread srv_self = { .id = UINT32_MAX, .in_rt = 1 };

/* ---- the monitor operations (struct mri_monitor_ops over mon_*) ---- */

/* Site bins for naming, rebuilt when new sites appeared (server or local
 * session thread, under srv.lock). */
static struct mon_site_bins bins;
static int bins_built;

static void bins_refresh(void)
{
	if (bins_built && bins.nr_sites == mon_site_nr())
		return;
	if (bins_built)
		mon_site_bins_free(&bins);
	bins_built = mon_site_bins_build(&bins) == 0;
}

static int op_process(void *ctx, struct mri_proc_rec *out)
{
	static char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	exe[n > 0 ? n : 0] = '\0';
	out->pid = (int32_t)getpid();
	out->nr_threads = mon_thread_nr();
	out->active = __atomic_load_n(&mon_active, __ATOMIC_RELAXED) != 0;
	out->program = exe;
	out->backend = mon_backend ? mon_backend->name : NULL;
	return 0;
}

static uint32_t op_nr_threads(void *ctx)
{
	return mon_thread_nr();
}

static int op_thread(void *ctx, uint32_t id, struct mri_thread_info *out)
{
	struct mon_thread *t = mon_thread_get(id);

	if (!t)
		return AMEBA_ENOENT;
	out->id = t->id;
	out->tid = (int32_t)t->tid;
	out->exited = __atomic_load_n(&t->exited, __ATOMIC_ACQUIRE) != 0;
	return 0;
}

static uint32_t op_nr_objects(void *ctx)
{
	return mon_objmap_nr_objs();
}

static uint64_t op_nr_freed(void *ctx)
{
	return mon_objmap_nr_killed();
}

static int op_object(void *ctx, uint32_t id, struct mri_object *out, char *name)
{
	struct mon_obj *o;
	uint8_t flags;

	if (id >= mon_objmap_nr_objs() || !(o = mon_objmap_get(id)))
		return AMEBA_ENOENT;
	/* flags first (acquire): a record is published by its LIVE store. */
	flags = __atomic_load_n(&o->flags, __ATOMIC_ACQUIRE);
	if (flags & MON_OBJF_RETIRED)
		return AMEBA_ENOENT;	/* a site's folded counts (fold.c), not an object */
	out->id = id;
	out->kind = o->kind < MON_OBJ_NR_KINDS ? o->kind : MON_OBJ_OTHER;
	out->live = (flags & MON_OBJF_LIVE) != 0;
	out->start = __atomic_load_n(&o->start, __ATOMIC_RELAXED);
	out->end = __atomic_load_n(&o->end, __ATOMIC_RELAXED);
	out->sz_bytes = o->sz_bytes;
	out->site_id = (o->kind == MON_OBJ_HEAP || o->kind == MON_OBJ_MMAP) ? o->site_id : 0;
	out->bin_id = MRI_NO_BIN;
	out->name = NULL;
	out->file = NULL;
	out->file_off = 0;
	if (o->kind == MON_OBJ_MMAP && (flags & (MON_OBJF_LIVE | MON_OBJF_ACCESSED))) {
		/* A file's view (immortal), unless the record died and was
		 * recycled meanwhile (its name is then a free-list link):
		 * recycling clears the flags before it writes the link and
		 * a new block gets a new seq (objmap.c), so the same seq and
		 * flags still set after the name was read mean the name was
		 * the record's. */
		uint64_t seq = __atomic_load_n(&o->seq, __ATOMIC_RELAXED);
		const char *view = __atomic_load_n(&o->name, __ATOMIC_ACQUIRE);

		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (view && (__atomic_load_n(&o->flags, __ATOMIC_RELAXED) &
			     (MON_OBJF_LIVE | MON_OBJF_ACCESSED)) &&
		    __atomic_load_n(&o->seq, __ATOMIC_RELAXED) == seq) {
			out->file = view;
			out->file_off = mon_file_view_off(view);
		}
	}
	if (name) {
		bins_refresh();
		if (out->site_id && bins_built)
			out->bin_id = mon_site_bins_of(&bins, out->site_id);
		if (out->bin_id != MRI_NO_BIN && out->bin_id >= bins.nr_bins)
			out->bin_id = MRI_NO_BIN;
		out->name = mon_obj_label(o, &bins, name, MRI_NAME_MAX);
	}
	return 0;
}

static uint32_t op_nr_bins(void *ctx)
{
	bins_refresh();
	return bins_built ? bins.nr_bins : 0;
}

static int op_site_label(void *ctx, uint32_t site_id, char *name)
{
	uint32_t b;

	bins_refresh();
	if (!bins_built)
		return AMEBA_ENOENT;
	b = mon_site_bins_of(&bins, site_id);
	if (b >= bins.nr_bins)
		return AMEBA_ENOENT;
	snprintf(name, MRI_NAME_MAX, "%s", bins.label[b]);
	return 0;
}

static int op_bin(void *ctx, uint32_t id, struct mri_bin *out, char *name)
{
	if (!bins_built || id >= bins.nr_bins)
		return AMEBA_ENOENT;
	out->id = id;
	out->nr_objects = bins.nr_allocs[id];
	out->sz_bytes = bins.bytes[id];
	out->name = NULL;
	out->via = bins.via ? bins.via[id] : NULL;	/* valid until the bins are rebuilt */
	if (name) {
		snprintf(name, MRI_NAME_MAX, "%s", bins.label[id]);
		out->name = name;
	}
	return 0;
}

/* Weak so that a runtime built without the simulator still links. */
extern size_t mon_backend_sim_geometry(char *buf, size_t len) __attribute__((weak));

/* The backends compiled into this runtime: the runtime rows of the backend
 * table (mri/common.c) rt.c has the ops of, in table order. */
static uint32_t op_backends(void *ctx, const char **names, uint32_t max)
{
	const struct ameba_backend_info *row;
	uint32_t n = 0;

	for (int i = 0; (row = ameba_backend_info(i)) && n < max; i++)
		if (row->where == AMEBA_BACKEND_RUNTIME && mon_backend_by_name(row->name))
			names[n++] = row->name;
	return n;
}

static int op_attach(void *ctx, const char *name, const char **chosen)
{
	int was_active = __atomic_load_n(&mon_active, __ATOMIC_ACQUIRE) != 0;
	int err;

	/* A process runs one backend for its lifetime: the default is the one
	 * already started (AMEBA_ORACLE, an earlier session), else sim, else
	 * count. */
	if (!name && mon_backend)
		name = mon_backend->name;
	if (name) {
		err = mon_activate(name);
	} else {
		err = mon_activate("sim");
		if (err == AMEBA_ENOENT)
			err = mon_activate("count");
	}
	if (err)
		return err;
	*chosen = mon_backend->name;
	srv.we_activated = !was_active;
	return 0;
}

static void op_detach(void *ctx)
{
	mon_sampled_stop();
	mon_cond_arm(NULL, 0, NULL);
	mon_sample_arm(0, 0, 0, 0);
	if (srv.we_activated)
		mon_deactivate();
	srv.we_activated = 0;
}

static int op_backend(void *ctx, struct mri_backend_rec *out)
{
	static char geometry[2048];

	memset(out, 0, sizeof(*out));
	if (!mon_backend)
		return 0;
	out->name = mon_backend->name;
	for (int s = 0; s < mon_nr_slots && s < AMEBA_M_NR; s++)
		out->metrics[out->nr_metrics++] = mon_metric_of_slot[s];
	if (!strcmp(mon_backend->name, "sim") && mon_backend_sim_geometry &&
	    mon_backend_sim_geometry(geometry, sizeof(geometry)) > 0)
		out->geometry = geometry;
	return 0;
}

/*
 * The sites of the bins ids[0..nr) (the bin table the dispatcher resolved
 * the names with; sites newer than it are the next experiment's), in
 * site order, into out (when not NULL), and the object kinds of the kind
 * bins [stack] / [tls] into *kinds (when not NULL). Returns how many sites.
 */
static uint32_t bin_sites(const uint32_t *ids, uint32_t nr, uint32_t *out, uint32_t *kinds)
{
	uint32_t n = 0;

	for (uint32_t j = 0; kinds && j < nr; j++)
		*kinds |= ids[j] == MRI_BIN_STACK ? 1u << MON_OBJ_STACK :
			  ids[j] == MRI_BIN_TLS ? 1u << MON_OBJ_TLS : 0;
	for (uint32_t site = 1; nr && site <= bins.nr_sites; site++) {
		for (uint32_t j = 0; j < nr; j++) {
			if (ids[j] == bins.bin_of[site]) {
				if (out)
					out[n] = site;
				n++;
				break;
			}
		}
	}
	return n;
}

static uint64_t key_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

/*
 * For sampled mode (mon_sampled_armed): a key per counter of what it
 * counts - metric, ranges, threads, and the sites and kinds its bins and
 * exceptions stand for (bin ids are the table's of the moment; sites
 * stay). Equal keys: the same counter. NULL when out of memory or not
 * sampled (the caller frees it).
 */
static uint64_t *cond_keys(const struct mri_cond *c, uint32_t nr)
{
	uint64_t *keys;
	uint32_t *sites = NULL, cap = 0;

	if (!mon_sampled_on() || !nr || !(keys = mon_calloc(nr, sizeof(*keys))))
		return NULL;
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t h = key_mix(0x243F6A8885A308D3ull, (uint64_t)c[i].metric);

		for (uint32_t j = 0; j < c[i].nr_ranges; j++)
			h = key_mix(key_mix(h, c[i].ranges[j].start), c[i].ranges[j].end);
		h = key_mix(h, 0x1000000000ull + c[i].nr_threads);
		for (uint32_t j = 0; j < c[i].nr_threads; j++)
			h = key_mix(h, c[i].threads[j]);
		for (int x = 0; x < 2; x++) {
			const uint32_t *ids = x ? c[i].except : c[i].bins;
			uint32_t n = x ? c[i].nr_except : c[i].nr_bins, kinds = 0, k;

			k = bin_sites(ids, n, NULL, NULL);
			if (k > cap) {
				mon_free(sites);
				cap = k;
				if (!(sites = mon_calloc(cap, sizeof(*sites)))) {
					mon_free(keys);
					return NULL;
				}
			}
			k = bin_sites(ids, n, sites, &kinds);
			h = key_mix(h, 0x2000000000ull + ((uint64_t)kinds << 33) + k);
			for (uint32_t j = 0; j < k; j++)
				h = key_mix(h, sites[j]);
		}
		keys[i] = h;
	}
	mon_free(sites);
	return keys;
}

/* Arms c (mon_cond_arm), and with a label writes that mark at the same
 * instant (mon_oracle_mark_armed; *mark_err its result); keys: cond_keys'
 * (NULL: none). */
static int arm(const struct mri_cond *c, uint32_t nr, uint64_t *gen, const char *label,
	       char *path, size_t len, char *why, size_t wlen, int *mark_err,
	       struct mon_cond_final *fin, const uint64_t *keys)
{
	struct mon_cond_spec *specs;
	struct mon_range *ranges;
	uint32_t nr_ranges = 0, k = 0, *sites, ks = 0;
	uint64_t nr_sites = 0;
	int err;

	if (nr == 0)
		return mon_cond_arm(NULL, 0, gen);
	for (uint32_t i = 0; i < nr; i++) {
		nr_ranges += c[i].nr_ranges;
		if (c[i].nr_bins && !bins_built)
			return AMEBA_EINVAL;	/* the dispatcher resolved them: cannot be */
		if (c[i].nr_except && !bins_built)
			return AMEBA_EINVAL;
		nr_sites += bin_sites(c[i].bins, c[i].nr_bins, NULL, NULL);
		nr_sites += bin_sites(c[i].except, c[i].nr_except, NULL, NULL);
	}
	specs = mon_calloc(nr, sizeof(*specs));
	ranges = mon_calloc(nr_ranges + 1, sizeof(*ranges));
	sites = mon_calloc(nr_sites + 1, sizeof(*sites));
	if (!specs || !ranges || !sites) {
		mon_free(specs);
		mon_free(ranges);
		mon_free(sites);
		return AMEBA_ENOMEM;
	}
	for (uint32_t i = 0; i < nr; i++) {
		specs[i].metric = c[i].metric;
		specs[i].nr_ranges = c[i].nr_ranges;
		specs[i].ranges = ranges + k;
		for (uint32_t j = 0; j < c[i].nr_ranges; j++, k++) {
			ranges[k].start = (uintptr_t)c[i].ranges[j].start;
			ranges[k].end = (uintptr_t)c[i].ranges[j].end;
		}
		specs[i].nr_threads = c[i].nr_threads;
		specs[i].threads = c[i].threads;
		specs[i].sites = sites + ks;
		specs[i].nr_sites = bin_sites(c[i].bins, c[i].nr_bins, sites + ks, &specs[i].kinds);
		ks += specs[i].nr_sites;
		specs[i].except_sites = sites + ks;
		specs[i].nr_except_sites = bin_sites(c[i].except, c[i].nr_except, sites + ks,
						     &specs[i].except_kinds);
		ks += specs[i].nr_except_sites;
	}
	err = fin   ? mon_cond_arm_swap(specs, nr, gen, fin) :
	      label ? mon_oracle_mark_armed(label, specs, nr, gen, path, len, why, wlen, mark_err) :
		      mon_cond_arm(specs, nr, gen);
	if (!err && fin)
		err = fin->err;	/* armed; the old set's reading failed (ENOMEM) */
	if (!err)
		mon_sampled_armed(*gen, nr, keys);
	mon_free(specs);
	mon_free(ranges);
	mon_free(sites);
	return err;
}

static int op_cond_arm(void *ctx, const struct mri_cond *c, uint32_t nr, uint64_t *gen)
{
	uint64_t *keys = cond_keys(c, nr);
	int err;

	mon_seq_sync();		/* what was done before the arm counts before it */
	err = arm(c, nr, gen, NULL, NULL, 0, NULL, 0, NULL, NULL, keys);
	mon_free(keys);
	return err;
}

static int op_cond_swap(void *ctx, const struct mri_cond *c, uint32_t nr, uint64_t *gen,
			uint64_t old_gen, uint64_t *total, uint64_t *before, uint32_t old_nr,
			mri_per_thread_fn per_thread, void *arg)
{
	struct mon_cond_final fin = { .gen = old_gen, .total = total, .before = before,
				      .nr = old_nr, .per_thread = per_thread, .arg = arg };
	int err;

	if (mon_sampled_on()) {
		/* estimates: the burst being measured ends and counts for the
		 * old set, its last reading (but for what its counters that go
		 * on in the new set leave to them), then the new set */
		uint64_t *keys = cond_keys(c, nr);

		mon_sampled_swap(keys, keys ? nr : 0);
		err = mon_sampled_read(old_gen, total, before, old_nr, per_thread, arg);
		if (!err)
			err = arm(c, nr, gen, NULL, NULL, 0, NULL, 0, NULL, NULL, keys);
		mon_free(keys);
		return err;
	}
	mon_seq_sync();
	return arm(c, nr, gen, NULL, NULL, 0, NULL, 0, NULL, &fin, NULL);
}

static int op_cond_arm_mark(void *ctx, const struct mri_cond *c, uint32_t nr, uint64_t *gen,
			    const char *label, char *path, size_t len, char *why, size_t wlen,
			    int *mark_err)
{
	mon_seq_sync();
	*mark_err = AMEBA_EINVAL;	/* nr == 0 arms nothing to start with */
	snprintf(why, wlen, "an experiment without counters takes no mark");
	return arm(c, nr, gen, label, path, len, why, wlen, mark_err, NULL, NULL);
}

static int op_cond_read(void *ctx, uint64_t gen, uint64_t *total, uint64_t *before, uint32_t nr,
			mri_per_thread_fn per_thread, void *arg)
{
	if (mon_sampled_on())
		return mon_sampled_read(gen, total, before, nr, per_thread, arg);
	mon_seq_sync();		/* the counts as of now, not as far as the merger got */
	return mon_cond_read(gen, total, before, nr, per_thread, arg);
}

static int op_sampled(void *ctx, const struct mri_sampling *cfg)
{
	struct mon_sampled_cfg c;

	if (!cfg) {
		mon_sampled_stop();
		return 0;
	}
	c = (struct mon_sampled_cfg){ .period_us = cfg->period_us, .warm_us = cfg->warm_us,
				      .burst_us = cfg->burst_us, .seed = cfg->seed };
	return mon_sampled_start(&c);
}

static int op_cond_info(void *ctx, uint64_t gen, double *ci, double *ci_delta, uint32_t nr,
			struct mri_sampled_rec *out)
{
	struct mon_sampled_info info;
	int err = mon_sampled_on() ? mon_sampled_ci(gen, ci, ci_delta, nr, &info) : AMEBA_ENOENT;

	if (!err) {
		out->bursts = info.bursts;
		out->bursts_read = info.bursts_read;
		out->fraction = info.fraction;
		out->accesses = info.accesses;
	}
	return err;
}

static int op_sample_arm(void *ctx, int metric, uint64_t period, int randomized, uint64_t seed)
{
	mon_seq_sync();		/* the stream starts with what is done from now on */
	return mon_sample_arm(metric, period, randomized, seed);
}

static uint32_t op_sample_drain(void *ctx, struct mri_sample *out, uint32_t max, uint64_t *lost)
{
	struct mon_sample *buf = mon_calloc(max ? max : 1, sizeof(*buf));
	uint32_t n;

	if (!buf)
		return 0;
	/* No mon_seq_sync here: the merger writes the samples as it merges,
	 * and a reader that wants them up to now reads the counters first
	 * (the agent ends an interval with a read, which syncs, then drains).
	 * A sync for each page of a drain had every 50 ms drain wait for the
	 * merger to catch up with every log: on one host CPU, four threads
	 * sampling every 31st miss held an interval open for the whole 3 s run
	 * (the report_html failure) */
	n = mon_sample_drain(buf, max, lost);
	for (uint32_t i = 0; i < n; i++) {
		out[i].addr = buf[i].addr;
		out[i].pc = buf[i].pc;
		out[i].thread_id = buf[i].thread_id;
		out[i].weight = buf[i].weight;
		out[i].site_id = buf[i].site_id;
		out[i].site = NULL;
	}
	mon_free(buf);
	return n;
}

static uint64_t op_now_ns(void *ctx)
{
	return mri_now_ns();
}

static int op_mark(void *ctx, const char *label, char *path, size_t len, char *why, size_t wlen)
{
	mon_seq_sync();
	return mon_oracle_mark(label, path, len, why, wlen);
}

static const struct mri_monitor_ops rt_ops = {
	.process = op_process,
	.nr_threads = op_nr_threads,
	.thread = op_thread,
	.nr_objects = op_nr_objects,
	.object = op_object,
	.nr_freed = op_nr_freed,
	.nr_bins = op_nr_bins,
	.bin = op_bin,
	.site_label = op_site_label,
	.backends = op_backends,
	.attach = op_attach,
	.detach = op_detach,
	.backend = op_backend,
	.cond_arm = op_cond_arm,
	.cond_arm_mark = op_cond_arm_mark,
	.cond_swap = op_cond_swap,
	.cond_read = op_cond_read,
	.sampled = op_sampled,
	.cond_info = op_cond_info,
	.sample_arm = op_sample_arm,
	.sample_drain = op_sample_drain,
	.now_ns = op_now_ns,
	.mark = op_mark,
};

/* ---- messages the server writes without the dispatcher ---- */

/* Appends s to buf as JSON string content. */
static size_t json_escape(char *buf, size_t o, size_t len, const char *s)
{
	for (; *s && o + 7 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			o += (size_t)snprintf(buf + o, len - o, "\\%c", c);
		else if (c < 0x20)
			o += (size_t)snprintf(buf + o, len - o, "\\u%04x", c);
		else
			buf[o++] = (char)c;
	}
	buf[o] = '\0';
	return o;
}

/*
 * Writes a refusal ("refused" event) to fd and closes it. Built by hand:
 * it must work when libcjson could not be loaded. The client reads it
 * before it sees the connection close.
 */
static void refuse(int fd, int code, const char *msg)
{
	char buf[1024];
	size_t o = (size_t)snprintf(buf, sizeof(buf), "{\"v\":%d,\"event\":\"refused\",\"error\":"
				    "{\"code\":%d,\"name\":\"%s\",\"message\":\"",
				    MRI_PROTOCOL_VERSION, code, mri_error_name(code));

	o = json_escape(buf, o, sizeof(buf) - 4, msg);
	o += (size_t)snprintf(buf + o, sizeof(buf) - o, "\"}}");
	mri_send_frame(fd, buf, o, MRI_REFUSAL_TIMEOUT_MS);
	shutdown(fd, SHUT_WR);
	close(fd);
}

/* ---- the session ---- */

/* Ends the remote session (the client left, was dropped, or said bye):
 * the target goes back to the state it had before the client attached. */
static void drop_client(void)
{
	pthread_mutex_lock(&srv.lock);
	if (srv.disp) {
		mri_disp_end(srv.disp);
		mri_disp_free(srv.disp);
		srv.disp = NULL;
	}
	if (srv.owner == OWNER_REMOTE)
		srv.owner = OWNER_NONE;
	pthread_mutex_unlock(&srv.lock);
	pthread_mutex_lock(&srv.send_lock);
	if (srv.client_fd >= 0)
		close(srv.client_fd);
	srv.client_fd = -1;
	pthread_mutex_unlock(&srv.send_lock);
	mri_reader_destroy(&srv.rd);
}

/*
 * Sends one message to the client, send_lock held; a client that does not
 * take it in time is dropped. Returns 0 or an error (the client is gone
 * then). Nothing is sent once the exit event was.
 *
 * A reply or event made under srv.lock is sent under send_lock taken
 * before srv.lock is let go (a handover), so that the exit event, made
 * under srv.lock after it, follows it on the wire. Without: the exit
 * handler could make and send its event between the two, and the reply
 * was dropped (exiting) - an experiment_replace's reply, which carries the
 * replaced experiment's final reading, lost an interval of counts, and the
 * client read the exit event's reading, the new experiment's, as the old
 * one's (test strategy_served_exact_batch, 1 run in 10).
 */
static int send_locked(const char *msg, size_t len)
{
	if (srv.exiting || srv.client_fd < 0)
		return 0;
	return mri_send_frame(srv.client_fd, msg, len, MRI_SEND_TIMEOUT_MS);
}

static void accept_client(void)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	const char *why;
	char msg[256];
	int fd = accept4(srv.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			poll(NULL, 0, 100);	/* do not spin on a full fd table */
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen)) {
		refuse(fd, AMEBA_EPERM, "permission denied: cannot read the credentials of the peer");
		return;
	}
	if (cred.uid != geteuid() && cred.uid != 0) {
		snprintf(msg, sizeof(msg), "permission denied: uid %u may not attach to process %d of "
			 "uid %u (only the same user or root may)", (unsigned)cred.uid, (int)getpid(),
			 (unsigned)geteuid());
		refuse(fd, AMEBA_EPERM, msg);
		return;
	}
	if (mri_cjson_load(&why)) {
		refuse(fd, AMEBA_ENOENT, why);
		return;
	}
	pthread_mutex_lock(&srv.lock);
	if (srv.owner != OWNER_NONE) {
		if (srv.owner == OWNER_REMOTE)
			snprintf(msg, sizeof(msg), "busy: another client (pid %d) is attached",
				 (int)srv.peer_pid);
		else
			snprintf(msg, sizeof(msg), "busy: an in-process session (mri_open_local) is open");
		pthread_mutex_unlock(&srv.lock);
		refuse(fd, AMEBA_EBUSY, msg);
		return;
	}
	srv.disp = mri_disp_new(&rt_ops, NULL, cred.pid);
	if (!srv.disp) {
		pthread_mutex_unlock(&srv.lock);
		refuse(fd, AMEBA_ENOMEM, "out of memory in the target");
		return;
	}
	srv.owner = OWNER_REMOTE;
	srv.peer_pid = cred.pid;
	srv.nr_msgs = 0;
	srv.accepted_ns = mri_now_ns();
	pthread_mutex_unlock(&srv.lock);
	pthread_mutex_lock(&srv.send_lock);
	srv.client_fd = fd;
	pthread_mutex_unlock(&srv.send_lock);
	mri_reader_init(&srv.rd, MRI_MSG_MAX);
}

/* One complete request: dispatch, reply. Returns 0, or -1 when the session ended. */
static int serve_message(const char *msg, uint32_t len)
{
	char *reply = NULL;
	size_t rlen = 0;
	int rc, err;

	pthread_mutex_lock(&srv.lock);
	if (srv.exiting || !srv.disp) {
		pthread_mutex_unlock(&srv.lock);
		return -1;
	}
	rc = mri_disp_handle(srv.disp, msg, len, &reply, &rlen);
	/* the reply leaves before anything made after it (handover) */
	pthread_mutex_lock(&srv.send_lock);
	pthread_mutex_unlock(&srv.lock);
	/* AMEBA_MRI_TEST_REPLACE_DELAY_MS (tests only: mri_replace_exit): an
	 * experiment replace's reply waits here, where the exit handler used
	 * to overtake it */
	if (srv.replace_delay_ms && rc >= 0 && memmem(msg, len, "\"replace\"", 9))
		poll(NULL, 0, srv.replace_delay_ms);
	srv.nr_msgs++;
	err = rc < 0 || send_locked(reply, rlen);
	pthread_mutex_unlock(&srv.send_lock);
	free(reply);
	if (err || rc == MRI_DISP_CLOSE) {
		drop_client();
		return -1;
	}
	return 0;
}

/* The client's socket is readable: take what came and serve each message. */
static void serve_client(void)
{
	int got = mri_reader_fill(&srv.rd, srv.client_fd);

	if (got == AMEBA_ETIMEDOUT)
		return;
	if (got <= 0) {		/* closed, killed, or broken: the session ends */
		drop_client();
		return;
	}
	for (;;) {
		char *msg = NULL, *err;
		uint32_t len = 0;
		size_t elen = 0;
		char text[160];
		int r = mri_reader_next(&srv.rd, &msg, &len);

		if (r == 0)
			return;
		if (r == 1) {
			r = serve_message(msg, len);
			free(msg);
			if (r)
				return;
			continue;
		}
		/* An oversized header (or no memory for the body): the stream
		 * cannot be resynchronised. Say so, then end the session. */
		if (r == AMEBA_ERANGE)
			snprintf(text, sizeof(text), "message of %u bytes exceeds the limit of %u bytes; "
				 "the connection is closed", srv.rd.len, MRI_MSG_MAX);
		else
			snprintf(text, sizeof(text), "no memory for a message of %u bytes; the "
				 "connection is closed", srv.rd.len);
		err = mri_disp_error_text(r, text, &elen);
		if (err) {
			pthread_mutex_lock(&srv.send_lock);
			send_locked(err, elen);
			pthread_mutex_unlock(&srv.send_lock);
		}
		free(err);
		drop_client();
		return;
	}
}

/* Timed events (interval readings, thread start/exit) that are due. */
static void serve_events(void)
{
	char *ev[MRI_EVENTS_PER_TURN];
	size_t len[MRI_EVENTS_PER_TURN];
	int n = 0, err = 0;

	pthread_mutex_lock(&srv.lock);
	while (srv.disp && !srv.exiting && n < MRI_EVENTS_PER_TURN &&
	       mri_disp_poll_event(srv.disp, &ev[n], &len[n]) == 1)
		n++;
	pthread_mutex_lock(&srv.send_lock);	/* handover: send_locked */
	pthread_mutex_unlock(&srv.lock);
	for (int i = 0; i < n; i++) {
		err = err || send_locked(ev[i], len[i]);
		free(ev[i]);
	}
	pthread_mutex_unlock(&srv.send_lock);
	if (err)
		drop_client();
}

/* poll(2) timeout until the next thing due: events, the hello deadline. */
static int next_timeout_ms(void)
{
	uint64_t due = UINT64_MAX, now = mri_now_ns();

	pthread_mutex_lock(&srv.lock);
	if (srv.disp)
		due = mri_disp_next_due_ns(srv.disp);
	pthread_mutex_unlock(&srv.lock);
	if (srv.client_fd >= 0 && srv.nr_msgs == 0) {
		uint64_t hello = srv.accepted_ns + MRI_HELLO_TIMEOUT_MS * 1000000ull;

		if (hello < due)
			due = hello;
	}
	if (due == UINT64_MAX)
		return -1;
	if (due <= now)
		return 0;
	return (int)((due - now + 999999) / 1000000);
}

/* ---- the socket ---- */

/* Is path a directory of ours with mode 0700 (not a symlink)? 0, or the
 * reason in msg. */
static int dir_ok(const char *path, char *msg, size_t len)
{
	struct stat st;

	if (lstat(path, &st)) {
		snprintf(msg, len, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
		snprintf(msg, len, "%s is not a directory (a symlink or a file is refused); remove it",
			 path);
		return -1;
	}
	if (st.st_uid != geteuid()) {
		snprintf(msg, len, "%s belongs to uid %u, not to us (uid %u); remove it", path,
			 (unsigned)st.st_uid, (unsigned)geteuid());
		return -1;
	}
	if ((st.st_mode & 07777) != 0700) {
		snprintf(msg, len, "%s has mode %04o, not 0700; chmod 700 it or remove it", path,
			 (unsigned)(st.st_mode & 07777));
		return -1;
	}
	return 0;
}

/* Creates (0700) or checks the socket directory dir. */
static int make_dir(const char *dir, char *msg, size_t len)
{
	if (mkdir(dir, 0700) == 0) {
		/* umask may have taken bits away; 0700 is what we check for. */
		if (chmod(dir, 0700)) {
			snprintf(msg, len, "chmod %s: %s", dir, strerror(errno));
			return -1;
		}
	} else if (errno != EEXIST) {
		snprintf(msg, len, "mkdir %s: %s", dir, strerror(errno));
		return -1;
	}
	return dir_ok(dir, msg, len);
}

/* Removes sockets of processes that no longer exist (left by kill -9 or
 * exec into an uninstrumented program). */
static void sweep_stale(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[sizeof(srv.path) + 300], *end;
		long pid = strtol(e->d_name, &end, 10);
		struct stat st;

		if (pid <= 0 || strcmp(end, ".sock") || pid == getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == geteuid())
			unlink(path);
	}
	closedir(d);
}

static int listen_socket(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(srv.path) - 24], msg[512], why[512] = "";
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int fd, ok = 0;

	/* sun_path holds 108 bytes: leave room for "/<pid>.sock". */

	if (xdg && xdg[0] == '/' && strlen(xdg) + 8 < sizeof(dir)) {
		snprintf(dir, sizeof(dir), "%s/ameba", xdg);
		ok = make_dir(dir, why, sizeof(why)) == 0;
	}
	if (!ok) {
		snprintf(dir, sizeof(dir), "/tmp/ameba-%u", (unsigned)geteuid());
		if (make_dir(dir, msg, sizeof(msg))) {
			/*
			 * Someone else made /tmp/ameba-UID (or it is broken): a
			 * directory of our own with a name nobody could know in
			 * advance, so that no other user can switch profiling
			 * off; the client finds it by its prefix and checks its
			 * owner and mode, and the server's credentials.
			 */
			snprintf(dir, sizeof(dir), "/tmp/ameba-%u.XXXXXX", (unsigned)geteuid());
			if (!mkdtemp(dir)) {
				mon_log("MRI server off: %s; mkdtemp %s: %s", msg, dir, strerror(errno));
				return -1;
			}
			snprintf(srv.own_dir, sizeof(srv.own_dir), "%s", dir);
			mon_log("MRI socket in %s instead: %s", dir, msg);
		} else if (why[0]) {
			/* $XDG_RUNTIME_DIR was set but unusable: say why once,
			 * since the socket is not where the user may look. */
			mon_log("MRI socket in %s instead: %s", dir, why);
		}
	}
	sweep_stale(dir);
	snprintf(srv.path, sizeof(srv.path), "%s/%d.sock", dir, (int)getpid());
	memcpy(sa.sun_path, srv.path, sizeof(srv.path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		mon_log("MRI server off: socket: %s", strerror(errno));
		return -1;
	}
	unlink(srv.path);	/* this pid's: a previous image before exec */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(srv.path, 0600) ||
	    listen(fd, MRI_BACKLOG)) {
		mon_log("MRI server off: %s: %s", srv.path, strerror(errno));
		close(fd);
		unlink(srv.path);
		return -1;
	}
	srv.listen_fd = fd;
	return 0;
}

/* ---- the server thread ---- */

static void *server_main(void *arg)
{
	mon_self = &srv_self;
	pthread_setname_np(pthread_self(), "ameba-mri");
	for (;;) {
		struct pollfd p[3] = {
			{ .fd = srv.wake_rd, .events = POLLIN },
			{ .fd = srv.listen_fd, .events = POLLIN },
			{ .fd = srv.client_fd, .events = POLLIN },
		};
		int n, timeout = next_timeout_ms();

		n = poll(p, srv.client_fd >= 0 ? 3 : 2, timeout);
		if (n < 0 && errno != EINTR)
			break;
		if (__atomic_load_n(&srv.exiting, __ATOMIC_ACQUIRE) || (p[0].revents & POLLIN))
			break;
		if ((p[0].revents | p[1].revents) & POLLNVAL) {
			/* The program closed our descriptors (daemons do): stop
			 * rather than poll a number that may be reused. */
			mon_log("MRI server off: its file descriptors were closed by the program");
			break;
		}
		if (srv.client_fd >= 0 && (p[2].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)))
			serve_client();
		if (p[1].revents & POLLIN)
			accept_client();
		if (srv.client_fd >= 0 && srv.nr_msgs == 0 &&
		    mri_now_ns() >= srv.accepted_ns + MRI_HELLO_TIMEOUT_MS * 1000000ull)
			drop_client();
		serve_events();
	}
	__atomic_store_n(&srv.running, 0, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Opens this process's socket and starts the server thread. Runs with in_rt
 * raised. The socket exists when this returns - before main() for a
 * program that starts - so a tool that launches a target can connect as
 * soon as the target runs; the thread only serves it.
 */
static void server_spawn(void)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;
	int pipefd[2];

	if (!srv.create || listen_socket())
		return;
	if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK)) {
		mon_log("MRI server off: pipe: %s", strerror(errno));
		close(srv.listen_fd);
		srv.listen_fd = -1;
		unlink(srv.path);
		return;
	}
	srv.wake_rd = pipefd[0];
	srv.wake_wr = pipefd[1];
	srv.pid = getpid();
	srv.exiting = 0;
	/* The thread inherits a mask with every signal blocked: the program's
	 * handlers never run on it (and cannot interrupt it mid-message). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* running before the thread exists: the exit handler must not miss a
	 * thread that is still starting. */
	__atomic_store_n(&srv.running, 1, __ATOMIC_RELEASE);
	if (srv.create(&th, &attr, server_main, NULL)) {
		__atomic_store_n(&srv.running, 0, __ATOMIC_RELEASE);
		mon_log("MRI server off: cannot start its thread");
		close(srv.wake_rd);
		close(srv.wake_wr);
		close(srv.listen_fd);
		srv.wake_rd = srv.wake_wr = srv.listen_fd = -1;
		unlink(srv.path);
	}
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* atexit: tell the client (with the final counts), remove the socket. */
static void server_atexit(void)
{
	struct mon_thread *t = mon_self;
	struct timespec until;
	char *ev = NULL;
	size_t len = 0;

	if (getpid() != srv.pid || !__atomic_load_n(&srv.running, __ATOMIC_ACQUIRE))
		return;
	/* the exiting thread's batched accesses count in the last reading:
	 * this handler runs before rt.c's (registered later), whose flush
	 * would count them in the oracle only */
	mon_batch_sync(t);
	if (t)
		t->in_rt++;
	mon_sampled_exit();	/* a burst being measured counts in the last reading */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += MRI_EXIT_WAIT_MS / 1000;
	/* Bounded waits: a request being served (symbolising a large listing)
	 * may hold the session; the program's exit does not wait for it. */
	if (pthread_mutex_timedlock(&srv.lock, &until) == 0) {
		if (srv.owner == OWNER_REMOTE && srv.disp)
			ev = mri_disp_exit_event(srv.disp, &len);
		pthread_mutex_unlock(&srv.lock);
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += MRI_EXIT_WAIT_MS / 1000;
	if (pthread_mutex_timedlock(&srv.send_lock, &until) == 0) {
		if (ev && srv.client_fd >= 0 && !srv.exiting)
			mri_send_frame(srv.client_fd, ev, len, MRI_SEND_TIMEOUT_MS);
		__atomic_store_n(&srv.exiting, 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&srv.send_lock);
	} else {
		__atomic_store_n(&srv.exiting, 1, __ATOMIC_RELEASE);
	}
	free(ev);
	if (srv.path[0])
		unlink(srv.path);
	if (srv.own_dir[0] && srv.pid == getpid())
		rmdir(srv.own_dir);
	/* If the write fails the thread still sees exiting at its next wake-up. */
	if (srv.wake_wr >= 0 && write(srv.wake_wr, "x", 1) < 0)
		srv.wake_wr = -1;
	if (t)
		t->in_rt--;
}

static int local_open(struct mri_transport *tr, char *msg, size_t len);

void mri_server_start(void)
{
	const char *e = getenv("AMEBA_MRI");
	struct mon_thread *t = mon_self;

	/* mri_open_local() works with the server off too */
	mri_set_local_open(local_open);
	if (e && !strcmp(e, "0"))
		return;
	e = getenv("AMEBA_MRI_TEST_REPLACE_DELAY_MS");
	srv.replace_delay_ms = e ? atoi(e) : 0;
	if (t)
		t->in_rt++;
	/* libc's pthread_create: ours would register an application thread. */
	if (!srv.create)
		srv.create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
			dlsym(RTLD_NEXT, "pthread_create");
	if (!srv.create)
		mon_log("MRI server off: libc's pthread_create not found");
	if (!srv.atexit_done && srv.create) {
		atexit(server_atexit);
		srv.atexit_done = 1;
	}
	server_spawn();
	if (t)
		t->in_rt--;
}

void mri_server_after_fork(void)
{
	struct mon_thread *t = mon_self;

	if (!srv.create || !srv.atexit_done)
		return;		/* never started (AMEBA_MRI=0) */
	if (t)
		t->in_rt++;
	/* Close what the parent's server had open; its socket file and its
	 * client stay the parent's. */
	if (srv.listen_fd >= 0)
		close(srv.listen_fd);
	if (srv.client_fd >= 0)
		close(srv.client_fd);
	if (srv.wake_rd >= 0)
		close(srv.wake_rd);
	if (srv.wake_wr >= 0)
		close(srv.wake_wr);
	srv.listen_fd = srv.client_fd = srv.wake_rd = srv.wake_wr = -1;
	srv.path[0] = '\0';
	srv.own_dir[0] = '\0';	/* the parent's, removed by the parent */
	pthread_mutex_init(&srv.lock, NULL);
	pthread_mutex_init(&srv.send_lock, NULL);
	mri_reader_destroy(&srv.rd);
	/* The parent's session is not the child's: no ops run for it (its
	 * client talks to the parent), but what it armed is dropped here. */
	mri_disp_free(srv.disp);
	srv.disp = NULL;
	if (srv.owner != OWNER_NONE) {
		mon_cond_arm(NULL, 0, NULL);
		mon_sample_arm(0, 0, 0, 0);
		if (srv.we_activated)
			mon_deactivate();
		srv.we_activated = 0;
	}
	srv.owner = OWNER_NONE;
	srv.running = 0;
	if (!(getenv("AMEBA_MRI") && !strcmp(getenv("AMEBA_MRI"), "0")))
		server_spawn();
	if (t)
		t->in_rt--;
}

/* ---- the in-process transport (mri_open_local) ---- */

#define LOCAL_QUEUE 64

struct local_tr {
	struct mri_disp *d;
	pid_t pid;
	struct mon_thread *t;		/* the calling thread while inside a call */
	char *q[LOCAL_QUEUE];		/* replies and events not yet received */
	size_t qlen[LOCAL_QUEUE];
	uint32_t head, nr;
	int closed;			/* bye was answered */
};

static void local_push(struct local_tr *lt, char *msg, size_t len)
{
	if (lt->nr == LOCAL_QUEUE) {	/* the oldest goes: the caller is not reading */
		free(lt->q[lt->head]);
		lt->head = (lt->head + 1) % LOCAL_QUEUE;
		lt->nr--;
	}
	lt->q[(lt->head + lt->nr) % LOCAL_QUEUE] = msg;
	lt->qlen[(lt->head + lt->nr) % LOCAL_QUEUE] = len;
	lt->nr++;
}

static int local_send(void *ctx, const char *msg, size_t len, int timeout_ms)
{
	struct local_tr *lt = ctx;
	char *reply = NULL;
	size_t rlen = 0;
	int rc;

	if (lt->closed || getpid() != lt->pid)
		return AMEBA_EIO;
	pthread_mutex_lock(&srv.lock);
	rc = mri_disp_handle(lt->d, msg, len, &reply, &rlen);
	pthread_mutex_unlock(&srv.lock);
	if (rc < 0)
		return rc;
	local_push(lt, reply, rlen);
	if (rc == MRI_DISP_CLOSE)
		lt->closed = 1;
	return 0;
}

static int local_recv(void *ctx, char **msg, size_t *len, int timeout_ms)
{
	struct local_tr *lt = ctx;
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : mri_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	for (;;) {
		uint64_t due, now;
		char *ev = NULL;
		size_t elen = 0;
		int r;

		if (lt->nr) {
			*msg = lt->q[lt->head];
			*len = lt->qlen[lt->head];
			lt->head = (lt->head + 1) % LOCAL_QUEUE;
			lt->nr--;
			return 1;
		}
		if (lt->closed || getpid() != lt->pid)
			return AMEBA_EEXITED;
		pthread_mutex_lock(&srv.lock);
		r = mri_disp_poll_event(lt->d, &ev, &elen);
		due = mri_disp_next_due_ns(lt->d);
		pthread_mutex_unlock(&srv.lock);
		if (r < 0)
			return r;
		if (r == 1) {
			*msg = ev;
			*len = elen;
			return 1;
		}
		now = mri_now_ns();
		if (now >= deadline)
			return AMEBA_ETIMEDOUT;
		if (due > deadline)
			due = deadline;
		if (due == UINT64_MAX) {
			poll(NULL, 0, 100);
			continue;
		}
		if (due > now) {
			uint64_t ms = (due - now + 999999) / 1000000;

			poll(NULL, 0, ms > 1000 ? 1000 : (int)ms);
		}
	}
}

static void local_enter(void *ctx)
{
	struct local_tr *lt = ctx;

	lt->t = mon_thread_self();
	if (lt->t)
		lt->t->in_rt++;
}

static void local_leave(void *ctx)
{
	struct local_tr *lt = ctx;

	if (lt->t)
		lt->t->in_rt--;
	lt->t = NULL;
}

static void local_close(void *ctx)
{
	struct local_tr *lt = ctx;
	struct mon_thread *t = mon_thread_self();

	if (t)
		t->in_rt++;
	if (getpid() == lt->pid) {
		pthread_mutex_lock(&srv.lock);
		mri_disp_end(lt->d);
		if (srv.owner == OWNER_LOCAL)
			srv.owner = OWNER_NONE;
		pthread_mutex_unlock(&srv.lock);
	}
	mri_disp_free(lt->d);
	while (lt->nr) {
		free(lt->q[lt->head]);
		lt->head = (lt->head + 1) % LOCAL_QUEUE;
		lt->nr--;
	}
	free(lt);
	if (t)
		t->in_rt--;
}

/* The in-process transport (transport.h), offered to the client library
 * by mri_server_start. */
static int local_open(struct mri_transport *tr, char *msg, size_t len)
{
	struct mon_thread *t = mon_thread_self();
	struct local_tr *lt;
	const char *why;
	int err = 0;

	if (t)
		t->in_rt++;
	if (mri_cjson_load(&why)) {
		snprintf(msg, len, "%s", why);
		err = AMEBA_ENOENT;
		goto out;
	}
	lt = calloc(1, sizeof(*lt));
	if (!lt) {
		snprintf(msg, len, "out of memory");
		err = AMEBA_ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&srv.lock);
	if (srv.owner != OWNER_NONE) {
		if (srv.owner == OWNER_REMOTE)
			snprintf(msg, len, "busy: another client (pid %d) is attached", (int)srv.peer_pid);
		else
			snprintf(msg, len, "busy: an in-process session (mri_open_local) is open");
		pthread_mutex_unlock(&srv.lock);
		free(lt);
		err = AMEBA_EBUSY;
		goto out;
	}
	lt->d = mri_disp_new(&rt_ops, NULL, (int32_t)getpid());
	if (!lt->d) {
		pthread_mutex_unlock(&srv.lock);
		free(lt);
		snprintf(msg, len, "out of memory");
		err = AMEBA_ENOMEM;
		goto out;
	}
	srv.owner = OWNER_LOCAL;
	pthread_mutex_unlock(&srv.lock);
	lt->pid = getpid();
	*tr = (struct mri_transport){ .ctx = lt, .send = local_send, .recv = local_recv,
				      .enter = local_enter, .leave = local_leave, .close = local_close };
out:
	if (t)
		t->in_rt--;
	return err;
}
