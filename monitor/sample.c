/*
 * sample.c - sample streams: every k-th event of a metric, delivered as
 * (address, thread, code address, metric).
 *
 * Notes:
 *  - Like a PMU's overflow counter, each thread counts down on its own; when
 *    the countdown reaches zero the access that crossed it becomes a sample
 *    and the countdown is reloaded. Prime periods avoid locking onto loop
 *    strides (Zagha et al.); a randomised period - uniform in
 *    [mean/2, 3*mean/2] from a per-thread xorshift generator - breaks any
 *    remaining correlation (Buck & Hollingsworth saw errors of 14.6 points
 *    with a round period on tomcatv).
 *  - Samples go into a per-thread single-producer / single-consumer ring; the
 *    one consumer is whoever drains (the MRI server). A full ring drops the
 *    sample and counts it as lost: the program never waits for the monitor.
 *  - A thread's first countdown under a stream starts at a random phase,
 *    uniform in [1, period], not at a whole period: then every event has the
 *    same chance 1/period of becoming a sample, also in a thread that lives
 *    for fewer events than a period. With a whole period first, such threads
 *    were never sampled (tests/workloads/thread_churn: 10,000 threads of
 *    ~30 misses each at a period of 10,007 gave no sample at all, and the
 *    sampling strategy saw nothing of the program). The phase comes from the
 *    thread's generator, so a run stays reproducible for a seed.
 *  - A sample carries the allocation site of the heap or mmap block it hit
 *    (site_id, 0 for other objects). The access path found the object
 *    already (the per-object counts need it), so this is a load and a store
 *    on the k-th event only; the agent attributes samples of blocks it has
 *    not listed yet (or that were freed since) to their site's bin by it.
 *  - State is allocated when a thread first has an event of the stream's
 *    metric; the ring (2048 samples of 32 bytes, 64 KiB) only when it first samples, so
 *    thousands of short threads that never sample cost a few bytes each.
 */
#include <pthread.h>
#include <string.h>

#include "mon.h"

#define RING_SIZE 2048u			/* samples per thread, power of two */
#define MAX_SAMPLES_PER_ACCESS 16	/* one access worth many events */

struct sample_tstate {
	uint64_t gen;
	int64_t countdown;
	uint64_t rng;
	uint32_t head;			/* written by the owner (atomic) */
	uint32_t tail;			/* written by the consumer (atomic) */
	uint64_t lost;			/* atomic */
	struct mon_sample *ring;	/* [RING_SIZE]; set once by the owner (atomic) */
};

static uint64_t sample_gen;		/* atomic */
static int sample_metric, sample_slot;
static uint64_t sample_period;
static int sample_random;
static uint64_t sample_seed;
static pthread_mutex_t sample_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static int64_t next_period(struct sample_tstate *ts)
{
	uint64_t p = __atomic_load_n(&sample_period, __ATOMIC_RELAXED);

	if (!sample_random || p < 2)
		return (int64_t)p;
	/* uniform in [p/2, p/2 + p] */
	return (int64_t)(p / 2 + xorshift(&ts->rng) % (p + 1));
}

