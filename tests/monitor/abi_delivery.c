/*
 * abi_delivery.c - what the tsan hooks hand to the monitor, and the exact
 * results of the atomics, checked against a recording stub of the mon layer.
 *
 * tsan_abi.c and tsan_atomic.c are compiled into this test directly (not
 * instrumented, not linked with the rest of the runtime): mon_access() here
 * records each delivery, so every row can assert the address, size, flags
 * and pc a hook delivers, that a dormant hook delivers nothing, and that
 * ignore_thread_begin/end nests.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>

#include "tsan_abi.c"	/* monitor/, on the include path */
#include "tsan_atomic.c"

#include "check.h"

/* ---- the stub mon layer ---- */

struct mon_hot mon_hot = { .dormant = 1 };	/* mon_active and friends live here */
/* as rt.c's: the plain hooks test the dormant byte, the others active */
void mon_set_active(int on)
{
	mon_hot.active = on;
	mon_hot.dormant = !on;
}
struct mon_tally *mon_tally_tab;	/* sampled mode: never on here */
__thread struct mon_tally *mon_tslot;
void mon_sampled_due(struct mon_tally *c)
{
	(void)c;
}
void mon_tally_check(struct mon_tally *s, uintptr_t addr)
{
	(void)s;
	(void)addr;
}
size_t mon_sampled_range(const struct mon_thread *t, uintptr_t addr, size_t sz)
{
	(void)t;
	(void)addr;
	return sz;
}
void mon_tally_first(uintptr_t addr, uintptr_t mix, uint64_t n)
{
	(void)addr;
	(void)mix;
	(void)n;
}
__thread struct mon_thread *mon_self;
/* the sim backend's line filter: the empty one (backend_sim_lf.c's), whose
 * thread ignores, so that every hook takes its general side */
static struct mon_thread lf_none_thread = { .ignore = 1 };
struct mon_sim_core mon_sim_lf_none_core = {
	.lf = { .ent = mon_sim_lf_none_core.lf_tab, .thread = &lf_none_thread },
};
__thread struct mon_sim_lf *mon_sim_lf = MON_SIM_LF_NONE;
void mon_sim_lf_miss(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc)
{
	(void)t;
	(void)addr;
	(void)wfs;
	(void)pc;
	abort();	/* never: no filter */
}
void mon_sim_lf_split_hit(struct mon_sim_lf *f, const struct mon_sim_lf_ent *e,
			  struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc)
{
	(void)f;
	(void)e;
	mon_sim_lf_miss(t, addr, wfs, pc);
}
void mon_sim_lf_upgrade_hit(struct mon_sim_lf *f, const struct mon_sim_lf_ent *e)
{
	(void)f;
	(void)e;
	abort();	/* never: no filter */
}
#if defined(__x86_64__) && defined(__GNUC__)	/* SIM_LF_MISS: the assembly miss */
void sim_lf_miss_x86_rd(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc,
			struct mon_sim_core *c, const char *llc_set)
{
	(void)c;
	(void)llc_set;
	mon_sim_lf_miss(t, addr, wfs, pc);
}
void sim_lf_miss_x86_wr(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc,
			struct mon_sim_core *c, const char *llc_set)
{
	(void)c;
	(void)llc_set;
	mon_sim_lf_miss(t, addr, wfs, pc);
}
#endif

/* ordered mode (the hooks' own way to the log, seq_int.h): the backend
 * they compare with, and the merger's wake (counted) */
const struct mon_backend_ops mon_backend_sim_seq = { .name = "sim" };
static int nr_wakes;
void mon_seq_wake_merger(struct seq_log *l)
{
	(void)l;
	nr_wakes++;
}

struct delivery {
	uintptr_t addr;
	size_t sz;
	unsigned flags;
	uintptr_t pc;
};

#define MAX_DELIVERIES 16
static struct delivery log_buf[MAX_DELIVERIES];
static int nr_delivered, nr_init_calls;
static struct mon_thread main_thread;

void mon_access(uintptr_t addr, size_t sz, unsigned flags, uintptr_t pc)
{
	if (nr_delivered < MAX_DELIVERIES)
		log_buf[nr_delivered] = (struct delivery){ addr, sz, flags, pc };
	nr_delivered++;
}

