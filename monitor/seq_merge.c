/*
 * seq_merge.c - the ordered mode's merger: the thread that takes the
 * program's threads' logs in simulated-time order and drives the simulator
 * for each (the design: seq.c's notes; docs/simulator.md, "Threads in
 * simulated time").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>

#include "mon.h"
#include "seq.h"
#include "seq_int.h"
#include "backend_sim.h"	/* mon_sim_seq_hit: the merger's filter */

/* ---- the merger ---- */


/* 1 when the OS says thread tid sleeps (S, T, t: waits for something else
 * or is stopped) or is gone. Running, runnable and D (a page fault, a disk
 * read: kernel work that ends by itself) are not sleeping: the merger waits
 * for them. */
static int os_sleeping(pid_t tid)
{
	char st = mon_tid_state(tid);

	return st != 'R' && st != 'D';
}

/* Simulates one logged access of l's thread; returns its estimated cycles.
 * merge_run's own loop takes the common access (mon_sim_seq_access). */
static uint64_t merge_access(struct seq_log *l, const struct seq_ent *e)
{
	struct mon_thread *t = l->t;
	struct mon_obj *obj;
	int slot = mon_slot_of_metric[AMEBA_M_EST_CYCLES];
	struct mon_events ev;
	uint64_t cyc = 0;
	int armed = __atomic_load_n(&mon_cond_armed, __ATOMIC_RELAXED) ||
		    __atomic_load_n(&mon_sample_armed, __ATOMIC_RELAXED);

	if (!(obj = mon_objmap_get(e->obj_idx)))
		return 1;
	ev.nr = 0;
	if (mon_unlikely(e->flags & MON_ACC_WARM)) {
		/* a replayed address (sampled mode): its thread's clock moved
		 * by 8,192 misses while the others' did not ran the next
		 * burst one thread at a time, and its cut dropped the rest */
		ev.counts = NULL;
		mon_seq.inner->access(t, obj, e->addr, e->sz, e->flags, e->pc, &ev);
		return 0;
	}
	if (mon_likely(e->v && !armed && slot >= 0)) {
		uint64_t before = __atomic_load_n(&e->v[slot], __ATOMIC_RELAXED);

		ev.counts = e->v;
		mon_seq.inner->access(t, obj, e->addr, e->sz, e->flags, e->pc, &ev);
		cyc = __atomic_load_n(&e->v[slot], __ATOMIC_RELAXED) - before;
	} else {
		ev.counts = NULL;
		mon_seq.inner->access(t, obj, e->addr, e->sz, e->flags, e->pc, &ev);
		for (uint32_t i = 0; i < ev.nr; i++) {
			if (e->v)
				mon_count_add(e->v, ev.slot[i], ev.n[i]);
			if ((int)ev.slot[i] == slot)
				cyc += ev.n[i];
		}
		if (__atomic_load_n(&mon_cond_armed, __ATOMIC_RELAXED))
			mon_cond_account(t, e->addr, obj, &ev);
		if (__atomic_load_n(&mon_sample_armed, __ATOMIC_RELAXED))
			mon_sample_account(t, e->addr, e->pc, obj, &ev);
	}
	return cyc ? cyc : 1;
}

/* Merger: whether l holds entries not merged yet. It reads the thread's
 * line (head, written at every entry) only once the entries it last saw
 * there are merged: reading it at every pick pulled the line across for
 * each entry or two (dense_2t: ~20% of the run's samples). */
static inline int log_pending(struct seq_log *l)
{
	if (l->tail != l->head_seen)
		return 1;
	l->head_seen = __atomic_load_n(&l->head, __ATOMIC_ACQUIRE);
	return l->tail != l->head_seen;
}

/* Whether blocked log l's wait is over: its next entry logged, and when
 * that is the UNBLOCK of a sync object, the releases it waits for merged
 * (try_resume's test; no change but log_pending's). */
static int blocked_may_resume(struct seq_log *l)
{
	const struct seq_ent *e;
	const struct seq_sync *s;

	if (!log_pending(l))
		return 0;
	e = &l->mring[l->tail & (SEQ_RING - 1)];
	if (e->kind != SEQ_UNBLOCK || !e->addr || mon_seq.force)
		return 1;
	s = mon_seq_sync_slot(e->addr);
	return !s || __atomic_load_n(&s->done, __ATOMIC_ACQUIRE) >= e->pc;
}

/* Resumes a waiting log whose wait is over (ST_NEW, ST_BLOCKED); 1 if it did. */
static int try_resume(struct seq_log *l)
{
	struct seq_sync *s;

	if (l->state == ST_NEW) {
		uint32_t id = l->t->id;
		uint64_t born = id < mon_seq.nr_born ? mon_seq.born[id] : 0;

		/* a thread whose creation was not logged (created before the
		 * engagement, or unseen) starts at the frontier or its own
		 * cycles so far (clock0), whichever is later; the others at
		 * their creator's clock, once that creation is merged */
		if (!born && l->wait_create && !mon_seq.force)
			return 0;
		l->clock = born ? born - 1 : mon_seq.frontier > l->clock0 ? mon_seq.frontier : l->clock0;
		l->state = ST_RUN;
		return 1;
	}
	if (!blocked_may_resume(l))
		return 0;
	const struct seq_ent *e = &l->mring[l->tail & (SEQ_RING - 1)];
	if (e->kind != SEQ_UNBLOCK) {	/* cannot happen: BLOCK is always followed by UNBLOCK */
		l->state = ST_RUN;
		return 1;
	}
	if (e->addr) {
		s = mon_seq_sync_slot(e->addr);
		if (s && s->clock > l->clock)
			l->clock = s->clock;
	} else if (mon_seq.frontier > l->clock) {
		l->clock = mon_seq.frontier;	/* a sleep: what ran meanwhile */
	}
	__atomic_store_n(&l->tail, l->tail + 1, __ATOMIC_RELEASE);
	l->state = ST_RUN;
	return 1;
}

