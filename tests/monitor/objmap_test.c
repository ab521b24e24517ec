/*
 * objmap_test.c - the object map (objmap.c), allocation sites (site.c) and
 * ELF symbols (elfsyms.c), driven directly through mon.h.
 *
 * The test links the runtime objects, so the runtime is live: the test's own
 * mallocs are tracked by the interposers too. Synthetic blocks therefore live
 * at addresses no mapping uses (from 16 TiB up); the object map never touches
 * the memory of a block.
 */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "elfsyms.h"
#include "mon.h"
#include "objmap_conc.h"

#define KiB ((uintptr_t)1 << 10)
#define MiB ((uintptr_t)1 << 20)
#define GiB ((uintptr_t)1 << 30)
#define PG ((uintptr_t)4096)

/* Disjoint synthetic regions, one per test. */
#define BASE_BOUNDS ((uintptr_t)0x100000000000ull)	/* 16 TiB */
#define BASE_REUSE ((uintptr_t)0x110000000000ull)
#define BASE_MANY ((uintptr_t)0x120000000000ull)
#define BASE_UNMAP ((uintptr_t)0x140000000000ull)

/* Site ids that never exist (site.c ignores them when counting). */
#define FAKE_SITE 0x40000000u

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static int is_other(const struct mon_obj *o)
{
	return o && o->kind == MON_OBJ_OTHER;
}

/* ---- lookup at block starts, ends and one past the end ---- */

/*
 * Offsets from BASE_BOUNDS:
 *
 *   0x0000 [A 0x100) [B 0x40)              page 0: two neighbours
 *   0x1ff0 [C ............................ 0x5010)  spans pages 1..5
 *   0x5010 [E 0x10)                        starts where C ends
 *   1 GiB - 4 KiB [D ..................... 3 GiB + 8 KiB)  mmap: page, 2 MiB
 *                                          and 1 GiB covers
 *   3 GiB + 8 KiB [F 0x20)                 right after D
 *   0x9000 [Z 0)                           malloc(0): never matches
 */
struct bound_row {
	int line;
	uintptr_t off;
	char want;		/* block name, or 0 for [other] */
};

static const struct bound_row bound_rows[] = {
	{ __LINE__, 0x0, 'A' },
	{ __LINE__, 0xff, 'A' },
	{ __LINE__, 0x100, 'B' },
	{ __LINE__, 0x13f, 'B' },
	{ __LINE__, 0x140, 0 },
	{ __LINE__, 0xfff, 0 },
	{ __LINE__, 0x1fef, 0 },
	{ __LINE__, 0x1ff0, 'C' },
	{ __LINE__, 0x2000, 'C' },
	{ __LINE__, 0x3abc, 'C' },
	{ __LINE__, 0x5000, 'C' },
	{ __LINE__, 0x500f, 'C' },
	{ __LINE__, 0x5010, 'E' },
	{ __LINE__, 0x501f, 'E' },
	{ __LINE__, 0x5020, 0 },
	{ __LINE__, 0x9000, 0 },
	{ __LINE__, GiB - PG - 1, 0 },
	{ __LINE__, GiB - PG, 'D' },
	{ __LINE__, GiB - 1, 'D' },
	{ __LINE__, GiB, 'D' },
	{ __LINE__, GiB + 2 * MiB + 5, 'D' },
	{ __LINE__, 2 * GiB + 12345, 'D' },
	{ __LINE__, 3 * GiB, 'D' },
	{ __LINE__, 3 * GiB + 8 * KiB - 1, 'D' },
	{ __LINE__, 3 * GiB + 8 * KiB, 'F' },
	{ __LINE__, 3 * GiB + 8 * KiB + 0x1f, 'F' },
	{ __LINE__, 3 * GiB + 8 * KiB + 0x20, 0 },
	{ __LINE__, 4 * GiB, 0 },
};

