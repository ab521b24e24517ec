/*
 * pfm.h - event encoding through libpfm4, kept apart because libpfm's
 * perfmon/perf_event.h and linux/perf_event.h cannot share a file.
 */
#ifndef AMEBA_PERFMON_PFM_H
#define AMEBA_PERFMON_PFM_H

#include <stddef.h>
#include <stdint.h>

/* The perf_event_attr fields an encoding sets. */
struct pm_encoding {
	uint32_t type;
	uint64_t config, config1, config2;
	uint64_t sample_period;		/* from the period= modifier, else 0 */
	uint32_t precise_ip;		/* from precise= (or :p suffixes) */
	int exclude_kernel;
	char fstr[256];			/* the fully qualified event string */
};

/*
 * Initialises libpfm4 (once) and lists the present core PMU models into
 * pmus ("" when none). 0 when "cycles" encodes, else -1.
 */
int pm_pfm_probe(char *pmus, size_t len);

/*
 * Encodes event (libpfm4 syntax, e.g. "MEM_LOAD_RETIRED:L1_MISS:precise=2"
 * or "perf::PERF_COUNT_HW_CACHE_L1D:READ:MISS") for user-level counting.
 * 0, or -1 with msg naming the event and libpfm's reason.
 */
int pm_pfm_encode(const char *event, struct pm_encoding *out, char *msg, size_t len);

/*
 * The libpfm4 event measuring metric (AMEBA_M_*) on the core PMU model
 * named pmu (pfm_pmu_info_t.name: "skx", "spr", "amd64_fam19h_zen3",
 * "amd64_fam19h_zen4", ...; NULL: the generic perf:: events), or NULL when
 * the model has none.
 */
const char *pm_pfm_event_for(int metric, const char *pmu);

#endif
