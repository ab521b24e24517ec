/*
 * test_cond.c - conditional counters and sample streams of the runtime,
 * driven by direct line accesses from two threads (no instrumentation), so
 * every expected value is exact.
 *
 * Address picture (A and B are 64-byte aligned arrays of 4 KiB):
 *
 *   A: [A, A+4096)         B: [B, B+4096)
 *   counter 0: reads   on A                 all threads
 *   counter 1: writes  on A and B           thread 1 only
 *   counter 2: mem_ref everywhere           all threads
 *   counter 3: mem_ref on [A+1024, A+3072) and [A+2048, A+4096) (overlapping)
 *
 * Site where-sets: C holds 8 heap blocks of 256 bytes (4 lines each) of two
 * sites interleaved, s1 s2 s1 s2 ...; D one more block of s1, registered
 * after the arm:
 *
 *   C: [b0 s1][b1 s2][b2 s1][b3 s2][b4 s1][b5 s2][b6 s1][b7 s2]   D: [s1]
 *   counter 0: sites {s1}              -> b0 b2 b4 b6 + D
 *   counter 1: sites {s2} + [b0, b2)   -> b1 b3 b5 b7 + b0 (b1 once)
 *   counter 2: sites {s1, s1}          -> as counter 0 (a site listed twice)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mon.h"

static char A[4096] __attribute__((aligned(64)));
static char B[4096] __attribute__((aligned(64)));
static char C[8 * 256] __attribute__((aligned(64)));
static char D[256] __attribute__((aligned(64)));
static char E[256] __attribute__((aligned(64)));

/* Every line of [p, p + n) once. */
static void touch_lines(const char *p, size_t n)
{
	for (size_t o = 0; o < n; o += 64)
		mon_access((uintptr_t)p + o, 8, MON_ACC_READ, (uintptr_t)touch_lines);
}

/* The site where-sets of the picture above. */
static void test_sites(void)
{
	/* s1 is the id the global A carries as its module index (when it has
	 * one): A's accesses must not count for s1, only heap and mmap blocks */
	uint32_t s1 = mon_objmap_lookup(NULL, (uintptr_t)A)->site_id, s2;
	uint32_t only_s1[1], only_s2[1], twice_s1[2], zero = 0;
	struct mon_range b01 = { (uintptr_t)C, (uintptr_t)C + 512 };
	struct mon_cond_spec specs[3] = { { 0 } }, bad = { 0 };
	uint64_t gen, total[3];

	s1 = s1 ? s1 : 1;
	s2 = s1 + 1;
	only_s1[0] = s1;
	only_s2[0] = s2;
	twice_s1[0] = twice_s1[1] = s1;
	for (int i = 0; i < 8; i++)
		CHECK(mon_objmap_add_block(MON_OBJ_HEAP, (uintptr_t)C + 256 * (uintptr_t)i, 256,
					   i % 2 ? s2 : s1, 0) != NULL);
	bad.metric = AMEBA_M_MEM_REF;
	bad.nr_sites = 1;
	bad.sites = &zero;
	CHECK(mon_cond_arm(&bad, 1, &gen) == AMEBA_EINVAL);	/* site ids start at 1 */
	bad.sites = NULL;
	CHECK(mon_cond_arm(&bad, 1, &gen) == AMEBA_EINVAL);
	for (int i = 0; i < 3; i++)
		specs[i].metric = AMEBA_M_MEM_REF;
	specs[0].nr_sites = 1;
	specs[0].sites = only_s1;
	specs[1].nr_sites = 1;
	specs[1].sites = only_s2;
	specs[1].nr_ranges = 1;
	specs[1].ranges = &b01;
	specs[2].nr_sites = 2;
	specs[2].sites = twice_s1;
	CHECK(mon_cond_arm(specs, 3, &gen) == 0);
	/* a block allocated after the arm counts for its site too */
	CHECK(mon_objmap_add_block(MON_OBJ_HEAP, (uintptr_t)D, sizeof(D), s1, 0) != NULL);
	touch_lines(C, sizeof(C));
	touch_lines(D, sizeof(D));
	touch_lines(A, sizeof(A));		/* a global: no site's */
	CHECK(mon_cond_read(gen, total, NULL, 3, NULL, NULL) == 0);
	CHECK_EQ_U64(total[0], 4 * 4 + 4);
	CHECK_EQ_U64(total[1], 4 * 4 + 4);
	CHECK_EQ_U64(total[2], 4 * 4 + 4);
	CHECK(mon_cond_arm(NULL, 0, &gen) == 0);
	for (int i = 0; i < 8; i++)
		mon_objmap_del_block((uintptr_t)C + 256 * (uintptr_t)i);
	mon_objmap_del_block((uintptr_t)D);
}