static void test_bounds(void)
{
	static const struct {
		char name;
		int kind;
		uintptr_t off, sz;
	} blocks[] = {
		{ 'A', MON_OBJ_HEAP, 0x0, 0x100 },
		{ 'B', MON_OBJ_HEAP, 0x100, 0x40 },
		{ 'C', MON_OBJ_HEAP, 0x1ff0, 0x3020 },
		{ 'E', MON_OBJ_HEAP, 0x5010, 0x10 },
		{ 'D', MON_OBJ_MMAP, GiB - PG, 2 * GiB + 12 * KiB },
		{ 'F', MON_OBJ_HEAP, 3 * GiB + 8 * KiB, 0x20 },
		{ 'Z', MON_OBJ_HEAP, 0x9000, 0 },
	};
	struct mon_obj *obj[128] = { 0 };
	struct mon_thread tt;

	memset(&tt, 0, sizeof(tt));
	for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
		struct mon_obj *o = mon_objmap_add_block(blocks[i].kind, BASE_BOUNDS + blocks[i].off,
							 blocks[i].sz, FAKE_SITE, 7);

		CHECK(o != NULL);
		if (!o)
			return;
		obj[(int)blocks[i].name] = o;
		CHECK_EQ_U64(o->start, BASE_BOUNDS + blocks[i].off);
		CHECK_EQ_U64(o->end - o->start, blocks[i].sz);
		CHECK_EQ_U64(o->kind, blocks[i].kind);
		CHECK_EQ_U64(o->thread_id, 7);
		CHECK(__atomic_load_n(&o->flags, __ATOMIC_RELAXED) & MON_OBJF_LIVE);
		CHECK(!(__atomic_load_n(&o->flags, __ATOMIC_RELAXED) & MON_OBJF_ACCESSED));
	}
	/* Each row twice without a cache, and twice through one thread's cache. */
	for (int pass = 0; pass < 4; pass++) {
		for (size_t i = 0; i < sizeof(bound_rows) / sizeof(bound_rows[0]); i++) {
			const struct bound_row *r = &bound_rows[i];
			struct mon_obj *o = mon_objmap_lookup(pass < 2 ? NULL : &tt, BASE_BOUNDS + r->off);

			if (r->want)
				CHECK_AT(r->line, o == obj[(int)r->want]);
			else
				CHECK_AT(r->line, is_other(o));
		}
	}
	CHECK(__atomic_load_n(&obj['A']->flags, __ATOMIC_RELAXED) & MON_OBJF_ACCESSED);
	CHECK(!(__atomic_load_n(&obj['Z']->flags, __ATOMIC_RELAXED) & MON_OBJF_ACCESSED));
	CHECK(is_other(mon_objmap_lookup(NULL, (uintptr_t)1 << 50)));	/* above the index */

	for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++)
		if (blocks[i].kind == MON_OBJ_HEAP)
			mon_objmap_del_block(BASE_BOUNDS + blocks[i].off);
	mon_objmap_unmap_range(BASE_BOUNDS + GiB - PG, BASE_BOUNDS + 3 * GiB + 8 * KiB);
	for (size_t i = 0; i < sizeof(bound_rows) / sizeof(bound_rows[0]); i++) {
		CHECK_AT(bound_rows[i].line, is_other(mon_objmap_lookup(NULL, BASE_BOUNDS + bound_rows[i].off)));
		CHECK_AT(bound_rows[i].line, is_other(mon_objmap_lookup(&tt, BASE_BOUNDS + bound_rows[i].off)));
	}
	CHECK(!(__atomic_load_n(&obj['D']->flags, __ATOMIC_RELAXED) & MON_OBJF_LIVE));
}

/* ---- free + reuse: a new object; recycling of untouched records ---- */

static void test_reuse(void)
{
	struct mon_thread tt;
	struct mon_obj *x1, *x2, *y, *z;
	uint64_t seq_x1, seq_y;
	uint32_t idx_y;

	memset(&tt, 0, sizeof(tt));
	/* [X 64) at p: looked up (ACCESSED, cached), freed, allocated again. */
	x1 = mon_objmap_add_block(MON_OBJ_HEAP, BASE_REUSE, 64, FAKE_SITE, 0);
	CHECK(x1 && mon_objmap_lookup(&tt, BASE_REUSE + 8) == x1);
	seq_x1 = x1->seq;
	mon_objmap_del_block(BASE_REUSE);
	CHECK(!(__atomic_load_n(&x1->flags, __ATOMIC_RELAXED) & MON_OBJF_LIVE));
	CHECK(is_other(mon_objmap_lookup(&tt, BASE_REUSE + 8)));	/* the cache saw the free */
	x2 = mon_objmap_add_block(MON_OBJ_HEAP, BASE_REUSE, 64, FAKE_SITE, 0);
	CHECK(x2 && x2 != x1);
	CHECK(x2 && x2->seq > seq_x1 && x2->idx != x1->idx);
	CHECK(mon_objmap_lookup(&tt, BASE_REUSE + 8) == x2);
	CHECK(mon_objmap_get(x1->idx) == x1 && x1->seq == seq_x1);	/* identity kept */
	mon_objmap_del_block(BASE_REUSE);

	/* [Y 32) never looked up: its record is recycled for the next block. */
	y = mon_objmap_add_block(MON_OBJ_HEAP, BASE_REUSE + MiB, 32, FAKE_SITE, 0);
	CHECK(y != NULL);
	if (!y)
		return;
	seq_y = y->seq;
	idx_y = y->idx;
	mon_objmap_del_block(BASE_REUSE + MiB);
	z = mon_objmap_add_block(MON_OBJ_HEAP, BASE_REUSE + MiB, 48, FAKE_SITE, 0);
	CHECK(z == y);
	CHECK(z && z->idx == idx_y && z->seq > seq_y && z->end - z->start == 48);
	CHECK(mon_objmap_lookup(NULL, BASE_REUSE + MiB + 40) == z);
	mon_objmap_del_block(BASE_REUSE + MiB);

	/* A free that was never seen: a new block at the same start replaces it. */
	y = mon_objmap_add_block(MON_OBJ_HEAP, BASE_REUSE + 2 * MiB, 32, FAKE_SITE, 0);
	z = mon_objmap_add_block(MON_OBJ_HEAP, BASE_REUSE + 2 * MiB, 16, FAKE_SITE, 0);
	CHECK(y && z && y != z);
	CHECK(y && !(__atomic_load_n(&y->flags, __ATOMIC_RELAXED) & MON_OBJF_LIVE));
	CHECK(mon_objmap_lookup(NULL, BASE_REUSE + 2 * MiB + 8) == z);
	CHECK(is_other(mon_objmap_lookup(NULL, BASE_REUSE + 2 * MiB + 20)));
	mon_objmap_del_block(BASE_REUSE + 2 * MiB);
	mon_objmap_del_block(BASE_REUSE + 3 * MiB);	/* unknown: ignored */

	/*
	 * A big block S whose free was never seen, and a new small block N
	 * inside it on a later page: N answers for its bytes, S for the rest.
	 *   [S 0 ..................................... 5p)
	 *                   [N 2p+16, 2p+48)
	 */
	y = mon_objmap_add_block(MON_OBJ_HEAP, BASE_REUSE + 4 * MiB, 5 * PG, FAKE_SITE, 0);
	z = mon_objmap_add_block(MON_OBJ_HEAP, BASE_REUSE + 4 * MiB + 2 * PG + 16, 32, FAKE_SITE, 0);
	CHECK(y && z);
	CHECK(mon_objmap_lookup(NULL, BASE_REUSE + 4 * MiB + 2 * PG + 20) == z);
	CHECK(mon_objmap_lookup(NULL, BASE_REUSE + 4 * MiB + 2 * PG + 8) == y);
	CHECK(mon_objmap_lookup(NULL, BASE_REUSE + 4 * MiB + 3 * PG) == y);
	mon_objmap_del_block(BASE_REUSE + 4 * MiB + 2 * PG + 16);
	mon_objmap_del_block(BASE_REUSE + 4 * MiB);
	CHECK(is_other(mon_objmap_lookup(NULL, BASE_REUSE + 4 * MiB + 3 * PG)));
}

