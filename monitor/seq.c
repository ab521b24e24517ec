/*
 * seq.c - threads interleaved in simulated time: the sim backend's ordered
 * mode (docs/simulator.md, "Threads in simulated time"). This file is the
 * threads' side (their logs, the sync markers, engagement, sync, exit);
 * the merger is seq_merge.c, what both share seq_int.h.
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
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mon.h"
#include "seq.h"
#include "seq_int.h"

struct seq_glob mon_seq = { .mode = -1 };
struct mon_thread mon_seq_merger_self = { .id = UINT32_MAX - 1, .in_rt = 1 };

int mon_seq_wanted(void)
{
	int m = __atomic_load_n(&mon_seq.mode, __ATOMIC_RELAXED);

	if (m < 0) {
		const char *e = getenv("AMEBA_SIM_ORDER");

		m = !(e && !strcmp(e, "host"));
		if (e && *e && strcmp(e, "host") && strcmp(e, "time"))
			mon_log("AMEBA_SIM_ORDER=%s: want time or host; using time", e);
		__atomic_store_n(&mon_seq.mode, m, __ATOMIC_RELAXED);
	}
	return m;
}

int mon_seq_engaged(void)
{
	return __atomic_load_n(&mon_seq.engaged, __ATOMIC_ACQUIRE);
}

/* ---- sync objects ---- */

struct seq_sync *mon_seq_sync_slot(uintptr_t key)
{
	const uint32_t home = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 52) & (SEQ_SYNC_SLOTS - 1);
	uint32_t h = home;

	if (!mon_seq.sync)
		return NULL;
	for (uint32_t i = 0; i < 16; i++, h = (h + 1) & (SEQ_SYNC_SLOTS - 1)) {
		struct seq_sync *s = &mon_seq.sync[h];
		uintptr_t k = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE), zero = 0;

		if (k == key)
			return s;
		if (k == 0 && (__atomic_compare_exchange_n(&s->key, &zero, key, 0, __ATOMIC_ACQ_REL,
							   __ATOMIC_ACQUIRE) || zero == key))
			return s;
	}
	/* full neighbourhood: share the home slot (waits become conservative) */
	return &mon_seq.sync[home];
}

/*
 * Barriers' rounds: key, threads, the slot's releases before the init. A
 * small open-addressed table (barriers are few); a full neighbourhood
 * records nothing, and that barrier's rounds wake as any release does.
 * Written by the initialising thread (count and base, then the key,
 * released), read by the merger.
 */
#define SEQ_BARRIERS 256
struct seq_barrier {
	uintptr_t key;
	unsigned count;
	uint64_t base;
};
static struct seq_barrier barriers[SEQ_BARRIERS];

/* key's entry, claimed for it if claim and there is room; else NULL */
static struct seq_barrier *barrier_find(uintptr_t key, int claim)
{
	uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 56) & (SEQ_BARRIERS - 1);

	for (int i = 0; i < 8; i++, h = (h + 1) & (SEQ_BARRIERS - 1)) {
		uintptr_t k = __atomic_load_n(&barriers[h].key, __ATOMIC_ACQUIRE), zero = 0;

		if (k == key)
			return &barriers[h];
		if (k)
			continue;
		if (!claim)
			return NULL;
		if (__atomic_compare_exchange_n(&barriers[h].key, &zero, key, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE) || zero == key)
			return &barriers[h];
	}
	return NULL;
}

void mon_seq_barrier_init(uintptr_t key, unsigned count)
{
	const struct seq_sync *s = mon_seq_engaged() ? mon_seq_sync_slot(key) : NULL;
	struct seq_barrier *b = barrier_find(key, 1);

	if (!b)
		return;
	__atomic_store_n(&b->base, s ? __atomic_load_n(&s->issued, __ATOMIC_ACQUIRE) : 0,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&b->count, count, __ATOMIC_RELEASE);
}

unsigned mon_seq_barrier_count(uintptr_t key, uint64_t *base)
{
	const struct seq_barrier *b = barrier_find(key, 0);
	unsigned n;

	if (!b)
		return 0;
	n = __atomic_load_n(&b->count, __ATOMIC_ACQUIRE);
	*base = __atomic_load_n(&b->base, __ATOMIC_RELAXED);
	return n;
}

