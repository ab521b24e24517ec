/*
 * mmap_input - a matrix read through a file-backed mmap and walked by
 * columns (the input of a matrix-multiply benchmark that maps its input
 * files instead of reading them into malloc'd memory).
 *
 * The program writes its input file, matrix.bin, into a fresh directory
 * under $TMPDIR (or /tmp): a 4 KiB header page, then N x N uint32_t values
 * (N = 560, rows of 2,240 B = 35 lines, 1,254,400 B). It maps the values
 * read-only (PROT_READ, MAP_PRIVATE, file offset 4096), reads the header
 * with pread, and sums every column. At the end it unmaps the file and
 * removes it and the directory.
 *
 * Bottleneck: the column walk. Consecutive reads are one row (2,240 B)
 * apart, a new line each time; one column touches 560 lines (35 KiB, more
 * than a 32 KiB L1D; 35 lines per row, an odd number, spread them over
 * every set) and 307 pages (more than a 64-entry L1 dTLB). The next column
 * finds the lines in L2.
 *
 *   object    the mapping of matrix.bin: kind mmap, named
 *             "matrix.bin <- map_input@mmap_input.c:LINE" (the file and
 *             the mapping site), 1,257,472 B (307 pages), file offset 4096
 *   region    sum_columns()
 *   expected  per walk 313,600 reads of the mapping; 8 walks at SCALE 1:
 *             2,508,800 reads, no writes (exact, count backend). With a
 *             32 KiB 8-way L1D the sets hold 8 or 9 lines of a column:
 *             those with 9 (48 of 64) miss on every read. sim,
 *             skylake-sp, 8 walks: 1.98 M L1D misses on the mapping (0.79
 *             per read, 99.8% of the run's L1D misses), 157 K L2 misses
 *             (compulsory: 19,600 lines per walk). A 64-entry L1 dTLB
 *             misses ~306 times per column (~0.55 per read); the
 *             1,536-entry second level holds the 307 pages (307 tlb_miss).
 *             The rest: the row buffer that writes the file (stack,
 *             313,600 writes, ~40 misses) and the column sums (heap, 4.4 KiB).
 *
 * Fixed twin (-DWL_FIXED=1): the same sums accumulated row by row (the
 * matrix read in address order): one L1D miss per 16 reads (156,800 in
 * the run, 0.0625 per read, 12.6x fewer). Same output.
 *
 * SCALE: 8 x SCALE walks over the matrix.
 * Native: ~0.4 ms for the 8 walks (fixed the same: the host's L2 serves
 * the column walk), ~5 ms in all with the file.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "wl.h"

#define N 560
#define HEADER_BYTES 4096
#define MATRIX_BYTES ((size_t)N * N * sizeof(uint32_t))
#define WALKS_PER_SCALE 8

struct header {
	char magic[8];		/* "AMEBAMAT" */
	uint32_t rows, cols;
};

static char dir[4096], path[4096 + 32];

static uint32_t value_at(uint32_t i, uint32_t j)
{
	return (uint32_t)wl_mix(i, j);
}

static void die(const char *what)
{
	perror(what);
	exit(3);
}

/* Writes the header page and the matrix, a row at a time. */
__attribute__((noinline)) static void write_input(void)
{
	struct header h = { { 'A', 'M', 'E', 'B', 'A', 'M', 'A', 'T' }, N, N };
	static const char zero[HEADER_BYTES];
	uint32_t row[N];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		die(path);
	if (write(fd, zero, sizeof(zero)) != (ssize_t)sizeof(zero) || pwrite(fd, &h, sizeof(h), 0) != sizeof(h))
		die(path);
	for (uint32_t i = 0; i < N; i++) {
		for (uint32_t j = 0; j < N; j++)
			row[j] = value_at(i, j);
		if (write(fd, row, sizeof(row)) != (ssize_t)sizeof(row))
			die(path);
	}
	if (close(fd))
		die(path);
}

/* Maps the values of the input file read-only: the object of this workload. */
__attribute__((noinline)) static const uint32_t *map_input(void)
{
	struct header h;
	void *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		die(path);
	if (pread(fd, &h, sizeof(h), 0) != sizeof(h) || memcmp(h.magic, "AMEBAMAT", 8) || h.rows != N ||
	    h.cols != N) {
		fprintf(stderr, "mmap_input: %s: bad header\n", path);
		exit(3);
	}
	p = mmap(NULL, MATRIX_BYTES, PROT_READ, MAP_PRIVATE, fd, HEADER_BYTES);
	if (p == MAP_FAILED)
		die("mmap");
	close(fd);	/* the mapping stays */
	return p;
}

__attribute__((noinline)) static void sum_columns(const uint32_t *a, uint64_t *sums)
{
#ifdef WL_FIXED
	for (size_t i = 0; i < N; i++)
		for (size_t j = 0; j < N; j++)
			sums[j] += a[i * N + j];
#else
	for (size_t j = 0; j < N; j++) {
		uint64_t s = 0;

		for (size_t i = 0; i < N; i++)
			s += a[i * N + j];
		sums[j] += s;
	}
#endif
}

int main(int argc, char **argv)
{
	unsigned long scale = wl_scale(argc, argv, 1000);
	const char *tmp = getenv("TMPDIR");
	const uint32_t *a;
	uint64_t *sums, h = 0, t0;

	snprintf(dir, sizeof(dir), "%s/wl_mmap_input.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		die(dir);
	snprintf(path, sizeof(path), "%s/matrix.bin", dir);
	write_input();
	a = map_input();
	sums = wl_check_alloc(calloc(N, sizeof(*sums)), "sums");

	t0 = wl_now_ns();
	for (unsigned long w = 0; w < WALKS_PER_SCALE * scale; w++)
		sum_columns(a, sums);
	wl_report_time("mmap_input", t0);

	for (size_t j = 0; j < N; j++)
		h = wl_mix(h, sums[j]);
	printf("walks %lu checksum %016" PRIx64 "\n", WALKS_PER_SCALE * scale, h);
	if (munmap((void *)a, MATRIX_BYTES))
		die("munmap");
	free(sums);
	unlink(path);
	rmdir(dir);
	return 0;
}