static void unpark(uintptr_t key);
static void await_log(uint32_t id, uint64_t clock);
static void await_waiters(uintptr_t key, uint64_t clock);

/* Whether the releases merged on key end a round of a barrier whose size
 * pthread_barrier_init told (those since the init a multiple of it): then
 * every thread blocked there is woken. */
static int round_ends(uintptr_t key)
{
	const struct seq_sync *s = mon_seq_sync_slot(key);
	uint64_t base = 0;
	unsigned n = mon_seq_barrier_count(key, &base);

	return n > 1 && s && s->key == key && s->done > base && (s->done - base) % n == 0;
}

/* The creation clock of thread id (merger only; grows as ids do). */
static void born_set(uint32_t id, uint64_t clock)
{
	if (id >= mon_seq.nr_born) {
		uint32_t n = id + 1024;
		uint64_t *b = mon_realloc(mon_seq.born, n * sizeof(*b));

		if (!b)
			return;		/* it then starts at the frontier (drain or stall) */
		memset(b + mon_seq.nr_born, 0, (n - mon_seq.nr_born) * sizeof(*b));
		mon_seq.born = b;
		mon_seq.nr_born = n;
	}
	mon_seq.born[id] = clock + 1;
}


/* Wakes l's thread, asleep for room in its log (log_wait_room). */
static void room_wake(struct seq_log *l)
{
	__atomic_add_fetch(&l->room_seq, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &l->room_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* A dropped access (sampled mode's cut, merge_round): not simulated, and
 * taken off its thread's simulated tally (mon_sampled_skip counted it). */
static void drop_access(struct seq_log *l)
{
	struct mon_tally *c = mon_tally_tab;

	if (c && l->t->id < MON_TALLY_MAX)
		__atomic_store_n(&c[l->t->id].dropped,
				 __atomic_load_n(&c[l->t->id].dropped, __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELAXED);
}

/* A release of key merged: its waiters resume at l's clock at the latest. */
static void release(struct seq_log *l, uintptr_t key)
{
	struct seq_sync *s = mon_seq_sync_slot(key);

	if (s) {
		if (l->clock > s->clock)
			s->clock = l->clock;
		__atomic_add_fetch(&s->done, 1, __ATOMIC_ACQ_REL);
	}
}

/* The L1 hits the merger's filter takes among the entries ring[(n + k) %
 * SEQ_RING], k < max, the core held in r: how many, in a row from n (the
 * next is not plain, or not a hit) */
static inline uint64_t plain_hits(struct sim_mf_run *r, const struct seq_ent *ring, uint64_t n,
				  uint64_t max)
{
	const struct seq_ent *e;
	uint64_t k;

#ifdef SIM_MF_HITS
	if (mon_seq.direct == SEQ_DIRECT_ASM && r->shift == 6)
		return SIM_MF_HITS(r, ring, n, max);
#endif
	for (k = 0; k < max; k++) {
		e = &ring[(n + k) & (SEQ_RING - 1)];
		if (e->kind != SEQ_PLAIN || !mon_sim_seq_hit(r, e->obj_idx, e->addr, e->wfs, e->v))
			break;
	}
	return k;
}

/*
 * The L1 hits the merger's filter takes from entry n (plain) of ring on,
 * before stop, while *clock stays <= limit: how many, their cycles added
 * to *clock. The first entry's filter entry is tested before the core is
 * held (mon_sim_seq_maybe: a miss then pays nothing more); the core is
 * held over the run; at most as many hits as keep the clock within limit
 * (each adds the same cycles). 0 when core is NULL or it takes none.
 */
static inline __attribute__((always_inline)) uint64_t run_hits(void *core,
								const struct seq_ent *ring,
								uint64_t n, uint64_t stop,
								uint64_t *clock, uint64_t limit)
{
	struct sim_mf_run r;
	uint64_t c1, room, k;

	if (!core || !mon_sim_seq_maybe(core, ring[n & (SEQ_RING - 1)].addr) ||
	    !mon_sim_seq_hold(core, &r))
		return 0;
	c1 = mon_sim_seq_hit_cycles(&r);
	room = (limit - *clock) / c1;
	k = plain_hits(&r, ring, n, room < stop - n ? room + 1 : stop - n);
	mon_sim_seq_unhold(core, &r, k);
	*clock += k * c1;
	return k;
}

/*
 * merge_run's common entries: the plain ones (an access with its counter
 * vector, no replay) of l from tl on, before stop, while clock stays <=
 * limit. The L1 hits the merger's filter takes are made inline, the core
 * held over each run of them (backend_sim.h mon_sim_seq_hold); the others
 * go to mon_sim_seq_access. Returns how many it merged (it stops before
 * an entry of another kind); their cycles are added to *clock, the
 * filter's hits to *mf. Out of line, so that its values stay in registers:
 * inline in merge_run, among the other kinds' calls, gcc kept them on the
 * stack (~95 instructions a hit, jacobi_2t).
 */
static __attribute__((noinline)) uint64_t merge_plain(struct seq_log *l, uint64_t tl,
						      uint64_t stop, uint64_t *clock,
						      uint64_t limit, uint64_t *mf)
{
	const struct seq_ent *ring = l->mring, *e;
	void *core = l->core;
	uint64_t n = tl, clk = *clock, hits = 0, k;

	if (mon_unlikely(!core))
		core = l->core = l->t->backend_data;	/* set for good, once */
	do {
		e = &ring[n & (SEQ_RING - 1)];
		if (e->kind != SEQ_PLAIN)
			break;
		if ((k = run_hits(core, ring, n, stop, &clk, limit))) {
			hits += k;
			n += k;
			if (n == stop || clk > limit)
				break;
			e = &ring[n & (SEQ_RING - 1)];
			if (e->kind != SEQ_PLAIN)
				break;
		}
		/* a plain entry the filter did not take */
		clk += mon_sim_seq_access(l->t, core, e->obj_idx, e->addr, e->wfs, e->v);
	} while (++n != stop && clk <= limit);
	*clock = clk;
	*mf += hits;
	return n - tl;
}

/* One entry of l that merge_run does not take directly (its switch), at
 * l->clock: 1 when the run ends after it (l stops running, or a creation
 * is awaited) */
static int merge_entry(struct seq_log *l, const struct seq_ent *e, int drop)
{
	switch (e->kind) {
	case SEQ_ACCESS:
	case SEQ_PLAIN:
		if (drop && !(e->flags & MON_ACC_WARM))
			drop_access(l);
		else	/* a replayed address warms even past the cut */
			l->clock += merge_access(l, e);
		break;
	case SEQ_REL:
		release(l, e->addr);
		break;
	case SEQ_BLOCK:
		l->state = ST_BLOCKED;
		l->block_key = e->addr;
		/* the last arrival of a barrier's round blocks too (its wait
		 * returns at once): from its BLOCK, every thread of the round
		 * is blocked there and woken */
		if (round_ends(e->addr))
			await_waiters(e->addr, l->clock);
		break;
	case SEQ_UNBLOCK:	/* an UNBLOCK without BLOCK: a sleep key 0 */
		break;
	case SEQ_EXIT:	/* the joiners' release, if any, and the end */
		if (e->addr) {
			release(l, e->addr);
			await_waiters(e->addr, l->clock);
		}
		l->state = ST_DONE;
		break;
	case SEQ_CREATE:
		born_set((uint32_t)e->addr, l->clock);
		unpark((uintptr_t)e->addr + 1);
		await_log((uint32_t)e->addr, l->clock);
		break;
	}
	return l->state != ST_RUN || mon_seq.awaiting;
}

/* The end of a run of l, merged up to tl, l->clock its clock */
static void run_end(struct seq_log *l, uint64_t tl)
{
	/* a release store and a plain load, not the locked pair that would
	 * order them: a wait for room that began just as the tail moved is
	 * seen at the next run of this (full) log, or ends by its 1 ms
	 * timeout */
	__atomic_store_n(&l->tail, tl, __ATOMIC_RELEASE);
	/* its thread sleeps for room (log_wait_room): wake it once there is
	 * enough, once per wait - its head stays where it was until it wakes
	 * (a wake at each run until then was a futex call for nothing: ~13%
	 * of jacobi_2t's merger); a wake lost to the race above ends by the
	 * wait's timeout */
	if (__atomic_load_n(&l->room_wait, __ATOMIC_RELAXED)) {
		uint64_t h = __atomic_load_n(&l->head, __ATOMIC_ACQUIRE);

		if (h - tl <= SEQ_RING - SEQ_ROOM && h != l->room_woke) {
			l->room_woke = h;
			room_wake(l);
		}
	}
	if (l->clock > __atomic_load_n(&mon_seq.max_clock, __ATOMIC_RELAXED))
		__atomic_store_n(&mon_seq.max_clock, l->clock, __ATOMIC_RELAXED);
	if (l->state == ST_DONE) {
		if (mon_seq.inner->thread_exit)
			mon_seq.inner->thread_exit(l->t);	/* its core back, on the merger */
		mon_fold_thread_merged(l->t);	/* its counts are final: fold.c */
		mon_seq.nr_done++;
	}
}

/* Merges up to SEQ_BATCH entries of l while its clock stays <= limit. */
static void merge_run(struct seq_log *l, uint64_t limit, int drop)
{
	uint64_t tl = l->tail, clock = l->clock, stop, plain = 0, mf = 0;
	/* the common entry, an access to simulate as it is, goes straight to
	 * merge_plain, its clock in a register (armed or not is taken
	 * once per run: an arm takes effect at a run's boundary) */
	const int direct = mon_seq.direct && !drop &&
			   !__atomic_load_n(&mon_cond_armed, __ATOMIC_RELAXED) &&
			   !__atomic_load_n(&mon_sample_armed, __ATOMIC_RELAXED);

	log_pending(l);
	stop = l->head_seen - tl > SEQ_BATCH ? tl + SEQ_BATCH : l->head_seen;
	while (tl != stop && clock <= limit) {
		const struct seq_ent *e = &l->mring[tl & (SEQ_RING - 1)];
		int end;

		if (mon_likely(direct && e->kind == SEQ_PLAIN)) {
			uint64_t k = merge_plain(l, tl, stop, &clock, limit, &mf);

			plain += k;
			tl += k;
			continue;
		}
		l->clock = clock;
		end = merge_entry(l, e, drop);
		clock = l->clock;
		tl++;
		if (end)
			break;
	}
	l->clock = clock;
	mon_seq.nr_plain += plain;
	mon_seq.nr_mf += mf;
	run_end(l, tl);
}

/*
 * The merger's logs. Threads push new logs onto mon_seq.logs (an inbox); each
 * round the merger takes the whole inbox. A new thread whose creation is
 * not merged yet waits parked (by its creation key, which one REL releases)
 * and costs nothing per round; every other live log is in act[]. A round
 * walks act[] only: thousands of short threads created ahead of the merger
 * (thread churn) do not slow each pick.
 */
#define PARK_SLOTS 1024
static struct seq_log **act;
static uint32_t nr_act, cap_act;
static struct seq_log *parked[PARK_SLOTS];

static uint32_t park_hash(uintptr_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 54) & (PARK_SLOTS - 1);
}

static void act_add(struct seq_log *l)
{
	if (nr_act == cap_act) {
		uint32_t cap = cap_act ? 2 * cap_act : 64;
		struct seq_log **a = mon_realloc(act, cap * sizeof(*a));

		if (!a) {
			mon_log("ordered simulation: out of memory; thread %u's accesses are lost",
				l->t->id);
			l->state = ST_DONE;
			return;
		}
		act = a;
		cap_act = cap;
	}
	act[nr_act++] = l;
}

static void log_free(struct seq_log *l)
{
	munmap(l, SEQ_MAP_BYTES);
}

/* A new log: to act[] when its thread may start, else parked. */
static void adopt(struct seq_log *l)
{
	if (try_resume(l) || mon_seq.force) {
		l->state = ST_RUN;
		act_add(l);
		return;
	}
	uint32_t h = park_hash(l->wait_key);
	l->next = parked[h];
	parked[h] = l;
}

/* Takes the inbox: the logs threads published since the last round. */
static void adopt_inbox(void)
{
	struct seq_log *l, *next;

	if (!__atomic_load_n(&mon_seq.logs, __ATOMIC_RELAXED))
		return;		/* a load, not a locked exchange, every round */
	l = __atomic_exchange_n(&mon_seq.logs, NULL, __ATOMIC_ACQ_REL);
	for (; l; l = next) {
		next = l->next;
		adopt(l);
	}
}

/* The creation of key's thread was merged: start the logs parked on it
 * (all of them when draining: key 0). */
static void unpark(uintptr_t key)
{
	for (uint32_t h = key ? park_hash(key) : 0; h < PARK_SLOTS; h++) {
		struct seq_log **pp = &parked[h], *l;

		while ((l = *pp)) {
			if (!key || l->wait_key == key) {
				*pp = l->next;
				if (!try_resume(l))
					l->state = ST_RUN;	/* draining */
				act_add(l);
			} else {
				pp = &l->next;
			}
		}
		if (key)
			break;
	}
}

/* Whether thread id's log is known to the merger (running, or parked). */
static int log_known(uint32_t id)
{
	for (uint32_t i = 0; i < nr_act; i++)
		if (act[i]->t->id == id)
			return 1;
	for (const struct seq_log *l = parked[park_hash((uintptr_t)id + 1)]; l; l = l->next)
		if (l->t->id == id)
			return 1;
	return 0;
}

/* A wait of this kind (SEQ_AWAIT_*) begins: nothing is merged from clock
 * on until it ends (await_done) */
static void await_begin(int kind, uint64_t clock)
{
	mon_seq.awaiting = kind;
	mon_seq.await_clock = clock;
	mon_seq.await_since_ms = 0;
}

/* The creation of id's thread, at its creator's clock, was merged: unless
 * its log is known, nothing is merged from that clock on until it is
 * (await_done). Had the log come a moment later, the thread would have
 * started behind what the others merged meanwhile: how far behind, the
 * host's timing. */
static void await_log(uint32_t id, uint64_t clock)
{
	if (mon_seq.force || log_known(id))
		return;
	mon_seq.await_id = id;
	await_begin(SEQ_AWAIT_LOG, clock);
	mon_seq.nr_await++;
}

/* A log blocked on key that the others should wait for: its thread's wake
 * not logged yet, or logged and resumable, the next round resuming it
 * (one whose UNBLOCK awaits releases not merged yet - its thread woke
 * late, after a later round's arrivals - waits for those, as before) */
static int waiter_pending(uintptr_t key)
{
	for (uint32_t i = 0; i < nr_act; i++) {
		struct seq_log *l = act[i];

		if (l->state == ST_BLOCKED && l->block_key == key &&
		    (!log_pending(l) || blocked_may_resume(l)))
			return 1;
	}
	return 0;
}

/*
 * A release merged at clock that wakes every thread blocked on key: a
 * thread's end, which its joiners wait for, or the end of a barrier's
 * round (round_ends, at the BLOCK of its last arrival). A woken thread
 * resumes at the release's clock once its UNBLOCK is merged, but until
 * its thread has logged it (the host wakes it some microseconds later) it
 * holds nobody back, and the others would merge on past that clock for
 * as long as the wake takes: host timing in the counts. So nothing is
 * merged from that clock on until every such thread has logged and
 * resumed (await_done). Each does wake: every arrival of the round, or
 * the end, happened on the host before its entry was logged, and a
 * blocked thread's log has room for its UNBLOCK, so its wake needs
 * nothing from the merger.
 */
static void await_waiters(uintptr_t key, uint64_t clock)
{
	/* not while sampled mode pauses between bursts (the threads run
	 * natively, and a wait begun then would outlast the pause) or exit
	 * drains, nor over a new thread's wait */
	if (mon_seq.force || mon_seq.awaiting || __atomic_load_n(&mon_seq.paused, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&mon_seq.drain, __ATOMIC_ACQUIRE) || !waiter_pending(key))
		return;
	mon_seq.await_key = key;
	await_begin(SEQ_AWAIT_WAKE, clock);
	mon_seq.nr_await_wake++;
}

/* Whether the wait of await_log or await_waiters is over: the log came
 * (adopted), the woken have logged and resumed, or SEQ_STALL_WALL_MS went
 * by (a thread that never logs). */
static int await_done(void)
{
	uint64_t now;

	adopt_inbox();
	if (mon_seq.force ||
	    (mon_seq.awaiting == SEQ_AWAIT_LOG ? log_known(mon_seq.await_id)
					       : !waiter_pending(mon_seq.await_key))) {
		mon_seq.awaiting = SEQ_AWAIT_NONE;
		return 1;
	}
	now = mono_ms();
	if (!mon_seq.await_since_ms) {
		mon_seq.await_since_ms = now;
	} else if (now - mon_seq.await_since_ms > SEQ_STALL_WALL_MS) {
		mon_seq.awaiting = SEQ_AWAIT_NONE;
		mon_seq.nr_await_late++;
		return 1;
	}
	return 0;
}

/* Removes the ended logs from act[] and frees them, once their threads are
 * gone from them too (log_commit reads the log after publishing the end:
 * unmapped, a SIGSEGV in the program, ~1 run in 10 of thread churn under
 * load). Returns the ended logs it kept (the next round reaps them). */
static uint64_t reap(void)
{
	uint64_t kept = 0;

	for (uint32_t i = 0; i < nr_act;) {
		if (act[i]->state != ST_DONE) {
			i++;
		} else if (!__atomic_load_n(&act[i]->gone, __ATOMIC_ACQUIRE)) {
			kept++;
			i++;
		} else {
			log_free(act[i]);
			act[i] = act[--nr_act];
		}
	}
	return kept;
}


/* The merger waits (200 us at most) for l's thread to log: a few spins (a
 * running thread logs again within microseconds), then asleep until
 * log_commit wakes it. A wake lost to the race of the flag costs the
 * timeout. */
static void wait_for_log(struct seq_log *l)
{
	struct timespec ts = { 0, 200000 };
	uint64_t h;

	for (int i = 0; i < 256; i++) {
		if (__atomic_load_n(&l->head, __ATOMIC_ACQUIRE) != l->tail)
			return;
		cpu_relax();
	}
	__atomic_store_n(&l->merger_waits, 1, __ATOMIC_SEQ_CST);
	h = __atomic_load_n(&l->head, __ATOMIC_SEQ_CST);
	if (h == l->tail)
		syscall(SYS_futex, head_word(l), FUTEX_WAIT_PRIVATE, (uint32_t)h, &ts, NULL, 0);
	__atomic_store_n(&l->merger_waits, 0, __ATOMIC_RELEASE);
}

/* The merger's pick, one candidate at a time: of best (NULL: none yet) and
 * l, the smaller clock (ties: the lower thread id); second becomes the
 * smallest clock of the others seen. */
static inline struct seq_log *pick(struct seq_log *best, struct seq_log *l, uint64_t *second)
{
	if (!best || l->clock < best->clock || (l->clock == best->clock && l->id < best->id)) {
		if (best && best->clock < *second)
			*second = best->clock;
		return l;
	}
	if (l->clock < *second)
		*second = l->clock;
	return best;
}

/* One round: resume what may resume, then merge the running log with the
 * smallest clock. Returns 1 if it merged something. */
static int merge_round(int draining, int paused)
{
	struct seq_log *best = NULL, *l;
	uint64_t second = UINT64_MAX;
	int progress = 0;

	if (!paused)
		mon_seq.cut = 0;
	if (!paused && mon_seq.uncut) {
		/* a burst begins: the threads the cut left out run again and
		 * hold the others back until they log. Left out until then, a
		 * thread the host had not scheduled yet let the others run
		 * alone for a time slice: fs_loop's 4 ms bursts saw 59% of
		 * the exact run's false-sharing misses per access */
		uint64_t now = mon_mono_ns();

		for (uint32_t i = 0; i < nr_act; i++) {
			l = act[i];
			if (l->cut_idle && l->state == ST_IDLE) {
				if (mon_seq.frontier > l->clock)
					l->clock = mon_seq.frontier;
				l->state = ST_RUN;
				l->resume_ns = now;
			}
			l->cut_idle = 0;
		}
		mon_seq.uncut = 0;
	}

	for (uint32_t i = 0; i < nr_act; i++) {
		l = act[i];
		if (l->state == ST_DONE)
			continue;
		if (l->state == ST_NEW || l->state == ST_BLOCKED)
			progress |= try_resume(l);
		if (l->state == ST_IDLE) {
			if (!log_pending(l))
				continue;
			if (mon_seq.frontier > l->clock) {
				mon_seq.idle_skip += mon_seq.frontier - l->clock;
				l->clock = mon_seq.frontier;
			}
			l->state = ST_RUN;
		}
		if (l->state != ST_RUN)
			continue;
		/* draining: an empty log holds nobody back */
		if ((draining || paused) && !log_pending(l)) {
			/* sampled mode between bursts: the burst ends where the
			 * first running thread's log does (the cut): what the
			 * others logged beyond it would be simulated alone, with
			 * nobody to contend with, and is dropped; every thread
			 * resumes at the frontier, as they all ran natively
			 * meanwhile */
			if (paused) {
				mon_seq.cut = 1;
				l->state = ST_IDLE;
				l->cut_idle = 1;
				mon_seq.uncut = 1;
			}
			continue;
		}
		best = pick(best, l, &second);
	}
	if (!best)
		return progress;
	if (mon_seq.awaiting && !paused && !draining && !await_done()) {
		/* a new thread's log is awaited (await_log), or the woken's
		 * wakes (await_waiters): up to the clock they start at */
		if (best->clock >= mon_seq.await_clock) {
			nap(SEQ_SLEEP_NS);
			return progress;
		}
		if (second > mon_seq.await_clock - 1)
			second = mon_seq.await_clock - 1;
	}
	if (!log_pending(best)) {
		/* the slowest running thread has logged nothing new: wait for
		 * it, unless the OS says it sleeps (blocked where no interposer
		 * sees it), or it ran SEQ_STALL_MS of CPU time without logging
		 * (a spin in uninstrumented code, which may wait for a thread
		 * that waits for the merger), or logged nothing for
		 * SEQ_STALL_WALL_MS; then it holds nobody back until it logs
		 * again. Time it spent preempted does not count: on a loaded
		 * host that would make the result depend on the host. */
		uint64_t now = mono_ms();

		if (best->resume_ns &&
		    mon_mono_ns() - best->resume_ns >
			    __atomic_load_n(&mon_seq.resume_hold_ns, __ATOMIC_RELAXED)) {
			/* not scheduled since the burst began (a busy host):
			 * the others go on without it, or the burst simulates
			 * nothing; it rejoins at the frontier when it logs */
			best->resume_ns = 0;
			best->state = ST_IDLE;
			best->empty_since_ms = 0;
			return progress;
		}
		if (!best->empty_since_ms) {
			best->empty_since_ms = now;
			best->empty_cpu_ms = mon_tid_cpu_ms(best->t->tid);
			best->os_check_ms = 0;
		}
		if (__atomic_load_n(&best->room_wait, __ATOMIC_ACQUIRE)) {
			/* asleep waiting for room the merger just made: all of it */
			room_wake(best);
			nap(SEQ_SLEEP_NS);
			return progress;
		}
		/* the OS is asked once per tick of the coarse clock (1-4 ms);
		 * in between the merger sleeps until the thread logs */
		if (best->os_check_ms && now == best->os_check_ms) {
			wait_for_log(best);
			return 1;
		}
		best->os_check_ms = now;
		if (os_sleeping(best->t->tid)) {
			nap(SEQ_SLEEP_NS);
			if (!log_pending(best) &&
			    os_sleeping(best->t->tid)) {
				best->state = ST_IDLE;
				mon_seq.nr_sleeps++;
			}
		} else if (mon_tid_cpu_ms(best->t->tid) - best->empty_cpu_ms > SEQ_STALL_MS ||
			   now - best->empty_since_ms > SEQ_STALL_WALL_MS) {
			best->state = ST_IDLE;
			mon_seq.nr_stalls++;
		}
		if (best->state == ST_IDLE) {
			best->empty_since_ms = 0;
			return progress;
		}
		wait_for_log(best);
		return 1;
	}
	best->empty_since_ms = 0;
	best->resume_ns = 0;
	if (best->clock > mon_seq.frontier)
		mon_seq.frontier = best->clock;
	merge_run(best, mon_seq.cut ? UINT64_MAX : second, mon_seq.cut);
	return 1;
}

/* Something besides merging needs the merger: a new log, exit's drain, an
 * MRI request (its sync), sampled mode's pause. */
static inline int merger_called(uint64_t sync_seen)
{
	return __atomic_load_n(&mon_seq.logs, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&mon_seq.drain, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&mon_seq.sync_req, __ATOMIC_RELAXED) != sync_seen ||
	       __atomic_load_n(&mon_seq.paused, __ATOMIC_RELAXED);
}

/*
 * merge_running's order of the running logs: a binary heap by clock, then
 * thread id (pick's order), with each log's clock and id copied in, so a
 * turn compares copies in one array instead of reading every log's header
 * (each in a mapping of its own): with 64 threads a linear pick read 64
 * headers a turn. Only the turn's log changes its clock, so a turn ends
 * with one sift down. The blocked logs, tested each turn, are listed apart.
 * merge_duel and merge_many keep each log's clock and position in a
 * run_ent over their turns (merge_duel in two of its own).
 */
struct run_ent {
	uint64_t clock;			/* the log's clock, kept here over the turns */
	uint32_t id;			/* l->id */
	uint64_t tl;			/* merge_duel, merge_many: its merged position */
	void *core;			/* merge_duel, merge_many: l->core */
	struct seq_log *l;
};
static struct run_ent *heap;
static struct seq_log **blk;
static uint32_t nr_heap, nr_blk, cap_heap;

/* pick's order, without branches: a sift's comparisons go either way at
 * random, and mispredicted they were most of heap_down's time */
static inline int run_before(const struct run_ent *a, const struct run_ent *b)
{
	return (a->clock < b->clock) | ((a->clock == b->clock) & (a->id < b->id));
}

static void heap_down(uint32_t i)
{
	struct run_ent x = heap[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= nr_heap)
			break;
		if (c + 1 < nr_heap)
			c += (uint32_t)run_before(&heap[c + 1], &heap[c]);
		if (!run_before(&heap[c], &x))
			break;
		heap[i] = heap[c];
		i = c;
	}
	heap[i] = x;
}

/* The smallest clock of the running logs but the root's: one of the
 * root's two children (UINT64_MAX when the root runs alone) */
static inline uint64_t heap_second(void)
{
	uint64_t second = nr_heap > 1 ? heap[1].clock : UINT64_MAX;

	if (nr_heap > 2 && heap[2].clock < second)
		second = heap[2].clock;
	return second;
}

/* Whether a blocked log of the heap's list may resume (merge_round then
 * resumes it) */
static inline int heap_blocked_may_resume(void)
{
	for (uint32_t i = 0; i < nr_blk; i++)
		if (blocked_may_resume(blk[i]))
			return 1;
	return 0;
}

/* A turn of log l begins at clock: its wait for entries over, the
 * frontier moved up to it */
static inline void turn_begin(struct seq_log *l, uint64_t clock)
{
	l->empty_since_ms = 0;
	l->resume_ns = 0;
	if (clock > mon_seq.frontier)
		mon_seq.frontier = clock;
}

/* The heap of act[]'s running logs and the list of its blocked ones; 0 if
 * none runs or memory is short (merge_round then picks as before). */
static int run_heap_build(uint32_t n)
{
	if (n > cap_heap) {
		uint32_t cap = n < 64 ? 64 : 2 * n;
		struct run_ent *h = mon_realloc(heap, cap * sizeof(*h));
		struct seq_log **b;

		if (!h)
			return 0;
		heap = h;
		if (!(b = mon_realloc(blk, cap * sizeof(*b))))
			return 0;
		blk = b;
		cap_heap = cap;
	}
	nr_heap = nr_blk = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct seq_log *l = act[i];

		if (l->state == ST_RUN)
			heap[nr_heap++] = (struct run_ent){ l->clock, l->id, l->tail, l->core, l };
		else
			blk[nr_blk++] = l;
	}
	for (uint32_t i = nr_heap / 2; i-- > 0;)
		heap_down(i);
	return nr_heap > 0;
}

/* The turn's run of merge_duel and merge_many: cur's entries while its
 * clock stays within limit (merge_run with merge_plain's loop, the clock
 * and position in cur), then the log's clock and tail published. Returns 1
 * if an entry ended the run (merge_entry). */
static inline __attribute__((always_inline)) int side_run(struct run_ent *cur, uint64_t limit,
							  uint64_t *plain, uint64_t *hits)
{
	const struct seq_ent *ring = cur->l->mring, *e;
	uint64_t stop, k;
	int ended = 0;

	stop = cur->l->head_seen - cur->tl > SEQ_BATCH ? cur->tl + SEQ_BATCH : cur->l->head_seen;
	while (cur->tl != stop && cur->clock <= limit) {
		e = &ring[cur->tl & (SEQ_RING - 1)];
		if (e->kind == SEQ_PLAIN &&
		    (k = run_hits(cur->core, ring, cur->tl, stop, &cur->clock, limit))) {
			*hits += k;
			*plain += k;
			cur->tl += k;
			if (cur->tl == stop || cur->clock > limit)
				break;
			e = &ring[cur->tl & (SEQ_RING - 1)];
		}
		if (e->kind == SEQ_PLAIN) {	/* not a hit: the general path */
			cur->clock += mon_sim_seq_access(cur->l->t, cur->core, e->obj_idx, e->addr,
							 e->wfs, e->v);
			(*plain)++;
		} else {
			cur->l->clock = cur->clock;
			ended = merge_entry(cur->l, e, 0);
			cur->clock = cur->l->clock;
		}
		cur->tl++;
		if (ended)
			break;
	}
	cur->l->clock = cur->clock;
	run_end(cur->l, cur->tl);
	return ended;
}

/* Whether merge_duel or merge_many must hand back to merge_round after a
 * turn: an entry ended the run, a log came or went, a wait began, the
 * merger is called, something got armed. */
static inline int turns_over(int ended, uint32_t n, uint64_t sync_seen)
{
	return ended || nr_act != n || mon_seq.awaiting || merger_called(sync_seen) ||
	       __atomic_load_n(&mon_cond_armed, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&mon_sample_armed, __ATOMIC_RELAXED);
}

/*
 * merge_running's turns while two logs run (a and b; any others blocked),
 * in direct mode: the same picks, limits and runs as its loop with
 * merge_run and merge_plain, but without their calls and set-ups at each
 * turn - two threads in step take turns every ~6 entries (jacobi_2t),
 * and those cost more than the turn's hits. Back to
 * merge_running (returns with the logs as merge_run leaves them) at an
 * entry that ends a run (a block, an end, an awaited creation), when a
 * log's entries run out or a blocked log may resume, when the merger is
 * called or something gets armed. Returns 1 if it merged anything.
 */
static int merge_duel(struct seq_log *a, struct seq_log *b, uint64_t sync_seen)
{
	struct run_ent d[2] = { { .l = a, .core = a->core, .tl = a->tail, .clock = a->clock },
				  { .l = b, .core = b->core, .tl = b->tail, .clock = b->clock } };
	struct run_ent *cur, *oth;
	const uint32_t n = nr_act;
	uint64_t plain = 0, hits = 0;
	int merged = 0;

	if (!d[0].core || !d[1].core)
		return 0;
	for (uint32_t turn = 0; turn < SEQ_TURNS; turn++) {
		int ended;

		/* pick: the smaller clock, ties the lower id */
		cur = d[1].clock < d[0].clock || (d[1].clock == d[0].clock && b->id < a->id) ? &d[1] : &d[0];
		oth = cur == &d[0] ? &d[1] : &d[0];
		for (uint32_t i = 0; i < n; i++)
			if (act[i]->state != ST_RUN && blocked_may_resume(act[i]))
				goto out;	/* merge_round resumes it */
		if (!log_pending(cur->l))
			break;		/* merge_round waits for it */
		turn_begin(cur->l, cur->clock);
		merged = 1;
		ended = side_run(cur, oth->clock, &plain, &hits);
		if (turns_over(ended, n, sync_seen))
			break;
	}
out:
	mon_seq.nr_plain += plain;
	mon_seq.nr_mf += hits;
	return merged;
}

/*
 * merge_duel's turns for three or more running logs: the heap's root
 * runs up to the smallest clock of the others (one of the root's two
 * children), then sinks. Same picks, limits and runs as merge_running's
 * loop with merge_run; its conditions are merge_duel's. Returns 1 if it
 * merged anything.
 */
static int merge_many(uint64_t sync_seen)
{
	const uint32_t n = nr_act;
	uint64_t plain = 0, hits = 0;
	int merged = 0;

	for (uint32_t i = 0; i < nr_heap; i++)
		if (!heap[i].core)
			return 0;
	for (uint32_t turn = 0; turn < SEQ_TURNS; turn++) {
		struct run_ent *cur = &heap[0];
		int ended;

		if (heap_blocked_may_resume())
			break;		/* merge_round resumes it */
		if (!log_pending(cur->l))
			break;		/* merge_round waits for it */
		turn_begin(cur->l, cur->clock);
		merged = 1;
		ended = side_run(cur, heap_second(), &plain, &hits);
		if (cur->l->state != ST_RUN || turns_over(ended, n, sync_seen))
			break;
		heap_down(0);
		/* the next turns' picks are among the root and its children:
		 * their next entries, written long ago or on the other CPU,
		 * are on their way while the root runs */
		for (uint32_t i = 1; i < 3 && i < nr_heap; i++)
			__builtin_prefetch(&heap[i].l->mring[heap[i].tl & (SEQ_RING - 1)]);
	}
	mon_seq.nr_plain += plain;
	mon_seq.nr_mf += hits;
	return merged;
}

/*
 * merge_round's common case in a loop of its own: every live log runs or
 * is blocked, and nothing else needs the merger. Each turn picks the
 * smallest clock of the running logs (ties: the lower id) and merges it up
 * to the next smallest, as merge_round does, without its checks of states,
 * waits and drains: two threads in step take turns every entry or two,
 * and those checks cost more than the turn (dense_2t: ~70 instructions per
 * access). A blocked log (a main thread in pthread_join, a worker at a
 * barrier) is passed over while its wait lasts, as merge_round's
 * try_resume passes it over. Back to merge_round when a blocked log may
 * resume, the smallest has nothing logged, a log stops running, a thread
 * starts, or merger_called. Returns 1 if it merged anything.
 */
static int merge_running(uint64_t sync_seen)
{
	const uint32_t n = nr_act;
	struct seq_log *run[2];
	uint32_t nr_run = 0;
	int merged = 0, direct;

	if (n < 2 || mon_seq.cut || mon_seq.uncut || mon_seq.nr_done || mon_seq.awaiting)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		if (act[i]->state == ST_RUN) {
			if (nr_run < 2)
				run[nr_run] = act[i];
			nr_run++;
		} else if (act[i]->state != ST_BLOCKED) {
			return 0;
		}
	}
	/* the loops without merge_run's calls: direct mode, nothing armed */
	direct = mon_seq.direct && !__atomic_load_n(&mon_cond_armed, __ATOMIC_RELAXED) &&
		 !__atomic_load_n(&mon_sample_armed, __ATOMIC_RELAXED);
	if (nr_run == 2 && direct && (merged = merge_duel(run[0], run[1], sync_seen)))
		return merged;
	if (!run_heap_build(n))
		return merged;
	if (nr_run > 2 && direct && (merged = merge_many(sync_seen)))
		return merged;
	for (uint32_t turn = 0; turn < SEQ_TURNS; turn++) {
		struct seq_log *best = heap[0].l;

		if (heap_blocked_may_resume())
			break;		/* merge_round resumes it */
		if (!log_pending(best))
			break;		/* merge_round waits for it */
		turn_begin(best, best->clock);
		merge_run(best, heap_second(), 0);
		merged = 1;
		if (best->state != ST_RUN || nr_act != n || mon_seq.awaiting || merger_called(sync_seen))
			break;
		heap[0].clock = best->clock;
		heap_down(0);
	}
	return merged;
}