/* ---- the thread's side ---- */

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
	struct seq_log *head = __atomic_load_n(&mon_seq.logs, __ATOMIC_ACQUIRE);

	do
		l->next = head;
	while (!__atomic_compare_exchange_n(&mon_seq.logs, &head, l, 1, __ATOMIC_ACQ_REL,
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


/* Wakes the merger, asleep until l's thread logs (wait_for_log). */
__attribute__((noinline)) void mon_seq_wake_merger(struct seq_log *l)
{
	if (__atomic_exchange_n(&l->merger_waits, 0, __ATOMIC_ACQ_REL))
		syscall(SYS_futex, head_word(l), FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static inline void log_commit(struct seq_log *l)
{
	__atomic_store_n(&l->head, l->head + 1, __ATOMIC_RELEASE);
	if (mon_unlikely(__atomic_load_n(&l->merger_waits, __ATOMIC_RELAXED)))
		mon_seq_wake_merger(l);
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
	mon_seq_log_access(log_slot(l), addr, pc, v, obj->idx, MON_FAST_WFS(0, flags, sz));
	log_commit(l);
}

/*
 * The ordered mode's line entry (mon_backend_sim_seq.line_fast): the hook's
 * access goes straight to the log (mon_seq_line_log) when it can, else
 * through mon_access_cached.
 */
void mon_seq_line_fast(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc)
{
	if (mon_unlikely(!mon_seq_line_log(t, addr, wfs, pc)))
		mon_access_cached(t, addr, wfs, pc);
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
	struct seq_sync *s = mon_seq_sync_slot((uintptr_t)pthread_self());
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

uint64_t mon_seq_release(uintptr_t key)
{
	struct mon_thread *t = mon_self;
	struct seq_sync *s;
	uint64_t n;

	if (!mon_seq_engaged() || !(s = mon_seq_sync_slot(key)))
		return 0;
	n = __atomic_add_fetch(&s->issued, 1, __ATOMIC_ACQ_REL);
	/* a release by a thread that logs nothing (the runtime's own threads, a
	 * thread before its first access) is merged at once by a pseudo entry
	 * nobody waits behind: count it as merged already */
	if (!t || t->in_rt || !t->seq) {
		__atomic_add_fetch(&s->done, 1, __ATOMIC_ACQ_REL);
		return n;
	}
	log_marker(t->seq, SEQ_REL, key, n);
	return n;
}

void mon_seq_block(uintptr_t key)
{
	struct seq_log *l = marker_log();

	if (l)
		log_marker(l, SEQ_BLOCK, key, 0);
}

void mon_seq_unblock_at(uintptr_t key, uint64_t n)
{
	struct seq_log *l = marker_log();
	struct seq_sync *s;

	if (!l)
		return;
	if (key && !n && (s = mon_seq_sync_slot(key)))
		n = __atomic_load_n(&s->issued, __ATOMIC_ACQUIRE);
	log_marker(l, SEQ_UNBLOCK, key, n);
}

void mon_seq_unblock(uintptr_t key)
{
	mon_seq_unblock_at(key, 0);
}

uint64_t mon_seq_barrier_round_end(uintptr_t key, uint64_t n)
{
	uint64_t base = 0;
	unsigned c = n ? mon_seq_barrier_count(key, &base) : 0;

	if (!c || n <= base)
		return 0;
	return base + (n - base + c - 1) / c * c;
}

void mon_seq_pause(int on)
{
	__atomic_store_n(&mon_seq.paused, on, __ATOMIC_RELEASE);
}

void mon_seq_resume_hold(uint64_t ns)
{
	__atomic_store_n(&mon_seq.resume_hold_ns, ns, __ATOMIC_RELAXED);
}

uint64_t mon_seq_max_clock(void)
{
	return __atomic_load_n(&mon_seq.max_clock, __ATOMIC_RELAXED);
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

	if (!mon_seq_engaged() || mon_self == &mon_seq_merger_self)
		return;
	want = __atomic_add_fetch(&mon_seq.sync_req, 1, __ATOMIC_ACQ_REL);
	t0 = mono_ms();
	while (__atomic_load_n(&mon_seq.sync_done, __ATOMIC_ACQUIRE) < want) {
		if (mono_ms() - t0 > SEQ_SYNC_MS) {
			mon_seq.nr_sync_late++;
			if (getenv("AMEBA_SEQ_DEBUG"))
				mon_seq.debug_dump = 1;
			return;		/* the counts are read a little behind */
		}
		nap(SEQ_SLEEP_NS);
	}
}

/* atexit: merge what the threads logged, so the final counts have it. */
static void seq_atexit(void)
{
	struct mon_thread *t = mon_self;
	uint64_t d = __atomic_load_n(&mon_seq.drained, __ATOMIC_ACQUIRE);
	struct timespec t0, now;

	if (!mon_seq_engaged())
		return;
	if (t)
		t->in_rt++;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	__atomic_store_n(&mon_seq.drain, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&mon_seq.drained, __ATOMIC_ACQUIRE) == d) {
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
				"and %llu woken threads' wakes awaited, %llu given up on",
				(unsigned long long)mon_seq.frontier,
				(unsigned long long)mon_seq.nr_stalls, SEQ_STALL_MS,
				(unsigned long long)mon_seq.nr_sleeps, (unsigned long long)mon_seq.idle_skip,
				(unsigned long long)mon_seq.nr_sync_late, (unsigned long long)mon_seq.nr_plain,
				(unsigned long long)mon_seq.nr_mf, (unsigned long long)mon_seq.nr_await,
				(unsigned long long)mon_seq.nr_await_wake,
				(unsigned long long)mon_seq.nr_await_late);
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
	mon_seq.inner = inner;
	mon_seq.direct = inner == &mon_backend_sim ? SEQ_DIRECT_ASM :
			 inner == &mon_backend_sim_c ? SEQ_DIRECT_C : 0;
	mon_seq.sync = mmap(NULL, SEQ_SYNC_SLOTS * sizeof(struct seq_sync), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mon_seq.sync == MAP_FAILED) {
		mon_seq.sync = NULL;
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
	err = create(&mon_seq.merger, &attr, mon_seq_merger_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		mon_log("ordered simulation off: cannot start the merger thread (%s)", strerror(err));
		return AMEBA_ENOMEM;
	}
	atexit(seq_atexit);
	__atomic_store_n(&mon_seq.engaged, 1, __ATOMIC_RELEASE);
	return 0;
}

void mon_seq_after_fork(void)
{
	/* The merger did not survive the fork. The child's one thread goes back
	 * to simulating its own accesses (what its log held is not counted). */
	if (!mon_seq_engaged())
		return;
	__atomic_store_n(&mon_seq.engaged, 0, __ATOMIC_RELEASE);
	if (mon_self)
		mon_self->seq = NULL;
	mon_seq.logs = NULL;
}
