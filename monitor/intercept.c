/*
 * intercept.c - functions the runtime interposes in instrumented programs.
 *
 * The runtime is linked into the executable and these definitions are
 * exported (ameba-rt.dynlist), so every caller in the process - the program,
 * its DSOs, libstdc++, libgomp - reaches them instead of libc's.
 *
 * Notes:
 *  - Allocation functions record heap blocks in the object map, always (even
 *    while dormant), because an analysis attached later must still be able to
 *    name blocks allocated earlier. Blocks are removed from the map *before*
 *    libc releases them, so a concurrent allocation reusing the address can
 *    never be deleted by mistake.
 *  - While the runtime itself runs on a thread (t->in_rt), everything passes
 *    straight through: libdw and stdio inside the runtime allocate too.
 *  - The memory is glibc's (__libc_* entry points), so blocks from before the
 *    runtime started, or from libc internals, are freed correctly here.
 *  - mem and str functions count as range accesses only when called from
 *    instrumented code (the caller's pc is in a module built with ameba cc):
 *    a memcpy inside libstdc++ is not the program's access any more than
 *    libstdc++'s other, uninstrumented, loads are.
 *  - operator new allocates directly; only when that fails does it defer to
 *    libstdc++'s operator new, which runs the new-handler and throws
 *    std::bad_alloc exactly as the uninstrumented program would.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wchar.h>

#include "mon.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

#define RET_PC() ((uintptr_t)__builtin_return_address(0))
#define FRAME() (__builtin_frame_address(0))

/* ---- the real functions ---- */

static struct {
	void *(*memcpy)(void *, const void *, size_t);
	void *(*memmove)(void *, const void *, size_t);
	void *(*memset)(void *, int, size_t);
	int (*memcmp)(const void *, const void *, size_t);
	void *(*memchr)(const void *, int, size_t);
	size_t (*strlen)(const char *);
	size_t (*strnlen)(const char *, size_t);
	int (*strcmp)(const char *, const char *);
	int (*strncmp)(const char *, const char *, size_t);
	char *(*strchr)(const char *, int);
	char *(*strrchr)(const char *, int);
	wchar_t *(*wmemset)(wchar_t *, wchar_t, size_t);
	int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	void *(*dlopen)(const char *, int);
	int (*dlclose)(void *);
	void *(*new_throw)(size_t);
	void *(*new_nothrow)(size_t, const void *);
	void *(*new_align)(size_t, size_t);
	void *(*new_align_nothrow)(size_t, size_t, const void *);
	int resolved;		/* 0, 1 = resolving, 2 = done (atomic) */
} real;

static __thread int resolving __attribute__((tls_model("initial-exec")));

