/*
 * tsan_abi.c - the ThreadSanitizer instrumentation ABI, minus the atomics
 * (tsan_atomic.c).
 *
 * `ameba cc` compiles with -fsanitize=thread, so every load and store of the
 * program becomes a call to one of the hooks below; libameba-rt is linked in
 * place of libtsan. What gcc 12 and clang 14 emit at -O0..-O3:
 *
 *   __tsan_{read,write}{1,2,4,8,16}              aligned plain accesses
 *   __tsan_unaligned_{read,write}{2,4,8,16}      clang: packed / under-aligned ones
 *   __tsan_volatile_{read,write}{1..16}          gcc --param tsan-distinguish-volatile=1,
 *   __tsan_unaligned_volatile_{read,write}N      clang -mllvm -tsan-distinguish-volatile=1
 *   __tsan_{unaligned_,}read_write{1..16}        clang -mllvm -tsan-compound-read-before-write=1
 *   __tsan_{read,write}N_pc, __tsan_*_range_pc   hand-written callers that pass the pc
 *   __tsan_{read,write}_range                    gcc: odd-sized aggregates, packed fields
 *   __tsan_vptr_update / __tsan_vptr_read        C++ vtable pointer stores / loads
 *   __tsan_func_entry / __tsan_func_exit         every instrumented function
 *   __tsan_init                                  a constructor of every instrumented module
 *
 * clang by default leaves out the read of a read-then-write of one address
 * in a basic block (x += y calls only __tsan_write): a race detector does
 * not need it, a profiler does. -mllvm -tsan-instrument-read-before-write=1
 * restores it as a separate read hook, which counts like gcc's code.
 *
 * Notes:
 * - Dormant cost. Until an analysis attaches, mon_active is zero and every
 *   access hook costs one load of a hidden global, one not-taken branch and
 *   a return; the plain hooks (DEFINE_ACCESS) load mon_hot.gate instead,
 *   whose dormant byte is set then, and take one branch more to the
 *   return, so that their active path tests one word (three instructions
 *   fewer an access; a dual-path build runs its clean body while dormant
 *   and calls no hook). Nothing else may run on that path: no TLS access,
 *   no frame setup (the hooks are built without a frame pointer, see
 *   HOOK_ATTR), and the active branch ends in a tail call, so the hot
 *   bodies are four instructions. The caller's spill of its live caller-saved registers
 *   around the call is the larger part of the dormant cost and is out of
 *   our hands (bench/instrument_overhead measures both).
 * - The per-thread ignore count (__tsan_ignore_thread_begin/end) is read
 *   only on the active branch, for the same reason.
 * - Sampled mode (sampled.c) keeps the hooks active: first on the active
 *   branch, MON_SAMPLED_SKIP counts the access in the thread's tally slot
 *   and, between bursts, returns; the exact path pays the load of
 *   mon_hot.sampling (on the hooks' line) and a branch not taken.
 * - pc is the hook's return address: the instruction after the call in the
 *   instrumented code, which symbolises to the access's source line.
 * - The remaining runtime API (annotations, mutexes, fibers, external tags,
 *   Java, report queries, test-only entry points) exists so that no program
 *   that calls it fails to link; each does the least that keeps its
 *   contract (success codes, distinct non-NULL handles where a caller may
 *   test for NULL, "" for option strings).
 */
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <sched.h>

#include "mon.h"
#include "backend_sim.h"	/* mon_sim_lf_access: the sim backend's line filter */
#include "seq.h"		/* mon_backend_sim_seq */
#include "seq_int.h"		/* mon_seq_line_log: ordered mode's log entry */

/*
 * The access hooks are leaves whose only outgoing call is a tail call, so
 * they need no frame; -fno-omit-frame-pointer (which the rest of the runtime
 * wants for site capture) would add a push/mov/pop to each of them on the
 * dormant path. gcc honours the per-function override; clang has none and
 * keeps the frame (two more instructions) when it builds the runtime.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define HOOK_ATTR MON_EXPORT __attribute__((optimize("omit-frame-pointer")))
#define INNER_ATTR __attribute__((noinline, optimize("omit-frame-pointer")))
#else
#define HOOK_ATTR MON_EXPORT
#define INNER_ATTR __attribute__((noinline))
#endif

#define RET_PC ((uintptr_t)__builtin_return_address(0))

/*
 * The one fast path of every access hook: one load, one branch. The active
 * side ends in a tail call into mon_access (or returns when the thread asked
 * to be ignored). A macro rather than an inline function so that `pc` is
 * evaluated only on the active side: passed as an argument, gcc hoists the
 * read of the return address above the branch, one more instruction on the
 * dormant path.
 */
#define HOOK(addr, sz, flags, pc)					\
	do {								\
		if (mon_unlikely(mon_active)) {				\
			struct mon_thread *t_ = mon_self;		\
									\
			if (MON_SAMPLED_SKIP_RANGE(t_, (uintptr_t)(addr), (sz))) \
				break;					\
			if (!(t_ && t_->ignore))			\
				mon_access((uintptr_t)(addr), (sz), (flags), (pc)); \
		}							\
	} while (0)

