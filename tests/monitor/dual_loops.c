/*
 * dual_loops.c - the dual path's loop shapes under switching (gcc's
 * strip-mining, clang's loop tests; docs/dual-path.md): loops of several
 * shapes (reductions in integers and doubles, a counter in unsigned int
 * with a step of 3, a count down, a pointer walk, a do-while, an index
 * used after its loop, a loop with two exits, a nest whose inner loop is
 * long) run over trip counts around the chunk (0, 1, 4,095-4,097,
 * 8,191-8,193, 100,000, 1,000,003), five rounds. With -DDUAL_NATIVE it is
 * the plain compiler's reference; built by `ameba cc -O2`, a second thread
 * switches measurement (the count backend) on and off every 20-200 us
 * meanwhile, so that loops switch to the instrumented body in the middle,
 * at chunk ends, and back at the next call. stdout's first line is a
 * checksum of every result, which must be the native build's
 * (dual_check.sh compares); the dual build also checks that it switched
 * and counted.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#ifndef DUAL_NATIVE
#include "check.h"
#include "mon.h"
#endif

#define MAXN 1000003L
static double X[MAXN + 8], Y[MAXN + 8];
static uint32_t V[MAXN + 8];

__attribute__((noinline)) static double sum_d(const double *x, long n)
{
	double s = 0;

	for (long i = 0; i < n; i++)
		s += x[i];
	return s;
}

__attribute__((noinline)) static uint32_t xor_step3(const uint32_t *v, unsigned a, unsigned b)
{
	uint32_t acc = 0;

	for (unsigned i = a; i < b; i += 3)
		acc ^= v[i] * i;
	return acc;
}

__attribute__((noinline)) static void down(double *y, const double *x, long n)
{
	for (long i = n - 1; i >= 0; i--)
		y[i] = y[i + 1] * 0.5 + x[i];
}

__attribute__((noinline)) static void walk(double *beg, double *end, double k)
{
	for (double *p = beg; p != end; p++)
		*p = *p * 0.75 + k;
}

__attribute__((noinline)) static long dowhile(const uint32_t *v, long n)
{
	long s = 0;
	const uint32_t *p = v;

	if (n <= 0)
		return 0;
	do
		s += *p++ & 0xff;
	while (--n);
	return s;
}

__attribute__((noinline)) static long index_after(double *y, long n)
{
	long i;

	for (i = 0; i < n; i++)
		y[i] = (double)(i & 15);
	return i * 3 + (long)y[n > 0 ? n - 1 : 0];
}

__attribute__((noinline)) static long two_exits(const uint32_t *v, long n, uint32_t stop_at)
{
	long i;

	for (i = 0; i < n; i++)
		if (v[i] == stop_at)
			break;
	return i;
}

__attribute__((noinline)) static double nest(double *y, const double *x, long rows, long cols)
{
	double s = 0;

	for (long r = 0; r < rows; r++) {
		for (long c = 0; c < cols; c++)
			y[c] = y[c] * 0.5 + x[c] * (double)r;
		s += y[cols / 2];
	}
	return s;
}

static const long sizes[] = { 0, 1, 4095, 4096, 4097, 8191, 8192, 8193, 100000, 1000003 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* FNV-1a over the results' bytes */
static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t battery(uint64_t h)
{
	for (unsigned k = 0; k < NSIZES; k++) {
		long n = sizes[k];
		double d;
		uint32_t u;
		long l;

		d = sum_d(X, n);
		h = mix(h, &d, sizeof(d));
		u = xor_step3(V, (unsigned)(k & 3), (unsigned)n);
		h = mix(h, &u, sizeof(u));
		down(Y, X, n);
		walk(Y, Y + n, (double)k);
		l = dowhile(V, n);
		h = mix(h, &l, sizeof(l));
		l = index_after(Y + 4, n);
		h = mix(h, &l, sizeof(l));
		l = two_exits(V, n, 0xdeadbeefu);
		h = mix(h, &l, sizeof(l));
		d = nest(Y, X, n > 4096 ? 3 : 5, n);
		h = mix(h, &d, sizeof(d));
		h = mix(h, Y, sizeof(double) * (size_t)(n < 64 ? n : 64));
	}
	return mix(h, Y, sizeof(Y));
}

#ifndef DUAL_NATIVE
static volatile int toggling = 1;
static volatile long toggles;

static void sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

static void *toggler(void *arg)
{
	uint64_t r = 88172645463325252ull;

	(void)arg;
	while (toggling) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		if (mon_activate("count") == 0) {
			sleep_us(20 + (long)(r % 180));
			mon_deactivate();
			toggles++;
		}
		sleep_us(20 + (long)((r >> 20) % 180));
	}
	return NULL;
}
#endif

int main(void)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (long i = 0; i < MAXN + 8; i++) {
		X[i] = (double)((i * 7) % 13) * 0.125;
		Y[i] = (double)(i % 5);
		V[i] = (uint32_t)(i * 2654435761u);
	}
#ifndef DUAL_NATIVE
	{
		const struct mon_cond_spec spec = { .metric = AMEBA_M_MEM_REF };
		uint64_t gen, total = 0;
		pthread_t th;

		CHECK(mon_activate("count") == 0);
		CHECK(mon_cond_arm(&spec, 1, &gen) == 0);
		mon_deactivate();
		pthread_create(&th, NULL, toggler, NULL);
		for (int round = 0; round < 5; round++)
			h = battery(h);
		toggling = 0;
		pthread_join(th, NULL);
		CHECK(mon_cond_read(gen, &total, NULL, 1, NULL, NULL) == 0);
		fprintf(stderr, "dual_loops: %ld switches on and off, %llu accesses counted\n",
			toggles, (unsigned long long)total);
		CHECK(toggles > 100);
		CHECK(total > 0);
	}
#else
	for (int round = 0; round < 5; round++)
		h = battery(h);
#endif
	printf("%016llx\n", (unsigned long long)h);
#ifndef DUAL_NATIVE
	return check_done();
#else
	return 0;
#endif
}
