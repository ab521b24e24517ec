/*
 * seq_int.h - the ordered mode's insides, shared by its two sides: the
 * program's threads, which log (seq.c), and the merger, which simulates
 * what they logged (seq_merge.c). The log, its entries, the sync objects
 * and the mode's state; the design is in seq.c's notes.
 */
#ifndef AMEBA_MON_SEQ_INT_H
#define AMEBA_MON_SEQ_INT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mon.h"

#define SEQ_RING (1u << 16)		/* entries per thread log */
#define SEQ_BATCH 512			/* entries merged before the next pick at most */
#define SEQ_TURNS 4096			/* picks merge_running makes before a round */
#define SEQ_ROOM (SEQ_RING / 4)		/* a full log waits for this many free entries */
#define SEQ_SLEEP_NS 20000		/* a waiting merger or producer naps this long */
#define SEQ_SYNC_SLOTS 16384		/* sync objects tracked (hash; collisions share) */
#define SEQ_DRAIN_MS 10000		/* exit waits for the merger this long at most */
#define SEQ_SYNC_MS 2000		/* a reader waits for the merger this long at most */
#define SEQ_STALL_MS 50			/* a running thread that logs nothing for this much
					 * CPU time holds nobody back until it logs again */
#define SEQ_STALL_WALL_MS 2000		/* nor one that logs nothing this long at all */

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

/* mon_seq.awaiting: nothing, a new thread's log, the woken's wakes */
enum { SEQ_AWAIT_NONE, SEQ_AWAIT_LOG, SEQ_AWAIT_WAKE };

/* SEQ_PLAIN: an access with a counter vector, not a replay (merge_run's
 * direct entry); SEQ_ACCESS: any other */
enum seq_kind { SEQ_ACCESS, SEQ_BLOCK, SEQ_UNBLOCK, SEQ_REL, SEQ_EXIT, SEQ_CREATE, SEQ_PLAIN };

struct seq_ent {
	uintptr_t addr;		/* access: address; markers: sync object key (EXIT:
				 * the joiners' key, 0 for none) */
	uintptr_t pc;		/* access: code address; REL/UNBLOCK/EXIT: sequence number */
	uint64_t *v;		/* access: the thread's counter vector of the object */
	uint32_t obj_idx;
	union {
		struct {
			uint8_t flags;
			uint8_t kind;	/* enum seq_kind */
			uint16_t sz;
		};
		/* the three as one word: MON_FAST_WFS(kind, flags, sz), what
		 * mon_sim_seq_access takes (it ignores the way's byte) */
		uint32_t wfs;
	};
};
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ &&
	       offsetof(struct seq_ent, flags) == offsetof(struct seq_ent, wfs) &&
	       offsetof(struct seq_ent, kind) == offsetof(struct seq_ent, wfs) + 1 &&
	       offsetof(struct seq_ent, sz) == offsetof(struct seq_ent, wfs) + 2,
	       "struct seq_ent: wfs is MON_FAST_WFS(kind, flags, sz)");

/* mon_seq.direct: the sim backend with its assembly entries, which the
 * merger's hits then take too (sim_mf_hits_x86), or its C ones
 * (AMEBA_SIM_ASM=0) */
enum { SEQ_DIRECT_C = 1, SEQ_DIRECT_ASM = 2 };

enum seq_state { ST_NEW, ST_RUN, ST_BLOCKED, ST_IDLE, ST_DONE };

