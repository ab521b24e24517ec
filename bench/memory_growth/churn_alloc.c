/*
 * churn_alloc N - N allocations of 16-271 bytes, at most 64 live at once
 * (under 20 KB), each written and read once: a program whose live heap
 * stays tiny while it allocates without end (issue 20, bounded memory).
 * Prints one checksum line.
 */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000, s = 0;
	char *keep[64] = { 0 };

	for (long i = 0; i < n; i++) {
		int k = (int)((unsigned long)i * 2654435761u % 64);

		free(keep[k]);
		keep[k] = malloc(16 + (size_t)(i & 255));
		if (!keep[k]) {
			perror("malloc");
			return 1;
		}
		keep[k][0] = (char)i;
		s += keep[k][0];
	}
	for (int k = 0; k < 64; k++)
		free(keep[k]);
	printf("churn_alloc: %ld allocations, checksum %ld\n", n, s);
	return 0;
}
