/*
 * provider_perf.c - the ContextProvider of the out-of-process monitor: the
 * perf, pagefault and watch backends (docs/backends.md). The target needs
 * no instrumentation; the agent opens perf events on its threads.
 *
 * Notes:
 *  - Threads come from /proc/PID/task, rescanned at every refresh and
 *    experiment, and from the tids of samples; dense ids are given in
 *    discovery order (the main thread, tid == pid, is 0) and never reused.
 *    A thread that disappears is kept as exited. Inherited events also
 *    follow processes the target forks: their tids appear as threads.
 *    The table has room for 4096 threads before it moves (the world
 *    given to the search points into it between refreshes).
 *  - Objects come from procmap.c (globals from ELF symbols, [heap],
 *    [stack], anonymous mappings) plus the heap blocks seen through
 *    uprobes (uprobe.c), refreshed at every refresh().
 *  - Sampling modes (pagefault, perf): one event per (thread, cpu) with
 *    inherit=1, so threads the target creates later are followed from
 *    their first instruction (the kernel refuses mmap of inherited
 *    per-task events with cpu == -1, hence per cpu). Every event of one
 *    cpu writes into that cpu's ring (PERF_EVENT_IOC_SET_OUTPUT). The
 *    events stay enabled from attach to close; an experiment drains the
 *    rings every few milliseconds and at its end. Its conditional
 *    counters are evaluated on the samples of the *previous* window (a
 *    sample's tid names the thread, its address the object): the refresh
 *    in between has learnt the blocks allocated in that window (uprobes),
 *    so the first touches that follow an allocation land on the new block.
 *    The interval in which the target exits (or the agent is stopped)
 *    reports both windows.
 *  - pagefault: PERF_COUNT_SW_PAGE_FAULTS, sample_period 1, with the data
 *    address: every user page fault, i.e. first touches of pages (plus
 *    copy-on-write and swap-in faults). Its metric is `samples`: exact
 *    fault counts, no estimate (the kernel may throttle a burst: the lost
 *    and throttled records are reported as lost samples).
 *  - perf: counters without ranges use counting events (read with
 *    TOTAL_TIME_ENABLED / RUNNING, scaled for multiplexing); counters with
 *    ranges are estimated from samples of the metric's event (libpfm4,
 *    prime period), confidence from the sample counts (ring.c). Needs a
 *    PMU: without one the provider refuses at open with the no-PMU reason.
 *  - watch: PERF_TYPE_BREAKPOINT per (thread, aligned 1/2/4/8-byte piece);
 *    writes use HW_BREAKPOINT_W, mem_ref HW_BREAKPOINT_RW (x86 has no
 *    read-only breakpoint, so `reads` is refused). The breakpoints of one
 *    experiment are opened on every live thread, counted exactly with
 *    read() at the end, and closed: a thread created during the interval
 *    is measured from the next one.
 *  - Detach: every fd is closed and the rings unmapped; the kernel removes
 *    the events (and uprobes) with their last fd, also when the agent is
 *    killed, so the target runs on unharmed.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "ameba/ameba.h"
#include "perfmon.h"
#include "pfm.h"
#include "pm_elf.h"
#include "procmap.h"
#include "provider.h"
#include "ring.h"
#include "uprobe.h"

long pm_perf_open(struct perf_event_attr *a, pid_t pid, int cpu, int group, unsigned long flags);

enum pm_mode { PM_PERF, PM_PAGEFAULT, PM_WATCH };

#define RING_PAGES 128		/* data pages per cpu ring (512 KiB) */
#define MAX_CPUS 256
#define DRAIN_MS 5
#define PERF_PERIOD 10007	/* prime sampling period of the perf backend */
#define WATCH_MAX 16		/* breakpoint pieces per experiment (hardware: 4) */

struct bp_piece {
	uintptr_t addr;
	uint32_t len;
	uint32_t counter;
	uint32_t type;		/* HW_BREAKPOINT_W or _RW */
};

struct pm_ring {
	int fd;			/* the event the ring is mapped on */
	void *base;		/* perf_event_mmap_page + data */
	size_t bytes;
};

struct perfmon {
	struct agent_provider base;
	int mode;
	int32_t pid;
	char err[1024];
	char program[512];
	const char *backend;
	struct pm_procmap map;
	struct pm_uprobes *up;		/* heap blocks (NULL: none) */
	struct ameba_thread *threads;
	uint32_t nr_threads, cap_threads;
	int metrics[AMEBA_M_NR];
	uint32_t nr_metrics;
	/* watch: the armed breakpoints, [thread][piece] */
	uint32_t nr_bp_slots;
	struct bp_piece wt_pieces[WATCH_MAX];
	uint32_t wt_nr, wt_nr_threads;
	int *wt_fds;
	uint64_t *wt_last;
	int wt_warned[8];		/* errnos of refused breakpoints already told */
	uint32_t nr_wt_warned;
	/* sampling */
	uint64_t sample_type;
	struct perf_event_attr sattr;	/* the sampled event */
	int sample_metric;		/* metric a sample counts in (without data_src) */
	uint64_t period;
	int nr_cpus;
	struct pm_ring rings[MAX_CPUS];
	int *sfds;			/* every sampling event */
	uint32_t nr_sfds, cap_sfds;
	int32_t *sampled_tids;		/* threads with events of their own */
	uint32_t nr_sampled;
	struct pm_ring_stats stats;
	int exit_reported;		/* the pending samples went out after the exit */
	int map_gone;			/* /proc/PID/maps read empty: the target is exiting */
	/* the samples of the running experiment */
	struct pm_sample *win;
	uint32_t nr_win, cap_win;
	/* perf counting: per metric, per thread (fd, last enabled/running/value) */
	char pmu_model[256];
	struct pm_count {
		int fd;
		uint64_t value, enabled, running;
	} *cnt[AMEBA_M_NR];
	uint32_t cnt_threads[AMEBA_M_NR];
	int cnt_refused[AMEBA_M_NR];	/* no event, or the kernel refused it */
	/* results */
	struct agent_resbuf rb;
	struct ameba_sample *out_samples;
	uint32_t cap_out;
};

