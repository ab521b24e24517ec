/*
 * test_perfmon.c - unit tests of the out-of-process monitor's pure parts
 * (agent/perfmon/): ring-buffer records, data_src decoding, multiplex
 * scaling, range estimates, libpfm4 encodings for forced PMU models, and
 * the object map of a live process (this one), and the backend table as
 * the agent sees it (`ameba list backends` lists exactly its rows).
 *
 *   test_perfmon ring|dsrc|scale|procmap|record|table   (no PMU needed)
 *   test_perfmon pfm MODEL      with LIBPFM_FORCE_PMU=MODEL in the environment
 *
 * Exit 77 (skip) when a live part needs what the machine lacks.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ameba/ameba.h"
#include "check.h"
#include "perfmon.h"
#include "pfm.h"
#include "procmap.h"
#include "ring.h"

/* ---- a synthetic ring ---- */

#define RING_BYTES 4096u

struct writer {
	uint8_t data[RING_BYTES];
	uint64_t head;
};

static void put(struct writer *w, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		w->data[(w->head + i) & (RING_BYTES - 1)] = ((const uint8_t *)p)[i];
	w->head += n;
}

static void put64(struct writer *w, uint64_t v)
{
	put(w, &v, 8);
}

static void put_hdr(struct writer *w, uint32_t type, uint16_t size)
{
	struct perf_event_header h = { type, 0, size };

	put(w, &h, sizeof(h));
}

#define ALL_TYPES (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
		   PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | \
		   PERF_SAMPLE_PERIOD | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_WEIGHT | \
		   PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_PHYS_ADDR)
#define REGS_MASK ((1ull << 5) | (1ull << 4) | (1ull << 0))	/* di, si, ax (x86 order) */

/* One sample with every field; k varies the values. 8 + 16 * 8 bytes. */
static void put_sample(struct writer *w, uint64_t k)
{
	put_hdr(w, PERF_RECORD_SAMPLE, 8 + 16 * 8);
	put64(w, 0x1000 + k);				/* identifier */
	put64(w, 0x400000 + k);				/* ip */
	put64(w, ((uint64_t)(200 + k) << 32) | 100);	/* pid 100, tid 200+k */
	put64(w, 5000000 + k);				/* time */
	put64(w, 0x7f0000001000ull + 64 * k);		/* addr */
	put64(w, 0x1000 + k);				/* id */
	put64(w, 0x2000 + k);				/* stream id */
	put64(w, 3);					/* cpu 3, res 0 */
	put64(w, 10007);				/* period */
	put64(w, PERF_SAMPLE_REGS_ABI_64);		/* regs abi */
	put64(w, 0xaa + k);				/* ax */
	put64(w, 0x5150 + k);				/* si */
	put64(w, 0xd1d1 + k);				/* di */
	put64(w, 42 + k);				/* weight */
	put64(w, 0xabcdef);				/* data_src */
	put64(w, 0x12345000 + k);			/* phys addr */
}

struct collect {
	struct pm_sample s[64];
	uint32_t nr;
};

static void collect_fn(void *arg, const struct pm_sample *s)
{
	struct collect *c = arg;

	if (c->nr < 64)
		c->s[c->nr++] = *s;
}