static void resolve(void)
{
	int expected = 0;

	if (!__atomic_compare_exchange_n(&real.resolved, &expected, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	resolving = 1;
	/* dlsym on an IFUNC symbol returns the implementation chosen for this CPU. */
	real.memcpy = dlsym(RTLD_NEXT, "memcpy");
	real.memmove = dlsym(RTLD_NEXT, "memmove");
	real.memset = dlsym(RTLD_NEXT, "memset");
	real.memcmp = dlsym(RTLD_NEXT, "memcmp");
	real.memchr = dlsym(RTLD_NEXT, "memchr");
	real.strlen = dlsym(RTLD_NEXT, "strlen");
	real.strnlen = dlsym(RTLD_NEXT, "strnlen");
	real.strcmp = dlsym(RTLD_NEXT, "strcmp");
	real.strncmp = dlsym(RTLD_NEXT, "strncmp");
	real.strchr = dlsym(RTLD_NEXT, "strchr");
	real.strrchr = dlsym(RTLD_NEXT, "strrchr");
	real.wmemset = dlsym(RTLD_NEXT, "wmemset");
	real.pthread_create = dlsym(RTLD_NEXT, "pthread_create");
	real.dlopen = dlsym(RTLD_NEXT, "dlopen");
	real.dlclose = dlsym(RTLD_NEXT, "dlclose");
	__atomic_store_n(&real.resolved, 2, __ATOMIC_RELEASE);
	resolving = 0;
}

/*
 * Are the real functions known? Resolves them on first use. Calls made by
 * dlsym itself, on the resolving thread, get 0 and use the fallbacks; other
 * threads wait the few microseconds resolution takes.
 */
static inline int resolved(void)
{
	if (mon_likely(__atomic_load_n(&real.resolved, __ATOMIC_ACQUIRE) == 2))
		return 1;
	if (resolving)
		return 0;
	resolve();
	while (__atomic_load_n(&real.resolved, __ATOMIC_ACQUIRE) != 2) {
		if (resolving)
			return 0;
		sched_yield();
	}
	return 1;
}

/* Byte-wise fallbacks for calls that arrive while dlsym itself runs. The
 * runtime is built with -fno-tree-loop-distribute-patterns, so these loops
 * are not turned back into calls to the functions they stand in for. */
static void *slow_memmove(void *d, const void *s, size_t n)
{
	unsigned char *dp = d;
	const unsigned char *sp = s;

	if (dp < sp)
		for (size_t i = 0; i < n; i++)
			dp[i] = sp[i];
	else
		for (size_t i = n; i > 0; i--)
			dp[i - 1] = sp[i - 1];
	return d;
}

static size_t slow_strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

/* ---- who is calling ---- */

/* The calling thread, if allocations on it should be tracked now. */
static inline struct mon_thread *track_thread(void)
{
	struct mon_thread *t;

	if (mon_unlikely(!mon_initialized()))
		return NULL;
	t = mon_self;
	if (mon_unlikely(!t))
		t = mon_thread_self();
	if (!t || t->in_rt)
		return NULL;
	mon_batch_sync(t);	/* its batched accesses meet the objects they met */
	return t;
}

/* Should an access by a mem/str function called from pc be counted? In
 * sampled mode, range() tallies it (or delivers it in a burst). */
static inline int count_from(uintptr_t pc)
{
	struct mon_thread *t;

	if (mon_likely(!__atomic_load_n(&mon_active, __ATOMIC_RELAXED)))
		return 0;
	t = mon_self;
	if (t && (t->in_rt || t->ignore))
		return 0;
	return !mon_pc_in_runtime(pc) && mon_objmap_pc_instrumented(pc);
}

static void track_alloc(struct mon_thread *t, int kind, void *p, size_t n, uintptr_t ret,
			void *frame)
{
	uint32_t site;

	t->in_rt++;
	site = mon_site_capture(t, ret, frame);
	mon_objmap_add_block(kind, (uintptr_t)p, n, site, t->id);
	mon_fold_check(t);	/* blocks other threads freed (fold.c) */
	t->in_rt--;
}

/*
 * Retires the block at p. Unlike allocations this runs also while the
 * runtime is active on the thread (in_rt): a block must leave the map when
 * it is freed whoever frees it, or a reused address would keep a stale
 * record.
 */
static inline void track_free(void *p)
{
	struct mon_thread *t;

	if (!p || mon_unlikely(!mon_initialized()))
		return;
	t = mon_self;
	mon_batch_sync(t);	/* (does nothing while the runtime runs on t) */
	if (t)
		t->in_rt++;
	mon_objmap_del_block((uintptr_t)p);
	if (t)
		t->in_rt--;
}

/* ---- malloc family ---- */

MON_EXPORT void *malloc(size_t n)
{
	void *p = __libc_malloc(n);
	struct mon_thread *t;

	if (p && (t = track_thread()))
		track_alloc(t, MON_OBJ_HEAP, p, n, RET_PC(), FRAME());
	return p;
}

MON_EXPORT void free(void *p)
{
	track_free(p);
	__libc_free(p);
}

MON_EXPORT void *calloc(size_t nr, size_t sz)
{
	void *p = __libc_calloc(nr, sz);
	struct mon_thread *t;

	if (p && (t = track_thread()))
		track_alloc(t, MON_OBJ_HEAP, p, nr * sz, RET_PC(), FRAME());
	return p;
}

/*
 * A moved or resized block is a new object named by the realloc call site;
 * the old one is retired first (see the notes on ordering).
 */
MON_EXPORT void *realloc(void *p, size_t n)
{
	struct mon_thread *t = track_thread();
	void *q;

	if (p)
		track_free(p);
	q = __libc_realloc(p, n);
	if (t) {
		if (q)
			track_alloc(t, MON_OBJ_HEAP, q, n, RET_PC(), FRAME());
		else if (p && n)	/* failed: the old block is still there */
			track_alloc(t, MON_OBJ_HEAP, p, malloc_usable_size(p), RET_PC(), FRAME());
	}
	return q;
}

MON_EXPORT void *reallocarray(void *p, size_t nr, size_t sz)
{
	size_t n;

	if (__builtin_mul_overflow(nr, sz, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	/* Inline the realloc path so that the site is our caller's. */
	struct mon_thread *t = track_thread();
	void *q;

	if (p)
		track_free(p);
	q = __libc_realloc(p, n);
	if (t && q)
		track_alloc(t, MON_OBJ_HEAP, q, n, RET_PC(), FRAME());
	return q;
}

static void *aligned(size_t align, size_t n, uintptr_t ret, void *frame)
{
	void *p = __libc_memalign(align, n);
	struct mon_thread *t;

	if (p && (t = track_thread()))
		track_alloc(t, MON_OBJ_HEAP, p, n, ret, frame);
	return p;
}

MON_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	void *p;
	int saved = errno;

	if (align % sizeof(void *) || (align & (align - 1)) || align == 0)
		return EINVAL;
	p = aligned(align, n, RET_PC(), FRAME());
	if (!p)
		return ENOMEM;
	errno = saved;
	*out = p;
	return 0;
}

MON_EXPORT void *aligned_alloc(size_t align, size_t n)
{
	if (align == 0 || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	return aligned(align, n, RET_PC(), FRAME());
}

MON_EXPORT void *memalign(size_t align, size_t n)
{
	return aligned(align, n, RET_PC(), FRAME());
}

MON_EXPORT void *valloc(size_t n)
{
	return aligned((size_t)sysconf(_SC_PAGESIZE), n, RET_PC(), FRAME());
}

MON_EXPORT void *pvalloc(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (n > SIZE_MAX - page) {
		errno = ENOMEM;
		return NULL;
	}
	return aligned(page, n ? (n + page - 1) & ~(page - 1) : page, RET_PC(), FRAME());
}

/* ---- C++ operator new / delete ---- */

static void *cxx_new(size_t n, size_t align, uintptr_t ret, void *frame)
{
	void *p = align ? __libc_memalign(align, n ? n : 1) : __libc_malloc(n ? n : 1);
	struct mon_thread *t;

	if (p && (t = track_thread()))
		track_alloc(t, MON_OBJ_HEAP, p, n, ret, frame);
	return p;
}

/* The slow path on failure: libstdc++'s own operator, looked up by name. */
static void *cxx_fallback(const char *sym)
{
	return dlsym(RTLD_NEXT, sym);
}

/*
 * Every new form: allocate here, named by the caller; on failure defer to
 * libstdc++'s own operator of the same name (new-handler, bad_alloc).
 * PARAMS is the parameter list, ARGS the call's arguments, ALIGN the
 * alignment expression (0 = default).
 */
#define DEFINE_NEW(sym, ALIGN, PARAMS, ARGS)                                            \
	MON_EXPORT void *sym PARAMS                                                     \
	{                                                                               \
		void *p = cxx_new(n, ALIGN, RET_PC(), FRAME());                         \
                                                                                        \
		if (mon_unlikely(!p)) {                                                 \
			void *(*f) PARAMS = (void *(*) PARAMS)cxx_fallback(#sym);       \
			return f ARGS;                                                  \
		}                                                                       \
		return p;                                                               \
	}
DEFINE_NEW(_Znwm, 0, (size_t n), (n))
DEFINE_NEW(_Znam, 0, (size_t n), (n))
DEFINE_NEW(_ZnwmRKSt9nothrow_t, 0, (size_t n, const void *nt), (n, nt))
DEFINE_NEW(_ZnamRKSt9nothrow_t, 0, (size_t n, const void *nt), (n, nt))
DEFINE_NEW(_ZnwmSt11align_val_t, al, (size_t n, size_t al), (n, al))
DEFINE_NEW(_ZnamSt11align_val_t, al, (size_t n, size_t al), (n, al))
DEFINE_NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, al, (size_t n, size_t al, const void *nt), (n, al, nt))
DEFINE_NEW(_ZnamSt11align_val_tRKSt9nothrow_t, al, (size_t n, size_t al, const void *nt), (n, al, nt))

/* Every delete form releases the block like free(). */
#define DEFINE_DELETE(sym, ...)                     \
	MON_EXPORT void sym(void *p, ##__VA_ARGS__) \
	{                                           \
		track_free(p);                      \
		__libc_free(p);                     \
	}
DEFINE_DELETE(_ZdlPv)
DEFINE_DELETE(_ZdaPv)
DEFINE_DELETE(_ZdlPvm, size_t sz)
DEFINE_DELETE(_ZdaPvm, size_t sz)
DEFINE_DELETE(_ZdlPvRKSt9nothrow_t, const void *nt)
DEFINE_DELETE(_ZdaPvRKSt9nothrow_t, const void *nt)
DEFINE_DELETE(_ZdlPvSt11align_val_t, size_t al)
DEFINE_DELETE(_ZdaPvSt11align_val_t, size_t al)
DEFINE_DELETE(_ZdlPvmSt11align_val_t, size_t sz, size_t al)
DEFINE_DELETE(_ZdaPvmSt11align_val_t, size_t sz, size_t al)
DEFINE_DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, size_t al, const void *nt)
DEFINE_DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, size_t al, const void *nt)

/* ---- memory mappings: anonymous, and of files ---- */

/*
 * The path of the file open on fd ("/proc/self/fd/N" resolved), interned
 * as the view at off (mon_file_view), or NULL: nothing with a path (an
 * anon_inode such as io_uring's rings, no /proc). A deleted file's name
 * keeps its " (deleted)".
 */
static const char *fd_view(int fd, off_t off)
{
	char link[32], path[4096];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0 || path[0] != '/')
		return NULL;
	path[n] = '\0';
	return mon_file_view(path, (uint64_t)off);
}

/*
 * A mapping of a file that the program can read or write: an object named
 * by the file (docs/objmap.md). Its site is a site of its own per file. A
 * descriptor without a path maps an object named by its site alone, as
 * anonymous memory is.
 */
static void track_file(struct mon_thread *t, void *p, size_t len, int fd, off_t off, uintptr_t ret,
		       void *frame)
{
	const char *view;
	uint32_t site;

	t->in_rt++;
	view = fd_view(fd, off);
	site = mon_site_capture_file(t, ret, frame, view ? mon_file_intern(view) : NULL);
	mon_objmap_add_file((uintptr_t)p, len, site, t->id, view);
	t->in_rt--;
}

static void *do_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off, uintptr_t ret,
		     void *frame)
{
	struct mon_thread *t = track_thread();
	void *p;

	if (t && (flags & MAP_FIXED)) {
		t->in_rt++;
		mon_objmap_unmap_range((uintptr_t)addr, (uintptr_t)addr + len);
		t->in_rt--;
	}
	p = (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	if (p == MAP_FAILED || !t)
		return p;
	if (flags & MAP_ANONYMOUS)
		track_alloc(t, MON_OBJ_MMAP, p, len, ret, frame);
	else if (fd >= 0 && (prot & (PROT_READ | PROT_WRITE)))
		track_file(t, p, len, fd, off, ret, frame);
	return p;
}

MON_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return do_mmap(addr, len, prot, flags, fd, off, RET_PC(), FRAME());
}

MON_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return do_mmap(addr, len, prot, flags, fd, off, RET_PC(), FRAME());
}