/* ---- one million live blocks ---- */

#define NR_MANY 1000000

static void test_many(void)
{
	uintptr_t *start = malloc(NR_MANY * sizeof(*start));
	uint32_t *sz = malloc(NR_MANY * sizeof(*sz));
	struct mon_obj **obj = malloc(NR_MANY * sizeof(*obj));
	uint64_t s = 42, nr_wrong = 0;
	uintptr_t a = BASE_MANY, end;
	struct mon_thread tt;

	memset(&tt, 0, sizeof(tt));
	if (!start || !sz || !obj) {
		CHECK(!"out of memory");
		return;
	}
	/* Sizes 1..96 with gaps 0..31, every 1000th block spans a few pages. */
	for (uint32_t i = 0; i < NR_MANY; i++) {
		a += rng_next(&s) % 32;
		start[i] = a;
		sz[i] = i % 1000 == 999 ? 3 * PG + 17 : 1 + rng_next(&s) % 96;
		obj[i] = mon_objmap_add_block(MON_OBJ_HEAP, a, sz[i], FAKE_SITE, 0);
		nr_wrong += obj[i] == NULL;
		a += sz[i];
	}
	end = a;
	CHECK_EQ_U64(nr_wrong, 0);

	/* 2M random addresses over the whole span, checked against the arrays. */
	for (int pass = 0; pass < 2; pass++) {
		nr_wrong = 0;
		for (uint32_t k = 0; k < 2000000; k++) {
			uintptr_t q = BASE_MANY + rng_next(&s) % (end - BASE_MANY + 64);
			uint32_t lo = 0, hi = NR_MANY;
			struct mon_obj *want = NULL, *got;

			while (lo < hi) {
				uint32_t mid = (lo + hi) / 2;

				if (start[mid] <= q)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo && q < start[lo - 1] + sz[lo - 1] && obj[lo - 1])
				want = obj[lo - 1];
			got = mon_objmap_lookup(k & 1 ? &tt : NULL, q);
			nr_wrong += want ? got != want : !is_other(got);
		}
		CHECK_EQ_U64(nr_wrong, 0);
		/* Second pass: every other block freed. */
		for (uint32_t i = 0; pass == 0 && i < NR_MANY; i += 2) {
			mon_objmap_del_block(start[i]);
			obj[i] = NULL;
		}
	}
	/* Exact starts and last bytes of the survivors. */
	nr_wrong = 0;
	for (uint32_t i = 1; i < NR_MANY; i += 2) {
		nr_wrong += mon_objmap_lookup(NULL, start[i]) != obj[i];
		nr_wrong += mon_objmap_lookup(NULL, start[i] + sz[i] - 1) != obj[i];
		nr_wrong += mon_objmap_lookup(NULL, start[i] + sz[i]) == obj[i];
	}
	CHECK_EQ_U64(nr_wrong, 0);
	mon_objmap_unmap_range(BASE_MANY, end);
	nr_wrong = 0;
	for (uint32_t i = 1; i < NR_MANY; i += 2)
		nr_wrong += !is_other(mon_objmap_lookup(NULL, start[i]));
	CHECK_EQ_U64(nr_wrong, 0);
	free(start);
	free(sz);
	free(obj);
}

/* ---- concurrent add / del / lookup: objmap_conc.c ---- */

static void test_concurrent(void)
{
	CHECK_EQ_U64(objmap_conc_run(), 0);
}

/* ---- munmap of parts of mmap blocks ---- */

struct unmap_row {
	int line;
	uintptr_t off;
	int want;	/* -1: [other]; else the expected start page of the part */
	int want_end;	/* expected end page of the part */
};

