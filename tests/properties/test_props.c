/*
 * test_props.c - the property library on hand-made contexts: FalseSharing's
 * use of the `threads` strategy's notes (ctx.extra), the cost model behind
 * severities, and the conditions of the cause properties on a problem and
 * on its fixed twin.
 *
 * usage: test_props SRC_DIR
 *
 * Notes:
 *  - Each property file is loaded alone (evaluated as a root), so a case
 *    checks that property's own verdict, not the hierarchy (tests/agent
 *    does that).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "check.h"
#include "plugins.h"

#define NR_T 5

static const char *src_dir;

struct hand {
	struct ameba_context c;
	struct ameba_context_data d;	/* c's metric vectors */
	struct ameba_object obj;
	uint32_t ids[NR_T];
	double pt[AMEBA_M_NR][NR_T];
};

/* An object context of threads T0..T4 with every sim metric measured, zero. */
static void hand_init(struct hand *h, const char *name, uint64_t size)
{
	memset(h, 0, sizeof(*h));
	ameba_context_init(&h->c, &h->d);
	h->obj.id = 3;
	h->obj.kind = AMEBA_OBJ_HEAP;
	h->obj.name = name;
	h->obj.site = name;
	h->obj.start = 0x10000;
	h->obj.end = 0x10000 + size;
	h->obj.sz_bytes = size;
	h->obj.nr_blocks = 1;
	h->obj.live = 1;
	h->c.kind = AMEBA_CTX_OBJECT;
	h->c.object = &h->obj;
	h->c.nr_threads = NR_T;
	h->c.thread_ids = h->ids;
	h->c.confidence = 1;
	for (uint32_t t = 0; t < NR_T; t++)
		h->ids[t] = t;
	for (int m = 0; m < AMEBA_M_NR; m++) {
		if (m == AMEBA_M_SAMPLES)
			continue;
		h->d.has[m] = 1;
		h->d.per_thread[m] = h->pt[m];
	}
}

/* Metric m: per thread T1..T4 the same value v (T0: 0); program total prog. */
static void hand_set(struct hand *h, int m, double v, double prog)
{
	h->d.values[m] = 0;
	for (int t = 1; t < NR_T; t++) {
		h->pt[m][t] = v;
		h->d.values[m] += v;
	}
	h->pt[m][0] = 0;
	h->d.program[m] = prog;
}

static void hand_set_t(struct hand *h, int m, const double v[NR_T], double prog)
{
	h->d.values[m] = 0;
	for (int t = 0; t < NR_T; t++) {
		h->pt[m][t] = v[t];
		h->d.values[m] += v[t];
	}
	h->d.program[m] = prog;
}

static int eval(const char *file, const char *name, const struct ameba_context *c,
		struct agent_verdict *v)
{
	struct agent_plugins pl;
	char path[1024], err[512];
	int rc;

	snprintf(path, sizeof(path), "%s/properties/%s", src_dir, file);
	agent_plugins_init(&pl);
	pl.quiet = 1;
	CHECK(agent_plugins_add_file(&pl, path, 1) == 0);
	CHECK(agent_plugins_link(&pl, NULL, 0, err, sizeof(err)) == 0);
	memset(v, 0, sizeof(*v));
	rc = agent_property_eval(&pl, agent_plugins_property(&pl, name), c, AMEBA_M_L1D_MISS, v);
	CHECK(rc == 0);
	agent_plugins_destroy(&pl);
	return v->v.holds;
}

static void check_has(const char *what, const char *text, const char *want)
{
	if (!strstr(text, want))
		fprintf(stderr, "%s: \"%s\"\n  lacks \"%s\"\n", what, text, want);
	CHECK(strstr(text, want) != NULL);
}

