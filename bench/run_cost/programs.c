/*
 * programs.c - the programs of bench/run_cost: what an `ameba run` costs
 * over the simulation alone (issue 19). One binary, four programs, written
 * the plain way (malloc'd arrays, ordinary loops):
 *
 *   programs jacobi SWEEPS   5-point Jacobi on two 1024 x 1024 double grids
 *   programs stream PASSES   a walk of a 64 MiB array, one access per line
 *                            (every access misses the L1)
 *   programs fs2 ITERS       two threads incrementing adjacent counters of
 *                            one array (false sharing), ITERS each
 *   programs blocks ROUNDS   200,000 live heap blocks of 48 bytes in a
 *                            linked list, walked ROUNDS times
 *
 * Each prints one checksum line.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 1024

static double *alloc_grid(void)
{
	double *g = malloc(sizeof(double) * N * N);

	if (!g) {
		perror("malloc");
		exit(1);
	}
	return g;
}

static double jacobi(long sweeps)
{
	double *a = alloc_grid(), *b = alloc_grid(), *t, s = 0;

	for (long i = 0; i < N * N; i++)
		a[i] = b[i] = (double)(i % 97);
	for (long k = 0; k < sweeps; k++) {
		for (long i = 1; i < N - 1; i++)
			for (long j = 1; j < N - 1; j++)
				b[i * N + j] = 0.2 * (a[i * N + j] + a[(i - 1) * N + j] +
						      a[(i + 1) * N + j] + a[i * N + j - 1] +
						      a[i * N + j + 1]);
		t = a;
		a = b;
		b = t;
	}
	for (long i = 0; i < N * N; i++)
		s += a[i];
	free(a);
	free(b);
	return s;
}

static double stream(long passes)
{
	size_t n = (64u << 20) / sizeof(long);
	long *v = malloc(n * sizeof(long)), s = 0;

	if (!v) {
		perror("malloc");
		exit(1);
	}
	for (size_t i = 0; i < n; i++)
		v[i] = (long)i;
	for (long p = 0; p < passes; p++)
		for (size_t i = 0; i < n; i += 64 / sizeof(long))
			s += v[i] ^ p;
	free(v);
	return (double)s;
}

struct fs_arg {
	long *counters;
	int id;
	long iters;
};

static void *fs_worker(void *p)
{
	struct fs_arg *a = p;

	for (long i = 0; i < a->iters; i++)
		a->counters[a->id] += i & 3;
	return NULL;
}

static double fs2(long iters)
{
	long *counters = calloc(2, sizeof(long));
	struct fs_arg args[2] = { { counters, 0, iters }, { counters, 1, iters } };
	pthread_t t[2];
	double s;

	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, fs_worker, &args[i])) {
			fprintf(stderr, "pthread_create failed\n");
			exit(1);
		}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	s = (double)(counters[0] + counters[1]);
	free(counters);
	return s;
}

struct node {
	struct node *next;
	long key, val[4];
};

static double blocks(long rounds)
{
	struct node *head = NULL, *p;
	long s = 0;

	for (long i = 0; i < 200000; i++) {
		p = malloc(sizeof(*p));
		if (!p) {
			perror("malloc");
			exit(1);
		}
		p->key = i;
		memset(p->val, 0, sizeof(p->val));
		p->next = head;
		head = p;
	}
	for (long r = 0; r < rounds; r++)
		for (p = head; p; p = p->next) {
			p->val[r & 3] += p->key;
			s += p->val[(r + 1) & 3];
		}
	while (head) {
		p = head->next;
		free(head);
		head = p;
	}
	return (double)s;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 1;
	double s;

	if (argc < 2)
		goto usage;
	if (!strcmp(argv[1], "jacobi"))
		s = jacobi(n);
	else if (!strcmp(argv[1], "stream"))
		s = stream(n);
	else if (!strcmp(argv[1], "fs2"))
		s = fs2(n);
	else if (!strcmp(argv[1], "blocks"))
		s = blocks(n);
	else
		goto usage;
	printf("%s %ld checksum %.0f\n", argv[1], n, s);
	return 0;
usage:
	fprintf(stderr, "usage: programs jacobi|stream|fs2|blocks N\n");
	return 2;
}