MON_EXPORT int munmap(void *addr, size_t len)
{
	struct mon_thread *t = track_thread();

	if (t) {
		t->in_rt++;
		mon_objmap_unmap_range((uintptr_t)addr, (uintptr_t)addr + len);
		t->in_rt--;
	}
	return (int)syscall(SYS_munmap, addr, len);
}

MON_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	struct mon_thread *t = track_thread();
	void *new_addr = NULL, *p;
	const char *view = NULL;
	int tracked = 0;

	if (flags & MREMAP_FIXED) {
		va_list ap;

		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
	}
	if (t) {
		struct mon_obj *o;

		t->in_rt++;
		o = mon_objmap_lookup(NULL, (uintptr_t)old);
		tracked = o->kind == MON_OBJ_MMAP && o->start == (uintptr_t)old;
		view = tracked ? o->name : NULL;	/* a file's: the view stays */
		if (tracked)
			mon_objmap_unmap_range((uintptr_t)old, (uintptr_t)old + old_len);
		if (flags & MREMAP_FIXED)
			mon_objmap_unmap_range((uintptr_t)new_addr, (uintptr_t)new_addr + new_len);
		t->in_rt--;
	}
	p = (void *)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
	if (t && tracked && view) {
		t->in_rt++;
		mon_objmap_add_file((uintptr_t)(p != MAP_FAILED ? p : old),
				    p != MAP_FAILED ? new_len : old_len,
				    mon_site_capture_file(t, RET_PC(), FRAME(), mon_file_intern(view)),
				    t->id, view);
		t->in_rt--;
	} else if (t && tracked) {
		track_alloc(t, MON_OBJ_MMAP, p != MAP_FAILED ? p : old, p != MAP_FAILED ? new_len : old_len,
			    RET_PC(), FRAME());
	}
	return p;
}

