/*
 * tally.c - the hooks' side of sampled mode (docs/simulator.md, "Sampled
 * simulation"): the per-thread tally slots, the slot each thread finds on
 * its first access, the due a thread reaches between bursts, the futex
 * word through which it wakes the controller (sampled.c), and the rings of
 * addresses a thread replays before a warm-up (mon.h, MON_RING_LEN).
 *
 * Everything here may run inside any hook: inside malloc, a signal handler,
 * or while the controller waits for the thread's log. So no lock and no
 * allocation: the table is mapped once by mon_sampled_start, before the
 * hooks tally, and errno is kept across the wake-up.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mon.h"

struct mon_tally *mon_tally_tab;
uint64_t *mon_ring_tab;
__thread struct mon_tally *mon_tslot;
static struct mon_tally tslot_none;	/* ids from MON_TALLY_MAX on: nobody reads it */

/*
 * The controller sleeps through a gap on this futex word: bit 0 set by the
 * first thread that reached its due (the hooks cannot take the controller's
 * lock), and 2 added by anything else that wakes it (sampled.c's poke).
 */
uint32_t mon_smp_word;

int mon_tally_alloc(void)
{
	void *p, *r;

	if (__atomic_load_n(&mon_tally_tab, __ATOMIC_ACQUIRE))
		return 0;
	p = mmap(NULL, (size_t)MON_TALLY_MAX * sizeof(struct mon_tally), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	/* 16 MiB reserved, a thread's 64 KiB touched as it fills its ring;
	 * none: no replay */
	r = mmap(NULL, (size_t)MON_RING_THREADS * MON_RING_LEN * sizeof(uint64_t),
		 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r != MAP_FAILED)
		__atomic_store_n(&mon_ring_tab, (uint64_t *)r, __ATOMIC_RELEASE);
	__atomic_store_n(&mon_tally_tab, (struct mon_tally *)p, __ATOMIC_RELEASE);
	return 0;
}

/* Sets and returns mon_tslot for thread t (NULL: t NULL or no table yet,
 * not cached; a thread whose id has no slot gets one that nobody reads). */
static struct mon_tally *tslot_find(const struct mon_thread *t)
{
	struct mon_tally *c = __atomic_load_n(&mon_tally_tab, __ATOMIC_ACQUIRE);

	if (!t || !c)
		return NULL;
	return mon_tslot = t->id < MON_TALLY_MAX ? &c[t->id] : &tslot_none;
}

void mon_tally_first(uintptr_t addr, uintptr_t mix, uint64_t n)
{
	if (tslot_find(mon_self))
		mon_tally_add(addr, mix, n);
}

/* The ring of the thread whose slot is s (NULL: none). */
static uint64_t *ring_of(const struct mon_tally *s)
{
	uint64_t *r = __atomic_load_n(&mon_ring_tab, __ATOMIC_RELAXED);

	if (!r || s == &tslot_none)
		return NULL;
	return r + ((size_t)(s - mon_tally_tab) & (MON_RING_THREADS - 1)) * MON_RING_LEN;
}

/*
 * The controller asked (mon_tally_replay_ask, below): the thread's ring,
 * oldest first, through the simulator as 8-byte reads - not counted (a
 * warm-up's counts never are), not tallied (they are not the program's),
 * and not made while the ordered mode is engaged (the controller does not
 * ask then; docs/simulator.md, "The replay"). It stops
 * as soon as the controller takes the request back (the warm-up ends), so
 * that no replayed access falls in a measured burst but the one under way.
 */
static void replay(struct mon_tally *s, const uint64_t *r)
{
	struct mon_thread *t = mon_self;
	uint32_t end = s->rpos, n = end < MON_RING_LEN ? end : MON_RING_LEN, i;
	uint32_t want = MON_REPLAY_ASKED;

	if (!__atomic_compare_exchange_n(&s->replay, &want, MON_REPLAY_BUSY, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return;
	for (i = end - n; t && !t->ignore && i != end; i++) {
		if (__atomic_load_n(&s->replay, __ATOMIC_ACQUIRE) != MON_REPLAY_BUSY)
			break;
		mon_access(r[i & (MON_RING_LEN - 1)] & ~(uintptr_t)7, 8, MON_ACC_READ | MON_ACC_WARM, 0);
	}
	s->replayed += i - (end - n);
	want = MON_REPLAY_BUSY;
	__atomic_compare_exchange_n(&s->replay, &want, MON_REPLAY_NONE, 0, __ATOMIC_RELEASE,
				    __ATOMIC_RELAXED);
}

void mon_tally_check(struct mon_tally *s, uintptr_t addr)
{
	uint64_t *r = ring_of(s);

	if (r) {
		/* a loop whose trip count is a multiple of 256 would have every
		 * lane cross at the same addresses pass after pass: 0-255
		 * counts move from one lane to another (the sum stays exact;
		 * taken first, so that a reader in between sees a little less,
		 * never more), and the next crossings fall anywhere */
		uint32_t k = s->rpos++;
		uint64_t m = ((k + (uint64_t)addr) * 0x9E3779B97F4A7C15ull) >> 56;
		uint64_t *from = &s->lane[k & (MON_TALLY_LANES - 1)];
		uint64_t *to = &s->lane[(k + 1) & (MON_TALLY_LANES - 1)];
		uint64_t f = __atomic_load_n(from, __ATOMIC_RELAXED);

		if (f >= m) {
			__atomic_store_n(from, f - m, __ATOMIC_RELAXED);
			__atomic_store_n(to, __atomic_load_n(to, __ATOMIC_RELAXED) + m,
					 __ATOMIC_RELAXED);
		}
		r[k & (MON_RING_LEN - 1)] = addr;
		if (mon_unlikely(__atomic_load_n(&s->replay, __ATOMIC_RELAXED) == MON_REPLAY_ASKED))
			replay(s, r);
	}
	/* due - 1 wraps when 0 (none): never reached */
	if (mon_tally_sum(s) > __atomic_load_n(&s->due, __ATOMIC_RELAXED) - 1)
		mon_sampled_due(s);
}

void mon_smp_word_wake(void)
{
	int e = errno;

	syscall(SYS_futex, &mon_smp_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	errno = e;
}

void mon_sampled_due(struct mon_tally *c)
{
	/* once per gap and thread: the controller sets the next due */
	__atomic_store_n(&c->due, 0, __ATOMIC_RELAXED);
	if (!(__atomic_fetch_or(&mon_smp_word, 1, __ATOMIC_SEQ_CST) & 1))
		mon_smp_word_wake();
}

size_t mon_sampled_range(const struct mon_thread *t, uintptr_t addr, size_t sz)
{
	uint64_t n = mon_lines_of(addr, sz);
	struct mon_tally *s = mon_tally_tab;

	if (n <= MON_RANGE_HEAD || __atomic_load_n(&mon_hot.tally, __ATOMIC_RELAXED) || !t || !s ||
	    t->id >= MON_TALLY_MAX)
		return mon_sampled_skip(t, n, addr, addr) ? 0 : sz;
	s += t->id;
	__atomic_store_n(&s->sim, __atomic_load_n(&s->sim, __ATOMIC_RELAXED) + MON_RANGE_HEAD,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&s->lane[0],
			 __atomic_load_n(&s->lane[0], __ATOMIC_RELAXED) + n - MON_RANGE_HEAD,
			 __ATOMIC_RELAXED);
	return (((addr >> MON_LINE_SHIFT) + MON_RANGE_HEAD) << MON_LINE_SHIFT) - addr;
}

/* 1 when thread id's state is R (running or waiting for a CPU, not
 * asleep); 0 when it cannot tell (exited, no record) */
static int thread_runnable(uint32_t id)
{
	const struct mon_thread *t = mon_thread_get(id);

	return t && t->tid > 0 && mon_tid_state(t->tid) == 'R';
}

/*
 * The controller's side of the replay (sampled.c's cycle; docs/simulator.md,
 * "The replay"). Before a warm-up, while the threads still tally, each of
 * the nr slots that tallied in the gap is asked to replay its ring at its
 * next lane crossing; the warm-up begins when all are done, or after
 * max_us (a thread that went to sleep, or a long replay). A thread still
 * asked then that is waiting for a CPU (a loaded host: it was preempted,
 * and would simulate its next burst cold) is waited for until late_us; one
 * asleep is not. A thread still replaying
 * goes on into the warm-up; the warm-up's end takes every request back
 * (mon_tally_replay_end). The replay stands in for the warming SMARTS gets
 * by simulating the caches through the gaps: a 2 ms warm-up refills an L1
 * but not a 2 MiB L2, and gemm_blocked's C, whose rows the L2 keeps across
 * a 1.6M-access sweep, had 6-8 times its exact L2 misses. lock (held) is
 * let go while it waits; *stop ends the wait. Returns the microseconds it
 * took.
 */
uint64_t mon_tally_replay_ask(uint32_t nr, pthread_mutex_t *lock, const int *stop, uint64_t max_us,
			      uint64_t late_us)
{
	uint64_t t0 = mon_mono_ns(), end = t0 + max_us * 1000, late = t0 + late_us * 1000;
	uint32_t asked = 0;

	for (uint32_t i = 0; mon_ring_tab && i < nr; i++) {
		struct mon_tally *c = &mon_tally_tab[i];

		if (mon_tally_sum(c) > c->gc && c->rpos) {
			__atomic_store_n(&c->replay, MON_REPLAY_ASKED, __ATOMIC_RELEASE);
			asked++;
		}
	}
	while (asked && !*stop) {
		struct timespec ts = { 0, 100000 };
		uint64_t now = mon_mono_ns();

		if (now >= end) {
			/* past the warm-up's share: only for a thread asked
			 * and not yet replaying that waits for a CPU */
			uint32_t ready = 0;

			for (uint32_t i = 0; now < late && i < nr && !ready; i++)
				ready = __atomic_load_n(&mon_tally_tab[i].replay, __ATOMIC_ACQUIRE) ==
						MON_REPLAY_ASKED &&
					thread_runnable(i);
			if (!ready)
				break;
		}
		pthread_mutex_unlock(lock);
		nanosleep(&ts, NULL);
		pthread_mutex_lock(lock);
		asked = 0;
		for (uint32_t i = 0; i < nr; i++)
			asked += __atomic_load_n(&mon_tally_tab[i].replay, __ATOMIC_ACQUIRE) !=
				 MON_REPLAY_NONE;
	}
	return (mon_mono_ns() - t0) / 1000;
}

void mon_tally_replay_end(uint32_t nr)
{
	for (uint32_t i = 0; mon_ring_tab && i < nr; i++) {
		struct mon_tally *c = &mon_tally_tab[i];

		if (__atomic_load_n(&c->replay, __ATOMIC_RELAXED) != MON_REPLAY_NONE)
			__atomic_store_n(&c->replay, MON_REPLAY_NONE, __ATOMIC_RELEASE);
	}
}

/*
 * Bursts placed in accesses (the controller's side; sampled.c's cycle).
 * Placed in time alone, a burst falls in a stretch of the run with the
 * odds of its wall time, while its ratio is scaled to accesses: a stretch
 * that makes many accesses quickly (a memset, a vectorised sweep, a final
 * pass over a table) was seen by a burst seldom, and the slower stretch's
 * ratio was given to its accesses (graphwalk: the last pass over its visit
 * counters, 7% of the accesses in 5 ms after the last burst, got the random
 * walk's misses: +11% on all L1D misses at SCALE 1). So each thread is
 * given a due, its tally when the gap would end at the rate it had in the
 * last gap, and the first to reach it starts the burst (the caller doubles
 * the time limit: a thread that slows down ends the gap by the time limit
 * or the rate step). A thread that made fewer than DUE_MIN accesses in a
 * gap's length gets none (one asleep would start a burst with its first
 * access).
 */
#define DUE_MIN 4096.0

uint32_t mon_tally_dues_arm(uint32_t nr, uint64_t span_ns, uint64_t g_us)
{
	uint32_t armed = 0;

	__atomic_and_fetch(&mon_smp_word, ~1u, __ATOMIC_SEQ_CST);
	for (uint32_t i = 0; i < nr; i++) {
		struct mon_tally *c = &mon_tally_tab[i];
		uint64_t t = mon_tally_sum(c);
		double want = span_ns && c->wc > c->gc ? (double)(c->wc - c->gc) * (double)g_us *
								 1000.0 / (double)span_ns
						       : 0;

		c->gc = t;
		__atomic_store_n(&c->due, want >= DUE_MIN ? t + (uint64_t)want : 0,
				 __ATOMIC_RELAXED);
		armed += want >= DUE_MIN;
	}
	return armed;
}

void mon_tally_gap_end(uint32_t nr)
{
	for (uint32_t i = 0; i < nr; i++) {
		struct mon_tally *c = &mon_tally_tab[i];

		__atomic_store_n(&c->due, 0, __ATOMIC_RELAXED);
		c->wc = mon_tally_sum(c);
	}
}

void mon_tally_warm_begin(uint32_t nr)
{
	for (uint32_t i = 0; i < nr; i++)
		mon_tally_tab[i].ws = __atomic_load_n(&mon_tally_tab[i].sim, __ATOMIC_RELAXED);
}

int mon_tally_wait(uint64_t us, pthread_mutex_t *lock, const int *stop, const int *kick)
{
	uint64_t end = mon_mono_ns() + us * 1000;

	for (;;) {
		uint32_t w = __atomic_load_n(&mon_smp_word, __ATOMIC_ACQUIRE);
		uint64_t now = mon_mono_ns();
		struct timespec rel;

		if (*stop)
			return 1;
		if (*kick || now >= end)
			return 0;
		if (w & 1)
			return 2;
		rel.tv_sec = (time_t)((end - now) / 1000000000u);
		rel.tv_nsec = (long)((end - now) % 1000000000u);
		pthread_mutex_unlock(lock);
		syscall(SYS_futex, &mon_smp_word, FUTEX_WAIT_PRIVATE, w, &rel, NULL, 0);
		pthread_mutex_lock(lock);
	}
}