struct seq_log {
	/* the thread's line: written by the thread at every entry, read by
	 * the merger only when the entries it knew of are merged (head_seen) */
	struct seq_ent *ring;
	uint64_t head;			/* next entry the thread writes (release) */
	uint64_t tail_seen;		/* thread: the tail it last read (<= tail) */
	int merger_waits;		/* atomic: the merger sleeps on head (log_commit wakes) */
	int gone;			/* atomic: the thread's last touch (reap, after) */
	/* the merger's line: written by the merger; the thread reads it only
	 * when its log looks full (tail_seen), so that the two cores do not
	 * pass one line back and forth at every entry */
	uint64_t tail __attribute__((aligned(64)));	/* next entry the merger reads (release) */
	uint64_t head_seen;		/* merger: the head it last read (<= head) */
	const struct seq_ent *mring;	/* merger: ring, read from this line (the
					 * thread's would miss after each entry) */
	void *core;			/* merger: t->backend_data once set (the sim
					 * core), kept here: t's record shares lines
					 * with what its thread writes at every access */
	int room_wait;			/* atomic: its thread waits for room in it */
	uint64_t room_woke;		/* merger: its head when the merger last woke it */
	uint32_t room_seq;		/* atomic futex word: bumped when room is made */
	struct mon_thread *t;
	uint32_t id;			/* t->id, for the merger's ties (t's record shares
					 * a line with what its thread writes per access) */
	struct seq_log *next;		/* inbox, then the merger's park chain */
	/* merger only */
	uint64_t clock;			/* simulated cycles */
	int state;
	uintptr_t wait_key;		/* ST_NEW: its thread id + 1 (the creation it waits for) */
	uintptr_t block_key;		/* ST_BLOCKED: its BLOCK's sync object (0: a sleep) */
	uint64_t drain_head;		/* head when the exit drain began */
	uint64_t empty_since_ms;	/* when the merger found it empty, waiting (0: not) */
	uint64_t empty_cpu_ms;		/* its thread's CPU time then */
	uint64_t os_check_ms;		/* when the merger last asked the OS about it */
	uint64_t sync_head;		/* head when the pending mon_seq_sync began */
	int cut_idle;			/* ST_IDLE by a pause's cut (merge_round): runs
					 * again when the pause ends */
	uint64_t resume_ns;		/* when it ran again so, until it logs (0: not) */
	uint64_t clock0;		/* a thread older than the engagement: its cycles
					 * simulated before it (in host order, inline) */
	int wait_create;		/* ST_NEW: its creation was logged; wait for it */
};

struct seq_sync {
	uintptr_t key;			/* 0 = free */
	uint64_t issued;		/* releases announced (threads, atomic) */
	uint64_t done;			/* releases merged (merger) */
	uint64_t clock;			/* the latest merged release's clock (merger) */
};

struct seq_glob {
	int engaged;			/* atomic: threads log, the merger runs */
	int mode;			/* -1 unknown, 0 host order, 1 simulated time */
	const struct mon_backend_ops *inner;	/* the simulating backend */
	int direct;			/* inner is the plain sim backend (SEQ_DIRECT_*):
					 * mon_sim_seq_access */
	struct seq_log *logs;		/* atomic: the inbox of new logs (merger takes it) */
	struct seq_sync *sync;		/* [SEQ_SYNC_SLOTS] */
	uint64_t frontier;		/* merger: the clock of the last merged pick */
	uint64_t max_clock;		/* atomic (merger writes): the largest clock reached */
	uint64_t *born;			/* merger: [id] creation clock + 1 (0: not merged) */
	uint32_t nr_born;
	int drain;			/* atomic: exit asked for a drain */
	int force;			/* merger: draining, and nothing could be merged but
					 * what waits: the waits are let go (try_resume) */
	int paused;			/* atomic: sampled mode between bursts (mon_seq_pause) */
	int cut;			/* merger: paused, and a running log ran dry: the
					 * others' accesses are dropped until the next burst */
	int uncut;			/* merger: some log is cut_idle */
	uint64_t resume_hold_ns;	/* atomic: how long a cut_idle log holds the others
					 * back when a burst begins (mon_seq_resume_hold) */
	uint64_t drained;		/* atomic: drain rounds completed */
	uint64_t nr_done;		/* merger: logs ended since the last reap */
	uint64_t nr_stalls;		/* merger: running threads given up on (SEQ_STALL_MS) */
	uint64_t nr_sleeps;		/* merger: empty logs left out because the OS said
					 * their thread slept */
	uint64_t idle_skip;		/* merger: cycles such threads jumped on resuming */
	uint64_t nr_plain, nr_mf;	/* merger: plain accesses merged directly, and
					 * the L1 hits of them its filter took */
	uint64_t sync_req;		/* atomic: mon_seq_sync requests made */
	uint64_t sync_done;		/* atomic: requests up to this one are served */
	uint64_t nr_sync_late;		/* syncs that gave up waiting (SEQ_SYNC_MS) */
	/* merger: a creation merged before its thread's log was known
	 * (SEQ_AWAIT_LOG: await_id), or a release that wakes every thread
	 * blocked on await_key before their wake is logged (SEQ_AWAIT_WAKE) -
	 * the others merge nothing from await_clock on until the log comes,
	 * or the woken have logged and resumed (await_done) */
	int awaiting;
	uint32_t await_id;
	uintptr_t await_key;
	uint64_t await_clock, await_since_ms;
	uint64_t nr_await, nr_await_wake, nr_await_late;	/* such waits (of each kind), and
							 * those given up (2 s) */
	int debug_dump;
	pthread_t merger;
};
extern struct seq_glob mon_seq MON_HIDDEN;