/* ---- mem and str functions ---- */

static inline void range(const void *p, size_t n, unsigned rw, uintptr_t pc)
{
	/* sampled: it tallies as the lines it covers; a burst simulates its
	 * head (mon_sampled_range) */
	if (n && mon_unlikely(mon_hot.sampling))
		n = mon_sampled_range(mon_self, (uintptr_t)p, n);
	if (n)
		mon_access((uintptr_t)p, n, rw | MON_ACC_RANGE, pc);
}

/*
 * Aggregates gcc has counted already. Under -mstringop-strategy=libcall
 * (ameba cc) gcc compiles an aggregate copy `a = b` that it does not move
 * by plain stores into
 *     __tsan_write_range(&a, n); __tsan_read_range(&b, n); memcpy(&a, &b, n);
 * and a fill `a = (T){0}` into __tsan_write_range + memset. The hooks count
 * the ranges, so the call must not count them again. Each hook leaves a
 * note: the range, the caller's frame (its canonical frame address) and the
 * hook's return address. memcpy, memmove and memset leave out a range that
 * matches a note from the same frame whose call lies at most
 * NOTE_CODE_BYTES of code before theirs (the argument set-up between the
 * calls: 15-50 bytes in gcc 12's code at -O0..-O3 and -Os), and every call clears
 * both notes, so a note serves at most one call. The reading of `b` by a
 * struct returned by value (only read_range, then memcpy into the return
 * slot) is matched the same way; its write is counted by memcpy.
 * Only an explicit memcpy of exactly the range of an aggregate copy made
 * just before it, in the same function, with no call in between could be
 * taken for the aggregate's own: that memcpy would then go uncounted.
 */
