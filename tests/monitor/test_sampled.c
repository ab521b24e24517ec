/*
 * test_sampled.c - sampled mode of the runtime (monitor/sampled.c), driven
 * through the real hooks (__tsan_read8: the tally counts there) by threads
 * whose accesses are known, so that every estimate has an exact value to be
 * compared with.
 *
 *   A: 64 KiB, B: 128 KiB (static). A worker reads A[i] once and B[j] twice
 *   per step, sequentially and wrapping, so mem_ref on A is exactly a third
 *   of the accesses to A and B, in every burst.
 *
 * Cases:
 *   steady     2 workers, sampled from the arm: the mem_ref estimates are
 *              within their 95% interval (x 1.5, and 3%) of the exact
 *              counts, A's share is 1/3 within 0.01, bursts and fraction
 *              are sane, deltas add up to the values;
 *   churn      200 threads created and exiting while bursts run, then
 *              one until two more bursts are measured: the estimate of
 *              A within 1% of the exact count (a burst the ordered
 *              mode's cut or a starved CPU left nearly empty decides
 *              nothing);
 *   swaps      a swap every 30 ms, two counters going on, two not: summed
 *              over the sets, each within 1% of the exact count (a swap
 *              waits for a ratio for the counters that end);
 *   ranges     a worker alternating 15 ms of 1 KiB range writes
 *              (__tsan_write_range: 16 lines each) and 15 ms of plain
 *              reads: mem_ref over all within 1% of the exact count (a
 *              range tallies as the lines it covers, as it is simulated;
 *              tallied as one access, the estimate was 5% of the count).
 *              The range's own count is printed, not checked: it came
 *              out 5-13% low on an idle host, 24-85% low with both CPUs
 *              busy (docs/simulator.md, Sampled simulation);
 *   placed     bursts placed in accesses (the default lengths, 20/2/4
 *              ms): a worker alternating 150 ms of slow reads of A (one
 *              per ~0.3 us) and a fast pass of 1,000,000 reads of B (a
 *              few ms), six times: a burst runs during 4 passes of 6 at
 *              least (6 of 6 idle or with both CPUs busy; 4 once with
 *              three CPU hogs: the controller woken by the due waited for
 *              a CPU past the pass's end); B's count is printed (idle: 6-24% low; with the
 *              host busy once 76% low, so not checked). Run first with
 *              bursts placed in time, for comparison, printed and not
 *              checked: 3-5 passes of 6 on an idle host (up to 6 when the
 *              host is busy and passes last longer), B 14-66% low;
 *   share      a cycle that simulates over 6% of the accesses at first
 *              (20 ms bursts every 3 ms): the gaps' stretch rises over
 *              1.5 and the share falls, bursts still coming;
 *   time       a cycle that spends a third of the wall time simulating
 *              has its gaps stretched to its time mark (0.12 here), and
 *              further while its estimates are precise;
 *   fork       20 forks at random moments: the child is not sampled (no
 *              controller survived), counts its own, exits 0;
 *   midway     sampled mode started while a set already counted exactly:
 *              the exact counts so far are kept (values never drop);
 *   exit       a burst of 10 s being measured when the program "exits"
 *              (mon_sampled_exit): the burst so far counts, the last
 *              reading has one burst and an estimate within 3%.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "mon.h"
#include "seq.h"

void __tsan_read8(const volatile void *addr);

static uint64_t A[64 * 1024 / 8] __attribute__((aligned(64)));
static uint64_t B[128 * 1024 / 8] __attribute__((aligned(64)));

struct worker {
	pthread_t th;
	uint64_t steps;		/* to do; 0: until stop */
	volatile int *stop;
	uint64_t done;		/* steps done */
};

