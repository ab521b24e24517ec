/*
 * mon.h - internal interfaces of libameba-rt, the in-process monitor.
 *
 * Layers (one file each, prefix mon_):
 *   tsan_abi.c     the ThreadSanitizer instrumentation ABI (__tsan_*): the hooks
 *   intercept.c    malloc family, mmap, mem and str functions, pthread_create, fork, dlopen
 *   rt.c           init, the thread registry, per-access delivery, exit
 *   objmap.c       address -> object (globals, heap, stacks, TLS, [other])
 *   site.c         allocation sites: capture (frame-pointer walk) and symbolisation (libdw)
 *   elfsyms.c      globals of the executable and DSOs from ELF symtab + DWARF
 *   counts.c       per-thread, per-object metric counters
 *   oracle.c       the AMEBA_ORACLE dump
 *   sampled.c      sampled simulation: the burst controller and the estimates
 *   backend_count.c the `count` backend: exact reads/writes per object per thread
 *
 * Conventions: ranges are half-open [start, end); functions return 0 or a
 * negative AMEBA_E* code; allocating functions return NULL and leave state
 * untouched. Nothing in this directory calls the interposed malloc: internal
 * memory comes from mon_malloc() and friends (glibc's __libc_* entry points).
 *
 * Threading: every mon_thread is owned by its thread. Other threads only read
 * its counters (relaxed atomics) and its immutable fields. The hot path (the
 * __tsan_* hooks) takes no lock and allocates nothing.
 */
#ifndef AMEBA_MON_H
#define AMEBA_MON_H

#include <sched.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "ameba/ameba.h"

#define MON_HIDDEN __attribute__((visibility("hidden")))
#define MON_EXPORT __attribute__((visibility("default")))
#define mon_likely(x) __builtin_expect(!!(x), 1)
#define mon_unlikely(x) __builtin_expect(!!(x), 0)

/*
 * Every runtime translation unit includes this header and so defines this
 * one-byte local symbol. The object map uses it to leave the runtime's own
 * statics out of the program's globals: in .symtab the linker keeps each
 * object file's local symbols together after its STT_FILE symbol, and a group
 * holding the marker is the runtime's (objmap.c, elfsyms.c). AMEBA_RT is
 * defined for the runtime's sources by monitor/CMakeLists.txt.
 */
#ifdef AMEBA_RT	/* the runtime's own objects only, not tests including this */
static const char mon_rt_unit_marker[1] __attribute__((used)) = "";
#endif

/* Accesses are delivered one cache line at a time: a hook call touching k
 * lines of MON_LINE_SIZE bytes counts as k accesses. */
#define MON_LINE_SHIFT 6
#define MON_LINE_SIZE (1u << MON_LINE_SHIFT)

/* ---- the runtime's own code: [mon_text_begin, mon_text_end) ---- */
void mon_text_begin(void) MON_HIDDEN;
void mon_text_end(void) MON_HIDDEN;

static inline int mon_pc_in_runtime(uintptr_t pc)
{
	return pc >= (uintptr_t)mon_text_begin && pc < (uintptr_t)mon_text_end;
}

/* ---- internal memory (never the interposed allocator) ---- */
void *mon_malloc(size_t sz) MON_HIDDEN;
void *mon_calloc(size_t nr, size_t sz) MON_HIDDEN;
void *mon_realloc(void *p, size_t sz) MON_HIDDEN;
void mon_free(void *p) MON_HIDDEN;
char *mon_strdup(const char *s) MON_HIDDEN;

/* ---- a small lock (an int, 0 = free) for short critical sections ---- */
static inline void mon_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Test-and-test-and-set; yields after a while so that a preempted holder can run. */
static inline void mon_spin_lock(int *l)
{
	unsigned n = 0;

	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) {
		while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
			if (++n < 128)
				mon_cpu_relax();
			else
				sched_yield();
		}
	}
}

static inline void mon_spin_unlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* ---- diagnostics ---- */
/* Prints "ameba-rt: <msg>\n" to stderr with write(2); async-signal-safe enough. */
void mon_log(const char *fmt, ...) __attribute__((format(printf, 1, 2))) MON_HIDDEN;

/* ---- access flags ---- */
enum mon_access_flags {
	MON_ACC_READ = 1u << 0,
	MON_ACC_WRITE = 1u << 1,	/* an atomic RMW has READ|WRITE */
	MON_ACC_ATOMIC = 1u << 2,
	MON_ACC_VOLATILE = 1u << 3,
	MON_ACC_RANGE = 1u << 4,	/* from a range hook or a mem/str function */
	MON_ACC_UNALIGNED = 1u << 5,
	MON_ACC_WARM = 1u << 6,		/* sampled mode's replay (tally.c): fills the
					 * caches; the ordered mode's merger counts
					 * nothing of it and leaves the clock alone */
};

/* ---- objects ---- */
enum mon_obj_kind {
	MON_OBJ_GLOBAL,		/* ELF data symbol of the executable or a DSO */
	MON_OBJ_HEAP,		/* malloc family, operator new */
	MON_OBJ_MMAP,		/* anonymous mmap, or mmap of a file (name: mon_file_view) */
	MON_OBJ_STACK,		/* a thread's stack */
	MON_OBJ_TLS,		/* a thread's static TLS block of the executable */
	MON_OBJ_OTHER,		/* "[other]": everything else */
	MON_OBJ_NR_KINDS
};

const char *mon_obj_kind_name(int kind) MON_HIDDEN; /* "global", "heap", ... */

enum mon_obj_flags {
	MON_OBJF_LIVE = 1u << 0,	/* not yet freed / unmapped / module unloaded */
	MON_OBJF_ACCESSED = 1u << 1,	/* looked up at least once (cleared only by recycling) */
	MON_OBJF_RETIRED = 1u << 2,	/* a site's retired record (fold.c): never live */
};

/*
 * One data object. Records are never moved; a freed-and-reused address gets
 * a new record (a new seq). A freed heap or anonymous mmap block's record
 * is recycled (the same idx for a new block): at once when it was never
 * ACCESSED; when it was, once each of its holders (below) has folded its
 * counts into the site's retired record (fold.c), which keeps every
 * thread's total for the site. A record with more holders than fold.c
 * tracks (MON_EXTRA_MAX), and every other kind, stays (flags without LIVE)
 * until the process ends.
 */
struct mon_obj {
	uint32_t idx;		/* index in the object table: the object's id in this process */
	uint8_t kind;		/* enum mon_obj_kind */
	uint8_t flags;		/* enum mon_obj_flags; read with __atomic_load_n */
	uint16_t extra;		/* holders beyond holder and holder2, listed by fold.c
				 * (atomic); MON_EXTRA_SAT: too many to track */
	uint32_t site_id;	/* heap/mmap: allocation site; global: module index; else 0 */
	uint32_t thread_id;	/* stack/tls: owning thread; heap: allocating thread */
	uint32_t holder, holder2;	/* the first two threads that cached it or made
				 * a counter vector of it, thread id + 1 each (0: none;
				 * atomic; mon_objmap_hold; a fold clears its thread's);
				 * holder2 MON_HOLDER_MANY: never folded (a retired
				 * record, or one being recycled) */
	uint64_t seq;		/* allocation sequence number, process-wide, from 1 */
	uintptr_t start, end;	/* [start, end) */
	size_t sz_bytes;	/* requested size (end - start for all but heap) */
	const char *name;	/* global: symbol name; mmap of a file: its path, a
				 * mon_file_view (mon_file_view_off() gives the offset);
				 * others: NULL (named by site / kind) */
};

/* Called by objmap.c for an object that was accessed, once it has died
 * (LIVE cleared; whoever freed it, under the lock of its index): the sim
 * backend's line filter forgets the lines it counts into o (backend_sim.c),
 * so that a hit through the filter needs no test that its object lives.
 * NULL: nothing to call. */
extern void (*mon_obj_dead_hook)(const struct mon_obj *o) MON_HIDDEN;

#define MON_HOLDER_MANY UINT32_MAX
#define MON_EXTRA_MAX 64		/* extra holders fold.c lists per record */
#define MON_EXTRA_SAT UINT16_MAX

/* A third or later holder of o (fold.c lists it; heap and mmap records only). */
void mon_fold_hold_more(struct mon_obj *o, uint32_t thread_id) MON_HIDDEN;

/* Thread t caches o or makes a counter vector of it (before it uses either):
 * the lookup's and the vector's slow paths. */
