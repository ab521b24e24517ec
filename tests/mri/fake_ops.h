/*
 * fake_ops.h - a scripted monitor behind struct mri_monitor_ops, for the
 * dispatcher's unit test and fuzzer (no runtime, no threads, no clock).
 *
 * The fake process has threads 0..2 (2 exited), eleven objects (below) and
 * two site bins; the count backend's metrics; counter values that grow by
 * (counter index + 1) * 10 per thread per fake_tick(); a clock that moves
 * only when the test says so.
 *
 *   id  kind    name              range
 *    0  other   [other]           [0, 0)
 *    1  global  garr              [0x1000, 0x2000)
 *    2  global  empty             [0x3000, 0x3000)   size 0
 *    3  heap    make@a.c:1        [0x10000, 0x10100) bin 0
 *    4  heap    make@a.c:1        [0x10100, 0x10200) bin 0, freed
 *    5  heap    grow@b.c:2        [0x20000, 0x28000) bin 1
 *    6  stack   [stack T0]        [0x7000000, 0x7100000)
 *    7  tls     [tls T0]          [0x7100000, 0x7101000)
 *    8  global  quote"back\slash  [0x4000, 0x4010)   a name that needs escaping
 *    9  mmap    grow@b.c:2        [0x30000, 0x40000) bin 1
 *   10  global  garr2             [0x1800, 0x2800)   overlaps garr
 */
#ifndef AMEBA_TEST_MRI_FAKE_OPS_H
#define AMEBA_TEST_MRI_FAKE_OPS_H

#include <stdint.h>

#include "dispatch.h"

#define FAKE_NR_OBJECTS 11
#define FAKE_MAX_THREADS 64
#define FAKE_MAX_COND 8192

struct fake_mon {
	uint64_t now_ns;
	uint32_t nr_threads;
	int exited[FAKE_MAX_THREADS];
	int attached;			/* a backend runs */
	int active;
	int fail_attach;		/* next attach returns this */
	uint64_t gen;			/* last armed generation, 0 = none armed */
	uint32_t nr_cond;
	int cond_metric[FAKE_MAX_COND];
	uint32_t cond_nr_ranges[FAKE_MAX_COND];
	uint64_t first_start[FAKE_MAX_COND];	/* start of the first range, for checks */
	uint32_t cond_nr_bins[FAKE_MAX_COND];
	uint32_t cond_first_bin[FAKE_MAX_COND];	/* id of the first bin, for checks */
	uint32_t cond_nr_except[FAKE_MAX_COND];
	uint32_t cond_first_except[FAKE_MAX_COND];
	uint64_t ticks;			/* counter growth since arming */
	int sample_metric;
	uint64_t sample_period;		/* 0 = no stream */
	uint32_t nr_detach, nr_attach, nr_arms;
	uint32_t nr_objects;		/* 0: the table above; else that many objects */
	uint32_t name_len;		/* > 0: objects beyond the table get names this long */
	int deep_bins;			/* 1: a third site deepened make@a.c:1 into two bins */
	int oracle;			/* marks: 1 written, 0 no oracle, < 0 that error */
	uint32_t nr_marks;
	char last_mark[80];		/* the label of the last mark written */
};

extern const struct mri_monitor_ops fake_ops;

void fake_init(struct fake_mon *f);
/* Every armed counter grows by (index + 1) * 10 per running thread. */
void fake_tick(struct fake_mon *f);

#endif
