/*
 * tsan_atomic.c - the __tsan_atomic* half of the ThreadSanitizer ABI.
 *
 * Under -fsanitize=thread both compilers replace every atomic operation of
 * the program (C11 <stdatomic.h>, C++ std::atomic, the __atomic and __sync
 * builtins) with a call here, so these functions ARE the program's atomics:
 * each must do exactly what the replaced operation did. The access is
 * delivered to the monitor after the operation, so that what the analysis
 * sees never delays the operation itself.
 *
 * Notes:
 * - Memory orders arrive as tsan's enum, 0..5 = relaxed, consume, acquire,
 *   release, acq_rel, seq_cst (the values of __ATOMIC_*). gcc may add flag
 *   bits above them: 1 << 15 for orders that came from __sync builtins and
 *   __ATOMIC_HLE_ACQUIRE/RELEASE (1 << 16, 1 << 17). Both only tune code
 *   generation, so they are masked off; an order outside 0..5 after that is
 *   treated as seq_cst, the strongest, which is never wrong.
 * - The builtins need a constant order to emit the right barriers, so every
 *   operation switches over the order and expands one constant-order
 *   builtin per case. Orders that are invalid for an operation (a release
 *   load, an acquire store) keep the half that applies to it: a load its
 *   acquire half, a store its release half.
 * - compare_exchange: a failure order cannot be release or acq_rel (mapped
 *   to relaxed and acquire) and the builtins want it no stronger than the
 *   success order; C++17 allows it to be stronger, so in that case the
 *   success order is raised to the failure order, which gives both paths at
 *   least the ordering that was asked for.
 * - 128-bit operations use cmpxchg16b (the runtime is built with -mcx16)
 *   through the __sync builtin, which gcc and clang expand inline; the
 *   __atomic builtins on 16 bytes would call libatomic, which an
 *   instrumented program does not link. cmpxchg16b is a full barrier, so
 *   every order is honoured. A load is a compare-exchange of 0 with 0: it
 *   writes back the value it read (the line is taken exclusive), exactly as
 *   libatomic does on CPUs without atomic 16-byte vector loads. The operand
 *   must be 16-byte aligned, as for the native instruction.
 * - weak compare-exchange uses the weak builtin (on x86 it cannot fail
 *   spuriously, but a program must not rely on that).
 * - The arithmetic is done on unsigned types, which wrap like the atomic
 *   builtins do on the signed types of the prototypes.
 */
#include <stdint.h>
#include <stddef.h>

#include "mon.h"

/* The ABI's operand types (tsan_interface_atomic.h). */
typedef char tsan_a8;
typedef short tsan_a16;
typedef int tsan_a32;
typedef long tsan_a64;
__extension__ typedef __int128 tsan_a128;

/* tsan's memory order enum; the values equal __ATOMIC_*. */
enum tsan_mo {
	TSAN_MO_RELAXED,
	TSAN_MO_CONSUME,
	TSAN_MO_ACQUIRE,
	TSAN_MO_RELEASE,
	TSAN_MO_ACQ_REL,
	TSAN_MO_SEQ_CST,
};

/* gcc's extra bits: MEMMODEL_SYNC (1 << 15) and the HLE hints (1 << 16, 17). */
#define TSAN_MO_MASK 0x7fffu

static inline int mo_base(int mo)
{
	unsigned m = (unsigned)mo & TSAN_MO_MASK;

	return m <= TSAN_MO_SEQ_CST ? (int)m : TSAN_MO_SEQ_CST;
}

/* The order a load can honour: mo's acquire half (a load releases nothing). */
static inline int mo_load(int mo)
{
	mo = mo_base(mo);
	if (mo == TSAN_MO_RELEASE)
		return TSAN_MO_RELAXED;
	if (mo == TSAN_MO_ACQ_REL)
		return TSAN_MO_ACQUIRE;
	return mo;
}

/* The order a store can honour: mo's release half (a store acquires nothing). */
static inline int mo_store(int mo)
{
	mo = mo_base(mo);
	if (mo == TSAN_MO_CONSUME || mo == TSAN_MO_ACQUIRE)
		return TSAN_MO_RELAXED;
	if (mo == TSAN_MO_ACQ_REL)
		return TSAN_MO_RELEASE;
	return mo;
}

