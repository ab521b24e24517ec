/*
 * ring.h - pure parts of the perf backend: records of the perf mmap ring
 * buffer, data_src decoding, multiplex scaling, and conditional range
 * counters estimated from samples. No system calls: unit-tested on
 * synthetic byte streams (tests/backends/test_perfmon.c).
 */
#ifndef AMEBA_PERFMON_RING_H
#define AMEBA_PERFMON_RING_H

#include <stddef.h>
#include <stdint.h>

#define PM_MAX_REGS 24

struct pm_sample {
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time_ns;
	uint64_t addr;
	uint64_t id, stream_id;
	uint32_t cpu;
	uint64_t period;
	uint64_t regs_abi;
	uint32_t nr_regs;
	uint64_t regs[PM_MAX_REGS];	/* in bit order of the regs mask */
	uint64_t stack0;		/* first 8 bytes of the user stack dump */
	uint64_t weight;
	uint64_t data_src;
	uint64_t phys_addr;
};

struct pm_ring_stats {
	uint64_t nr_samples;
	uint64_t nr_lost;		/* records the kernel dropped (PERF_RECORD_LOST) */
	uint64_t nr_throttle, nr_unthrottle;
	uint64_t nr_other;		/* records of other types, skipped */
	uint64_t nr_bad;		/* malformed records (parsing stopped there) */
};

typedef void (*pm_sample_fn)(void *arg, const struct pm_sample *s);

/*
 * Parses the records in [tail, head) of a ring of data_bytes (a power of
 * two) starting at data; positions are the free-running offsets of
 * perf_event_mmap_page (data_tail, data_head), records may wrap around the
 * end. sample_type / regs_mask are the event's attr fields. Calls fn per
 * sample, counts the rest into *st. Returns the new tail (== head unless a
 * malformed record stopped the parse, which is then counted in nr_bad).
 */
uint64_t pm_ring_parse(const uint8_t *data, uint64_t data_bytes, uint64_t tail, uint64_t head,
		       uint64_t sample_type, uint64_t regs_mask, pm_sample_fn fn, void *arg,
		       struct pm_ring_stats *st);

/* The sample_type bits pm_ring_parse understands. */
uint64_t pm_ring_supported_types(void);

/* ---- data_src ---- */

enum pm_level {
	PM_LVL_NA, PM_LVL_L1, PM_LVL_LFB, PM_LVL_L2, PM_LVL_L3, PM_LVL_RAM, PM_LVL_REMOTE_CACHE,
	PM_LVL_IO, PM_LVL_UNCACHED,
};

struct pm_dsrc {
	int load, store;
	int level;		/* enum pm_level: where the access was served */
	int remote;		/* served by another node (memory or cache) */
	int hitm;		/* a modified line in another core's cache */
	int tlb_miss;		/* the access missed the first-level dTLB */
	int locked;
};

void pm_dsrc_decode(uint64_t data_src, struct pm_dsrc *d);
/* Adds the decoded access to per-metric increments vals[AMEBA_M_NR]:
 * mem_ref, reads/writes, l1d_miss, l2_miss, llc_miss (+_rd/_wr),
 * tlb_miss, coh_miss, intervention, mem_local, mem_remote. */
void pm_dsrc_metrics(const struct pm_dsrc *d, double *vals);

/* ---- counting with multiplexing ---- */

/* value * enabled / running; 0 (and *scaled 0) when the counter never ran. */
double pm_scale(uint64_t value, uint64_t enabled_ns, uint64_t running_ns, int *ran);

/* ---- range counters from samples ---- */

struct pm_estimate {
	double value;		/* nr_in x period */
	double confidence;	/* 0..1 */
	uint64_t nr_samples;
};

/*
 * A conditional counter estimated from nr_in samples (of nr_total) each
 * standing for period events: the value scales by the period; confidence
 * is 1 - the relative half-width of a 95% interval of a Poisson count
 * (1.96 / sqrt(nr_in)), clipped to [0, 1]; 0 samples give 0 with
 * confidence 0 unless nr_total is large enough that a hit would have been
 * likely (then the zero is confident: 1 - 1/sqrt(nr_total)).
 */
void pm_estimate_range(uint64_t nr_in, uint64_t nr_total, uint64_t period,
		       struct pm_estimate *out);

#endif