#define CHECK_ABS(got, want)                                                              \
	do {                                                                               \
		double g_ = (got), w_ = (want);                                            \
		if (fabs(g_ - w_) > 1e-9)                                                  \
			fprintf(stderr, "%s:%d: %s = %.12g, want %.12g\n", __FILE__,       \
				__LINE__, #got, g_, w_);                                    \
		check_record(fabs(g_ - w_) <= 1e-9, __FILE__, __LINE__, #got " ~= " #want); \
	} while (0)

/*
 * A 64-byte block, 4 writers: 1000 coherence misses each, all false
 * sharing, each an intervention (1000 x 120 cycles) with an invalidation
 * (1000 x 100): 880,000 model cycles; the measured stall is twice that, so
 * every part scales by 2: coherence stall 1,760,000 of 4,000,000 program
 * cycles = 0.44.
 */
static void false_sharing_ctx(struct hand *h)
{
	hand_init(h, "alloc_counters@fs.c:67", 64);
	hand_set(h, AMEBA_M_MEM_REF, 100000, 500000);
	hand_set(h, AMEBA_M_READS, 50000, 250000);
	hand_set(h, AMEBA_M_WRITES, 50000, 250000);
	hand_set(h, AMEBA_M_L1D_MISS, 1000, 5000);
	hand_set(h, AMEBA_M_L2_MISS, 1000, 5000);
	hand_set(h, AMEBA_M_COH_MISS, 1000, 4000);
	hand_set(h, AMEBA_M_COH_MISS_FALSE, 1000, 4000);
	hand_set(h, AMEBA_M_INTERVENTION, 1000, 4000);
	hand_set(h, AMEBA_M_INVAL_SENT, 1000, 4000);
	hand_set(h, AMEBA_M_EST_STALL_CYCLES, 440000, 2000000);
	hand_set(h, AMEBA_M_EST_CYCLES, 840000, 4000000);
}

static void test_false_sharing(void)
{
	struct hand h;
	struct agent_verdict v;

	/* packed per-thread structs of two 8-byte fields, as the threads
	 * strategy reports them */
	false_sharing_ctx(&h);
	h.c.extra = "measured=exact\nline.0=4000,4000,200000\n"
		    "w.1.0=25000,0\nw.1.8=25000,25000\nw.2.16=25000,0\nw.2.24=25000,25000\n"
		    "w.3.32=25000,0\nw.3.40=25000,25000\nw.4.48=25000,0\nw.4.56=25000,25000\n";
	CHECK(eval("false_sharing.lua", "FalseSharing", &h.c, &v));
	CHECK_ABS(v.v.severity, 0.44);
	CHECK_ABS(v.v.confidence, 1.0);
	check_has("evidence", v.v.evidence, "4000 coherence misses, 100.0% false sharing; 4000 "
		  "interventions, 4000 invalidations sent; 4 threads write it (1-4)");
	check_has("evidence", v.v.evidence,
		  "line 0: T1 bytes 0-15, T2 bytes 16-31, T3 bytes 32-47, T4 bytes 48-63");
	check_has("advice", v.v.advice, "Threads 1-4 write their own 16-byte elements 16 bytes apart");
	check_has("advice", v.v.advice,
		  "align each per-thread element to 64 bytes: struct { /* the 16 bytes */ "
		  "char pad[48]; } __attribute__((aligned(64)))");
	CHECK(v.nr_threads == 4 && v.threads[0] == 1 && v.threads[3] == 4);

	/* round-robin words (schedule(static, 1)): interleaved, not padding */
	h.c.extra = "line.0=400,400,800\nline.64=400,400,800\n"
		    "w.1.0=100,0\nw.1.32=100,0\nw.2.8=100,0\nw.2.40=100,0\n"
		    "w.3.16=100,0\nw.3.48=100,0\nw.4.24=100,0\nw.4.56=100,0\n";
	CHECK(eval("false_sharing.lua", "FalseSharing", &h.c, &v));
	check_has("evidence", v.v.evidence, "2 line(s) with false sharing");
	check_has("evidence", v.v.evidence, "T1 words at 0,32");
	check_has("advice", v.v.advice, "write interleaved words of the same lines");

	/* without the notes: the block, its threads, size / writers */
	h.c.extra = NULL;
	CHECK(eval("false_sharing.lua", "FalseSharing", &h.c, &v));
	check_has("advice", v.v.advice, "Threads 1-4 write different words of alloc_counters@fs.c:67 "
		  "(64 bytes: ~16 bytes per thread, in 1 line(s)): align each per-thread element "
		  "to 64 bytes: struct { /* the 16 bytes */ char pad[48]; }");

	/* main wrote the block once before the workers (its initialisation)
	 * and took no false-sharing miss: not one of the contending threads,
	 * and not counted in the bytes per thread (64 / 5 gave ~12) */
	{
		const double w[NR_T] = { 16, 50000, 50000, 50000, 50000 };
		hand_set_t(&h, AMEBA_M_WRITES, w, 250016);
	}
	CHECK(eval("false_sharing.lua", "FalseSharing", &h.c, &v));
	check_has("evidence", v.v.evidence, "4 threads write it (1-4), 1 more without "
		  "false-sharing misses (0)");
	check_has("advice", v.v.advice, "Threads 1-4 write different words of alloc_counters@fs.c:67 "
		  "(64 bytes: ~16 bytes per thread, in 1 line(s))");
	CHECK(v.nr_threads == 4 && v.threads[0] == 1);
	hand_set(&h, AMEBA_M_WRITES, 50000, 250000);

	/* the padded twin: no coherence misses */
	hand_set(&h, AMEBA_M_COH_MISS, 0, 0);
	hand_set(&h, AMEBA_M_COH_MISS_FALSE, 0, 0);
	CHECK(!eval("false_sharing.lua", "FalseSharing", &h.c, &v));

	/* true sharing is not false sharing */
	false_sharing_ctx(&h);
	hand_set(&h, AMEBA_M_COH_MISS_FALSE, 100, 4000);
	hand_set(&h, AMEBA_M_COH_MISS_TRUE, 900, 4000);
	CHECK(!eval("false_sharing.lua", "FalseSharing", &h.c, &v));
	CHECK(eval("true_sharing_contention.lua", "TrueSharingContention", &h.c, &v));
	CHECK_ABS(v.v.severity, 0.44 * 0.9);
	check_has("advice", v.v.advice, "200.0k writes to the shared line become 4");
}

static void test_causes(void)
{
	struct hand h;
	struct agent_verdict v;
	static const double loc[NR_T] = { 50000, 0, 0, 0, 0 };
	static const double rem[NR_T] = { 0, 10000, 0, 10000, 0 };
	static const double wr[NR_T] = { 100000, 0, 0, 0, 0 };

	/* NUMA: T0 wrote it, T1 and T3 read it from the other node.
	 * Model: 50,000 x 220 + 20,000 x 360 = 18.2 M; measured the same. */
	hand_init(&h, "alloc_field@numa.c:45", 16 << 20);
	hand_set(&h, AMEBA_M_MEM_REF, 100000, 400000);
	hand_set_t(&h, AMEBA_M_MEM_LOCAL, loc, 50000);
	hand_set_t(&h, AMEBA_M_MEM_REMOTE, rem, 20000);
	hand_set_t(&h, AMEBA_M_WRITES, wr, 100000);
	hand_set(&h, AMEBA_M_EST_STALL_CYCLES, 18200000 / 4.0, 18200000);
	hand_set(&h, AMEBA_M_EST_CYCLES, 10000000, 40000000);
	CHECK(eval("remote_mem_access.lua", "RemoteMemAccess", &h.c, &v));
	CHECK_ABS(v.v.severity, 20000.0 * 140 / 40000000);
	CHECK(v.nr_threads == 2 && v.threads[0] == 1 && v.threads[1] == 3);
	check_has("advice", v.v.advice, "first touched by thread 0");
	CHECK(eval("numa_hotspot.lua", "NumaHotspot", &h.c, &v));
	CHECK_ABS(v.v.severity, 0.5 * 20000.0 * 140 / 40000000);
	hand_set(&h, AMEBA_M_MEM_REMOTE, 0, 0);		/* parallel first touch */
	CHECK(!eval("remote_mem_access.lua", "RemoteMemAccess", &h.c, &v));
	CHECK(!eval("numa_hotspot.lua", "NumaHotspot", &h.c, &v));

	/* TLB: a miss every 2 accesses; 30 cycles each */
	hand_init(&h, "alloc_x@tlb.c:50", 8 << 20);
	hand_set(&h, AMEBA_M_MEM_REF, 100000, 400000);
	hand_set(&h, AMEBA_M_TLB_MISS, 50000, 200000);
	hand_set(&h, AMEBA_M_EST_STALL_CYCLES, 1500000, 6000000);
	hand_set(&h, AMEBA_M_EST_CYCLES, 3000000, 12000000);
	CHECK(eval("tlb_thrashing.lua", "TLBThrashing", &h.c, &v));
	CHECK_ABS(v.v.severity, 0.5);
	check_has("advice", v.v.advice, "One TLB miss every 2.0 accesses");
	hand_set(&h, AMEBA_M_TLB_MISS, 5000, 20000);	/* blocked: 1 in 20 */
	CHECK(!eval("tlb_thrashing.lua", "TLBThrashing", &h.c, &v));

	/* conflict: 7/8 of the L1D misses, served by the L2 (14 cycles) */
	hand_init(&h, "rows", 512 << 10);
	hand_set(&h, AMEBA_M_MEM_REF, 80000, 320000);
	hand_set(&h, AMEBA_M_L1D_MISS, 80000, 320000);
	hand_set(&h, AMEBA_M_CONFLICT_MISS, 70000, 280000);
	hand_set(&h, AMEBA_M_EST_STALL_CYCLES, 80000 * 14, 320000 * 14);
	hand_set(&h, AMEBA_M_EST_CYCLES, 80000 * 18, 320000 * 18);
	CHECK(eval("conflict_misses.lua", "ConflictMisses", &h.c, &v));
	CHECK_ABS(v.v.severity, 14.0 * 7 / 8 / 18);
	check_has("advice", v.v.advice, "pad the leading dimension by one cache line");
	hand_set(&h, AMEBA_M_CONFLICT_MISS, 0, 0);
	CHECK(!eval("conflict_misses.lua", "ConflictMisses", &h.c, &v));

	/* imbalance: T1 does 5/8 of the work, T2..T4 1/8 each; T0 is left out */
	{
		static const double refs[NR_T] = { 400000, 500000, 100000, 100000, 100000 };
		static const double cyc[NR_T] = { 800000, 5000000, 1000000, 1000000, 1000000 };
		static const double fair[NR_T] = { 800000, 2000000, 2000000, 2000000, 2000000 };

		hand_init(&h, "alloc_cells@imb.c:47", 16 << 20);
		hand_set_t(&h, AMEBA_M_MEM_REF, refs, 1200000);
		hand_set_t(&h, AMEBA_M_EST_CYCLES, cyc, 10000000);
		CHECK(eval("unbalanced_thread_misses.lua", "UnbalancedThreadMisses", &h.c, &v));
		CHECK_ABS(v.v.severity, (5000000.0 - 2000000.0) / 10000000);
		CHECK(v.nr_threads == 1 && v.threads[0] == 1);
		hand_set_t(&h, AMEBA_M_EST_CYCLES, fair, 10000000);
		CHECK(!eval("unbalanced_thread_misses.lua", "UnbalancedThreadMisses", &h.c, &v));
	}
}

/* WriteMissesToReadMostly, and the L2 / LLC / read / write miss-rate variants */
static void test_rates(void)
{
	struct hand h;
	struct agent_verdict v;

	/* a table read by T1..T4 (99% reads) whose rare writes mostly miss
	 * and invalidate the readers: 100 coherence misses served by 100
	 * interventions of 120 cycles: 12,000 of 1,000,000 program cycles */
	hand_init(&h, "config", 4096);
	hand_set(&h, AMEBA_M_MEM_REF, 10000, 100000);
	hand_set(&h, AMEBA_M_READS, 9900, 99000);
	hand_set(&h, AMEBA_M_WRITES, 100, 1000);
	hand_set(&h, AMEBA_M_L1D_MISS, 100, 1000);
	hand_set(&h, AMEBA_M_L1D_MISS_WR, 60, 600);
	hand_set(&h, AMEBA_M_L2_MISS, 25, 250);
	hand_set(&h, AMEBA_M_COH_MISS, 25, 250);
	hand_set(&h, AMEBA_M_INTERVENTION, 25, 250);
	hand_set(&h, AMEBA_M_EST_STALL_CYCLES, 75 * 14 + 25 * 120, 100000);
	hand_set(&h, AMEBA_M_EST_CYCLES, 250000, 1000000);
	CHECK(eval("write_misses_read_mostly.lua", "WriteMissesToReadMostly", &h.c, &v));
	CHECK_ABS(v.v.severity, 100.0 * 120 / 1000000);
	check_has("evidence", v.v.evidence, "99.0% of its accesses read; 400 writes, 60.0% of them miss");
	hand_set(&h, AMEBA_M_L1D_MISS_WR, 0, 0);	/* writes that hit: no */
	CHECK(!eval("write_misses_read_mostly.lua", "WriteMissesToReadMostly", &h.c, &v));

	/* wl_cxx's tally: every access a relaxed fetch_add, counted as a read and
	 * a write of one access (reads = writes = mem_ref, 100% "read"), every
	 * write missing on a line the other workers hold. Not read-mostly: the
	 * false sharing is FalseSharing's, not this property's. */
	hand_init(&h, "allocate@new_allocator.h:137 <- main@cxx.cpp:141", 32);
	hand_set(&h, AMEBA_M_MEM_REF, 300000, 1500000);
	hand_set(&h, AMEBA_M_READS, 300000, 1400000);
	hand_set(&h, AMEBA_M_WRITES, 300000, 320000);
	hand_set(&h, AMEBA_M_L1D_MISS, 200000, 1000000);
	hand_set(&h, AMEBA_M_L1D_MISS_WR, 200000, 800000);
	hand_set(&h, AMEBA_M_L2_MISS, 200000, 800000);	/* all served by interventions */
	hand_set(&h, AMEBA_M_COH_MISS, 200000, 800000);
	hand_set(&h, AMEBA_M_INTERVENTION, 200000, 800000);
	hand_set(&h, AMEBA_M_EST_STALL_CYCLES, 200000 * 120, 200000000);
	hand_set(&h, AMEBA_M_EST_CYCLES, 100000000, 400000000);
	CHECK(!eval("write_misses_read_mostly.lua", "WriteMissesToReadMostly", &h.c, &v));
	/* ... and with 10 plain reads per fetch_add the object is read-mostly
	 * (reads 100%, writes 9.1% of the accesses): it fires, on the same
	 * coherence cycles, 4 x 200,000 interventions of 120 of 400 M cycles */
	hand_set(&h, AMEBA_M_MEM_REF, 3300000, 13500000);
	hand_set(&h, AMEBA_M_READS, 3300000, 13400000);
	CHECK(eval("write_misses_read_mostly.lua", "WriteMissesToReadMostly", &h.c, &v));
	CHECK_ABS(v.v.severity, 800000.0 * 120 / 400000000);
	/* 5 reads per fetch_add: writes are 16.7% of the accesses, too many */
	hand_set(&h, AMEBA_M_MEM_REF, 1800000, 7500000);
	hand_set(&h, AMEBA_M_READS, 1800000, 7400000);
	CHECK(!eval("write_misses_read_mostly.lua", "WriteMissesToReadMostly", &h.c, &v));

	/* per-thread rates: T1..T4 miss on 25% of their accesses in L1D, L2 and
	 * the LLC; on reads 30%, on writes 10% */
	hand_init(&h, "grid", 1 << 20);
	hand_set(&h, AMEBA_M_MEM_REF, 10000, 40000);
	hand_set(&h, AMEBA_M_READS, 5000, 20000);
	hand_set(&h, AMEBA_M_WRITES, 5000, 20000);
	hand_set(&h, AMEBA_M_L1D_MISS, 2500, 10000);
	hand_set(&h, AMEBA_M_L1D_MISS_RD, 1500, 6000);
	hand_set(&h, AMEBA_M_L1D_MISS_WR, 500, 2000);
	hand_set(&h, AMEBA_M_L2_MISS, 2500, 10000);
	hand_set(&h, AMEBA_M_LLC_MISS, 2500, 10000);
	hand_set(&h, AMEBA_M_MEM_LOCAL, 2500, 10000);
	CHECK(eval("thread_miss_rate.lua", "ThreadMissRate", &h.c, &v));
	/* no latency model: the misses beyond 20%, 4 x 500, of 10,000 */
	CHECK_ABS(v.v.severity, 0.2);
	CHECK(eval("l2_thread_miss_rate.lua", "L2ThreadMissRate", &h.c, &v));
	CHECK(eval("llc_thread_miss_rate.lua", "LLCThreadMissRate", &h.c, &v));
	CHECK(eval("thread_read_miss_rate.lua", "ThreadReadMissRate", &h.c, &v));
	check_has("evidence", v.v.evidence, "thread 1: 30.0% of its reads miss");
	CHECK(!eval("thread_write_miss_rate.lua", "ThreadWriteMissRate", &h.c, &v));
	/* balanced rates: no Unbalanced*; T4 at twice the rate: all three */
	CHECK(!eval("unbalanced_thread_miss_rate.lua", "UnbalancedThreadMissRate", &h.c, &v));
	h.pt[AMEBA_M_L1D_MISS][4] = h.pt[AMEBA_M_L2_MISS][4] = h.pt[AMEBA_M_LLC_MISS][4] = 5000;
	CHECK(eval("unbalanced_thread_miss_rate.lua", "UnbalancedThreadMissRate", &h.c, &v));
	CHECK(v.nr_threads == 1 && v.threads[0] == 4);
	CHECK(eval("unbalanced_l2_thread_miss_rate.lua", "UnbalancedL2ThreadMissRate", &h.c, &v));
	CHECK(eval("unbalanced_llc_thread_miss_rate.lua", "UnbalancedLLCThreadMissRate", &h.c, &v));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s SRC_DIR\n", argv[0]);
		return 2;
	}
	src_dir = argv[1];
	test_false_sharing();
	test_causes();
	test_rates();
	return check_done();
}
