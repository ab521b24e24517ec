/*
 * perfmon.h - the agent's out-of-process monitor: measures a program that
 * was not built with `ameba cc`, through perf_event_open(2) from the agent's
 * side (docs/backends.md).
 *
 *   detect.c     which backends work on this machine, and why not
 *   procmap.c    objects of an outside process: /proc/PID/maps + ELF symbols
 *   ring.c       perf mmap ring-buffer records, data_src, multiplex scaling,
 *                range estimates from samples (pure code, unit-tested)
 *   pfm.c        event encoding through libpfm4
 *   provider_perf.c  the ContextProvider for the perf, pagefault and watch
 *                backends
 */
#ifndef AMEBA_PERFMON_H
#define AMEBA_PERFMON_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ameba/plugin.h"

struct agent_provider;

/* ---- detection (detect.c) ---- */

struct perfmon_caps {
	int paranoid;			/* /proc/sys/kernel/perf_event_paranoid, -100 unknown */
	int cap_perfmon, cap_sys_admin, cap_sys_ptrace;
	int is_root;
	/* hardware events: perf_event_open of PERF_COUNT_HW_CPU_CYCLES */
	int hw_ok;
	int hw_errno;			/* when !hw_ok */
	int hw_insn_errno;		/* PERF_COUNT_HW_INSTRUCTIONS, 0 when it opened */
	char pfm_pmus[256];		/* libpfm4's present core PMUs, "" none */
	int pfm_ok;			/* libpfm4 initialised and encoded "cycles" */
	int ibs_op_type;		/* dynamic PMU type of AMD IBS op, -1 none */
	/* software events: page faults with data addresses */
	int sw_ok, sw_errno;
	/* hardware breakpoints */
	int bp_ok, bp_errno;
	uint32_t nr_bp_slots;		/* breakpoints one thread can hold at once */
	uint64_t bp_probe_count;	/* writes counted by the probe (want 3) */
	/* uprobes through the perf uprobe PMU */
	int uprobe_ok, uprobe_errno;
	int uprobe_type;		/* -1 when the PMU is missing */
};

/* Probes this machine (cheap: a few perf_event_open calls on the agent). */
void perfmon_probe(struct perfmon_caps *c);

/* The one-line reason the hardware PMU cannot be used, "" when it can. */
void perfmon_hw_reason(const struct perfmon_caps *c, char *buf, size_t len);
/* The same for hardware breakpoints (the watch backend): one that cannot be
 * opened, or that opens but does not count (a hypervisor that does not pass
 * debug-register hits on). */
void perfmon_bp_reason(const struct perfmon_caps *c, char *buf, size_t len);

/* Prints the backends table of `ameba list backends`. */
int perfmon_list_backends(FILE *f);

/* The backend table's row (mri/common.c) of a --backend name, NULL for a
 * name that is no backend ("perf-sw" is the pagefault backend's old name). */
const struct ameba_backend_info *perfmon_backend(const char *name);

/* 1 when backend is served by this monitor (an agent row of the backend
 * table: perf, pagefault, watch), else 0 (a runtime row such as sim, or no
 * backend). */
int perfmon_is_backend(const char *backend);

/* Whether the metric needs a hardware PMU under the perf backend. */
int perfmon_metric_needs_pmu(int metric);

/* ---- the provider (provider_perf.c) ---- */

/*
 * Attaches to pid with backend ("perf", "pagefault", "watch"). metric is
 * the run's --metric (NULL: the backend's default). On failure NULL, *err
 * set and msg says why and what to do instead (no PMU, permissions).
 */
struct agent_provider *agent_provider_perf_open(int32_t pid, const char *backend,
						const char *metric, int *err, char *msg,
						size_t len);

/* ---- errno names ---- */
const char *perfmon_errname(int e);

#endif