static void check_unmap_rows(const struct unmap_row *rows, size_t nr, const struct mon_obj *whole)
{
	for (size_t i = 0; i < nr; i++) {
		struct mon_obj *o = mon_objmap_lookup(NULL, BASE_UNMAP + rows[i].off);

		if (rows[i].want < 0) {
			CHECK_AT(rows[i].line, is_other(o));
			continue;
		}
		CHECK_AT(rows[i].line, o->kind == MON_OBJ_MMAP);
		CHECK_AT(rows[i].line, o->start == BASE_UNMAP + (uintptr_t)rows[i].want * PG);
		CHECK_AT(rows[i].line, o->end == BASE_UNMAP + (uintptr_t)rows[i].want_end * PG);
		CHECK_AT(rows[i].line, o->sz_bytes == o->end - o->start);
		CHECK_AT(rows[i].line, o->site_id == whole->site_id && o->seq > whole->seq);
	}
}

static void test_unmap(void)
{
	struct mon_obj *m = mon_objmap_add_block(MON_OBJ_MMAP, BASE_UNMAP, 16 * PG - 100, FAKE_SITE + 1, 3);

	CHECK(m && m->end - m->start == 16 * PG);	/* whole pages */
	if (!m)
		return;
	/* Accessed, so its record keeps its identity (no recycling). */
	CHECK(mon_objmap_lookup(NULL, BASE_UNMAP + 5 * PG) == m);
	/*
	 * before: [M 0 ......................... 16p)
	 * unmap         [4p  6p)
	 * after:  [0  4p)        [6p ........... 16p)
	 */
	mon_objmap_unmap_range(BASE_UNMAP + 4 * PG, BASE_UNMAP + 6 * PG);
	CHECK(!(__atomic_load_n(&m->flags, __ATOMIC_RELAXED) & MON_OBJF_LIVE));
	{
		static const struct unmap_row rows[] = {
			{ __LINE__, 0, 0, 4 },
			{ __LINE__, 4 * PG - 1, 0, 4 },
			{ __LINE__, 4 * PG, -1, 0 },
			{ __LINE__, 6 * PG - 1, -1, 0 },
			{ __LINE__, 6 * PG, 6, 16 },
			{ __LINE__, 16 * PG - 1, 6, 16 },
			{ __LINE__, 16 * PG, -1, 0 },
		};
		check_unmap_rows(rows, sizeof(rows) / sizeof(rows[0]), m);
	}
	/*
	 * unmap   [0  2p)   and   [12p ....... 20p)
	 * after:       [2p 4p)    [6p  12p)
	 */
	mon_objmap_unmap_range(BASE_UNMAP, BASE_UNMAP + 2 * PG);
	mon_objmap_unmap_range(BASE_UNMAP + 12 * PG, BASE_UNMAP + 20 * PG);
	{
		static const struct unmap_row rows[] = {
			{ __LINE__, 0, -1, 0 },
			{ __LINE__, 2 * PG - 1, -1, 0 },
			{ __LINE__, 2 * PG, 2, 4 },
			{ __LINE__, 5 * PG, -1, 0 },
			{ __LINE__, 6 * PG, 6, 12 },
			{ __LINE__, 12 * PG - 1, 6, 12 },
			{ __LINE__, 12 * PG, -1, 0 },
		};
		check_unmap_rows(rows, sizeof(rows) / sizeof(rows[0]), m);
	}
	/*
	 * mmap(MAP_FIXED) over [3p 8p): the new block replaces what it covers
	 * after:       [2p 3p)[N 3p  8p)[8p 12p)
	 */
	{
		struct mon_obj *n = mon_objmap_add_block(MON_OBJ_MMAP, BASE_UNMAP + 3 * PG, 5 * PG,
							 FAKE_SITE + 1, 3);
		static const struct unmap_row rows[] = {
			{ __LINE__, 2 * PG, 2, 3 },
			{ __LINE__, 3 * PG, 3, 8 },
			{ __LINE__, 8 * PG - 1, 3, 8 },
			{ __LINE__, 8 * PG, 8, 12 },
		};
		CHECK(n != NULL);
		check_unmap_rows(rows, sizeof(rows) / sizeof(rows[0]), m);
	}
	mon_objmap_unmap_range(BASE_UNMAP, BASE_UNMAP + 64 * PG);
	for (uintptr_t off = 0; off < 20 * PG; off += PG / 2)
		CHECK(is_other(mon_objmap_lookup(NULL, BASE_UNMAP + off)));
}

/* ---- globals of this executable ---- */

static int g_static_arr[1000];
int g_global_arr[500] = { 1 };
static const double g_rodata[64] = { 1.0, 2.0 };
static char g_static_small[3];

static void check_global(int line, const void *p, size_t sz, const char *name)
{
	struct mon_obj *o = mon_objmap_lookup(NULL, (uintptr_t)p);
	struct mon_obj *past = mon_objmap_lookup(NULL, (uintptr_t)p + sz);

	CHECK_AT(line, o->kind == MON_OBJ_GLOBAL);
	CHECK_AT(line, o->name && !strcmp(o->name, name));
	CHECK_AT(line, o->start == (uintptr_t)p && o->end == (uintptr_t)p + sz && o->sz_bytes == sz);
	CHECK_AT(line, mon_objmap_lookup(NULL, (uintptr_t)p + sz - 1) == o);
	CHECK_AT(line, past != o);
}

static int is_runtime_static(const char *n)
{
	static const char *const names[] = { "heap_ix", "obj_chunks", "site_tab", "site_chunks",
					     "leaf_pool", "thread_chunks", "cur_modset", "sym_buckets" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(n, names[i]))
			return 1;
	return 0;
}