/*
 * A compare-exchange's (success, failure) pair made valid for the builtins
 * (see Notes), encoded as success * 8 + failure for one flat switch.
 */
#define MO_PAIR(s, f) ((s) * 8 + (f))

static inline int mo_cas_pair(int succ, int fail)
{
	succ = mo_base(succ);
	fail = mo_load(fail);
	if (fail > succ)
		succ = fail;
	return MO_PAIR(succ, fail);
}

/*
 * Delivery after the operation, on the active path only; the dormant cost
 * is one load and one branch on top of the atomic itself. A macro so that
 * pc is evaluated on the active side only (see tsan_abi.c).
 */
#define DELIVER(a, sz, flags, pc)					\
	do {								\
		if (mon_unlikely(mon_active)) {				\
			struct mon_thread *t_ = mon_self;		\
									\
			if (MON_SAMPLED_SKIP(t_, (a), (pc)))	\
				break;					\
			if (!(t_ && t_->ignore))			\
				mon_access((uintptr_t)(a), (sz), (flags), (pc)); \
		}							\
	} while (0)

#define RET_PC ((uintptr_t)__builtin_return_address(0))
#define F_LOAD (MON_ACC_READ | MON_ACC_ATOMIC)
#define F_STORE (MON_ACC_WRITE | MON_ACC_ATOMIC)
#define F_RMW (MON_ACC_READ | MON_ACC_WRITE | MON_ACC_ATOMIC)

/*
 * Order dispatch. Each switch expands OP(<__ATOMIC_* constant>, args...)
 * once per order, so that every builtin sees a literal order; the default
 * case (unreachable after normalisation) is the seq_cst one.
 */
#define SWITCH_LOAD_MO(mo, OP, ...)					\
	switch (mo_load(mo)) {						\
	case TSAN_MO_RELAXED: OP(__ATOMIC_RELAXED, __VA_ARGS__); break;	\
	case TSAN_MO_CONSUME: OP(__ATOMIC_CONSUME, __VA_ARGS__); break;	\
	case TSAN_MO_ACQUIRE: OP(__ATOMIC_ACQUIRE, __VA_ARGS__); break;	\
	default: OP(__ATOMIC_SEQ_CST, __VA_ARGS__); break;		\
	}

#define SWITCH_STORE_MO(mo, OP, ...)					\
	switch (mo_store(mo)) {						\
	case TSAN_MO_RELAXED: OP(__ATOMIC_RELAXED, __VA_ARGS__); break;	\
	case TSAN_MO_RELEASE: OP(__ATOMIC_RELEASE, __VA_ARGS__); break;	\
	default: OP(__ATOMIC_SEQ_CST, __VA_ARGS__); break;		\
	}

#define SWITCH_RMW_MO(mo, OP, ...)					\
	switch (mo_base(mo)) {						\
	case TSAN_MO_RELAXED: OP(__ATOMIC_RELAXED, __VA_ARGS__); break;	\
	case TSAN_MO_CONSUME: OP(__ATOMIC_CONSUME, __VA_ARGS__); break;	\
	case TSAN_MO_ACQUIRE: OP(__ATOMIC_ACQUIRE, __VA_ARGS__); break;	\
	case TSAN_MO_RELEASE: OP(__ATOMIC_RELEASE, __VA_ARGS__); break;	\
	case TSAN_MO_ACQ_REL: OP(__ATOMIC_ACQ_REL, __VA_ARGS__); break;	\
	default: OP(__ATOMIC_SEQ_CST, __VA_ARGS__); break;		\
	}

