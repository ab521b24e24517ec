/*
 * whereset.c - the agent's one reading of a counter's where-set: which
 * accesses counter i of an experiment counts (include/ameba/plugin.h,
 * struct ameba_counter and struct ameba_experiment). The providers that
 * attribute accesses in the agent (perf's samples, the fake provider of
 * the tests) ask here; the runtime (monitor/cond.c) applies the same rules
 * on its own structures, per access, for the sim and count backends.
 *
 * Notes:
 *  - The rules: a counter counts an access by one of its threads (none
 *    named: every thread) when the access lies in one of its ranges (none:
 *    anywhere) and the accessed object's bin is not one of its exceptions,
 *    or when the object is in one of its bins (a site's heap or mmap
 *    block, or any thread's stack or TLS block for "[stack]" / "[tls]"),
 *    wherever it lies. A counter with bins and no ranges counts only its
 *    bins' blocks.
 *  - An object's bin is its allocation site for heap and mmap blocks, and
 *    the kind bins "[stack]" and "[tls]" for stacks and TLS blocks; other
 *    objects (globals, file mappings) are in no bin. An access the provider
 *    cannot attribute to an object (o NULL) is in no bin either.
 */
#include <string.h>

#include "provider.h"

const char *agent_obj_bin(const struct ameba_object *o)
{
	if (!o)
		return NULL;
	switch (o->kind) {
	case AMEBA_OBJ_HEAP:
	case AMEBA_OBJ_MMAP:
		return o->site;
	case AMEBA_OBJ_STACK:
		return "[stack]";
	case AMEBA_OBJ_TLS:
		return "[tls]";
	default:
		return NULL;
	}
}

static int names_have(const struct ameba_counter_bins *b, const char *name)
{
	for (uint32_t i = 0; b && name && i < b->nr; i++)
		if (b->names[i] && !strcmp(b->names[i], name))
			return 1;
	return 0;
}

int agent_counter_has_thread(const struct ameba_counter *c, uint32_t thread)
{
	if (!c->nr_threads)
		return 1;
	for (uint32_t i = 0; i < c->nr_threads; i++)
		if (c->threads[i] == thread)
			return 1;
	return 0;
}

int agent_counter_in_bins(const struct ameba_experiment *exp, uint32_t i,
			  const struct ameba_object *o)
{
	return exp->counter_bins && names_have(&exp->counter_bins[i], agent_obj_bin(o));
}

int agent_counter_has_bins(const struct ameba_experiment *exp, uint32_t i)
{
	return exp->counter_bins && exp->counter_bins[i].nr > 0;
}

int agent_counter_excepts(const struct ameba_experiment *exp, uint32_t i,
			  const struct ameba_object *o)
{
	const struct ameba_counter *c = &exp->counters[i];

	return c->nr_ranges && exp->counter_except &&
	       names_have(&exp->counter_except[i], agent_obj_bin(o));
}

int agent_counter_counts(const struct ameba_experiment *exp, uint32_t i, uintptr_t addr,
			 uint32_t thread, const struct ameba_object *o)
{
	const struct ameba_counter *c = &exp->counters[i];
	int in_ranges = !c->nr_ranges;

	if (!agent_counter_has_thread(c, thread))
		return 0;
	if (agent_counter_in_bins(exp, i, o))
		return 1;
	if (agent_counter_has_bins(exp, i) && !c->nr_ranges)
		return 0;
	for (uint32_t r = 0; r < c->nr_ranges && !in_ranges; r++)
		in_ranges = addr >= c->ranges[2 * r] && addr < c->ranges[2 * r + 1];
	return in_ranges && !agent_counter_excepts(exp, i, o);
}

const struct ameba_object *agent_object_at(const struct ameba_object *v, uint32_t nr,
					   uintptr_t addr)
{
	uint32_t lo = 0, hi = nr;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (v[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nr && v[lo].start <= addr && addr < v[lo].end ? &v[lo] : NULL;
}

const char *agent_counter_object(const struct ameba_experiment *exp, uint32_t i,
				 const struct agent_world *w)
{
	const struct ameba_counter *c = &exp->counters[i];
	const struct ameba_counter_bins *b = exp->counter_bins ? &exp->counter_bins[i] : NULL;
	const struct ameba_object *o;

	if (c->nr_threads)
		return NULL;
	if (b && b->nr)
		return b->nr == 1 ? b->names[0] : NULL;	/* its ranges: the bin's blocks */
	if (c->nr_ranges != 1)
		return NULL;
	o = agent_object_at(w->objects, w->nr_objects, c->ranges[0]);
	return o && o->start == c->ranges[0] && o->end == c->ranges[1] ? o->name : NULL;
}