/* The range hooks' notes for the memcpy/memset interposers: the last one. */
static struct delivery last_note;
static int nr_notes;

void mon_range_note(unsigned flags, uintptr_t addr, size_t sz, uintptr_t cfa, uintptr_t pc)
{
	(void)cfa;
	last_note = (struct delivery){ addr, sz, flags, pc };
	nr_notes++;
}

/* The batch (batch.c) is never on here: no owner, nothing waits. */
struct mon_batch mon_batch;
void mon_batch_flush(struct mon_thread *t)
{
	(void)t;
}
void mon_batch_off(struct mon_thread *t)
{
	(void)t;
}

void mon_init(void)
{
	nr_init_calls++;
}

struct mon_thread *mon_thread_self(void)
{
	if (!mon_self)
		mon_self = &main_thread;
	return mon_self;
}

void *mon_calloc(size_t nr, size_t sz)
{
	return calloc(nr, sz);
}

void mon_free(void *p)
{
	free(p);
}

void mon_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void reset(void)
{
	nr_delivered = 0;
	memset(log_buf, 0, sizeof(log_buf));
}

/*
 * Calls a hook from a known function so that the delivered pc (the hook's
 * return address) can be checked to lie inside it. The volatile store after
 * the call keeps the compiler from turning the call into a tail jump.
 */
typedef void (*access_fn)(const volatile void *addr);
static volatile int after_call;

static __attribute__((noinline)) void call_hook(access_fn fn, const volatile void *addr)
{
	fn(addr);
	after_call++;
}

static int pc_in_call_hook(uintptr_t pc)
{
	return pc > (uintptr_t)call_hook && pc < (uintptr_t)call_hook + 256;
}

/* ---- plain access hooks ---- */

#define RD MON_ACC_READ
#define WR MON_ACC_WRITE
#define UN MON_ACC_UNALIGNED
#define VO MON_ACC_VOLATILE

static const struct access_row {
	int line;
	const char *name;
	access_fn fn;
	size_t sz;
	unsigned flags;
} access_rows[] = {
#define ROW(fn, sz, flags) { __LINE__, #fn, fn, sz, flags }
	ROW(__tsan_read1, 1, RD), ROW(__tsan_read2, 2, RD), ROW(__tsan_read4, 4, RD),
	ROW(__tsan_read8, 8, RD), ROW(__tsan_read16, 16, RD),
	ROW(__tsan_write1, 1, WR), ROW(__tsan_write2, 2, WR), ROW(__tsan_write4, 4, WR),
	ROW(__tsan_write8, 8, WR), ROW(__tsan_write16, 16, WR),
	ROW(__tsan_unaligned_read2, 2, RD | UN), ROW(__tsan_unaligned_read4, 4, RD | UN),
	ROW(__tsan_unaligned_read8, 8, RD | UN), ROW(__tsan_unaligned_read16, 16, RD | UN),
	ROW(__tsan_unaligned_write2, 2, WR | UN), ROW(__tsan_unaligned_write4, 4, WR | UN),
	ROW(__tsan_unaligned_write8, 8, WR | UN), ROW(__tsan_unaligned_write16, 16, WR | UN),
	ROW(__tsan_volatile_read1, 1, RD | VO), ROW(__tsan_volatile_read2, 2, RD | VO),
	ROW(__tsan_volatile_read4, 4, RD | VO), ROW(__tsan_volatile_read8, 8, RD | VO),
	ROW(__tsan_volatile_read16, 16, RD | VO),
	ROW(__tsan_volatile_write1, 1, WR | VO), ROW(__tsan_volatile_write2, 2, WR | VO),
	ROW(__tsan_volatile_write4, 4, WR | VO), ROW(__tsan_volatile_write8, 8, WR | VO),
	ROW(__tsan_volatile_write16, 16, WR | VO),
	ROW(__tsan_unaligned_volatile_read2, 2, RD | UN | VO),
	ROW(__tsan_unaligned_volatile_read4, 4, RD | UN | VO),
	ROW(__tsan_unaligned_volatile_read8, 8, RD | UN | VO),
	ROW(__tsan_unaligned_volatile_read16, 16, RD | UN | VO),
	ROW(__tsan_unaligned_volatile_write2, 2, WR | UN | VO),
	ROW(__tsan_unaligned_volatile_write4, 4, WR | UN | VO),
	ROW(__tsan_unaligned_volatile_write8, 8, WR | UN | VO),
	ROW(__tsan_unaligned_volatile_write16, 16, WR | UN | VO),
	ROW(__tsan_read_write1, 1, RD | WR), ROW(__tsan_read_write4, 4, RD | WR),
	ROW(__tsan_read_write16, 16, RD | WR),
	ROW(__tsan_unaligned_read_write8, 8, RD | WR | UN),
#undef ROW
};

