/*
 * empty_hooks.c - the floor of the call-per-access design: every hook the
 * kernels call is an empty function and nothing else of the runtime is
 * linked. The difference between this build and the native one is what
 * the calls alone cost the instrumented code (call/return and the caller's
 * spills around them); the difference to the real dormant build is what
 * libameba-rt's fast path (one load, one branch) and its interposers add.
 */
#define EMPTY1(name) __attribute__((visibility("default"))) void name(void *a); \
	void name(void *a) {}
#define EMPTY_SIZES(prefix) EMPTY1(prefix##1) EMPTY1(prefix##2) EMPTY1(prefix##4) \
	EMPTY1(prefix##8) EMPTY1(prefix##16)

EMPTY_SIZES(__tsan_read)
EMPTY_SIZES(__tsan_write)
EMPTY_SIZES(__tsan_unaligned_read)
EMPTY_SIZES(__tsan_unaligned_write)
EMPTY1(__tsan_func_entry)
EMPTY1(__tsan_read_range)
EMPTY1(__tsan_write_range)

__attribute__((visibility("default"))) void __tsan_func_exit(void);
void __tsan_func_exit(void) {}
__attribute__((visibility("default"))) void __tsan_init(void);
void __tsan_init(void) {}