/* Every live log merged up to its mark (drain_head or sync_head). */
static int merged_up_to(int sync)
{
	for (uint32_t i = 0; i < nr_act; i++) {
		const struct seq_log *l = act[i];
		if (l->state != ST_DONE && l->tail < (sync ? l->sync_head : l->drain_head))
			return 0;
	}
	for (uint32_t h = 0; h < PARK_SLOTS; h++)
		for (const struct seq_log *l = parked[h]; l; l = l->next)
			if (l->tail < (sync ? l->sync_head : l->drain_head))
				return 0;
	return 1;
}

/* Marks every live log's current head (drain_head or sync_head). */
static void mark_heads(int sync)
{
	adopt_inbox();
	for (uint32_t i = 0; i < nr_act; i++) {
		struct seq_log *l = act[i];
		uint64_t h = __atomic_load_n(&l->head, __ATOMIC_ACQUIRE);
		if (sync)
			l->sync_head = h;
		else
			l->drain_head = h;
	}
	for (uint32_t k = 0; k < PARK_SLOTS; k++)
		for (struct seq_log *l = parked[k]; l; l = l->next) {
			uint64_t h = __atomic_load_n(&l->head, __ATOMIC_ACQUIRE);
			if (sync)
				l->sync_head = h;
			else
				l->drain_head = h;
		}
}