/* A log and its ring in one mapping: the log first (page-aligned, so its
 * two lines are the cache lines they claim to be), the ring after it. */
#define SEQ_LOG_BYTES 4096
#define SEQ_MAP_BYTES (SEQ_LOG_BYTES + SEQ_RING * sizeof(struct seq_ent))
_Static_assert(sizeof(struct seq_log) <= SEQ_LOG_BYTES, "seq_log outgrew its page");

/* The merger's mon_self: in_rt for ever, never registered. */
extern struct mon_thread mon_seq_merger_self MON_HIDDEN;

static inline void nap(long ns)
{
	struct timespec ts = { 0, ns };

	/* the raw call: our nanosleep interposer would log */
	syscall(SYS_nanosleep, &ts, NULL);
}


/* The low half of l->head: the word the merger sleeps on while it waits for
 * the thread to log (little-endian; the ring is far below 2^32 entries, so
 * the half changes whenever head does). */
static inline uint32_t *head_word(struct seq_log *l)
{
	return (uint32_t *)&l->head;
}

/* CLOCK_MONOTONIC_COARSE in ms: the merger's and a reader's waits */
static inline uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Wakes the merger, asleep until l's thread logs (seq.c). */
void mon_seq_wake_merger(struct seq_log *l) MON_HIDDEN;

/* An access's entry e: its words (the commit that publishes it follows). */
static inline void mon_seq_log_access(struct seq_ent *e, uintptr_t addr, uintptr_t pc, uint64_t *v,
				      uint32_t obj_idx, uint32_t wfs)
{
	const uint32_t kind = v && !(wfs & MON_ACC_WARM) ? SEQ_PLAIN : SEQ_ACCESS;

	e->addr = addr;
	e->pc = pc;
	e->v = v;
	e->obj_idx = obj_idx;
	e->wfs = (wfs & ~MON_FAST_WFS(0xffu, 0, 0)) | MON_FAST_WFS(kind, 0, 0);
}

/*
 * An access within one line of t, a logging thread outside the runtime, as
 * access_cached -> access_piece -> seq_access -> mon_seq_access would log
 * it, without the calls between: when object cache way w holds it and its
 * counter vector exists, and the ring does not look full (by the thread's
 * copy of the tail: the general path's log_slot reads the tail and waits).
 * Returns 1 when logged, 0 having done nothing (the caller takes the
 * general path). in_rt is raised while the entry is written: a signal
 * handler's access meanwhile is dropped (as under access_piece), not
 * logged into the same slot. Inline in the line entry (seq.c) and in the
 * hooks' own ordered way (tsan_abi.c), which reach it without the line
 * entry's indirect call.
 */
static inline __attribute__((always_inline)) int mon_seq_line_log(struct mon_thread *t,
								  uintptr_t addr, uint32_t wfs,
								  uintptr_t pc)
{
	struct seq_log *l = t->seq;
	uint64_t *v, h;
	int w;

	if (mon_unlikely(!l || (w = mon_objcache_way(t, addr)) < 0 ||
			 addr + MON_FAST_SZ(wfs) > t->cache.end[w] || !(v = t->cache.counts[w]) ||
			 (h = l->head) - l->tail_seen >= SEQ_RING))
		return 0;
	mon_rt_enter(t);
	mon_seq_log_access(&l->ring[h & (SEQ_RING - 1)], addr, pc, v, t->cache.obj[w]->idx, wfs);
	__atomic_store_n(&l->head, h + 1, __ATOMIC_RELEASE);
	mon_rt_leave(t);
	if (mon_unlikely(__atomic_load_n(&l->merger_waits, __ATOMIC_RELAXED)))
		mon_seq_wake_merger(l);
	return 1;
}

/* The threads of a round of the barrier at key (mon_seq_barrier_init), 0
 * when not known; *base: the releases announced on its slot before the
 * init (a round ends when the merged ones less these are a multiple) */
unsigned mon_seq_barrier_count(uintptr_t key, uint64_t *base) MON_HIDDEN;

/* The slot of sync object key (shared by colliding keys when its
 * neighbourhood is full), NULL before engagement */
struct seq_sync *mon_seq_sync_slot(uintptr_t key) MON_HIDDEN;
/* The merger thread (seq_merge.c) */
void *mon_seq_merger_main(void *arg) MON_HIDDEN;

#endif
