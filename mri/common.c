/*
 * common.c - error strings, the metric table and the backend table, shared
 * by the runtime, the MRI client library and the agent.
 *
 * Notes/invariants:
 *  - The backend table is the only list of backends. The runtime
 *    resolves AMEBA_BACKEND and MRI attach names through it and keeps its
 *    ops keyed by the row's name (monitor/rt.c); the agent validates
 *    `--backend`, chooses the provider by the row's `where` and prints
 *    `ameba list backends` from it (agent/perfmon/detect.c).
 *  - A row's metrics are what the backend provides: for a runtime row
 *    exactly its ops' metric list (rt.c checks at activation), for an agent
 *    row what its provider may advertise (watch: mem_ref only when it is the
 *    --metric; perf: the --metric it samples, est_cycles included, on top).
 */
#include <string.h>

#include "ameba/ameba.h"

#ifdef AMEBA_RT
/* In the runtime these tables are the runtime's data, not the program's
 * globals: the object map leaves out files holding this marker (mon.h). */
static const char mon_rt_unit_marker[1] __attribute__((used)) = "";
#endif

static const char *const error_text[AMEBA_E_NR] = {
	[0] = "success",
	[1] = "out of memory",
	[2] = "invalid argument",
	[3] = "no such object, file or name",
	[4] = "input/output error",
	[5] = "malformed message or file",
	[6] = "not supported by this backend or machine",
	[7] = "permission denied",
	[8] = "built for another ABI version",
	[9] = "busy: another client is attached",
	[10] = "the target process exited",
	[11] = "timed out",
	[12] = "value out of range",
	[13] = "no hardware performance monitoring unit (PMU) on this machine",
};

const char *ameba_strerror(int err)
{
	int i = -err;

	if (i < 0 || i >= AMEBA_E_NR || !error_text[i])
		return "unknown error";
	return error_text[i];
}

/* Names are the contract of design.md section 6; order follows enum ameba_metric. */
static const struct ameba_metric_info metric_table[AMEBA_M_NR] = {
	[AMEBA_M_MEM_REF] = { "mem_ref", "accesses", "memory accesses (one per cache line touched)" },
	[AMEBA_M_READS] = { "reads", "accesses", "accesses that read memory (an atomic RMW reads and writes)" },
	[AMEBA_M_WRITES] = { "writes", "accesses", "accesses that write memory" },
	[AMEBA_M_L1D_MISS] = { "l1d_miss", "misses", "level-1 data cache misses" },
	[AMEBA_M_L1D_MISS_RD] = { "l1d_miss_rd", "misses", "level-1 data cache misses on reads" },
	[AMEBA_M_L1D_MISS_WR] = { "l1d_miss_wr", "misses", "level-1 data cache misses on writes" },
	[AMEBA_M_L2_MISS] = { "l2_miss", "misses", "level-2 cache misses" },
	[AMEBA_M_L2_MISS_RD] = { "l2_miss_rd", "misses", "level-2 cache misses on reads" },
	[AMEBA_M_L2_MISS_WR] = { "l2_miss_wr", "misses", "level-2 cache misses on writes" },
	[AMEBA_M_LLC_MISS] = { "llc_miss", "misses", "last-level cache misses (memory accesses)" },
	[AMEBA_M_LLC_MISS_RD] = { "llc_miss_rd", "misses", "last-level cache misses on reads" },
	[AMEBA_M_LLC_MISS_WR] = { "llc_miss_wr", "misses", "last-level cache misses on writes" },
	[AMEBA_M_TLB_MISS] = { "tlb_miss", "misses", "data TLB misses that walk the page table" },
	[AMEBA_M_COH_MISS] = { "coh_miss", "misses", "coherence misses (line lost to another core's write)" },
	[AMEBA_M_COH_MISS_TRUE] = { "coh_miss_true", "misses", "coherence misses on words another core wrote" },
	[AMEBA_M_COH_MISS_FALSE] = { "coh_miss_false", "misses", "coherence misses on words no other core wrote (false sharing)" },
	[AMEBA_M_INVAL_SENT] = { "inval_sent", "events", "invalidations sent to other cores' copies" },
	[AMEBA_M_INVAL_RECV] = { "inval_recv", "events", "invalidations received from other cores" },
	[AMEBA_M_INTERVENTION] = { "intervention", "events", "lines supplied dirty by another core (HITM)" },
	[AMEBA_M_MEM_LOCAL] = { "mem_local", "accesses", "memory accesses served by the local NUMA node" },
	[AMEBA_M_MEM_REMOTE] = { "mem_remote", "accesses", "memory accesses served by a remote NUMA node" },
	[AMEBA_M_CONFLICT_MISS] = { "conflict_miss", "misses", "misses a fully associative cache would have hit" },
	[AMEBA_M_CAPACITY_MISS] = { "capacity_miss", "misses", "non-compulsory misses a fully associative cache also misses" },
	[AMEBA_M_COMPULSORY_MISS] = { "compulsory_miss", "misses", "first reference to a line" },
	[AMEBA_M_EST_CYCLES] = { "est_cycles", "cycles", "estimated cycles of the memory accesses (latency model)" },
	[AMEBA_M_EST_STALL_CYCLES] = { "est_stall_cycles", "cycles", "estimated stall cycles beyond an L1 hit (latency model)" },
	[AMEBA_M_SAMPLES] = { "samples", "samples", "samples delivered by a sample stream" },
};