static void pm_err(struct perfmon *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void pm_err(struct perfmon *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->err, sizeof(p->err), fmt, ap);
	va_end(ap);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* 1 when pid is gone or a zombie. */
static int target_gone(int32_t pid)
{
	char path[64], buf[512], *rp;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	rp = strrchr(buf, ')');
	return !rp || rp[1] != ' ' || rp[2] == 'Z' || rp[2] == 'X';
}

static int thread_index(struct perfmon *p, int32_t tid, int add)
{
	for (uint32_t i = 0; i < p->nr_threads; i++)
		if (p->threads[i].tid == tid)
			return (int)i;
	if (!add)
		return -1;
	if (p->nr_threads == p->cap_threads) {
		/* room for many: the world handed to the search points here */
		uint32_t c = p->cap_threads ? 2 * p->cap_threads : 4096;
		struct ameba_thread *t = realloc(p->threads, c * sizeof(*t));

		if (!t)
			return -1;
		p->threads = t;
		p->cap_threads = c;
	}
	p->threads[p->nr_threads] = (struct ameba_thread){ p->nr_threads, tid, 0 };
	return (int)p->nr_threads++;
}

static int tid_cmp(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

/* Rescans /proc/PID/task: new threads are added, missing ones marked exited. */
static int scan_threads(struct perfmon *p)
{
	char path[64];
	int32_t tids[4096];
	uint32_t n = 0;
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)p->pid);
	dir = opendir(path);
	if (!dir)
		return -ESRCH;
	while ((d = readdir(dir)) && n < 4096) {
		long t = strtol(d->d_name, NULL, 10);

		if (t > 0)
			tids[n++] = (int32_t)t;
	}
	closedir(dir);
	qsort(tids, n, sizeof(tids[0]), tid_cmp);
	/* the main thread first */
	thread_index(p, p->pid, 1);
	for (uint32_t i = 0; i < n; i++)
		thread_index(p, tids[i], 1);
	for (uint32_t i = 0; i < p->nr_threads; i++)
		p->threads[i].exited = !bsearch(&p->threads[i].tid, tids, n, sizeof(tids[0]),
						 tid_cmp);
	return 0;
}

/* ---- sampling: per-cpu rings, events per (thread, cpu) with inherit ---- */

static int online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);

	return n < 1 ? 1 : n > MAX_CPUS ? MAX_CPUS : (int)n;
}

static int push_fd(struct perfmon *p, int fd)
{
	if (p->nr_sfds == p->cap_sfds) {
		uint32_t c = p->cap_sfds ? 2 * p->cap_sfds : 64;
		int *v = realloc(p->sfds, c * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->sfds = v;
		p->cap_sfds = c;
	}
	p->sfds[p->nr_sfds++] = fd;
	return 0;
}

/* Opens the sampled event on tid on every cpu. 0 or -errno. */
static int sample_thread(struct perfmon *p, int32_t tid)
{
	int opened = 0, first_err = 0;

	for (int cpu = 0; cpu < p->nr_cpus; cpu++) {
		struct perf_event_attr a = p->sattr;
		long fd = pm_perf_open(&a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			if (!first_err && errno != ENODEV)
				first_err = errno;
			continue;
		}
		if (!p->rings[cpu].base) {
			size_t bytes = (size_t)(RING_PAGES + 1) * (size_t)sysconf(_SC_PAGESIZE);
			void *b = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);

			if (b == MAP_FAILED) {
				first_err = errno;
				close((int)fd);
				continue;
			}
			p->rings[cpu] = (struct pm_ring){ (int)fd, b, bytes };
		} else if (ioctl((int)fd, PERF_EVENT_IOC_SET_OUTPUT, p->rings[cpu].fd)) {
			first_err = errno;
			close((int)fd);
			continue;
		}
		if (push_fd(p, (int)fd)) {
			close((int)fd);
			return -ENOMEM;
		}
		opened++;
	}
	if (!opened)
		return -(first_err ? first_err : ESRCH);
	{
		int32_t *v = realloc(p->sampled_tids, (p->nr_sampled + 1) * sizeof(*v));

		if (v) {
			p->sampled_tids = v;
			v[p->nr_sampled++] = tid;
		}
	}
	return 0;
}

static void on_sample(void *arg, const struct pm_sample *s)
{
	struct perfmon *p = arg;

	if (p->nr_win == p->cap_win) {
		uint32_t c = p->cap_win ? 2 * p->cap_win : 4096;
		struct pm_sample *v = realloc(p->win, c * sizeof(*v));

		if (!v) {
			p->stats.nr_lost++;
			return;
		}
		p->win = v;
		p->cap_win = c;
	}
	p->win[p->nr_win++] = *s;
}