#define NR_ROWS(a) (sizeof(a) / sizeof((a)[0]))

static void test_access_hooks(void)
{
	static char buf[64];

	for (size_t i = 0; i < NR_ROWS(access_rows); i++) {
		const struct access_row *r = &access_rows[i];
		const char *addr = buf + 3 + i % 8;

		/* dormant: nothing reaches the monitor */
		mon_set_active(0);
		reset();
		call_hook(r->fn, addr);
		CHECK_AT(r->line, nr_delivered == 0);

		mon_set_active(1);
		reset();
		call_hook(r->fn, addr);
		CHECK_AT(r->line, nr_delivered == 1);
		CHECK_AT(r->line, log_buf[0].addr == (uintptr_t)addr);
		CHECK_AT(r->line, log_buf[0].sz == r->sz);
		if (log_buf[0].flags != r->flags)
			fprintf(stderr, "%s: flags %#x, want %#x\n", r->name, log_buf[0].flags,
				r->flags);
		CHECK_AT(r->line, log_buf[0].flags == r->flags);
		CHECK_AT(r->line, pc_in_call_hook(log_buf[0].pc));
	}
	mon_set_active(0);
}

/*
 * Ordered mode with nothing else on (mon_hot.gate MON_HOT_ORDERED): each
 * plain hook writes the access's entry into the thread's log itself
 * (seq_int.h mon_seq_line_log) - the address, the hook's return address,
 * the object's counter vector and index, SEQ_PLAIN with the hook's flags
 * and size - and delivers nothing; whatever it cannot log that way takes
 * the general side (mon_access here, the stub backend having no line
 * entry), the log untouched.
 */
static struct seq_ent ordered_ring[SEQ_RING];
static const struct mon_backend_ops other_backend = { .name = "other" };

static void test_ordered_hooks(void)
{
	static char buf[192] __attribute__((aligned(64)));
	static char other[64];
	static struct mon_obj obj = { .idx = 77, .flags = MON_OBJF_LIVE };
	static uint64_t counts[64];
	static struct seq_log log = { .ring = ordered_ring };
	struct mon_thread *t = &main_thread;
	const uintptr_t line = ((uintptr_t)buf + 63) & ~(uintptr_t)63;

	t->seq = &log;
	t->started = &mon_backend_sim_seq;
	/* the object in way 2, the hint elsewhere: the ways after it are searched */
	t->cache.start[2] = (uintptr_t)buf;
	t->cache.end[2] = (uintptr_t)buf + sizeof(buf);
	t->cache.obj[2] = &obj;
	t->cache.counts[2] = counts;
	t->cache.hint = 3;
	mon_backend = &mon_backend_sim_seq;
	mon_set_active(1);
	mon_hot.ordered = 1;
	CHECK_EQ_U64(mon_hot.gate, MON_HOT_ORDERED);

	for (size_t i = 0; i < NR_ROWS(access_rows); i++) {
		const struct access_row *r = &access_rows[i];
		const char *addr = (const char *)line + (i * 5) % (MON_LINE_SIZE + 1 - r->sz);
		const uint64_t h = log.head;
		const struct seq_ent *e = &ordered_ring[h % SEQ_RING];

		reset();
		call_hook(r->fn, addr);
		CHECK_AT(r->line, nr_delivered == 0);
		CHECK_AT(r->line, log.head == h + 1);
		CHECK_AT(r->line, e->addr == (uintptr_t)addr);
		CHECK_AT(r->line, pc_in_call_hook(e->pc));
		CHECK_AT(r->line, e->v == counts && e->obj_idx == 77);
		CHECK_AT(r->line, e->kind == SEQ_PLAIN && e->flags == r->flags && e->sz == r->sz);
		CHECK_AT(r->line, t->in_rt == 0 && t->cache.hint == 2);
	}

	/* a merger asleep on the log is woken */
	__atomic_store_n(&log.merger_waits, 1, __ATOMIC_RELAXED);
	nr_wakes = 0;
	__tsan_read8((const void *)line);
	CHECK_EQ_U64(nr_wakes, 1);
	log.merger_waits = 0;

	/* the general side, the log untouched: an access across two lines, one
	 * outside the cached objects, a ring that looks full, a thread inside
	 * the runtime, another backend (a forked child keeps the flag), and a
	 * counter armed besides */
	for (int k = 0; k < 6; k++) {
		const uint64_t h = log.head, tail_seen = log.tail_seen;
		const void *addr = k == 0 ? (const void *)(line + 60) : k == 1 ? (const void *)other
									 : (const void *)line;

		if (k == 2)
			log.head = tail_seen + SEQ_RING;
		t->in_rt = k == 3;
		if (k == 4)
			mon_backend = &other_backend;
		mon_hot.cond_armed = k == 5;
		reset();
		call_hook(__tsan_read8, addr);
		CHECK_EQ_U64(nr_delivered, 1);
		CHECK(log_buf[0].addr == (uintptr_t)addr && log_buf[0].sz == 8);
		CHECK_EQ_U64(log.head, k == 2 ? tail_seen + SEQ_RING : h);
		log.head = h;
		t->in_rt = 0;
		mon_backend = &mon_backend_sim_seq;
		mon_hot.cond_armed = 0;
	}

	mon_hot.ordered = 0;
	mon_set_active(0);
	mon_backend = NULL;
	memset(&t->cache, 0, sizeof(t->cache));
	t->started = NULL;
	t->seq = NULL;
}

