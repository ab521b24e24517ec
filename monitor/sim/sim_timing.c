/*
 * sim_timing.c - the timing model (Notes in sim_timing.h): a run time for
 * the access stream of each simulated core.
 */
#include "sim_core.h"

#include <stdio.h>

/* Applies the window bound of every outstanding miss that access i is
 * `window` or more past, and frees the buffers of those and of the misses
 * complete by then; t_last/acc_last move to i. */
static void tm_settle(struct sim_tm *m, const struct mri_geom_tm *p, uint64_t i)
{
	uint64_t amc = p->access_mcycles;
	uint64_t t = m->t_last + (i - m->acc_last) * amc, next = UINT64_MAX;
	uint32_t k = 0;

	for (uint32_t j = 0; j < m->nr_out; j++) {
		const struct sim_tm_miss *o = &m->out[j];

		if (i >= o->idx + p->window) {
			uint64_t bound = o->done + (i - o->idx - p->window) * amc;
			if (bound > t)
				t = bound;
			continue;
		}
		m->out[k++] = *o;
	}
	/* the ones complete by now free their buffers */
	uint32_t n = k;
	k = 0;
	for (uint32_t j = 0; j < n; j++) {
		if (m->out[j].done <= t)
			continue;
		if (m->out[j].idx + p->window < next)
			next = m->out[j].idx + p->window;
		m->out[k++] = m->out[j];
	}
	m->nr_out = k;
	m->t_last = t;
	m->acc_last = i;
	m->rob_next = next;
}

/* The stream prefetcher's view of an L1 miss on `line`: 1 when a stream
 * had predicted it (two steps seen in its direction), and the stream
 * learns the miss either way. */
static int tm_stream(struct sim_tm *m, uint64_t line, uint32_t lines_per_page_shift)
{
	uint64_t page = (line >> lines_per_page_shift) + 1;
	struct sim_tm_stream *e = NULL, *victim = &m->stream[0];
	int hit = 0;

	for (int j = 0; j < SIM_TM_STREAMS; j++) {
		if (m->stream[j].page == page) {
			e = &m->stream[j];
			break;
		}
		if (m->stream[j].stamp < victim->stamp)
			victim = &m->stream[j];
	}
	if (!e) {
		*victim = (struct sim_tm_stream){ .page = page, .line = line };
		victim->stamp = ++m->stream_clock;
		return 0;
	}
	int32_t d = line == e->line + 1 ? 1 : line + 1 == e->line ? -1 : 0;
	if (d && d == e->dir) {
		hit = e->steps >= 2;
		e->steps++;
	} else if (d) {
		e->dir = d;
		e->steps = 1;
	} else if (line != e->line) {
		e->dir = 0;
		e->steps = 0;
	}
	e->line = line;
	e->stamp = ++m->stream_clock;
	return hit;
}

/* Times the access that just missed on core c (counted: its index is
 * nr_acc - 1). */
void sim_tm_miss(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
		 const struct mon_sim_events *ev)
{
	struct mon_sim *s = c->sim;
	const struct mri_geom_tm *p = &s->g.tm;
	struct sim_tm *m = &c->tm;
	uint64_t lat = ev->est_cycles, value = 0;
	int from_mem = ev->mem_local || ev->mem_remote;

	tm_settle(m, p, m->nr_acc - 1);
	uint64_t t = m->t_last;
	/* p = p->next: wait for the load that produced the address */
	for (uint32_t j = 0; j < m->nr_out; j++)
		if (m->out[j].value && addr - m->out[j].value < 4096) {
			if (m->out[j].done > t)
				t = m->out[j].done;
			m->nr_dependent++;
		}
	/* all miss buffers busy: wait for the first to free */
	while (m->nr_out >= p->mshrs) {
		uint32_t first = 0;
		for (uint32_t j = 1; j < m->nr_out; j++)
			if (m->out[j].done < m->out[first].done)
				first = j;
		if (m->out[first].done > t)
			t = m->out[first].done;
		m->out[first] = m->out[--m->nr_out];
		m->nr_mshr_full++;
	}
	if (ev->l1_miss && p->prefetch &&
	    tm_stream(m, addr >> s->l1_shift, s->tlb_shift > s->l1_shift &&
						      s->tlb_shift - s->l1_shift < 6
					      ? s->tlb_shift - s->l1_shift
					      : 12 - s->l1_shift) &&
	    ev->l2_miss && !ev->intervention && ev->coh == MON_SIM_COH_NONE) {
		uint32_t served = ev->mem_remote ? s->g.lat.mem_remote
				  : ev->mem_local ? s->g.lat.mem_local
						  : s->g.lat.llc_hit;
		if (lat >= served && served > s->g.lat.l2_hit) {
			lat = lat - served + s->g.lat.l2_hit;
			m->nr_prefetched++;
		}
	}
	uint64_t start = t;
	if (ev->tlb_miss && p->walkers) {
		/* the first free walker; the walk, then the rest of the access */
		uint32_t w = 0;
		for (uint32_t j = 1; j < p->walkers; j++)
			if (m->walker_free[j] < m->walker_free[w])
				w = j;
		if (m->walker_free[w] > start)
			start = m->walker_free[w];
		m->walker_free[w] = start + s->g.lat.tlb_miss * 1000ull;
	}
	uint64_t done = start + lat * 1000;
	if (from_mem && p->mem_line_cycles) {
		uint64_t slot = (m->bus_free > t ? m->bus_free : t) + p->mem_line_cycles * 1000ull;
		m->bus_free = slot;
		if (done < slot)
			done = slot;
	}
	if (!is_write && size == 8 && m->value_at != UINTPTR_MAX &&
	    __atomic_load_n(&s->tm_values, __ATOMIC_RELAXED))
		__builtin_memcpy(&value, (const void *)(m->value_at ? m->value_at : addr), 8);
	/* A line taken from another core (an intervention, an invalidation, a
	 * coherence miss) is waited for: the cache model hands it over at
	 * once, and a core that ran on past it would keep the line from the
	 * other cores for a window of hits that in time it could not have
	 * made (contending cores then alternate access by access, as the
	 * latency clocks had them do). */
	if (ev->intervention || ev->inval_sent || ev->coh != MON_SIM_COH_NONE) {
		m->t_last = done;
		m->acc_last = m->nr_acc;
		return;
	}
	/* this access issues at t: the ones after it follow at the issue rate */
	m->t_last = t;
	m->acc_last = m->nr_acc - 1;
	m->out[m->nr_out++] = (struct sim_tm_miss){ .idx = m->nr_acc - 1, .done = done,
						    .value = value };
	if (m->out[m->nr_out - 1].idx + p->window < m->rob_next)
		m->rob_next = m->out[m->nr_out - 1].idx + p->window;
}