static inline void mon_objmap_hold(struct mon_obj *o, uint32_t thread_id)
{
	uint32_t me = thread_id + 1, h = __atomic_load_n(&o->holder, __ATOMIC_ACQUIRE);

	while (h != me) {
		if (h)
			break;	/* another thread's: the second slot */
		if (__atomic_compare_exchange_n(&o->holder, &h, me, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return;
	}
	if (h == me)
		return;
	h = __atomic_load_n(&o->holder2, __ATOMIC_ACQUIRE);
	while (h != me && h != MON_HOLDER_MANY) {
		if (h) {
			mon_fold_hold_more(o, thread_id);
			return;
		}
		if (__atomic_compare_exchange_n(&o->holder2, &h, me, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return;
	}
}

/* The table of all object records; idx < mon_objmap_nr_objs(). */
struct mon_obj *mon_objmap_get(uint32_t idx) MON_HIDDEN;
uint32_t mon_objmap_nr_objs(void) MON_HIDDEN;
/* Records that stopped being live so far (frees, unmaps, unloads, ended
 * threads): a client that saw it unchanged knows nothing was freed. */
uint64_t mon_objmap_nr_killed(void) MON_HIDDEN;

struct mon_thread;

int mon_objmap_init(void) MON_HIDDEN;	/* scans loaded modules; called once from mon_init */

/*
 * The object containing addr, never NULL ([other] when nothing else matches).
 * Called on the accessing thread t (t may be NULL when unregistered); uses
 * t's small MRU cache, then the sharded index (no single global lock).
 * Sets MON_OBJF_ACCESSED.
 */
struct mon_obj *mon_objmap_lookup(struct mon_thread *t, uintptr_t addr) MON_HIDDEN;

/* Heap and anonymous-mmap blocks. site_id from mon_site_capture(). Returns the
 * new record or NULL on allocation failure (then the block is simply untracked). */
struct mon_obj *mon_objmap_add_block(int kind, uintptr_t start, size_t sz_bytes,
				     uint32_t site_id, uint32_t thread_id) MON_HIDDEN;
/* Removes the live block starting at start (heap) or the parts of mmap
 * blocks inside [start, end) (munmap). Unknown addresses are ignored. */
void mon_objmap_del_block(uintptr_t start) MON_HIDDEN;
void mon_objmap_unmap_range(uintptr_t start, uintptr_t end) MON_HIDDEN;

/*
 * File views: the (path, offset) a file mapping shows, interned for the
 * life of the process (one small record per distinct pair, never freed,
 * so names and offsets stay valid without locks). mon_file_view() returns
 * the path string of the view, NULL when out of memory; it takes a mutex
 * and allocates (never on the access path). mon_file_view_off() reads the
 * offset of a string mon_file_view() returned. A file's identity (site
 * keys) is its view at offset 0: equal paths, equal pointers.
 */
const char *mon_file_view(const char *path, uint64_t off) MON_HIDDEN;
uint64_t mon_file_view_off(const char *view) MON_HIDDEN;
static inline const char *mon_file_intern(const char *path)
{
	return mon_file_view(path, 0);
}

/* A block mapping [start, start + sz_bytes) of a file: kind MON_OBJ_MMAP,
 * name view (from mon_file_view(); NULL: a file without a path, named by
 * its site as anonymous memory is). As mon_objmap_add_block() otherwise;
 * munmap of a part keeps the view of each remaining part (its own offset). */
struct mon_obj *mon_objmap_add_file(uintptr_t start, size_t sz_bytes, uint32_t site_id,
				    uint32_t thread_id, const char *view) MON_HIDDEN;

/* Thread stacks and TLS: registered / removed by the thread registry. */
void mon_objmap_thread_add(struct mon_thread *t) MON_HIDDEN;
void mon_objmap_thread_del(struct mon_thread *t) MON_HIDDEN;

/* Rescans loaded modules after dlopen / dlclose (globals of new modules are
 * added, those of unloaded ones lose MON_OBJF_LIVE). */
void mon_objmap_modules_changed(void) MON_HIDDEN;

/* Text range of instrumented modules: is pc inside code built with ameba cc? */
int mon_objmap_pc_instrumented(uintptr_t pc) MON_HIDDEN;

/* ---- allocation sites ---- */
#define MON_SITE_MAX_FRAMES 8

struct mon_site {
	uint32_t id;		/* dense, from 1; 0 = unknown site */
	uint32_t nr_frames;
	uintptr_t frames[MON_SITE_MAX_FRAMES]; /* return addresses, innermost first */
	const char *file;	/* a file mapping's file (mon_file_intern()), part of
				 * the site's identity; NULL for every other block */
	uint64_t nr_allocs;	/* atomic */
	uint64_t sz_bytes_total;	/* atomic */
};

/*
 * Captures the call stack of an allocation function. ret_pc is the return
 * address of the interposed function (its caller), frame its
 * __builtin_frame_address(0). Walks frame pointers with bounds checks against
 * the thread's stack. Returns the dense site id (deduplicated), 0 on failure.
 * Async-signal-unsafe but never calls the interposed allocator.
 */
uint32_t mon_site_capture(struct mon_thread *t, uintptr_t ret_pc, void *frame) MON_HIDDEN;
/* The same for a mapping of file (mon_file_intern()): a site of its own per file. */
uint32_t mon_site_capture_file(struct mon_thread *t, uintptr_t ret_pc, void *frame,
			       const char *file) MON_HIDDEN;
const struct mon_site *mon_site_get(uint32_t id) MON_HIDDEN;
uint32_t mon_site_nr(void) MON_HIDDEN;	/* ids are 1 .. mon_site_nr() */
/* Counts one allocation of sz_bytes at site_id (nr_allocs, sz_bytes_total).
 * mon_objmap_add_block() calls it for every tracked block; 0 is ignored. */
void mon_site_count(uint32_t site_id, size_t sz_bytes) MON_HIDDEN;

/* Symbolised frame: function, file, line, module; fields may be NULL/0. */
struct mon_frame_info {
	const char *func;
	const char *file;	/* basename-free full path as in DWARF */
	int line;
	const char *module;
};
/* Symbolises pc with libdw (cached). Returns 0 or AMEBA_ENOENT. Strings stay valid. */
int mon_symbolize(uintptr_t pc, struct mon_frame_info *out) MON_HIDDEN;
/* "func@basename:line" of code address pc (func@module or 0x..@module when
 * there is no line information); written to buf, returns buf. */
const char *mon_frame_label(uintptr_t pc, char *buf, size_t len) MON_HIDDEN;
/* "func@file:line" of the frame that names the site (mon_site_start()); written
 * to buf, returns buf. file is the basename. */
const char *mon_site_name(uint32_t site_id, char *buf, size_t len) MON_HIDDEN;

/*
 * Allocation wrappers (docs/objmap.md): the frame that names a site is the
 * first frame in instrumented code (or the first frame), its inlined
 * scopes counted as frames of their own, that is not an allocation
 * wrapper: a function named in AMEBA_ALLOC_WRAPPERS (or the default list),
 * or a small function written in a header of the program. A wrapper
 * yields to its caller only when the caller is known (an inlined scope, or
 * the next frame in instrumented code).
 *
 * Returns the index in s->frames of the naming frame; its label
 * ("func@file:line") goes to label[len], and the label of the innermost
 * wrapper skipped to via[vlen] ("" when none was; via may be NULL).
 * Symbolises (slow, cached). s NULL or frameless: "[unknown site]", 0.
 */
uint32_t mon_site_start(const struct mon_site *s, char *label, size_t len, char *via,
			size_t vlen) MON_HIDDEN;

/* Is func an allocation wrapper by name (AMEBA_ALLOC_WRAPPERS, read once,
 * or the default list)? */
int mon_alloc_wrapper_named(const char *func) MON_HIDDEN;

/* Site bins (sitebins.c): sites grouped by symbolised name; callers are
 * appended to a name only where that tells sites apart (docs/oracle.md). */
struct mon_site_bins {
	uint32_t nr_sites;	/* site ids 1 .. nr_sites */
	uint32_t nr_bins;
	uint32_t *bin_of;	/* [nr_sites + 1]: bin of each site id */
	char **label;		/* [nr_bins] */
	char **via;		/* [nr_bins]: the allocation wrapper its first site
				 * skipped ("xmalloc@util.c:12"), or NULL */
	uint64_t *nr_allocs;	/* [nr_bins] */
	uint64_t *bytes;	/* [nr_bins] */
};
/* Builds the bins of all sites known now (slow: symbolises). 0 or AMEBA_ENOMEM. */
int mon_site_bins_build(struct mon_site_bins *b) MON_HIDDEN;
void mon_site_bins_free(struct mon_site_bins *b) MON_HIDDEN;
/* The bin of site_id in b, UINT32_MAX when b does not know the site. */
uint32_t mon_site_bins_of(const struct mon_site_bins *b, uint32_t site_id) MON_HIDDEN;
/*
 * The name reports give object o, written to buf: a global's symbol, a heap
 * or mmap block's site-bin label from b ("[unknown site]" when b does not
 * know its site), "[stack T3]", "[tls T3]", "[other]". Returns buf.
 */
const char *mon_obj_label(const struct mon_obj *o, const struct mon_site_bins *b, char *buf,
			  size_t len) MON_HIDDEN;

/* ---- threads ---- */
#define MON_OBJCACHE_WAYS 4

/*
 * A thread's last few objects. Way w caches obj[w], which covers
 * [start[w], end[w]), and the thread's counter vector of it, counts[w]
 * (NULL until the access path asks counts.c; vectors never move). Ways are
 * filled round robin (next). A lookup checks the way of the last hit
 * (hint) first, then the ways after it: a run of accesses to one object
 * costs one check, a loop over a few arrays filled in order two.
 * objmap.c fills and forgets ways, rt.c sets counts[]. Owner thread only.
 */
struct mon_objcache {
	uintptr_t start[MON_OBJCACHE_WAYS], end[MON_OBJCACHE_WAYS];
	struct mon_obj *obj[MON_OBJCACHE_WAYS];
	uint64_t *counts[MON_OBJCACHE_WAYS];
	uint32_t next;
	uint32_t hint;
};

struct mon_counts;	/* counts.c */

struct mon_thread {
	uint32_t id;		/* dense ameba thread id: 0 = the first (main) thread */
	pid_t tid;		/* OS thread id */
	int exited;		/* set when the thread has ended (atomic) */
	int in_rt;		/* >0 while the runtime runs on this thread: hooks and
				 * the allocator interposers pass straight through */
	int ignore;		/* >0 between __tsan_ignore_thread_begin/end: accesses
				 * are not delivered */
	int seq_created;	/* its parent logged its creation (seq.c; atomic). In
				 * the padding: the record's size decides where the
				 * program's own blocks land (the runtime allocates
				 * from the same heap) */
	uintptr_t stack_lo, stack_hi;	/* [lo, hi); 0,0 when unknown */
	uintptr_t tls_lo, tls_hi;	/* executable's static TLS block */
	struct mon_objcache cache;	/* owned by objmap.c */
	struct mon_obj *stack_obj, *tls_obj;	/* objmap.c: this thread's records */
	struct mon_counts *counts;	/* per-object counters, counts.c */
	void *backend_data;		/* owned by the active backend */
	const struct mon_backend_ops *started;	/* backend whose thread_start ran here */
	void *cond;			/* conditional counters' per-thread state, cond.c */
	void *sample;			/* sample streams' per-thread state, sample.c */
	struct mon_thread *next_all;	/* registry list (never unlinked) */
	void *seq;			/* this thread's access log in ordered mode (seq.c) */
};

/*
 * The way of t's object cache that holds addr, or -1: the cached half of
 * mon_objmap_lookup(), inline for the access path. A way whose object was
 * freed does not count (mon_objmap_lookup() then forgets it). Objects never
 * overlap, so the order of the checks changes nothing but their number.
 */
static inline int mon_objcache_way(struct mon_thread *t, uintptr_t addr)
{
	struct mon_objcache *c = &t->cache;
	uint32_t w = c->hint;

	if (mon_unlikely(addr - c->start[w] >= c->end[w] - c->start[w])) {
		/* unrolled: no loop counter, fewer registers on the access path */
		_Static_assert(MON_OBJCACHE_WAYS == 4, "the ways after the hint");
		w = (w + 1) % MON_OBJCACHE_WAYS;
		if (addr - c->start[w] >= c->end[w] - c->start[w]) {
			w = (w + 1) % MON_OBJCACHE_WAYS;
			if (addr - c->start[w] >= c->end[w] - c->start[w]) {
				w = (w + 1) % MON_OBJCACHE_WAYS;
				if (addr - c->start[w] >= c->end[w] - c->start[w])
					return -1;
			}
		}
		c->hint = w;
	}
	return __atomic_load_n(&c->obj[w]->flags, __ATOMIC_RELAXED) & MON_OBJF_LIVE ? (int)w : -1;
}

/* Thread registration from pthread_create (rt.c): wraps a start routine so the
 * new thread registers with an id reserved in creation order. */
int mon_thread_wrap_start(void *(**fn)(void *), void **arg) MON_HIDDEN;
void mon_thread_unwrap_start(void *arg) MON_HIDDEN;

/* The calling thread's record, or NULL when not registered yet. */
extern __thread struct mon_thread *mon_self MON_HIDDEN __attribute__((tls_model("initial-exec")));

/* The calling thread's record, registering the thread on first use. NULL only
 * when the runtime is shut down or out of memory. */
struct mon_thread *mon_thread_self(void) MON_HIDDEN;
/* Number of threads ever registered; records by dense id (NULL if none). */
uint32_t mon_thread_nr(void) MON_HIDDEN;
struct mon_thread *mon_thread_get(uint32_t id) MON_HIDDEN;

/* ---- the runtime ---- */

/*
 * What the hooks read on every access, alone on one cache line: a program
 * global sharing that line and written often would otherwise make every
 * hook miss (and show up as false sharing caused by the monitor).
 *   active        non-zero while an analysis is attached: the hooks deliver
 *                 accesses; zero = dormant, every hook returns after one load
 *                 and one branch
 *   tally         sampled mode between bursts: count, do not deliver
 *   batch         the access batch is on, or has records waiting (batch.c)
 *   diverted      both of them as one word: the hooks' test for a path
 *                 other than delivering the access
 *   cond_armed    a conditional-counter set is armed (cond.c)
 *   sample_armed  a sample stream is armed (sample.c)
 *   armed         both of them as one word, for the fast path's one test
 *                 (mon_access): non-zero when either is
 *   sampling      sampled mode (sampled.c): the hooks tally
 *   ordered       the backend went to ordered mode (rt.c: seq_choose):
 *                 every access is logged for the merger
 *   dormant       active's opposite, kept with it (rt.c mon_set_active)
 *   gate          all seven as one word: zero when the hooks deliver and
 *                 an access may be delivered as it comes, without a
 *                 condition, stream, sample, diversion or log (the plain
 *                 hooks' one test before the line filter: with dormant in
 *                 it, the active hooks' path tests one word, not two); a
 *                 relaxed load of an aligned 8-byte word is single-copy
 *                 atomic on the targets (x86-64, aarch64), so it sees each
 *                 flag whole
 *   backend       the active backend
 * The flags are bytes, each 0 or 1, stored atomically on their own.
 */
struct mon_hot {
	int active;
	union {
		struct {
			union {
				struct {
					uint8_t tally;
					uint8_t batch;
				};
				uint16_t diverted;
			};
			union {
				struct {
					uint8_t cond_armed;
					uint8_t sample_armed;
				};
				uint16_t armed;
			};
			uint8_t sampling;
			uint8_t ordered;
			uint8_t dormant;
		};
		uint64_t gate;
	};
	const struct mon_backend_ops *backend;
} __attribute__((aligned(64)));

extern struct mon_hot mon_hot MON_HIDDEN;
/* The bits of mon_hot.gate that are mon_hot.diverted's (its first two bytes) */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MON_HOT_DIVERTED 0xffffull
#define MON_HOT_DORMANT (0xffull << 48)
#define MON_HOT_ORDERED (0x1ull << 40)
#else
#define MON_HOT_DIVERTED 0xffff000000000000ull
#define MON_HOT_DORMANT (0xffull << 8)
#define MON_HOT_ORDERED (0x1ull << 16)
#endif
/* MON_HOT_ORDERED: the gate of ordered mode with nothing else (ordered 1,
 * which is all it is ever set to) */
_Static_assert(__builtin_offsetof(struct mon_hot, ordered) ==
		       __builtin_offsetof(struct mon_hot, gate) + 5,
	       "mon_hot.ordered: the gate's sixth byte (MON_HOT_ORDERED)");
_Static_assert(__builtin_offsetof(struct mon_hot, diverted) ==
		       __builtin_offsetof(struct mon_hot, gate),
	       "mon_hot.diverted: the gate's first two bytes");
_Static_assert(__builtin_offsetof(struct mon_hot, dormant) ==
		       __builtin_offsetof(struct mon_hot, gate) + 6,
	       "mon_hot.dormant: the gate's seventh byte (MON_HOT_DORMANT)");
/* mon_hot.active and .dormant together: the hooks stop delivering before
 * active drops (rt.c) */
void mon_set_active(int on) MON_HIDDEN;
#define mon_active (mon_hot.active)
#define mon_cond_armed (mon_hot.cond_armed)
#define mon_sample_armed (mon_hot.sample_armed)
#define mon_any_armed (mon_hot.armed)
#define mon_backend (mon_hot.backend)

/*
 * Sampled mode (sampled.c, docs/simulator.md "Sampled simulation"): the
 * hooks count every access of a thread in its tally slot - `sim` while it
 * is delivered (a burst or its warm-up), its lanes while it is not
 * (between bursts, mon_hot.tally set) - so that what a burst counted can be
 * scaled to all the accesses. One 128-byte slot per thread id (no line is
 * written by two threads on the hooks' path); ids from MON_TALLY_MAX on are
 * not counted.
 */
#define MON_TALLY_MAX (1u << 20)
/* The tally between bursts is kept in MON_TALLY_LANES counters, one chosen
 * per access from its address and the hook's return address, so that
 * consecutive accesses' adds do not each wait for the last one's store.
 * Lanes alone did not make gaps measurably cheaper on the development VM;
 * the shorter path as a whole did (mon_tally_add, tsan_abi.c's
 * DEFINE_ACCESS: gemm_blocked tallying 9.8-10.9 s against 11.1-11.4). */
#define MON_TALLY_LANES 4
struct mon_tally {
	uint64_t lane[MON_TALLY_LANES];	/* between bursts (mon_tally_sum) */
	uint64_t sim;		/* delivered: a burst or its warm-up */
	uint64_t due;		/* between bursts: at this tally the thread asks for
				 * the next burst (0: it does not); the controller
				 * sets it, the owner clears it */
	uint32_t rpos;		/* the owner's: addresses it put in its ring */
	uint32_t replay;	/* MON_REPLAY_*: the controller asks, the owner
				 * replays (tally.c, mon_tally_replay) */
	uint64_t replayed;	/* the owner's: accesses it replayed */
	/* the second line: written by others */
	uint64_t dropped __attribute__((aligned(64)));
				/* of sim: logged, then dropped by the ordered mode's
				 * merger at a burst's end (seq.c; the merger writes it) */
	uint64_t gc, wc;	/* the controller's: tally at the gap's start and at
				 * its end (the thread's rate, tally.c's dues) */
	uint64_t ws;		/* the controller's: sim at the warm-up's start */
} __attribute__((aligned(64)));
extern struct mon_tally *mon_tally_tab MON_HIDDEN;

/* The calling thread's tally slot, found on its first access between
 * bursts (mon_tally_first): one TLS load on the hooks' path instead of the
 * table, the thread's id and a bounds check. */
extern __thread struct mon_tally *mon_tslot MON_HIDDEN __attribute__((tls_model("initial-exec")));
/* tally.c: maps the table (0, or -1 out of memory; once). */
int mon_tally_alloc(void) MON_HIDDEN;
/* tally.c: the controller's futex word (bit 0: a due was reached; + 2:
 * any other wake-up) and its wake. */
extern uint32_t mon_smp_word MON_HIDDEN;
void mon_smp_word_wake(void) MON_HIDDEN;
/* A thread reached its due: the controller is asked for a burst (tally.c). */
void mon_sampled_due(struct mon_tally *c) MON_HIDDEN __attribute__((noinline, cold));

/*
 * The warm-up's replay (docs/simulator.md, "Warm-up and the LLC"): between
 * bursts each thread keeps the address of about one access in 256 (the
 * one that makes a lane cross a multiple of 256, mon_tally_check) in a
 * ring of MON_RING_LEN; before a warm-up the controller asks every thread
 * that tallied to replay its ring through the simulator, oldest first, so
 * that the L2 and the LLC hold what the gap used rather than what the last
 * burst left. Rings for MON_RING_THREADS ids; id n uses ring n mod that.
 */
#define MON_RING_THREADS 256u
#define MON_RING_LEN 8192u
enum { MON_REPLAY_NONE, MON_REPLAY_ASKED, MON_REPLAY_BUSY };
extern uint64_t *mon_ring_tab MON_HIDDEN;
/* tally.c: the controller asks the nr slots' threads to replay and waits
 * (max_us at most; until late_us for a thread asked that waits for a CPU;
 * lock let go meanwhile; *stop ends it; returns the us it took); the
 * warm-up's end takes the requests back. */
uint64_t mon_tally_replay_ask(uint32_t nr, pthread_mutex_t *lock, const int *stop,
			      uint64_t max_us, uint64_t late_us) MON_HIDDEN;
void mon_tally_replay_end(uint32_t nr) MON_HIDDEN;
/* tally.c, the controller's gaps (smp lock held): a gap g_us long begins,
 * the first nr slots' dues set from their rate over the last gap (span_ns
 * long; 0: none) - how many; the gap ends: no dues, the rates' tallies
 * taken; the warm-up begins: each slot's simulated count taken (warm_floor);
 * waits us microseconds of a gap (lock let go): 1 *stop, 2 a due was
 * reached, 0 the time is up or *kick. */
uint32_t mon_tally_dues_arm(uint32_t nr, uint64_t span_ns, uint64_t g_us) MON_HIDDEN;
void mon_tally_gap_end(uint32_t nr) MON_HIDDEN;
void mon_tally_warm_begin(uint32_t nr) MON_HIDDEN;
int mon_tally_wait(uint64_t us, pthread_mutex_t *lock, const int *stop, const int *kick) MON_HIDDEN;

/* A thread's accesses between bursts: its lanes' sum (any thread). */
static inline uint64_t mon_tally_sum(const struct mon_tally *s)
{
	uint64_t n = 0;

	for (int i = 0; i < MON_TALLY_LANES; i++)
		n += __atomic_load_n(&s->lane[i], __ATOMIC_RELAXED);
	return n;
}

/* The cold parts of mon_tally_add (tally.c): a lane crossed a multiple
 * of 256 (addr goes in the ring; a replay asked for; is the due
 * reached?); the thread's first access (mon_tslot). */
void mon_tally_check(struct mon_tally *s, uintptr_t addr) MON_HIDDEN __attribute__((noinline, cold));
void mon_tally_first(uintptr_t addr, uintptr_t mix, uint64_t n) MON_HIDDEN __attribute__((noinline, cold));

/*
 * Counts an access to addr between bursts as n. mix picks the lane: the access's
 * address plus its hook's return address, so that neither a loop's
 * consecutive accesses (a word apart) nor an -O0 loop's reads and writes
 * of one stack slot (from different call sites) wait for each other. The
 * due is looked at when a lane crosses a multiple of 256 (a test of its
 * low byte, about once per 1,024 accesses). Both cold calls are tail
 * calls of the hooks: nothing to save on this path.
 */
static inline void mon_tally_add(uintptr_t addr, uintptr_t mix, uint64_t n)
{
	struct mon_tally *s = mon_tslot;
	uint64_t *v, now;

	if (mon_unlikely(!s)) {
		mon_tally_first(addr, mix, n);
		return;
	}
	v = &s->lane[(mix >> 3) & (MON_TALLY_LANES - 1)];
	now = __atomic_load_n(v, __ATOMIC_RELAXED) + n;
	/* the owner is the only writer; the controller reads */
	__atomic_store_n(v, now, __ATOMIC_RELAXED);
	if (mon_unlikely((now & 255) < n))
		mon_tally_check(s, addr);
}

/* In the active branch of a hook, with mon_hot.sampling set: counts the
 * access as n (the cache lines a range covers: the simulator delivers and
 * counts a range line by line, so the ratios of counts to accesses
 * (sampled.c) weigh a 2 MiB memset as the 32,768 accesses it simulates,
 * not as one) and returns 1 when it must not be delivered (between
 * bursts). addr, mix: mon_tally_add's. */
static inline int mon_sampled_skip(const struct mon_thread *t, uint64_t n, uintptr_t addr,
				   uintptr_t mix)
{
	int tally = __atomic_load_n(&mon_hot.tally, __ATOMIC_RELAXED);
	struct mon_tally *s;

	if (tally) {
		mon_tally_add(addr, mix, n);
		return 1;
	}
	/* by the table, not mon_tslot: a call to find the slot here would
	 * have the exact path save registers (two pushes and pops per access
	 * in __tsan_readN_on: jacobi's exact run +3-10%) */
	s = mon_tally_tab;
	if (mon_likely(t && s && t->id < MON_TALLY_MAX)) {
		s += t->id;
		__atomic_store_n(&s->sim, __atomic_load_n(&s->sim, __ATOMIC_RELAXED) + n,
				 __ATOMIC_RELAXED);
	}
	return 0;
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t mon_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* tid.c: thread tid's state letter in /proc/self/task/<tid>/stat (R
 * running or runnable, S asleep, D in uninterruptible kernel work, T/t
 * stopped, ...), 0 when it cannot tell (the thread is gone); the CPU time
 * it has run in ms, 0 when unknown. */
char mon_tid_state(pid_t tid) MON_HIDDEN;
uint64_t mon_tid_cpu_ms(pid_t tid) MON_HIDDEN;

/* The MON_LINE_SIZE lines [addr, addr + sz) covers, sz > 0. */
static inline uint64_t mon_lines_of(uintptr_t addr, size_t sz)
{
	uintptr_t last = addr + sz - 1 < addr ? UINTPTR_MAX : addr + sz - 1;

	return (uint64_t)((last >> MON_LINE_SHIFT) - (addr >> MON_LINE_SHIFT)) + 1;
}

/*
 * A range of more than MON_RANGE_HEAD lines met in a burst is simulated for
 * its first MON_RANGE_HEAD lines; the rest counts as accesses made in the
 * burst but not simulated (a lane of the tally, as those the ordered mode's
 * cut drops), which the burst's ratio estimates. Simulated whole, a 2 MiB
 * memset was most of its burst's accesses and gave its ratio (nearly a miss
 * per line) to the ten million accesses of the gap: gemm_blocked's C at
 * 1.2-2.7 times its exact count in two runs of three (docs/simulator.md,
 * "Heavy tails"). mon_sampled_range (tally.c): the bytes of [addr, addr +
 * sz) to deliver, from addr (0: none, between bursts).
 */
#define MON_RANGE_HEAD 64u
size_t mon_sampled_range(const struct mon_thread *t, uintptr_t addr, size_t sz) MON_HIDDEN;

#define MON_TALLY_MIX(addr, pc) ((uintptr_t)(addr) + ((uintptr_t)(pc) << 1))
#define MON_SAMPLED_SKIP(t, addr, pc) \
	(mon_unlikely(mon_hot.sampling) && mon_sampled_skip(t, 1, (uintptr_t)(addr), MON_TALLY_MIX(addr, pc)))
#define MON_SAMPLED_SKIP_RANGE(t, addr, sz) \
	(mon_unlikely(mon_hot.sampling) && mon_sampled_skip(t, mon_lines_of(addr, sz), (addr), (addr)))

void mon_init(void) MON_HIDDEN;		/* idempotent; called from __tsan_init and interposers */
int mon_initialized(void) MON_HIDDEN;

/*
 * Slow path of every hook: splits [addr, addr + sz) into cache-line chunks,
 * attributes each chunk to the object(s) it overlaps and hands it to the
 * active backend. pc is the code address of the access.
 */
void mon_access(uintptr_t addr, size_t sz, unsigned flags, uintptr_t pc) MON_HIDDEN;

/*
 * Called by __tsan_read_range/__tsan_write_range after counting [addr,
 * addr + sz) for code at pc whose stack frame has the canonical frame
 * address cfa (intercept.c). gcc instruments an aggregate copy or fill with
 * these hooks and, built with -mstringop-strategy=libcall (ameba cc), then
 * calls memcpy/memset for it: the interposer, called from the same frame
 * right after, leaves out the range the hook has counted.
 */
void mon_range_note(unsigned flags, uintptr_t addr, size_t sz, uintptr_t cfa,
		    uintptr_t pc) MON_HIDDEN;

/* ---- per-thread per-object counters (counts.c) ---- */

/*
 * The active backend declares which metrics it provides (nr_metrics slots per
 * (thread, object)); slot s holds metric mon_metric_of_slot[s].
 */
extern int mon_nr_slots MON_HIDDEN;
extern int mon_metric_of_slot[AMEBA_M_NR] MON_HIDDEN;
extern int mon_slot_of_metric[AMEBA_M_NR] MON_HIDDEN;	/* -1 when not provided */

/* Sets the metric slots; only before any counter exists. */
int mon_counts_configure(const int *metrics, int nr) MON_HIDDEN;
/*
 * Outcome slots (docs/simulator.md, "Counting by outcome"): a backend's
 * hottest paths may count an access by what happened to it - one of
 * MON_OUTCOMES kinds, one add to slot mon_nr_slots + kind - instead of
 * adding to each metric it changes. A kind's row lists those metrics'
 * slots and what one access adds to each; every reader sees the metrics
 * (mon_counts_for_each passes the vector with each kind's count times its
 * row added; a fold adds the kinds' slots as they are). Set once, at the
 * backend's activation, before any counter exists (the vectors made after
 * have the nr kinds' slots); the rows never change after.
 */
#define MON_OUTCOMES 6
#define MON_OUTCOME_ROW 12
struct mon_outcome_row {
	uint32_t nr;
	uint16_t slot[MON_OUTCOME_ROW];
	uint64_t add[MON_OUTCOME_ROW];
};
void mon_counts_outcomes(const struct mon_outcome_row *rows, int nr) MON_HIDDEN;
/* The counter vector (mon_nr_slots entries, then the outcome slots) of (t, obj),
 * created on first use;
 * NULL only on allocation failure. Owner thread only. */
uint64_t *mon_counts_get(struct mon_thread *t, uint32_t obj_idx) MON_HIDDEN;
/* The counter vector of (t, obj) if it exists, else NULL; any thread (takes
 * t's table lock, inserts nothing, leaves the owner's shortcut alone). */
uint64_t *mon_counts_find(struct mon_thread *t, uint32_t obj_idx) MON_HIDDEN;
/* Adds n to slot of (t, obj); owner thread: relaxed store; use
 * mon_counts_add_remote() from any other thread. */
static inline void mon_count_add(uint64_t *v, int slot, uint64_t n)
{
#if defined(__x86_64__)
	/* One add to memory instead of a load, an add and a store (gcc fuses
	 * no atomic access into one): the same for a reader on another
	 * thread, whose relaxed load sees the old or the new value, as the
	 * instruction's store is a single aligned 8-byte store. Only the
	 * owner writes (no lock prefix needed). Stencil kernel: -8
	 * instructions per L1 hit. */
	__asm__("addq %1, %0" : "+m"(v[slot]) : "er"(n));
#else
	__atomic_store_n(&v[slot], __atomic_load_n(&v[slot], __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
#endif
}
/* In a forked child: resets t's table lock (its holder did not survive). */
void mon_counts_after_fork(struct mon_thread *t) MON_HIDDEN;
/* Objects in t's counter table now (a hint: the owner may add more). */
uint32_t mon_counts_nr(struct mon_thread *t) MON_HIDDEN;
/* Thread t's estimated cycles so far, over all its objects (0 without a
 * latency model). */
uint64_t mon_counts_cycles(struct mon_thread *t) MON_HIDDEN;
/* Iterates (obj_idx, counters) of thread t, the counters its metrics (mon_nr_slots,
 * outcomes expanded: the pointer may be to a copy, valid during the call); the
 * callback returns non-zero to stop. */
void mon_counts_for_each(struct mon_thread *t,
			 int (*cb)(uint32_t obj_idx, const uint64_t *v, void *arg), void *arg) MON_HIDDEN;
/*
 * Folding (fold.c): adds t's vector of obj_idx (if it has one) to t's
 * vector of the retired record ret_idx (made if needed) and drops it from
 * t's table; its memory is reused for t's next new vector while t has its
 * fold state. Under t's table lock: the owner, or another thread for an
 * ended t (callers serialise on t). 1 when folded, 0 when t had no vector
 * of it, -1 when the retired record's vector could not be made (nothing
 * changed).
 */
int mon_counts_retire(struct mon_thread *t, uint32_t obj_idx, uint32_t ret_idx) MON_HIDDEN;
/* t's fold state (fold.c's pending records, counts.c's reusable vectors),
 * made on first use (anonymous memory, not the program's heap); NULL when
 * out of memory. Owner thread only. */
struct mon_fold *mon_counts_fold_state(struct mon_thread *t) MON_HIDDEN;
/* t's fold state if it has one (owner thread; the merger once t's log is
 * merged to its end). */
struct mon_fold *mon_counts_fold_peek(struct mon_thread *t) MON_HIDDEN;
/* t ends (on t; or on the merger once its log is merged to its end): its
 * fold state goes when nothing waits in it. */
void mon_counts_fold_end(struct mon_thread *t) MON_HIDDEN;

/*
 * Bounded memory (fold.c, docs/objmap.md "Freed blocks"): a freed block's
 * record (just killed by the object map on the freeing thread) waits in the
 * batch of each of its holders (the freeing thread's own, or another's
 * inbox); a full batch (or the thread's end) folds each record's counts
 * into its site's retired record, and the last holder recycles it. Off
 * when the oracle lists every block (AMEBA_ORACLE) or with AMEBA_FOLD=0.
 */
struct mon_fold {
	uint64_t *free_v;	/* counts.c: vectors folded, chained through v[0] */
	uint32_t nr, cap;	/* fold.c: dead[0..nr) wait to be folded */
	struct mon_obj *dead[];
};
void mon_fold_init(int off) MON_HIDDEN;	/* mon_init: off when the oracle is written */
void mon_fold_dead(struct mon_obj *o) MON_HIDDEN;
void mon_fold_thread_exit(struct mon_thread *t) MON_HIDDEN;	/* on t, before it ends */
/* Ordered mode, on the merger: t's log is merged to its end; what t left
 * to fold (its batch, its inbox) is folded for it, and from now on what
 * others free that it held. */
void mon_fold_thread_merged(struct mon_thread *t) MON_HIDDEN;
/* Blocks other threads freed that t holds wait in t's inbox: t takes them
 * into its batch at its allocations (intercept.c) and frees. */
extern int mon_fold_mail MON_HIDDEN;	/* some inbox has mail (a hint) */
void mon_fold_poll(struct mon_thread *t) MON_HIDDEN;
/* mon_fold_poll when some inbox has mail: at t's allocations and on its
 * object cache misses (rt.c), so that a thread that only reads what others
 * free takes its inbox in too */
static inline void mon_fold_check(struct mon_thread *t)
{
	if (mon_unlikely(__atomic_load_n(&mon_fold_mail, __ATOMIC_RELAXED)))
		mon_fold_poll(t);
}
/* Records folded and recycled so far (a statistic for tests). */
uint64_t mon_fold_nr_folded(void) MON_HIDDEN;
/* The retired record of (site_id, kind), made on first use; NULL when out
 * of memory. Never live, never recycled, named by its site. */
struct mon_obj *mon_objmap_retired(uint32_t site_id, int kind) MON_HIDDEN;
/* Back to the free list of its stripe: a dead record nobody holds any more. */
void mon_objmap_recycle(struct mon_obj *o) MON_HIDDEN;
/*
 * The miss of t's object cache (the owner; mon_objcache_way(t, addr) was
 * -1): the way that now holds addr's object, found by what the map
 * remembers of t's objects by line or by its lookup, and the cache's
 * hint; -1 when addr is in no object ([other]).
 */
int mon_objmap_cache_fill(struct mon_thread *t, uintptr_t addr) MON_HIDDEN;
/* t's object cache forgets every way (the owner thread). */
void mon_objmap_cache_clear(struct mon_thread *t) MON_HIDDEN;
/* Way w of t's object cache (which holds addr) takes counter vector v, and
 * so does what the map remembers of addr's object for t (the owner). */
void mon_objmap_cache_counts(struct mon_thread *t, int w, uintptr_t addr, uint64_t *v) MON_HIDDEN;

/* ---- backends ---- */

/*
 * What one access caused, as (slot, amount) pairs: a backend reports events,
 * the core adds them to the object's counters (and to conditional counters
 * and sample streams). A slot appears at most once per access.
 *
 * When nothing but the object's counters wants the events (no conditional
 * counters or sample stream armed, the common case), the core passes those
 * counters in `counts` and the events go straight there: nothing is
 * recorded, nr stays 0 (saves the core a second pass over every event).
 */
#define MON_EV_MAX 24

struct mon_events {
	uint32_t nr;
	uint64_t *counts;	/* non-NULL: add to these counters, record nothing */
	uint16_t slot[MON_EV_MAX];
	uint64_t n[MON_EV_MAX];
};

/* Reports n events of counter slot s (s < mon_nr_slots). */
static inline void mon_ev_put(struct mon_events *ev, int s, uint64_t n)
{
	if (ev->counts)
		mon_count_add(ev->counts, s, n);
	else if (ev->nr < MON_EV_MAX) {
		ev->slot[ev->nr] = (uint16_t)s;
		ev->n[ev->nr++] = n;
	}
}

/* Reports n events of metric m (ignored when the backend has no slot for m). */
static inline void mon_ev_add(struct mon_events *ev, int m, uint64_t n)
{
	int s = mon_slot_of_metric[m];

	if (s >= 0 && n)
		mon_ev_put(ev, s, n);
}

/*
 * A backend turns line accesses into metric events. Callbacks run on the
 * accessing thread unless stated otherwise; none may block, and access()
 * may not allocate.
 */
struct mon_backend_ops {
	const char *name;
	/* Metrics this backend provides (they become the counter slots, in this
	 * order), set once at activation. */
	const int *metrics;
	int nr_metrics;
	/* Optional: called once when the backend becomes active (any thread). */
	int (*activate)(void);
	/* Optional: a thread starts / ends (on that thread). thread_exit must
	 * release per-thread state that is not needed for reporting. */
	void (*thread_start)(struct mon_thread *t);
	void (*thread_exit)(struct mon_thread *t);
	/*
	 * One access within one cache line, [addr, addr + sz), attributed to obj.
	 * flags: enum mon_access_flags. Reports the events it caused to ev
	 * (which arrives empty) with mon_ev_add() or mon_ev_put().
	 */
	void (*access)(struct mon_thread *t, struct mon_obj *obj, uintptr_t addr, uint32_t sz,
		       unsigned flags, uintptr_t pc, struct mon_events *ev);
	/*
	 * Optional: the access path's fast entry (rt.c, mon_access), taken
	 * instead of access() for an access [addr, addr + sz) within one line
	 * and within object cache way w of t (t->cache.obj[w]) whose counter
	 * vector t->cache.counts[w] exists and takes the events alone (no
	 * conditional counter or sample stream armed). wfs packs the rest,
	 * MON_FAST_WFS(w, flags, sz): four arguments instead of six leave the
	 * callee registers for its own work. It must count exactly what
	 * access() would report, into t->cache.counts[w]. It runs with
	 * t->in_rt == 0: it raises it (mon_rt_enter) around anything a signal
	 * handler on this thread must not re-enter, and before calling out.
	 */
	void (*fast)(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc);
	/*
	 * Optional: taken by mon_access before the object cache, for an access
	 * [addr, addr + sz) within one line of a registered thread whose
	 * backend has started, with no conditional counter or sample stream
	 * armed; wfs = MON_FAST_WFS(0, flags, sz) (no way yet). The backend
	 * may count the access itself into a counter vector it found for the
	 * object that mon_access would have found (the sim backend keeps it
	 * with the simulator's remembered lines: one line comparison finds
	 * both), as fast() would; otherwise it must tail-call
	 * mon_access_cached with the same arguments. Same rules as fast().
	 */
	void (*line_fast)(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc);
};

/* The rest of mon_access after line_fast declined: the object cache, then
 * fast() or the general path. */
void mon_access_cached(struct mon_thread *t, uintptr_t addr, uint32_t wfs, uintptr_t pc) MON_HIDDEN;
/*
 * The object cache's miss of an access within one line (t the calling
 * thread, in the runtime, its fold inbox polled or empty): the map's
 * lookup puts addr's object into t's cache with t's counters of it; the
 * way that then holds [addr, addr + sz), or -1 (no object there, or the
 * access runs past its end).
 */
int mon_objcache_fill(struct mon_thread *t, uintptr_t addr, size_t sz) MON_HIDDEN;

#define MON_FAST_WFS(w, flags, sz) ((uint32_t)(flags) | (uint32_t)(w) << 8 | (uint32_t)(sz) << 16)
#define MON_FAST_FLAGS(wfs) ((wfs) & 0xffu)
#define MON_FAST_WAY(wfs) (((wfs) >> 8) & 0xffu)
#define MON_FAST_SZ(wfs) ((wfs) >> 16)

/* Whether t's accesses pass straight through: in the runtime or ignored.
 * Two 4-byte loads, not one 8-byte load of both ints: every simulated miss
 * ends with a 4-byte store to in_rt (mon_rt_leave, the assembly's subl),
 * and a wider load cannot take its value from a narrower store still in
 * the store queue - it waits for the store to reach the L1. That wait was
 * ~70% of the filter hook's samples on gemm (perf cpu-clock, Zen 5). */
static inline int mon_thread_quiet(const struct mon_thread *t)
{
	return (t->in_rt | t->ignore) != 0;
}

/* The in_rt guard of a fast() entry: a compiler barrier on each side keeps
 * the increment and the decrement from being merged or moved across the
 * guarded code (a signal handler on this thread reads in_rt). */
static inline void mon_rt_enter(struct mon_thread *t)
{
	t->in_rt++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void mon_rt_leave(struct mon_thread *t)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->in_rt--;
}

/*
 * The access batch (batch.c, docs/simulator.md "The access batch"; with
 * AMEBA_SIM_BATCH=1): while
 * a thread's core runs solo on the lean path and nothing else wants its
 * accesses (no sampled mode, nothing armed), the plain access hooks only
 * append (address, wfs) to the thread's batch; a full batch, and every
 * point where the order or the objects could change - any other delivery
 * (mon_access), an allocation or free, mmap and munmap, pthread_create,
 * fork, dlopen, ignore, the thread's end, the exit - simulates it first,
 * record by record, in order, through the line entry: the same counts.
 */
#define MON_BATCH_RECS 256
/*
 * The batch's state, process-wide: only a solo core's thread batches, and
 * one core at most is solo, so there is one batch at most, owned by that
 * thread (and struct mon_thread, which the runtime allocates from the
 * program's heap, keeps its size: the program's blocks land where they
 * did). The owner appends at pos while pos < end; end NULL: off (the
 * hooks deliver each access). Records [base, pos) wait to be simulated.
 * Only the owner writes it but owner; other threads' hooks read it and
 * find it is not theirs.
 */
struct mon_batch {
	uint64_t *pos, *end, *base;
	struct mon_thread *owner;
	int want;		/* AMEBA_SIM_BATCH on */
	uint32_t tick;		/* lean misses until batch.c looks again (mon_batch_tick) */
	uint32_t rest;		/* the next rest's length in lean misses (batch.c) */
	int chooser;		/* MON_BATCH_*: who turns it on (backend_sim_lf.c) */
	int hold;		/* atomic: a set is being armed (mon_batch_hold) */
	int running;		/* atomic: the owner is simulating its batch */
} __attribute__((aligned(64)));
/* mon_batch.chooser: the batch's own rule (a batch of many misses rests),
 * or the solo thread's mode chosen by time (backend_sim_lf.c): on, or off */
enum { MON_BATCH_RULE, MON_BATCH_CHOSEN_ON, MON_BATCH_CHOSEN_OFF };
extern struct mon_batch mon_batch MON_HIDDEN;
void mon_batch_flush(struct mon_thread *t) MON_HIDDEN;
/* on: from when it returns until mon_batch_hold(0), no batch is simulated
 * (one that is waits to finish; the next waits to start), so that what the
 * batch counts falls before or after an arm's readings, not among them.
 * Called by the arming thread, which holds no lock the batch takes. */
void mon_batch_hold(int on) MON_HIDDEN;
void mon_batch_after_fork(void) MON_HIDDEN;	/* in a fork's child */
/* The batch simulated and off until the lean path turns it on again. */
void mon_batch_off(struct mon_thread *t) MON_HIDDEN;
/* The tick ran out (the lean path, the core held): the batch on, if
 * everything allows it, or another tick. */
void mon_batch_tick(struct mon_thread *t) MON_HIDDEN;
/* A lean miss of t: one decrement of the tick (while the batch is
 * simulated, it counts the batch's misses). */
static inline void mon_batch_lean_miss(struct mon_thread *t)
{
	if (mon_unlikely(--mon_batch.tick == 0))
		mon_batch_tick(t);
}
/* t's batch page (sim_thread_start, for a solo core's thread) */
void mon_batch_thread_start(struct mon_thread *t) MON_HIDDEN;
void mon_batch_thread_exit(struct mon_thread *t) MON_HIDDEN;

/* t's records waiting: simulate them now (t outside the runtime). */
static inline void mon_batch_sync(struct mon_thread *t)
{
	if (mon_unlikely(mon_batch.pos != mon_batch.base) && t != NULL && mon_batch.owner == t)
		mon_batch_flush(t);
}

/*
 * The access fast path's test (mon_access, and the hooks that inline it,
 * tsan_abi.c HOOK_LINE): a registered thread t outside the runtime, the
 * backend b started on it, the access [addr, addr + sz) (sz >= 1) within
 * one MON_LINE_SIZE line. Such an access goes to b->line_fast when there
 * is one and nothing is armed (mon_line_entry); anything else takes the
 * general path.
 */
static inline int mon_access_plain(const struct mon_thread *t, const struct mon_backend_ops *b,
				   uintptr_t addr, size_t sz)
{
	/* 1 <= sz <= the bytes left in the line (for a constant sz, one
	 * compare of the offset) */
	return mon_likely(t && b && t->started == b && !(t->in_rt | t->ignore)) && sz - 1 < MON_LINE_SIZE &&
	       (addr & (MON_LINE_SIZE - 1)) <= MON_LINE_SIZE - sz;
}

/* b's line entry when nothing is armed, else NULL: the entry loaded once,
 * before the (atomic) load of the armed flags. */
static inline void (*mon_line_entry(const struct mon_backend_ops *b))(struct mon_thread *, uintptr_t,
								       uint32_t, uintptr_t)
{
	void (*lf)(struct mon_thread *, uintptr_t, uint32_t, uintptr_t) = b->line_fast;

	return lf && mon_likely(!__atomic_load_n(&mon_any_armed, __ATOMIC_RELAXED)) ? lf : NULL;
}

extern const struct mon_backend_ops mon_backend_count MON_HIDDEN;
extern const struct mon_backend_ops mon_backend_sim MON_HIDDEN;	/* backend_sim.c */
/* the same with the C line entry (AMEBA_SIM_ASM=0; backend_sim.c) */
extern const struct mon_backend_ops mon_backend_sim_c MON_HIDDEN;
/* AMEBA_WHATIF (backend_sim.c; its runs in backend_sim_whatif.c): the sim
 * backend simulating one object's fix (no inline paths);
 * mon_backend_sim_whatif_wanted() reads the variable once, non-zero when
 * it names a fix. */
extern const struct mon_backend_ops mon_backend_sim_whatif MON_HIDDEN;
int mon_backend_sim_whatif_wanted(void) MON_HIDDEN;
/* The oracle's "what_if" member (with its leading comma) when AMEBA_WHATIF
 * named a fix: its kind and, for a layout fix, the shape learnt. */
void mon_backend_sim_whatif_json(FILE *f) MON_HIDDEN;
/* In a forked child: releases simulator locks and cores of lost threads. */
void mon_backend_sim_after_fork(void) MON_HIDDEN;
/* Sampled mode on or off (sampled.c): the simulator settles the LLC misses
 * of sets it has not filled (mon_sim_settle_cold). */
void mon_backend_sim_sampled(int on) MON_HIDDEN;
/* The simulated L2's lines (the L1's without an L2; 0: no simulator). */
uint64_t mon_backend_sim_l2_lines(void) MON_HIDDEN;
/* t's simulated core forgets the objects its remembered lines name (the
 * line entry's tags): before records t held are recycled. t's own thread,
 * or the merger's when t's log is merged. */
void mon_backend_sim_forget(struct mon_thread *t) MON_HIDDEN;

/* ---- activation (rt.c) ---- */

/* The ops of the backend named name: a runtime row of the backend table
 * (ameba_backend_by_name, mri/common.c) this runtime has the code of (the
 * sim variant the environment asks for), else NULL. */
const struct mon_backend_ops *mon_backend_by_name(const char *name) MON_HIDDEN;
/* The names of the backends mon_backend_by_name resolves, in table order,
 * ", "-separated into buf (truncated to len); returns the length. */
size_t mon_backend_names(char *buf, size_t len) MON_HIDDEN;
/* Starts the named backend ("count", "sim", ...): 0, AMEBA_ENOENT for a
 * name that is not a runtime row of the backend table, AMEBA_EINVAL when
 * its ops disagree with its row's metrics (logged), AMEBA_EBUSY when a
 * different backend is already active. */
int mon_activate(const char *backend) MON_HIDDEN;
/* Back to dormant: hooks stop delivering; counts and objects remain. */
void mon_deactivate(void) MON_HIDDEN;

/* ---- conditional counters (cond.c) ---- */

struct mon_range {
	uintptr_t start, end;	/* [start, end) */
};

/* One counter: metric x where x who. */
struct mon_cond_spec {
	int metric;			/* AMEBA_M_*; must be a metric of the active backend */
	uint32_t nr_ranges;		/* 0: the whole address space */
	const struct mon_range *ranges;	/* may overlap each other */
	uint32_t nr_threads;		/* 0: every thread */
	const uint32_t *threads;	/* ameba thread ids */
	/*
	 * Heap and mmap blocks of these allocation sites (site ids, 1-based),
	 * wherever they lie, including blocks allocated after the arm: the
	 * where-set of a site bin, resolved by the monitor per access from the
	 * object it finds anyway. The where-set is the union of ranges and
	 * sites (an access in both counts once); a counter with sites and no
	 * ranges counts only the sites' blocks.
	 */
	uint32_t nr_sites;
	const uint32_t *sites;
	/*
	 * Objects of these kinds (a mask of 1 << MON_OBJ_STACK, MON_OBJ_TLS),
	 * every thread's, also of threads started or gone after the arm: the
	 * where-sets of the "[stack]" and "[tls]" bins. Joined to ranges and
	 * sites as the sites are.
	 */
	uint32_t kinds;
	/*
	 * Blocks the ranges do not count: of these sites (ids) and kinds (a
	 * mask as kinds). An address search over the space minus what it
	 * measures by bin elsewhere: a freed block's address in a searched
	 * range would otherwise count twice.
	 */
	uint32_t nr_except_sites;
	const uint32_t *except_sites;
	uint32_t except_kinds;
};

#define MON_COND_MAX 4096		/* counters in one armed set */
#define MON_COND_MAX_RANGES 65536	/* ranges (and sites) over all counters of a set */
#define MON_COND_MAX_SITE (1u << 24)	/* highest site id a where-set may name */

/*
 * Replaces the armed set of counters with specs[0..nr) (nr == 0 disarms),
 * all starting from zero. *gen receives the set's generation, which reads
 * name. Returns 0, AMEBA_EINVAL (bad spec: empty range, unknown metric,
 * too many), AMEBA_ENOTSUP (metric not provided by the active backend) or
 * AMEBA_ENOMEM. Any thread; serialised internally.
 */
int mon_cond_arm(const struct mon_cond_spec *specs, uint32_t nr, uint64_t *gen) MON_HIDDEN;
/* The same, calling then(arg) right after the new set is published and
 * before any thread can adopt it (an exact oracle mark: oracle.c). */
int mon_cond_arm_then(const struct mon_cond_spec *specs, uint32_t nr, uint64_t *gen,
		      void (*then)(void *arg), void *arg) MON_HIDDEN;

/*
 * Reads the counters of generation gen: total[i] summed over threads for
 * i < nr. If per_thread is given it is called once per thread that counted
 * anything, with that thread's nr values. AMEBA_ENOENT when gen is no longer
 * armed. Values grow monotonically while the set stays armed.
 * before (may be NULL): what each served counter's objects had counted from
 * their births until the arm (the snapshot; 0 for counters matched per
 * access), summed over the threads alive at the arm; per_thread gets the
 * thread's row of it, or NULL. Constant while the set stays armed.
 */
typedef void (*mon_cond_row_fn)(uint32_t thread_id, const uint64_t *vals, const uint64_t *before,
				uint32_t nr, void *arg);
int mon_cond_read(uint64_t gen, uint64_t *total, uint64_t *before, uint32_t nr,
		  mon_cond_row_fn per_thread, void *arg) MON_HIDDEN;

/* The armed set's generation and number of counters: 0, or AMEBA_ENOENT
 * when none is armed. */
int mon_cond_current(uint64_t *gen, uint32_t *nr) MON_HIDDEN;

/*
 * The old set's last reading at the instant a new one replaces it
 * (mon_cond_arm_swap): what mon_cond_read(gen, total, before, nr,
 * per_thread, arg) would give there; err its result (AMEBA_ENOENT when
 * generation gen was not the armed one).
 */
struct mon_cond_final {
	uint64_t gen;
	uint64_t *total, *before;
	uint32_t nr;
	mon_cond_row_fn per_thread;
	void *arg;
	int err;
};
/* mon_cond_arm, reading the replaced set into *fin in the same instant: no
 * access falls between the two sets' counts. */
int mon_cond_arm_swap(const struct mon_cond_spec *specs, uint32_t nr, uint64_t *gen,
		      struct mon_cond_final *fin) MON_HIDDEN;

/* Hot path (rt.c): non-zero while a set is armed. */
void mon_cond_after_fork(void) MON_HIDDEN;	/* in a forked child */
/* Calls fn(arg) with no set being armed, read or snapshot meanwhile (the
 * fold moves counts between objects: fold.c). */
void mon_cond_locked(void (*fn)(void *arg), void *arg) MON_HIDDEN;
/* Inside mon_cond_locked: does a served counter of the armed set count o
 * by its ranges (then o's counts must stay o's until the next arm)? */
int mon_cond_ranges_name(const struct mon_obj *o) MON_HIDDEN;
struct mon_obj;
/* obj: the object the access falls in (site where-sets), may be NULL. */
void mon_cond_account(struct mon_thread *t, uintptr_t addr, const struct mon_obj *obj,
		      const struct mon_events *ev) MON_HIDDEN;

/* ---- sampled mode (sampled.c) ---- */

struct mon_sampled_cfg {
	uint32_t period_us;	/* mean time between bursts (each drawn from [p/2, 3p/2]) */
	uint32_t warm_us;	/* warm-up before each burst: simulated, not counted */
	uint32_t burst_us;	/* measured burst */
	uint64_t seed;		/* the period's generator */
	int in_time;		/* 1: gaps end by time alone, no dues (sampled.c;
				 * test_sampled's baseline) */
	double time_max;	/* the share of the wall time the cycle may spend
				 * simulating (sampled.c, gap_stretch; 0: a
				 * third; >= 1: no mark) */
	/* tests only (0 otherwise; test_sampled): */
	uint32_t slow_begin_us;	/* a burst's start holds the controller's lock
				 * this much longer, as draining a warm-up's
				 * logs does on a throttled host */
	uint32_t empty_bursts;	/* the first this many bursts come back empty,
				 * as a starved merger's do (too_few) */
};

/* Starts sampled mode on the active backend: the hooks tally, and a
 * controller thread runs warm-ups and bursts. A set armed already goes on
 * with its exact counts so far, to which the estimates add. 0, AMEBA_EBUSY
 * (running), AMEBA_EINVAL (bad cfg), AMEBA_ENOTSUP (the process writes an
 * oracle, which stays exact) or AMEBA_ENOMEM. */
int mon_sampled_start(const struct mon_sampled_cfg *cfg) MON_HIDDEN;
/* Stops it (detach): the controller ends, the hooks deliver again (whether
 * they run is mon_hot.active's business). */
void mon_sampled_stop(void) MON_HIDDEN;
int mon_sampled_on(void) MON_HIDDEN;
/* After a set was armed (generation gen, nr counters): its estimates start.
 * keys[i] (NULL: none) says what counter i counts (metric, where-set,
 * threads: mri_server.c's cond_keys): a counter of the last set with the
 * same key, read by a swap, goes on in it. */
void mon_sampled_armed(uint64_t gen, uint32_t nr, const uint64_t *keys) MON_HIDDEN;
/*
 * mon_cond_read in sampled mode: total[i] and the rows are estimates of the
 * counts since the arm (the sum over readings of each reading's estimate:
 * accesses estimated by the bursts around them, sampled.c), before is all
 * 0. AMEBA_ENOENT as mon_cond_read's.
 */
int mon_sampled_read(uint64_t gen, uint64_t *total, uint64_t *before, uint32_t nr,
		     mon_cond_row_fn per_thread, void *arg) MON_HIDDEN;
/* What the last mon_sampled_read of gen gave besides the values. */
struct mon_sampled_info {
	uint32_t bursts, bursts_read;	/* bursts since the arm, in the last reading */
	uint32_t bursts_empty;		/* since the start, ended with none or too few
					 * accesses simulated to count (their threads
					 * off the CPU: a busy host, or asleep) */
	double fraction;		/* accesses simulated in bursts / all, since the arm */
	uint64_t accesses;		/* all accesses since the arm (tallied + simulated) */
	double stretch;			/* the gaps' stretch now (1: none; sampled.c gap_stretch) */
	double time_share;		/* of the wall time since the start, the share spent
					 * replaying, warming up and measuring */
	double precision;		/* the estimates' relative 95% half-width over the
					 * controller's time windows (sampled.c, gap_prec;
					 * -1: none yet) */
};
/* ci[i], ci_delta[i]: half-width of the 95% interval of counter i's value
 * and of its last reading's delta (-1: unknown, no burst yet). 0 when
 * gen was read in sampled mode last, else AMEBA_ENOENT. */
int mon_sampled_ci(uint64_t gen, double *ci, double *ci_delta, uint32_t nr,
		   struct mon_sampled_info *info) MON_HIDDEN;
/* What the estimates of the armed set gen scale: its measured bursts'
 * counts x[i] and the accesses they simulated (*accesses). 0, or
 * AMEBA_ENOENT (another set, or none). */
int mon_sampled_measured(uint64_t gen, double *x, uint32_t nr, double *accesses) MON_HIDDEN;
/* Before a set replaces the armed one (its nr counters' keys): a burst being
 * measured ends now and counts for the old set, whose next reading is its
 * last; its counters the new set has leave their waiting accesses to it. */
void mon_sampled_swap(const uint64_t *keys, uint32_t nr) MON_HIDDEN;
/* In a forked child: sampled mode off (the controller did not survive). */
void mon_sampled_after_fork(void) MON_HIDDEN;
/* At exit, before the last reading: a burst being measured ends now. */
void mon_sampled_exit(void) MON_HIDDEN;

/* ---- sample streams (sample.c) ---- */

struct mon_sample {
	uintptr_t addr;		/* data address of the access (start of the line piece) */
	uintptr_t pc;		/* code address */
	uint32_t thread_id;
	uint16_t metric;	/* AMEBA_M_* */
	uint16_t weight;	/* events of the metric this access caused (>= 1) */
	/*
	 * The allocation site of the heap or mmap block the access fell in, 0
	 * for any other object: the access path finds the object anyway, so
	 * a sample carries its site even when the agent has not listed the
	 * block yet (or it was freed since). Site ids are stable for the run.
	 */
	uint32_t site_id;
};

/*
 * Delivers every period-th event of metric (per thread, counted from arming).
 * With random_mean != 0 the distance between samples is drawn uniformly from
 * [mean/2, 3*mean/2] by a per-thread generator seeded from seed and the
 * thread id (deterministic for a given schedule). period == 0 disarms.
 * Returns 0, AMEBA_EINVAL or AMEBA_ENOTSUP as mon_cond_arm.
 */
int mon_sample_arm(int metric, uint64_t period, int random_mean, uint64_t seed) MON_HIDDEN;
/*
 * Moves up to max pending samples of all threads into out; returns how many.
 * *lost (optional) accumulates samples dropped because a thread's buffer was
 * full. Any single thread at a time (the MRI server).
 */
uint32_t mon_sample_drain(struct mon_sample *out, uint32_t max, uint64_t *lost) MON_HIDDEN;

void mon_sample_after_fork(void) MON_HIDDEN;	/* in a forked child */
/* obj: the object the access falls in (its site goes into the sample), may be NULL. */
void mon_sample_account(struct mon_thread *t, uintptr_t addr, uintptr_t pc,
			const struct mon_obj *obj, const struct mon_events *ev) MON_HIDDEN;

/* ---- the MRI server (mri_server.c, docs/mri.md) ---- */
/* Offers the in-process transport to the client library (mri_open_local)
 * and starts the server thread (end of mon_init); AMEBA_MRI=0 disables the
 * thread only. */
void mri_server_start(void) MON_HIDDEN;
/* In a forked child (rt_fork_child): the parent's session is not the
 * child's; the child goes dormant and gets a server of its own. */
void mri_server_after_fork(void) MON_HIDDEN;

/* ---- oracle ---- */
/* Writes the AMEBA_ORACLE file (atomically: tmp + rename); mark: NULL for
 * the file at exit, else the label of a mark (a snapshot of the counts so
 * far, docs/oracle.md "Marks"), recorded in the file. Writers take turns. */
/* objects: 0 leaves the objects out ("objects":[], "objects_listed":false; a mark
 * with AMEBA_ORACLE_MARKS=bins): the bins alone, for a window's bins without a
 * million-object dump */
int mon_oracle_write(const char *path, const char *mark, int objects) MON_HIDDEN;
/* Does this process write an oracle (AMEBA_ORACLE)? Its counts stay exact. */
int mon_oracle_wanted(void) MON_HIDDEN;
/* Arms specs (as mon_cond_arm, whose result it returns) and writes the mark
 * at the instant the new counters start: the counts are read while every
 * thread waits to adopt them. *mark_err: the mark's own result. */
int mon_oracle_write_armed(const char *path, const char *mark, int objects,
			   const struct mon_cond_spec *specs, uint32_t nr, uint64_t *gen,
			   int *mark_err) MON_HIDDEN;
/* Writes the mark `label` (a valid label: docs/oracle.md) next to the oracle
 * file and its path to path[len]: 0; AMEBA_ENOENT when this process writes
 * no oracle (no AMEBA_ORACLE, a forked child without %p, or the oracle was
 * written at exit already), with why[wlen] saying so; or the write's error. */
int mon_oracle_mark(const char *label, char *path, size_t len, char *why, size_t wlen) MON_HIDDEN;
/* Arms specs (mon_cond_arm's result) and writes mark `label` at that instant
 * (mon_oracle_write_armed): *mark_err and why[wlen] as mon_oracle_mark's. */
int mon_oracle_mark_armed(const char *label, const struct mon_cond_spec *specs, uint32_t nr,
			  uint64_t *gen, char *path, size_t len, char *why, size_t wlen,
			  int *mark_err) MON_HIDDEN;

#endif /* AMEBA_MON_H */