static void test_globals(void)
{
	struct mon_elfsyms es;
	uint32_t nr_rt_names = 0, nr_found = 0;

	/* Keep them alive and distinct. */
	__atomic_store_n(&g_static_arr[1], 1, __ATOMIC_RELAXED);
	__atomic_store_n(&g_static_small[1], 1, __ATOMIC_RELAXED);
	CHECK(((volatile const double *)g_rodata)[1] == 2.0);

	check_global(__LINE__, g_static_arr, sizeof(g_static_arr), "g_static_arr");
	check_global(__LINE__, &g_static_arr[0], sizeof(g_static_arr), "g_static_arr");
	check_global(__LINE__, g_global_arr, sizeof(g_global_arr), "g_global_arr");
	check_global(__LINE__, g_rodata, sizeof(g_rodata), "g_rodata");
	check_global(__LINE__, g_static_small, sizeof(g_static_small), "g_static_small");
	CHECK(mon_objmap_lookup(NULL, (uintptr_t)&g_static_arr[999])->start == (uintptr_t)g_static_arr);

	/* The runtime's own data is not the program's. */
	CHECK(mon_objmap_lookup(NULL, (uintptr_t)&mon_active)->kind != MON_OBJ_GLOBAL);
	for (uint32_t i = 0; i < mon_objmap_nr_objs(); i++) {
		const struct mon_obj *o = mon_objmap_get(i);

		if (!o || o->kind != MON_OBJ_GLOBAL || !o->name)
			continue;
		nr_rt_names += !strncmp(o->name, "mon_", 4) || is_runtime_static(o->name);
		nr_found += !strcmp(o->name, "g_static_arr");
	}
	CHECK_EQ_U64(nr_rt_names, 0);
	CHECK_EQ_U64(nr_found, 1);

	/* elfsyms directly: the marker groups. */
	CHECK(mon_elfsyms_read("/proc/self/exe", &es) == 0);
	CHECK(es.flags & MON_ELFSYMS_SYMTAB);
	CHECK(es.flags & MON_ELFSYMS_TSAN_INIT);
	CHECK(es.nr_segs >= 1);
	for (uint32_t i = 0; i < es.nr_syms; i++) {
		const struct mon_elfsym *s = &es.syms[i];

		if (!strcmp(s->name, "g_static_arr"))
			CHECK(!s->rt_unit && s->type == STT_OBJECT && s->sz_bytes == sizeof(g_static_arr));
		if (!strcmp(s->name, "heap_ix") || !strcmp(s->name, "thread_chunks"))
			CHECK(s->rt_unit);
	}
	mon_elfsyms_free(&es);
	CHECK(mon_elfsyms_read("/nonexistent/file", &es) == AMEBA_ENOENT);
	CHECK(mon_elfsyms_read("/proc/self/status", &es) == AMEBA_EPROTO);
}

/* ---- an instrumented DSO: pc_instrumented, its globals, dlclose ---- */

static void test_dso(const char *dso_path)
{
	void *h;
	int *dso_arr;
	int (*dso_fn)(int);
	struct mon_obj *o;

	CHECK(mon_objmap_pc_instrumented((uintptr_t)&test_dso));
	CHECK(!mon_objmap_pc_instrumented((uintptr_t)dlsym(RTLD_DEFAULT, "getpid")));
	CHECK(!mon_objmap_pc_instrumented(0));
	CHECK(!mon_objmap_pc_instrumented((uintptr_t)&mon_objmap_lookup));	/* the runtime's */
	if (!dso_path)
		return;
	h = dlopen(dso_path, RTLD_NOW);
	CHECK(h != NULL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return;
	}
	mon_objmap_modules_changed();	/* the dlopen interposer does it too */
	dso_arr = dlsym(h, "objmap_dso_array");
	dso_fn = (int (*)(int))dlsym(h, "objmap_dso_fn");
	CHECK(dso_arr && dso_fn);
	if (!dso_arr || !dso_fn)
		return;
	CHECK(mon_objmap_pc_instrumented((uintptr_t)dso_fn));
	o = mon_objmap_lookup(NULL, (uintptr_t)&dso_arr[100]);
	CHECK(o->kind == MON_OBJ_GLOBAL && o->name && !strcmp(o->name, "objmap_dso_array"));
	CHECK(o->start == (uintptr_t)dso_arr && o->sz_bytes == 256 * sizeof(int));
	dlclose(h);
	mon_objmap_modules_changed();
	CHECK(!(__atomic_load_n(&o->flags, __ATOMIC_RELAXED) & MON_OBJF_LIVE));
	CHECK(!mon_objmap_pc_instrumented((uintptr_t)dso_fn));
}

/* ---- stacks and TLS ---- */

static __thread int tls_var[4];
static pthread_barrier_t st_barrier;
static uintptr_t st_local_addr, st_tls_addr;
static uint32_t st_thread_id;
static uint64_t st_wrong;

