/*
 * heap_blocks.c - uninstrumented (plain cc) program allocating heap blocks
 * after the agent attached: make_grid() mallocs 1 MiB, make_table()
 * callocs 256 KiB; both touch every page. A block freed before the
 * others are made, and one grown by realloc, exercise the probes' matching.
 *
 * With an argument FIFO the program prints its pid and waits for one byte
 * on FIFO before it allocates anything.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static char *make_grid(void)
{
	char *g = malloc(1 << 20);

	for (size_t i = 0; g && i < (1 << 20); i += 4096)
		g[i] = 1;
	return g;
}

__attribute__((noinline)) static char *make_table(void)
{
	char *t = calloc(256, 1024);

	for (size_t i = 0; t && i < (256 << 10); i += 4096)
		t[i] = 2;
	return t;
}

__attribute__((noinline)) static char *scratch(size_t n)
{
	char *s = malloc(n);

	if (s)
		memset(s, 3, n);
	return s;
}

int main(int argc, char **argv)
{
	char *g, *t, *s;
	long sum = 0;

	if (argc > 1) {
		char c;
		int fd;

		printf("%d\n", (int)getpid());
		fflush(stdout);
		fd = open(argv[1], O_RDONLY);
		if (fd < 0 || read(fd, &c, 1) != 1)
			return 2;
		close(fd);
	}
	s = scratch(100);
	free(s);
	s = scratch(64);
	s = realloc(s, 4096);
	g = make_grid();
	t = make_table();
	if (!g || !t || !s)
		return 1;
	for (size_t i = 0; i < (1 << 20); i += 4096)
		sum += g[i];
	for (size_t i = 0; i < (256 << 10); i += 4096)
		sum += t[i];
	/* stay alive a little so that the agent sees the blocks live */
	for (int k = 0; k < 20; k++) {
		for (size_t i = 0; i < (1 << 20); i += 64)
			sum += g[i];
		usleep(20000);
	}
	printf("heap_blocks: %s\n", sum > 0 ? "ok" : "bad");
	free(g);
	free(t);
	free(s);
	return 0;
}