static void test_pc_and_range_hooks(void)
{
	static char buf[256];
	void *pc = (void *)(uintptr_t)0x1234567;

	mon_set_active(1);
	reset();
	nr_notes = 0;
	__tsan_read4_pc(buf, pc);
	__tsan_write16_pc(buf + 16, pc);
	__tsan_read_range(buf, 100);
	__tsan_write_range(buf + 1, 200);
	__tsan_read_range_pc(buf + 2, 7, pc);
	__tsan_write_range_pc(buf + 3, 9, pc);
	__tsan_read_range(buf, 0);	/* empty: nothing */
	__tsan_write_range_pc(buf, 0, pc);
	CHECK_EQ_U64(nr_delivered, 6);
	CHECK(log_buf[0].addr == (uintptr_t)buf && log_buf[0].sz == 4 &&
	      log_buf[0].flags == RD && log_buf[0].pc == (uintptr_t)pc);
	CHECK(log_buf[1].addr == (uintptr_t)(buf + 16) && log_buf[1].sz == 16 &&
	      log_buf[1].flags == WR && log_buf[1].pc == (uintptr_t)pc);
	CHECK(log_buf[2].sz == 100 && log_buf[2].flags == (RD | MON_ACC_RANGE));
	CHECK(log_buf[3].addr == (uintptr_t)(buf + 1) && log_buf[3].sz == 200 &&
	      log_buf[3].flags == (WR | MON_ACC_RANGE));
	CHECK(log_buf[4].sz == 7 && log_buf[4].flags == (RD | MON_ACC_RANGE) &&
	      log_buf[4].pc == (uintptr_t)pc);
	CHECK(log_buf[5].sz == 9 && log_buf[5].flags == (WR | MON_ACC_RANGE) &&
	      log_buf[5].pc == (uintptr_t)pc);
	/* the two compiler-called range hooks leave a note each, with their pc */
	CHECK_EQ_U64(nr_notes, 2);
	CHECK(last_note.addr == (uintptr_t)(buf + 1) && last_note.sz == 200 &&
	      last_note.flags == WR && last_note.pc == log_buf[3].pc);

	/* vtable pointers: one 8-byte access each */
	void *obj[2] = { NULL, NULL };
	reset();
	__tsan_vptr_update(&obj[0], (void *)obj);
	__tsan_vptr_read(&obj[1]);
	CHECK_EQ_U64(nr_delivered, 2);
	CHECK(log_buf[0].addr == (uintptr_t)&obj[0] && log_buf[0].sz == 8 &&
	      log_buf[0].flags == WR);
	CHECK(log_buf[1].addr == (uintptr_t)&obj[1] && log_buf[1].sz == 8 &&
	      log_buf[1].flags == RD);

	/* entry/exit deliver nothing */
	reset();
	__tsan_func_entry(pc);
	__tsan_func_exit();
	CHECK_EQ_U64(nr_delivered, 0);
	mon_set_active(0);
}

