/*
 * test_replay.c - sampled mode's replay (monitor/tally.c, docs/simulator.md
 * "The replay"): before a warm-up each thread that tallied replays the
 * addresses its hooks kept through the gap, so that the simulated L2 holds
 * what the gap used rather than what the last burst left.
 *
 * One thread (the replay is for the host-order simulation; a second
 * thread would engage the ordered mode, where it is not done) sweeps 16
 * arrays of 256 KiB in turn, 50 times each, through the real hooks
 * (__tsan_read8): 4 MiB, twice the design preset's 2 MiB L2, so every
 * array misses the L2 on its first sweep only - 4,096 misses a turn.
 * Sampled with the replay and without (AMEBA_SAMPLED_REPLAY=0), the L2
 * misses of the sweeps are estimated and compared with that count.
 * Without the replay a burst finds the L2 as old bursts left it, and
 * most lines it reads first miss (3.6-8.6 times the exact count measured,
 * with a 20 us warm-up and 6 ms bursts); the replay keeps one access in
 * 256, so it warms the lines it sampled, about half of them here (8 reads
 * per line per sweep): 2.3-3.5 times. A third run checks the warm-up's
 * floor in accesses instead (no replay): 0.75-2.2 times (the floor may
 * take half a burst: 3 ms, a sweep even with both CPUs busy).
 * Checked: the replay ran before the warm-ups, a full ring each; it
 * changes no count of accesses (replayed reads are neither tallied nor
 * counted: the accesses' estimate within 1%); the L2 estimates are both
 * over the exact count and the replay's is the lower. Where a line is
 * read fewer than ~256 times in the ring's two million accesses the
 * replay warms little (docs/simulator.md, "The replay").
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "mon.h"

void __tsan_read8(const volatile void *addr);

#define ARRAYS 16
#define WORDS (256 * 1024 / 8)
#define SWEEPS 50
static uint64_t R[ARRAYS][WORDS] __attribute__((aligned(4096)));

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct outcome {
	double l2;		/* L2 misses estimated over the first sweeps' */
	double refs;		/* accesses estimated over those made */
	uint64_t replayed;	/* addresses the thread replayed */
	uint32_t bursts;
};

/* 1.5 s of sweeps, sampled. */
static struct outcome run(int on, int floor)
{
	/* a warm-up of 20 us simulates a few hundred accesses, whatever the
	 * host's speed: what warms the L2 is the replay or the floor alone
	 * (with 300 us the two runs' order depended on the host's speed) */
	const struct mon_sampled_cfg fast = { .period_us = 12000, .warm_us = 20, .burst_us = 6000,
					      .seed = 11 };
	struct mon_range rr = { (uintptr_t)R, (uintptr_t)R + sizeof(R) };
	struct mon_cond_spec sp[2] = {
		{ .metric = AMEBA_M_L2_MISS, .nr_ranges = 1, .ranges = &rr },
		{ .metric = AMEBA_M_MEM_REF, .nr_ranges = 1, .ranges = &rr },
	};
	struct mon_sampled_info info;
	struct outcome o = { 0 };
	uint64_t gen = 0, total[2] = { 0 }, turns = 0, before = 0;
	double end, exact;

	for (uint32_t i = 0; i < 64; i++)
		before += mon_tally_tab ? mon_tally_tab[i].replayed : 0;
	setenv("AMEBA_SAMPLED_REPLAY", on ? "1" : "0", 1);
	/* the floor: one sweep of an array (32,768 reads) */
	setenv("AMEBA_SAMPLED_WARM_MIN", floor ? "32768" : "0", 1);
	CHECK(mon_cond_arm(sp, 2, &gen) == 0);
	mon_sampled_armed(gen, 2, NULL);
	CHECK(mon_sampled_start(&fast) == 0);
	end = now_s() + 1.5;
	while (now_s() < end) {
		const uint64_t *x = R[turns++ % ARRAYS];

		for (int k = 0; k < SWEEPS; k++)
			for (uint32_t i = 0; i < WORDS; i++)
				__tsan_read8(&x[i]);
	}
	CHECK(mon_sampled_read(gen, total, NULL, 2, NULL, NULL) == 0);
	CHECK(mon_sampled_ci(gen, NULL, NULL, 2, &info) == 0);
	mon_sampled_stop();
	unsetenv("AMEBA_SAMPLED_REPLAY");
	unsetenv("AMEBA_SAMPLED_WARM_MIN");
	for (uint32_t i = 0; i < 64; i++)
		o.replayed += mon_tally_tab[i].replayed;
	o.replayed -= before;
	o.bursts = info.bursts;
	exact = (double)turns * (WORDS / 8);	/* a miss per line, first sweep */
	o.l2 = (double)total[0] / exact;
	o.refs = (double)total[1] / ((double)turns * SWEEPS * WORDS);
	fprintf(stderr, "replay %s, floor %s: %" PRIu64 " turns, %u bursts, %" PRIu64 " addresses replayed, "
		"L2 misses %" PRIu64 " (first sweeps' %.0f): %.2fx; accesses %.4fx\n",
		on ? "on" : "off", floor ? "on" : "off", turns, o.bursts, o.replayed, total[0], exact, o.l2, o.refs);
	return o;
}

int main(void)
{
	struct outcome on, off, fl;

	mon_init();
	CHECK(mon_activate("sim") == 0);
	/* the replay alone: the warm-up's floor in accesses off */
	on = run(1, 0);
	off = run(0, 0);
	/* the floor alone (docs/simulator.md, "Warm-up in accesses"): the
	 * warm-up goes on for a sweep of the array in use, so the burst finds
	 * it in the L2 */
	fl = run(0, 1);
	/* the replay ran before (nearly) every warm-up, a full ring each */
	CHECK(on.replayed >= (uint64_t)(on.bursts / 2) * MON_RING_LEN);
	CHECK(on.replayed <= (uint64_t)(on.bursts + 1) * MON_RING_LEN);
	CHECK(off.replayed == 0);
	/* replayed accesses are neither tallied nor counted */
	CHECK(on.refs > 0.99 && on.refs < 1.01);
	CHECK(off.refs > 0.99 && off.refs < 1.01);
	/* both over the first sweeps' misses; the replay's lower (0.54-0.74
	 * times the other's in six runs on the development VM) */
	CHECK(on.l2 > 1 && off.l2 > 1);
	CHECK(on.l2 < off.l2);
	CHECK(fl.refs > 0.99 && fl.refs < 1.01);
	CHECK(fl.l2 < off.l2 / 2);	/* 3.8-8.7 times lower measured, loaded or not */
	return check_done();
}