static __thread char T[256] __attribute__((aligned(64)));

/*
 * Kind where-sets and exceptions. T is this thread's TLS, S a part of its
 * stack; C holds the interleaved blocks of s1 and s2 as in test_sites:
 *   counter 0: kinds {tls}                      -> T (4 lines)
 *   counter 1: kinds {stack, tls}               -> T + S (8)
 *   counter 2: ranges C, T, S except {s1, tls}  -> s2's blocks + S (16 + 4)
 *   counter 3: ranges C, T, S                   -> all of them (32 + 8)
 *   counter 4: ranges C except {s1} + sites {s1} -> C (32): the exception
 *              leaves the ranges, the site still counts
 */
static void test_kinds_except(void)
{
	char S[256] __attribute__((aligned(64)));
	const struct mon_obj *ot = mon_objmap_lookup(NULL, (uintptr_t)T);
	const struct mon_obj *os = mon_objmap_lookup(NULL, (uintptr_t)S);
	uint32_t s1 = 1, s2 = 2, ex[1] = { 1 };
	struct mon_range cts[3] = { { (uintptr_t)C, (uintptr_t)C + sizeof(C) },
				    { (uintptr_t)T, (uintptr_t)T + sizeof(T) },
				    { (uintptr_t)S, (uintptr_t)S + sizeof(S) } };
	struct mon_cond_spec specs[5] = { { 0 } }, bad = { 0 };
	uint64_t gen, total[5];

	CHECK(ot && ot->kind == MON_OBJ_TLS);
	CHECK(os && os->kind == MON_OBJ_STACK);
	for (int i = 0; i < 8; i++)
		CHECK(mon_objmap_add_block(MON_OBJ_HEAP, (uintptr_t)C + 256 * (uintptr_t)i, 256,
					   i % 2 ? s2 : s1, 0) != NULL);
	bad.metric = AMEBA_M_MEM_REF;
	bad.kinds = 1u << MON_OBJ_HEAP;		/* only stack and TLS are kinds */
	CHECK(mon_cond_arm(&bad, 1, &gen) == AMEBA_EINVAL);
	bad.kinds = 0;
	bad.nr_except_sites = 1;		/* no list */
	CHECK(mon_cond_arm(&bad, 1, &gen) == AMEBA_EINVAL);
	for (int i = 0; i < 5; i++)
		specs[i].metric = AMEBA_M_MEM_REF;
	specs[0].kinds = 1u << MON_OBJ_TLS;
	specs[1].kinds = 1u << MON_OBJ_TLS | 1u << MON_OBJ_STACK;
	specs[2].nr_ranges = 3;
	specs[2].ranges = cts;
	specs[2].nr_except_sites = 1;
	specs[2].except_sites = ex;
	specs[2].except_kinds = 1u << MON_OBJ_TLS;
	specs[3].nr_ranges = 3;
	specs[3].ranges = cts;
	specs[4].nr_ranges = 1;
	specs[4].ranges = cts;
	specs[4].nr_except_sites = 1;
	specs[4].except_sites = ex;
	specs[4].nr_sites = 1;
	specs[4].sites = ex;
	CHECK(mon_cond_arm(specs, 5, &gen) == 0);
	touch_lines(C, sizeof(C));
	touch_lines(T, sizeof(T));
	touch_lines(S, sizeof(S));
	touch_lines(A, sizeof(A));		/* a global: none of the kinds */
	CHECK(mon_cond_read(gen, total, NULL, 5, NULL, NULL) == 0);
	CHECK_EQ_U64(total[0], 4);
	CHECK_EQ_U64(total[1], 8);
	CHECK_EQ_U64(total[2], 16 + 4);
	CHECK_EQ_U64(total[3], 32 + 8);
	CHECK_EQ_U64(total[4], 32);
	CHECK(mon_cond_arm(NULL, 0, &gen) == 0);
	for (int i = 0; i < 8; i++)
		mon_objmap_del_block((uintptr_t)C + 256 * (uintptr_t)i);
}

