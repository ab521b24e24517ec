/*
 * test_replay.c - sampled mode's replay (monitor/tally.c, docs/simulator.md
 * "The replay"): before a warm-up each thread that tallied replays the
 * addresses its hooks kept through the gap, so that the simulated L2 holds
 * what the gap used rather than what the last burst left; and the
 * warm-up's floor in accesses (sampled.c, warm_floor), which simulates on
 * after the warm-up's time until the thread made that many accesses.
 *
 * One thread (both are for the host-order simulation; a second thread
 * would engage the ordered mode, where they are not done) reads, through
 * the real hooks (__tsan_read8), one array of 128 KiB per turn, 122 sweeps
 * of it (976 reads per line, two million accesses: about the ring's span
 * and less than a gap), taking the next of 128 arrays each turn: 16 MiB,
 * 8 times the design preset's 2 MiB L2, so an array is cold when its turn
 * comes and misses the L2 on its first sweep only: 2,048 misses a turn,
 * the exact count.
 *
 * What is compared is what a burst adds to that: the L2 misses the
 * measured bursts counted (mon_sampled_measured) over what their accesses
 * make at the exact rate, per burst. That does not depend on how many
 * accesses a burst simulates, that is on the host's speed or load; the
 * estimate's ratio to the exact count does (with 2 ms, then 6 ms bursts
 * and the estimates compared, the runs came out in the wrong order under
 * load). Without the replay or the floor, a burst finds the array in use
 * cold but for what its warm-up read (20 us asked, 100-200 us taken: a
 * fraction of a sweep). The replay keeps one access in 256, so by the
 * middle of a turn it has sampled most lines (1 - e^-1.9), and the
 * warm-up waits for it to end; the floor (a sweep, 16,384 reads, from
 * wherever the warm-up starts) warms them all.
 * Checked: the replay ran before the warm-ups, a full ring each; it
 * changes no count of accesses (replayed reads are neither tallied nor
 * counted: the accesses' estimate within 1%); the excess is most of an
 * array without either, half of that at most with the replay, a quarter
 * with the floor.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "mon.h"

void __tsan_read8(const volatile void *addr);

#define ARRAYS 128
#define WORDS (128 * 1024 / 8)
#define LINES (WORDS / 8)
#define SWEEPS 122
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
	uint32_t empty;		/* bursts with too few accesses to count (a busy host) */
	double excess;		/* L2 misses per burst over the exact rate's */
};

/* 2 s of sweeps, sampled. */
static struct outcome run(int on, int floor)
{
	/* a warm-up of 20 us simulates a few hundred accesses, whatever the
	 * host's speed: what warms the L2 is the replay or the floor alone
	 * (300 us simulated a sweep of 32,768 reads on a fast host) */
	const struct mon_sampled_cfg fast = { .period_us = 24000, .warm_us = 20, .burst_us = 6000,
					      .seed = 11, .time_max = 1 };	/* (no time mark) */
	struct mon_range rr = { (uintptr_t)R, (uintptr_t)R + sizeof(R) };
	struct mon_cond_spec sp[2] = {
		{ .metric = AMEBA_M_L2_MISS, .nr_ranges = 1, .ranges = &rr },
		{ .metric = AMEBA_M_MEM_REF, .nr_ranges = 1, .ranges = &rr },
	};
	struct mon_sampled_info info;
	struct outcome o = { 0 };
	uint64_t gen = 0, total[2] = { 0 }, turns = 0, before = 0;
	double end, exact, meas[2] = { 0 }, sim = 0;

	for (uint32_t i = 0; i < 64; i++)
		before += mon_tally_tab ? mon_tally_tab[i].replayed : 0;
	setenv("AMEBA_SAMPLED_REPLAY", on ? "1" : "0", 1);
	/* the floor: a sweep of an array */
	setenv("AMEBA_SAMPLED_WARM_MIN", floor ? "16384" : "0", 1);
	CHECK(mon_cond_arm(sp, 2, &gen) == 0);
	mon_sampled_armed(gen, 2, NULL);
	CHECK(mon_sampled_start(&fast) == 0);
	end = now_s() + 2;
	while (now_s() < end) {
		const uint64_t *x = R[turns++ % ARRAYS];

		for (int k = 0; k < SWEEPS; k++)
			for (uint32_t i = 0; i < WORDS; i++)
				__tsan_read8(&x[i]);
	}
	CHECK(mon_sampled_read(gen, total, NULL, 2, NULL, NULL) == 0);
	/* the bursts' own counts (a warm-up counts nothing) */
	CHECK(mon_sampled_measured(gen, meas, 2, &sim) == 0);
	CHECK(mon_sampled_ci(gen, NULL, NULL, 2, &info) == 0);
	mon_sampled_stop();
	unsetenv("AMEBA_SAMPLED_REPLAY");
	unsetenv("AMEBA_SAMPLED_WARM_MIN");
	for (uint32_t i = 0; i < 64; i++)
		o.replayed += mon_tally_tab[i].replayed;
	o.replayed -= before;
	o.bursts = info.bursts;
	o.empty = info.bursts_empty;
	exact = (double)turns * LINES;	/* a miss per line, first sweep */
	o.l2 = (double)total[0] / exact;
	o.refs = (double)total[1] / ((double)turns * SWEEPS * WORDS);
	/* the bursts' misses over what their accesses make at the exact rate
	 * (a burst that crosses into the next array has its first sweep:
	 * counted in both) */
	o.excess = (meas[0] - meas[1] * LINES / (SWEEPS * WORDS)) / (info.bursts ? info.bursts : 1);
	fprintf(stderr, "replay %s, floor %s: %" PRIu64 " turns, %u bursts (%u empty), %" PRIu64
		" addresses replayed, "
		"L2 misses %" PRIu64 " estimated (first sweeps' %.0f: %.2fx), %.0f in %.0f accesses "
		"measured (%.0f simulated): %.0f extra a burst; accesses %.4fx\n",
		on ? "on" : "off", floor ? "on" : "off", turns, o.bursts, o.empty, o.replayed, total[0],
		exact, o.l2,
		meas[0], meas[1], sim, o.excess, o.refs);
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
	/* the replay ran before (nearly) every warm-up, a full ring each -
	 * those of bursts too empty to count too (on a busy host the thread
	 * can be off the CPU for a whole burst: 68 bursts and 69.3 rings
	 * replayed in a CI run) */
	CHECK(on.replayed >= (uint64_t)(on.bursts / 2) * MON_RING_LEN);
	CHECK(on.replayed <= (uint64_t)(on.bursts + on.empty + 1) * MON_RING_LEN);
	CHECK(off.replayed == 0);
	/* replayed accesses are neither tallied nor counted */
	CHECK(on.refs > 0.99 && on.refs < 1.01);
	CHECK(off.refs > 0.99 && off.refs < 1.01);
	/* without either, a burst finds most of the array cold (1,311-1,946
	 * extra misses a burst measured, with three CPU hogs or without); the
	 * replay warms most of it (0.16-0.27 times that idle, 0.22-0.36 with
	 * two hogs, 0.39-0.50 with three; 0.62-0.67 with three while a thread
	 * preempted at the ask missed its replay, before the controller waited
	 * for it), the floor all of it (-0.06-0.13) */
	CHECK(off.excess > LINES / 2);
	CHECK(on.excess < off.excess * 0.6);
	CHECK(fl.refs > 0.99 && fl.refs < 1.01);
	CHECK(fl.excess < off.excess / 4);
	return check_done();
}
