/*
 * abi_constructs.c - C constructs that make the compilers emit every kind of
 * tsan hook: plain accesses of 1..16 bytes, packed (unaligned) fields,
 * volatile objects, odd-sized aggregate copies (ranges), vectors, bitfields,
 * long double and complex values, TLS, callbacks from libc, setjmp/longjmp,
 * VLAs, C11 atomics, threads and (with -fopenmp) OpenMP.
 *
 * Built through `ameba cc` with gcc and clang at -O0..-O3 and with the
 * volatile / compound-access options; every build must link against
 * libameba-rt alone and print exactly tests/monitor/abi_constructs.expected.
 * Each section prints a value computed through the construct; the values
 * do not depend on the compiler or the optimisation level.
 */
#include <complex.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECTION(name, value) printf("%s: %llu\n", name, (unsigned long long)(value))

/* Defeats constant folding so that the accesses stay in the code. */
static unsigned opaque(unsigned v)
{
	static volatile unsigned sink;

	sink = v;
	return sink;
}

/* ---- plain scalars of every size ---- */

static uint8_t g8[64];
static uint16_t g16[64];
static uint32_t g32[64];
static uint64_t g64[64];
static unsigned __int128 g128[64];

static uint64_t scalars(void)
{
	unsigned n = opaque(64);
	uint64_t sum = 0;

	for (unsigned i = 0; i < n; i++) {
		g8[i] = (uint8_t)(i * 3);
		g16[i] = (uint16_t)(i * 1001);
		g32[i] = i * 100003u;
		g64[i] = (uint64_t)i * 0x100000001ull;
		g128[i] = (unsigned __int128)g64[i] << 64 | g32[i];
	}
	for (unsigned i = 0; i < n; i++)
		sum += g8[i] + g16[i] + g32[i] + g64[i] + (uint64_t)(g128[i] >> 64) +
		       (uint64_t)g128[i];
	return sum;
}

/* ---- packed structs: under-aligned fields ---- */

struct __attribute__((packed)) packed_rec {
	uint8_t tag;
	uint16_t a;
	uint32_t b;
	uint64_t c;
	unsigned __int128 d;
};

static struct packed_rec packed_arr[16];

static uint64_t packed(void)
{
	unsigned n = opaque(16);
	uint64_t sum = 0;

	for (unsigned i = 0; i < n; i++) {
		packed_arr[i].tag = (uint8_t)i;
		packed_arr[i].a = (uint16_t)(i + 7);
		packed_arr[i].b = i * 77u;
		packed_arr[i].c = (uint64_t)i << 40;
		packed_arr[i].d = (unsigned __int128)i << 70 | i;
	}
	for (unsigned i = 0; i < n; i++) {
		struct packed_rec *p = &packed_arr[i];

		sum += p->tag + p->a + p->b + (p->c >> 40) + (uint64_t)(p->d >> 70) + (uint64_t)p->d;
	}
	return sum;
}

/* ---- volatile objects ---- */

static volatile uint8_t v8;
static volatile uint16_t v16;
static volatile uint32_t v32;
static volatile uint64_t v64;
static volatile unsigned __int128 v128;
static struct __attribute__((packed)) { uint8_t pad; volatile uint32_t x; volatile uint64_t y; } vpacked;

static uint64_t volatiles(void)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < opaque(100); i++) {
		v8 = (uint8_t)i;
		v16 = (uint16_t)(v8 + 1);
		v32 = v16 + 2u;
		v64 = v32 + 3ull;
		v128 = (unsigned __int128)v64 << 1;
		vpacked.x = (uint32_t)v128;
		vpacked.y = vpacked.x + 1ull;
		sum += vpacked.y;
	}
	return sum;
}

/* ---- aggregate copies of odd sizes (gcc: read/write_range) ---- */

struct odd12 { uint32_t a, b, c; };
struct odd24 { uint8_t bytes[24]; };
struct big { uint64_t words[40]; };

static struct odd12 o12_src[8], o12_dst[8];
static struct odd24 o24_src[8], o24_dst[8];
static struct big big_src, big_dst;

static struct odd12 pass_odd12(struct odd12 v)
{
	v.c += v.a;
	return v;
}