static void *stack_thread(void *arg)
{
	volatile int local[16];
	struct mon_thread *t = mon_thread_self();
	struct mon_obj *o;

	local[0] = 1;
	st_local_addr = (uintptr_t)&local[3];
	st_tls_addr = (uintptr_t)&tls_var[2];
	st_thread_id = t ? t->id : UINT32_MAX;
	if (!t) {
		st_wrong++;
	} else {
		o = mon_objmap_lookup(t, st_local_addr);
		st_wrong += o->kind != MON_OBJ_STACK || o->thread_id != t->id;
		o = mon_objmap_lookup(t, st_tls_addr);
		st_wrong += o->kind != MON_OBJ_TLS || o->thread_id != t->id;
	}
	pthread_barrier_wait(&st_barrier);	/* main looks at our stack */
	pthread_barrier_wait(&st_barrier);
	return (void *)(uintptr_t)local[0];
}

static void test_stacks(void)
{
	struct mon_thread *me = mon_thread_self();
	volatile int mine = 0;
	pthread_t th;
	struct mon_obj *o, *other_stack;

	CHECK(me != NULL);
	if (!me)
		return;
	o = mon_objmap_lookup(me, (uintptr_t)&mine);
	CHECK(o->kind == MON_OBJ_STACK && o->thread_id == me->id);
	o = mon_objmap_lookup(NULL, (uintptr_t)&mine);	/* not the calling thread's view */
	CHECK(o->kind == MON_OBJ_STACK && o->thread_id == me->id);
	o = mon_objmap_lookup(me, (uintptr_t)&tls_var[1]);
	CHECK(o->kind == MON_OBJ_TLS && o->thread_id == me->id);

	pthread_barrier_init(&st_barrier, NULL, 2);
	pthread_create(&th, NULL, stack_thread, NULL);
	pthread_barrier_wait(&st_barrier);
	other_stack = mon_objmap_lookup(me, st_local_addr);
	CHECK(other_stack->kind == MON_OBJ_STACK && other_stack->thread_id == st_thread_id);
	CHECK(st_thread_id != me->id);
	o = mon_objmap_lookup(me, st_tls_addr);
	CHECK(o->kind == MON_OBJ_TLS && o->thread_id == st_thread_id);
	pthread_barrier_wait(&st_barrier);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&st_barrier);
	CHECK_EQ_U64(st_wrong, 0);
	/* The thread is gone: its stack record is no longer live. */
	CHECK(!(__atomic_load_n(&other_stack->flags, __ATOMIC_RELAXED) & MON_OBJF_LIVE));
	o = mon_objmap_lookup(me, st_local_addr);
	CHECK(o != other_stack);
}

/* ---- allocation sites ---- */

/* Stands in for an allocation interposer: captures its caller's site. */
static __attribute__((noinline)) uint32_t fake_alloc(void)
{
	uint32_t id = mon_site_capture(mon_self, (uintptr_t)__builtin_return_address(0),
				       __builtin_frame_address(0));

	__asm__ __volatile__("" ::: "memory");	/* not a tail call */
	return id;
}

static __attribute__((noinline)) void site_caller(uint32_t *id, int *line)
{
	volatile int nr = 2;	/* no unrolling: one call instruction */

	id[0] = fake_alloc(); line[0] = __LINE__;
	for (int i = 0; i < nr; i++) {
		id[1 + i] = fake_alloc(); line[1] = __LINE__;
	}
	__asm__ __volatile__("" ::: "memory");
}

static void test_sites(void)
{
	uint32_t id[3] = { 0 };
	int line[2] = { 0 };
	char want[128], buf[256];
	const struct mon_site *s;
	struct mon_frame_info fi;
	uint32_t nr_before;
	struct mon_obj *o;

	site_caller(id, line);
	CHECK(id[0] != 0 && id[1] != 0);
	CHECK(id[0] != id[1]);
	CHECK_EQ_U64(id[1], id[2]);	/* one call site, one id */
	CHECK(mon_site_nr() >= id[0] && mon_site_nr() >= id[1]);

	snprintf(want, sizeof(want), "site_caller@objmap_test.c:%d", line[0]);
	CHECK_STR(mon_site_name(id[0], buf, sizeof(buf)), want);
	snprintf(want, sizeof(want), "site_caller@objmap_test.c:%d", line[1]);
	CHECK_STR(mon_site_name(id[1], buf, sizeof(buf)), want);
	CHECK_STR(mon_site_name(0, buf, sizeof(buf)), "[unknown site]");

	/* The walk went past site_caller: frames[1] returns into test_sites. */
	s = mon_site_get(id[0]);
	CHECK(s && s->id == id[0] && s->nr_frames >= 2 && s->nr_frames <= MON_SITE_MAX_FRAMES);
	if (s && s->nr_frames >= 2) {
		CHECK(mon_symbolize(s->frames[1], &fi) == 0);
		CHECK_STR(fi.func, "test_sites");
		CHECK(fi.file && strstr(fi.file, "objmap_test.c"));
		CHECK(fi.module != NULL);
	}
	CHECK(mon_site_get(0) == NULL && mon_site_get(mon_site_nr() + 1) == NULL);

	/* No thread (stack bounds unknown): the caller's frame only. */
	{
		uint32_t id1 = mon_site_capture(NULL, (uintptr_t)__builtin_return_address(0),
						__builtin_frame_address(0));
		const struct mon_site *s1 = mon_site_get(id1);

		CHECK(s1 && s1->nr_frames == 1 &&
		      s1->frames[0] == (uintptr_t)__builtin_return_address(0));
		CHECK_EQ_U64(mon_site_capture(NULL, 0, NULL), 0);
	}

	/* Counting through add_block. */
	nr_before = mon_site_nr();
	s = mon_site_get(id[1]);
	if (s) {
		uint64_t n0 = s->nr_allocs, b0 = s->sz_bytes_total;

		o = mon_objmap_add_block(MON_OBJ_HEAP, BASE_REUSE + 8 * MiB, 1000, id[1], 0);
		CHECK(o && o->site_id == id[1]);
		CHECK_EQ_U64(s->nr_allocs, n0 + 1);
		CHECK_EQ_U64(s->sz_bytes_total, b0 + 1000);
		mon_objmap_del_block(BASE_REUSE + 8 * MiB);
	}
	CHECK_EQ_U64(mon_site_nr(), nr_before);

	/* A libc function symbolises with its module. */
	CHECK(mon_symbolize((uintptr_t)dlsym(RTLD_DEFAULT, "getpid") + 1, &fi) == 0);
	CHECK(fi.func && strstr(fi.func, "getpid"));
	CHECK(fi.module && strstr(fi.module, "libc"));

	/* A real malloc through the interposer is named by this function. */
	{
		char *p = malloc(333); int mline = __LINE__;

		o = mon_objmap_lookup(NULL, (uintptr_t)p + 10);
		CHECK(o->kind == MON_OBJ_HEAP && o->start == (uintptr_t)p && o->sz_bytes == 333);
		snprintf(want, sizeof(want), "test_sites@objmap_test.c:%d", mline);
		CHECK_STR(mon_site_name(o->site_id, buf, sizeof(buf)), want);
		free(p);
		CHECK(mon_objmap_lookup(NULL, (uintptr_t)p + 10) != o);
	}
}

