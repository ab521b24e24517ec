/*
 * backend_sim.h - what the sim backend's C (backend_sim.c) and its x86-64
 * assembly line entry (backend_sim_x86.c) share: the counter slots the
 * assembly adds to, and the entries it falls back on.
 */
#ifndef AMEBA_MON_BACKEND_SIM_H
#define AMEBA_MON_BACKEND_SIM_H

#include <stdint.h>

#include "mon.h"

struct mon_sim_core;

/* The counter slots of a plain L1 hit's metrics (backend_sim.c: slot_of) */
enum { SLOT_MEM_REF = 0, SLOT_READS = 1, SLOT_WRITES = 2, SLOT_EST_CYCLES = 24 };

/* The C line entry, and its miss half (the core held, in_rt raised) */
void mon_sim_line_fast_c(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc)
	MON_HIDDEN;
void mon_sim_line_miss_c(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc)
	MON_HIDDEN;

/* Whether t's core may batch (batch.c): solo, on the lean path, no what-if,
 * not ordered mode */
int mon_sim_batch_ok(const struct mon_thread *t) MON_HIDDEN;

/* The line entry the backend uses: the assembly one where there is one */
#if defined(__x86_64__) && defined(__GNUC__)
void sim_line_fast_x86(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc)
	MON_HIDDEN;
#define SIM_LINE_FAST sim_line_fast_x86
/* The batch's L1 hits (batch.c): the first record of [p, e) not taken */
const uint64_t *sim_batch_hits_x86(struct mon_thread *t, struct mon_sim_core *c, const uint64_t *p,
				   const uint64_t *e) MON_HIDDEN;
#define SIM_BATCH_HITS sim_batch_hits_x86
#else
#define SIM_LINE_FAST mon_sim_line_fast_c
#endif

#endif