static uint64_t aggregates(void)
{
	unsigned n = opaque(8);
	uint64_t sum = 0;

	for (unsigned i = 0; i < n; i++) {
		o12_src[i] = (struct odd12){ i, i * 2, i * 3 };
		memset(&o24_src[i], (int)i + 1, sizeof(o24_src[i]));
	}
	for (unsigned i = 0; i < 40; i++)
		big_src.words[i] = (uint64_t)i * i;
	for (unsigned i = 0; i < n; i++) {
		o12_dst[i] = pass_odd12(o12_src[i]);
		o24_dst[n - 1 - i] = o24_src[i];
	}
	big_dst = big_src;
	for (unsigned i = 0; i < n; i++)
		sum += o12_dst[i].a + o12_dst[i].b + o12_dst[i].c + o24_dst[i].bytes[i * 2];
	for (unsigned i = 0; i < 40; i++)
		sum += big_dst.words[i];
	return sum;
}

/* ---- vectors, bitfields, long double, complex ---- */

typedef int32_t v4si __attribute__((vector_size(16)));
typedef double v2df __attribute__((vector_size(16)));

static v4si vec_a[32], vec_b[32];
static float floats[1024];

struct bits {
	unsigned lo : 3;
	unsigned mid : 13;
	unsigned hi : 16;
	uint64_t wide : 40;
};

static struct bits bitrecs[32];
static long double ldbl[16];
static double complex cplx[16];

static uint64_t vectors_and_friends(void)
{
	unsigned n = opaque(32);
	uint64_t sum = 0;
	v4si acc = { 0, 0, 0, 0 };
	v2df dacc = { 0.0, 0.0 };
	float fsum = 0;
	long double lsum = 0;
	double complex csum = 0;

	for (unsigned i = 0; i < n; i++) {
		vec_a[i] = (v4si){ (int)i, (int)i + 1, (int)i + 2, (int)i + 3 };
		vec_b[i] = vec_a[i] * 2;
	}
	for (unsigned i = 0; i < n; i++) {
		acc += vec_a[i] + vec_b[i];
		dacc += (v2df){ (double)i, 0.5 };
	}
	sum += (uint64_t)(acc[0] + acc[1] + acc[2] + acc[3]) + (uint64_t)(dacc[0] + dacc[1]);

	/* a loop the compilers vectorise at -O3 */
	for (unsigned i = 0; i < opaque(1024); i++)
		floats[i] = (float)(i % 17);
	for (unsigned i = 0; i < 1024; i++)
		fsum += floats[i] * 2.0f;
	sum += (uint64_t)fsum;

	for (unsigned i = 0; i < n; i++) {
		bitrecs[i].lo = i;
		bitrecs[i].mid = i * 100;
		bitrecs[i].hi = i * 1000;
		bitrecs[i].wide = (uint64_t)i << 35;
	}
	for (unsigned i = 0; i < n; i++)
		sum += bitrecs[i].lo + bitrecs[i].mid + bitrecs[i].hi + (bitrecs[i].wide >> 35);

	for (unsigned i = 0; i < 16; i++) {
		ldbl[i] = (long double)i / 4;
		cplx[i] = i + (double)i * 2 * I;
	}
	for (unsigned i = 0; i < 16; i++) {
		lsum += ldbl[i];
		csum += cplx[i];
	}
	sum += (uint64_t)(lsum * 4) + (uint64_t)creal(csum) + (uint64_t)cimag(csum);
	return sum;
}

/* ---- TLS, static locals, VLAs, variadic, function pointers ---- */

static __thread uint64_t tls_counter;
static __thread uint32_t tls_array[16];


static uint64_t sum_varargs(int nr, ...)
{
	va_list ap;
	uint64_t s = 0;

	va_start(ap, nr);
	for (int i = 0; i < nr; i++)
		s += va_arg(ap, uint64_t);
	va_end(ap);
	return s;
}

static uint64_t twice(uint64_t v) { return v * 2; }
static uint64_t thrice(uint64_t v) { return v * 3; }

static uint64_t misc(void)
{
	static uint64_t calls;
	unsigned n = opaque(37);
	uint64_t vla[n], sum = 0;
	uint64_t (*fns[2])(uint64_t) = { twice, thrice };

	calls++;
	for (unsigned i = 0; i < n; i++) {
		vla[i] = fns[i % 2](i);
		tls_counter += vla[i];
		tls_array[i % 16] += (uint32_t)i;
	}
	for (unsigned i = 0; i < n; i++)
		sum += vla[i];
	for (unsigned i = 0; i < 16; i++)
		sum += tls_array[i];
	return sum + tls_counter + calls + sum_varargs(4, (uint64_t)1, (uint64_t)2, (uint64_t)3,
							(uint64_t)n);
}

