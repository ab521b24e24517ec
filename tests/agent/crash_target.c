/*
 * crash_target.c - a program that fails the way real ones do, for the
 * agent's exit-status and native-behaviour tests (agent e2e fail_fast,
 * bad_free):
 *
 *   crash_target segv      sums a heap array, prints the sum, then writes
 *                          through a null pointer (SIGSEGV)
 *   crash_target badfree   frees a pointer into the middle of a struct
 *                          (glibc: "free(): invalid pointer", SIGABRT)
 *   crash_target bigfree   the same on a block glibc mmaps (1 MiB)
 *
 * Built natively and with `ameba cc`: the two must fail alike.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rec {
	long id;
	double v[8];
};

struct big {
	long hdr[4];
	char data[1 << 20];
};

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	double sum = 0;

	if (!strcmp(mode, "segv")) {
		double *a = malloc(100000 * sizeof(*a));

		if (!a)
			return 1;
		for (int r = 0; r < 20; r++)
			for (int i = 0; i < 100000; i++)
				sum += a[i] = i * 0.5 + r;
		printf("sum %.1f\n", sum);
		fflush(stdout);
		{
			volatile int *volatile nowhere = NULL;

			*nowhere = 1;	/* SIGSEGV */
		}
		free(a);
	} else if (!strcmp(mode, "badfree")) {
		struct rec *r = malloc(sizeof(*r));

		if (!r)
			return 1;
		r->id = 7;
		for (int i = 0; i < 8; i++)
			r->v[i] = i;
		printf("id %ld\n", r->id);
		fflush(stdout);
		{
			void *volatile q = &r->v[2];	/* hidden from -Wfree-nonheap-object */

			free(q);
		}
	} else if (!strcmp(mode, "bigfree")) {
		struct big *b = malloc(sizeof(*b));

		if (!b)
			return 1;
		memset(b, 1, sizeof(*b));
		printf("byte %d\n", b->data[4096]);
		fflush(stdout);
		{
			void *volatile q = b->data;

			free(q);
		}
	} else {
		fprintf(stderr, "usage: crash_target segv|badfree|bigfree\n");
		return 2;
	}
	printf("not reached\n");
	return 0;
}