struct job {
	int reads_a, writes_a, writes_b;
	pthread_barrier_t *go;
};

/* One access per 64-byte line, walking the array from the start. */
static void touch(char *base, int n, unsigned flags)
{
	for (int i = 0; i < n; i++)
		mon_access((uintptr_t)base + (uintptr_t)(i % 64) * 64, 8, flags, (uintptr_t)touch);
}

/*
 * A swap and `before`: set 1 counts mem_ref on A; E becomes a heap block
 * after set 1's arm and gets 4 accesses; set 2 replaces set 1 with counters
 * on A and on E. Set 1's last reading (taken in the swap) has A's 3
 * accesses; set 2 starts from zero, and its `before` has E's 4 when E's
 * counter is served (from E's birth), 0 per access.
 */
static void test_swap_before(void)
{
	struct mon_range ra = { (uintptr_t)A, (uintptr_t)A + sizeof(A) };
	struct mon_range re = { (uintptr_t)E, (uintptr_t)E + sizeof(E) };
	struct mon_cond_spec one = { .metric = AMEBA_M_MEM_REF, .nr_ranges = 1, .ranges = &ra };
	struct mon_cond_spec two[2] = {
		{ .metric = AMEBA_M_MEM_REF, .nr_ranges = 1, .ranges = &ra },
		{ .metric = AMEBA_M_MEM_REF, .nr_ranges = 1, .ranges = &re },
	};
	uint64_t g1, g2, g3, fin_total[1], fin_before[1], total[2], before[2];
	struct mon_cond_final fin = { 0 };
	const char *sv = getenv("AMEBA_COND_SERVED");
	int served = !(sv && !strcmp(sv, "0"));
	const struct mon_obj *oa = mon_objmap_lookup(NULL, (uintptr_t)A), *oe;

	served &= oa->start == (uintptr_t)A && oa->end == (uintptr_t)A + sizeof(A);
	CHECK(mon_cond_arm(&one, 1, &g1) == 0);
	touch(A, 3, MON_ACC_READ);
	CHECK(mon_objmap_add_block(MON_OBJ_HEAP, (uintptr_t)E, sizeof(E), 1, 0) != NULL);
	oe = mon_objmap_lookup(NULL, (uintptr_t)E);
	served &= oe->start == (uintptr_t)E && oe->end == (uintptr_t)E + sizeof(E);
	touch_lines(E, sizeof(E));
	fin.gen = g1;
	fin.total = fin_total;
	fin.before = fin_before;
	fin.nr = 1;
	CHECK(mon_cond_arm_swap(two, 2, &g2, &fin) == 0);
	CHECK(fin.err == 0);
	CHECK_EQ_U64(fin_total[0], 3);
	CHECK(g2 != g1);
	CHECK(mon_cond_read(g1, total, NULL, 1, NULL, NULL) == AMEBA_ENOENT);
	touch_lines(E, sizeof(E));
	CHECK(mon_cond_read(g2, total, before, 2, NULL, NULL) == 0);
	CHECK_EQ_U64(total[0], 0);
	CHECK_EQ_U64(total[1], 4);
	CHECK_EQ_U64(before[1], served ? 4 : 0);
	CHECK(served ? before[0] >= 3 : before[0] == 0);	/* A's since its birth */
	/* a swap naming a generation that is not armed: armed, err ENOENT */
	fin.gen = g1;
	CHECK(mon_cond_arm_swap(&one, 1, &g3, &fin) == 0);
	CHECK(fin.err == AMEBA_ENOENT);
	CHECK(mon_cond_arm(NULL, 0, &g3) == 0);
	printf("swap: E's counter %s, before %lu\n", served ? "served" : "per access",
	       (unsigned long)before[1]);
}

