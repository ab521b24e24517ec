/*
 * atomics_stress.c - every atomic operation of every width, from 4 threads.
 *
 * Built natively and through `ameba cc` (gcc and clang, -O0 and -O2). Under
 * instrumentation each atomic below becomes a call into tsan_atomic.c, so
 * the totals printed here hold only if those calls keep the exact semantics
 * of the operations they replace. The program computes every expected value
 * itself (sequentially, in plain arithmetic), prints the observed values as
 * `name: value` lines and exits 1 on the first mismatch; the test compares
 * the instrumented output with the native one byte for byte.
 *
 * Phases (threads meet at a barrier between 1, 2, 3 and 5; 4 runs last):
 *   1. RMW storm: per width 8..128, fetch_add/sub/and/or/xor/nand, exchange,
 *      CAS-loop increments (strong, weak, __sync val), memory orders cycling
 *      through every valid value.
 *   2. Locks: a C11 atomic_flag spinlock and a __sync_lock_test_and_set
 *      spinlock, each guarding a plain counter (instrumented plain accesses
 *      ordered only by the lock's acquire/release).
 *   3. Message passing 0->1 and 2->3: plain data published by a release
 *      store and read after an acquire load.
 *   4. Store buffering (threads 0 and 1): x=1; fence(seq_cst); r=y. Both
 *      threads reading 0 in one round is forbidden; a fence that is not a
 *      full barrier shows up here on real hardware.
 *   5. Tearing: 64- and 128-bit values whose halves are tied together,
 *      stored and loaded concurrently.
 * Plus single-threaded semantic checks of each operation's result.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NR_THREADS 4
#define NR_ITERS 6024		/* a multiple of 6 (orders) and 8 (CAS pairs) */
#define NR_MESSAGES 3000
#define NR_SB_ROUNDS 20000
#define NR_TEAR_ITERS 20000

typedef unsigned __int128 u128;

static int nr_failures;

static void print_u128(const char *name, u128 v)
{
	uint64_t hi = (uint64_t)(v >> 64), lo = (uint64_t)v;

	if (hi)
		printf("%s: 0x%llx%016llx\n", name, (unsigned long long)hi, (unsigned long long)lo);
	else
		printf("%s: %llu\n", name, (unsigned long long)lo);
}

/* Prints the observed value; a mismatch is reported on stderr and fails the run. */
static void expect(const char *name, u128 got, u128 want)
{
	print_u128(name, got);
	if (got != want) {
		fprintf(stderr, "MISMATCH %s: got 0x%llx%016llx want 0x%llx%016llx\n", name,
			(unsigned long long)(got >> 64), (unsigned long long)got,
			(unsigned long long)(want >> 64), (unsigned long long)want);
		nr_failures++;
	}
}

static int popcount128(u128 v)
{
	return __builtin_popcountll((uint64_t)v) + __builtin_popcountll((uint64_t)(v >> 64));
}

/* A value with bits in both halves, different for every (thread, iteration). */
static u128 mix(int t, int i)
{
	uint64_t a = (uint64_t)(t + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)i * 0xbf58476d1ce4e5b9ull;
	uint64_t b = (uint64_t)i * 0x2545f4914f6cdd1dull + (uint64_t)t;

	return (u128)a << 64 | b;
}

/* ---- a reusable barrier made of atomics (no pthread_barrier: keep the
 * synchronisation itself inside the code under test) ---- */

static unsigned barrier_arrived;

static void barrier_wait(unsigned *phase)
{
	unsigned target = ++*phase * NR_THREADS;

	__atomic_fetch_add(&barrier_arrived, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&barrier_arrived, __ATOMIC_ACQUIRE) < target)
		sched_yield();
}

/* ---- every valid memory order, chosen by iteration ---- */

#define RMW_ORDERED(i, res, fn, p, v)					\
	switch ((i) % 6) {						\
	case 0: res = fn(p, v, __ATOMIC_RELAXED); break;		\
	case 1: res = fn(p, v, __ATOMIC_CONSUME); break;		\
	case 2: res = fn(p, v, __ATOMIC_ACQUIRE); break;		\
	case 3: res = fn(p, v, __ATOMIC_RELEASE); break;		\
	case 4: res = fn(p, v, __ATOMIC_ACQ_REL); break;		\
	default: res = fn(p, v, __ATOMIC_SEQ_CST); break;		\
	}

