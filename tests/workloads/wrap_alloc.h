/*
 * wrap_alloc.h - an allocation wrapper in a shared header, as code bases
 * have them (Phoenix's stddefines.h: `CALLOC(n, sz)`): a small static
 * function that calls calloc and fails loudly. Used by wrapper_alloc.c,
 * whose blocks the runtime must name by CALLOC's caller, not by this
 * header (docs/objmap.md, "Allocation wrappers").
 */
#ifndef AMEBA_WRAP_ALLOC_H
#define AMEBA_WRAP_ALLOC_H

#include <stdio.h>
#include <stdlib.h>

static inline void *CALLOC(size_t nr, size_t sz)
{
	void *p = calloc(nr, sz);

	if (!p) {
		fprintf(stderr, "workload: out of memory (%zu x %zu B)\n", nr, sz);
		exit(3);
	}
	return p;
}

#endif
