/*
 * mmap_input - a matrix read through a file-backed mmap and walked by
 * columns (the input of a matrix-multiply benchmark that maps its input
 * files instead of reading them into malloc'd memory).
 *
 * The program writes its input file, matrix.bin, into a fresh directory
 * under $TMPDIR (or /tmp): a 4 KiB header page, then N x N uint32_t values
 * (N = 816, rows of 3,264 B = 51 lines, 2,663,424 B). It maps the values
 * read-only (PROT_READ, MAP_PRIVATE, file offset 4096), reads the header
 * with pread, and sums every column. It removes the file and the directory
 * as soon as the file is mapped (the mapping keeps the data; a killed run
 * leaves nothing behind), and unmaps it at the end.
 *
 * Bottleneck: the column walk. Consecutive reads are one row (3,264 B)
 * apart, a new line each time; one column touches 816 lines (51 KiB, more
 * than a 48 KiB L1D holds; 51 lines per row, an odd number, spread them
 * over every set: 12 or 13 lines a set) and 651 pages (more than a 64-entry
 * L1 dTLB). The next column finds the lines in L2.
 *
 *   object    the mapping of matrix.bin: kind mmap, named
 *             "matrix.bin <- map_input@mmap_input.c:LINE" (the file and
 *             the mapping site), 2,666,496 B (651 pages), file offset 4096
 *   region    sum_columns()
 *   expected  per walk 665,856 reads of the mapping; 8 walks at SCALE 1:
 *             5,326,848 reads, no writes (exact). L1D misses on the
 *             mapping, whole run: with a 48 KiB 12-way L1D (the design
 *             geometry, tests/workloads/README.md) the 48 sets holding 13
 *             lines of a column miss on every read: 4.17 M (0.78 per
 *             read); with skylake-sp's 32 KiB 8-way L1D every read misses:
 *             5.33 M (1.00). Either way > 99.8% of the run's L1D misses.
 *             L2: 332,928 misses (compulsory: 41,616 lines per walk). A
 *             64-entry L1 dTLB misses ~650 times per column (~0.8 per
 *             read); a 1,536-entry second level holds the 651 pages (651
 *             tlb_miss). The rest: the row buffer that writes the file
 *             (stack, 665,856 writes, few misses) and the column sums
 *             (heap, 6.4 KiB).
 *
 * Fixed twin (-DWL_FIXED=1): the same sums accumulated row by row (the
 * matrix read in address order): one L1D miss per 16 reads (332,928 in
 * the run, 0.0625 per read; 12.5x fewer with the design geometry, 16x
 * with skylake-sp). Same output.
 *
 * SCALE: 8 x SCALE walks over the matrix.
 * Native: ~1 ms for the 8 walks (fixed the same: the host's L2 serves the
 * column walk), ~10 ms in all with the file. sim: ~0.45 s.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "wl.h"

#define N 816
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
	unlink(path);
	rmdir(dir);
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
	return 0;
}