void *mon_seq_merger_main(void *arg)
{
	uint32_t idle = 0;
	int snapped = 0;
	uint64_t sync_seen = 0;

	(void)arg;
	mon_self = &mon_seq_merger_self;
	for (;;) {
		int draining = __atomic_load_n(&mon_seq.drain, __ATOMIC_ACQUIRE);
		uint64_t req = __atomic_load_n(&mon_seq.sync_req, __ATOMIC_ACQUIRE);

		adopt_inbox();
		if (draining && !snapped) {
			mark_heads(0);	/* what was logged when exit began */
			snapped = 1;
		}
		if (req != sync_seen) {
			mark_heads(1);
			sync_seen = req;
		}
		if (mon_seq.debug_dump) {
			mon_seq.debug_dump = 0;
			mon_log("seq: nr_act %u frontier %llu", nr_act, (unsigned long long)mon_seq.frontier);
			for (uint32_t i = 0; i < nr_act; i++)
				if (act[i]->tail < act[i]->sync_head || act[i]->clock <= mon_seq.frontier + 100)
					mon_log("seq: act id %u state %d clock %llu tail %llu sync_head %llu head %llu kind %d",
						act[i]->t->id, act[i]->state, (unsigned long long)act[i]->clock,
						(unsigned long long)act[i]->tail, (unsigned long long)act[i]->sync_head,
						(unsigned long long)act[i]->head, act[i]->mring[act[i]->tail & (SEQ_RING - 1)].kind);
			for (uint32_t h = 0; h < PARK_SLOTS; h++)
				for (struct seq_log *l = parked[h]; l; l = l->next)
					if (l->tail < l->sync_head)
						mon_log("seq: parked id %u wait %lu tail %llu sync_head %llu", l->t->id,
							(unsigned long)l->wait_key, (unsigned long long)l->tail,
							(unsigned long long)l->sync_head);
		}
		if (__atomic_load_n(&mon_seq.sync_done, __ATOMIC_ACQUIRE) != sync_seen && merged_up_to(1))
			__atomic_store_n(&mon_seq.sync_done, sync_seen, __ATOMIC_RELEASE);
		if (mon_seq.nr_done)
			mon_seq.nr_done = reap();
		if (!draining && __atomic_load_n(&mon_seq.sync_done, __ATOMIC_RELAXED) == sync_seen &&
		    !merger_called(sync_seen) && merge_running(sync_seen)) {
			idle = 0;
			continue;
		}
		/* paused: nothing more comes until the next burst, so an empty
		 * log holds nobody back, as in a drain */
		if (merge_round(draining, __atomic_load_n(&mon_seq.paused, __ATOMIC_ACQUIRE))) {
			idle = 0;
			if (!draining || !merged_up_to(0))
				continue;
		}
		if (draining) {
			if (!mon_seq.force && !merged_up_to(0)) {
				/* nothing can be merged but what waits (for its
				 * creation, a release) and what follows: the waits
				 * go, parked threads start. Not sooner: a joiner let
				 * go while the ending thread's release was still
				 * unmerged ran ahead of its last accesses, the
				 * counts then depending on how far the merger was
				 * when exit began */
				mon_seq.force = 1;
				unpark(0);
				continue;
			}
			/* nothing left that can be merged, or everything logged
			 * before exit began is merged: the drain is done */
			mon_seq.force = 0;
			snapped = 0;
			__atomic_store_n(&mon_seq.drain, 0, __ATOMIC_RELEASE);
			__atomic_add_fetch(&mon_seq.drained, 1, __ATOMIC_ACQ_REL);
			continue;
		}
		if (++idle < 64)
			cpu_relax();
		else
			nap(SEQ_SLEEP_NS);
	}
	return NULL;
}