static void test_ring(void)
{
	static struct writer w;
	struct pm_ring_stats st = { 0 };
	struct collect c = { .nr = 0 };
	uint64_t tail, start;

	/* start near the end so that records wrap around */
	w.head = start = RING_BYTES - 200;
	put_sample(&w, 0);		/* 136 bytes: fits */
	put_sample(&w, 1);		/* wraps in the middle of its fields */
	put_hdr(&w, PERF_RECORD_LOST, 8 + 3 * 8);
	put64(&w, 0x1000);		/* id */
	put64(&w, 7);			/* lost */
	put64(&w, 0);			/* sample_id padding */
	put_hdr(&w, PERF_RECORD_THROTTLE, 8 + 3 * 8);
	put64(&w, 1);
	put64(&w, 2);
	put64(&w, 3);
	put_hdr(&w, PERF_RECORD_UNTHROTTLE, 8 + 3 * 8);
	put64(&w, 1);
	put64(&w, 2);
	put64(&w, 3);
	put_hdr(&w, PERF_RECORD_MMAP, 8 + 8);	/* another type: skipped */
	put64(&w, 0);
	put_sample(&w, 2);
	tail = pm_ring_parse(w.data, RING_BYTES, start, w.head, ALL_TYPES, REGS_MASK, collect_fn,
			     &c, &st);
	CHECK_EQ_U64(tail, w.head);
	CHECK_EQ_U64(st.nr_samples, 3);
	CHECK_EQ_U64(c.nr, 3);
	CHECK_EQ_U64(st.nr_lost, 7);
	CHECK_EQ_U64(st.nr_throttle, 1);
	CHECK_EQ_U64(st.nr_unthrottle, 1);
	CHECK_EQ_U64(st.nr_other, 1);
	CHECK_EQ_U64(st.nr_bad, 0);
	for (uint32_t k = 0; k < c.nr; k++) {
		const struct pm_sample *s = &c.s[k];

		CHECK_EQ_U64(s->ip, 0x400000 + k);
		CHECK_EQ_U64(s->pid, 100);
		CHECK_EQ_U64(s->tid, 200 + k);
		CHECK_EQ_U64(s->time_ns, 5000000 + k);
		CHECK_EQ_U64(s->addr, 0x7f0000001000ull + 64 * k);
		CHECK_EQ_U64(s->id, 0x1000 + k);
		CHECK_EQ_U64(s->stream_id, 0x2000 + k);
		CHECK_EQ_U64(s->cpu, 3);
		CHECK_EQ_U64(s->period, 10007);
		CHECK_EQ_U64(s->nr_regs, 3);
		CHECK_EQ_U64(s->regs[0], 0xaa + k);
		CHECK_EQ_U64(s->regs[2], 0xd1d1 + k);
		CHECK_EQ_U64(s->weight, 42 + k);
		CHECK_EQ_U64(s->data_src, 0xabcdef);
		CHECK_EQ_U64(s->phys_addr, 0x12345000 + k);
	}
	/* a sample truncated by its header size: malformed, parsing stops */
	memset(&st, 0, sizeof(st));
	c.nr = 0;
	start = w.head;
	put_hdr(&w, PERF_RECORD_SAMPLE, 8 + 2 * 8);
	put64(&w, 1);
	put64(&w, 2);
	tail = pm_ring_parse(w.data, RING_BYTES, start, w.head, ALL_TYPES, REGS_MASK, collect_fn,
			     &c, &st);
	CHECK_EQ_U64(st.nr_bad, 1);
	CHECK_EQ_U64(c.nr, 0);
	CHECK_EQ_U64(tail, w.head);
	/* a zero-sized header never loops */
	memset(&st, 0, sizeof(st));
	start = w.head;
	put_hdr(&w, PERF_RECORD_SAMPLE, 0);
	tail = pm_ring_parse(w.data, RING_BYTES, start, w.head, ALL_TYPES, REGS_MASK, NULL, NULL,
			     &st);
	CHECK_EQ_U64(st.nr_bad, 1);
	CHECK_EQ_U64(tail, w.head);
	/* an incomplete record (head mid-record) waits for the rest */
	memset(&st, 0, sizeof(st));
	start = w.head;
	put_sample(&w, 5);
	tail = pm_ring_parse(w.data, RING_BYTES, start, w.head - 8, ALL_TYPES, REGS_MASK, NULL,
			     NULL, &st);
	CHECK_EQ_U64(st.nr_bad, 1);	/* size beyond head is refused, not misread */
	/* a minimal sample type */
	memset(&st, 0, sizeof(st));
	c.nr = 0;
	start = w.head;
	put_hdr(&w, PERF_RECORD_SAMPLE, 8 + 2 * 8);
	put64(&w, ((uint64_t)77 << 32) | 76);
	put64(&w, 0xdead000);
	tail = pm_ring_parse(w.data, RING_BYTES, start, w.head, PERF_SAMPLE_TID | PERF_SAMPLE_ADDR,
			     0, collect_fn, &c, &st);
	CHECK_EQ_U64(c.nr, 1);
	CHECK_EQ_U64(c.s[0].tid, 77);
	CHECK_EQ_U64(c.s[0].addr, 0xdead000);
	CHECK_EQ_U64(tail, w.head);
}

/* ---- data_src ---- */

