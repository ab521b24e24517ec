/*
 * mem.c - the runtime's own memory and diagnostics.
 *
 * The runtime interposes malloc, so it must never allocate through the
 * interposed symbol: it calls glibc's __libc_* entry points, which reach the
 * same allocator without passing through our interposers.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mon.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

void *mon_malloc(size_t sz)
{
	return __libc_malloc(sz);
}

void *mon_calloc(size_t nr, size_t sz)
{
	return __libc_calloc(nr, sz);
}

void *mon_realloc(void *p, size_t sz)
{
	return __libc_realloc(p, sz);
}

void mon_free(void *p)
{
	__libc_free(p);
}

char *mon_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = mon_malloc(n);

	if (p)
		memcpy(p, s, n);
	return p;
}

void mon_log(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n = snprintf(buf, sizeof(buf), "ameba-rt: ");

	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	/* One write(2): lines from several threads do not interleave. */
	if (write(STDERR_FILENO, buf, (size_t)n) < 0)
		return;
}