#define NOTE_CODE_BYTES 96
struct range_note {
	uintptr_t addr, size, cfa, pc;
};
static __thread struct range_note note_rd __attribute__((tls_model("initial-exec")));
static __thread struct range_note note_wr __attribute__((tls_model("initial-exec")));

void mon_range_note(unsigned flags, uintptr_t addr, size_t sz, uintptr_t cfa, uintptr_t pc)
{
	struct range_note *n = flags & MON_ACC_WRITE ? &note_wr : &note_rd;

	n->addr = addr;
	n->size = sz;
	n->cfa = cfa;
	n->pc = pc;
}

/* Did a range hook count [p, p + sz) just before this call (see above)? */
static inline int noted(const struct range_note *n, const void *p, size_t sz, uintptr_t cfa,
			uintptr_t pc)
{
	return n->cfa == cfa && n->addr == (uintptr_t)p && n->size == sz && pc > n->pc &&
	       pc - n->pc <= NOTE_CODE_BYTES;
}

/* Counts a copy of n bytes from s to d called from pc in the frame cfa,
 * leaving out what gcc's range hooks counted already. */
static void count_copy(void *d, const void *s, size_t n, uintptr_t cfa, uintptr_t pc)
{
	if (!noted(&note_rd, s, n, cfa, pc))
		range(s, n, MON_ACC_READ, pc);
	if (!noted(&note_wr, d, n, cfa, pc))
		range(d, n, MON_ACC_WRITE, pc);
	note_rd.cfa = note_wr.cfa = 0;
}

MON_EXPORT void *memcpy(void *d, const void *s, size_t n)
{
	void *r = resolved() ? real.memcpy(d, s, n) : slow_memmove(d, s, n);

	if (mon_unlikely(count_from(RET_PC())))
		count_copy(d, s, n, (uintptr_t)__builtin_dwarf_cfa(), RET_PC());
	return r;
}

MON_EXPORT void *memmove(void *d, const void *s, size_t n)
{
	void *r = resolved() ? real.memmove(d, s, n) : slow_memmove(d, s, n);

	if (mon_unlikely(count_from(RET_PC())))
		count_copy(d, s, n, (uintptr_t)__builtin_dwarf_cfa(), RET_PC());
	return r;
}

/* mempcpy: memcpy returning the end of the copy (gcc keeps it a call under
 * ameba cc's -fno-builtin-mempcpy; clang calls memcpy). */
MON_EXPORT void *mempcpy(void *d, const void *s, size_t n)
{
	if (resolved())
		real.memcpy(d, s, n);
	else
		slow_memmove(d, s, n);
	if (mon_unlikely(count_from(RET_PC()))) {
		range(s, n, MON_ACC_READ, RET_PC());
		range(d, n, MON_ACC_WRITE, RET_PC());
	}
	return (char *)d + n;
}

MON_EXPORT void *__mempcpy(void *d, const void *s, size_t n);
MON_EXPORT void *__mempcpy(void *d, const void *s, size_t n)
{
	if (resolved())
		real.memcpy(d, s, n);
	else
		slow_memmove(d, s, n);
	if (mon_unlikely(count_from(RET_PC()))) {
		range(s, n, MON_ACC_READ, RET_PC());
		range(d, n, MON_ACC_WRITE, RET_PC());
	}
	return (char *)d + n;
}

