/*
 * objmap_tsan_stub.c - the few runtime services objmap.c, site.c and
 * elfsyms.c use, for objmap_tsan: those three files are built with the real
 * ThreadSanitizer (which checks their lock-free protocols for data races)
 * and linked without the rest of the runtime.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mon.h"
#include "objmap_conc.h"

__thread struct mon_thread *mon_self;
struct mon_hot mon_hot;	/* mon_active and friends live here */

void *mon_malloc(size_t sz)
{
	return malloc(sz);
}

void *mon_calloc(size_t nr, size_t sz)
{
	return calloc(nr, sz);
}

void *mon_realloc(void *p, size_t sz)
{
	return realloc(p, sz);
}

void mon_free(void *p)
{
	free(p);
}

char *mon_strdup(const char *s)
{
	return strdup(s);
}

void mon_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/* No counts here: a freed record that was looked up stays (fold.c folds
 * and recycles in the runtime). */
void mon_fold_dead(struct mon_obj *o)
{
	(void)o;
}

void mon_fold_hold_more(struct mon_obj *o, uint32_t thread_id)
{
	(void)o;
	(void)thread_id;
}

int main(void)
{
	uint64_t wrong;

	if (mon_objmap_init())
		return 1;
	wrong = objmap_conc_run();
	printf("objmap_tsan: %llu wrong answers\n", (unsigned long long)wrong);
	return wrong != 0;
}