static void drain(struct perfmon *p)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	for (int cpu = 0; cpu < p->nr_cpus; cpu++) {
		struct pm_ring *r = &p->rings[cpu];
		struct perf_event_mmap_page *mp = r->base;
		uint64_t head, tail;

		if (!mp)
			continue;
		head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
		tail = mp->data_tail;
		tail = pm_ring_parse((const uint8_t *)r->base + page, r->bytes - page, tail, head,
				     p->sample_type, p->sattr.sample_regs_user, on_sample, p,
				     &p->stats);
		__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
	}
	if (p->up)
		pm_uprobes_drain(p->up);
}

static int sampling_open(struct perfmon *p)
{
	int rc = 0, nr_ok = 0;

	p->nr_cpus = online_cpus();
	for (uint32_t i = 0; i < p->nr_threads; i++) {
		int r = sample_thread(p, p->threads[i].tid);

		if (!r)
			nr_ok++;
		else if (!rc)
			rc = r;
	}
	if (!nr_ok) {
		pm_err(p, "perf_event_open on the threads of pid %d failed: %s%s", (int)p->pid,
		       perfmon_errname(-rc), rc == -EACCES || rc == -EPERM ?
		       " (attaching needs ptrace access to the target: same user and "
		       "kernel.yama.ptrace_scope 0, or root / CAP_SYS_PTRACE; and "
		       "kernel.perf_event_paranoid <= 2 or CAP_PERFMON)" : "");
		return rc == -EACCES || rc == -EPERM ? AMEBA_EPERM : AMEBA_EIO;
	}
	return 0;
}

/* ---- watch: breakpoints of one experiment ---- */

/* Splits [s, e) into naturally aligned 1/2/4/8-byte pieces. */
static uint32_t split_range(uintptr_t s, uintptr_t e, struct bp_piece *out, uint32_t max,
			    uint32_t counter)
{
	uint32_t n = 0;

	while (s < e) {
		uint32_t len = 8;

		while (len > 1 && ((s & (len - 1)) || s + len > e))
			len /= 2;
		if (n < max)
			out[n] = (struct bp_piece){ s, len, counter, 0 };
		n++;
		s += len;
	}
	return n;
}

static int bp_len_code(uint32_t len)
{
	return len == 1 ? HW_BREAKPOINT_LEN_1 : len == 2 ? HW_BREAKPOINT_LEN_2 :
	       len == 4 ? HW_BREAKPOINT_LEN_4 : HW_BREAKPOINT_LEN_8;
}

static int wait_interval(struct perfmon *p, uint32_t interval_ms,
			 const volatile sig_atomic_t *stop, struct agent_exp_result *res,
			 int sampling)
{
	double t0 = now_ms(), t;

	for (;;) {
		struct timespec ts = { 0, DRAIN_MS * 1000000L };

		if (sampling) {
			/* new threads get their allocation probes soon */
			if (p->up && !scan_threads(p))
				pm_uprobes_sync(p->up, p->threads, p->nr_threads);
			drain(p);
		}
		t = now_ms();
		if (t - t0 >= interval_ms)
			break;
		if (stop && *stop) {
			res->interrupted = 1;
			break;
		}
		if (target_gone(p->pid) || p->map_gone) {
			res->r.target_exited = 1;
			break;
		}
		if (interval_ms - (t - t0) < DRAIN_MS)
			ts.tv_nsec = (long)((interval_ms - (t - t0)) * 1e6);
		nanosleep(&ts, NULL);
	}
	if (sampling)
		drain(p);
	res->r.elapsed_ns = (uint64_t)((now_ms() - t0) * 1e6);
	return 0;
}

static int exp_sampling(struct perfmon *p, const struct ameba_experiment *exp,
			uint32_t interval_ms, const volatile sig_atomic_t *stop,
			struct agent_exp_result *res)
{
	uint64_t lost0 = p->stats.nr_lost + p->stats.nr_throttle;
	uint32_t nt, nr_old, nr_eval;
	int rc;