/*
 * The active side of a plain access of a constant size (DEFINE_ACCESS):
 * mon_access's own fast path inline (mon_access_plain, mon_line_entry:
 * straight to the backend's line entry, a tail call), so that the common
 * access makes one call less and loads the thread once. Anything else:
 * mon_access (which prefetches again: one instruction, off the fast path).
 */
#define HOOK_LINE(addr, sz, flags, pc)					\
	do {								\
		struct mon_thread *t_ = mon_self;			\
		const struct mon_backend_ops *b_ = mon_backend;		\
		uintptr_t a_ = (uintptr_t)(addr);			\
		void (*lf_)(struct mon_thread *, uintptr_t, uint32_t, uintptr_t); \
									\
		if (MON_SAMPLED_SKIP(t_, a_, (pc)))			\
			break;						\
		__builtin_prefetch((const void *)a_);			\
		if (mon_likely(mon_access_plain(t_, b_, a_, (sz))) &&	\
		    (lf_ = mon_line_entry(b_)))				\
			lf_(t_, a_, MON_FAST_WFS(0, (flags), (sz)), (pc)); \
		else if (!(t_ && t_->ignore))				\
			mon_access(a_, (sz), (flags), (pc));		\
	} while (0)

/*
 * The batch (batch.c, mon.h struct mon_batch): while it is on (pos < end)
 * and this thread owns it, an access is a record appended to it - the
 * record's words, then the position (a signal handler's hook that lands
 * in between writes the same slot; see batch.c). Only an access within
 * one MON_LINE_SIZE line is appended (the batch's loop relies on it). The
 * owner's full batch (pos == end), records left waiting while it is off
 * (pos != base), or waiting before an access across two lines, is
 * simulated first (`full`, returning), then the access goes the usual way.
 */
#define BATCH_APPEND(addr, sz, flags, full)				\
	do {								\
		uint64_t *p_ = mon_batch.pos;				\
									\
		if (mon_likely((uintptr_t)p_ < (uintptr_t)mon_batch.end) && \
		    mon_likely(mon_batch.owner == mon_self) &&		\
		    mon_likely(((uintptr_t)(addr) & (MON_LINE_SIZE - 1)) <= MON_LINE_SIZE - (sz))) { \
			p_[0] = (uintptr_t)(addr);			\
			p_[1] = MON_FAST_WFS(0, (flags), (sz));		\
			__atomic_signal_fence(__ATOMIC_SEQ_CST);	\
			mon_batch.pos = p_ + 2;				\
			return;						\
		}							\
		if (mon_unlikely(p_ != mon_batch.base) && mon_batch.owner == mon_self) { \
			full;						\
			return;						\
		}							\
	} while (0)

/*
 * The hooks' ordered way (mon_hot.gate MON_HOT_ORDERED) may log t's access
 * of sz bytes at addr itself: t started on the ordered backend, which is
 * still the active one (a forked child goes back to host order with
 * mon_hot.ordered kept), t outside the runtime and not ignored, the access
 * within one line - mon_access_plain's tests, as _on makes them before its
 * call of the line entry.
 */
static inline int seq_hook_ok(const struct mon_thread *t, uintptr_t addr, size_t sz)
{
	return mon_likely(mon_access_plain(t, &mon_backend_sim_seq, addr, sz)) &&
	       mon_likely(mon_backend == &mon_backend_sim_seq);
}

/* ---- plain, unaligned, volatile and compound accesses ---- */

/*
 * One hook per (name prefix, size). The parameter is const-qualified for
 * every kind: the prototypes in the tsan headers differ only in const, which
 * is not part of the C ABI. Between sampled mode's bursts the hook counts
 * the access (mon_tally_add) and returns without saving a register; the
 * rest of the active side is a function of its own (_on, a tail call), or
 * the registers it needs were saved on the counting path too: tallying,
 * gemm_blocked ran 1.7x its dormant time with them.
 */