/* One case of the compare-exchange switch: success s, failure f. */
#define CAS_CASE(s, f, OP, ...)						\
	case MO_PAIR(TSAN_MO_##s, TSAN_MO_##f):				\
		OP(__ATOMIC_##s, __ATOMIC_##f, __VA_ARGS__);		\
		break;

/* Every valid (success, failure) pair that mo_cas_pair() can produce. */
#define SWITCH_CAS_MO(mo, fmo, OP, ...)					\
	switch (mo_cas_pair(mo, fmo)) {					\
	CAS_CASE(RELAXED, RELAXED, OP, __VA_ARGS__)			\
	CAS_CASE(CONSUME, RELAXED, OP, __VA_ARGS__)			\
	CAS_CASE(CONSUME, CONSUME, OP, __VA_ARGS__)			\
	CAS_CASE(ACQUIRE, RELAXED, OP, __VA_ARGS__)			\
	CAS_CASE(ACQUIRE, CONSUME, OP, __VA_ARGS__)			\
	CAS_CASE(ACQUIRE, ACQUIRE, OP, __VA_ARGS__)			\
	CAS_CASE(RELEASE, RELAXED, OP, __VA_ARGS__)			\
	CAS_CASE(RELEASE, CONSUME, OP, __VA_ARGS__)			\
	CAS_CASE(RELEASE, ACQUIRE, OP, __VA_ARGS__)			\
	CAS_CASE(ACQ_REL, RELAXED, OP, __VA_ARGS__)			\
	CAS_CASE(ACQ_REL, CONSUME, OP, __VA_ARGS__)			\
	CAS_CASE(ACQ_REL, ACQUIRE, OP, __VA_ARGS__)			\
	CAS_CASE(SEQ_CST, RELAXED, OP, __VA_ARGS__)			\
	CAS_CASE(SEQ_CST, CONSUME, OP, __VA_ARGS__)			\
	CAS_CASE(SEQ_CST, ACQUIRE, OP, __VA_ARGS__)			\
	default:							\
		OP(__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST, __VA_ARGS__);	\
		break;							\
	}

/* The operations the switches expand, order first. */
#define OP_LOAD(o, r, p) ((r) = __atomic_load_n((p), o))
#define OP_STORE(o, p, v) __atomic_store_n((p), (v), o)
#define OP_RMW(o, r, builtin, p, v) ((r) = builtin((p), (v), o))
#define OP_CAS(os, of, ok, p, cur, v, weak)				\
	((ok) = __atomic_compare_exchange_n((p), (cur), (v), (weak), os, of))
#define OP_FENCE(o, builtin) builtin(o)

/* ---- 8, 16, 32 and 64 bits: the __atomic builtins, lock-free on x86-64 ---- */

/*
 * N: width in bits; T: the ABI type; U: the unsigned type the operation is
 * done in.
 */
#define DEFINE_ATOMIC(N, T, U)							\
MON_EXPORT T __tsan_atomic##N##_load(const volatile T *a, int mo);		\
MON_EXPORT T __tsan_atomic##N##_load(const volatile T *a, int mo)		\
{										\
	const volatile U *p = (const volatile U *)a;				\
	U r;									\
										\
	SWITCH_LOAD_MO(mo, OP_LOAD, r, p);					\
	DELIVER(a, sizeof(T), F_LOAD, RET_PC);					\
	return (T)r;								\
}										\
										\
MON_EXPORT void __tsan_atomic##N##_store(volatile T *a, T v, int mo);		\
MON_EXPORT void __tsan_atomic##N##_store(volatile T *a, T v, int mo)		\
{										\
	volatile U *p = (volatile U *)a;					\
										\
	SWITCH_STORE_MO(mo, OP_STORE, p, (U)v);					\
	DELIVER(a, sizeof(T), F_STORE, RET_PC);					\
}										\
										\
DEFINE_RMW(N, T, U, exchange, __atomic_exchange_n)				\
DEFINE_RMW(N, T, U, fetch_add, __atomic_fetch_add)				\
DEFINE_RMW(N, T, U, fetch_sub, __atomic_fetch_sub)				\
DEFINE_RMW(N, T, U, fetch_and, __atomic_fetch_and)				\
DEFINE_RMW(N, T, U, fetch_or, __atomic_fetch_or)				\
DEFINE_RMW(N, T, U, fetch_xor, __atomic_fetch_xor)				\
DEFINE_RMW(N, T, U, fetch_nand, __atomic_fetch_nand)				\
										\
DEFINE_CAS(N, T, U, strong, 0)							\
DEFINE_CAS(N, T, U, weak, 1)							\
										\
MON_EXPORT T __tsan_atomic##N##_compare_exchange_val(volatile T *a, T c, T v,	\
						     int mo, int fmo);		\
MON_EXPORT T __tsan_atomic##N##_compare_exchange_val(volatile T *a, T c, T v,	\
						     int mo, int fmo)		\
{										\
	volatile U *p = (volatile U *)a;					\
	U cur = (U)c;								\
	int ok = 0;								\
										\
	/* On failure the builtin stores the value found into cur; on	\
	 * success cur already equals it: either way cur is the old value. */ \
	SWITCH_CAS_MO(mo, fmo, OP_CAS, ok, p, &cur, (U)v, 0);			\
	DELIVER(a, sizeof(T), ok ? F_RMW : F_LOAD, RET_PC);			\
	return (T)cur;								\
}

