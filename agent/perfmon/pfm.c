/*
 * pfm.c - event encoding through libpfm4 for the perf backend.
 *
 * Notes:
 *  - pfm_get_os_event_encoding(PFM_OS_PERF_EVENT_EXT) fills a
 *    perf_event_attr, modifiers included: precise= (precise_ip), ldlat=
 *    (config1 of Intel load-latency events), period= (sample_period), u/k
 *    (exclude_kernel). The caller gets the fields as struct pm_encoding, so
 *    that files using linux/perf_event.h never see libpfm's copy of it.
 *  - Privilege level: user only (PFM_PLM3): the agent measures the
 *    target's own accesses, and paranoid >= 2 refuses kernel counting.
 *  - LIBPFM_FORCE_PMU=<model> makes libpfm4 encode for a model this
 *    machine does not have: the unit tests use it to check the encodings
 *    of the Intel and AMD models the properties rely on.
 *  - The metric table maps ameba metrics to events per model family;
 *    models without an entry fall back to the generic perf:: cache events.
 */
#include <perfmon/pfmlib_perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ameba/ameba.h"
#include "pfm.h"

static int pfm_state;	/* 0 not tried, 1 ok, -1 failed */

static int pfm_init(void)
{
	if (!pfm_state)
		pfm_state = pfm_initialize() == PFM_SUCCESS ? 1 : -1;
	return pfm_state > 0 ? 0 : -1;
}

int pm_pfm_probe(char *pmus, size_t len)
{
	struct pm_encoding e;
	size_t n = 0;
	pfm_pmu_t p;
	char msg[256];

	pmus[0] = 0;
	if (pfm_init())
		return -1;
	pfm_for_all_pmus(p) {
		pfm_pmu_info_t info;

		memset(&info, 0, sizeof(info));
		info.size = sizeof(info);
		if (pfm_get_pmu_info(p, &info) != PFM_SUCCESS || !info.is_present)
			continue;
		if (info.type != PFM_PMU_TYPE_CORE || p == PFM_PMU_PERF_EVENT ||
		    p == PFM_PMU_PERF_EVENT_RAW)
			continue;
		if (n < len)
			n += (size_t)snprintf(pmus + n, len - n, "%s%s", n ? "," : "", info.name);
	}
	return pm_pfm_encode("cycles", &e, msg, sizeof(msg));
}

