/*
 * seq.c - threads interleaved in simulated time: the sim backend's ordered
 * mode (docs/simulator.md, "Threads in simulated time").
 *
 * Notes:
 * - Why. Run in parallel, each thread simulating its own accesses, the
 *   simulator sees the interleaving the host happened to give: on a 2-vCPU
 *   VM the instrumented threads of a false-sharing loop rarely ran side by
 *   side, and the coherence misses (and with them the severity) varied
 *   100-fold from run to run and with the host's load. Here the order is
 *   the simulated one, so it does not depend on the host.
 * - How. Once a second thread exists, each thread appends its accesses to
 *   a log of its own (a ring, one producer) instead of simulating them:
 *   the object it falls in, its counter vector, address, size, flags and
 *   code address, all found by the thread itself at that moment (the object
 *   map may change later). One merger thread consumes the logs and drives
 *   the simulator for every thread, always taking the running thread with
 *   the smallest simulated clock (ties: the lower thread id) and running it
 *   while its clock stays at or below the next one's. A thread's clock
 *   advances by each access's estimated cycles (the latency model), so a
 *   thread that misses falls behind and a false-sharing loop alternates
 *   access by access, whatever the host did. Simulation is serial: one host
 *   CPU simulates; the program's threads run natively ahead of it by at most
 *   a ring (SEQ_RING accesses), then wait for room.
 * - Who may hold the others back. Only running threads. A thread blocked in
 *   a mutex, condition variable, barrier, join, semaphore or sleep (the
 *   interposers in intercept_sync.c log BLOCK before the call and UNBLOCK
 *   after) is left out of the minimum until it resumes, and then resumes
 *   at the simulated time of what released it: releases (unlock, signal,
 *   barrier arrival, post, thread exit, thread creation) log REL with a
 *   per-object sequence number taken before the real release, the woken
 *   thread logs UNBLOCK with the number it sees after waking, and the
 *   merger resumes it only once it has merged that many releases of the
 *   object, at the latest one's clock. A thread whose log is empty while
 *   the OS says it sleeps (/proc state S, T or t: a futex in an
 *   uninstrumented library, a pipe read; not D, kernel work that ends by
 *   itself) is left out too until it logs again, and then resumes at
 *   the merge frontier; that case alone depends on host timing.
 *   Sampled mode's bursts (mon_seq_pause): at a pause a running thread
 *   whose log ran dry is left out (the cut); when the pause ends it runs
 *   again at the frontier and holds the others back until it logs, for
 *   mon_seq_resume_hold's time at most (a thread the host has not
 *   scheduled yet; after that the others go on without it).
 * - Counters. The merger is the only writer of the counter vectors, the
 *   conditional counters and the sample streams of a thread once the thread
 *   logs (the thread itself writes none), which keeps the one-writer rule
 *   of counts.c, cond.c and sample.c. It never inserts into a thread's
 *   counter table (mon_counts_find for the inval_recv credit): the thread
 *   made the vector when it logged the access.
 * - Exit. An atexit handler (registered after the oracle's and the MRI
 *   server's, so it runs before them) has the merger merge every log up to
 *   what was written when exit began, so the final counts include it.
 * - Off with AMEBA_SIM_ORDER=host: threads simulate in parallel as before.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mon.h"
#include "seq.h"
#include "backend_sim.h"	/* mon_sim_seq_hit: the merger's filter */

#define SEQ_RING (1u << 14)		/* entries per thread log */
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
	uint32_t room_seq;		/* atomic futex word: bumped when room is made */
	struct mon_thread *t;
	uint32_t id;			/* t->id, for the merger's ties (t's record shares
					 * a line with what its thread writes per access) */
	struct seq_log *next;		/* inbox, then the merger's park chain */
	/* merger only */
	uint64_t clock;			/* simulated cycles */
	int state;
	uintptr_t wait_key;		/* ST_NEW: its thread id + 1 (the creation it waits for) */
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

static struct {
	int engaged;			/* atomic: threads log, the merger runs */
	int mode;			/* -1 unknown, 0 host order, 1 simulated time */
	const struct mon_backend_ops *inner;	/* the simulating backend */
	int direct;			/* inner is the plain sim backend: mon_sim_seq_access */
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
	/* merger: a creation merged before its thread's log was known - the
	 * others merge nothing from the new thread's start clock on until
	 * the log comes (await_done) */
	int awaiting;
	uint32_t await_id;
	uint64_t await_clock, await_since_ms;
	uint64_t nr_await, nr_await_late;	/* such waits, and those given up (2 s) */
	int debug_dump;
	pthread_t merger;
} seq = { .mode = -1 };

/* The merger's mon_self: in_rt for ever, never registered. */
static struct mon_thread merger_self = { .id = UINT32_MAX - 1, .in_rt = 1 };

static void nap(long ns)
{
	struct timespec ts = { 0, ns };

	/* the raw call: our nanosleep interposer would log */
	syscall(SYS_nanosleep, &ts, NULL);
}

int mon_seq_wanted(void)
{
	int m = __atomic_load_n(&seq.mode, __ATOMIC_RELAXED);

	if (m < 0) {
		const char *e = getenv("AMEBA_SIM_ORDER");

		m = !(e && !strcmp(e, "host"));
		if (e && *e && strcmp(e, "host") && strcmp(e, "time"))
			mon_log("AMEBA_SIM_ORDER=%s: want time or host; using time", e);
		__atomic_store_n(&seq.mode, m, __ATOMIC_RELAXED);
	}
	return m;
}

int mon_seq_engaged(void)
{
	return __atomic_load_n(&seq.engaged, __ATOMIC_ACQUIRE);
}

/* ---- sync objects ---- */

static struct seq_sync *sync_slot(uintptr_t key)
{
	const uint32_t home = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 52) & (SEQ_SYNC_SLOTS - 1);
	uint32_t h = home;

	if (!seq.sync)
		return NULL;
	for (uint32_t i = 0; i < 16; i++, h = (h + 1) & (SEQ_SYNC_SLOTS - 1)) {
		struct seq_sync *s = &seq.sync[h];
		uintptr_t k = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE), zero = 0;

		if (k == key)
			return s;
		if (k == 0 && (__atomic_compare_exchange_n(&s->key, &zero, key, 0, __ATOMIC_ACQ_REL,
							   __ATOMIC_ACQUIRE) || zero == key))
			return s;
	}
	/* full neighbourhood: share the home slot (waits become conservative) */
	return &seq.sync[home];
}

/* ---- the thread's side ---- */