static void *run(void *arg)
{
	struct job *j = arg;

	pthread_barrier_wait(j->go);
	touch(A, j->reads_a, MON_ACC_READ);
	touch(A, j->writes_a, MON_ACC_WRITE);
	touch(B, j->writes_b, MON_ACC_WRITE);
	return NULL;
}

struct per_thread_seen {
	uint64_t v[4][8];
};

static void per_thread_cb(uint32_t id, const uint64_t *vals, const uint64_t *before, uint32_t nr,
			  void *arg)
{
	struct per_thread_seen *s = arg;

	(void)before;
	for (uint32_t i = 0; i < nr && i < 4 && id < 8; i++)
		s->v[i][id] = vals[i];
}

static void run_two(struct job *j1, struct job *j2)
{
	pthread_t t1, t2;
	pthread_barrier_t go;

	pthread_barrier_init(&go, NULL, 3);
	j1->go = j2->go = &go;
	pthread_create(&t1, NULL, run, j1);	/* thread id 1 */
	pthread_create(&t2, NULL, run, j2);	/* thread id 2 */
	pthread_barrier_wait(&go);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	pthread_barrier_destroy(&go);
}

int main(void)
{
	struct mon_range ra = { (uintptr_t)A, (uintptr_t)A + sizeof(A) };
	struct mon_range rab[2] = { ra, { (uintptr_t)B, (uintptr_t)B + sizeof(B) } };
	struct mon_range overlap[2] = { { (uintptr_t)A + 1024, (uintptr_t)A + 3072 },
					{ (uintptr_t)A + 2048, (uintptr_t)A + 4096 } };
	uint32_t only_t1 = 1;
	struct mon_cond_spec specs[4] = {
		{ .metric = AMEBA_M_READS, .nr_ranges = 1, .ranges = &ra },
		{ .metric = AMEBA_M_WRITES, .nr_ranges = 2, .ranges = rab, .nr_threads = 1,
		  .threads = &only_t1 },
		{ .metric = AMEBA_M_MEM_REF },
		{ .metric = AMEBA_M_MEM_REF, .nr_ranges = 2, .ranges = overlap },
	};
	struct per_thread_seen seen;
	uint64_t gen, gen2, total[4];
	struct job j1 = { .reads_a = 10, .writes_a = 20, .writes_b = 30 };
	struct job j2 = { .reads_a = 64, .writes_a = 5, .writes_b = 7 };

	mon_init();
	/* The runtime's code is one range, and the test's own code is outside it. */
	CHECK(mon_pc_in_runtime((uintptr_t)mon_cond_read));
	CHECK(mon_pc_in_runtime((uintptr_t)mon_access));
	CHECK(mon_pc_in_runtime((uintptr_t)mon_sample_drain));
	CHECK(!mon_pc_in_runtime((uintptr_t)touch));
	CHECK(!mon_pc_in_runtime((uintptr_t)main));
	CHECK(mon_activate("no-such-backend") == AMEBA_ENOENT);
	CHECK(mon_activate("count") == 0);
	CHECK(mon_activate("count") == 0);	/* idempotent */

	/* Bad specs are refused and leave nothing armed. */
	struct mon_range empty = { (uintptr_t)A, (uintptr_t)A };
	struct mon_cond_spec bad[2] = { { .metric = AMEBA_M_READS, .nr_ranges = 1, .ranges = &empty },
					{ .metric = AMEBA_M_L1D_MISS } };
	CHECK(mon_cond_arm(&bad[0], 1, &gen) == AMEBA_EINVAL);
	CHECK(mon_cond_arm(&bad[1], 1, &gen) == AMEBA_ENOTSUP);	/* count has no l1d_miss */
	CHECK(mon_cond_armed == 0);

	CHECK(mon_cond_arm(specs, 4, &gen) == 0);
	CHECK(mon_cond_armed == 1);
	run_two(&j1, &j2);
	memset(&seen, 0, sizeof(seen));
	CHECK(mon_cond_read(gen, total, NULL, 4, per_thread_cb, &seen) == 0);
	CHECK_EQ_U64(total[0], 10 + 64);		/* reads on A, both threads */
	CHECK_EQ_U64(total[1], 20 + 30);		/* writes of thread 1 only */
	CHECK_EQ_U64(total[2], 10 + 20 + 30 + 64 + 5 + 7);
	/*
	 * Counter 3 covers lines 16..63 of A once each (the two ranges overlap on
	 * lines 32..47 but count once). Thread 1 touches lines 0..9 (reads) and
	 * 0..19 (writes): lines 16..19 -> 4. Thread 2 reads lines 0..63 -> 48,
	 * writes lines 0..4 -> 0.
	 */
	CHECK_EQ_U64(total[3], 4 + 48);
	CHECK_EQ_U64(seen.v[0][1], 10);
	CHECK_EQ_U64(seen.v[0][2], 64);
	CHECK_EQ_U64(seen.v[1][2], 0);
	CHECK_EQ_U64(seen.v[3][1], 4);
	CHECK_EQ_U64(seen.v[3][2], 48);

	/* Re-arming starts from zero; the old generation is gone. The first
	 * three counters' where-sets are whole objects (A and B are globals of
	 * their exact extents) or everything: read from the per-object counts
	 * (cond.c, "Served counters"), so nothing is left per access; with
	 * AMEBA_COND_SERVED=0, the same values per access. */
	const struct mon_obj *oa = mon_objmap_lookup(NULL, (uintptr_t)A);
	const struct mon_obj *ob = mon_objmap_lookup(NULL, (uintptr_t)B);
	const char *sv = getenv("AMEBA_COND_SERVED");
	int off = sv && !strcmp(sv, "0");	/* before the arm: strcmp is an access */
	int whole = oa->kind == MON_OBJ_GLOBAL && oa->start == (uintptr_t)A &&
		    oa->end == (uintptr_t)A + sizeof(A) && ob->kind == MON_OBJ_GLOBAL &&
		    ob->start == (uintptr_t)B && ob->end == (uintptr_t)B + sizeof(B);

	printf("A and B are %swhole objects; served counters %s\n", whole ? "" : "not ",
	       off ? "off" : "on");
	CHECK(mon_cond_arm(specs, 3, &gen2) == 0);
	CHECK(mon_cond_armed == !(whole && !off));
	CHECK(gen2 != gen);
	CHECK(mon_cond_read(gen, total, NULL, 4, NULL, NULL) == AMEBA_ENOENT);
	CHECK(mon_cond_read(gen2, total, NULL, 3, NULL, NULL) == 0);
	CHECK_EQ_U64(total[2], 0);
	touch(A, 3, MON_ACC_READ);			/* main thread: id 0 */
	CHECK(mon_cond_read(gen2, total, NULL, 3, NULL, NULL) == 0);
	CHECK_EQ_U64(total[0], 3);
	CHECK_EQ_U64(total[1], 0);
	CHECK_EQ_U64(total[2], 3);

	/* Disarm. */
	CHECK(mon_cond_arm(NULL, 0, &gen2) == 0);
	CHECK(mon_cond_armed == 0);

	test_sites();
	test_kinds_except();
	test_swap_before();

	/* Sample streams: every 7th mem_ref per thread, fixed period. */
	struct mon_sample smp[512];
	uint64_t lost = 0;
	uint32_t n, from_a = 0, from_b = 0;

	CHECK(mon_sample_arm(AMEBA_M_L2_MISS, 7, 0, 1) == AMEBA_ENOTSUP);
	CHECK(mon_sample_arm(AMEBA_M_MEM_REF, 7, 0, 1) == 0);
	/*
	 * Each thread's first sample falls at a random phase in [1, 7], then
	 * every 7th: thread 1's 60 accesses give 8 or 9 samples, thread 2's 76
	 * give 10 or 11.
	 */
	run_two(&j1, &j2);
	n = mon_sample_drain(smp, 512, &lost);
	CHECK(n >= 8 + 10 && n <= 9 + 11);
	CHECK_EQ_U64(lost, 0);
	for (uint32_t i = 0; i < n; i++) {
		from_a += smp[i].addr >= (uintptr_t)A && smp[i].addr < (uintptr_t)A + sizeof(A);
		from_b += smp[i].addr >= (uintptr_t)B && smp[i].addr < (uintptr_t)B + sizeof(B);
		CHECK_AT(__LINE__, smp[i].metric == AMEBA_M_MEM_REF && smp[i].weight == 1);
		CHECK_AT(__LINE__, smp[i].pc == (uintptr_t)touch);
	}
	/* thread 1's last 30 accesses are writes of B (4 or 5 samples), thread
	 * 2's last 7 (1 sample, as 7 in a row always hold one) */
	CHECK_EQ_U64(from_a + from_b, n);
	CHECK(from_b >= 4 + 1 && from_b <= 5 + 1);
	CHECK_EQ_U64(mon_sample_drain(smp, 512, &lost), 0);

	/*
	 * Short threads: 64 threads of 3 accesses each under a period of 16.
	 * Each thread starts at a random phase, so 192 accesses give about 12
	 * samples (with a whole period first, as before, none at all).
	 */
	CHECK(mon_sample_arm(AMEBA_M_MEM_REF, 16, 0, 7) == 0);
	for (int k = 0; k < 16; k++) {
		struct job s1 = { .reads_a = 3 }, s2 = { .reads_a = 3 };
		struct job s3 = { .reads_a = 3 }, s4 = { .reads_a = 3 };

		run_two(&s1, &s2);
		run_two(&s3, &s4);
	}
	n = mon_sample_drain(smp, 512, &lost);
	printf("64 threads of 3 accesses, period 16: %u samples (expected ~12)\n", n);
	CHECK(n >= 3 && n <= 30);

	/* Randomised period around a mean: count within the uniform bounds. */
	CHECK(mon_sample_arm(AMEBA_M_MEM_REF, 50, 1, 42) == 0);
	touch(A, 64, MON_ACC_READ);
	for (int r = 0; r < 99; r++)
		touch(B, 64, MON_ACC_READ);	/* 6400 accesses in all */
	n = mon_sample_drain(smp, 512, &lost);
	/* distances in [25, 75]: between 6400/75 and 6400/25 samples */
	CHECK(n >= 6400 / 75 && n <= 6400 / 25 + 1);
	printf("random period 50: %u samples of 6400 accesses\n", n);

	/*
	 * A sample carries the site of the heap block it hit, also of a block
	 * allocated after the stream was armed (no listing involved); a global
	 * (whose site_id field holds its module index) carries none.
	 */
	CHECK(mon_sample_arm(AMEBA_M_MEM_REF, 1, 0, 3) == 0);
	CHECK(mon_objmap_add_block(MON_OBJ_HEAP, (uintptr_t)D, sizeof(D), 7, 0) != NULL);
	touch_lines(D, sizeof(D));		/* 4 lines */
	touch_lines(A, 128);			/* 2 lines */
	n = mon_sample_drain(smp, 512, &lost);
	CHECK_EQ_U64(n, 6);
	for (uint32_t i = 0; i < n; i++) {
		int in_d = smp[i].addr >= (uintptr_t)D && smp[i].addr < (uintptr_t)D + sizeof(D);

		CHECK_AT(__LINE__, smp[i].site_id == (in_d ? 7u : 0u));
		CHECK_AT(__LINE__, i < 4 ? in_d : !in_d);
	}
	mon_objmap_del_block((uintptr_t)D);
	CHECK(mon_sample_arm(AMEBA_M_MEM_REF, 0, 0, 0) == 0);
	CHECK(mon_sample_armed == 0);
	return check_done();
}