uint64_t mon_sim_core_now(struct mon_sim_core *c)
{
	const struct mri_geom_tm *p = &c->sim->g.tm;
	struct sim_tm *m = &c->tm;

	if (!p->on)
		return 0;
	if (m->nr_acc >= m->rob_next)
		tm_settle(m, p, m->nr_acc);
	return (m->t_last + (m->nr_acc - m->acc_last) * p->access_mcycles) / 1000;
}

uint64_t mon_sim_core_end(const struct mon_sim_core *c)
{
	const struct mri_geom_tm *p = &c->sim->g.tm;
	const struct sim_tm *m = &c->tm;
	uint64_t i = m->nr_acc, t = m->t_last + (i - m->acc_last) * p->access_mcycles;

	if (!p->on)
		return 0;

	for (uint32_t j = 0; j < m->nr_out; j++) {
		const struct sim_tm_miss *o = &m->out[j];
		uint64_t bound = i >= o->idx + p->window
					 ? o->done + (i - o->idx - p->window) * p->access_mcycles
					 : o->done;
		if (bound > t)
			t = bound;
	}
	return t / 1000;
}

uint64_t mon_sim_runtime(struct mon_sim *s)
{
	uint64_t best = 0;

	for (uint32_t id = 0; id < MON_SIM_MAX_CORES; id++) {
		const struct mon_sim_core *c = sim_core_at(s, id);
		uint64_t t = c ? mon_sim_core_end(c) : 0;
		if (t > best)
			best = t;
	}
	return best;
}

void mon_sim_set_values(struct mon_sim *s, int on)
{
	__atomic_store_n(&s->tm_values, on, __ATOMIC_RELAXED);
}

void mon_sim_core_tm_retime(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
			    uint32_t old_cycles, const struct mon_sim_events *fixed)
{
	const struct mon_sim *s = c->sim;
	struct sim_tm *m = &c->tm;
	int64_t d = (int64_t)fixed->est_cycles - (int64_t)old_cycles;
	uint64_t idx = m->nr_acc - 1;

	if (!s->g.tm.on || !d || !m->nr_acc)
		return;
	for (uint32_t j = 0; j < m->nr_out; j++) {
		struct sim_tm_miss *o = &m->out[j];
		if (o->idx != idx)
			continue;
		if (fixed->est_cycles <= s->g.lat.l1_hit) {
			*o = m->out[--m->nr_out];	/* a hit now */
			return;
		}
		int64_t done = (int64_t)o->done + d * 1000;
		o->done = done > (int64_t)m->t_last ? (uint64_t)done : m->t_last;
		return;
	}
	/* it was timed as a hit: time it as the miss it now is */
	if (fixed->est_cycles > s->g.lat.l1_hit)
		sim_tm_miss(c, addr, size, is_write, fixed);
}

void mon_sim_core_tm_drop(struct mon_sim_core *c)
{
	struct sim_tm *m = &c->tm;

	if (!c->sim->g.tm.on || !m->nr_acc)
		return;
	for (uint32_t j = 0; j < m->nr_out; j++)
		if (m->out[j].idx == m->nr_acc - 1)
			return;		/* a miss: it stays */
	if (m->acc_last == m->nr_acc)
		return;		/* the clock already stands after it */
	m->nr_acc--;
}

void mon_sim_core_tm_hold(struct mon_sim_core *c, int hold)
{
	if (hold)
		c->tm_held = c->tm;
	else
		c->tm = c->tm_held;
}

void mon_sim_log_timing(struct mon_sim *s)
{
	for (uint32_t id = 0; id < MON_SIM_MAX_CORES; id++) {
		const struct mon_sim_core *c = sim_core_at(s, id);
		if (!c || !c->tm.nr_acc)
			continue;
		fprintf(stderr,
			"ameba: sim timing: core %u: %llu accesses, %llu cycles; misses prefetched %llu, "
			"waiting on a load's value %llu, on a miss buffer %llu\n",
			id, (unsigned long long)c->tm.nr_acc, (unsigned long long)mon_sim_core_end(c),
			(unsigned long long)c->tm.nr_prefetched, (unsigned long long)c->tm.nr_dependent,
			(unsigned long long)c->tm.nr_mshr_full);
	}
}

void mon_sim_core_tm_value_at(struct mon_sim_core *c, uintptr_t real)
{
	c->tm.value_at = real;
}

void mon_sim_core_tm_account(struct mon_sim_core *c, uintptr_t addr, uint32_t size, int is_write,
			     const struct mon_sim_events *ev)
{
	c->tm.nr_acc++;
	if (c->sim->g.tm.on && ev->est_cycles > c->sim->g.lat.l1_hit)
		sim_tm_miss(c, addr, size, is_write, ev);
}