#define DEFINE_ACCESS(prefix, n, flags)					\
	static INNER_ATTR void prefix##n##_on(const volatile void *addr, uintptr_t pc) \
	{								\
		HOOK_LINE(addr, n, (flags), pc);			\
	}								\
	/* ordered mode with nothing else on: the log entry without _on's \
	 * general tests and the line entry's indirect call; anything else \
	 * (a full ring, an object not cached), _on */			\
	static INNER_ATTR void prefix##n##_seq(const volatile void *addr, uintptr_t pc) \
	{								\
		struct mon_thread *t_ = mon_self;			\
		uintptr_t a_ = (uintptr_t)(addr);			\
									\
		if (seq_hook_ok(t_, a_, n) &&				\
		    mon_likely(mon_seq_line_log((struct mon_thread *)t_, a_, \
						MON_FAST_WFS(0, (flags), n), pc))) \
			return;						\
		prefix##n##_on(addr, pc);				\
	}								\
	static INNER_ATTR void prefix##n##_full(const volatile void *addr, uintptr_t pc) \
	{								\
		mon_batch_flush(mon_self);				\
		prefix##n##_on(addr, pc);				\
	}								\
	static INNER_ATTR void prefix##n##_batch(const volatile void *addr, uintptr_t pc) \
	{								\
		BATCH_APPEND(addr, n, (flags), prefix##n##_full(addr, pc)); \
		prefix##n##_on(addr, pc);				\
	}								\
	HOOK_ATTR void prefix##n(const volatile void *addr);		\
	HOOK_ATTR void prefix##n(const volatile void *addr)		\
	{								\
		uint64_t g_ = __atomic_load_n(&mon_hot.gate, __ATOMIC_RELAXED); \
									\
		if (mon_likely(!g_)) {					\
			if (!mon_sim_lf_access((uintptr_t)(addr), n, (flags))) \
				prefix##n##_on(addr, RET_PC);		\
		} else if (g_ & MON_HOT_DORMANT) {			\
			return;						\
		} else if (g_ == MON_HOT_ORDERED) {			\
			prefix##n##_seq(addr, RET_PC);			\
		} else if (!(g_ & MON_HOT_DIVERTED)) {			\
			prefix##n##_on(addr, RET_PC);			\
		} else if (__atomic_load_n(&mon_hot.tally, __ATOMIC_RELAXED)) { \
			mon_tally_add((uintptr_t)(addr), MON_TALLY_MIX(addr, RET_PC), 1); \
		} else {						\
			prefix##n##_batch(addr, RET_PC);		\
		}							\
	}

#define DEFINE_ACCESS_PC(prefix, n, flags)				\
	HOOK_ATTR void prefix##n##_pc(const volatile void *addr, void *pc); \
	HOOK_ATTR void prefix##n##_pc(const volatile void *addr, void *pc) \
	{								\
		HOOK(addr, n, (flags), (uintptr_t)pc);			\
	}

/* Every size 1..16 for one kind; unaligned 1-byte hooks are declared by
 * clang (never called: a byte cannot be misaligned) and cost nothing. */
#define DEFINE_ACCESS_ALL(macro, prefix, flags)				\
	macro(prefix, 1, flags)						\
	macro(prefix, 2, flags)						\
	macro(prefix, 4, flags)						\
	macro(prefix, 8, flags)						\
	macro(prefix, 16, flags)

#define RD MON_ACC_READ
#define WR MON_ACC_WRITE
#define UN MON_ACC_UNALIGNED
#define VO MON_ACC_VOLATILE

DEFINE_ACCESS_ALL(DEFINE_ACCESS, __tsan_read, RD)
DEFINE_ACCESS_ALL(DEFINE_ACCESS, __tsan_write, WR)
DEFINE_ACCESS_ALL(DEFINE_ACCESS, __tsan_unaligned_read, RD | UN)
DEFINE_ACCESS_ALL(DEFINE_ACCESS, __tsan_unaligned_write, WR | UN)
DEFINE_ACCESS_ALL(DEFINE_ACCESS, __tsan_volatile_read, RD | VO)
DEFINE_ACCESS_ALL(DEFINE_ACCESS, __tsan_volatile_write, WR | VO)
DEFINE_ACCESS_ALL(DEFINE_ACCESS, __tsan_unaligned_volatile_read, RD | UN | VO)
DEFINE_ACCESS_ALL(DEFINE_ACCESS, __tsan_unaligned_volatile_write, WR | UN | VO)
/* clang's compound (x += y) hooks: one call for the load and the store. */
DEFINE_ACCESS_ALL(DEFINE_ACCESS, __tsan_read_write, RD | WR)
DEFINE_ACCESS_ALL(DEFINE_ACCESS, __tsan_unaligned_read_write, RD | WR | UN)
DEFINE_ACCESS_ALL(DEFINE_ACCESS_PC, __tsan_read, RD)
DEFINE_ACCESS_ALL(DEFINE_ACCESS_PC, __tsan_write, WR)

/* ---- ranges ---- */

/*
 * gcc emits these for every access no sized hook fits: aggregates of other
 * sizes and under-aligned (packed) fields (gcc 12 never calls the
 * __tsan_unaligned_* hooks). Size 0 is legal (an empty struct) and delivers
 * nothing.
 */
#define RANGE_HOOK(addr, sz, flags, pc)					\
	do {								\
		if (mon_unlikely(mon_active) && (sz)) {			\
			struct mon_thread *t_ = mon_self;		\
			size_t sz_ = (sz);				\
									\
			if (mon_unlikely(mon_hot.sampling) &&		\
			    !(sz_ = mon_sampled_range(t_, (uintptr_t)(addr), sz_))) \
				break;					\
			if (!(t_ && t_->ignore))			\
				mon_access((uintptr_t)(addr), sz_, (flags), (pc)); \
		}							\
	} while (0)

HOOK_ATTR void __tsan_read_range(const volatile void *addr, unsigned long sz);
HOOK_ATTR void __tsan_read_range(const volatile void *addr, unsigned long sz)
{
	RANGE_HOOK(addr, sz, RD | MON_ACC_RANGE, RET_PC);
	if (mon_unlikely(mon_active) && sz && !mon_hot.tally)
		mon_range_note(RD, (uintptr_t)addr, sz, (uintptr_t)__builtin_dwarf_cfa(), RET_PC);
}

HOOK_ATTR void __tsan_write_range(const volatile void *addr, unsigned long sz);
HOOK_ATTR void __tsan_write_range(const volatile void *addr, unsigned long sz)
{
	RANGE_HOOK(addr, sz, WR | MON_ACC_RANGE, RET_PC);
	if (mon_unlikely(mon_active) && sz && !mon_hot.tally)
		mon_range_note(WR, (uintptr_t)addr, sz, (uintptr_t)__builtin_dwarf_cfa(), RET_PC);
}

HOOK_ATTR void __tsan_read_range_pc(const volatile void *addr, unsigned long sz, void *pc);
HOOK_ATTR void __tsan_read_range_pc(const volatile void *addr, unsigned long sz, void *pc)
{
	RANGE_HOOK(addr, sz, RD | MON_ACC_RANGE, (uintptr_t)pc);
}

HOOK_ATTR void __tsan_write_range_pc(const volatile void *addr, unsigned long sz, void *pc);
HOOK_ATTR void __tsan_write_range_pc(const volatile void *addr, unsigned long sz, void *pc)
{
	RANGE_HOOK(addr, sz, WR | MON_ACC_RANGE, (uintptr_t)pc);
}

/* ---- C++ vtable pointers ---- */

/*
 * The compilers call these instead of __tsan_write8 / __tsan_read8 for the
 * vptr of an object (tsan uses them to tell benign vptr races apart). The
 * store or load itself is still done by the instrumented code; for us it is
 * one 8-byte access like any other.
 */
HOOK_ATTR void __tsan_vptr_update(void **vptr_p, void *new_val);
HOOK_ATTR void __tsan_vptr_update(void **vptr_p, void *new_val)
{
	HOOK(vptr_p, sizeof(void *), WR, RET_PC);
}

HOOK_ATTR void __tsan_vptr_read(void **vptr_p);
HOOK_ATTR void __tsan_vptr_read(void **vptr_p)
{
	HOOK(vptr_p, sizeof(void *), RD, RET_PC);
}

/* ---- function entry / exit ---- */

/*
 * Called at the entry and every exit of each instrumented function
 * (including exception cleanups). No-ops until the per-thread shadow stack
 * exists; they must stay the cheapest functions of the runtime, as they run
 * even in code that touches no memory.
 */
HOOK_ATTR void __tsan_func_entry(void *call_pc);
HOOK_ATTR void __tsan_func_entry(void *call_pc)
{
}

HOOK_ATTR void __tsan_func_exit(void);
HOOK_ATTR void __tsan_func_exit(void)
{
}

/* ---- initialisation and per-thread ignore ---- */

/* Every instrumented module calls this from a constructor; mon_init() is
 * idempotent, so later calls cost one check. */
MON_EXPORT void __tsan_init(void);
MON_EXPORT void __tsan_init(void)
{
	mon_init();
}

/*
 * Accesses between begin and end on this thread are not delivered. The
 * calls nest; an unbalanced end is ignored rather than letting the count go
 * negative, which would silently re-enable nothing and confuse later pairs.
 */
MON_EXPORT void __tsan_ignore_thread_begin(void);
MON_EXPORT void __tsan_ignore_thread_begin(void)
{
	struct mon_thread *t = mon_thread_self();

	if (t) {
		mon_batch_off(t);	/* what came before counts */
		t->ignore++;
	}
}

MON_EXPORT void __tsan_ignore_thread_end(void);
MON_EXPORT void __tsan_ignore_thread_end(void)
{
	struct mon_thread *t = mon_thread_self();

	if (t && t->ignore > 0)
		t->ignore--;
}

/* ---- memory intrinsics ---- */

/*
 * Newer clang (15+) rewrites memcpy/memmove/memset intrinsics to these names
 * under -fsanitize=thread; clang 14 and gcc call the libc names, which
 * intercept.c counts. Forwarding keeps both paths identical.
 */
MON_EXPORT void *__tsan_memcpy(void *dst, const void *src, size_t n);
MON_EXPORT void *__tsan_memcpy(void *dst, const void *src, size_t n)
{
	return memcpy(dst, src, n);
}

MON_EXPORT void *__tsan_memmove(void *dst, const void *src, size_t n);
MON_EXPORT void *__tsan_memmove(void *dst, const void *src, size_t n)
{
	return memmove(dst, src, n);
}

MON_EXPORT void *__tsan_memset(void *dst, int c, size_t n);
MON_EXPORT void *__tsan_memset(void *dst, int c, size_t n)
{
	return memset(dst, c, n);
}

/*
 * ---- the rest of the tsan runtime API ----
 *
 * Everything from here on exists so that programs and libraries written
 * against sanitizer/tsan_interface.h (and the internal entry points gcc's
 * libtsan and clang's runtime export) link and run unchanged. None of it
 * affects what ameba measures.
 */

/* Happens-before annotations: ameba does not detect races. */
MON_EXPORT void __tsan_acquire(void *addr);
MON_EXPORT void __tsan_acquire(void *addr)
{
}

MON_EXPORT void __tsan_release(void *addr);
MON_EXPORT void __tsan_release(void *addr)
{
}

/* Nothing to flush: the runtime keeps no shadow memory. */
MON_EXPORT void __tsan_flush_memory(void);
MON_EXPORT void __tsan_flush_memory(void)
{
}

/* Mutex annotations. pre_unlock returns the number of recursion levels it
 * released (for a later post_lock); nothing is tracked, so 0. */
MON_EXPORT void __tsan_mutex_create(void *addr, unsigned flags);
MON_EXPORT void __tsan_mutex_create(void *addr, unsigned flags)
{
}

MON_EXPORT void __tsan_mutex_destroy(void *addr, unsigned flags);
MON_EXPORT void __tsan_mutex_destroy(void *addr, unsigned flags)
{
}

MON_EXPORT void __tsan_mutex_pre_lock(void *addr, unsigned flags);
MON_EXPORT void __tsan_mutex_pre_lock(void *addr, unsigned flags)
{
}

MON_EXPORT void __tsan_mutex_post_lock(void *addr, unsigned flags, int recursion);
MON_EXPORT void __tsan_mutex_post_lock(void *addr, unsigned flags, int recursion)
{
}

MON_EXPORT int __tsan_mutex_pre_unlock(void *addr, unsigned flags);
MON_EXPORT int __tsan_mutex_pre_unlock(void *addr, unsigned flags)
{
	return 0;
}

MON_EXPORT void __tsan_mutex_post_unlock(void *addr, unsigned flags);
MON_EXPORT void __tsan_mutex_post_unlock(void *addr, unsigned flags)
{
}

MON_EXPORT void __tsan_mutex_pre_signal(void *addr, unsigned flags);
MON_EXPORT void __tsan_mutex_pre_signal(void *addr, unsigned flags)
{
}

MON_EXPORT void __tsan_mutex_post_signal(void *addr, unsigned flags);
MON_EXPORT void __tsan_mutex_post_signal(void *addr, unsigned flags)
{
}

MON_EXPORT void __tsan_mutex_pre_divert(void *addr, unsigned flags);
MON_EXPORT void __tsan_mutex_pre_divert(void *addr, unsigned flags)
{
}

MON_EXPORT void __tsan_mutex_post_divert(void *addr, unsigned flags);
MON_EXPORT void __tsan_mutex_post_divert(void *addr, unsigned flags)
{
}

/*
 * External (logical) accesses by uninstrumented libraries. Tags are opaque
 * handles that callers store and pass back; they get distinct non-NULL
 * values so that code which checks the result keeps working.
 */
static unsigned long nr_external_tags;

MON_EXPORT void *__tsan_external_register_tag(const char *object_type);
MON_EXPORT void *__tsan_external_register_tag(const char *object_type)
{
	return (void *)(__atomic_add_fetch(&nr_external_tags, 1, __ATOMIC_RELAXED));
}

MON_EXPORT void __tsan_external_register_header(void *tag, const char *header);
MON_EXPORT void __tsan_external_register_header(void *tag, const char *header)
{
}

MON_EXPORT void __tsan_external_assign_tag(void *addr, void *tag);
MON_EXPORT void __tsan_external_assign_tag(void *addr, void *tag)
{
}

MON_EXPORT void __tsan_external_read(void *addr, void *caller_pc, void *tag);
MON_EXPORT void __tsan_external_read(void *addr, void *caller_pc, void *tag)
{
}

MON_EXPORT void __tsan_external_write(void *addr, void *caller_pc, void *tag);
MON_EXPORT void __tsan_external_write(void *addr, void *caller_pc, void *tag)
{
}

/*
 * Fibers. A fiber handle is a pointer the program keeps and passes back to
 * switch_to/destroy; get_current_fiber must return the thread's own handle
 * before any switch. Each thread's own fiber is a TLS object; created
 * fibers come from mon_calloc. Names are not kept (nothing reports them).
 */
struct mon_fiber {
	unsigned flags;
};

static __thread struct mon_fiber thread_fiber;
static __thread struct mon_fiber *current_fiber;

MON_EXPORT void *__tsan_get_current_fiber(void);
MON_EXPORT void *__tsan_get_current_fiber(void)
{
	return current_fiber ? current_fiber : &thread_fiber;
}

MON_EXPORT void *__tsan_create_fiber(unsigned flags);
MON_EXPORT void *__tsan_create_fiber(unsigned flags)
{
	struct mon_fiber *f = mon_calloc(1, sizeof(*f));

	if (f)
		f->flags = flags;
	return f;
}

MON_EXPORT void __tsan_destroy_fiber(void *fiber);
MON_EXPORT void __tsan_destroy_fiber(void *fiber)
{
	/* A thread's own fiber is not ours to free. */
	if (fiber && fiber != (void *)&thread_fiber)
		mon_free(fiber);
}

MON_EXPORT void __tsan_switch_to_fiber(void *fiber, unsigned flags);
MON_EXPORT void __tsan_switch_to_fiber(void *fiber, unsigned flags)
{
	current_fiber = fiber;
}

MON_EXPORT void __tsan_set_fiber_name(void *fiber, const char *name);
MON_EXPORT void __tsan_set_fiber_name(void *fiber, const char *name)
{
}

/*
 * User-overridable hooks. libtsan defines these weakly so that a program's
 * own definition wins; the runtime is linked --whole-archive, so a strong
 * definition here would turn such a program into a duplicate-symbol error.
 */
MON_EXPORT __attribute__((weak)) const char *__tsan_default_options(void);
MON_EXPORT __attribute__((weak)) const char *__tsan_default_options(void)
{
	return "";
}

MON_EXPORT __attribute__((weak)) const char *__tsan_default_suppressions(void);
MON_EXPORT __attribute__((weak)) const char *__tsan_default_suppressions(void)
{
	return "";
}

/* Called with each race report; ameba produces none. */
MON_EXPORT __attribute__((weak)) void __tsan_on_report(const void *report);
MON_EXPORT __attribute__((weak)) void __tsan_on_report(const void *report)
{
}

/* External symboliser: "not symbolised" (0) by default. */
MON_EXPORT __attribute__((weak)) int
__tsan_symbolize_external(unsigned long pc, char *func_buf, unsigned long func_sz,
			  char *file_buf, unsigned long file_sz, int *line, int *col);
MON_EXPORT __attribute__((weak)) int
__tsan_symbolize_external(unsigned long pc, char *func_buf, unsigned long func_sz,
			  char *file_buf, unsigned long file_sz, int *line, int *col)
{
	return 0;
}

MON_EXPORT __attribute__((weak)) void
__tsan_symbolize_external_ex(unsigned long pc,
			     void (*add_frame)(void *ctx, const char *func,
					       const char *file, int line, int col),
			     void *ctx);
MON_EXPORT __attribute__((weak)) void
__tsan_symbolize_external_ex(unsigned long pc,
			     void (*add_frame)(void *ctx, const char *func,
					       const char *file, int line, int col),
			     void *ctx)
{
}

/*
 * Report queries (debugger / on_report API). There is never a current
 * report, so the accessors, which may only be called on one, report
 * failure (0) and leave their outputs alone.
 */
MON_EXPORT void *__tsan_get_current_report(void);
MON_EXPORT void *__tsan_get_current_report(void)
{
	return NULL;
}

MON_EXPORT int __tsan_get_report_data(void *report, const char **description, int *count,
				      int *stack_count, int *mop_count, int *loc_count,
				      int *mutex_count, int *thread_count,
				      int *unique_tid_count, void **sleep_trace,
				      unsigned long trace_size);
MON_EXPORT int __tsan_get_report_data(void *report, const char **description, int *count,
				      int *stack_count, int *mop_count, int *loc_count,
				      int *mutex_count, int *thread_count,
				      int *unique_tid_count, void **sleep_trace,
				      unsigned long trace_size)
{
	return 0;
}

MON_EXPORT int __tsan_get_report_tag(void *report, unsigned long *tag);
MON_EXPORT int __tsan_get_report_tag(void *report, unsigned long *tag)
{
	return 0;
}

MON_EXPORT int __tsan_get_report_stack(void *report, unsigned long idx, void **trace,
				       unsigned long trace_size);
MON_EXPORT int __tsan_get_report_stack(void *report, unsigned long idx, void **trace,
				       unsigned long trace_size)
{
	return 0;
}

MON_EXPORT int __tsan_get_report_mop(void *report, unsigned long idx, int *tid, void **addr,
				     int *size, int *write, int *atomic, void **trace,
				     unsigned long trace_size);
MON_EXPORT int __tsan_get_report_mop(void *report, unsigned long idx, int *tid, void **addr,
				     int *size, int *write, int *atomic, void **trace,
				     unsigned long trace_size)
{
	return 0;
}

MON_EXPORT int __tsan_get_report_loc(void *report, unsigned long idx, const char **type,
				     void **addr, unsigned long *start, unsigned long *size,
				     int *tid, int *fd, int *suppressable, void **trace,
				     unsigned long trace_size);
MON_EXPORT int __tsan_get_report_loc(void *report, unsigned long idx, const char **type,
				     void **addr, unsigned long *start, unsigned long *size,
				     int *tid, int *fd, int *suppressable, void **trace,
				     unsigned long trace_size)
{
	return 0;
}

MON_EXPORT int __tsan_get_report_loc_object_type(void *report, unsigned long idx,
						 const char **object_type);
MON_EXPORT int __tsan_get_report_loc_object_type(void *report, unsigned long idx,
						 const char **object_type)
{
	return 0;
}

MON_EXPORT int __tsan_get_report_mutex(void *report, unsigned long idx,
				       unsigned long *mutex_id, void **addr, int *destroyed,
				       void **trace, unsigned long trace_size);
MON_EXPORT int __tsan_get_report_mutex(void *report, unsigned long idx,
				       unsigned long *mutex_id, void **addr, int *destroyed,
				       void **trace, unsigned long trace_size)
{
	return 0;
}

MON_EXPORT int __tsan_get_report_thread(void *report, unsigned long idx, int *tid,
					unsigned long long *os_id, int *running,
					const char **name, int *parent_tid, void **trace,
					unsigned long trace_size);
MON_EXPORT int __tsan_get_report_thread(void *report, unsigned long idx, int *tid,
					unsigned long long *os_id, int *running,
					const char **name, int *parent_tid, void **trace,
					unsigned long trace_size)
{
	return 0;
}

MON_EXPORT int __tsan_get_report_unique_tid(void *report, unsigned long idx, int *tid);
MON_EXPORT int __tsan_get_report_unique_tid(void *report, unsigned long idx, int *tid)
{
	return 0;
}

/*
 * Address description for debuggers: the kind string is "" (unknown), the
 * name empty and the region [0, 0). The outputs are written because callers
 * read them unconditionally.
 */
MON_EXPORT const char *__tsan_locate_address(unsigned long addr, char *name,
					     unsigned long name_size,
					     unsigned long *region_address,
					     unsigned long *region_size);
MON_EXPORT const char *__tsan_locate_address(unsigned long addr, char *name,
					     unsigned long name_size,
					     unsigned long *region_address,
					     unsigned long *region_size)
{
	if (name && name_size)
		name[0] = '\0';
	if (region_address)
		*region_address = 0;
	if (region_size)
		*region_size = 0;
	return "";
}

/* Allocation stack of a heap block: the number of frames written, 0. */
MON_EXPORT int __tsan_get_alloc_stack(unsigned long addr, unsigned long *trace,
				      unsigned long size, int *thread_id,
				      unsigned long long *os_id);
MON_EXPORT int __tsan_get_alloc_stack(unsigned long addr, unsigned long *trace,
				      unsigned long size, int *thread_id,
				      unsigned long long *os_id)
{
	return 0;
}

/*
 * Java runtime support (used by JVMs that embed tsan). Heap tracking is the
 * JVM's business here; the queries answer "nothing": java_find returns 0
 * (no object at or after from), java_fini the exit status 0 (no races),
 * unlock_rec the number of released recursion levels, 0.
 */
MON_EXPORT void __tsan_java_init(unsigned long heap_begin, unsigned long heap_size);
MON_EXPORT void __tsan_java_init(unsigned long heap_begin, unsigned long heap_size)
{
}

MON_EXPORT int __tsan_java_fini(void);
MON_EXPORT int __tsan_java_fini(void)
{
	return 0;
}

MON_EXPORT void __tsan_java_alloc(unsigned long ptr, unsigned long size);
MON_EXPORT void __tsan_java_alloc(unsigned long ptr, unsigned long size)
{
}

MON_EXPORT void __tsan_java_free(unsigned long ptr, unsigned long size);
MON_EXPORT void __tsan_java_free(unsigned long ptr, unsigned long size)
{
}

MON_EXPORT void __tsan_java_move(unsigned long src, unsigned long dst, unsigned long size);
MON_EXPORT void __tsan_java_move(unsigned long src, unsigned long dst, unsigned long size)
{
}

MON_EXPORT unsigned long __tsan_java_find(unsigned long *from_ptr, unsigned long to);
MON_EXPORT unsigned long __tsan_java_find(unsigned long *from_ptr, unsigned long to)
{
	return 0;
}

MON_EXPORT void __tsan_java_finalize(void);
MON_EXPORT void __tsan_java_finalize(void)
{
}

MON_EXPORT void __tsan_java_mutex_lock(unsigned long addr);
MON_EXPORT void __tsan_java_mutex_lock(unsigned long addr)
{
}

MON_EXPORT void __tsan_java_mutex_unlock(unsigned long addr);
MON_EXPORT void __tsan_java_mutex_unlock(unsigned long addr)
{
}

MON_EXPORT void __tsan_java_mutex_read_lock(unsigned long addr);
MON_EXPORT void __tsan_java_mutex_read_lock(unsigned long addr)
{
}

MON_EXPORT void __tsan_java_mutex_read_unlock(unsigned long addr);
MON_EXPORT void __tsan_java_mutex_read_unlock(unsigned long addr)
{
}

MON_EXPORT void __tsan_java_mutex_lock_rec(unsigned long addr, int rec);
MON_EXPORT void __tsan_java_mutex_lock_rec(unsigned long addr, int rec)
{
}

MON_EXPORT int __tsan_java_mutex_unlock_rec(unsigned long addr);
MON_EXPORT int __tsan_java_mutex_unlock_rec(unsigned long addr)
{
	return 0;
}

MON_EXPORT void __tsan_java_acquire(unsigned long addr);
MON_EXPORT void __tsan_java_acquire(unsigned long addr)
{
}

MON_EXPORT void __tsan_java_release(unsigned long addr);
MON_EXPORT void __tsan_java_release(unsigned long addr)
{
}

MON_EXPORT void __tsan_java_release_store(unsigned long addr);
MON_EXPORT void __tsan_java_release_store(unsigned long addr)
{
}

/*
 * Internal entry points of libtsan that its own interceptors and asm call
 * (setjmp bookkeeping, the pthread_create trampoline, markers whose address
 * tsan uses as a pc). They are exported by both runtimes, so they are here
 * too; ameba's own interceptors never call them.
 */
MON_EXPORT void __tsan_setjmp(unsigned long sp);
MON_EXPORT void __tsan_setjmp(unsigned long sp)
{
}

/* tsan's trampoline takes its private thread-start record; nothing can
 * legitimately hand one to us, so there is nothing to run. */
MON_EXPORT void *__tsan_thread_start_func(void *arg);
MON_EXPORT void *__tsan_thread_start_func(void *arg)
{
	return NULL;
}

MON_EXPORT void __tsan_stack_initialization(void);
MON_EXPORT void __tsan_stack_initialization(void)
{
}

MON_EXPORT void __tsan_tls_initialization(void);
MON_EXPORT void __tsan_tls_initialization(void)
{
}

/* Resumes a process started with tsan's stop_on_start flag; never stopped. */
MON_EXPORT void __tsan_resume(void);
MON_EXPORT void __tsan_resume(void)
{
}

/* The scheduler hint tsan uses to flush idle threads' state. */
MON_EXPORT void __tsan_on_thread_idle(void);
MON_EXPORT void __tsan_on_thread_idle(void)
{
}

/* ---- test-only API of tsan's own test suite ---- */

MON_EXPORT void __tsan_test_only_on_fork(void);
MON_EXPORT void __tsan_test_only_on_fork(void)
{
}

/* No shadow call stack yet (see __tsan_func_entry). */
MON_EXPORT unsigned long __tsan_testonly_shadow_stack_current_size(void);
MON_EXPORT unsigned long __tsan_testonly_shadow_stack_current_size(void)
{
	return 0;
}

/*
 * A barrier that tsan's tests use because it is invisible to race detection.
 * Unlike the other test-only calls it must really block, or the programs
 * that use it race. The caller gives 8 bytes of storage; we use the first 32
 * bits: the party count in the low 8 bits, the number of arrivals so far
 * above them. A waiter's generation is arrivals / count at its own arrival;
 * it leaves when that quotient moves on. 2^24 arrivals wrap the word, far
 * beyond any test.
 */
#define BARRIER_COUNT_BITS 8
#define BARRIER_COUNT_MASK ((1u << BARRIER_COUNT_BITS) - 1)

MON_EXPORT void __tsan_testonly_barrier_init(uint64_t *barrier, unsigned count);
MON_EXPORT void __tsan_testonly_barrier_init(uint64_t *barrier, unsigned count)
{
	uint32_t *word = (uint32_t *)barrier;

	if (count == 0 || count > BARRIER_COUNT_MASK) {
		mon_log("__tsan_testonly_barrier_init: %u parties unsupported (1..%u)",
			count, BARRIER_COUNT_MASK);
		count = count ? BARRIER_COUNT_MASK : 1;
	}
	__atomic_store_n(word, count, __ATOMIC_RELAXED);
}

MON_EXPORT void __tsan_testonly_barrier_wait(uint64_t *barrier);
MON_EXPORT void __tsan_testonly_barrier_wait(uint64_t *barrier)
{
	uint32_t *word = (uint32_t *)barrier;
	uint32_t old = __atomic_fetch_add(word, 1u << BARRIER_COUNT_BITS, __ATOMIC_ACQ_REL);
	uint32_t count = old & BARRIER_COUNT_MASK;
	uint32_t gen = (old >> BARRIER_COUNT_BITS) / count;

	for (;;) {
		uint32_t cur = __atomic_load_n(word, __ATOMIC_ACQUIRE);

		if ((cur >> BARRIER_COUNT_BITS) / count != gen)
			return;
		sched_yield();
	}
}