/* ---- libc calling back into instrumented code; memory functions ---- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t libc_paths(void)
{
	unsigned n = opaque(500);
	uint32_t *arr = malloc(n * sizeof(*arr));
	char *s = calloc(64, 1);
	uint64_t sum = 0;

	if (!arr || !s)
		return 0;
	for (unsigned i = 0; i < n; i++)
		arr[i] = (i * 7919u) % 1009u;
	qsort(arr, n, sizeof(*arr), cmp_u32);
	for (unsigned i = 1; i < n; i++)
		sum += arr[i] >= arr[i - 1];
	sum += arr[0] + arr[n - 1];
	strcpy(s, "ameba");
	strcat(s, "-rt");
	memmove(s + 1, s, 8);
	sum += strlen(s) + (uint64_t)s[3];
	arr = realloc(arr, 2 * n * sizeof(*arr));
	if (!arr)
		return 0;
	memset(arr + n, 0xff, n * sizeof(*arr));
	sum += arr[2 * n - 1] == 0xffffffffu;
	free(arr);
	free(s);
	return sum;
}

/* ---- setjmp / longjmp across instrumented frames ---- */

static jmp_buf jump_env;
static int jump_depth;

static void dive(int depth)
{
	jump_depth = depth;
	if (depth >= 10)
		longjmp(jump_env, depth);
	if (depth < 1000)	/* never false; tells gcc the recursion ends */
		dive(depth + 1);
}

static uint64_t jumps(void)
{
	volatile uint64_t sum = 0;	/* live across setjmp */

	for (int round = 0; round < 5; round++) {
		volatile int r = setjmp(jump_env);

		if (r == 0)
			dive(0);
		else
			sum += (uint64_t)r + (uint64_t)jump_depth;
	}
	return sum;
}

/* ---- C11 atomics and threads ---- */

#define NR_THREADS 4
static atomic_uint_fast64_t at_counter;
static _Atomic uint16_t at_small;
static uint64_t thread_results[NR_THREADS];

static void *thread_main(void *arg)
{
	int t = (int)(intptr_t)arg;
	uint64_t local = 0;

	for (int i = 0; i < 10000; i++) {
		atomic_fetch_add_explicit(&at_counter, (uint64_t)t + 1, memory_order_relaxed);
		at_small++;
		local += (uint64_t)i * (uint64_t)(t + 1);
		tls_counter++;
	}
	thread_results[t] = local + tls_counter;	/* each thread's own TLS */
	return NULL;
}

static uint64_t threads(void)
{
	pthread_t tids[NR_THREADS];
	uint64_t sum = 0;

	for (int t = 0; t < NR_THREADS; t++)
		if (pthread_create(&tids[t], NULL, thread_main, (void *)(intptr_t)t))
			return 0;
	for (int t = 0; t < NR_THREADS; t++)
		pthread_join(tids[t], NULL);
	for (int t = 0; t < NR_THREADS; t++)
		sum += thread_results[t];
	return sum + atomic_load(&at_counter) + at_small;
}

/* ---- OpenMP (the same value without it) ---- */

static double omp_data[4096];

static uint64_t openmp(void)
{
	uint64_t sum = 0, crit = 0;
	int n = (int)opaque(4096);
	int atomic_hits = 0;

#pragma omp parallel for
	for (int i = 0; i < n; i++)
		omp_data[i] = (double)(i % 100);
#pragma omp parallel for reduction(+ : sum)
	for (int i = 0; i < n; i++)
		sum += (uint64_t)omp_data[i];
#pragma omp parallel for
	for (int i = 0; i < 64; i++) {
#pragma omp atomic
		atomic_hits++;
#pragma omp critical
		crit += (uint64_t)i;
	}
	return sum + crit + (uint64_t)atomic_hits;
}

/* ---- compound assignments (clang's read_write hooks) ---- */

static uint32_t compound_arr[256];

static uint64_t compound(void)
{
	uint64_t sum = 0;

	for (unsigned r = 0; r < opaque(10); r++)
		for (unsigned i = 0; i < 256; i++) {
			compound_arr[i] += i;
			compound_arr[i] ^= r;
		}
	for (unsigned i = 0; i < 256; i++)
		sum += compound_arr[i];
	return sum;
}

int main(void)
{
	SECTION("scalars", scalars());
	SECTION("packed", packed());
	SECTION("volatiles", volatiles());
	SECTION("aggregates", aggregates());
	SECTION("vectors_bitfields_ldbl_complex", vectors_and_friends());
	SECTION("tls_vla_varargs_fnptr", misc());
	SECTION("libc_callbacks_memfuncs", libc_paths());
	SECTION("setjmp_longjmp", jumps());
	SECTION("c11_atomics_threads", threads());
	SECTION("openmp", openmp());
	SECTION("compound", compound());
	return 0;
}