static void step(uint64_t k)
{
	__tsan_read8(&A[k % (sizeof(A) / 8)]);
	__tsan_read8(&B[(2 * k) % (sizeof(B) / 8)]);
	__tsan_read8(&B[(2 * k + 1) % (sizeof(B) / 8)]);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t k = 0;

	while (w->steps ? k < w->steps : !*w->stop) {
		step(k++);
		if (!(k & 1023))	/* progress, for test_swaps (not an access) */
			__atomic_store_n(&w->done, k, __ATOMIC_RELAXED);
	}
	w->done = k;
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

enum { C_A, C_B, C_ALL, C_MISS, NR_C };

static struct mon_range ra, rb;
static struct mon_cond_spec specs[NR_C];

static void specs_init(void)
{
	ra = (struct mon_range){ (uintptr_t)A, (uintptr_t)A + sizeof(A) };
	rb = (struct mon_range){ (uintptr_t)B, (uintptr_t)B + sizeof(B) };
	specs[C_A] = (struct mon_cond_spec){ .metric = AMEBA_M_MEM_REF, .nr_ranges = 1, .ranges = &ra };
	specs[C_B] = (struct mon_cond_spec){ .metric = AMEBA_M_MEM_REF, .nr_ranges = 1, .ranges = &rb };
	specs[C_ALL] = (struct mon_cond_spec){ .metric = AMEBA_M_MEM_REF };
	specs[C_MISS] = (struct mon_cond_spec){ .metric = AMEBA_M_L1D_MISS };
}

static uint64_t arm(void)
{
	uint64_t gen = 0;

	CHECK(mon_cond_arm(specs, NR_C, &gen) == 0);
	mon_sampled_armed(gen, NR_C, NULL);
	return gen;
}

/* the time mark off: a loaded host stretched these short gaps (a replay
 * waiting up to 3 ms for a thread off the CPU) to 14 bursts in 0.9 s, and
 * these cases check the estimates, not the cost (test_time does) */
static const struct mon_sampled_cfg fast = { .period_us = 3000, .warm_us = 300, .burst_us = 400,
					     .seed = 7, .time_max = 1 };

/* |got - want| within 1.5 x its interval and rel of want */
static int near(double got, double want, double ci, double rel)
{
	double d = got > want ? got - want : want - got;

	if (d <= rel * want || (ci >= 0 && d <= 1.5 * ci))
		return 1;
	fprintf(stderr, "  estimate %.0f, exact %.0f (+-%.0f, %.1f%%)\n", got, want, ci,
		100 * d / want);
	return 0;
}

static void test_steady(void)
{
	volatile int stop = 0;
	struct worker w[2] = { { .stop = &stop }, { .stop = &stop } };
	uint64_t total[NR_C], gen, sum_delta[NR_C] = { 0 }, prev[NR_C] = { 0 }, exact;
	double ci[NR_C], ci_d[NR_C];
	struct mon_sampled_info info;

	gen = arm();
	CHECK(mon_sampled_start(&fast) == 0);
	CHECK(mon_sampled_start(&fast) == AMEBA_EBUSY);
	for (int i = 0; i < 2; i++)
		pthread_create(&w[i].th, NULL, work, &w[i]);
	for (int r = 0; r < 6; r++) {
		sleep_ms(150);
		CHECK(mon_sampled_read(gen, total, NULL, NR_C, NULL, NULL) == 0);
		for (int i = 0; i < NR_C; i++) {
			CHECK(total[i] >= prev[i]);	/* values only grow */
			sum_delta[i] += total[i] - prev[i];
			prev[i] = total[i];
		}
	}
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(w[i].th, NULL);
	/* the accesses after the last read: one more reading takes them */
	sleep_ms(20);
	CHECK(mon_sampled_read(gen, total, NULL, NR_C, NULL, NULL) == 0);
	CHECK(mon_sampled_ci(gen, ci, ci_d, NR_C, &info) == 0);
	exact = w[0].done + w[1].done;
	CHECK(near((double)total[C_A], (double)exact, ci[C_A], 0.03));
	CHECK(near((double)total[C_B], 2.0 * exact, ci[C_B], 0.03));
	CHECK(near((double)total[C_ALL], 3.0 * exact, ci[C_ALL], 0.03));
	CHECK(fabs((double)total[C_A] / (total[C_A] + total[C_B]) - 1.0 / 3) < 0.01);
	CHECK(ci[C_ALL] > 0 && ci[C_ALL] < 0.1 * total[C_ALL]);
	CHECK(info.bursts >= 15);
	CHECK(info.fraction > 0 && info.fraction < 0.5);
	/* misses: A and B (192 KiB) do not fit the 48 KiB L1D: one per line */
	CHECK(total[C_MISS] > total[C_ALL] / 16 && total[C_MISS] < total[C_ALL] / 4);
	fprintf(stderr, "steady: %" PRIu64 " steps, mem_ref %" PRIu64 " +-%.0f (exact %" PRIu64
		"), %u bursts, %.2f%% simulated\n", exact, total[C_ALL], ci[C_ALL], 3 * exact,
		info.bursts, 100 * info.fraction);
}

/* Usable bursts measured since the start (mon_sampled_info.bursts). */
static uint32_t bursts_now(uint64_t gen)
{
	struct mon_sampled_info info = { 0 };

	CHECK(mon_sampled_ci(gen, NULL, NULL, NR_C, &info) == 0);
	return info.bursts;
}

static void test_churn(void)
{
	volatile int stop = 0;
	struct worker w[8], tail = { .stop = &stop };
	uint64_t total[NR_C], gen, exact = 0;
	double ci[NR_C];
	uint32_t seen;

	gen = arm();
	for (int round = 0; round < 25; round++) {
		for (int i = 0; i < 8; i++) {
			w[i] = (struct worker){ .steps = 20000 };
			pthread_create(&w[i].th, NULL, work, &w[i]);
		}
		for (int i = 0; i < 8; i++) {
			pthread_join(w[i].th, NULL);
			exact += w[i].done;
		}
	}
	/* then one thread until two more bursts are measured: on a busy
	 * host the churn's bursts may all be nearly empty (the threads
	 * starved, the ordered mode's cut), and what waits needs a ratio */
	seen = bursts_now(gen);
	pthread_create(&tail.th, NULL, work, &tail);
	for (int k = 0; k < 2000 && bursts_now(gen) < seen + 2; k++)
		sleep_ms(5);
	stop = 1;
	pthread_join(tail.th, NULL);
	exact += tail.done;
	mon_sampled_swap(NULL, 0);	/* the set ends: all that waits counts */
	CHECK(mon_sampled_read(gen, total, NULL, NR_C, NULL, NULL) == 0);
	CHECK(mon_sampled_ci(gen, ci, NULL, NR_C, NULL) == 0);
	CHECK(near((double)total[C_A], (double)exact, -1, 0.01));
	fprintf(stderr, "churn: 200 threads, A %" PRIu64 " +-%.0f (exact %" PRIu64 ")\n", total[C_A],
		ci[C_A], exact);
}

/*
 * Swaps every 30 ms, as an agent re-arms each interval (after 100 ms of a
 * set for the workers' start, not counted): A and B keep their
 * keys (they go on: the accesses waiting at the swap pass to the new set),
 * C_ALL and C_MISS get new keys each time (they end: the swap has a burst
 * measured first, and the rest is estimated by it). Summed over the sets,
 * each counter is within 1% of the exact count.
 */
static void test_swaps(void)
{
	volatile int stop = 0;
	struct worker w[2] = { { .stop = &stop }, { .stop = &stop } };
	uint64_t total[NR_C], gen, keys[NR_C] = { 11, 22, 0, 0 }, exact, start;
	double sum[NR_C] = { 0 };
	struct mon_sampled_info info;

	keys[C_ALL] = 1000;
	keys[C_MISS] = 2000;
	/* the workers first, and a set for their start: while threads are
	 * being born the ordered mode's cut can leave every burst of tens of
	 * milliseconds nearly empty, and a set with no usable burst has
	 * nothing to estimate its counters by (docs/simulator.md) */
	CHECK(mon_cond_arm(specs, NR_C, &gen) == 0);
	mon_sampled_armed(gen, NR_C, NULL);
	for (int i = 0; i < 2; i++)
		pthread_create(&w[i].th, NULL, work, &w[i]);
	sleep_ms(100);
	mon_sampled_swap(NULL, 0);
	CHECK(mon_sampled_read(gen, total, NULL, NR_C, NULL, NULL) == 0);
	/* the next set takes what the workers do from the last reading on */
	start = __atomic_load_n(&w[0].done, __ATOMIC_RELAXED) +
		__atomic_load_n(&w[1].done, __ATOMIC_RELAXED);
	CHECK(mon_cond_arm(specs, NR_C, &gen) == 0);
	mon_sampled_armed(gen, NR_C, keys);
	for (int r = 1; r <= 20; r++) {
		sleep_ms(30);
		keys[C_ALL] = 1000 + r;
		keys[C_MISS] = 2000 + r;
		mon_sampled_swap(keys, NR_C);
		CHECK(mon_sampled_read(gen, total, NULL, NR_C, NULL, NULL) == 0);
		for (int i = 0; i < NR_C; i++)
			sum[i] += (double)total[i];
		CHECK(mon_cond_arm(specs, NR_C, &gen) == 0);
		mon_sampled_armed(gen, NR_C, keys);
	}
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(w[i].th, NULL);
	mon_sampled_swap(NULL, 0);	/* the last set ends: all of it counts */
	CHECK(mon_sampled_read(gen, total, NULL, NR_C, NULL, NULL) == 0);
	CHECK(mon_sampled_ci(gen, NULL, NULL, NR_C, &info) == 0);
	for (int i = 0; i < NR_C; i++)
		sum[i] += (double)total[i];
	exact = w[0].done + w[1].done - start;
	CHECK(near(sum[C_A], (double)exact, -1, 0.01));
	CHECK(near(sum[C_B], 2.0 * exact, -1, 0.01));
	CHECK(near(sum[C_ALL], 3.0 * exact, -1, 0.01));
	CHECK(info.bursts >= 15);	/* one at least per swap */
	fprintf(stderr, "swaps: A %.0f B %.0f all %.0f (exact %" PRIu64 " %" PRIu64 " %" PRIu64
		"), %u bursts\n", sum[C_A], sum[C_B], sum[C_ALL], exact, 2 * exact, 3 * exact,
		info.bursts);
}

void __tsan_write_range(const volatile void *addr, unsigned long sz);

static uint64_t R[256 * 1024 / 8] __attribute__((aligned(64)));

struct ranger {
	pthread_t th;
	volatile int *stop;
	uint64_t ranges, reads;	/* done: 4 KiB range writes, plain reads */
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *ranger_work(void *arg)
{
	struct ranger *w = arg;
	uint64_t k = 0, n = 0;

	while (!*w->stop) {
		double t0 = now_ms();

		/* phase 1: range writes; phase 2: reads of A and B */
		while (now_ms() - t0 < 15 && !*w->stop)
			for (int i = 0; i < 64; i++, k++)
				__tsan_write_range(&R[(k % 256) * 128], 1024);
		t0 = now_ms();
		while (now_ms() - t0 < 15 && !*w->stop)
			for (int i = 0; i < 1024; i++)
				step(n++);
	}
	w->ranges = k;
	w->reads = 3 * n;
	return NULL;
}

static void test_ranges(void)
{
	volatile int stop = 0;
	struct ranger w = { .stop = &stop };
	struct mon_range rr = { (uintptr_t)R, (uintptr_t)R + sizeof(R) };
	struct mon_cond_spec sp[2] = {
		{ .metric = AMEBA_M_MEM_REF },
		{ .metric = AMEBA_M_MEM_REF, .nr_ranges = 1, .ranges = &rr },
	};
	uint64_t total[2], gen;
	double ci[2];

	CHECK(mon_cond_arm(sp, 2, &gen) == 0);
	mon_sampled_armed(gen, 2, NULL);
	pthread_create(&w.th, NULL, ranger_work, &w);
	sleep_ms(600);
	stop = 1;
	pthread_join(w.th, NULL);
	mon_sampled_swap(NULL, 0);	/* the set ends: all that waits counts */
	CHECK(mon_sampled_read(gen, total, NULL, 2, NULL, NULL) == 0);
	CHECK(mon_sampled_ci(gen, ci, NULL, 2, NULL) == 0);
	CHECK(near((double)total[0], 16.0 * w.ranges + w.reads, -1, 0.01));
	fprintf(stderr, "ranges: all %" PRIu64 " (exact %" PRIu64 "), range %" PRIu64
		" +-%.0f (exact %" PRIu64 ")\n", total[0], 16 * w.ranges + w.reads, total[1],
		ci[1], 16 * w.ranges);
}

struct phased {
	pthread_t th;
	uint64_t slow, fast;	/* done: reads of A, of B */
	int caught;		/* fast passes during which a burst ran */
};

static void *phased_work(void *arg)
{
	struct phased *w = arg;
	volatile uint64_t spin = 0;

	for (int round = 0; round < 6; round++) {
		double t0 = now_ms();

		while (now_ms() - t0 < 150)
			for (int i = 0; i < 64; i++, w->slow++) {
				__tsan_read8(&A[w->slow % (sizeof(A) / 8)]);
				for (int j = 0; j < 200; j++)	/* no access: ~1 us */
					spin++;
			}
		int seen = 0;

		for (int i = 0; i < 1000000; i++, w->fast++) {
			__tsan_read8(&B[w->fast % (sizeof(B) / 8)]);
			if (!(i & 4095) && !__atomic_load_n(&mon_hot.tally, __ATOMIC_RELAXED))
				seen = 1;	/* a warm-up or burst (not an access) */
		}
		w->caught += seen;
	}
	return NULL;
}

static void test_placed(int in_time)
{
	/* the time mark off: the placement is the subject, not the cost */
	const struct mon_sampled_cfg deflt = { .period_us = 20000, .warm_us = 2000,
					       .burst_us = 4000, .seed = 11, .in_time = in_time,
					       .time_max = 1 };
	struct phased w = { 0 };
	uint64_t total[NR_C], gen;
	double ci[NR_C];

	CHECK(mon_sampled_start(&deflt) == 0);
	gen = arm();
	pthread_create(&w.th, NULL, phased_work, &w);
	pthread_join(w.th, NULL);
	mon_sampled_swap(NULL, 0);	/* the set ends: all that waits counts */
	CHECK(mon_sampled_read(gen, total, NULL, NR_C, NULL, NULL) == 0);
	CHECK(mon_sampled_ci(gen, ci, NULL, NR_C, NULL) == 0);
	CHECK(near((double)total[C_ALL], (double)(w.slow + w.fast), -1, 0.01));
	/* 5-6 of 6 idle; 4-5 with three CPU hogs, where the controller woke by
	 * a due may not get a CPU before the pass ends */
	if (!in_time)
		CHECK(w.caught >= 4);
	fprintf(stderr, "placed in %s: %d of 6 fast passes had a burst; B %" PRIu64
		" +-%.0f (exact %" PRIu64 "), A %" PRIu64
		" +-%.0f (exact %" PRIu64 ")\n", in_time ? "time" : "accesses", w.caught, total[C_B], ci[C_B],
		w.fast, total[C_A], ci[C_A],
		w.slow);
	mon_sampled_stop();
}

static void test_fork(void)
{
	volatile int stop = 0;
	struct worker w = { .stop = &stop };

	pthread_create(&w.th, NULL, work, &w);
	for (int i = 0; i < 20; i++) {
		pid_t pid;
		int status = -1;

		sleep_ms(rand() % 7);
		pid = fork();
		if (pid == 0) {
			/* no controller here: every access is simulated again */
			uint64_t gen = 0;
			uint64_t total[NR_C];
			int ok = !mon_sampled_on() && !mon_hot.tally;

			ok &= mon_cond_arm(specs, NR_C, &gen) == 0;
			for (uint64_t k = 0; k < 1000; k++)
				step(k);
			ok &= mon_sampled_read(gen, total, NULL, NR_C, NULL, NULL) == 0;
			ok &= total[C_A] == 1000 && total[C_B] == 2000;
			_exit(ok ? 0 : 1);
		}
		CHECK(pid > 0);
		CHECK(waitpid(pid, &status, 0) == pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	stop = 1;
	pthread_join(w.th, NULL);
	CHECK(mon_sampled_on());
}

/*
 * A cycle that would simulate a large share (bursts of 20 ms after gaps of
 * 1.5-4.5 ms) has its gaps stretched. The first reading comes before any
 * stretch (gap_stretch works from the readings' counts); when it has over
 * 6% simulated (9-28% on an idle host), the stretch must rise above 1.5
 * and the share since the start fall below the first reading's. On an
 * idle host the share was at most 5% after 1.5 s (4.0-4.6%); with both
 * CPUs busy it stayed at 5-6% after 6 s (gaps ended early by the wandering
 * rate, docs/simulator.md), and the first reading had as little as 3.5%,
 * so neither is checked: printed.
 */
static void test_share(void)
{
	/* the time mark off: test_time has it */
	const struct mon_sampled_cfg heavy = { .period_us = 3000, .warm_us = 100, .burst_us = 20000,
					       .seed = 5, .time_max = 1 };
	volatile int stop = 0;
	struct worker w = { .stop = &stop };
	struct mon_sampled_info info;
	uint64_t total[NR_C], gen;
	double first = -1, stretch = 1;

	CHECK(mon_sampled_start(&heavy) == 0);
	gen = arm();
	pthread_create(&w.th, NULL, work, &w);
	for (int r = 0; r < 40; r++) {
		sleep_ms(50);
		CHECK(mon_sampled_read(gen, total, NULL, NR_C, NULL, NULL) == 0);
		CHECK(mon_sampled_ci(gen, NULL, NULL, NR_C, &info) == 0);
		if (first < 0 && info.bursts)
			first = info.fraction;
		if (info.stretch > stretch)
			stretch = info.stretch;
	}
	stop = 1;
	pthread_join(w.th, NULL);
	CHECK(mon_sampled_read(gen, total, NULL, NR_C, NULL, NULL) == 0);
	CHECK(mon_sampled_ci(gen, NULL, NULL, NR_C, &info) == 0);
	if (first > 0.06) {
		CHECK(stretch > 1.5);
		CHECK(info.fraction > 0 && info.fraction < first);
	}
	CHECK(stretch >= 1 && stretch <= 8);
	CHECK(info.bursts >= 15);
	CHECK(near((double)total[C_ALL], 3.0 * w.done, -1, 0.03));
	fprintf(stderr, "share: %.2f%% simulated at the first reading, %.2f%% after 2 s,"
		" stretch up to %.2f, %u bursts\n", 100 * first, 100 * info.fraction, stretch,
		info.bursts);
	mon_sampled_stop();
}

/*
 * The time marks (sampled.c, gap_stretch, gap_prec): a cycle of 2 ms bursts
 * every 10 ms (about a third of the wall time simulating, gaps ended early
 * by dues, few of the accesses: a simulated access costs tens of tallied
 * ones), its share taken over the second of two seconds (the first has the
 * unstretched windows):
 *   - noisy: the set counts L1D misses alone, and the worker switches at
 *     random between a 4 KiB array that hits and a 128 KiB sweep that
 *     misses the simulated L1 (but not the host's L2: a 1 MiB sweep ran
 *     natively 3 times slower than the hits on a host with 512 KiB of L2,
 *     each switch a rate step that ended the gap, and at 0.12 the stretch
 *     reached its limit with the share at 0.26), every 2,000-40,000
 *     accesses: burst to burst the ratio
 *     varies, the estimates are not precise (precision > SMP_PREC), and
 *     only the first mark holds: with the mark off the share stays over
 *     0.2 and the stretch near 1; at 0.12 the share falls under 0.18;
 *   - precise: the steady worker, whose largest counter (all accesses)
 *     has no error at all: at a mark of 0.3 the gaps stretch past it,
 *     towards the lower mark (0.3 x 0.45): the share under 0.2, against
 *     the noisy worker's over 0.2 at the same mark.
 * Measured (skylake-sp, a host with 512 KiB of L2; idle, and with two CPU
 * hogs): noisy, off 0.36-0.55, at 0.12 0.107-0.133 (stretch 4.5-6.6), at
 * 0.3 0.288-0.342 (1.4-2.3); precise at 0.3 0.142-0.150 (3.3-5.0).
 */
static uint64_t Big[128 * 1024 / 8] __attribute__((aligned(64)));

static void *noisy(void *arg)
{
	struct worker *w = arg;
	uint64_t k = 0, r = 0x9E3779B97F4A7C15ull, j = 0;

	while (!*w->stop) {
		uint64_t n;

		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		n = 2000 + r % 38000;
		if (r & (1ull << 40))
			for (uint64_t i = 0; i < n; i++, k++)
				__tsan_read8(&A[k % 512]);
		else
			for (uint64_t i = 0; i < n; i++, k++, j += 8)
				__tsan_read8(&Big[j % (sizeof(Big) / 8)]);
	}
	w->done = k;
	return NULL;
}

/* The share of the second second spent simulating, under mark m (1: off);
 * *stretch and *prec the gaps' stretch and the precision then. */
static double time_share_of(int precise, double m, double *stretch, double *prec)
{
	const struct mon_sampled_cfg c = { .period_us = 10000, .warm_us = 100, .burst_us = 2000,
					   .seed = 9, .time_max = m };
	const struct mon_cond_spec miss = { .metric = AMEBA_M_L1D_MISS };
	volatile int stop = 0;
	struct worker w = { .stop = &stop };
	struct mon_sampled_info info;
	uint64_t total[NR_C], gen = 0;
	uint32_t nr = precise ? NR_C : 1;
	double t0 = now_ms(), t1, t2, s1, share;

	CHECK(mon_sampled_start(&c) == 0);
	if (precise) {
		gen = arm();
	} else {
		CHECK(mon_cond_arm(&miss, 1, &gen) == 0);
		mon_sampled_armed(gen, 1, NULL);
	}
	pthread_create(&w.th, NULL, precise ? work : noisy, &w);
	sleep_ms(1000);
	CHECK(mon_sampled_ci(gen, NULL, NULL, nr, &info) == 0);
	t1 = now_ms() - t0;
	s1 = info.time_share;
	sleep_ms(1000);
	CHECK(mon_sampled_ci(gen, NULL, NULL, nr, &info) == 0);
	t2 = now_ms() - t0;
	share = (info.time_share * t2 - s1 * t1) / (t2 - t1);
	*stretch = info.stretch;
	*prec = info.precision;
	stop = 1;
	pthread_join(w.th, NULL);
	CHECK(mon_sampled_read(gen, total, NULL, nr, NULL, NULL) == 0);
	CHECK(mon_sampled_ci(gen, NULL, NULL, nr, &info) == 0);
	/* cycles of 10 ms stretched up to 8 times over 2 s: 25 at the
	 * fewest; under 20 once while the host compiled beside two tests.
	 * What is checked is that they go on */
	CHECK(info.bursts >= 10);
	if (precise)
		CHECK(near((double)total[C_ALL], 3.0 * w.done, -1, 0.03));
	mon_sampled_stop();
	return share;
}

/*
 * The mark lowers the share: below it, or, where a loaded host keeps the
 * share above it with the gaps already stretched the most they may be (8:
 * sampled_cost.c SMP_STRETCH_MAX; a clean CI saw 0.208 at 8.00 against
 * 0.401 off while its other jobs ran, 0.10-0.13 at 3.5-5.5 here beside two
 * busy loops), that stretch and a share still well under the one without
 * a mark.
 */
static int mark_held(double on, double k_on, double off)
{
	return (on < 0.18 || k_on > 7.99) && on < 0.7 * off && k_on > 1.5;
}

static void test_time(void)
{
	double off, on, p3, n3, k_off, k_on, k_p3, k_n3, q_off, q_on, q_p3, q_n3;

	off = time_share_of(0, 1, &k_off, &q_off);
	on = time_share_of(0, 0.12, &k_on, &q_on);
	if (!mark_held(on, k_on, off)) {
		/* the stretch follows the last 250 ms window's share, so a
		 * load that rises in the measured second leaves it behind:
		 * beside the suite's ctest -j2, 2 of 43 runs had 0.192 at
		 * 2.97 and 0.243 at 3.97 (off 0.31-0.34). Once more; a mark
		 * that does not act fails both */
		fprintf(stderr, "time: at 0.12 %.3f (stretch %.2f) against %.3f off: again\n", on,
			k_on, off);
		on = time_share_of(0, 0.12, &k_on, &q_on);
	}
	n3 = time_share_of(0, 0.3, &k_n3, &q_n3);
	p3 = time_share_of(1, 0.3, &k_p3, &q_p3);
	fprintf(stderr, "time: noisy: off %.3f of the second second simulating (stretch %.2f,"
		" precision %.3f), at 0.12 %.3f (%.2f, %.3f), at 0.3 %.3f (%.2f, %.3f);"
		" precise at 0.3: %.3f (%.2f, %.3f)\n", off, k_off, q_off, on, k_on, q_on, n3,
		k_n3, q_n3, p3, k_p3, q_p3);
	CHECK(q_off > 0.05 && q_on > 0.05 && q_n3 > 0.05);
	CHECK(q_p3 >= 0 && q_p3 < 0.05);
	CHECK(off > 0.2 && k_off < 1.3);
	CHECK(mark_held(on, k_on, off));
	/* the precise estimates' lower mark shows in the share, or, where a
	 * loaded host cut the gaps short (a preempted worker's rate step ends
	 * a gap: CI saw the precise share 0.230 at stretch 7.76 against the
	 * noisy 0.273 at 1.50), in a stretch well past the noisy one's. Not
	 * the stretch alone: the two workers cost the simulator differently
	 * per access (CI also saw 3.82 precise against 4.09 noisy, shares
	 * 0.134 / 0.323) */
	CHECK(n3 > 0.2 && k_p3 > 1.5);
	CHECK((p3 < 0.2 && p3 < 0.75 * n3) || k_p3 > 2 * k_n3);
}

static void test_midway_and_exit(void)
{
	const struct mon_sampled_cfg one = { .period_us = 10000000, .warm_us = 1000,
					     .burst_us = 10000000 };
	volatile int stop = 0;
	struct worker w = { .stop = &stop };
	uint64_t total[NR_C], gen, before;
	double ci[NR_C];
	struct mon_sampled_info info;

	/* exact first: 5000 steps on this thread */
	CHECK(mon_cond_arm(specs, NR_C, &gen) == 0);
	for (uint64_t k = 0; k < 5000; k++)
		step(k);
	mon_seq_sync();	/* ordered mode (threads ran): what was logged, merged */
	CHECK(mon_cond_read(gen, total, NULL, NR_C, NULL, NULL) == 0);
	CHECK_EQ_U64(total[C_A], 5000);
	before = total[C_A];
	/* sampled from here on, the set still armed; the burst starts at once
	 * and lasts 10 s: it is being measured when the program exits */
	CHECK(mon_sampled_start(&one) == 0);
	pthread_create(&w.th, NULL, work, &w);
	sleep_ms(300);
	stop = 1;
	pthread_join(w.th, NULL);
	mon_sampled_exit();
	CHECK(mon_sampled_read(gen, total, NULL, NR_C, NULL, NULL) == 0);
	CHECK(mon_sampled_ci(gen, ci, NULL, NR_C, &info) == 0);
	CHECK(info.bursts >= 1);	/* since sampled mode began: this one ended by the exit */
	CHECK(total[C_A] >= before);
	CHECK(near((double)total[C_A], (double)(before + w.done), -1, 0.03));
	fprintf(stderr, "midway+exit: A %" PRIu64 " (exact %" PRIu64 "), %u burst\n", total[C_A],
		before + w.done, info.bursts);
	mon_sampled_stop();
	CHECK(!mon_sampled_on());
}

/*
 * Sampled mode with cfg on a set armed before the worker starts (no exact
 * counts to start with); ms later a reading, of a set armed then when
 * rearm, into total and info; then the worker and sampled mode stop.
 * Returns how long the reading took, in ms.
 */
static double read_once(const struct mon_sampled_cfg *cfg, long ms, int rearm, uint64_t *total,
			struct mon_sampled_info *info)
{
	volatile int stop = 0;
	struct worker w = { .stop = &stop };
	uint64_t gen = arm();
	double t0, took;

	CHECK(mon_sampled_start(cfg) == 0);
	pthread_create(&w.th, NULL, work, &w);
	sleep_ms(ms);
	if (rearm)
		gen = arm();
	t0 = now_ms();
	CHECK(mon_sampled_read(gen, total, NULL, NR_C, NULL, NULL) == 0);
	took = now_ms() - t0;
	CHECK(mon_sampled_ci(gen, NULL, NULL, NR_C, info) == 0);
	stop = 1;
	pthread_join(w.th, NULL);
	mon_sampled_stop();
	return took;
}

/*
 * A set armed while a burst for the last one is measured: that burst
 * counts for neither, and a reading right after has one of the new set's
 * measured first (it once waited for the lost burst's end and read
 * nothing: an attach's first reading was empty, and the agent's chain,
 * due to hand over then, ended the search with an empty report).
 */
static void test_armed_in_burst(void)
{
	/* the first burst (10 s), for the first set, under way at 200 ms */
	const struct mon_sampled_cfg one = { .period_us = 10000000, .warm_us = 1000,
					     .burst_us = 10000000 };
	uint64_t total[NR_C];
	struct mon_sampled_info info;

	read_once(&one, 200, 1, total, &info);
	CHECK(info.bursts >= 1);
	CHECK(total[C_ALL] > 0 && total[C_A] > 0);
	fprintf(stderr, "armed in a burst: %u burst, mem_ref %" PRIu64 " at the first reading\n",
		info.bursts, total[C_ALL]);
}

/*
 * A reading's wait for the warm-up to end times out while the controller
 * holds the lock to begin the burst (draining the warm-up's logs took up
 * to 180 ms a cycle for four threads on a throttled host): by the time
 * the wait has the lock again the burst is under way, and the reading
 * has it measured. It once gave up there and read nothing: an attach's
 * last experiment (the threads strategy's) counted nothing, and its
 * report lacked the FalseSharing finding (CI, twice). slow_begin_us
 * stands for the slow drain: 300 ms past the reading's 120 ms bound.
 */
static void test_slow_begin(void)
{
	/* a 4 s period: the first burst (~0.33 s) is over, and no longer
	 * recent (a quarter period), at 1.6 s, and the next is 2 s or more
	 * after it (time_max 1: no stretch) */
	const struct mon_sampled_cfg slow = { .period_us = 4000000, .warm_us = 20000,
					      .burst_us = 4000, .time_max = 1,
					      .slow_begin_us = 300000 };
	uint64_t total[NR_C];
	struct mon_sampled_info info;
	double waited = read_once(&slow, 1600, 1, total, &info);

	CHECK(waited >= 250);	/* the reading did wait out the slow start */
	CHECK(total[C_ALL] > 0 && total[C_A] > 0);
	fprintf(stderr, "slow burst start: the reading waited %.0f ms, mem_ref %" PRIu64 "\n",
		waited, total[C_ALL]);
}

/*
 * A reading whose burst comes back empty while the set has none (in
 * ordered mode a merger waiting for a thread the host has not scheduled
 * simulates nothing: a third of the bursts of four threads at 0.7 CPU)
 * measures one more: it once read nothing, and an attach's last
 * experiment had no count. empty_bursts stands for the starved merger.
 */
static void test_empty_burst(void)
{
	/* the first burst, at the start, and the reading's come back empty;
	 * a 4 s period: the first is no longer recent (a quarter period) at
	 * 1.2 s, and the controller's next is 2 s or more after it */
	const struct mon_sampled_cfg starved = { .period_us = 4000000, .warm_us = 2000,
						 .burst_us = 4000, .time_max = 1,
						 .empty_bursts = 2 };
	uint64_t total[NR_C];
	struct mon_sampled_info info;

	read_once(&starved, 1200, 0, total, &info);
	CHECK(info.bursts_empty == 2);
	CHECK(total[C_ALL] > 0 && total[C_A] > 0);
	fprintf(stderr, "empty bursts: %u empty, mem_ref %" PRIu64 " at the reading\n",
		info.bursts_empty, total[C_ALL]);
}

int main(void)
{
	struct mon_sampled_cfg bad = fast;

	mon_init();
	CHECK(mon_activate("sim") == 0);
	specs_init();
	bad.period_us = 50;
	CHECK(mon_sampled_start(&bad) == AMEBA_EINVAL);
	CHECK(mon_sampled_start(NULL) == AMEBA_EINVAL);
	test_steady();
	test_churn();
	test_swaps();
	test_ranges();
	test_fork();
	mon_sampled_stop();
	CHECK(!mon_sampled_on() && !mon_hot.tally);
	test_placed(1);
	test_placed(0);
	test_share();
	test_time();
	test_midway_and_exit();
	test_armed_in_burst();
	test_slow_begin();
	test_empty_burst();
	return check_done();
}