const struct ameba_metric_info *ameba_metric_info(int m)
{
	if (m < 0 || m >= AMEBA_M_NR)
		return NULL;
	return &metric_table[m];
}

int ameba_metric_by_name(const char *name)
{
	if (!name)
		return AMEBA_EINVAL;
	for (int m = 0; m < AMEBA_M_NR; m++)
		if (strcmp(metric_table[m].name, name) == 0)
			return m;
	return AMEBA_ENOENT;
}

#define RT_NEEDS "a program built with `ameba cc` (or libameba-rt preloaded)"
#define PTRACE_NEEDS "ptrace access to the target (same user with ptrace_scope 0, " \
	"CAP_SYS_PTRACE, or root)"

/* every metric of the simulator's counter slots (all but samples) */
#define SIM_METRICS (AMEBA_M_BIT(AMEBA_M_SAMPLES) - 1)
/* what data_src decodes, plus the sample count */
#define PERF_METRICS ((AMEBA_M_BIT(AMEBA_M_TLB_MISS + 1) - 1) | AMEBA_M_BIT(AMEBA_M_COH_MISS) | \
		      AMEBA_M_BIT(AMEBA_M_INTERVENTION) | AMEBA_M_BIT(AMEBA_M_MEM_LOCAL) |     \
		      AMEBA_M_BIT(AMEBA_M_MEM_REMOTE) | AMEBA_M_BIT(AMEBA_M_SAMPLES))

_Static_assert(AMEBA_M_NR <= 64, "a metric mask holds every metric");

/* Order is the listing's (`ameba list backends`, docs/backends.md). */
static const struct ameba_backend_info backend_table[] = {
	{ "count", AMEBA_BACKEND_RUNTIME, 1,
	  AMEBA_M_BIT(AMEBA_M_MEM_REF) | AMEBA_M_BIT(AMEBA_M_READS) | AMEBA_M_BIT(AMEBA_M_WRITES),
	  "exact reads/writes per object and thread", RT_NEEDS },
	{ "sim", AMEBA_BACKEND_RUNTIME, 1, SIM_METRICS,
	  "cache simulator: misses, coherence, NUMA, TLB, estimated stall cycles", RT_NEEDS },
	{ "perf", AMEBA_BACKEND_AGENT, 0, PERF_METRICS,
	  "hardware counting and data-address sampling of any process",
	  "a hardware PMU (perf_event_open of hardware events), and " PTRACE_NEEDS },
	{ "pagefault", AMEBA_BACKEND_AGENT, 1, AMEBA_M_BIT(AMEBA_M_SAMPLES),
	  "software perf events: page faults with data addresses (first-touch placement per "
	  "object and thread) of any process",
	  "software perf events (PERF_COUNT_SW_PAGE_FAULTS), and " PTRACE_NEEDS },
	{ "watch", AMEBA_BACKEND_AGENT, 1,
	  AMEBA_M_BIT(AMEBA_M_MEM_REF) | AMEBA_M_BIT(AMEBA_M_WRITES),
	  "hardware breakpoints: exact per-thread access counts on words of 1-8 bytes of any "
	  "process",
	  "hardware breakpoints (PERF_TYPE_BREAKPOINT), and " PTRACE_NEEDS },
};

const struct ameba_backend_info *ameba_backend_info(int i)
{
	if (i < 0 || i >= (int)(sizeof(backend_table) / sizeof(backend_table[0])))
		return NULL;
	return &backend_table[i];
}

const struct ameba_backend_info *ameba_backend_by_name(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof(backend_table) / sizeof(backend_table[0]); i++)
		if (!strcmp(backend_table[i].name, name))
			return &backend_table[i];
	return NULL;
}
