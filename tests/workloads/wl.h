/*
 * wl.h - helpers shared by the ground-truth workloads (tests/workloads/).
 *
 * Every workload:
 *   - takes one optional argument, a positive integer SCALE (default 1) that
 *     multiplies its work (what exactly it multiplies is said in the
 *     workload's header comment); anything else is a usage error (exit 2);
 *   - prints a short deterministic result on stdout (checksums), identical
 *     for native and instrumented builds and, where the header says so, for
 *     the bottleneck version and its fixed twin (built with -DWL_FIXED=1);
 *   - prints nothing else on stdout. With WL_TIME=1 in the environment it
 *     prints the wall time of its kernel to stderr ("<name>: kernel_ms N"),
 *     for comparing a workload with its twin natively.
 *
 * Checksums use unsigned 64-bit arithmetic only (wrap-around is defined), so
 * they do not depend on the compiler, the optimisation level or, for the
 * threaded workloads, on the interleaving.
 */
#ifndef AMEBA_WL_H
#define AMEBA_WL_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef WL_FIXED
#define WL_VARIANT "fixed"
#else
#define WL_VARIANT "bottleneck"
#endif

#define WL_LINE_SIZE 64
#define WL_PAGE_SIZE 4096

/* Parses argv[1] as SCALE; exits with a usage message when it is not an
 * integer in [1, max_scale]. */
static inline unsigned long wl_scale(int argc, char **argv, unsigned long max_scale)
{
	char *end;
	unsigned long v;

	if (argc < 2)
		return 1;
	v = strtoul(argv[1], &end, 10);
	if (argc > 2 || *argv[1] == '\0' || *end != '\0' || v < 1 || v > max_scale) {
		fprintf(stderr, "usage: %s [SCALE]   (SCALE: integer 1..%lu, default 1)\n",
			argv[0], max_scale);
		exit(2);
	}
	return v;
}

/* A 64-bit mixer (the splitmix64 finaliser): wl_mix(h, v) folds v into h. */
static inline uint64_t wl_mix(uint64_t h, uint64_t v)
{
	uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A deterministic pseudo-random sequence (xorshift64*), seeded explicitly. */
static inline uint64_t wl_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

static inline uint64_t wl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Reports the kernel time to stderr when WL_TIME=1 is set. */
static inline void wl_report_time(const char *name, uint64_t start_ns)
{
	const char *e = getenv("WL_TIME");

	if (e && strcmp(e, "1") == 0)
		fprintf(stderr, "%s(%s): kernel_ms %.3f\n", name, WL_VARIANT,
			(double)(wl_now_ns() - start_ns) / 1e6);
}

/* Allocation that fails loudly: a workload without its memory is no test. */
static inline void *wl_check_alloc(void *p, const char *what)
{
	if (!p) {
		fprintf(stderr, "workload: out of memory allocating %s\n", what);
		exit(3);
	}
	return p;
}

#endif