#define LOAD_ORDERED(i, res, p)						\
	switch ((i) % 4) {						\
	case 0: res = __atomic_load_n(p, __ATOMIC_RELAXED); break;	\
	case 1: res = __atomic_load_n(p, __ATOMIC_CONSUME); break;	\
	case 2: res = __atomic_load_n(p, __ATOMIC_ACQUIRE); break;	\
	default: res = __atomic_load_n(p, __ATOMIC_SEQ_CST); break;	\
	}

#define STORE_ORDERED(i, p, v)						\
	switch ((i) % 3) {						\
	case 0: __atomic_store_n(p, v, __ATOMIC_RELAXED); break;	\
	case 1: __atomic_store_n(p, v, __ATOMIC_RELEASE); break;	\
	default: __atomic_store_n(p, v, __ATOMIC_SEQ_CST); break;	\
	}

/* (success, failure) pairs the builtins accept without a warning. */
#define CAS_ORDERED(i, ok, p, e, d, weak)				\
	switch ((i) % 8) {						\
	case 0: ok = __atomic_compare_exchange_n(p, e, d, weak, __ATOMIC_RELAXED, __ATOMIC_RELAXED); break; \
	case 1: ok = __atomic_compare_exchange_n(p, e, d, weak, __ATOMIC_CONSUME, __ATOMIC_CONSUME); break; \
	case 2: ok = __atomic_compare_exchange_n(p, e, d, weak, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED); break; \
	case 3: ok = __atomic_compare_exchange_n(p, e, d, weak, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE); break; \
	case 4: ok = __atomic_compare_exchange_n(p, e, d, weak, __ATOMIC_RELEASE, __ATOMIC_RELAXED); break; \
	case 5: ok = __atomic_compare_exchange_n(p, e, d, weak, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE); break; \
	case 6: ok = __atomic_compare_exchange_n(p, e, d, weak, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED); break; \
	default: ok = __atomic_compare_exchange_n(p, e, d, weak, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); break; \
	}

/* ---- phase 1: per width ---- */

/*
 * The nand target starts at NAND_INIT and every operation is
 * nand(x, ~0) = ~x: it alternates between NAND_INIT and ~NAND_INIT, so
 * exactly half of the 4 * NR_ITERS operations see NAND_INIT and the final
 * value is NAND_INIT again.
 */
#define NAND_INIT(T) ((T)(((u128)0x5a5a5a5a5a5a5a5aull << 64) | 0xa5c3a5c3a5c3a5c3ull))

#define DEFINE_WIDTH(W, T)							\
static struct {									\
	T add, sub, xchg, cas_strong, cas_weak, cas_val, or_, and_, xor_, nand;	\
} __attribute__((aligned(64))) s##W;						\
										\
static struct {									\
	u128 xchg_sum;								\
	int or_new, and_cleared, nand_saw_init, nand_bad;			\
} __attribute__((aligned(64))) r##W[NR_THREADS];				\
										\
static T xchg_value##W(int t, int i) { return (T)mix(t, i); }			\
static int or_bit##W(int t, int i) { return (t * 7 + i * 3) % W; }		\
static int and_bit##W(int t, int i) { return (t * 5 + i) % (W - 1); }		\
										\