/* A log and its ring in one mapping: the log first (page-aligned, so its
 * two lines are the cache lines they claim to be), the ring after it. */
#define SEQ_LOG_BYTES 4096
#define SEQ_MAP_BYTES (SEQ_LOG_BYTES + SEQ_RING * sizeof(struct seq_ent))
_Static_assert(sizeof(struct seq_log) <= SEQ_LOG_BYTES, "seq_log outgrew its page");

static struct seq_log *log_new(struct mon_thread *t)
{
	char *m = mmap(NULL, SEQ_MAP_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	struct seq_log *l = (struct seq_log *)m;

	if (m == MAP_FAILED)
		return NULL;
	l->ring = (struct seq_ent *)(m + SEQ_LOG_BYTES);
	l->mring = l->ring;
	l->id = t->id;
	l->t = t;
	return l;
}

static void log_publish(struct seq_log *l)
{
	struct seq_log *head = __atomic_load_n(&seq.logs, __ATOMIC_ACQUIRE);

	do
		l->next = head;
	while (!__atomic_compare_exchange_n(&seq.logs, &head, l, 1, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE));
}

/*
 * Waits for room in l's full ring: until the merger has freed SEQ_ROOM
 * entries, asleep on room_seq, which the merger bumps and wakes once there
 * is that much room (not on the tail itself: it moves every batch, and each
 * move woke the thread for nothing): resuming at the first free entry made
 * the thread and the merger take turns entry by entry, each spinning and
 * napping for the other.
 */
static __attribute__((noinline)) void log_wait_room(struct seq_log *l, uint64_t h)
{
	int spins = 0;

	/* asleep here with its log merged, the thread is about to log again:
	 * the merger must wait for it, not leave it out */
	__atomic_store_n(&l->room_wait, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		struct timespec ts = { 0, 1000000 };	/* a lost wake costs 1 ms */
		uint32_t seq_now = __atomic_load_n(&l->room_seq, __ATOMIC_SEQ_CST);
		uint64_t t = __atomic_load_n(&l->tail, __ATOMIC_SEQ_CST);

		l->tail_seen = t;
		if (h - t <= SEQ_RING - SEQ_ROOM)
			break;
		if (++spins < 64) {
			cpu_relax();
			continue;
		}
		syscall(SYS_futex, &l->room_seq, FUTEX_WAIT_PRIVATE, seq_now, &ts, NULL, 0);
	}
	__atomic_store_n(&l->room_wait, 0, __ATOMIC_RELEASE);
}

/* Room for one entry in l (the thread's copy of the tail first: the
 * merger's line is read only when the ring looks full). */
static inline struct seq_ent *log_slot(struct seq_log *l)
{
	uint64_t h = l->head;

	if (mon_unlikely(h - l->tail_seen >= SEQ_RING) &&
	    h - (l->tail_seen = __atomic_load_n(&l->tail, __ATOMIC_ACQUIRE)) >= SEQ_RING)
		log_wait_room(l, h);
	return &l->ring[h & (SEQ_RING - 1)];
}

/* The low half of l->head: the word the merger sleeps on while it waits for
 * the thread to log (little-endian; the ring is far below 2^32 entries, so
 * the half changes whenever head does). */
static inline uint32_t *head_word(struct seq_log *l)
{
	return (uint32_t *)&l->head;
}

/* Wakes the merger, asleep until l's thread logs (wait_for_log). */
static __attribute__((noinline)) void log_wake_merger(struct seq_log *l)
{
	if (__atomic_exchange_n(&l->merger_waits, 0, __ATOMIC_ACQ_REL))
		syscall(SYS_futex, head_word(l), FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static inline void log_commit(struct seq_log *l)
{
	__atomic_store_n(&l->head, l->head + 1, __ATOMIC_RELEASE);
	if (mon_unlikely(__atomic_load_n(&l->merger_waits, __ATOMIC_RELAXED)))
		log_wake_merger(l);
}

/* An access's entry e: its words (the commit that publishes it follows). */
static inline void log_access(struct seq_ent *e, uintptr_t addr, uintptr_t pc, uint64_t *v,
			      uint32_t obj_idx, uint32_t wfs)
{
	const uint32_t kind = v && !(wfs & MON_ACC_WARM) ? SEQ_PLAIN : SEQ_ACCESS;

	e->addr = addr;
	e->pc = pc;
	e->v = v;
	e->obj_idx = obj_idx;
	e->wfs = (wfs & ~MON_FAST_WFS(0xffu, 0, 0)) | MON_FAST_WFS(kind, 0, 0);
}

static void log_marker(struct seq_log *l, int kind, uintptr_t key, uint64_t n)
{
	struct seq_ent *e = log_slot(l);

	e->kind = (uint8_t)kind;
	e->addr = key;
	e->pc = n;
	e->v = NULL;
	log_commit(l);
}

/* Thread creation key of ameba thread id `id` (never an address). */

void mon_seq_thread_start(struct mon_thread *t)
{
	struct seq_log *l;

	if (t->seq)
		return;
	l = log_new(t);
	if (!l) {
		mon_log("ordered simulation: no memory for thread %u's log; its accesses are "
			"not simulated", t->id);
		return;
	}
	/* a thread whose creation its parent logged (mon_seq_thread_created)
	 * waits for that entry and starts at the parent's clock; the others (the
	 * program's main thread, as a rule, or a thread created where no
	 * interposer saw it) carry on from the cycles they ran alone, so that
	 * the run time counts a serial prefix (an initialisation before the
	 * workers), or from the frontier if later */
	l->wait_create = __atomic_load_n(&t->seq_created, __ATOMIC_ACQUIRE);
	if (!l->wait_create)
		l->clock0 = mon_counts_cycles(t);
	l->state = ST_NEW;
	l->wait_key = (uintptr_t)t->id + 1;
	t->seq = l;
	log_publish(l);
}

int mon_seq_thread_created(uint32_t id)
{
	struct mon_thread *t = mon_self;

	if (!mon_seq_engaged() || !t)
		return 0;
	/* the creator logs the creation even before its first access since
	 * the engagement: the new thread starts at the creator's clock */
	if (!t->seq)
		mon_seq_thread_start(t);
	if (!t->seq)
		return 0;
	log_marker(t->seq, SEQ_CREATE, (uintptr_t)id, 0);
	return 1;
}

void mon_seq_access(struct mon_thread *t, struct mon_obj *obj, uintptr_t addr, uint32_t sz,
		    unsigned flags, uintptr_t pc, uint64_t *v)
{
	struct seq_log *l = t->seq;

	if (mon_unlikely(!l))
		return;
	if (!v)
		v = mon_counts_get(t, obj->idx);	/* the owner makes it; the merger only adds */
	log_access(log_slot(l), addr, pc, v, obj->idx, MON_FAST_WFS(0, flags, sz));
	log_commit(l);
}

/*
 * The ordered mode's line entry (mon_backend_sim_seq.line_fast): the hook's
 * access goes straight to the log when object cache way w holds it and its
 * counter vector exists, as access_cached -> access_piece -> seq_access ->
 * mon_seq_access would log it, without the calls between (dense_2t: ~100
 * instructions per access on the program's threads before). Anything else
 * takes mon_access_cached. in_rt is raised while the entry is written: a
 * signal handler's access meanwhile is dropped (as under access_piece),
 * not logged into the same slot.
 */
void mon_seq_line_fast(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc)
{
	struct seq_log *l = t->seq;
	uint64_t *v, h;
	int w;

	/* a ring that looks full (by the thread's copy of the tail) takes the
	 * general path too, whose log_slot reads the tail and waits: no call
	 * on this path, so no register saved */
	if (mon_unlikely(!l || (w = mon_objcache_way(t, addr)) < 0 ||
			 addr + MON_FAST_SZ(wfs) > t->cache.end[w] || !(v = t->cache.counts[w]) ||
			 (h = l->head) - l->tail_seen >= SEQ_RING)) {
		mon_access_cached(t, addr, wfs, pc);
		return;
	}
	mon_rt_enter(t);
	log_access(&l->ring[h & (SEQ_RING - 1)], addr, pc, v, t->cache.obj[w]->idx, wfs);
	__atomic_store_n(&l->head, h + 1, __ATOMIC_RELEASE);
	mon_rt_leave(t);
	if (mon_unlikely(__atomic_load_n(&l->merger_waits, __ATOMIC_RELAXED)))
		log_wake_merger(l);
}

void mon_seq_thread_exit(struct mon_thread *t)
{
	struct seq_log *l = t->seq;

	if (!l)
		return;
	/* joiners wait on the pthread_t (intercept_sync.c) and resume at this
	 * thread's last clock (logged here although t is inside the runtime).
	 * The release and the end are one entry: as two, a joiner could be
	 * merged between them when the merger saw the first alone, while the
	 * thread's core still held its lines - host timing in the counts. */
	struct seq_sync *s = sync_slot((uintptr_t)pthread_self());
	uint64_t n = s ? __atomic_add_fetch(&s->issued, 1, __ATOMIC_ACQ_REL) : 0;
	log_marker(l, SEQ_EXIT, s ? (uintptr_t)pthread_self() : 0, n);
	/* the commit reads the log after the merger may have merged the end
	 * (the wake): this store, the last, lets reap unmap it */
	__atomic_store_n(&l->gone, 1, __ATOMIC_RELEASE);
	t->seq = NULL;		/* what it still does (TLS destructors) is not logged */
}

/* The calling thread's log when markers should be logged, else NULL. */
static struct seq_log *marker_log(void)
{
	struct mon_thread *t = mon_self;

	if (!mon_seq_engaged() || !t || t->in_rt || t->ignore)
		return NULL;
	return t->seq;
}

void mon_seq_release(uintptr_t key)
{
	struct mon_thread *t = mon_self;
	struct seq_sync *s;
	uint64_t n;

	if (!mon_seq_engaged() || !(s = sync_slot(key)))
		return;
	n = __atomic_add_fetch(&s->issued, 1, __ATOMIC_ACQ_REL);
	/* a release by a thread that logs nothing (the runtime's own threads, a
	 * thread before its first access) is merged at once by a pseudo entry
	 * nobody waits behind: count it as merged already */
	if (!t || t->in_rt || !t->seq) {
		__atomic_add_fetch(&s->done, 1, __ATOMIC_ACQ_REL);
		return;
	}
	log_marker(t->seq, SEQ_REL, key, n);
}

void mon_seq_block(uintptr_t key)
{
	struct seq_log *l = marker_log();

	if (l)
		log_marker(l, SEQ_BLOCK, key, 0);
}

void mon_seq_unblock(uintptr_t key)
{
	struct seq_log *l = marker_log();
	struct seq_sync *s;
	uint64_t n = 0;

	if (!l)
		return;
	if (key && (s = sync_slot(key)))
		n = __atomic_load_n(&s->issued, __ATOMIC_ACQUIRE);
	log_marker(l, SEQ_UNBLOCK, key, n);
}

/* ---- the merger ---- */

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* 1 when the OS says thread tid sleeps (S, T, t: waits for something else
 * or is stopped). Running, runnable and D (a page fault, a disk read: kernel
 * work that ends by itself) are not sleeping: the merger waits for them. */
static int os_sleeping(pid_t tid)
{
	char path[64], buf[256], *p;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;	/* gone */
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return !p || (p[1] == ' ' && p[2] != 'R' && p[2] != 'D');
}

/* CPU time thread tid has run, in ms (its CPU clock: Linux encodes the tid
 * in the clock id, as pthread_getcpuclockid does); 0 when unknown. */
static uint64_t thread_cpu_ms(pid_t tid)
{
	struct timespec ts;
	clockid_t id = (clockid_t)((~(unsigned)tid << 3) | 6);	/* per thread, SCHED */

	if (clock_gettime(id, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Simulates one logged access of l's thread; returns its estimated cycles.
 * merge_run's own loop takes the common access (mon_sim_seq_access). */
static uint64_t merge_access(struct seq_log *l, const struct seq_ent *e)
{
	struct mon_thread *t = l->t;
	struct mon_obj *obj;
	int slot = mon_slot_of_metric[AMEBA_M_EST_CYCLES];
	struct mon_events ev;
	uint64_t cyc = 0;
	int armed = __atomic_load_n(&mon_cond_armed, __ATOMIC_RELAXED) ||
		    __atomic_load_n(&mon_sample_armed, __ATOMIC_RELAXED);

	if (!(obj = mon_objmap_get(e->obj_idx)))
		return 1;
	ev.nr = 0;
	if (mon_unlikely(e->flags & MON_ACC_WARM)) {
		/* a replayed address (sampled mode): its thread's clock moved
		 * by 8,192 misses while the others' did not ran the next
		 * burst one thread at a time, and its cut dropped the rest */
		ev.counts = NULL;
		seq.inner->access(t, obj, e->addr, e->sz, e->flags, e->pc, &ev);
		return 0;
	}
	if (mon_likely(e->v && !armed && slot >= 0)) {
		uint64_t before = __atomic_load_n(&e->v[slot], __ATOMIC_RELAXED);

		ev.counts = e->v;
		seq.inner->access(t, obj, e->addr, e->sz, e->flags, e->pc, &ev);
		cyc = __atomic_load_n(&e->v[slot], __ATOMIC_RELAXED) - before;
	} else {
		ev.counts = NULL;
		seq.inner->access(t, obj, e->addr, e->sz, e->flags, e->pc, &ev);
		for (uint32_t i = 0; i < ev.nr; i++) {
			if (e->v)
				mon_count_add(e->v, ev.slot[i], ev.n[i]);
			if ((int)ev.slot[i] == slot)
				cyc += ev.n[i];
		}
		if (__atomic_load_n(&mon_cond_armed, __ATOMIC_RELAXED))
			mon_cond_account(t, e->addr, obj, &ev);
		if (__atomic_load_n(&mon_sample_armed, __ATOMIC_RELAXED))
			mon_sample_account(t, e->addr, e->pc, obj, &ev);
	}
	return cyc ? cyc : 1;
}

/* Merger: whether l holds entries not merged yet. It reads the thread's
 * line (head, written at every entry) only once the entries it last saw
 * there are merged: reading it at every pick pulled the line across for
 * each entry or two (dense_2t: ~20% of the run's samples). */
static inline int log_pending(struct seq_log *l)
{
	if (l->tail != l->head_seen)
		return 1;
	l->head_seen = __atomic_load_n(&l->head, __ATOMIC_ACQUIRE);
	return l->tail != l->head_seen;
}

/* Whether blocked log l's wait is over: its next entry logged, and when
 * that is the UNBLOCK of a sync object, the releases it waits for merged
 * (try_resume's test; no change but log_pending's). */
static int blocked_may_resume(struct seq_log *l)
{
	const struct seq_ent *e;
	const struct seq_sync *s;

	if (!log_pending(l))
		return 0;
	e = &l->mring[l->tail & (SEQ_RING - 1)];
	if (e->kind != SEQ_UNBLOCK || !e->addr || seq.force)
		return 1;
	s = sync_slot(e->addr);
	return !s || __atomic_load_n(&s->done, __ATOMIC_ACQUIRE) >= e->pc;
}

/* Resumes a waiting log whose wait is over (ST_NEW, ST_BLOCKED); 1 if it did. */
static int try_resume(struct seq_log *l)
{
	struct seq_sync *s;

	if (l->state == ST_NEW) {
		uint32_t id = l->t->id;
		uint64_t born = id < seq.nr_born ? seq.born[id] : 0;

		/* a thread whose creation was not logged (created before the
		 * engagement, or unseen) starts at the frontier or its own
		 * cycles so far (clock0), whichever is later; the others at
		 * their creator's clock, once that creation is merged */
		if (!born && l->wait_create && !seq.force)
			return 0;
		l->clock = born ? born - 1 : seq.frontier > l->clock0 ? seq.frontier : l->clock0;
		l->state = ST_RUN;
		return 1;
	}
	if (!blocked_may_resume(l))
		return 0;
	const struct seq_ent *e = &l->mring[l->tail & (SEQ_RING - 1)];
	if (e->kind != SEQ_UNBLOCK) {	/* cannot happen: BLOCK is always followed by UNBLOCK */
		l->state = ST_RUN;
		return 1;
	}
	if (e->addr) {
		s = sync_slot(e->addr);
		if (s && s->clock > l->clock)
			l->clock = s->clock;
	} else if (seq.frontier > l->clock) {
		l->clock = seq.frontier;	/* a sleep: what ran meanwhile */
	}
	__atomic_store_n(&l->tail, l->tail + 1, __ATOMIC_RELEASE);
	l->state = ST_RUN;
	return 1;
}

static void unpark(uintptr_t key);
static void await_log(uint32_t id, uint64_t clock);

/* The creation clock of thread id (merger only; grows as ids do). */
static void born_set(uint32_t id, uint64_t clock)
{
	if (id >= seq.nr_born) {
		uint32_t n = id + 1024;
		uint64_t *b = mon_realloc(seq.born, n * sizeof(*b));

		if (!b)
			return;		/* it then starts at the frontier (drain or stall) */
		memset(b + seq.nr_born, 0, (n - seq.nr_born) * sizeof(*b));
		seq.born = b;
		seq.nr_born = n;
	}
	seq.born[id] = clock + 1;
}


/* Wakes l's thread, asleep for room in its log (log_wait_room). */
static void room_wake(struct seq_log *l)
{
	__atomic_add_fetch(&l->room_seq, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &l->room_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Merges up to SEQ_BATCH entries of l while its clock stays <= limit. */
/* A dropped access (sampled mode's cut, merge_round): not simulated, and
 * taken off its thread's simulated tally (mon_sampled_skip counted it). */
static void drop_access(struct seq_log *l)
{
	struct mon_tally *c = mon_tally_tab;

	if (c && l->t->id < MON_TALLY_MAX)
		__atomic_store_n(&c[l->t->id].dropped,
				 __atomic_load_n(&c[l->t->id].dropped, __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELAXED);
}

/* A release of key merged: its waiters resume at l's clock at the latest. */
static void release(struct seq_log *l, uintptr_t key)
{
	struct seq_sync *s = sync_slot(key);

	if (s) {
		if (l->clock > s->clock)
			s->clock = l->clock;
		__atomic_add_fetch(&s->done, 1, __ATOMIC_ACQ_REL);
	}
}

static void merge_run(struct seq_log *l, uint64_t limit, int drop)
{
	uint64_t tl = l->tail, clock = l->clock, stop, plain = 0, mf = 0;
	void *core = l->core;
	/* the common entry, an access to simulate as it is, goes straight to
	 * mon_sim_seq_access, its clock in a register (armed or not is taken
	 * once per run: an arm takes effect at a run's boundary) */
	const int direct = seq.direct && !drop && !__atomic_load_n(&mon_cond_armed, __ATOMIC_RELAXED) &&
			   !__atomic_load_n(&mon_sample_armed, __ATOMIC_RELAXED);

	log_pending(l);
	stop = l->head_seen - tl > SEQ_BATCH ? tl + SEQ_BATCH : l->head_seen;
	while (tl != stop && clock <= limit) {
		const struct seq_ent *e = &l->mring[tl & (SEQ_RING - 1)];

		if (mon_likely(direct && e->kind == SEQ_PLAIN)) {
			const uint32_t wfs = e->wfs;
			uint64_t cyc;

			if (mon_unlikely(!core))
				core = l->core = l->t->backend_data;	/* set for good, once */
			plain++;
			if (core && (cyc = mon_sim_seq_hit(core, e->obj_idx, e->addr, wfs, e->v)))
				mf++;
			else
				cyc = mon_sim_seq_access(l->t, core, e->obj_idx, e->addr, wfs, e->v);
			clock += cyc;
			tl++;
			continue;
		}
		l->clock = clock;
		switch (e->kind) {
		case SEQ_ACCESS:
		case SEQ_PLAIN:
			if (drop && !(e->flags & MON_ACC_WARM))
				drop_access(l);
			else	/* a replayed address warms even past the cut */
				l->clock += merge_access(l, e);
			break;
		case SEQ_REL:
			release(l, e->addr);
			break;
		case SEQ_BLOCK:
			l->state = ST_BLOCKED;
			break;
		case SEQ_UNBLOCK:	/* an UNBLOCK without BLOCK: a sleep key 0 */
			break;
		case SEQ_EXIT:	/* the joiners' release, if any, and the end */
			if (e->addr)
				release(l, e->addr);
			l->state = ST_DONE;
			break;
		case SEQ_CREATE:
			born_set((uint32_t)e->addr, l->clock);
			unpark((uintptr_t)e->addr + 1);
			await_log((uint32_t)e->addr, l->clock);
			break;
		}
		clock = l->clock;
		tl++;
		if (l->state != ST_RUN || seq.awaiting)
			break;
	}
	l->clock = clock;
	seq.nr_plain += plain;
	seq.nr_mf += mf;
	/* a release store and a plain load, not the locked pair that would
	 * order them: a wait for room that began just as the tail moved is
	 * seen at the next run of this (full) log, or ends by its 1 ms
	 * timeout */
	__atomic_store_n(&l->tail, tl, __ATOMIC_RELEASE);
	/* its thread sleeps for room (log_wait_room): wake it once there is enough */
	if (__atomic_load_n(&l->room_wait, __ATOMIC_RELAXED) &&
	    __atomic_load_n(&l->head, __ATOMIC_ACQUIRE) - tl <= SEQ_RING - SEQ_ROOM)
		room_wake(l);
	if (l->clock > __atomic_load_n(&seq.max_clock, __ATOMIC_RELAXED))
		__atomic_store_n(&seq.max_clock, l->clock, __ATOMIC_RELAXED);
	if (l->state == ST_DONE) {
		if (seq.inner->thread_exit)
			seq.inner->thread_exit(l->t);	/* its core back, on the merger */
		mon_fold_thread_merged(l->t);	/* its counts are final: fold.c */
		seq.nr_done++;
	}
}

/*
 * The merger's logs. Threads push new logs onto seq.logs (an inbox); each
 * round the merger takes the whole inbox. A new thread whose creation is
 * not merged yet waits parked (by its creation key, which one REL releases)
 * and costs nothing per round; every other live log is in act[]. A round
 * walks act[] only: thousands of short threads created ahead of the merger
 * (thread churn) do not slow each pick.
 */
#define PARK_SLOTS 1024
static struct seq_log **act;
static uint32_t nr_act, cap_act;
static struct seq_log *parked[PARK_SLOTS];

static uint32_t park_hash(uintptr_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 54) & (PARK_SLOTS - 1);
}

static void act_add(struct seq_log *l)
{
	if (nr_act == cap_act) {
		uint32_t cap = cap_act ? 2 * cap_act : 64;
		struct seq_log **a = mon_realloc(act, cap * sizeof(*a));

		if (!a) {
			mon_log("ordered simulation: out of memory; thread %u's accesses are lost",
				l->t->id);
			l->state = ST_DONE;
			return;
		}
		act = a;
		cap_act = cap;
	}
	act[nr_act++] = l;
}

static void log_free(struct seq_log *l)
{
	munmap(l, SEQ_MAP_BYTES);
}

/* A new log: to act[] when its thread may start, else parked. */
static void adopt(struct seq_log *l)
{
	if (try_resume(l) || seq.force) {
		l->state = ST_RUN;
		act_add(l);
		return;
	}
	uint32_t h = park_hash(l->wait_key);
	l->next = parked[h];
	parked[h] = l;
}

/* Takes the inbox: the logs threads published since the last round. */
static void adopt_inbox(void)
{
	struct seq_log *l, *next;

	if (!__atomic_load_n(&seq.logs, __ATOMIC_RELAXED))
		return;		/* a load, not a locked exchange, every round */
	l = __atomic_exchange_n(&seq.logs, NULL, __ATOMIC_ACQ_REL);
	for (; l; l = next) {
		next = l->next;
		adopt(l);
	}
}

/* The creation of key's thread was merged: start the logs parked on it
 * (all of them when draining: key 0). */
static void unpark(uintptr_t key)
{
	for (uint32_t h = key ? park_hash(key) : 0; h < PARK_SLOTS; h++) {
		struct seq_log **pp = &parked[h], *l;

		while ((l = *pp)) {
			if (!key || l->wait_key == key) {
				*pp = l->next;
				if (!try_resume(l))
					l->state = ST_RUN;	/* draining */
				act_add(l);
			} else {
				pp = &l->next;
			}
		}
		if (key)
			break;
	}
}

/* Whether thread id's log is known to the merger (running, or parked). */
static int log_known(uint32_t id)
{
	for (uint32_t i = 0; i < nr_act; i++)
		if (act[i]->t->id == id)
			return 1;
	for (const struct seq_log *l = parked[park_hash((uintptr_t)id + 1)]; l; l = l->next)
		if (l->t->id == id)
			return 1;
	return 0;
}

/* The creation of id's thread, at its creator's clock, was merged: unless
 * its log is known, nothing is merged from that clock on until it is
 * (await_done). Had the log come a moment later, the thread would have
 * started behind what the others merged meanwhile: how far behind, the
 * host's timing. */
static void await_log(uint32_t id, uint64_t clock)
{
	if (seq.force || log_known(id))
		return;
	seq.awaiting = 1;
	seq.await_id = id;
	seq.await_clock = clock;
	seq.await_since_ms = 0;
	seq.nr_await++;
}

/* Whether the wait of await_log is over: the log came (adopted), or
 * SEQ_STALL_WALL_MS went by (a thread that never logs). */
static int await_done(void)
{
	uint64_t now;

	adopt_inbox();
	if (seq.force || log_known(seq.await_id)) {
		seq.awaiting = 0;
		return 1;
	}
	now = mono_ms();
	if (!seq.await_since_ms) {
		seq.await_since_ms = now;
	} else if (now - seq.await_since_ms > SEQ_STALL_WALL_MS) {
		seq.awaiting = 0;
		seq.nr_await_late++;
		return 1;
	}
	return 0;
}

/* Removes the ended logs from act[] and frees them, once their threads are
 * gone from them too (log_commit reads the log after publishing the end:
 * unmapped, a SIGSEGV in the program, ~1 run in 10 of thread churn under
 * load). Returns the ended logs it kept (the next round reaps them). */
static uint64_t reap(void)
{
	uint64_t kept = 0;

	for (uint32_t i = 0; i < nr_act;) {
		if (act[i]->state != ST_DONE) {
			i++;
		} else if (!__atomic_load_n(&act[i]->gone, __ATOMIC_ACQUIRE)) {
			kept++;
			i++;
		} else {
			log_free(act[i]);
			act[i] = act[--nr_act];
		}
	}
	return kept;
}


/* The merger waits (200 us at most) for l's thread to log: a few spins (a
 * running thread logs again within microseconds), then asleep until
 * log_commit wakes it. A wake lost to the race of the flag costs the
 * timeout. */
static void wait_for_log(struct seq_log *l)
{
	struct timespec ts = { 0, 200000 };
	uint64_t h;

	for (int i = 0; i < 256; i++) {
		if (__atomic_load_n(&l->head, __ATOMIC_ACQUIRE) != l->tail)
			return;
		cpu_relax();
	}
	__atomic_store_n(&l->merger_waits, 1, __ATOMIC_SEQ_CST);
	h = __atomic_load_n(&l->head, __ATOMIC_SEQ_CST);
	if (h == l->tail)
		syscall(SYS_futex, head_word(l), FUTEX_WAIT_PRIVATE, (uint32_t)h, &ts, NULL, 0);
	__atomic_store_n(&l->merger_waits, 0, __ATOMIC_RELEASE);
}

/* The merger's pick, one candidate at a time: of best (NULL: none yet) and
 * l, the smaller clock (ties: the lower thread id); second becomes the
 * smallest clock of the others seen. */
static inline struct seq_log *pick(struct seq_log *best, struct seq_log *l, uint64_t *second)
{
	if (!best || l->clock < best->clock || (l->clock == best->clock && l->id < best->id)) {
		if (best && best->clock < *second)
			*second = best->clock;
		return l;
	}
	if (l->clock < *second)
		*second = l->clock;
	return best;
}

/* One round: resume what may resume, then merge the running log with the
 * smallest clock. Returns 1 if it merged something. */
static int merge_round(int draining, int paused)
{
	struct seq_log *best = NULL, *l;
	uint64_t second = UINT64_MAX;
	int progress = 0;

	if (!paused)
		seq.cut = 0;
	if (!paused && seq.uncut) {
		/* a burst begins: the threads the cut left out run again and
		 * hold the others back until they log. Left out until then, a
		 * thread the host had not scheduled yet let the others run
		 * alone for a time slice: fs_loop's 4 ms bursts saw 59% of
		 * the exact run's false-sharing misses per access */
		uint64_t now = mon_mono_ns();

		for (uint32_t i = 0; i < nr_act; i++) {
			l = act[i];
			if (l->cut_idle && l->state == ST_IDLE) {
				if (seq.frontier > l->clock)
					l->clock = seq.frontier;
				l->state = ST_RUN;
				l->resume_ns = now;
			}
			l->cut_idle = 0;
		}
		seq.uncut = 0;
	}

	for (uint32_t i = 0; i < nr_act; i++) {
		l = act[i];
		if (l->state == ST_DONE)
			continue;
		if (l->state == ST_NEW || l->state == ST_BLOCKED)
			progress |= try_resume(l);
		if (l->state == ST_IDLE) {
			if (!log_pending(l))
				continue;
			if (seq.frontier > l->clock) {
				seq.idle_skip += seq.frontier - l->clock;
				l->clock = seq.frontier;
			}
			l->state = ST_RUN;
		}
		if (l->state != ST_RUN)
			continue;
		/* draining: an empty log holds nobody back */
		if ((draining || paused) && !log_pending(l)) {
			/* sampled mode between bursts: the burst ends where the
			 * first running thread's log does (the cut): what the
			 * others logged beyond it would be simulated alone, with
			 * nobody to contend with, and is dropped; every thread
			 * resumes at the frontier, as they all ran natively
			 * meanwhile */
			if (paused) {
				seq.cut = 1;
				l->state = ST_IDLE;
				l->cut_idle = 1;
				seq.uncut = 1;
			}
			continue;
		}
		best = pick(best, l, &second);
	}
	if (!best)
		return progress;
	if (seq.awaiting && !paused && !draining && !await_done()) {
		/* a new thread's log is awaited (await_log): up to its start */
		if (best->clock >= seq.await_clock) {
			nap(SEQ_SLEEP_NS);
			return progress;
		}
		if (second > seq.await_clock - 1)
			second = seq.await_clock - 1;
	}
	if (!log_pending(best)) {
		/* the slowest running thread has logged nothing new: wait for
		 * it, unless the OS says it sleeps (blocked where no interposer
		 * sees it), or it ran SEQ_STALL_MS of CPU time without logging
		 * (a spin in uninstrumented code, which may wait for a thread
		 * that waits for the merger), or logged nothing for
		 * SEQ_STALL_WALL_MS; then it holds nobody back until it logs
		 * again. Time it spent preempted does not count: on a loaded
		 * host that would make the result depend on the host. */
		uint64_t now = mono_ms();

		if (best->resume_ns &&
		    mon_mono_ns() - best->resume_ns > __atomic_load_n(&seq.resume_hold_ns, __ATOMIC_RELAXED)) {
			/* not scheduled since the burst began (a busy host):
			 * the others go on without it, or the burst simulates
			 * nothing; it rejoins at the frontier when it logs */
			best->resume_ns = 0;
			best->state = ST_IDLE;
			best->empty_since_ms = 0;
			return progress;
		}
		if (!best->empty_since_ms) {
			best->empty_since_ms = now;
			best->empty_cpu_ms = thread_cpu_ms(best->t->tid);
			best->os_check_ms = 0;
		}
		if (__atomic_load_n(&best->room_wait, __ATOMIC_ACQUIRE)) {
			/* asleep waiting for room the merger just made: all of it */
			room_wake(best);
			nap(SEQ_SLEEP_NS);
			return progress;
		}
		/* the OS is asked once per tick of the coarse clock (1-4 ms);
		 * in between the merger sleeps until the thread logs */
		if (best->os_check_ms && now == best->os_check_ms) {
			wait_for_log(best);
			return 1;
		}
		best->os_check_ms = now;
		if (os_sleeping(best->t->tid)) {
			nap(SEQ_SLEEP_NS);
			if (!log_pending(best) &&
			    os_sleeping(best->t->tid)) {
				best->state = ST_IDLE;
				seq.nr_sleeps++;
			}
		} else if (thread_cpu_ms(best->t->tid) - best->empty_cpu_ms > SEQ_STALL_MS ||
			   now - best->empty_since_ms > SEQ_STALL_WALL_MS) {
			best->state = ST_IDLE;
			seq.nr_stalls++;
		}
		if (best->state == ST_IDLE) {
			best->empty_since_ms = 0;
			return progress;
		}
		wait_for_log(best);
		return 1;
	}
	best->empty_since_ms = 0;
	best->resume_ns = 0;
	if (best->clock > seq.frontier)
		seq.frontier = best->clock;
	merge_run(best, seq.cut ? UINT64_MAX : second, seq.cut);
	return 1;
}

/* Something besides merging needs the merger: a new log, exit's drain, an
 * MRI request (its sync), sampled mode's pause. */
static inline int merger_called(uint64_t sync_seen)
{
	return __atomic_load_n(&seq.logs, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&seq.drain, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&seq.sync_req, __ATOMIC_RELAXED) != sync_seen ||
	       __atomic_load_n(&seq.paused, __ATOMIC_RELAXED);
}

/*
 * merge_round's common case in a loop of its own: every live log runs or
 * is blocked, and nothing else needs the merger. Each turn picks the
 * smallest clock of the running logs (ties: the lower id) and merges it up
 * to the next smallest, as merge_round does, without its checks of states,
 * waits and drains: two threads in step take turns every entry or two,
 * and those checks cost more than the turn (dense_2t: ~70 instructions per
 * access). A blocked log (a main thread in pthread_join, a worker at a
 * barrier) is passed over while its wait lasts, as merge_round's
 * try_resume passes it over. Back to merge_round when a blocked log may
 * resume, the smallest has nothing logged, a log stops running, a thread
 * starts, or merger_called. Returns 1 if it merged anything.
 */
static int merge_running(uint64_t sync_seen)
{
	const uint32_t n = nr_act;
	int merged = 0;

	if (n < 2 || seq.cut || seq.uncut || seq.nr_done || seq.awaiting)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		if (act[i]->state != ST_RUN && act[i]->state != ST_BLOCKED)
			return 0;
	for (uint32_t turn = 0; turn < SEQ_TURNS; turn++) {
		struct seq_log *best = NULL;
		uint64_t second = UINT64_MAX;

		for (uint32_t i = 0; i < n; i++) {
			struct seq_log *l = act[i];

			if (mon_likely(l->state == ST_RUN))
				best = pick(best, l, &second);
			else if (blocked_may_resume(l))
				return merged;	/* merge_round resumes it */
		}
		if (!best || !log_pending(best))
			break;		/* merge_round waits for it */
		best->empty_since_ms = 0;
		best->resume_ns = 0;
		if (best->clock > seq.frontier)
			seq.frontier = best->clock;
		merge_run(best, second, 0);
		merged = 1;
		if (best->state != ST_RUN || nr_act != n || seq.awaiting || merger_called(sync_seen))
			break;
	}
	return merged;
}

/* Every live log merged up to its mark (drain_head or sync_head). */
static int merged_up_to(int sync)
{
	for (uint32_t i = 0; i < nr_act; i++) {
		const struct seq_log *l = act[i];
		if (l->state != ST_DONE && l->tail < (sync ? l->sync_head : l->drain_head))
			return 0;
	}
	for (uint32_t h = 0; h < PARK_SLOTS; h++)
		for (const struct seq_log *l = parked[h]; l; l = l->next)
			if (l->tail < (sync ? l->sync_head : l->drain_head))
				return 0;
	return 1;
}

/* Marks every live log's current head (drain_head or sync_head). */
static void mark_heads(int sync)
{
	adopt_inbox();
	for (uint32_t i = 0; i < nr_act; i++) {
		struct seq_log *l = act[i];
		uint64_t h = __atomic_load_n(&l->head, __ATOMIC_ACQUIRE);
		if (sync)
			l->sync_head = h;
		else
			l->drain_head = h;
	}
	for (uint32_t k = 0; k < PARK_SLOTS; k++)
		for (struct seq_log *l = parked[k]; l; l = l->next) {
			uint64_t h = __atomic_load_n(&l->head, __ATOMIC_ACQUIRE);
			if (sync)
				l->sync_head = h;
			else
				l->drain_head = h;
		}
}

static void *merger_main(void *arg)
{
	uint32_t idle = 0;
	int snapped = 0;
	uint64_t sync_seen = 0;

	(void)arg;
	mon_self = &merger_self;
	for (;;) {
		int draining = __atomic_load_n(&seq.drain, __ATOMIC_ACQUIRE);
		uint64_t req = __atomic_load_n(&seq.sync_req, __ATOMIC_ACQUIRE);

		adopt_inbox();
		if (draining && !snapped) {
			mark_heads(0);	/* what was logged when exit began */
			snapped = 1;
		}
		if (req != sync_seen) {
			mark_heads(1);
			sync_seen = req;
		}
		if (seq.debug_dump) {
			seq.debug_dump = 0;
			mon_log("seq: nr_act %u frontier %llu", nr_act, (unsigned long long)seq.frontier);
			for (uint32_t i = 0; i < nr_act; i++)
				if (act[i]->tail < act[i]->sync_head || act[i]->clock <= seq.frontier + 100)
					mon_log("seq: act id %u state %d clock %llu tail %llu sync_head %llu head %llu kind %d",
						act[i]->t->id, act[i]->state, (unsigned long long)act[i]->clock,
						(unsigned long long)act[i]->tail, (unsigned long long)act[i]->sync_head,
						(unsigned long long)act[i]->head, act[i]->mring[act[i]->tail & (SEQ_RING - 1)].kind);
			for (uint32_t h = 0; h < PARK_SLOTS; h++)
				for (struct seq_log *l = parked[h]; l; l = l->next)
					if (l->tail < l->sync_head)
						mon_log("seq: parked id %u wait %lu tail %llu sync_head %llu", l->t->id,
							(unsigned long)l->wait_key, (unsigned long long)l->tail,
							(unsigned long long)l->sync_head);
		}
		if (__atomic_load_n(&seq.sync_done, __ATOMIC_ACQUIRE) != sync_seen && merged_up_to(1))
			__atomic_store_n(&seq.sync_done, sync_seen, __ATOMIC_RELEASE);
		if (seq.nr_done)
			seq.nr_done = reap();
		if (!draining && __atomic_load_n(&seq.sync_done, __ATOMIC_RELAXED) == sync_seen &&
		    !merger_called(sync_seen) && merge_running(sync_seen)) {
			idle = 0;
			continue;
		}
		/* paused: nothing more comes until the next burst, so an empty
		 * log holds nobody back, as in a drain */
		if (merge_round(draining, __atomic_load_n(&seq.paused, __ATOMIC_ACQUIRE))) {
			idle = 0;
			if (!draining || !merged_up_to(0))
				continue;
		}
		if (draining) {
			if (!seq.force && !merged_up_to(0)) {
				/* nothing can be merged but what waits (for its
				 * creation, a release) and what follows: the waits
				 * go, parked threads start. Not sooner: a joiner let
				 * go while the ending thread's release was still
				 * unmerged ran ahead of its last accesses, the
				 * counts then depending on how far the merger was
				 * when exit began */
				seq.force = 1;
				unpark(0);
				continue;
			}
			/* nothing left that can be merged, or everything logged
			 * before exit began is merged: the drain is done */
			seq.force = 0;
			snapped = 0;
			__atomic_store_n(&seq.drain, 0, __ATOMIC_RELEASE);
			__atomic_add_fetch(&seq.drained, 1, __ATOMIC_ACQ_REL);
			continue;
		}
		if (++idle < 64)
			cpu_relax();
		else
			nap(SEQ_SLEEP_NS);
	}
	return NULL;
}

void mon_seq_pause(int on)
{
	__atomic_store_n(&seq.paused, on, __ATOMIC_RELEASE);
}

void mon_seq_resume_hold(uint64_t ns)
{
	__atomic_store_n(&seq.resume_hold_ns, ns, __ATOMIC_RELAXED);
}

uint64_t mon_seq_max_clock(void)
{
	return __atomic_load_n(&seq.max_clock, __ATOMIC_RELAXED);
}

int mon_seq_log_merged(struct mon_thread *t)
{
	struct seq_log *l = t ? __atomic_load_n((struct seq_log **)&t->seq, __ATOMIC_ACQUIRE) : NULL;

	return !l || __atomic_load_n(&l->tail, __ATOMIC_ACQUIRE) ==
			     __atomic_load_n(&l->head, __ATOMIC_ACQUIRE);
}

void mon_seq_sync(void)
{
	uint64_t want, t0;

	if (!mon_seq_engaged() || mon_self == &merger_self)
		return;
	want = __atomic_add_fetch(&seq.sync_req, 1, __ATOMIC_ACQ_REL);
	t0 = mono_ms();
	while (__atomic_load_n(&seq.sync_done, __ATOMIC_ACQUIRE) < want) {
		if (mono_ms() - t0 > SEQ_SYNC_MS) {
			seq.nr_sync_late++;
			if (getenv("AMEBA_SEQ_DEBUG"))
				seq.debug_dump = 1;
			return;		/* the counts are read a little behind */
		}
		nap(SEQ_SLEEP_NS);
	}
}

/* atexit: merge what the threads logged, so the final counts have it. */
static void seq_atexit(void)
{
	struct mon_thread *t = mon_self;
	uint64_t d = __atomic_load_n(&seq.drained, __ATOMIC_ACQUIRE);
	struct timespec t0, now;

	if (!mon_seq_engaged())
		return;
	if (t)
		t->in_rt++;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	__atomic_store_n(&seq.drain, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&seq.drained, __ATOMIC_ACQUIRE) == d) {
		nap(100000);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >
		    SEQ_DRAIN_MS) {
			mon_log("ordered simulation: the merger did not finish within %d ms at exit; "
				"the last accesses are not counted", SEQ_DRAIN_MS);
			break;
		}
	}
	{
		const char *v = getenv("AMEBA_SIM_VERBOSE");

		if (v && !strcmp(v, "1"))
			mon_log("ordered simulation: frontier %llu cycles, %llu running threads given "
				"up on after %d ms of CPU time without logging, %llu left out while the OS said "
				"they slept (%llu cycles skipped on resuming), %llu reads that did "
				"not wait for the merger; %llu plain accesses merged directly, %llu "
				"of them L1 hits the merger's filter took; %llu new threads' logs "
				"awaited, %llu given up on", (unsigned long long)seq.frontier,
				(unsigned long long)seq.nr_stalls, SEQ_STALL_MS,
				(unsigned long long)seq.nr_sleeps, (unsigned long long)seq.idle_skip,
				(unsigned long long)seq.nr_sync_late, (unsigned long long)seq.nr_plain,
				(unsigned long long)seq.nr_mf, (unsigned long long)seq.nr_await,
				(unsigned long long)seq.nr_await_late);
	}
	if (t)
		t->in_rt--;
}

int mon_seq_engage(const struct mon_backend_ops *inner)
{
	static int once;
	int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	pthread_attr_t attr;
	sigset_t all, old;
	int expected = 0, err;

	if (!__atomic_compare_exchange_n(&once, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return mon_seq_engaged() ? 0 : AMEBA_EINVAL;
	seq.inner = inner;
	seq.direct = inner == &mon_backend_sim || inner == &mon_backend_sim_c;
	seq.sync = mmap(NULL, SEQ_SYNC_SLOTS * sizeof(struct seq_sync), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (seq.sync == MAP_FAILED) {
		seq.sync = NULL;
		return AMEBA_ENOMEM;
	}
	/* libc's pthread_create: ours would register an application thread */
	create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
		dlsym(RTLD_NEXT, "pthread_create");
	if (!create)
		return AMEBA_ENOENT;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = create(&seq.merger, &attr, merger_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		mon_log("ordered simulation off: cannot start the merger thread (%s)", strerror(err));
		return AMEBA_ENOMEM;
	}
	atexit(seq_atexit);
	__atomic_store_n(&seq.engaged, 1, __ATOMIC_RELEASE);
	return 0;
}

void mon_seq_after_fork(void)
{
	/* The merger did not survive the fork. The child's one thread goes back
	 * to simulating its own accesses (what its log held is not counted). */
	if (!mon_seq_engaged())
		return;
	__atomic_store_n(&seq.engaged, 0, __ATOMIC_RELEASE);
	if (mon_self)
		mon_self->seq = NULL;
	seq.logs = NULL;
}