/* ---- file mappings ---- */

static void test_file_maps(void)
{
	char dir[] = "/tmp/objmap_test.XXXXXX", path[64], want[128], buf[256];
	static char page[4096];
	const char *v1, *v2;
	const struct mon_site *s;
	struct mon_obj *o, *a, *b;
	uint8_t *p, *q;
	int fd, mline;

	/* Views are interned: one string per (path, offset). */
	v1 = mon_file_view("/data/in.mat", 4096);
	CHECK(v1 && v1 == mon_file_view("/data/in.mat", 4096));
	CHECK_STR(v1, "/data/in.mat");
	CHECK_EQ_U64(mon_file_view_off(v1), 4096);
	v2 = mon_file_intern("/data/in.mat");
	CHECK(v2 && v2 != v1 && v2 == mon_file_view("/data/in.mat", 0));
	CHECK_EQ_U64(mon_file_view_off(v2), 0);
	CHECK(mon_file_view("/data/in.mat2", 4096) != v1);

	/* A file of 6 pages, mapped through the interposer from page 1. */
	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(path, sizeof(path), "%s/objmap_file.bin", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	for (int i = 0; i < 6; i++) {
		page[0] = (char)i;
		CHECK(write(fd, page, sizeof(page)) == (ssize_t)sizeof(page));
	}
	p = mmap(NULL, 4 * PG, PROT_READ, MAP_SHARED, fd, PG); mline = __LINE__;
	q = mmap(NULL, PG, PROT_NONE, MAP_PRIVATE, fd, 0);	/* unreadable: no object */
	close(fd);
	CHECK(p != MAP_FAILED && q != MAP_FAILED);
	if (p == MAP_FAILED || q == MAP_FAILED)
		return;
	CHECK_EQ_U64(p[0], 1);
	o = mon_objmap_lookup(NULL, (uintptr_t)p + 5);
	CHECK(o->kind == MON_OBJ_MMAP && o->start == (uintptr_t)p && o->end == (uintptr_t)p + 4 * PG);
	CHECK_EQ_U64(o->sz_bytes, 4 * PG);
	CHECK(o->name && !strcmp(o->name, path));
	CHECK_EQ_U64(o->name ? mon_file_view_off(o->name) : 0, PG);
	s = mon_site_get(o->site_id);
	CHECK(s && s->file == mon_file_intern(path));
	snprintf(want, sizeof(want), "test_file_maps@objmap_test.c:%d", mline);
	CHECK_STR(mon_site_name(o->site_id, buf, sizeof(buf)), want);
	CHECK(is_other(mon_objmap_lookup(NULL, (uintptr_t)q)));

	/*
	 * before: [F 0 ............. 4p)   file offsets [1p 5p)
	 * munmap        [1p  2p)
	 * after:  [0 1p)        [2p  4p)   file offsets 1p and 3p
	 */
	CHECK(munmap(p + PG, PG) == 0);
	a = mon_objmap_lookup(NULL, (uintptr_t)p);
	b = mon_objmap_lookup(NULL, (uintptr_t)p + 3 * PG);
	CHECK(is_other(mon_objmap_lookup(NULL, (uintptr_t)p + PG)));
	CHECK(a != o && a->kind == MON_OBJ_MMAP && a->start == (uintptr_t)p && a->end == (uintptr_t)p + PG);
	CHECK(a->name && !strcmp(a->name, path) && mon_file_view_off(a->name) == PG);
	CHECK(b != o && b->kind == MON_OBJ_MMAP && b->start == (uintptr_t)p + 2 * PG &&
	      b->end == (uintptr_t)p + 4 * PG);
	CHECK(b->name && !strcmp(b->name, path) && mon_file_view_off(b->name) == 3 * PG);
	CHECK(a->site_id == o->site_id && b->site_id == o->site_id);

	/* An anonymous mapping has no file; its site none either. */
	{
		uint8_t *m = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct mon_obj *mo = mon_objmap_lookup(NULL, (uintptr_t)m);

		CHECK(m != MAP_FAILED && mo->kind == MON_OBJ_MMAP && mo->name == NULL);
		CHECK(mon_site_get(mo->site_id) && mon_site_get(mo->site_id)->file == NULL);
		munmap(m, PG);
	}
	munmap(p, 4 * PG);
	munmap(q, PG);
	CHECK(is_other(mon_objmap_lookup(NULL, (uintptr_t)p)));
	CHECK(is_other(mon_objmap_lookup(NULL, (uintptr_t)p + 3 * PG)));
	unlink(path);
	rmdir(dir);
}

/* ---- allocation wrappers (AMEBA_ALLOC_WRAPPERS is set by main) ---- */

#define WRAPPERS_ENV " +pool_get , -CALLOC,+xmalloc,-no_such_name"

__attribute__((noinline)) void *pool_get(size_t sz);
__attribute__((noinline)) void *pool_get(size_t sz)
{
	void *p = malloc(sz);

	__asm__ __volatile__("" ::: "memory");	/* no tail call */
	return p;
}

__attribute__((noinline)) static void *make_pool_block(int *line)
{
	void *p = pool_get(48); *line = __LINE__;

	__asm__ __volatile__("" ::: "memory");
	return p;
}

static void test_wrappers(void)
{
	static const struct {
		int line;
		const char *func;
		int wrapper;
	} rows[] = {
		{ __LINE__, "xmalloc", 1 },	  { __LINE__, "pool_get", 1 },	/* added */
		{ __LINE__, "CALLOC", 0 },	  /* removed from the default */
		{ __LINE__, "g_malloc0", 1 },	  { __LINE__, "safe_malloc", 1 },
		{ __LINE__, "alloc_temp", 0 },	  { __LINE__, "alloc_counters", 0 },
		{ __LINE__, "new_particle", 0 },  { __LINE__, "xmallo", 0 },
		{ __LINE__, "xmalloc2", 0 },	  { __LINE__, "", 0 },
		{ __LINE__, "no_such_name", 0 },  { __LINE__, NULL, 0 },
	};
	char want[128], label[256], via[256];
	struct mon_obj *o;
	void *p;
	int line = 0;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		CHECK_AT(rows[i].line, mon_alloc_wrapper_named(rows[i].func) == rows[i].wrapper);

	/* A block from a wrapper is named by the wrapper's caller, via it. */
	p = make_pool_block(&line);
	o = mon_objmap_lookup(NULL, (uintptr_t)p);
	CHECK(o->kind == MON_OBJ_HEAP && o->start == (uintptr_t)p);
	mon_site_start(mon_site_get(o->site_id), label, sizeof(label), via, sizeof(via));
	snprintf(want, sizeof(want), "make_pool_block@objmap_test.c:%d", line);
	CHECK_STR(label, want);
	CHECK(!strncmp(via, "pool_get@objmap_test.c:", 23));
	CHECK_STR(mon_site_name(o->site_id, label, sizeof(label)), want);
	/* its bin: the caller's name, the wrapper as via */
	{
		struct mon_site_bins b;
		uint32_t bin;

		CHECK(mon_site_bins_build(&b) == 0);
		bin = mon_site_bins_of(&b, o->site_id);
		CHECK(bin < b.nr_bins);
		if (bin < b.nr_bins) {
			CHECK_STR(b.label[bin], want);
			CHECK(b.via[bin] && !strcmp(b.via[bin], via));
		}
		mon_site_bins_free(&b);
	}
	free(p);
}

static void test_kind_names(void)
{
	static const struct {
		int line, kind;
		const char *name;
	} rows[] = {
		{ __LINE__, MON_OBJ_GLOBAL, "global" }, { __LINE__, MON_OBJ_HEAP, "heap" },
		{ __LINE__, MON_OBJ_MMAP, "mmap" },	{ __LINE__, MON_OBJ_STACK, "stack" },
		{ __LINE__, MON_OBJ_TLS, "tls" },	{ __LINE__, MON_OBJ_OTHER, "other" },
		{ __LINE__, MON_OBJ_NR_KINDS, "?" },	{ __LINE__, -1, "?" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		CHECK_AT(rows[i].line, !strcmp(mon_obj_kind_name(rows[i].kind), rows[i].name));
	CHECK(mon_objmap_get(0) && mon_objmap_get(0)->kind == MON_OBJ_OTHER);
	CHECK(is_other(mon_objmap_lookup(NULL, 0)));
	CHECK(mon_objmap_get(UINT32_MAX) == NULL);
}

int main(int argc, char **argv)
{
	/* before anything names a site: the list is read once */
	setenv("AMEBA_ALLOC_WRAPPERS", WRAPPERS_ENV, 1);
	CHECK(mon_initialized());
	test_kind_names();
	test_file_maps();
	test_wrappers();
	test_bounds();
	test_reuse();
	test_unmap();
	test_globals();
	test_dso(argc > 1 ? argv[1] : NULL);
	test_stacks();
	test_sites();
	test_many();
	test_concurrent();
	return check_done();
}