MON_EXPORT void *memset(void *d, int c, size_t n)
{
	void *r;

	if (resolved()) {
		r = real.memset(d, c, n);
	} else {
		unsigned char *p = d;

		for (size_t i = 0; i < n; i++)
			p[i] = (unsigned char)c;
		r = d;
	}
	if (mon_unlikely(count_from(RET_PC()))) {
		if (!noted(&note_wr, d, n, (uintptr_t)__builtin_dwarf_cfa(), RET_PC()))
			range(d, n, MON_ACC_WRITE, RET_PC());
		note_rd.cfa = note_wr.cfa = 0;
	}
	return r;
}

MON_EXPORT void bcopy(const void *s, void *d, size_t n)
{
	if (resolved())
		real.memmove(d, s, n);
	else
		slow_memmove(d, s, n);
	if (mon_unlikely(count_from(RET_PC()))) {
		range(s, n, MON_ACC_READ, RET_PC());
		range(d, n, MON_ACC_WRITE, RET_PC());
	}
}

MON_EXPORT void bzero(void *d, size_t n)
{
	if (resolved()) {
		real.memset(d, 0, n);
	} else {
		unsigned char *p = d;

		for (size_t i = 0; i < n; i++)
			p[i] = 0;
	}
	if (mon_unlikely(count_from(RET_PC())))
		range(d, n, MON_ACC_WRITE, RET_PC());
}

/* explicit_bzero: bzero that the compiler may not drop (clang and gcc call
 * it; libc's would write past the hooks). */
MON_EXPORT void explicit_bzero(void *d, size_t n)
{
	if (resolved()) {
		real.memset(d, 0, n);
	} else {
		unsigned char *p = d;

		for (size_t i = 0; i < n; i++)
			p[i] = 0;
	}
	__asm__ volatile("" : : "r"(d) : "memory");
	if (mon_unlikely(count_from(RET_PC())))
		range(d, n, MON_ACC_WRITE, RET_PC());
}

/* Wide-character fills and copies: n units of sizeof(wchar_t) bytes. */
MON_EXPORT wchar_t *wmemset(wchar_t *d, wchar_t c, size_t n)
{
	if (resolved() && real.wmemset) {
		real.wmemset(d, c, n);
	} else {
		for (size_t i = 0; i < n; i++)
			d[i] = c;
	}
	if (mon_unlikely(count_from(RET_PC())))
		range(d, n * sizeof(wchar_t), MON_ACC_WRITE, RET_PC());
	return d;
}

MON_EXPORT wchar_t *wmemcpy(wchar_t *d, const wchar_t *s, size_t n)
{
	if (resolved())
		real.memcpy(d, s, n * sizeof(wchar_t));
	else
		slow_memmove(d, s, n * sizeof(wchar_t));
	if (mon_unlikely(count_from(RET_PC()))) {
		range(s, n * sizeof(wchar_t), MON_ACC_READ, RET_PC());
		range(d, n * sizeof(wchar_t), MON_ACC_WRITE, RET_PC());
	}
	return d;
}

MON_EXPORT wchar_t *wmemmove(wchar_t *d, const wchar_t *s, size_t n)
{
	if (resolved())
		real.memmove(d, s, n * sizeof(wchar_t));
	else
		slow_memmove(d, s, n * sizeof(wchar_t));
	if (mon_unlikely(count_from(RET_PC()))) {
		range(s, n * sizeof(wchar_t), MON_ACC_READ, RET_PC());
		range(d, n * sizeof(wchar_t), MON_ACC_WRITE, RET_PC());
	}
	return d;
}

/* Bytes memcmp/strncmp examined: up to and including the first difference. */
static size_t examined_mem(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	size_t i = 0;

	while (i < n && x[i] == y[i])
		i++;
	return i < n ? i + 1 : n;
}

MON_EXPORT int memcmp(const void *a, const void *b, size_t n)
{
	int r;

	if (resolved()) {
		r = real.memcmp(a, b, n);
	} else {
		size_t k = examined_mem(a, b, n);

		r = k && k <= n && ((const unsigned char *)a)[k - 1] != ((const unsigned char *)b)[k - 1]
			    ? ((const unsigned char *)a)[k - 1] - ((const unsigned char *)b)[k - 1]
			    : 0;
	}
	if (mon_unlikely(count_from(RET_PC()))) {
		size_t k = examined_mem(a, b, n);

		range(a, k, MON_ACC_READ, RET_PC());
		range(b, k, MON_ACC_READ, RET_PC());
	}
	return r;
}