int mon_sample_arm(int metric, uint64_t period, int random_mean, uint64_t seed)
{
	if (period == 0) {
		__atomic_store_n(&mon_sample_armed, 0, __ATOMIC_RELEASE);
		return 0;
	}
	if (metric < 0 || metric >= AMEBA_M_NR)
		return AMEBA_EINVAL;
	if (!mon_backend || mon_slot_of_metric[metric] < 0)
		return AMEBA_ENOTSUP;
	pthread_mutex_lock(&sample_lock);
	__atomic_store_n(&mon_sample_armed, 0, __ATOMIC_RELEASE);
	sample_metric = metric;
	sample_slot = mon_slot_of_metric[metric];
	sample_period = period;
	sample_random = random_mean != 0;
	sample_seed = seed;
	__atomic_store_n(&sample_gen, __atomic_load_n(&sample_gen, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
	__atomic_store_n(&mon_sample_armed, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&sample_lock);
	return 0;
}

static struct sample_tstate *sample_adopt(struct mon_thread *t, uint64_t gen)
{
	struct sample_tstate *ts = t->sample;

	if (!ts) {
		ts = mon_calloc(1, sizeof(*ts));
		if (!ts)
			return NULL;
		__atomic_store_n(&t->sample, ts, __ATOMIC_RELEASE);
	}
	ts->gen = gen;
	ts->rng = (sample_seed ^ (0x9e3779b97f4a7c15ull * (t->id + 1))) | 1;
	/* a random phase: see Notes */
	ts->countdown = 1 + (int64_t)(xorshift(&ts->rng) %
				      (__atomic_load_n(&sample_period, __ATOMIC_RELAXED) | 1));
	return ts;
}

void mon_sample_account(struct mon_thread *t, uintptr_t addr, uintptr_t pc,
			const struct mon_obj *obj, const struct mon_events *ev)
{
	struct sample_tstate *ts = t->sample;
	uint64_t gen = __atomic_load_n(&sample_gen, __ATOMIC_ACQUIRE);
	uint64_t n = 0;

	for (uint32_t e = 0; e < ev->nr; e++)
		if (ev->slot[e] == sample_slot)
			n = ev->n[e];
	if (!n)
		return;
	if (mon_unlikely(!ts || ts->gen != gen)) {
		ts = sample_adopt(t, gen);
		if (!ts)
			return;
	}
	ts->countdown -= (int64_t)n;
	for (int k = 0; ts->countdown <= 0 && k < MAX_SAMPLES_PER_ACCESS; k++) {
		uint32_t head = ts->head;
		uint32_t tail = __atomic_load_n(&ts->tail, __ATOMIC_ACQUIRE);

		if (mon_unlikely(!ts->ring)) {
			struct mon_sample *ring = mon_calloc(RING_SIZE, sizeof(*ring));

			if (ring)
				__atomic_store_n(&ts->ring, ring, __ATOMIC_RELEASE);
		}
		if (!ts->ring || head - tail >= RING_SIZE) {
			__atomic_fetch_add(&ts->lost, 1, __ATOMIC_RELAXED);
		} else {
			struct mon_sample *s = &ts->ring[head & (RING_SIZE - 1)];

			s->addr = addr;
			s->pc = pc;
			s->thread_id = t->id;
			s->metric = (uint16_t)sample_metric;
			s->weight = (uint16_t)(n > 0xffff ? 0xffff : n);
			s->site_id = obj && (obj->kind == MON_OBJ_HEAP ||
					     obj->kind == MON_OBJ_MMAP) ? obj->site_id : 0;
			__atomic_store_n(&ts->head, head + 1, __ATOMIC_RELEASE);
		}
		ts->countdown += next_period(ts);
	}
	if (ts->countdown <= 0)		/* a burst beyond the cap: resynchronise */
		ts->countdown = next_period(ts);
}

uint32_t mon_sample_drain(struct mon_sample *out, uint32_t max, uint64_t *lost)
{
	uint32_t nr_threads = mon_thread_nr(), got = 0;

	for (uint32_t id = 0; id < nr_threads && got < max; id++) {
		struct mon_thread *t = mon_thread_get(id);
		struct sample_tstate *ts;
		struct mon_sample *ring;
		uint32_t head, tail;

		if (!t || !(ts = __atomic_load_n(&t->sample, __ATOMIC_ACQUIRE)))
			continue;
		head = __atomic_load_n(&ts->head, __ATOMIC_ACQUIRE);
		ring = __atomic_load_n(&ts->ring, __ATOMIC_ACQUIRE);
		tail = ts->tail;
		while (ring && tail != head && got < max)
			out[got++] = ring[tail++ & (RING_SIZE - 1)];
		__atomic_store_n(&ts->tail, tail, __ATOMIC_RELEASE);
		if (lost) {
			*lost += __atomic_exchange_n(&ts->lost, 0, __ATOMIC_RELAXED);
		}
	}
	return got;
}

void mon_sample_after_fork(void)
{
	pthread_mutex_init(&sample_lock, NULL);
}
