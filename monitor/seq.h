/*
 * seq.h - the sim backend's ordered mode: threads interleaved in simulated
 * time by one merger thread (seq.c; docs/simulator.md, "Threads in
 * simulated time"). Everything here is a no-op until mon_seq_engage().
 */
#ifndef AMEBA_MON_SEQ_H
#define AMEBA_MON_SEQ_H

#include <stdint.h>

#include "mon.h"

/* AMEBA_SIM_ORDER: 1 (time, the default) or 0 (host: threads simulate in
 * parallel, in the order the host runs them). */
int mon_seq_wanted(void) MON_HIDDEN;
/* Non-zero once the merger runs and threads log. */
int mon_seq_engaged(void) MON_HIDDEN;
/* Starts the merger, which drives `inner` (the sim backend) for every
 * thread. Once; 0 or an AMEBA_E* code (then nothing changed). The caller
 * then makes mon_backend_sim_seq the active backend. */
int mon_seq_engage(const struct mon_backend_ops *inner) MON_HIDDEN;

/* On the thread itself: its log (thread_start), one access (v: its counter
 * vector of obj, NULL to look it up), its end (thread_exit). */
void mon_seq_thread_start(struct mon_thread *t) MON_HIDDEN;
void mon_seq_access(struct mon_thread *t, struct mon_obj *obj, uintptr_t addr, uint32_t sz,
		    unsigned flags, uintptr_t pc, uint64_t *v) MON_HIDDEN;
void mon_seq_thread_exit(struct mon_thread *t) MON_HIDDEN;
/* The ordered mode's line entry (struct mon_backend_ops.line_fast): one
 * access within one line, logged when the object cache holds its object. */
void mon_seq_line_fast(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc) MON_HIDDEN;

/* Synchronisation seen by the interposers (intercept_sync.c), keyed by the
 * object's address: a release that may wake a thread blocked on key (before
 * the real release), and a block around the real blocking call (key 0: a
 * sleep, which nothing releases). Called on the application's threads. */
uint64_t mon_seq_release(uintptr_t key) MON_HIDDEN;
void mon_seq_block(uintptr_t key) MON_HIDDEN;
void mon_seq_unblock(uintptr_t key) MON_HIDDEN;
/* mon_seq_release returns the release's number on key (0: none logged,
 * not engaged). mon_seq_unblock resumes the thread once every release
 * announced on key when it woke is merged; mon_seq_unblock_at once the
 * first n are (n 0: as mon_seq_unblock) - a barrier's waiter, its own
 * round's (mon_seq_barrier_round_end: the number of the round's last
 * arrival for an arrival numbered n, 0 when the barrier's size is not
 * known): a thread that left the round first may have arrived at the
 * next one before the waiter woke, and the waiter must not wait for it */
void mon_seq_unblock_at(uintptr_t key, uint64_t n) MON_HIDDEN;
uint64_t mon_seq_barrier_round_end(uintptr_t key, uint64_t n) MON_HIDDEN;
/* pthread_barrier_init of the barrier at key for count threads (any
 * thread, engaged or not): the merger then knows which release ends a
 * round, and so wakes every thread waiting at it (seq_merge.c
 * await_waiters) */
void mon_seq_barrier_init(uintptr_t key, unsigned count) MON_HIDDEN;
/* In the parent, before pthread_create: the new thread (ameba id) starts at
 * the parent's simulated time. 1 when the creation was logged: then the new
 * thread sets its seq_created before its log is made, and its log waits for
 * the entry; 0 when not (not engaged, no log). */
int mon_seq_thread_created(uint32_t id) MON_HIDDEN;

/* Waits (at most 2 s) until the merger has merged everything every thread
 * logged before the call: readers and experiment boundaries (the MRI
 * server's arm, read, samples and marks) then see the counts as of now.
 * Not on the merger; a no-op when not engaged. */
void mon_seq_sync(void) MON_HIDDEN;

/* Sampled mode (sampled.c): on between bursts, when the threads log no
 * accesses, an empty log holds nobody back (so mon_seq_sync returns once
 * what the burst logged is merged); off when a warm-up starts. */
void mon_seq_pause(int on) MON_HIDDEN;
/* When a pause ends, each thread the pause's cut left out (its log ran
 * dry) runs again at the frontier and holds the others back until it logs,
 * for ns at most (a thread the host has not scheduled yet: the others go on
 * alone after that). 0 (the default): it holds nobody back until it logs. */
void mon_seq_resume_hold(uint64_t ns) MON_HIDDEN;
/* Has the merger merged everything t logged so far (1 when not engaged or
 * t has no log)? Then it holds none of t's counter vectors until t logs
 * again. On t's own thread. */
int mon_seq_log_merged(struct mon_thread *t) MON_HIDDEN;

/* The largest simulated clock any thread reached (cycles): the simulated
 * run time of what was merged. 0 when never engaged. */
uint64_t mon_seq_max_clock(void) MON_HIDDEN;

/* In a forked child: back to simulating on the thread itself. */
void mon_seq_after_fork(void) MON_HIDDEN;

/* The ordered-mode face of the sim backend (backend_sim.c): accesses go to
 * the thread's log; the merger calls the sim backend proper. */
extern const struct mon_backend_ops mon_backend_sim_seq MON_HIDDEN;
/* The merger's entry to the sim backend (backend_sim.c): t's logged access
 * to the object of index cookie, within one line, counted into v (t's
 * counter vector of it) with nothing armed (so no code address: only the
 * armed consumers want it); wfs = MON_FAST_WFS(w, flags, sz), w ignored;
 * core is t->backend_data as the merger last read it (NULL: none yet, or
 * not read). Returns its estimated cycles, at least 1 (what the merger's
 * clock advances by). Writes the line's entry in the merger's filter
 * (backend_sim.h mon_sim_seq_hit, tried first). */
uint64_t mon_sim_seq_access(struct mon_thread *t, void *core, uint32_t cookie, uintptr_t addr,
			    uint32_t wfs, uint64_t *v) MON_HIDDEN;

#endif