MON_EXPORT void *memchr(const void *s, int c, size_t n)
{
	void *r;

	if (resolved()) {
		r = real.memchr(s, c, n);
	} else {
		const unsigned char *p = s;

		r = NULL;
		for (size_t i = 0; i < n; i++)
			if (p[i] == (unsigned char)c) {
				r = (void *)(p + i);
				break;
			}
	}
	if (mon_unlikely(count_from(RET_PC())))
		range(s, r ? (size_t)((const char *)r - (const char *)s) + 1 : n, MON_ACC_READ, RET_PC());
	return r;
}

static inline size_t len_of(const char *s)
{
	return resolved() ? real.strlen(s) : slow_strlen(s);
}

MON_EXPORT size_t strlen(const char *s)
{
	size_t n = len_of(s);

	if (mon_unlikely(count_from(RET_PC())))
		range(s, n + 1, MON_ACC_READ, RET_PC());
	return n;
}

MON_EXPORT size_t strnlen(const char *s, size_t max)
{
	size_t n;

	if (resolved()) {
		n = real.strnlen(s, max);
	} else {
		for (n = 0; n < max && s[n]; n++)
			;
	}
	if (mon_unlikely(count_from(RET_PC())))
		range(s, n < max ? n + 1 : max, MON_ACC_READ, RET_PC());
	return n;
}

/* strcpy and stpcpy: copies s with its terminator; returns its length + 1. */
static inline size_t copy_str(char *d, const char *s, uintptr_t pc)
{
	size_t n = len_of(s) + 1;

	if (resolved())
		real.memmove(d, s, n);
	else
		slow_memmove(d, s, n);
	if (mon_unlikely(count_from(pc))) {
		range(s, n, MON_ACC_READ, pc);
		range(d, n, MON_ACC_WRITE, pc);
	}
	return n;
}

MON_EXPORT char *strcpy(char *d, const char *s)
{
	copy_str(d, s, RET_PC());
	return d;
}

MON_EXPORT char *stpcpy(char *d, const char *s)
{
	return d + copy_str(d, s, RET_PC()) - 1;
}

/* strncpy reads up to n bytes of s (to its terminator) and writes exactly n. */
MON_EXPORT char *strncpy(char *d, const char *s, size_t n)
{
	size_t k = 0;

	while (k < n && s[k])
		k++;
	for (size_t i = 0; i < k; i++)
		d[i] = s[i];
	for (size_t i = k; i < n; i++)
		d[i] = '\0';
	if (mon_unlikely(count_from(RET_PC()))) {
		range(s, k < n ? k + 1 : n, MON_ACC_READ, RET_PC());
		range(d, n, MON_ACC_WRITE, RET_PC());
	}
	return d;
}

/* stpncpy: strncpy returning the first NUL it wrote, or d + n. */
MON_EXPORT char *stpncpy(char *d, const char *s, size_t n)
{
	size_t k = 0;

	while (k < n && s[k])
		k++;
	for (size_t i = 0; i < k; i++)
		d[i] = s[i];
	for (size_t i = k; i < n; i++)
		d[i] = '\0';
	if (mon_unlikely(count_from(RET_PC()))) {
		range(s, k < n ? k + 1 : n, MON_ACC_READ, RET_PC());
		range(d, n, MON_ACC_WRITE, RET_PC());
	}
	return d + k;
}

MON_EXPORT char *strcat(char *d, const char *s)
{
	size_t dl = len_of(d), sl = len_of(s);

	for (size_t i = 0; i <= sl; i++)
		d[dl + i] = s[i];
	if (mon_unlikely(count_from(RET_PC()))) {
		range(d, dl + 1, MON_ACC_READ, RET_PC());
		range(s, sl + 1, MON_ACC_READ, RET_PC());
		range(d + dl, sl + 1, MON_ACC_WRITE, RET_PC());
	}
	return d;
}

MON_EXPORT char *strncat(char *d, const char *s, size_t n)
{
	size_t dl = len_of(d), k = 0;

	while (k < n && s[k]) {
		d[dl + k] = s[k];
		k++;
	}
	d[dl + k] = '\0';
	if (mon_unlikely(count_from(RET_PC()))) {
		range(d, dl + 1, MON_ACC_READ, RET_PC());
		range(s, k < n ? k + 1 : n, MON_ACC_READ, RET_PC());
		range(d + dl, k + 1, MON_ACC_WRITE, RET_PC());
	}
	return d;
}

/* Bytes strcmp/strncmp examined in each string: through the first
 * difference or terminator. */
static size_t examined_str(const char *a, const char *b, size_t n)
{
	size_t i = 0;

	while (i < n && a[i] && a[i] == b[i])
		i++;
	return i < n ? i + 1 : n;
}

