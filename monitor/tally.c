/*
 * tally.c - the hooks' side of sampled mode (docs/simulator.md, "Sampled
 * simulation"): the per-thread tally slots, the slot each thread finds on
 * its first access, the due a thread reaches between bursts, and the futex
 * word through which it wakes the controller (sampled.c).
 *
 * Everything here may run inside any hook: inside malloc, a signal handler,
 * or while the controller waits for the thread's log. So no lock and no
 * allocation: the table is mapped once by mon_sampled_start, before the
 * hooks tally, and errno is kept across the wake-up.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mon.h"

struct mon_tally *mon_tally_tab;
__thread struct mon_tally *mon_tslot;
static struct mon_tally tslot_none;	/* ids from MON_TALLY_MAX on: nobody reads it */

/*
 * The controller sleeps through a gap on this futex word: bit 0 set by the
 * first thread that reached its due (the hooks cannot take the controller's
 * lock), and 2 added by anything else that wakes it (sampled.c's poke).
 */
uint32_t mon_smp_word;

int mon_tally_alloc(void)
{
	void *p;

	if (__atomic_load_n(&mon_tally_tab, __ATOMIC_ACQUIRE))
		return 0;
	p = mmap(NULL, (size_t)MON_TALLY_MAX * sizeof(struct mon_tally), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	__atomic_store_n(&mon_tally_tab, (struct mon_tally *)p, __ATOMIC_RELEASE);
	return 0;
}

/* Sets and returns mon_tslot for thread t (NULL: t NULL or no table yet,
 * not cached; a thread whose id has no slot gets one that nobody reads). */
static struct mon_tally *tslot_find(const struct mon_thread *t)
{
	struct mon_tally *c = __atomic_load_n(&mon_tally_tab, __ATOMIC_ACQUIRE);

	if (!t || !c)
		return NULL;
	return mon_tslot = t->id < MON_TALLY_MAX ? &c[t->id] : &tslot_none;
}

void mon_tally_first(uintptr_t mix, uint64_t n)
{
	if (tslot_find(mon_self))
		mon_tally_add(mix, n);
}

void mon_tally_check(struct mon_tally *s)
{
	/* due - 1 wraps when 0 (none): never reached */
	if (mon_tally_sum(s) > __atomic_load_n(&s->due, __ATOMIC_RELAXED) - 1)
		mon_sampled_due(s);
}

void mon_smp_word_wake(void)
{
	int e = errno;

	syscall(SYS_futex, &mon_smp_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	errno = e;
}

void mon_sampled_due(struct mon_tally *c)
{
	/* once per gap and thread: the controller sets the next due */
	__atomic_store_n(&c->due, 0, __ATOMIC_RELAXED);
	if (!(__atomic_fetch_or(&mon_smp_word, 1, __ATOMIC_SEQ_CST) & 1))
		mon_smp_word_wake();
}