	for (uint32_t i = 0; i < exp->nr_counters; i++) {
		int m = exp->counters[i].metric;
		int ok = 0;

		for (uint32_t k = 0; k < p->nr_metrics; k++)
			ok |= p->metrics[k] == m;
		if (!ok) {
			pm_err(p, "the %s backend does not measure %s (it measures %s)", p->backend,
			       ameba_metric_info(m) ? ameba_metric_info(m)->name : "?",
			       ameba_metric_info(p->metrics[0])->name);
			return AMEBA_ENOTSUP;
		}
	}
	nr_old = p->nr_win;
	wait_interval(p, interval_ms, stop, res, 1);
	/* the last interval reports what is left too */
	nr_eval = res->r.target_exited || res->interrupted ? p->nr_win : nr_old;
	/* threads seen in samples get ids now */
	for (uint32_t s = 0; s < nr_eval; s++)
		thread_index(p, (int32_t)p->win[s].tid, 1);
	nt = p->nr_threads;
	if ((rc = agent_resbuf_reset(&p->rb, exp->nr_counters, nt, NULL)))
		return rc;
	for (uint32_t s = 0; s < nr_eval; s++) {
		const struct pm_sample *sm = &p->win[s];
		int tix = thread_index(p, (int32_t)sm->tid, 0);
		uint32_t id = (uint32_t)tix;
		double inc[AMEBA_M_NR] = { 0 };

		if (tix < 0 || id >= nt)
			continue;	/* no room for its thread: counted nowhere */

		if (p->sample_type & PERF_SAMPLE_DATA_SRC) {
			struct pm_dsrc d;

			pm_dsrc_decode(sm->data_src, &d);
			pm_dsrc_metrics(&d, inc);
		}
		inc[p->sample_metric] = 1;
		inc[AMEBA_M_SAMPLES] = 1;
		const struct ameba_object *o = agent_object_at(p->map.objs, p->map.nr_objs,
							       (uintptr_t)sm->addr);

		for (uint32_t i = 0; i < exp->nr_counters; i++) {
			const struct ameba_counter *c = &exp->counters[i];
			uint64_t v = (uint64_t)inc[c->metric] * p->period;

			if (!v || !agent_counter_counts(exp, i, (uintptr_t)sm->addr, id, o))
				continue;
			p->rb.values[i] += v;
			p->rb.pt[(size_t)i * nt + id] += v;
		}
	}
	agent_resbuf_publish(&p->rb, exp, res);
	res->r.nr_samples_lost = p->stats.nr_lost + p->stats.nr_throttle - lost0;
	if (exp->sample_metric && nr_eval) {
		if (nr_eval > p->cap_out) {
			struct ameba_sample *v = realloc(p->out_samples, nr_eval * sizeof(*v));

			if (!v)
				return AMEBA_ENOMEM;
			p->out_samples = v;
			p->cap_out = nr_eval;
		}
		for (uint32_t s = 0; s < nr_eval; s++)
			p->out_samples[s] = (struct ameba_sample){
				(uintptr_t)p->win[s].addr, (uintptr_t)p->win[s].ip,
				(uint32_t)thread_index(p, (int32_t)p->win[s].tid, 0),
				(uint16_t)p->sample_metric,
				(uint16_t)(p->win[s].weight > 65535 ? 65535 : p->win[s].weight) };
		res->r.samples = p->out_samples;
		res->r.nr_samples = nr_eval;
	}
	/* this interval's samples wait for the next one (and its object map) */
	memmove(p->win, p->win + nr_eval, (p->nr_win - nr_eval) * sizeof(*p->win));
	p->nr_win -= nr_eval;
	return 0;
}

/* Closes the armed breakpoints. */
static void watch_disarm(struct perfmon *p)
{
	for (uint32_t t = 0; t < p->wt_nr_threads; t++)
		for (uint32_t k = 0; k < p->wt_nr; k++)
			if (p->wt_fds[(size_t)t * WATCH_MAX + k] >= 0)
				close(p->wt_fds[(size_t)t * WATCH_MAX + k]);
	free(p->wt_fds);
	free(p->wt_last);
	p->wt_fds = NULL;
	p->wt_last = NULL;
	p->wt_nr = p->wt_nr_threads = 0;
}

/* A thread refused a breakpoint (not for permission: that ends the
 * experiment): what it did not count is said once per errno, in the
 * report's warnings, since its counts then read 0 and look like "no
 * access". */
static void watch_refused(struct perfmon *p, uint32_t t, const struct bp_piece *pc, int e)
{
	char msg[400];

	for (uint32_t i = 0; i < p->nr_wt_warned; i++)
		if (p->wt_warned[i] == e)
			return;
	if (p->nr_wt_warned < sizeof(p->wt_warned) / sizeof(p->wt_warned[0]))
		p->wt_warned[p->nr_wt_warned++] = e;
	snprintf(msg, sizeof(msg), "watch: thread %d refused a breakpoint on [0x%lx, +%u): %s; "
		 "its accesses there are not counted%s", (int)p->threads[t].tid,
		 (unsigned long)pc->addr, pc->len, perfmon_errname(e),
		 e == ENOSPC || e == EBUSY ? " (its debug registers are taken: a debugger, or "
					      "another perf user watching it)" :
		 e == EINVAL ? " (an address or length the kernel does not accept)" : "");
	if (p->base.warn)
		p->base.warn(p->base.warn_arg, msg);
	else
		fprintf(stderr, "ameba: %s\n", msg);
}

/* Opens the breakpoints of piece k on thread t (if not open yet). */
static int watch_open(struct perfmon *p, uint32_t t, uint32_t k, int *rc)
{
	struct perf_event_attr a = { 0 };
	const struct bp_piece *pc = &p->wt_pieces[k];
	long fd;

	a.size = sizeof(a);
	a.type = PERF_TYPE_BREAKPOINT;
	a.bp_type = pc->type;
	a.bp_addr = pc->addr;
	a.bp_len = (uint64_t)bp_len_code(pc->len);
	a.sample_period = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = pm_perf_open(&a, p->threads[t].tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM) && !*rc) {
		pm_err(p, "perf_event_open of a breakpoint on thread %d failed: %s (needs ptrace "
		       "access to pid %d and perf_event_paranoid <= 2 or CAP_PERFMON)",
		       (int)p->threads[t].tid, perfmon_errname(errno), (int)p->pid);
		*rc = AMEBA_EPERM;
	} else if (fd < 0 && errno != ESRCH) {
		watch_refused(p, t, pc, errno);
	}
	return (int)fd;
}

/* Grows the per-thread tables to the current thread count. */
static int watch_grow(struct perfmon *p)
{
	uint32_t nt = p->nr_threads;
	int *fds;
	uint64_t *last;

	if (nt <= p->wt_nr_threads)
		return 0;
	fds = realloc(p->wt_fds, (size_t)nt * WATCH_MAX * sizeof(*fds));
	if (!fds)
		return AMEBA_ENOMEM;
	p->wt_fds = fds;
	last = realloc(p->wt_last, (size_t)nt * WATCH_MAX * sizeof(*last));
	if (!last)
		return AMEBA_ENOMEM;
	p->wt_last = last;
	for (size_t i = (size_t)p->wt_nr_threads * WATCH_MAX; i < (size_t)nt * WATCH_MAX; i++) {
		fds[i] = -1;
		last[i] = 0;
	}
	p->wt_nr_threads = nt;
	return 0;
}