static void test_ignore_and_init(void)
{
	static int x;
	int before = nr_init_calls;

	__tsan_init();
	__tsan_init();
	CHECK_EQ_U64(nr_init_calls - before, 2);

	mon_set_active(1);
	reset();
	__tsan_ignore_thread_begin();
	__tsan_ignore_thread_begin();
	__tsan_read4(&x);
	__tsan_atomic32_fetch_add(&x, 1, TSAN_MO_SEQ_CST);
	__tsan_ignore_thread_end();
	__tsan_write4(&x);		/* still inside the outer pair */
	CHECK_EQ_U64(nr_delivered, 0);
	CHECK_EQ_U64(x, 1);		/* ignored, but the atomic still happened */
	__tsan_ignore_thread_end();
	__tsan_read4(&x);
	CHECK_EQ_U64(nr_delivered, 1);
	__tsan_ignore_thread_end();	/* unbalanced: must not go negative */
	CHECK_EQ_U64(mon_self->ignore, 0);
	__tsan_write4(&x);
	CHECK_EQ_U64(nr_delivered, 2);
	mon_set_active(0);
}

/* ---- atomics ---- */

typedef unsigned __int128 u128;

/* Every order value the compilers can pass, plus gcc's flag bits and junk. */
static const int orders[] = { 0, 1, 2, 3, 4, 5, 0x8005, 0x10002, 0x20003, 99, -1 };

#define F_R (MON_ACC_READ | MON_ACC_ATOMIC)
#define F_W (MON_ACC_WRITE | MON_ACC_ATOMIC)
#define F_RW (MON_ACC_READ | MON_ACC_WRITE | MON_ACC_ATOMIC)

static int last_is(const volatile void *a, size_t sz, unsigned flags)
{
	return nr_delivered == 1 && log_buf[0].addr == (uintptr_t)a && log_buf[0].sz == sz &&
	       log_buf[0].flags == flags && log_buf[0].pc != 0;
}

/*
 * Per width: every operation with every order, checking the value returned,
 * the value left in memory and the delivery. T is the ABI type, U the
 * unsigned type the expected values are computed in.
 */
