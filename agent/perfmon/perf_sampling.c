/*
 * perf_sampling.c - the sampling modes of the out-of-process monitor (perf
 * and pagefault backends) and the perf backend's counting events: per-cpu
 * rings fed by one inherited event per (thread, cpu), drained during an
 * experiment, whose samples are attributed to the counters of the next one
 * (provider_perf.c, Notes); counters without ranges read counting events.
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

/* ---- sampling: per-cpu rings, events per (thread, cpu) with inherit ---- */

int pm_online_cpus(void)
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
static int pm_sample_thread(struct perfmon *p, int32_t tid)
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

void pm_drain(struct perfmon *p)
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

int pm_sampling_open(struct perfmon *p)
{
	int rc = 0, nr_ok = 0;

	p->nr_cpus = pm_online_cpus();
	for (uint32_t i = 0; i < p->nr_threads; i++) {
		int r = pm_sample_thread(p, p->threads[i].tid);

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

int pm_exp_sampling(struct perfmon *p, const struct ameba_experiment *exp,
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
	pm_wait_interval(p, interval_ms, stop, res, 1);
	/* the last interval reports what is left too */
	nr_eval = res->r.target_exited || res->interrupted ? p->nr_win : nr_old;
	/* threads seen in samples get ids now */
	for (uint32_t s = 0; s < nr_eval; s++)
		pm_thread_index(p, (int32_t)p->win[s].tid, 1);
	nt = p->nr_threads;
	if ((rc = agent_resbuf_reset(&p->rb, exp->nr_counters, nt, NULL)))
		return rc;
	for (uint32_t s = 0; s < nr_eval; s++) {
		const struct pm_sample *sm = &p->win[s];
		int tix = pm_thread_index(p, (int32_t)sm->tid, 0);
		uint32_t id = (uint32_t)tix;
		double inc[AMEBA_M_NR] = { 0 };
		/* the object it hit, for counters with bins or exceptions */
		const struct ameba_object *o;

		if (tix < 0 || id >= nt)
			continue;	/* no room for its thread: counted nowhere */

		if (p->sample_type & PERF_SAMPLE_DATA_SRC) {
			struct pm_dsrc d;

			pm_dsrc_decode(sm->data_src, &d);
			pm_dsrc_metrics(&d, inc);
		}
		inc[p->sample_metric] = 1;
		inc[AMEBA_M_SAMPLES] = 1;
		o = pm_procmap_find(&p->map, (uintptr_t)sm->addr);
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
				(uint32_t)pm_thread_index(p, (int32_t)p->win[s].tid, 0),
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

/*
 * Counting mode of the perf backend: counters over the whole address
 * space (no ranges) use one counting event per (metric, thread), opened on
 * first use and kept; each interval reads the difference and scales it by
 * the difference of time_enabled / time_running (multiplexing).
 */
int pm_count_arm(struct perfmon *p, int m)
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
void pm_count_read(struct perfmon *p, const struct ameba_experiment *exp, uint32_t nt)
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