MON_EXPORT int strcmp(const char *a, const char *b)
{
	int r;

	if (resolved()) {
		r = real.strcmp(a, b);
	} else {
		size_t i = 0;

		while (a[i] && a[i] == b[i])
			i++;
		r = (unsigned char)a[i] - (unsigned char)b[i];
	}
	if (mon_unlikely(count_from(RET_PC()))) {
		size_t k = examined_str(a, b, SIZE_MAX);

		range(a, k, MON_ACC_READ, RET_PC());
		range(b, k, MON_ACC_READ, RET_PC());
	}
	return r;
}

MON_EXPORT int strncmp(const char *a, const char *b, size_t n)
{
	int r;

	if (resolved()) {
		r = real.strncmp(a, b, n);
	} else {
		size_t i = 0;

		while (i < n && a[i] && a[i] == b[i])
			i++;
		r = i < n ? (unsigned char)a[i] - (unsigned char)b[i] : 0;
	}
	if (mon_unlikely(count_from(RET_PC()))) {
		size_t k = examined_str(a, b, n);

		range(a, k, MON_ACC_READ, RET_PC());
		range(b, k, MON_ACC_READ, RET_PC());
	}
	return r;
}

MON_EXPORT char *strchr(const char *s, int c)
{
	char *r;

	if (resolved()) {
		r = real.strchr(s, c);
	} else {
		const char *p = s;

		while (*p && *p != (char)c)
			p++;
		r = *p == (char)c ? (char *)p : NULL;
	}
	if (mon_unlikely(count_from(RET_PC())))
		range(s, r ? (size_t)(r - s) + 1 : len_of(s) + 1, MON_ACC_READ, RET_PC());
	return r;
}

MON_EXPORT char *strrchr(const char *s, int c)
{
	char *r;

	if (resolved()) {
		r = real.strrchr(s, c);
	} else {
		const char *p = s, *last = NULL;

		do {
			if (*p == (char)c)
				last = p;
		} while (*p++);
		r = (char *)last;
	}
	if (mon_unlikely(count_from(RET_PC())))
		range(s, len_of(s) + 1, MON_ACC_READ, RET_PC());
	return r;
}

/* strdup/strndup allocate here, so that the block is named by our caller. */
static char *dup_n(const char *s, size_t n, uintptr_t ret, void *frame)
{
	char *p = __libc_malloc(n + 1);
	struct mon_thread *t;

	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	if (resolved())
		real.memcpy(p, s, n);
	else
		slow_memmove(p, s, n);
	p[n] = '\0';
	if ((t = track_thread()))
		track_alloc(t, MON_OBJ_HEAP, p, n + 1, ret, frame);
	if (mon_unlikely(count_from(ret)))
		range(p, n + 1, MON_ACC_WRITE, ret);
	return p;
}

MON_EXPORT char *strdup(const char *s)
{
	size_t n = len_of(s);

	if (mon_unlikely(count_from(RET_PC())))
		range(s, n + 1, MON_ACC_READ, RET_PC());
	return dup_n(s, n, RET_PC(), FRAME());
}

MON_EXPORT char *strndup(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n])
		n++;
	if (mon_unlikely(count_from(RET_PC())))
		range(s, n < max ? n + 1 : max, MON_ACC_READ, RET_PC());
	return dup_n(s, n, RET_PC(), FRAME());
}

/* ---- threads and modules ---- */

MON_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			      void *arg)
{
	int wrapped, err;

	if (!resolved() || !real.pthread_create)
		return EAGAIN;
	wrapped = mon_thread_wrap_start(&fn, &arg) == 0;
	err = real.pthread_create(th, attr, fn, arg);
	if (err && wrapped)
		mon_thread_unwrap_start(arg);
	return err;
}

MON_EXPORT void *dlopen(const char *file, int mode)
{
	struct mon_thread *t;
	void *h;

	if (!resolved() || !real.dlopen)
		return NULL;
	mon_batch_sync(mon_self);	/* its constructors' accesses come after */
	h = real.dlopen(file, mode);
	if (h && (t = track_thread())) {
		t->in_rt++;
		mon_objmap_modules_changed();
		t->in_rt--;
	}
	return h;
}

MON_EXPORT int dlclose(void *h)
{
	struct mon_thread *t;
	int r;

	if (!resolved() || !real.dlclose)
		return -1;
	mon_batch_sync(mon_self);	/* before its destructors' accesses */
	r = real.dlclose(h);
	if (r == 0 && (t = track_thread())) {
		t->in_rt++;
		mon_objmap_modules_changed();
		t->in_rt--;
	}
	return r;
}