static void phase1_w##W(int t)							\
{										\
	for (int i = 0; i < NR_ITERS; i++) {					\
		T r = 0, e, bit;						\
		int ok = 0;							\
										\
		RMW_ORDERED(i, r, __atomic_fetch_add, &s##W.add, (T)(t + 1));	\
		RMW_ORDERED(i, r, __atomic_fetch_sub, &s##W.sub, (T)(2 * t + 1)); \
		RMW_ORDERED(i, r, __atomic_exchange_n, &s##W.xchg, xchg_value##W(t, i)); \
		r##W[t].xchg_sum += r;						\
										\
		LOAD_ORDERED(i, e, &s##W.cas_strong);				\
		do {								\
			CAS_ORDERED(i, ok, &s##W.cas_strong, &e, (T)(e + 1), 0); \
		} while (!ok);							\
		LOAD_ORDERED(i + 1, e, &s##W.cas_weak);			\
		do {								\
			CAS_ORDERED(i + 3, ok, &s##W.cas_weak, &e, (T)(e + 1), 1); \
		} while (!ok);							\
		e = __atomic_load_n(&s##W.cas_val, __ATOMIC_RELAXED);		\
		for (;;) {							\
			T seen = __sync_val_compare_and_swap(&s##W.cas_val, e, (T)(e + 1)); \
			if (seen == e)						\
				break;						\
			e = seen;						\
		}								\
										\
		bit = (T)((T)1 << or_bit##W(t, i));				\
		RMW_ORDERED(i, r, __atomic_fetch_or, &s##W.or_, bit);		\
		r##W[t].or_new += !(r & bit);					\
		bit = (T)((T)1 << and_bit##W(t, i));				\
		RMW_ORDERED(i, r, __atomic_fetch_and, &s##W.and_, (T)~bit);	\
		r##W[t].and_cleared += !!(r & bit);				\
		RMW_ORDERED(i, r, __atomic_fetch_xor, &s##W.xor_, (T)(mix(t, i) * mix(i, t))); \
		RMW_ORDERED(i, r, __atomic_fetch_nand, &s##W.nand, (T)~(T)0);	\
		if (r == NAND_INIT(T))						\
			r##W[t].nand_saw_init++;				\
		else if (r != (T)~NAND_INIT(T))					\
			r##W[t].nand_bad++;					\
	}									\
}										\
										\
static void init_w##W(void)							\
{										\
	memset(&s##W, 0, sizeof(s##W));						\
	s##W.and_ = (T)~(T)0;							\
	s##W.nand = NAND_INIT(T);						\
}										\
										\
static void check_w##W(void)							\
{										\
	u128 xchg_sum = s##W.xchg, xchg_want = 0, or_want = 0, and_want, xor_want = 0; \
	int or_new = 0, and_cleared = 0, saw_init = 0, bad = 0;		\
	char name[64];								\
										\
	and_want = (T)~(T)0;							\
	for (int t = 0; t < NR_THREADS; t++) {					\
		xchg_sum += r##W[t].xchg_sum;					\
		or_new += r##W[t].or_new;					\
		and_cleared += r##W[t].and_cleared;				\
		saw_init += r##W[t].nand_saw_init;				\
		bad += r##W[t].nand_bad;					\
		for (int i = 0; i < NR_ITERS; i++) {				\
			xchg_want += xchg_value##W(t, i);			\
			or_want |= (u128)1 << or_bit##W(t, i);			\
			and_want &= ~((u128)1 << and_bit##W(t, i));		\
			xor_want ^= (T)(mix(t, i) * mix(i, t));				\
		}								\
	}									\
	and_want = (T)and_want;							\
										\
	/* 1 + 2 + 3 + 4 per iteration; 1 + 3 + 5 + 7 subtracted. */		\
	snprintf(name, sizeof(name), "w%d fetch_add", W);			\
	expect(name, s##W.add, (T)((u128)NR_ITERS * 10));			\
	snprintf(name, sizeof(name), "w%d fetch_sub", W);			\
	expect(name, s##W.sub, (T)((u128)0 - (u128)NR_ITERS * 16));		\
	/* Every value written is returned by one later exchange or is	\
	 * still in memory: the sums agree. */					\
	snprintf(name, sizeof(name), "w%d exchange_conserved", W);		\
	expect(name, xchg_sum, xchg_want);					\
	snprintf(name, sizeof(name), "w%d cas_strong_loop", W);		\
	expect(name, s##W.cas_strong, (T)(NR_THREADS * NR_ITERS));		\
	snprintf(name, sizeof(name), "w%d cas_weak_loop", W);			\
	expect(name, s##W.cas_weak, (T)(NR_THREADS * NR_ITERS));		\
	snprintf(name, sizeof(name), "w%d cas_val_loop", W);			\
	expect(name, s##W.cas_val, (T)(NR_THREADS * NR_ITERS));		\
	snprintf(name, sizeof(name), "w%d fetch_or", W);			\
	expect(name, s##W.or_, or_want);					\
	/* each bit is seen clear by exactly one fetch_or */			\
	snprintf(name, sizeof(name), "w%d fetch_or_new_bits", W);		\
	expect(name, or_new, popcount128(or_want));				\
	snprintf(name, sizeof(name), "w%d fetch_and", W);			\
	expect(name, s##W.and_, and_want);					\
	snprintf(name, sizeof(name), "w%d fetch_and_cleared_bits", W);	\
	expect(name, and_cleared, W - popcount128(and_want));			\
	snprintf(name, sizeof(name), "w%d fetch_xor", W);			\
	expect(name, s##W.xor_, xor_want);					\
	snprintf(name, sizeof(name), "w%d fetch_nand", W);			\
	expect(name, s##W.nand, NAND_INIT(T));					\
	snprintf(name, sizeof(name), "w%d fetch_nand_saw_init", W);		\
	expect(name, saw_init, NR_THREADS * NR_ITERS / 2);			\
	snprintf(name, sizeof(name), "w%d fetch_nand_other", W);		\
	expect(name, bad, 0);							\
}

DEFINE_WIDTH(8, uint8_t)
DEFINE_WIDTH(16, uint16_t)
DEFINE_WIDTH(32, uint32_t)
DEFINE_WIDTH(64, uint64_t)
DEFINE_WIDTH(128, u128)

/* ---- phase 2: spinlocks guarding plain counters ---- */

static atomic_flag c11_lock = ATOMIC_FLAG_INIT;
static int sync_lock;
static _Atomic uint32_t c11_counter;	/* C11 read-modify-write syntax */
static _Atomic uint64_t c11_cas_counter;
static uint64_t plain_under_c11_lock, plain_under_sync_lock;

static void phase2(int t)
{
	for (int i = 0; i < NR_ITERS; i++) {
		while (atomic_flag_test_and_set_explicit(&c11_lock, memory_order_acquire))
			sched_yield();
		plain_under_c11_lock += (uint64_t)t + 1;
		atomic_flag_clear_explicit(&c11_lock, memory_order_release);

		while (__sync_lock_test_and_set(&sync_lock, 1))
			sched_yield();
		plain_under_sync_lock += 2;
		__sync_lock_release(&sync_lock);

		atomic_fetch_add_explicit(&c11_counter, 3, memory_order_relaxed);
		c11_counter += 1;	/* seq_cst += */
		uint64_t e = atomic_load_explicit(&c11_cas_counter, memory_order_relaxed);
		while (!atomic_compare_exchange_weak_explicit(&c11_cas_counter, &e, e + 5,
							      memory_order_acq_rel,
							      memory_order_relaxed))
			;
		atomic_signal_fence(memory_order_seq_cst);
	}
}

/* ---- phase 3: message passing, producer t -> consumer t + 1 ---- */

#define MSG_WORDS 4

static struct mp_channel {
	int full;			/* atomic: 1 while a message waits */
	uint64_t data[MSG_WORDS];	/* plain */
} __attribute__((aligned(64))) channels[NR_THREADS / 2];

static uint64_t mp_received[NR_THREADS / 2];

static void phase3(int t)
{
	struct mp_channel *c = &channels[t / 2];

	for (int m = 0; m < NR_MESSAGES; m++) {
		if (t % 2 == 0) {
			while (__atomic_load_n(&c->full, __ATOMIC_ACQUIRE))
				sched_yield();
			for (int w = 0; w < MSG_WORDS; w++)
				c->data[w] = (uint64_t)m * MSG_WORDS + (uint64_t)w + (uint64_t)t;
			__atomic_store_n(&c->full, 1, __ATOMIC_RELEASE);
		} else {
			while (!__atomic_load_n(&c->full, __ATOMIC_ACQUIRE))
				sched_yield();
			for (int w = 0; w < MSG_WORDS; w++)
				mp_received[t / 2] += c->data[w];
			__atomic_store_n(&c->full, 0, __ATOMIC_RELEASE);
		}
	}
}

/* ---- phase 4: store buffering with seq_cst fences (threads 0, 1) ---- */

static int sb_x[NR_SB_ROUNDS], sb_y[NR_SB_ROUNDS];
static int sb_r0[NR_SB_ROUNDS], sb_r1[NR_SB_ROUNDS];
static unsigned sb_round[2];

static void phase4(int t)
{
	int *mine = t ? sb_y : sb_x, *theirs = t ? sb_x : sb_y, *out = t ? sb_r1 : sb_r0;

	for (int r = 0; r < NR_SB_ROUNDS; r++) {
		/*
		 * Meet the other thread so that both run round r at once, then
		 * wait a varying few iterations: the second thread out of the
		 * rendezvous lags by a cache-line transfer, and the skew makes
		 * the two store-fence-load windows overlap in many rounds.
		 */
		__atomic_store_n(&sb_round[t], (unsigned)r, __ATOMIC_RELEASE);
		for (int spins = 0; __atomic_load_n(&sb_round[!t], __ATOMIC_ACQUIRE) < (unsigned)r;)
			if (++spins > 200)
				sched_yield();
		for (volatile int d = (r * (t ? 7 : 3)) % 256; d > 0; d--)
			;
		__atomic_store_n(&mine[r], 1, __ATOMIC_RELAXED);
		atomic_thread_fence(memory_order_seq_cst);
		out[r] = __atomic_load_n(&theirs[r], __ATOMIC_RELAXED);
	}
	__atomic_store_n(&sb_round[t], (unsigned)NR_SB_ROUNDS, __ATOMIC_RELEASE);
}

/* ---- phase 5: tearing ---- */

static uint64_t tear64;
static u128 tear128 __attribute__((aligned(16)));
static int torn[NR_THREADS];

static uint64_t tie64(uint32_t lo) { return (uint64_t)~lo << 32 | lo; }
static u128 tie128(uint64_t lo) { return (u128)~lo << 64 | lo; }

static void phase5(int t)
{
	for (int i = 0; i < NR_TEAR_ITERS; i++) {
		uint64_t v64;
		u128 v128;

		STORE_ORDERED(i, &tear64, tie64((uint32_t)mix(t, i)));
		STORE_ORDERED(i, &tear128, tie128((uint64_t)mix(t, i)));
		LOAD_ORDERED(i, v64, &tear64);
		LOAD_ORDERED(i, v128, &tear128);
		torn[t] += v64 != tie64((uint32_t)v64);
		torn[t] += v128 != tie128((uint64_t)v128);
	}
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	unsigned phase = 0;

	phase1_w8(t);
	phase1_w16(t);
	phase1_w32(t);
	phase1_w64(t);
	phase1_w128(t);
	barrier_wait(&phase);
	phase2(t);
	barrier_wait(&phase);
	phase3(t);
	barrier_wait(&phase);
	phase5(t);
	/* Last, so that threads 2 and 3 have exited and do not steal the
	 * CPUs that 0 and 1 need to overlap. */
	if (t < 2)
		phase4(t);
	return NULL;
}

/* ---- single-threaded semantics: the exact result of each operation ---- */

#define CHECK_OPS(W, T)								\
static int semantics_w##W(void)							\
{										\
	const T a = (T)mix(1, 2), b = (T)mix(3, 4);				\
	T x, r, e;								\
	int n = 0, ok;								\
										\
	x = a; r = __atomic_fetch_add(&x, b, __ATOMIC_SEQ_CST);		\
	n += r == a && x == (T)(a + b);						\
	x = a; r = __atomic_fetch_sub(&x, b, __ATOMIC_ACQ_REL);		\
	n += r == a && x == (T)(a - b);						\
	x = a; r = __atomic_fetch_and(&x, b, __ATOMIC_RELEASE);		\
	n += r == a && x == (T)(a & b);						\
	x = a; r = __atomic_fetch_or(&x, b, __ATOMIC_ACQUIRE);			\
	n += r == a && x == (T)(a | b);						\
	x = a; r = __atomic_fetch_xor(&x, b, __ATOMIC_CONSUME);		\
	n += r == a && x == (T)(a ^ b);						\
	x = a; r = __atomic_fetch_nand(&x, b, __ATOMIC_RELAXED);		\
	n += r == a && x == (T)~(a & b);					\
	x = a; r = __atomic_nand_fetch(&x, b, __ATOMIC_SEQ_CST);		\
	n += r == (T)~(a & b) && x == r;					\
	x = a; r = __atomic_add_fetch(&x, b, __ATOMIC_SEQ_CST);		\
	n += r == (T)(a + b) && x == r;						\
	x = a; r = __atomic_exchange_n(&x, b, __ATOMIC_ACQ_REL);		\
	n += r == a && x == b;							\
	x = a; __atomic_store_n(&x, b, __ATOMIC_RELEASE);			\
	n += __atomic_load_n(&x, __ATOMIC_ACQUIRE) == b;			\
	/* failing CAS: *expected gets the current value, memory unchanged */	\
	x = a; e = b;								\
	ok = __atomic_compare_exchange_n(&x, &e, (T)(a + 1), 0, __ATOMIC_SEQ_CST, \
					 __ATOMIC_RELAXED);			\
	n += !ok && e == a && x == a;						\
	x = a; e = a;								\
	ok = __atomic_compare_exchange_n(&x, &e, b, 0, __ATOMIC_ACQ_REL,	\
					 __ATOMIC_ACQUIRE);			\
	n += ok && e == a && x == b;						\
	x = a; e = b;								\
	ok = __atomic_compare_exchange_n(&x, &e, b, 1, __ATOMIC_ACQUIRE,	\
					 __ATOMIC_ACQUIRE);			\
	n += !ok && e == a && x == a;						\
	/* a weak CAS may fail spuriously, but not forever */			\
	x = a; e = a;								\
	while (!__atomic_compare_exchange_n(&x, &e, b, 1, __ATOMIC_SEQ_CST,	\
					    __ATOMIC_SEQ_CST))			\
		e = a;								\
	n += x == b;								\
	x = a;									\
	n += __sync_val_compare_and_swap(&x, b, (T)(a + 1)) == a && x == a;	\
	n += __sync_val_compare_and_swap(&x, a, b) == a && x == b;		\
	x = a;									\
	n += __sync_bool_compare_and_swap(&x, a, b) && x == b;			\
	n += !__sync_bool_compare_and_swap(&x, a, b) && x == b;		\
	x = a;									\
	n += __sync_fetch_and_add(&x, b) == a && x == (T)(a + b);		\
	n += __sync_sub_and_fetch(&x, b) == a && x == a;			\
	n += __sync_lock_test_and_set(&x, b) == a && x == b;			\
	__sync_lock_release(&x);						\
	n += x == 0;								\
	return n;								\
}

CHECK_OPS(8, uint8_t)
CHECK_OPS(16, uint16_t)
CHECK_OPS(32, uint32_t)
CHECK_OPS(64, uint64_t)
CHECK_OPS(128, u128)

#define NR_SEMANTIC_CHECKS 22

int main(void)
{
	pthread_t tids[NR_THREADS];
	uint64_t mp_want[NR_THREADS / 2] = { 0 };
	int sb_forbidden = 0, nr_torn = 0;

	expect("w8 semantics", semantics_w8(), NR_SEMANTIC_CHECKS);
	expect("w16 semantics", semantics_w16(), NR_SEMANTIC_CHECKS);
	expect("w32 semantics", semantics_w32(), NR_SEMANTIC_CHECKS);
	expect("w64 semantics", semantics_w64(), NR_SEMANTIC_CHECKS);
	expect("w128 semantics", semantics_w128(), NR_SEMANTIC_CHECKS);

	init_w8();
	init_w16();
	init_w32();
	init_w64();
	init_w128();
	for (int t = 0; t < NR_THREADS; t++)
		if (pthread_create(&tids[t], NULL, worker, (void *)(intptr_t)t)) {
			fprintf(stderr, "pthread_create failed\n");
			return 2;
		}
	for (int t = 0; t < NR_THREADS; t++)
		pthread_join(tids[t], NULL);

	check_w8();
	check_w16();
	check_w32();
	check_w64();
	check_w128();

	expect("c11_flag_lock_plain", plain_under_c11_lock,
	       (u128)NR_ITERS * (1 + 2 + 3 + 4));
	expect("sync_lock_plain", plain_under_sync_lock, (u128)NR_ITERS * NR_THREADS * 2);
	expect("c11_fetch_add", c11_counter, (u128)NR_ITERS * NR_THREADS * 4);
	expect("c11_cas_weak_loop", c11_cas_counter, (u128)NR_ITERS * NR_THREADS * 5);

	for (int c = 0; c < NR_THREADS / 2; c++)
		for (int m = 0; m < NR_MESSAGES; m++)
			for (int w = 0; w < MSG_WORDS; w++)
				mp_want[c] += (uint64_t)m * MSG_WORDS + (uint64_t)w + (uint64_t)(2 * c);
	expect("message_passing_0_to_1", mp_received[0], mp_want[0]);
	expect("message_passing_2_to_3", mp_received[1], mp_want[1]);

	for (int r = 0; r < NR_SB_ROUNDS; r++)
		sb_forbidden += sb_r0[r] == 0 && sb_r1[r] == 0;
	expect("store_buffering_forbidden", sb_forbidden, 0);

	for (int t = 0; t < NR_THREADS; t++)
		nr_torn += torn[t];
	expect("torn_loads", nr_torn, 0);

	if (nr_failures) {
		fprintf(stderr, "atomics_stress: %d mismatches\n", nr_failures);
		return 1;
	}
	return 0;
}