#define TEST_WIDTH(N, T, U)							\
static void test_atomic##N(void)						\
{										\
	const U a = (U)((u128)0x8badf00ddeadbeefull << 64 | 0xfedcba9876543213ull); \
	const U b = (U)((u128)0x0123456789abcdefull << 64 | 0x1122334455667789ull); \
	U ua = a, ub = b;							\
	T x, r, e;								\
										\
	mon_set_active(1);								\
	for (size_t k = 0; k < NR_ROWS(orders); k++) {				\
		int mo = orders[k];						\
										\
		x = (T)ua; reset();						\
		r = __tsan_atomic##N##_load(&x, mo);				\
		CHECK((U)r == a && last_is(&x, sizeof(T), F_R));		\
		x = (T)ua; reset();						\
		__tsan_atomic##N##_store(&x, (T)ub, mo);			\
		CHECK((U)x == b && last_is(&x, sizeof(T), F_W));		\
		x = (T)ua; reset();						\
		r = __tsan_atomic##N##_exchange(&x, (T)ub, mo);		\
		CHECK((U)r == a && (U)x == b && last_is(&x, sizeof(T), F_RW));	\
		x = (T)ua; reset();						\
		r = __tsan_atomic##N##_fetch_add(&x, (T)ub, mo);		\
		CHECK((U)r == a && (U)x == (U)(a + b) && last_is(&x, sizeof(T), F_RW)); \
		x = (T)ua; reset();						\
		r = __tsan_atomic##N##_fetch_sub(&x, (T)ub, mo);		\
		CHECK((U)r == a && (U)x == (U)(a - b) && last_is(&x, sizeof(T), F_RW)); \
		x = (T)ua; reset();						\
		r = __tsan_atomic##N##_fetch_and(&x, (T)ub, mo);		\
		CHECK((U)r == a && (U)x == (U)(a & b) && last_is(&x, sizeof(T), F_RW)); \
		x = (T)ua; reset();						\
		r = __tsan_atomic##N##_fetch_or(&x, (T)ub, mo);		\
		CHECK((U)r == a && (U)x == (U)(a | b) && last_is(&x, sizeof(T), F_RW)); \
		x = (T)ua; reset();						\
		r = __tsan_atomic##N##_fetch_xor(&x, (T)ub, mo);		\
		CHECK((U)r == a && (U)x == (U)(a ^ b) && last_is(&x, sizeof(T), F_RW)); \
		x = (T)ua; reset();						\
		r = __tsan_atomic##N##_fetch_nand(&x, (T)ub, mo);		\
		CHECK((U)r == a && (U)x == (U)~(a & b) && last_is(&x, sizeof(T), F_RW)); \
										\
		for (size_t f = 0; f < NR_ROWS(orders); f++) {			\
			int fmo = orders[f];					\
										\
			/* strong success: 1, memory replaced, RMW */		\
			x = (T)ua; e = (T)ua; reset();				\
			CHECK(__tsan_atomic##N##_compare_exchange_strong(&x, &e, (T)ub, mo, fmo) == 1); \
			CHECK((U)x == b && (U)e == a && last_is(&x, sizeof(T), F_RW)); \
			/* strong failure: 0, *c = current, memory kept, a read */ \
			x = (T)ua; e = (T)ub; reset();				\
			CHECK(__tsan_atomic##N##_compare_exchange_strong(&x, &e, (T)ub, mo, fmo) == 0); \
			CHECK((U)x == a && (U)e == a && last_is(&x, sizeof(T), F_R)); \
			/* weak: failure exact; success within a few tries */	\
			x = (T)ua; e = (T)ub; reset();				\
			CHECK(__tsan_atomic##N##_compare_exchange_weak(&x, &e, (T)ub, mo, fmo) == 0); \
			CHECK((U)x == a && (U)e == a && last_is(&x, sizeof(T), F_R)); \
			int tries = 0, ok = 0;					\
			while (!ok && tries++ < 100) {				\
				x = (T)ua; e = (T)ua; reset();			\
				ok = __tsan_atomic##N##_compare_exchange_weak(&x, &e, (T)ub, mo, fmo); \
			}							\
			CHECK(ok && (U)x == b && last_is(&x, sizeof(T), F_RW));	\
			/* val: the old value either way */			\
			x = (T)ua; reset();					\
			r = __tsan_atomic##N##_compare_exchange_val(&x, (T)ua, (T)ub, mo, fmo); \
			CHECK((U)r == a && (U)x == b && last_is(&x, sizeof(T), F_RW)); \
			x = (T)ua; reset();					\
			r = __tsan_atomic##N##_compare_exchange_val(&x, (T)ub, (T)ub, mo, fmo); \
			CHECK((U)r == a && (U)x == a && last_is(&x, sizeof(T), F_R)); \
		}								\
	}									\
	/* dormant: same results, nothing delivered */				\
	mon_set_active(0);								\
	x = (T)ua; reset();							\
	r = __tsan_atomic##N##_fetch_nand(&x, (T)ub, TSAN_MO_SEQ_CST);		\
	CHECK((U)r == a && (U)x == (U)~(a & b) && nr_delivered == 0);		\
}

TEST_WIDTH(8, tsan_a8, uint8_t)
TEST_WIDTH(16, tsan_a16, uint16_t)
TEST_WIDTH(32, tsan_a32, uint32_t)
TEST_WIDTH(64, tsan_a64, uint64_t)
TEST_WIDTH(128, tsan_a128, u128)

static void test_order_normalisation(void)
{
	/* (input, load, store, rmw) */
	static const struct { int line, mo, load, store, rmw; } rows[] = {
		{ __LINE__, 0, 0, 0, 0 },
		{ __LINE__, 1, 1, 0, 1 },
		{ __LINE__, 2, 2, 0, 2 },
		{ __LINE__, 3, 0, 3, 3 },
		{ __LINE__, 4, 2, 3, 4 },
		{ __LINE__, 5, 5, 5, 5 },
		{ __LINE__, 0x8005, 5, 5, 5 },	/* gcc's __sync flag */
		{ __LINE__, 0x10002, 2, 0, 2 },	/* HLE acquire hint */
		{ __LINE__, 0x20003, 0, 3, 3 },	/* HLE release hint */
		{ __LINE__, 6, 5, 5, 5 },	/* unknown: strongest */
		{ __LINE__, -1, 5, 5, 5 },
	};

	for (size_t i = 0; i < NR_ROWS(rows); i++) {
		CHECK_AT(rows[i].line, mo_load(rows[i].mo) == rows[i].load);
		CHECK_AT(rows[i].line, mo_store(rows[i].mo) == rows[i].store);
		CHECK_AT(rows[i].line, mo_base(rows[i].mo) == rows[i].rmw);
	}
	/* CAS pairs: failure never release/acq_rel, never above success */
	for (int s = 0; s <= 5; s++)
		for (int f = 0; f <= 5; f++) {
			int p = mo_cas_pair(s, f), ps = p / 8, pf = p % 8;

			CHECK(pf != TSAN_MO_RELEASE && pf != TSAN_MO_ACQ_REL);
			CHECK(pf <= ps);
			CHECK(ps >= s);		/* never weaker than asked */
		}

	/* fences accept every value */
	for (size_t k = 0; k < NR_ROWS(orders); k++) {
		__tsan_atomic_thread_fence(orders[k]);
		__tsan_atomic_signal_fence(orders[k]);
	}
}

/* ---- the rest of the API: contracts callers rely on ---- */

static uint64_t barrier_word;
static int barrier_counter;
#define BARRIER_ROUNDS 2000

static void *barrier_thread(void *arg)
{
	int bad = 0;

	for (int r = 0; r < BARRIER_ROUNDS; r++) {
		__atomic_fetch_add(&barrier_counter, 1, __ATOMIC_RELAXED);
		__tsan_testonly_barrier_wait(&barrier_word);
		/* both threads have arrived for round r */
		bad += __atomic_load_n(&barrier_counter, __ATOMIC_RELAXED) < 2 * (r + 1);
		__tsan_testonly_barrier_wait(&barrier_word);
	}
	return (void *)(intptr_t)bad;
}

static void test_runtime_api(void)
{
	pthread_t tid;
	void *bad_other;
	char name[8] = "x";
	unsigned long start = 1, size = 1;

	void *own = __tsan_get_current_fiber();
	void *f1 = __tsan_create_fiber(0), *f2 = __tsan_create_fiber(1);
	CHECK(own && f1 && f2 && f1 != f2 && f1 != own);
	__tsan_switch_to_fiber(f1, 0);
	CHECK(__tsan_get_current_fiber() == f1);
	__tsan_set_fiber_name(f1, "f1");
	__tsan_switch_to_fiber(own, 0);
	CHECK(__tsan_get_current_fiber() == own);
	__tsan_destroy_fiber(f1);
	__tsan_destroy_fiber(f2);

	void *t1 = __tsan_external_register_tag("a"), *t2 = __tsan_external_register_tag("b");
	CHECK(t1 && t2 && t1 != t2);

	CHECK_STR(__tsan_default_options(), "");
	CHECK_STR(__tsan_default_suppressions(), "");
	CHECK(__tsan_mutex_pre_unlock(&start, 0) == 0);
	CHECK(__tsan_get_current_report() == NULL);
	CHECK(__tsan_java_fini() == 0);
	CHECK(__tsan_testonly_shadow_stack_current_size() == 0);
	CHECK_STR(__tsan_locate_address((unsigned long)&start, name, sizeof(name), &start, &size), "");
	CHECK(name[0] == '\0' && start == 0 && size == 0);

	__tsan_testonly_barrier_init(&barrier_word, 2);
	pthread_create(&tid, NULL, barrier_thread, NULL);
	void *bad_main = barrier_thread(NULL);
	pthread_join(tid, &bad_other);
	CHECK_EQ_U64((intptr_t)bad_main + (intptr_t)bad_other, 0);
	CHECK_EQ_U64(barrier_counter, 2 * BARRIER_ROUNDS);
}

int main(void)
{
	mon_thread_self();
	test_access_hooks();
	test_ordered_hooks();
	test_pc_and_range_hooks();
	test_ignore_and_init();
	test_atomic8();
	test_atomic16();
	test_atomic32();
	test_atomic64();
	test_atomic128();
	test_order_normalisation();
	test_runtime_api();
	return check_done();
}
