/*
 * phases - arrays that dominate overall but drop to zero in some phases
 * (the applu behaviour of seed 002, Fig. 5; the search must keep regions
 * that went quiet for a few intervals and lengthen its interval).
 *
 * Bottleneck: three 4 MiB arrays (each larger than L2) swept one line per
 * access with a read-modify-write, each sweep missing on every line in L1D
 * and L2. Each round of the program has three phases, each touching ONE
 * array only:
 *
 *   phase  name       array  kind / site                      sweeps/round
 *     A    predict    ux     global                            9
 *     B    correct    uy     global                            7
 *     C    pressure   press  heap alloc_press() (phases.c)     4
 *
 * Overall shares of L1D / L2 misses (and of references): ux 45%, uy 35%,
 * press 20% (+ one initialising sweep each, which moves the shares by less
 * than a point: 28/22/13 of 63 sweeps = 44.4/34.9/20.6% at SCALE 1; an
 * LRU model of a 48 KiB L1D and a 2 MiB L2 gives exactly these).
 * Within a phase the active array has 100% and the two others exactly 0.
 * One sweep = 65,536 line touches; a round = 20 sweeps = 1.31 M misses; 3
 * rounds + init = 4.1 M misses. Natively one sweep takes ~0.2 ms, phase A
 * ~2 ms (10-100x longer when instrumented); SCALE lengthens every phase in
 * proportion (use it when the search interval is longer than a phase).
 *
 * Fixed twin (-DWL_FIXED=1), a control without phases: the same sweeps are
 * interleaved at line granularity (for each line of ux, 7/9 of a line of uy
 * and 4/9 of a line of press advance), so every interval of more than a few
 * hundred accesses sees ux:uy:press = 9:7:4. Same misses per array, same
 * output; a search must rank both identically, and find no phases here.
 *
 * SCALE multiplies the sweeps of every phase (rounds stay 3). Native: ~20 ms.
 */
#include "wl.h"

#define ARRAY_LINES 65536 /* 4 MiB of 64-byte lines */
#define EPL 8
#define NR_ROUNDS 3

enum { UX_SWEEPS = 9, UY_SWEEPS = 7, PRESS_SWEEPS = 4 };

uint64_t ux[ARRAY_LINES * EPL];
uint64_t uy[ARRAY_LINES * EPL];
static uint64_t *press;

__attribute__((noinline)) static uint64_t *alloc_press(void)
{
	return wl_check_alloc(malloc((size_t)ARRAY_LINES * WL_LINE_SIZE), "press");
}

/* One read-modify-write of the first word of a line; returns the value read. */
static inline uint64_t touch_line(uint64_t *a, size_t line, uint64_t add)
{
	uint64_t v = a[line * EPL];

	a[line * EPL] = v + add;
	return v;
}

#ifndef WL_FIXED
static uint64_t sweep(uint64_t *a, uint64_t add)
{
	uint64_t s = 0;

	for (size_t line = 0; line < ARRAY_LINES; line++)
		s += touch_line(a, line, add);
	return s;
}
#endif

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 1000);
	uint64_t s_ux = 0, s_uy = 0, s_press = 0;
	uint64_t t0;

	press = alloc_press();
	for (size_t line = 0; line < ARRAY_LINES; line++) {
		ux[line * EPL] = wl_mix(1, line);
		uy[line * EPL] = wl_mix(2, line);
		press[line * EPL] = wl_mix(3, line);
	}

	t0 = wl_now_ns();
	for (int r = 0; r < NR_ROUNDS; r++) {
#ifndef WL_FIXED
		for (unsigned long k = 0; k < UX_SWEEPS * scale; k++)		/* phase A */
			s_ux += sweep(ux, 1);
		for (unsigned long k = 0; k < UY_SWEEPS * scale; k++)		/* phase B */
			s_uy += sweep(uy, 3);
		for (unsigned long k = 0; k < PRESS_SWEEPS * scale; k++)	/* phase C */
			s_press += sweep(press, 5);
#else
		/* The three streams advance together, ux at 9, uy at 7 and press at
		 * 4 lines per 9 steps (a Bresenham schedule). Each array still
		 * sees its sweeps in order, so every read returns the same value
		 * as in the phased version. */
		size_t pos_uy = 0, pos_press = 0;
		unsigned acc_uy = 0, acc_press = 0;
		size_t nr_steps = (size_t)UX_SWEEPS * scale * ARRAY_LINES;

		for (size_t t = 0; t < nr_steps; t++) {
			s_ux += touch_line(ux, t % ARRAY_LINES, 1);
			acc_uy += UY_SWEEPS;
			if (acc_uy >= UX_SWEEPS) {
				acc_uy -= UX_SWEEPS;
				s_uy += touch_line(uy, pos_uy++ % ARRAY_LINES, 3);
			}
			acc_press += PRESS_SWEEPS;
			if (acc_press >= UX_SWEEPS) {
				acc_press -= UX_SWEEPS;
				s_press += touch_line(press, pos_press++ % ARRAY_LINES, 5);
			}
		}
#endif
	}
	wl_report_time("phases", t0);

	printf("phases: rounds %d sweeps %lu/%lu/%lu\n", NR_ROUNDS, UX_SWEEPS * scale,
	       UY_SWEEPS * scale, PRESS_SWEEPS * scale);
	printf("ux %016" PRIx64 "\nuy %016" PRIx64 "\npress %016" PRIx64 "\n", s_ux, s_uy, s_press);
	free(press);
	return 0;
}
