/*
 * intercept_sync.c - the blocking and releasing calls the ordered simulation
 * must see (seq.c): a thread blocked in one of them holds no other thread
 * back in simulated time, and resumes at the simulated time of the release
 * that woke it.
 *
 * Each interposer calls straight through unless the ordered mode is engaged
 * and the caller is an application thread outside the runtime (the runtime's
 * own locks, its server and merger threads pass through untouched). A lock
 * first tries without blocking: only a call that would block is a BLOCK /
 * UNBLOCK pair. Releases are logged before the real release, so the woken
 * thread always sees its releaser's sequence number. Semantics are libc's:
 * every call returns what the real one returned.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <time.h>
#include <unistd.h>

#include "mon.h"
#include "seq.h"

/* libc's function `name` (dlsym(RTLD_NEXT)), looked up once. */
#define REAL(type, name, ...)                                                                  \
	static type (*real_##name)(__VA_ARGS__);                                               \
	static type (*get_##name(void))(__VA_ARGS__)                                           \
	{                                                                                      \
		type (*f)(__VA_ARGS__) = __atomic_load_n(&real_##name, __ATOMIC_ACQUIRE);      \
		if (mon_unlikely(!f)) {                                                        \
			f = (type (*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name);                    \
			__atomic_store_n(&real_##name, f, __ATOMIC_RELEASE);                   \
		}                                                                              \
		return f;                                                                      \
	}

/* The pthread_cond_* of glibc 2.3.2 (the current ones, not the old ABI). */
#define REAL_COND(type, name, ...)                                                             \
	static type (*real_##name)(__VA_ARGS__);                                               \
	static type (*get_##name(void))(__VA_ARGS__)                                           \
	{                                                                                      \
		type (*f)(__VA_ARGS__) = __atomic_load_n(&real_##name, __ATOMIC_ACQUIRE);      \
		if (mon_unlikely(!f)) {                                                        \
			f = (type (*)(__VA_ARGS__))dlvsym(RTLD_NEXT, #name, "GLIBC_2.3.2");    \
			if (!f)                                                                \
				f = (type (*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name);            \
			__atomic_store_n(&real_##name, f, __ATOMIC_RELEASE);                   \
		}                                                                              \
		return f;                                                                      \
	}

REAL(int, pthread_mutex_lock, pthread_mutex_t *)
REAL(int, pthread_mutex_trylock, pthread_mutex_t *)
REAL(int, pthread_mutex_unlock, pthread_mutex_t *)
REAL_COND(int, pthread_cond_wait, pthread_cond_t *, pthread_mutex_t *)
REAL_COND(int, pthread_cond_timedwait, pthread_cond_t *, pthread_mutex_t *, const struct timespec *)
REAL_COND(int, pthread_cond_signal, pthread_cond_t *)
REAL_COND(int, pthread_cond_broadcast, pthread_cond_t *)
REAL(int, pthread_barrier_init, pthread_barrier_t *, const pthread_barrierattr_t *, unsigned)
REAL(int, pthread_barrier_wait, pthread_barrier_t *)
REAL(int, pthread_join, pthread_t, void **)
REAL(int, sem_wait, sem_t *)
REAL(int, sem_trywait, sem_t *)
REAL(int, sem_post, sem_t *)
REAL(int, nanosleep, const struct timespec *, struct timespec *)
REAL(int, clock_nanosleep, clockid_t, int, const struct timespec *, struct timespec *)
REAL(int, usleep, useconds_t)
REAL(unsigned, sleep, unsigned)

/* Does the ordered simulation want to hear of this call? Not of the
 * runtime's own (its locks, whatever thread takes them). */
static inline __attribute__((always_inline)) int seen_from(uintptr_t ret)
{
	const struct mon_thread *t = mon_self;

	return mon_unlikely(mon_seq_engaged()) && t && !t->in_rt && !t->ignore &&
	       !mon_pc_in_runtime(ret);
}
#define seen() seen_from((uintptr_t)__builtin_return_address(0))

#define KEY(p) ((uintptr_t)(p))

MON_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	int r;

	if (!seen())
		return get_pthread_mutex_lock()(m);
	r = get_pthread_mutex_trylock()(m);
	if (r != EBUSY)
		return r;
	mon_seq_block(KEY(m));
	r = get_pthread_mutex_lock()(m);
	mon_seq_unblock(KEY(m));
	return r;
}

MON_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
	if (seen())
		mon_seq_release(KEY(m));
	return get_pthread_mutex_unlock()(m);
}

MON_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	int r;

	if (!seen())
		return get_pthread_cond_wait()(c, m);
	mon_seq_release(KEY(m));	/* the wait unlocks m */
	mon_seq_block(KEY(c));
	r = get_pthread_cond_wait()(c, m);
	mon_seq_unblock(KEY(c));
	return r;
}

MON_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
				      const struct timespec *abstime)
{
	int r;

	if (!seen())
		return get_pthread_cond_timedwait()(c, m, abstime);
	mon_seq_release(KEY(m));
	mon_seq_block(KEY(c));
	r = get_pthread_cond_timedwait()(c, m, abstime);
	/* a time-out was released by nobody: resume at the frontier */
	mon_seq_unblock(r == ETIMEDOUT ? 0 : KEY(c));
	return r;
}

MON_EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
	if (seen())
		mon_seq_release(KEY(c));
	return get_pthread_cond_signal()(c);
}

MON_EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
	if (seen())
		mon_seq_release(KEY(c));
	return get_pthread_cond_broadcast()(c);
}

/* Recorded whatever the mode: barriers are usually made before the threads
 * that engage ordered mode. */
MON_EXPORT int pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *a,
				    unsigned count)
{
	int r = get_pthread_barrier_init()(b, a, count);

	if (!r)
		mon_seq_barrier_init(KEY(b), count);
	return r;
}

MON_EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
	uint64_t n;
	int r;

	if (!seen())
		return get_pthread_barrier_wait()(b);
	n = mon_seq_release(KEY(b));	/* this arrival may be the last one */
	mon_seq_block(KEY(b));
	r = get_pthread_barrier_wait()(b);
	mon_seq_unblock_at(KEY(b), mon_seq_barrier_round_end(KEY(b), n));
	return r;
}

MON_EXPORT int pthread_join(pthread_t th, void **ret)
{
	int r;

	if (!seen())
		return get_pthread_join()(th, ret);
	/* the ending thread releases its pthread_t (mon_seq_thread_exit) */
	mon_seq_block(KEY(th));
	r = get_pthread_join()(th, ret);
	mon_seq_unblock(KEY(th));
	return r;
}

MON_EXPORT int sem_wait(sem_t *s)
{
	int r;

	if (!seen())
		return get_sem_wait()(s);
	r = get_sem_trywait()(s);
	if (r == 0 || errno != EAGAIN)
		return r;
	mon_seq_block(KEY(s));
	r = get_sem_wait()(s);
	mon_seq_unblock(KEY(s));
	return r;
}

MON_EXPORT int sem_post(sem_t *s)
{
	if (seen())
		mon_seq_release(KEY(s));
	return get_sem_post()(s);
}

/* Sleeps: nothing releases them (key 0); the thread resumes at the merge
 * frontier, having held nobody back meanwhile. */
#define SLEEP(type, name, call_args, ...)                                    \
	MON_EXPORT type name(__VA_ARGS__)                                   \
	{                                                                   \
		type r;                                                     \
                                                                            \
		if (!seen())                                                \
			return get_##name() call_args;                      \
		mon_seq_block(0);                                           \
		r = get_##name() call_args;                                 \
		mon_seq_unblock(0);                                         \
		return r;                                                   \
	}

SLEEP(int, nanosleep, (req, rem), const struct timespec *req, struct timespec *rem)
SLEEP(int, clock_nanosleep, (clk, flags, req, rem), clockid_t clk, int flags,
      const struct timespec *req, struct timespec *rem)
SLEEP(int, usleep, (us), useconds_t us)
SLEEP(unsigned, sleep, (s), unsigned s)