/*
 * Breakpoints stay armed from one experiment to the next while the
 * strategy asks for the same pieces (words strategy, repeated turns): the
 * counts are then exact over the whole window, gaps between intervals
 * included. Each interval reports the difference since the last read.
 */
static int exp_watch(struct perfmon *p, const struct ameba_experiment *exp, uint32_t interval_ms,
		     const volatile sig_atomic_t *stop, struct agent_exp_result *res)
{
	struct bp_piece pieces[WATCH_MAX];
	uint32_t nr = 0, nt, nr_open = 0;
	int rc = 0, same;

	for (uint32_t i = 0; i < exp->nr_counters; i++) {
		const struct ameba_counter *c = &exp->counters[i];
		uint32_t n0 = nr;

		if (c->metric != AMEBA_M_WRITES && c->metric != AMEBA_M_MEM_REF) {
			const struct ameba_metric_info *mi = ameba_metric_info(c->metric);

			pm_err(p, "the watch backend counts writes and mem_ref (reads and "
			       "writes) on words; counter %u asks for %s (x86 breakpoints cannot "
			       "count reads alone: reads = mem_ref - writes)", i,
			       mi ? mi->name : "?");
			return AMEBA_ENOTSUP;
		}
		if (!c->nr_ranges) {
			pm_err(p, "the watch backend counts accesses to at most %u words of 1-8 "
			       "bytes; counter %u has no address range (use the words strategy: "
			       "--strategy words:object=NAME)", p->nr_bp_slots, i);
			return AMEBA_ENOTSUP;
		}
		for (uint32_t r = 0; r < c->nr_ranges; r++)
			nr += split_range(c->ranges[2 * r], c->ranges[2 * r + 1], pieces + nr,
					  nr < WATCH_MAX ? WATCH_MAX - nr : 0, i);
		if (nr > p->nr_bp_slots) {
			pm_err(p, "the watch backend has %u breakpoints per thread; the experiment "
			       "needs %u (counter %u covers %u aligned pieces of 1-8 bytes)",
			       p->nr_bp_slots, nr, i, nr - n0);
			return AMEBA_ENOTSUP;
		}
		for (uint32_t k = n0; k < nr; k++)
			pieces[k].type = c->metric == AMEBA_M_WRITES ? HW_BREAKPOINT_W :
					 HW_BREAKPOINT_RW;
	}
	same = nr == p->wt_nr;
	for (uint32_t k = 0; same && k < nr; k++)
		same = pieces[k].addr == p->wt_pieces[k].addr &&
		       pieces[k].len == p->wt_pieces[k].len &&
		       pieces[k].type == p->wt_pieces[k].type;
	if (!same) {
		watch_disarm(p);
		memcpy(p->wt_pieces, pieces, sizeof(pieces));
		p->wt_nr = nr;
	} else {
		for (uint32_t k = 0; k < nr; k++)
			p->wt_pieces[k].counter = pieces[k].counter;
	}
	if (scan_threads(p))
		return AMEBA_EEXITED;
	if ((rc = watch_grow(p)))
		return rc;
	nt = p->nr_threads;
	if ((rc = agent_resbuf_reset(&p->rb, exp->nr_counters, nt, NULL)))
		return rc;
	for (uint32_t t = 0; t < nt; t++) {
		for (uint32_t k = 0; k < nr; k++) {
			int *fd = &p->wt_fds[(size_t)t * WATCH_MAX + k];

			if (*fd < 0 && !p->threads[t].exited) {
				*fd = watch_open(p, t, k, &rc);
				p->wt_last[(size_t)t * WATCH_MAX + k] = 0;
			}
			nr_open += *fd >= 0;
		}
	}
	if (!nr_open && rc)
		return rc;
	if (p->base.armed) {
		void (*armed)(void *) = p->base.armed;

		p->base.armed = NULL;
		armed(p->base.armed_arg);
	}
	wait_interval(p, interval_ms, stop, res, 0);
	for (uint32_t t = 0; t < nt; t++) {
		for (uint32_t k = 0; k < nr; k++) {
			int fd = p->wt_fds[(size_t)t * WATCH_MAX + k];
			uint64_t *last = &p->wt_last[(size_t)t * WATCH_MAX + k];
			uint32_t i = p->wt_pieces[k].counter;
			uint64_t v = 0, d;

			if (fd < 0 || read(fd, &v, sizeof(v)) != sizeof(v))
				continue;
			d = v >= *last ? v - *last : 0;
			*last = v;
			if (!agent_counter_has_thread(&exp->counters[i], t))
				continue;
			p->rb.values[i] += d;
			p->rb.pt[(size_t)i * nt + t] += d;
		}
	}
	agent_resbuf_publish(&p->rb, exp, res);
	return 0;
}

/*
 * Counting mode of the perf backend: counters over the whole address
 * space (no ranges) use one counting event per (metric, thread), opened on
 * first use and kept; each interval reads the difference and scales it by
 * the difference of time_enabled / time_running (multiplexing).
 */