int pm_pfm_encode(const char *event, struct pm_encoding *out, char *msg, size_t len)
{
	struct perf_event_attr attr;
	pfm_perf_encode_arg_t arg;
	char *fstr = NULL;
	int ret;

	memset(out, 0, sizeof(*out));
	if (pfm_init()) {
		snprintf(msg, len, "libpfm4 did not initialise (pfm_initialize failed)");
		return -1;
	}
	memset(&attr, 0, sizeof(attr));
	memset(&arg, 0, sizeof(arg));
	arg.attr = &attr;
	arg.fstr = &fstr;
	arg.size = sizeof(arg);
	ret = pfm_get_os_event_encoding(event, PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
	if (ret != PFM_SUCCESS) {
		snprintf(msg, len, "libpfm4 cannot encode event '%s': %s", event,
			 pfm_strerror(ret));
		return -1;
	}
	out->type = attr.type;
	out->config = attr.config;
	out->config1 = attr.config1;
	out->config2 = attr.config2;
	out->sample_period = attr.sample_period;
	out->precise_ip = attr.precise_ip;
	out->exclude_kernel = attr.exclude_kernel;
	if (fstr)
		snprintf(out->fstr, sizeof(out->fstr), "%s", fstr);
	free(fstr);
	return 0;
}

struct pm_event_row {
	int metric;
	const char *family;	/* prefix of the pfm model name; NULL = generic */
	const char *event;
};

static const struct pm_event_row pm_events[] = {
	/* Intel Skylake-SP and later (PEBS) */
	{ AMEBA_M_MEM_REF, "skx", "MEM_INST_RETIRED:ALL_LOADS" },
	{ AMEBA_M_READS, "skx", "MEM_INST_RETIRED:ALL_LOADS" },
	{ AMEBA_M_WRITES, "skx", "MEM_INST_RETIRED:ALL_STORES" },
	{ AMEBA_M_L1D_MISS, "skx", "MEM_LOAD_RETIRED:L1_MISS" },
	{ AMEBA_M_L2_MISS, "skx", "MEM_LOAD_RETIRED:L2_MISS" },
	{ AMEBA_M_LLC_MISS, "skx", "MEM_LOAD_RETIRED:L3_MISS" },
	{ AMEBA_M_TLB_MISS, "skx", "DTLB_LOAD_MISSES:MISS_CAUSES_A_WALK" },
	{ AMEBA_M_SAMPLES, "skx", "MEM_TRANS_RETIRED:LOAD_LATENCY:ldlat=3" },
	{ AMEBA_M_MEM_REF, "spr", "MEM_INST_RETIRED:ALL_LOADS" },
	{ AMEBA_M_READS, "spr", "MEM_INST_RETIRED:ALL_LOADS" },
	{ AMEBA_M_WRITES, "spr", "MEM_INST_RETIRED:ALL_STORES" },
	{ AMEBA_M_L1D_MISS, "spr", "MEM_LOAD_RETIRED:L1_MISS" },
	{ AMEBA_M_L2_MISS, "spr", "MEM_LOAD_RETIRED:L2_MISS" },
	{ AMEBA_M_LLC_MISS, "spr", "MEM_LOAD_RETIRED:L3_MISS" },
	{ AMEBA_M_TLB_MISS, "spr", "DTLB_LOAD_MISSES:WALK_COMPLETED" },
	{ AMEBA_M_SAMPLES, "spr", "MEM_TRANS_RETIRED:LOAD_LATENCY:ldlat=3" },
	/* AMD Zen 3 / Zen 4 (sampling goes through IBS op, not an event) */
	{ AMEBA_M_MEM_REF, "amd64_fam19h", "LS_DISPATCH:LD_DISPATCH" },
	{ AMEBA_M_READS, "amd64_fam19h", "LS_DISPATCH:LD_DISPATCH" },
	{ AMEBA_M_WRITES, "amd64_fam19h", "LS_DISPATCH:STORE_DISPATCH" },
	{ AMEBA_M_L1D_MISS, "amd64_fam19h", "MAB_ALLOCATION_BY_TYPE:LS" },
	{ AMEBA_M_TLB_MISS, "amd64_fam19h",
	  "L1_DTLB_MISS:TLB_RELOAD_4K_L2_MISS:TLB_RELOAD_2M_L2_MISS:TLB_RELOAD_1G_L2_MISS" },
	{ AMEBA_M_MEM_LOCAL, "amd64_fam19h_zen3", "ANY_DATA_CACHE_FILLS_FROM_SYSTEM:MEM_IO_LCL" },
	{ AMEBA_M_MEM_REMOTE, "amd64_fam19h_zen3",
	  "ANY_DATA_CACHE_FILLS_FROM_SYSTEM:MEM_IO_RMT:EXT_CACHE_RMT" },
	{ AMEBA_M_MEM_LOCAL, "amd64_fam19h_zen4", "ANY_DATA_CACHE_FILLS_FROM_SYSTEM:DRAM_IO_NEAR" },
	{ AMEBA_M_MEM_REMOTE, "amd64_fam19h_zen4",
	  "ANY_DATA_CACHE_FILLS_FROM_SYSTEM:DRAM_IO_FAR:FAR_CACHE_NEAR_FAR" },
	/* generic, any model with a PMU */
	{ AMEBA_M_L1D_MISS, NULL, "perf::PERF_COUNT_HW_CACHE_L1D:READ:MISS" },
	{ AMEBA_M_LLC_MISS, NULL, "perf::PERF_COUNT_HW_CACHE_LL:READ:MISS" },
	{ AMEBA_M_TLB_MISS, NULL, "perf::PERF_COUNT_HW_CACHE_DTLB:READ:MISS" },
	{ AMEBA_M_EST_CYCLES, NULL, "perf::PERF_COUNT_HW_CPU_CYCLES" },
};

const char *pm_pfm_event_for(int metric, const char *pmu)
{
	for (size_t pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < sizeof(pm_events) / sizeof(pm_events[0]); i++) {
			const struct pm_event_row *r = &pm_events[i];

			if (r->metric != metric)
				continue;
			if (!pass && pmu && r->family &&
			    !strncmp(pmu, r->family, strlen(r->family)))
				return r->event;
			if (pass && !r->family)
				return r->event;
		}
	}
	return NULL;
}
