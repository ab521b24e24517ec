/*
 * resbuf.c - a provider's result buffers (struct agent_resbuf, provider.h):
 * the values of one experiment's counters, per-thread values counter-major,
 * the rows handed to the strategy and the threads of their entries. Every
 * provider fills one and hands it out with agent_resbuf_publish(), so the
 * shape of struct ameba_results is assembled in one place.
 *
 * Notes:
 *  - Buffers grow and are reused: the results stay valid until the
 *    provider's next experiment (provider.h), which resets them.
 *  - Without ids, entry k of a row is thread k's (ameba_results.thread_ids
 *    NULL): the perf and fake providers number threads densely.
 */
#include <stdlib.h>
#include <string.h>

#include "provider.h"

static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
	void *v;

	if (n <= *cap)
		return 0;
	v = realloc(*p, n * elem);
	if (!v)
		return AMEBA_ENOMEM;
	*p = v;
	*cap = n;
	return 0;
}

int agent_resbuf_reset(struct agent_resbuf *b, uint32_t nr, uint32_t nt, const uint32_t *ids)
{
	size_t npt = (size_t)nr * nt;

	b->nr = b->nt = 0;
	if (grow((void **)&b->values, &b->cap_values, (size_t)nr + 1, sizeof(*b->values)) ||
	    grow((void **)&b->rows, &b->cap_rows, (size_t)nr + 1, sizeof(*b->rows)) ||
	    grow((void **)&b->pt, &b->cap_pt, npt + 1, sizeof(*b->pt)) ||
	    grow((void **)&b->ids, &b->cap_ids, (size_t)nt + 1, sizeof(*b->ids)))
		return AMEBA_ENOMEM;
	memset(b->values, 0, nr * sizeof(*b->values));
	memset(b->pt, 0, npt * sizeof(*b->pt));
	if (ids && nt)
		memcpy(b->ids, ids, nt * sizeof(*ids));
	b->has_ids = ids != NULL;
	b->has_carry = 0;
	b->nr = nr;
	b->nt = nt;
	return 0;
}

int agent_resbuf_carry(struct agent_resbuf *b)
{
	size_t npt = (size_t)b->nr * b->nt;

	if (grow((void **)&b->carried, &b->cap_carried, (size_t)b->nr + 1, sizeof(*b->carried)) ||
	    grow((void **)&b->carried_rows, &b->cap_carried_rows, (size_t)b->nr + 1,
		 sizeof(*b->carried_rows)) ||
	    grow((void **)&b->carried_pt, &b->cap_carried_pt, npt + 1, sizeof(*b->carried_pt)))
		return AMEBA_ENOMEM;
	memset(b->carried, 0, b->nr * sizeof(*b->carried));
	memset(b->carried_pt, 0, npt * sizeof(*b->carried_pt));
	b->has_carry = 1;
	return 0;
}

void agent_resbuf_publish(struct agent_resbuf *b, const struct ameba_experiment *exp,
			  struct agent_exp_result *res)
{
	for (uint32_t i = 0; i < b->nr; i++)
		b->rows[i] = i < exp->nr_counters && exp->counters[i].per_thread ?
			     b->pt + (size_t)i * b->nt : NULL;
	res->r.nr_counters = b->nr;
	res->r.values = b->values;
	res->r.per_thread = b->rows;
	res->r.nr_threads = b->nt;
	res->r.thread_ids = b->has_ids && b->nt ? b->ids : NULL;
	res->r.carried = NULL;
	res->r.per_thread_carried = NULL;
	if (!b->has_carry)
		return;
	for (uint32_t i = 0; i < b->nr; i++)
		b->carried_rows[i] = b->rows[i] ? b->carried_pt + (size_t)i * b->nt : NULL;
	res->r.carried = b->carried;
	res->r.per_thread_carried = b->carried_rows;
}

void agent_resbuf_free(struct agent_resbuf *b)
{
	free(b->values);
	free(b->pt);
	free(b->rows);
	free(b->ids);
	free(b->carried);
	free(b->carried_pt);
	free(b->carried_rows);
	memset(b, 0, sizeof(*b));
}
