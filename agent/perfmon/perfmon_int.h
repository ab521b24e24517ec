/*
 * perfmon_int.h - private to agent/perfmon: the out-of-process monitor's
 * state (struct perfmon) and what its files share. provider_perf.c is the
 * provider (threads, refresh, experiments, open and close), perf_sampling.c
 * the sampling rings and counting events of the perf and pagefault
 * backends, perf_watch.c the breakpoints of the watch backend.
 */
#ifndef AMEBA_PERFMON_INT_H
#define AMEBA_PERFMON_INT_H

#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "ameba/ameba.h"
#include "perfmon.h"
#include "pfm.h"
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

void pm_err(struct perfmon *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int pm_thread_index(struct perfmon *p, int32_t tid, int add);
int pm_scan_threads(struct perfmon *p);
int pm_wait_interval(struct perfmon *p, uint32_t interval_ms, const volatile sig_atomic_t *stop,
		     struct agent_exp_result *res, int sampling);

/* perf_sampling.c */
int pm_online_cpus(void);
void pm_drain(struct perfmon *p);
int pm_sampling_open(struct perfmon *p);
int pm_exp_sampling(struct perfmon *p, const struct ameba_experiment *exp, uint32_t interval_ms,
		    const volatile sig_atomic_t *stop, struct agent_exp_result *res);
int pm_count_arm(struct perfmon *p, int m);
void pm_count_read(struct perfmon *p, const struct ameba_experiment *exp, uint32_t nt);

/* perf_watch.c */
void pm_watch_disarm(struct perfmon *p);
int pm_exp_watch(struct perfmon *p, const struct ameba_experiment *exp, uint32_t interval_ms,
		 const volatile sig_atomic_t *stop, struct agent_exp_result *res);

#endif /* AMEBA_PERFMON_INT_H */