/* exchange and the fetch_<op> family: return the old value. */
#define DEFINE_RMW(N, T, U, name, builtin)					\
MON_EXPORT T __tsan_atomic##N##_##name(volatile T *a, T v, int mo);		\
MON_EXPORT T __tsan_atomic##N##_##name(volatile T *a, T v, int mo)		\
{										\
	volatile U *p = (volatile U *)a;					\
	U r;									\
										\
	SWITCH_RMW_MO(mo, OP_RMW, r, builtin, p, (U)v);				\
	DELIVER(a, sizeof(T), F_RMW, RET_PC);					\
	return (T)r;								\
}

/* compare_exchange_{strong,weak}: 1 on success; on failure *c gets the
 * value found. */
#define DEFINE_CAS(N, T, U, kind, weak)						\
MON_EXPORT int __tsan_atomic##N##_compare_exchange_##kind(volatile T *a, T *c,	\
							  T v, int mo, int fmo); \
MON_EXPORT int __tsan_atomic##N##_compare_exchange_##kind(volatile T *a, T *c,	\
							  T v, int mo, int fmo) \
{										\
	volatile U *p = (volatile U *)a;					\
	U cur = (U)*c;								\
	int ok = 0;								\
										\
	SWITCH_CAS_MO(mo, fmo, OP_CAS, ok, p, &cur, (U)v, weak);		\
	if (!ok)								\
		*c = (T)cur;							\
	DELIVER(a, sizeof(T), ok ? F_RMW : F_LOAD, RET_PC);			\
	return ok;								\
}

DEFINE_ATOMIC(8, tsan_a8, uint8_t)
DEFINE_ATOMIC(16, tsan_a16, uint16_t)
DEFINE_ATOMIC(32, tsan_a32, uint32_t)
DEFINE_ATOMIC(64, tsan_a64, uint64_t)

/* ---- 128 bits: cmpxchg16b ---- */

typedef unsigned __int128 u128;

/* The one primitive: returns the value found at p; *p = v if it was c. */
static inline u128 cas128(volatile tsan_a128 *a, u128 c, u128 v)
{
	return __sync_val_compare_and_swap((volatile u128 *)a, c, v);
}

/*
 * A first guess of *a for a CAS loop; it may be torn, the CAS validates it.
 * Two relaxed 8-byte loads avoid a locked instruction per call.
 */
static inline u128 peek128(const volatile tsan_a128 *a)
{
	const volatile uint64_t *w = (const volatile uint64_t *)a;
	uint64_t lo = __atomic_load_n(&w[0], __ATOMIC_RELAXED);
	uint64_t hi = __atomic_load_n(&w[1], __ATOMIC_RELAXED);

	return (u128)hi << 64 | lo;
}

enum rmw128_op { OP128_XCHG, OP128_ADD, OP128_SUB, OP128_AND, OP128_OR, OP128_XOR, OP128_NAND };

/* Replaces *a by op(old, v) atomically and returns old. always_inline so
 * that each caller's constant op folds the switch away. */
static inline __attribute__((always_inline)) u128
rmw128(volatile tsan_a128 *a, u128 v, enum rmw128_op op)
{
	u128 old = peek128(a), seen, new;

	for (;;) {
		switch (op) {
		case OP128_XCHG: new = v; break;
		case OP128_ADD: new = old + v; break;
		case OP128_SUB: new = old - v; break;
		case OP128_AND: new = old & v; break;
		case OP128_OR: new = old | v; break;
		case OP128_XOR: new = old ^ v; break;
		default: new = ~(old & v); break;
		}
		seen = cas128(a, old, new);
		if (seen == old)
			return old;
		old = seen;
	}
}