static int count_arm(struct perfmon *p, int m)
{
	struct pm_encoding enc;
	const char *ev;
	char msg[256];
	uint32_t nt = p->nr_threads;
	struct pm_count *c;

	if (p->cnt_refused[m])
		return -1;
	if (p->cnt[m] && p->cnt_threads[m] >= nt)
		return 0;
	ev = pm_pfm_event_for(m, p->pmu_model[0] ? p->pmu_model : NULL);
	if (!ev || pm_pfm_encode(ev, &enc, msg, sizeof(msg))) {
		p->cnt_refused[m] = 1;
		return -1;
	}
	c = realloc(p->cnt[m], nt * sizeof(*c));
	if (!c)
		return -1;
	p->cnt[m] = c;
	for (uint32_t t = p->cnt_threads[m]; t < nt; t++) {
		struct perf_event_attr a = { 0 };
		long fd = -1;

		if (!p->threads[t].exited) {
			a.size = sizeof(a);
			a.type = enc.type;
			a.config = enc.config;
			a.config1 = enc.config1;
			a.config2 = enc.config2;
			a.exclude_kernel = 1;
			a.exclude_hv = 1;
			a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED |
					PERF_FORMAT_TOTAL_TIME_RUNNING;
			fd = pm_perf_open(&a, p->threads[t].tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
		}
		c[t] = (struct pm_count){ (int)fd, 0, 0, 0 };
	}
	p->cnt_threads[m] = nt;
	return 0;
}

/* Replaces the sampled estimate of range-less counters by scaled counts. */
static void count_read(struct perfmon *p, const struct ameba_experiment *exp, uint32_t nt)
{
	uint8_t done[AMEBA_M_NR] = { 0 };
	double *per = calloc((size_t)AMEBA_M_NR * (nt ? nt : 1), sizeof(*per));

	if (!per)
		return;
	for (uint32_t i = 0; i < exp->nr_counters; i++) {
		const struct ameba_counter *k = &exp->counters[i];
		int m = k->metric;

		if (k->nr_ranges || !p->cnt[m])
			continue;
		if (!done[m]) {
			for (uint32_t t = 0; t < p->cnt_threads[m] && t < nt; t++) {
				struct pm_count *c = &p->cnt[m][t];
				uint64_t v[3];
				int ran;

				if (c->fd < 0 || read(c->fd, v, sizeof(v)) != sizeof(v))
					continue;
				per[(size_t)m * nt + t] = pm_scale(v[0] - c->value,
								   v[1] - c->enabled,
								   v[2] - c->running, &ran);
				c->value = v[0];
				c->enabled = v[1];
				c->running = v[2];
			}
			done[m] = 1;
		}
		p->rb.values[i] = 0;
		for (uint32_t t = 0; t < nt; t++) {
			uint64_t v = 0;

			if (agent_counter_has_thread(k, t))
				v = (uint64_t)per[(size_t)m * nt + t];

			p->rb.pt[(size_t)i * nt + t] = v;
			p->rb.values[i] += v;
		}
	}
	free(per);
}

/* ---- provider ops ---- */

static int pm_refresh(struct agent_provider *base, struct agent_world *w)
{
	struct perfmon *p = (struct perfmon *)base;
	const struct pm_extra_obj *extra = NULL;
	uint32_t nr_extra = 0;
	int rc;

	if (target_gone(p->pid) || p->map_gone) {
		/*
		 * Samples still wait for their interval (they lag one behind):
		 * one more experiment on the last object map reports them.
		 */
		if (p->mode == PM_WATCH || p->exit_reported)
			return AMEBA_EEXITED;
		drain(p);
		if (!p->nr_win || !p->map.nr_objs)
			return AMEBA_EEXITED;
		p->exit_reported = 1;
		goto fill;
	}
	if (scan_threads(p))
		return AMEBA_EEXITED;
	if (p->up) {
		pm_uprobes_sync(p->up, p->threads, p->nr_threads);
		pm_uprobes_objects(p->up, &extra, &nr_extra);
	}
	rc = pm_procmap_refresh(&p->map, extra, nr_extra);
	if (rc == -ESRCH && !p->map_gone) {
		/* exiting (its memory is gone, not yet a zombie): the old map stays */
		p->map_gone = 1;
		return pm_refresh(base, w);
	}
	if (rc == -ESRCH)
		return AMEBA_EEXITED;
	if (rc) {
		pm_err(p, "reading /proc/%d/maps: %s", (int)p->pid, strerror(-rc));
		return AMEBA_EIO;
	}
fill:
	memset(w, 0, sizeof(*w));
	w->pid = p->pid;
	w->program = p->program;
	w->backend = p->backend;
	w->exact = p->mode != PM_PERF;
	memcpy(w->metrics, p->metrics, sizeof(w->metrics));
	w->nr_metrics = p->nr_metrics;
	w->objects = p->map.objs;
	w->nr_objects = p->map.nr_objs;
	w->threads = p->threads;
	w->nr_threads = p->nr_threads;
	return 0;
}

static int pm_experiment(struct agent_provider *base, const struct ameba_experiment *exp,
			 uint32_t interval_ms, const volatile sig_atomic_t *stop,
			 struct agent_exp_result *res)
{
	struct perfmon *p = (struct perfmon *)base;
	int rc;

	memset(res, 0, sizeof(*res));
	if (exp->interval_ms)
		interval_ms = exp->interval_ms;
	if (p->base.armed && p->mode != PM_WATCH) {
		void (*armed)(void *) = p->base.armed;

		p->base.armed = NULL;
		armed(p->base.armed_arg);
	}
	if (p->mode == PM_WATCH)
		rc = exp_watch(p, exp, interval_ms, stop, res);
	else
	{
		if (p->mode == PM_PERF) {
			scan_threads(p);
			for (uint32_t i = 0; i < exp->nr_counters; i++)
				if (!exp->counters[i].nr_ranges)
					count_arm(p, exp->counters[i].metric);
		}
		rc = exp_sampling(p, exp, interval_ms, stop, res);
		if (!rc && p->mode == PM_PERF)
			count_read(p, exp, res->r.nr_threads);
	}
	return rc;
}

static const char *pm_error(struct agent_provider *base)
{
	return ((struct perfmon *)base)->err;
}

static void pm_close(struct agent_provider *base)
{
	struct perfmon *p = (struct perfmon *)base;

	for (uint32_t i = 0; i < p->nr_sfds; i++)
		close(p->sfds[i]);
	for (int c = 0; c < p->nr_cpus; c++)
		if (p->rings[c].base)
			munmap(p->rings[c].base, p->rings[c].bytes);
	if (p->up)
		pm_uprobes_close(p->up);
	watch_disarm(p);
	for (int m = 0; m < AMEBA_M_NR; m++) {
		for (uint32_t t = 0; t < p->cnt_threads[m]; t++)
			if (p->cnt[m][t].fd >= 0)
				close(p->cnt[m][t].fd);
		free(p->cnt[m]);
	}
	pm_procmap_free(&p->map);
	free(p->sfds);
	free(p->sampled_tids);
	free(p->threads);
	free(p->win);
	agent_resbuf_free(&p->rb);
	free(p->out_samples);
	free(p);
}

static const struct agent_provider_ops pm_ops = {
	.name = "perfmon",
	.refresh = pm_refresh,
	.experiment = pm_experiment,
	.error = pm_error,
	.close = pm_close,
};

/* Whether pid carries libameba-rt: a mapped libameba-rt.so, or an
 * executable that defines __tsan_init (the runtime linked in by ameba cc). */
static int has_runtime(int32_t pid)
{
	char path[64], line[1024];
	struct pm_elf e;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (f) {
		while (!found && fgets(line, sizeof(line), f))
			found = strstr(line, "libameba-rt") != NULL;
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (!found && !pm_elf_read(path, &e)) {
		found = pm_elf_func(&e, "__tsan_init") != NULL;
		pm_elf_free(&e);
	}
	return found;
}

/* The perf backend's sampled event for metric m; 0 or AMEBA_E*. */
static int perf_event_setup(struct perfmon *p, const struct perfmon_caps *caps, int m)
{
	struct pm_encoding enc;
	const char *ev, *model = caps->pfm_pmus[0] ? caps->pfm_pmus : NULL;
	char pmu[256], msg[512];

	snprintf(pmu, sizeof(pmu), "%s", model ? model : "");
	pmu[strcspn(pmu, ",")] = 0;
	snprintf(p->pmu_model, sizeof(p->pmu_model), "%s", pmu);
	memset(&p->sattr, 0, sizeof(p->sattr));
	p->sattr.size = sizeof(p->sattr);
	if (caps->ibs_op_type >= 0 && (m == AMEBA_M_SAMPLES || !pm_pfm_event_for(m, pmu))) {
		/* AMD IBS op: every sampled op with its data address and source */
		p->sattr.type = (uint32_t)caps->ibs_op_type;
		p->sattr.config = 0;
		p->sample_metric = AMEBA_M_MEM_REF;
	} else {
		ev = pm_pfm_event_for(m, model ? pmu : NULL);
		if (!ev) {
			pm_err(p, "the perf backend has no event for %s on this PMU (%s); "
			       "`ameba list backends` shows the model", ameba_metric_info(m)->name,
			       model ? model : "unknown");
			return AMEBA_ENOTSUP;
		}
		if (pm_pfm_encode(ev, &enc, msg, sizeof(msg))) {
			pm_err(p, "%s", msg);
			return AMEBA_ENOTSUP;
		}
		p->sattr.type = enc.type;
		p->sattr.config = enc.config;
		p->sattr.config1 = enc.config1;
		p->sattr.config2 = enc.config2;
		p->sattr.precise_ip = enc.precise_ip ? enc.precise_ip : 2;
		p->sample_metric = m;
	}
	p->period = PERF_PERIOD;
	p->sattr.sample_period = p->period;
	p->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
			 PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_WEIGHT;
	if (caps->is_root || caps->cap_sys_admin)
		p->sample_type |= PERF_SAMPLE_PHYS_ADDR;
	p->sattr.sample_type = p->sample_type;
	p->sattr.exclude_kernel = 1;
	p->sattr.exclude_hv = 1;
	p->sattr.inherit = 1;
	p->sattr.wakeup_events = 0;
	/* what data_src decodes (the perf row of the backend table), and m */
	p->nr_metrics = 0;
	for (int k = 0; k < AMEBA_M_NR; k++)
		if (k == m || (perfmon_backend("perf")->metrics & AMEBA_M_BIT(k)))
			p->metrics[p->nr_metrics++] = k;
	return 0;
}

struct agent_provider *agent_provider_perf_open(int32_t pid, const char *backend,
						const char *metric, int *err, char *msg,
						size_t len)
{
	struct perfmon_caps caps;
	struct perfmon *p;
	char path[64];
	ssize_t n;
	const struct ameba_backend_info *row = perfmon_backend(backend);
	int m = metric ? ameba_metric_by_name(metric) : -1, rc;

	*err = 0;
	perfmon_probe(&caps);
	p = calloc(1, sizeof(*p));
	if (!p) {
		*err = AMEBA_ENOMEM;
		snprintf(msg, len, "out of memory");
		return NULL;
	}
	p->base.ops = &pm_ops;
	p->pid = pid;
	p->map.pid = pid;
	p->nr_cpus = 0;
	if (!row || row->where != AMEBA_BACKEND_AGENT) {
		*err = AMEBA_ENOENT;
		snprintf(msg, len, "%s is not a backend of the agent (`ameba list backends`)",
			 backend);
		goto fail;
	}
	p->backend = row->name;
	if (!strcmp(row->name, "watch"))
		p->mode = PM_WATCH;
	else if (!strcmp(row->name, "pagefault"))
		p->mode = PM_PAGEFAULT;
	else
		p->mode = PM_PERF;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, p->program, sizeof(p->program) - 1);
	if (n < 0 || target_gone(pid)) {
		*err = errno == EACCES ? AMEBA_EPERM : AMEBA_ENOENT;
		snprintf(msg, len, "no process %d to attach to (%s: %s)", (int)pid, path,
			 n < 0 ? strerror(errno) : "a zombie");
		goto fail;
	}
	p->program[n] = 0;
	if (has_runtime(pid))
		fprintf(stderr, "ameba: note: pid %d runs the ameba runtime (libameba-rt); run or "
			"attach without --backend to use its own object map and exact "
			"counters\n", (int)pid);
	if (scan_threads(p)) {
		*err = AMEBA_EEXITED;
		snprintf(msg, len, "process %d exited", (int)pid);
		goto fail;
	}
	switch (p->mode) {
	case PM_WATCH:
		if (!caps.bp_ok) {
			*err = caps.bp_errno == EACCES || caps.bp_errno == EPERM ? AMEBA_EPERM :
			       AMEBA_ENOTSUP;
			snprintf(msg, len, "the watch backend needs hardware breakpoints: "
				 "perf_event_open of PERF_TYPE_BREAKPOINT failed: %s (`ameba list "
				 "backends` explains)", perfmon_errname(caps.bp_errno));
			goto fail;
		}
		if (m >= 0 && !(row->metrics & AMEBA_M_BIT(m))) {
			*err = AMEBA_ENOTSUP;
			snprintf(msg, len, "--metric %s: the watch backend counts writes and "
				 "mem_ref", metric);
			goto fail;
		}
		p->nr_bp_slots = caps.nr_bp_slots;
		/* mem_ref only when asked: the search prefers it over writes */
		if (m == AMEBA_M_MEM_REF)
			p->metrics[p->nr_metrics++] = AMEBA_M_MEM_REF;
		p->metrics[p->nr_metrics++] = AMEBA_M_WRITES;
		break;
	case PM_PAGEFAULT:
		if (!caps.sw_ok) {
			*err = AMEBA_ENOTSUP;
			snprintf(msg, len, "the pagefault backend: perf_event_open of "
				 "PERF_COUNT_SW_PAGE_FAULTS failed: %s (`ameba list backends` "
				 "explains)", perfmon_errname(caps.sw_errno));
			goto fail;
		}
		if (m >= 0 && !(row->metrics & AMEBA_M_BIT(m))) {
			char why[512];

			perfmon_hw_reason(&caps, why, sizeof(why));
			*err = AMEBA_ENOTSUP;
			snprintf(msg, len, "--metric %s: the pagefault backend measures `samples` "
				 "(page faults: first touches)%s%s", metric, why[0] ? "; " : "",
				 why);
			goto fail;
		}
		p->sattr.size = sizeof(p->sattr);
		p->sattr.type = PERF_TYPE_SOFTWARE;
		p->sattr.config = PERF_COUNT_SW_PAGE_FAULTS;
		p->sattr.sample_period = 1;
		p->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
				 PERF_SAMPLE_ADDR;
		p->sattr.sample_type = p->sample_type;
		p->sattr.exclude_kernel = 1;
		p->sattr.inherit = 1;
		p->period = 1;
		p->sample_metric = AMEBA_M_SAMPLES;
		p->metrics[p->nr_metrics++] = AMEBA_M_SAMPLES;
		break;
	default:
		if (!caps.hw_ok) {
			char why[512];

			perfmon_hw_reason(&caps, why, sizeof(why));
			*err = caps.hw_errno == EACCES || caps.hw_errno == EPERM ? AMEBA_EPERM :
			       AMEBA_ENOPMU;
			snprintf(msg, len, "%s%s%s", metric ? "--metric " : "",
				 metric ? metric : "", metric ? ": " : "");
			snprintf(msg + strlen(msg), len - strlen(msg), "%s%s", why,
				 *err == AMEBA_ENOPMU ?
				 " (or, without a PMU, `--backend pagefault` for first-touch page "
				 "placement and `--backend watch` for exact per-word access "
				 "counts)" :
				 "");
			goto fail;
		}
		if ((rc = perf_event_setup(p, &caps, m >= 0 ? m : AMEBA_M_SAMPLES))) {
			*err = rc;
			snprintf(msg, len, "%s", p->err);
			goto fail;
		}
		break;
	}
	if (p->mode != PM_WATCH) {
		rc = sampling_open(p);
		if (rc) {
			*err = rc;
			snprintf(msg, len, "%s", p->err);
			goto fail;
		}
	}
	/* heap blocks through uprobes, when the kernel offers them */
	if (caps.uprobe_ok && !getenv("AMEBA_NO_UPROBES"))
		p->up = pm_uprobes_open(pid, p->nr_cpus ? p->nr_cpus : online_cpus(), p->threads,
					p->nr_threads);
	return &p->base;
fail:
	pm_close(&p->base);
	return NULL;
}
