/*
 * perf_watch.c - the watch backend: the experiment's ranges split into
 * aligned 1/2/4/8-byte pieces, one PERF_TYPE_BREAKPOINT per (thread,
 * piece), opened on every live thread for the interval and read exactly
 * at its end (provider_perf.c, Notes).
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

/* Closes the armed breakpoints. */
void pm_watch_disarm(struct perfmon *p)
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
int pm_exp_watch(struct perfmon *p, const struct ameba_experiment *exp, uint32_t interval_ms,
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
		pm_watch_disarm(p);
		memcpy(p->wt_pieces, pieces, sizeof(pieces));
		p->wt_nr = nr;
	} else {
		for (uint32_t k = 0; k < nr; k++)
			p->wt_pieces[k].counter = pieces[k].counter;
	}
	if (pm_scan_threads(p))
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
	pm_wait_interval(p, interval_ms, stop, res, 0);
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
