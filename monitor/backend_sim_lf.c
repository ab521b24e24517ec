/*
 * backend_sim_lf.c - the sim backend's side of the line filter
 * (monitor/sim/sim.h struct mon_sim_lf, docs/simulator.md "The line
 * filter"): the thread's filter, and when it rests. backend_sim.c installs
 * it (sim_thread_start), the hooks take its hits (backend_sim.h,
 * mon_sim_lf_hit).
 */
#include "mon.h"
#include "sim/sim_core.h"
#include "backend_sim.h"

__thread struct mon_sim_lf *mon_sim_lf __attribute__((tls_model("initial-exec")));

/*
 * The filter's rest (docs/simulator.md, "The line filter"): a lookup that
 * fails costs the hooks ~10 instructions and each access the simulator
 * takes ~15 more to write its entry; a hit saves ~60 against the line
 * entry. Miss-heavy code (stream, chase; rmw, whose hits are writes to E
 * lines) took ~25 instructions more per access with it always on, and
 * hashtab (a hit per two entries) ~20. So every LF_WINDOW lean misses the
 * owner looks: fewer than 3 hits per 4 entries written (gemm takes ~0.8,
 * jacobi ~7) and the filter rests (off, no entries written) for the next
 * rest's misses, twice as many after each window that rests again (up to
 * LF_REST_MAX); then it comes back, its entries forgotten, unless the
 * batch is on (the filter waits for the batch to rest: the hooks consult
 * it only while nothing is diverted).
 */
#define LF_REST_MAX (1u << 20)
void mon_sim_lf_look(struct mon_thread *t, struct mon_sim_core *c)
{
	struct mon_sim_lf *f = &c->lf;
	int on = __atomic_load_n(&f->on, __ATOMIC_RELAXED);

	if (!__atomic_load_n(&f->user, __ATOMIC_RELAXED) || t != mon_self || !c->solo) {
		f->tick = UINT32_MAX;	/* off for good, or not this thread's */
		if (t == mon_self)
			mon_sim_lf = NULL;
		return;
	}
	if (on && 4 * f->hits < 3 * f->notes) {
		__atomic_store_n(&f->on, 0, __ATOMIC_RELAXED);
		mon_sim_lf = NULL;
		f->tick = f->rest;
		f->rest = f->rest < LF_REST_MAX ? 2 * f->rest : LF_REST_MAX;
	} else if (on) {
		f->tick = f->rest = LF_WINDOW;
	} else {
		if (!__atomic_load_n(&mon_hot.batch, __ATOMIC_RELAXED)) {
			mon_sim_core_lf_forget(c);
			__atomic_store_n(&f->on, 1, __ATOMIC_RELAXED);
			mon_sim_lf = f;
		}
		f->tick = LF_WINDOW;
	}
	f->hits = f->notes = 0;
}