#define dsrc(op, lvl, snoop, tlb, lvlnum, remote)                                          \
	(((uint64_t)(op) << PERF_MEM_OP_SHIFT) | ((uint64_t)(lvl) << PERF_MEM_LVL_SHIFT) |  \
	 ((uint64_t)(snoop) << PERF_MEM_SNOOP_SHIFT) | ((uint64_t)(tlb) << PERF_MEM_TLB_SHIFT) | \
	 ((uint64_t)(lvlnum) << PERF_MEM_LVLNUM_SHIFT) |                                     \
	 ((uint64_t)(remote) << PERF_MEM_REMOTE_SHIFT))

static void test_dsrc(void)
{
	static const struct {
		int line;
		uint64_t v;
		int level, remote, hitm, tlb, store;
		int m_l1, m_llc, m_local, m_remote, m_coh;
	} rows[] = {
		{ __LINE__, dsrc(PERF_MEM_OP_LOAD, PERF_MEM_LVL_L1 | PERF_MEM_LVL_HIT, 0, 0, 0, 0),
		  PM_LVL_L1, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
		{ __LINE__, dsrc(PERF_MEM_OP_LOAD, PERF_MEM_LVL_L2 | PERF_MEM_LVL_HIT, 0, 0, 0, 0),
		  PM_LVL_L2, 0, 0, 0, 0, 1, 0, 0, 0, 0 },
		{ __LINE__, dsrc(PERF_MEM_OP_LOAD, PERF_MEM_LVL_LOC_RAM | PERF_MEM_LVL_HIT, 0,
				 PERF_MEM_TLB_MISS | PERF_MEM_TLB_L2, 0, 0),
		  PM_LVL_RAM, 0, 0, 1, 0, 1, 1, 1, 0, 0 },
		{ __LINE__,
		  dsrc(PERF_MEM_OP_LOAD, PERF_MEM_LVL_REM_RAM1 | PERF_MEM_LVL_HIT, 0, 0, 0, 0),
		  PM_LVL_RAM, 1, 0, 0, 0, 1, 1, 0, 1, 0 },
		{ __LINE__, dsrc(PERF_MEM_OP_LOAD, PERF_MEM_LVL_L3 | PERF_MEM_LVL_HIT,
				 PERF_MEM_SNOOP_HITM, 0, 0, 0),
		  PM_LVL_L3, 0, 1, 0, 0, 1, 0, 0, 0, 1 },
		{ __LINE__, dsrc(PERF_MEM_OP_STORE, PERF_MEM_LVL_NA, 0, 0, PERF_MEM_LVLNUM_RAM, 1),
		  PM_LVL_RAM, 1, 0, 0, 1, 1, 1, 0, 1, 0 },
		{ __LINE__,
		  dsrc(PERF_MEM_OP_LOAD, PERF_MEM_LVL_NA, 0, 0, PERF_MEM_LVLNUM_ANY_CACHE, 1),
		  PM_LVL_REMOTE_CACHE, 1, 0, 0, 0, 1, 1, 0, 1, 0 },
		{ __LINE__, dsrc(PERF_MEM_OP_LOAD, PERF_MEM_LVL_LFB | PERF_MEM_LVL_HIT, 0, 0, 0, 0),
		  PM_LVL_LFB, 0, 0, 0, 0, 1, 0, 0, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct pm_dsrc d;
		double v[AMEBA_M_NR] = { 0 };

		pm_dsrc_decode(rows[i].v, &d);
		pm_dsrc_metrics(&d, v);
		CHECK_AT(rows[i].line, d.level == rows[i].level);
		CHECK_AT(rows[i].line, d.remote == rows[i].remote);
		CHECK_AT(rows[i].line, d.hitm == rows[i].hitm);
		CHECK_AT(rows[i].line, d.tlb_miss == rows[i].tlb);
		CHECK_AT(rows[i].line, d.store == rows[i].store);
		CHECK_AT(rows[i].line, v[AMEBA_M_MEM_REF] == 1);
		CHECK_AT(rows[i].line, v[AMEBA_M_L1D_MISS] == rows[i].m_l1);
		CHECK_AT(rows[i].line, v[AMEBA_M_LLC_MISS] == rows[i].m_llc);
		CHECK_AT(rows[i].line, v[AMEBA_M_MEM_LOCAL] == rows[i].m_local);
		CHECK_AT(rows[i].line, v[AMEBA_M_MEM_REMOTE] == rows[i].m_remote);
		CHECK_AT(rows[i].line, v[AMEBA_M_COH_MISS] == rows[i].m_coh);
		CHECK_AT(rows[i].line, v[AMEBA_M_WRITES] == rows[i].store);
	}
}

/* ---- scaling and estimates ---- */

static void test_scale(void)
{
	struct pm_estimate e;
	int ran;

	CHECK(pm_scale(1000, 200, 100, &ran) == 2000 && ran);
	CHECK(pm_scale(1000, 200, 200, &ran) == 1000 && ran);
	CHECK(pm_scale(1000, 200, 0, &ran) == 0 && !ran);
	CHECK(pm_scale(999, 300, 100, &ran) == 2997);
	pm_estimate_range(100, 1000, 10007, &e);
	CHECK(e.value == 1000700.0);
	CHECK(e.nr_samples == 100);
	CHECK(e.confidence > 0.8039 && e.confidence < 0.8041);	/* 1 - 1.96/10 */
	pm_estimate_range(1, 10, 10007, &e);
	CHECK(e.confidence == 0);	/* one sample says little */
	pm_estimate_range(0, 0, 10007, &e);
	CHECK(e.value == 0 && e.confidence == 0);
	pm_estimate_range(0, 10000, 10007, &e);
	CHECK(e.value == 0 && e.confidence > 0.98);	/* many samples, none here */
	pm_estimate_range(10000, 10000, 1, &e);
	CHECK(e.value == 10000 && e.confidence > 0.98);
}

/* ---- libpfm4 with a forced model ---- */

static void check_enc(int line, const char *ev, uint32_t type, uint64_t config, uint64_t config1,
		      uint32_t precise, uint64_t period)
{
	struct pm_encoding e;
	char msg[256];
	int rc = pm_pfm_encode(ev, &e, msg, sizeof(msg));

	if (rc)
		fprintf(stderr, "%s\n", msg);
	CHECK_AT(line, rc == 0);
	CHECK_AT(line, e.type == type);
	if (e.config != config)
		fprintf(stderr, "line %d: %s: config %#llx, want %#llx\n", line, ev,
			(unsigned long long)e.config, (unsigned long long)config);
	CHECK_AT(line, e.config == config);
	CHECK_AT(line, e.config1 == config1);
	CHECK_AT(line, e.precise_ip == precise);
	CHECK_AT(line, e.sample_period == period);
	CHECK_AT(line, e.exclude_kernel == 1);	/* user level only */
}

/* The table's event for metric m on model encodes to raw config cfg. */
#define RAW(m, cfg) check_enc(__LINE__, ev((m), model, ""), PERF_TYPE_RAW, (cfg), 0, 0, 0)

/* The event the table gives for metric on model, with modifiers appended. */
static const char *ev(int metric, const char *model, const char *mods)
{
	static char buf[512];
	const char *e = pm_pfm_event_for(metric, model);

	snprintf(buf, sizeof(buf), "%s%s", e ? e : "none", mods);
	return buf;
}

static int test_pfm(const char *model)
{
	char pmus[256];

	if (pm_pfm_probe(pmus, sizeof(pmus)) && !strcmp(model, "generic")) {
		printf("SKIP: libpfm4 does not initialise here\n");
		return 77;
	}
	if (!strcmp(model, "generic"))
		goto generic;
	if (!strstr(pmus, model)) {
		fprintf(stderr, "libpfm4 does not present %s (LIBPFM_FORCE_PMU=%s set? got '%s')\n",
			model, model, pmus);
		return 1;
	}
	/* raw encodings: event | umask << 8, PERF_TYPE_RAW; from the vendors' tables */
	if (!strcmp(model, "skx") || !strcmp(model, "spr")) {
		RAW(AMEBA_M_L1D_MISS, 0x08d1);
		check_enc(__LINE__, ev(AMEBA_M_L1D_MISS, model, ":precise=2"), PERF_TYPE_RAW,
			  0x08d1, 0, 2, 0);
		RAW(AMEBA_M_LLC_MISS, 0x20d1);
		check_enc(__LINE__, ev(AMEBA_M_WRITES, model, ":period=10007"), PERF_TYPE_RAW,
			  0x82d0, 0, 0, 10007);
		RAW(AMEBA_M_MEM_REF, 0x81d0);
		/* load latency: ldlat lands in config1 */
		check_enc(__LINE__, ev(AMEBA_M_SAMPLES, model, ""), PERF_TYPE_RAW, 0x01cd, 3, 0, 0);
		check_enc(__LINE__, "MEM_TRANS_RETIRED:LOAD_LATENCY:ldlat=64:precise=2",
			  PERF_TYPE_RAW, 0x01cd, 64, 2, 0);
		if (!strcmp(model, "skx"))
			RAW(AMEBA_M_TLB_MISS, 0x0108);
		else
			RAW(AMEBA_M_TLB_MISS, 0x0e12);
	} else {
		RAW(AMEBA_M_MEM_REF, 0x0129);
		RAW(AMEBA_M_WRITES, 0x0229);
		RAW(AMEBA_M_L1D_MISS, 0x3f41);
		RAW(AMEBA_M_TLB_MISS, 0xd045);
		RAW(AMEBA_M_MEM_LOCAL, 0x0844);
		check_enc(__LINE__, ev(AMEBA_M_MEM_REMOTE, model, ""), PERF_TYPE_RAW, 0x5044, 0, 0,
			  0);
		/* sampling goes through IBS op: no event in the table */
		CHECK(pm_pfm_event_for(AMEBA_M_SAMPLES, model) == NULL);
	}
	return 0;
generic:
	/* generic events (libpfm4's perf table, unforced) encode as perf's own types */
	check_enc(__LINE__, "perf::PERF_COUNT_HW_CPU_CYCLES", PERF_TYPE_HARDWARE,
		  PERF_COUNT_HW_CPU_CYCLES, 0, 0, 0);
	check_enc(__LINE__, ev(AMEBA_M_L1D_MISS, NULL, ""), PERF_TYPE_HW_CACHE,
		  PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
		  (PERF_COUNT_HW_CACHE_RESULT_MISS << 16), 0, 0, 0);
	{
		struct pm_encoding e;
		char msg[256];

		CHECK(pm_pfm_encode("NO_SUCH_EVENT_XYZ", &e, msg, sizeof(msg)) == -1);
		CHECK(strstr(msg, "NO_SUCH_EVENT_XYZ") != NULL);
	}
	return 0;
}

/* ---- the object map of this process ---- */

char perfmon_test_global[3000] = { 1 };

static void test_procmap(void)
{
	struct pm_procmap m = { .pid = getpid() };
	const struct ameba_object *o;
	int found = 0, heap = 0, stack = 0, sorted = 1;
	void *big = malloc(100);

	CHECK(pm_procmap_refresh(&m, NULL, 0) == 0);
	for (uint32_t i = 0; i < m.nr_objs; i++) {
		const struct ameba_object *x = &m.objs[i];

		if (i && x->start < m.objs[i - 1].end)
			sorted = 0;
		if (x->name && !strcmp(x->name, "perfmon_test_global")) {
			found = 1;
			CHECK_EQ_U64(x->start, (uintptr_t)perfmon_test_global);
			CHECK_EQ_U64(x->sz_bytes, sizeof(perfmon_test_global));
			CHECK(x->kind == AMEBA_OBJ_GLOBAL);
		}
		heap |= x->kind == AMEBA_OBJ_HEAP;
		stack |= x->kind == AMEBA_OBJ_STACK;
	}
	CHECK(sorted);
	CHECK(found);
	CHECK(heap);
	CHECK(stack);
	o = pm_procmap_find(&m, (uintptr_t)&perfmon_test_global[1234]);
	CHECK(o && o->name && !strcmp(o->name, "perfmon_test_global"));
	/* a heap block given as an extra object is carved out of [heap] */
	{
		struct pm_extra_obj x = { (uintptr_t)big, (uintptr_t)big + 100, "block",
					  "site@t.c:1", (uintptr_t)big };

		CHECK(pm_procmap_refresh(&m, &x, 1) == 0);
		o = pm_procmap_find(&m, (uintptr_t)big + 50);
		CHECK(o && o->name && !strcmp(o->name, "block") && o->sz_bytes == 100);
		o = pm_procmap_find(&m, (uintptr_t)big + 100);
		CHECK(!o || strcmp(o->name, "block"));
		for (uint32_t i = 1; i < m.nr_objs; i++)
			CHECK(m.objs[i].start >= m.objs[i - 1].end);
	}
	pm_procmap_free(&m);
	free(big);
	CHECK(pm_procmap_refresh(&(struct pm_procmap){ .pid = 0x7ffffff0 }, NULL, 0) == -ESRCH);
}

/* ---- a recorded byte stream: page faults of this process ---- */

static int test_record(void)
{
	struct perf_event_attr a = { 0 };
	struct pm_ring_stats st = { 0 };
	struct collect c = { .nr = 0 };
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = 32, in = 0;
	struct perf_event_mmap_page *mp;
	uint8_t *region;
	void *ring;
	long fd;

	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_PAGE_FAULTS;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_ADDR | PERF_SAMPLE_IP | PERF_SAMPLE_TIME;
	a.exclude_kernel = 1;
	a.disabled = 1;
	fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0) {
		printf("SKIP: perf_event_open of page faults: %s\n", strerror(errno));
		return 77;
	}
	ring = mmap(NULL, 9 * page, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
	region = mmap(NULL, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(ring != MAP_FAILED && region != MAP_FAILED);
	if (ring == MAP_FAILED || region == MAP_FAILED)
		return 1;
	madvise(region, n * page, MADV_NOHUGEPAGE);
	ioctl((int)fd, PERF_EVENT_IOC_ENABLE, 0);
	for (size_t i = 0; i < n; i++)
		region[i * page + 8] = 1;
	ioctl((int)fd, PERF_EVENT_IOC_DISABLE, 0);
	mp = ring;
	pm_ring_parse((uint8_t *)ring + page, 8 * page, mp->data_tail,
		      __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE), a.sample_type, 0,
		      collect_fn, &c, &st);
	for (uint32_t i = 0; i < c.nr; i++) {
		CHECK_EQ_U64(c.s[i].tid, (uint64_t)syscall(SYS_gettid));
		in += c.s[i].addr >= (uintptr_t)region &&
		      c.s[i].addr < (uintptr_t)region + n * page;
	}
	CHECK_EQ_U64(in, n);		/* one fault per fresh page, address in the page */
	CHECK_EQ_U64(st.nr_bad, 0);
	munmap(ring, 9 * page);
	close((int)fd);
	return 0;
}


/* ---- the backend table (mri/common.c) and `ameba list backends` ---- */

static uint64_t mask_of(const int *m, int nr)
{
	uint64_t mask = 0;

	for (int i = 0; i < nr; i++)
		mask |= AMEBA_M_BIT(m[i]);
	return mask;
}

static void test_table(void)
{
	static const char *const want_names[] = { "count", "sim", "perf", "pagefault", "watch" };
	static const int want_where[] = { AMEBA_BACKEND_RUNTIME, AMEBA_BACKEND_RUNTIME,
					  AMEBA_BACKEND_AGENT, AMEBA_BACKEND_AGENT,
					  AMEBA_BACKEND_AGENT };
	static const int count_m[] = { AMEBA_M_MEM_REF, AMEBA_M_READS, AMEBA_M_WRITES };
	static const int watch_m[] = { AMEBA_M_MEM_REF, AMEBA_M_WRITES };
	static const int pf_m[] = { AMEBA_M_SAMPLES };
	const struct ameba_backend_info *b;
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	int nr = 0, row = -1, in_metrics = 0;
	uint64_t listed[8] = { 0 };
	FILE *f;

	for (; (b = ameba_backend_info(nr)); nr++) {
		CHECK(b->name && b->name[0] && b->desc && b->desc[0] && b->needs && b->needs[0]);
		CHECK(b->where == AMEBA_BACKEND_RUNTIME || b->where == AMEBA_BACKEND_AGENT);
		CHECK(b->exact == 0 || b->exact == 1);
		/* every bit a metric id, and at least one */
		CHECK(b->metrics != 0);
		CHECK((b->metrics >> AMEBA_M_NR) == 0);
		CHECK(ameba_backend_by_name(b->name) == b);
		CHECK(perfmon_backend(b->name) == b);
		CHECK_EQ_U64(perfmon_is_backend(b->name), b->where == AMEBA_BACKEND_AGENT);
		for (int j = 0; j < nr; j++)
			CHECK(strcmp(ameba_backend_info(j)->name, b->name) != 0);
		if (nr < 5) {
			CHECK_STR(b->name, want_names[nr]);
			CHECK_EQ_U64(b->where, want_where[nr]);
		}
	}
	CHECK_EQ_U64(nr, 5);
	CHECK(ameba_backend_info(-1) == NULL);
	CHECK(ameba_backend_by_name("no-such") == NULL);
	CHECK(ameba_backend_by_name(NULL) == NULL);
	CHECK(perfmon_backend("perf-sw") == ameba_backend_by_name("pagefault"));
	CHECK(perfmon_is_backend("perf-sw"));
	CHECK(!perfmon_is_backend(NULL));
	CHECK(!perfmon_is_backend("no-such"));

	/* what each backend provides (docs/backends.md) */
	CHECK_EQ_U64(ameba_backend_by_name("count")->metrics, mask_of(count_m, 3));
	CHECK_EQ_U64(ameba_backend_by_name("watch")->metrics, mask_of(watch_m, 2));
	CHECK_EQ_U64(ameba_backend_by_name("pagefault")->metrics, mask_of(pf_m, 1));
	CHECK_EQ_U64(ameba_backend_by_name("sim")->metrics, AMEBA_M_BIT(AMEBA_M_SAMPLES) - 1);
	CHECK(ameba_backend_by_name("perf")->metrics & AMEBA_M_BIT(AMEBA_M_L1D_MISS));
	CHECK(ameba_backend_by_name("perf")->metrics & AMEBA_M_BIT(AMEBA_M_SAMPLES));
	CHECK(!(ameba_backend_by_name("perf")->metrics & AMEBA_M_BIT(AMEBA_M_COH_MISS_FALSE)));
	CHECK_EQ_U64(ameba_backend_by_name("perf")->exact, 0);
	CHECK_EQ_U64(ameba_backend_by_name("watch")->exact, 1);

	/* the listing: the table's rows in order, then uprobes; under each row
	 * its metrics, exactly the row's */
	f = open_memstream(&text, &len);
	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ_U64(perfmon_list_backends(f), 0);
	fclose(f);
	/* a runtime row says what it needs */
	CHECK_HAS(text, "count      available    exact reads/writes per object and thread\n"
		  "                          needs a program built with `ameba cc` (or libameba-rt "
		  "preloaded)\n");
	line = strtok_r(text, "\n", &save);
	CHECK(line && !strncmp(line, "backend ", 8));
	while ((line = strtok_r(NULL, "\n", &save)) && strncmp(line, "perf_event_paranoid=", 20)) {
		char *w, *wsave = NULL;

		if (line[0] != ' ') {
			char name[32];

			in_metrics = 0;
			CHECK(sscanf(line, "%31s", name) == 1);
			row++;
			if (row < nr)
				CHECK_STR(name, ameba_backend_info(row)->name);
			else
				CHECK_STR(name, "uprobes");
			CHECK(strstr(line, " available ") || strstr(line, " unavailable "));
			if (row < nr)
				CHECK_HAS(line, ameba_backend_info(row)->desc);
			continue;
		}
		/* a reason, "metrics:" and its names, their continuation lines */
		w = strtok_r(line, " ", &wsave);
		if (w && !strcmp(w, "metrics:")) {
			in_metrics = 1;
			w = strtok_r(NULL, " ", &wsave);
		}
		for (; w && in_metrics; w = strtok_r(NULL, " ", &wsave)) {
			int m = ameba_metric_by_name(w);

			CHECK(m >= 0);
			if (m >= 0 && row >= 0 && row < 8)
				listed[row] |= AMEBA_M_BIT(m);
		}
	}
	CHECK_EQ_U64(row, nr);	/* the uprobes line last */
	for (int i = 0; i < nr && i < 8; i++)
		CHECK_EQ_U64(listed[i], ameba_backend_info(i)->metrics);
	free(text);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "ring";

	if (!strcmp(what, "ring"))
		test_ring();
	else if (!strcmp(what, "dsrc"))
		test_dsrc();
	else if (!strcmp(what, "scale"))
		test_scale();
	else if (!strcmp(what, "procmap"))
		test_procmap();
	else if (!strcmp(what, "table"))
		test_table();
	else if (!strcmp(what, "record")) {
		int rc = test_record();

		if (rc == 77)
			return 77;
	} else if (!strcmp(what, "pfm") && argc > 2) {
		int rc = test_pfm(argv[2]);

		if (rc)
			return rc;
	} else {
		fprintf(stderr, "usage: test_perfmon ring|dsrc|scale|procmap|record|table|pfm MODEL\n");
		return 2;
	}
	return check_done();
}