MON_EXPORT tsan_a128 __tsan_atomic128_load(const volatile tsan_a128 *a, int mo);
MON_EXPORT tsan_a128 __tsan_atomic128_load(const volatile tsan_a128 *a, int mo)
{
	/* The CAS writes only what it read; see Notes for why that is fine. */
	u128 r = cas128((volatile tsan_a128 *)a, 0, 0);

	DELIVER(a, 16, F_LOAD, RET_PC);
	return (tsan_a128)r;
}

MON_EXPORT void __tsan_atomic128_store(volatile tsan_a128 *a, tsan_a128 v, int mo);
MON_EXPORT void __tsan_atomic128_store(volatile tsan_a128 *a, tsan_a128 v, int mo)
{
	rmw128(a, (u128)v, OP128_XCHG);
	DELIVER(a, 16, F_STORE, RET_PC);
}

#define DEFINE_RMW128(name, op)							\
MON_EXPORT tsan_a128 __tsan_atomic128_##name(volatile tsan_a128 *a, tsan_a128 v, int mo); \
MON_EXPORT tsan_a128 __tsan_atomic128_##name(volatile tsan_a128 *a, tsan_a128 v, int mo) \
{										\
	u128 r = rmw128(a, (u128)v, op);					\
										\
	DELIVER(a, 16, F_RMW, RET_PC);						\
	return (tsan_a128)r;							\
}

DEFINE_RMW128(exchange, OP128_XCHG)
DEFINE_RMW128(fetch_add, OP128_ADD)
DEFINE_RMW128(fetch_sub, OP128_SUB)
DEFINE_RMW128(fetch_and, OP128_AND)
DEFINE_RMW128(fetch_or, OP128_OR)
DEFINE_RMW128(fetch_xor, OP128_XOR)
DEFINE_RMW128(fetch_nand, OP128_NAND)

static inline int cas128_update(volatile tsan_a128 *a, tsan_a128 *c, tsan_a128 v,
				uintptr_t pc)
{
	u128 want = (u128)*c;
	u128 seen = cas128(a, want, (u128)v);
	int ok = seen == want;

	if (!ok)
		*c = (tsan_a128)seen;
	DELIVER(a, 16, ok ? F_RMW : F_LOAD, pc);
	return ok;
}

MON_EXPORT int __tsan_atomic128_compare_exchange_strong(volatile tsan_a128 *a, tsan_a128 *c,
							tsan_a128 v, int mo, int fmo);
MON_EXPORT int __tsan_atomic128_compare_exchange_strong(volatile tsan_a128 *a, tsan_a128 *c,
							tsan_a128 v, int mo, int fmo)
{
	return cas128_update(a, c, v, RET_PC);
}

/* cmpxchg16b never fails spuriously; a weak CAS is allowed not to either. */
MON_EXPORT int __tsan_atomic128_compare_exchange_weak(volatile tsan_a128 *a, tsan_a128 *c,
						      tsan_a128 v, int mo, int fmo);
MON_EXPORT int __tsan_atomic128_compare_exchange_weak(volatile tsan_a128 *a, tsan_a128 *c,
						      tsan_a128 v, int mo, int fmo)
{
	return cas128_update(a, c, v, RET_PC);
}

MON_EXPORT tsan_a128 __tsan_atomic128_compare_exchange_val(volatile tsan_a128 *a, tsan_a128 c,
							   tsan_a128 v, int mo, int fmo);
MON_EXPORT tsan_a128 __tsan_atomic128_compare_exchange_val(volatile tsan_a128 *a, tsan_a128 c,
							   tsan_a128 v, int mo, int fmo)
{
	u128 seen = cas128(a, (u128)c, (u128)v);

	DELIVER(a, 16, seen == (u128)c ? F_RMW : F_LOAD, RET_PC);
	return (tsan_a128)seen;
}

/* ---- fences: no memory access to deliver ---- */

MON_EXPORT void __tsan_atomic_thread_fence(int mo);
MON_EXPORT void __tsan_atomic_thread_fence(int mo)
{
	SWITCH_RMW_MO(mo, OP_FENCE, __atomic_thread_fence);
}

MON_EXPORT void __tsan_atomic_signal_fence(int mo);
MON_EXPORT void __tsan_atomic_signal_fence(int mo)
{
	SWITCH_RMW_MO(mo, OP_FENCE, __atomic_signal_fence);
}
