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

#include "perfmon_int.h"
#include "pm_elf.h"


void pm_err(struct perfmon *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->err, sizeof(p->err), fmt, ap);
	va_end(ap);
}

static double pm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* 1 when pid is gone or a zombie. */
static int pm_target_gone(int32_t pid)
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

int pm_thread_index(struct perfmon *p, int32_t tid, int add)
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
int pm_scan_threads(struct perfmon *p)
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
	pm_thread_index(p, p->pid, 1);
	for (uint32_t i = 0; i < n; i++)
		pm_thread_index(p, tids[i], 1);
	for (uint32_t i = 0; i < p->nr_threads; i++)
		p->threads[i].exited = !bsearch(&p->threads[i].tid, tids, n, sizeof(tids[0]),
						 tid_cmp);
	return 0;
}

int pm_wait_interval(struct perfmon *p, uint32_t interval_ms,
			 const volatile sig_atomic_t *stop, struct agent_exp_result *res,
			 int sampling)
{
	double t0 = pm_now_ms(), t;

	for (;;) {
		struct timespec ts = { 0, DRAIN_MS * 1000000L };

		if (sampling) {
			/* new threads get their allocation probes soon */
			if (p->up && !pm_scan_threads(p))
				pm_uprobes_sync(p->up, p->threads, p->nr_threads);
			pm_drain(p);
		}
		t = pm_now_ms();
		if (t - t0 >= interval_ms)
			break;
		if (stop && *stop) {
			res->interrupted = 1;
			break;
		}
		if (pm_target_gone(p->pid) || p->map_gone) {
			res->r.target_exited = 1;
			break;
		}
		if (interval_ms - (t - t0) < DRAIN_MS)
			ts.tv_nsec = (long)((interval_ms - (t - t0)) * 1e6);
		nanosleep(&ts, NULL);
	}
	if (sampling)
		pm_drain(p);
	res->r.elapsed_ns = (uint64_t)((pm_now_ms() - t0) * 1e6);
	return 0;
}

/* ---- provider ops ---- */

static int pm_refresh(struct agent_provider *base, struct agent_world *w)
{
	struct perfmon *p = (struct perfmon *)base;
	const struct pm_extra_obj *extra = NULL;
	uint32_t nr_extra = 0;
	int rc;

	if (pm_target_gone(p->pid) || p->map_gone) {
		/*
		 * Samples still wait for their interval (they lag one behind):
		 * one more experiment on the last object map reports them.
		 */
		if (p->mode == PM_WATCH || p->exit_reported)
			return AMEBA_EEXITED;
		pm_drain(p);
		if (!p->nr_win || !p->map.nr_objs)
			return AMEBA_EEXITED;
		p->exit_reported = 1;
		goto fill;
	}
	if (pm_scan_threads(p))
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
		rc = pm_exp_watch(p, exp, interval_ms, stop, res);
	else
	{
		if (p->mode == PM_PERF) {
			pm_scan_threads(p);
			for (uint32_t i = 0; i < exp->nr_counters; i++)
				if (!exp->counters[i].nr_ranges)
					pm_count_arm(p, exp->counters[i].metric);
		}
		rc = pm_exp_sampling(p, exp, interval_ms, stop, res);
		if (!rc && p->mode == PM_PERF)
			pm_count_read(p, exp, res->r.nr_threads);
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
	pm_watch_disarm(p);
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
	if (n < 0 || pm_target_gone(pid)) {
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
	if (pm_scan_threads(p)) {
		*err = AMEBA_EEXITED;
		snprintf(msg, len, "process %d exited", (int)pid);
		goto fail;
	}
	switch (p->mode) {
	case PM_WATCH:
		if (!caps.bp_ok) {
			*err = caps.bp_errno == EACCES || caps.bp_errno == EPERM ? AMEBA_EPERM :
			       AMEBA_ENOTSUP;
			char why[512];

			perfmon_bp_reason(&caps, why, sizeof(why));
			snprintf(msg, len, "the watch backend needs hardware breakpoints: %s "
				 "(`ameba list backends` explains)", why);
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
		rc = pm_sampling_open(p);
		if (rc) {
			*err = rc;
			snprintf(msg, len, "%s", p->err);
			goto fail;
		}
	}
	/* heap blocks through uprobes, when the kernel offers them */
	if (caps.uprobe_ok && !getenv("AMEBA_NO_UPROBES"))
		p->up = pm_uprobes_open(pid, p->nr_cpus ? p->nr_cpus : pm_online_cpus(), p->threads,
					p->nr_threads);
	return &p->base;
fail:
	pm_close(&p->base);
	return NULL;
}
