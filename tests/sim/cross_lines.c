/*
 * cross_lines.c - sized accesses (the hooks' __tsan_read2 .. 16 and
 * writes) that cross a 64-byte line, right after the second line was
 * accessed whole, so that the line filter holds that line's entry (the
 * sim backend's hit, backend_sim.h mon_sim_lf_access, looks up the entry
 * of an access's first line and compares it with its last: it relies on
 * no two adjacent lines sharing an entry, sim.h mon_sim_lf_slot). Counted
 * the same through the filter and without it (line_filter.sh) only when
 * every crossing access goes to the general side, in two pieces:
 *
 *  - heap: a malloc'd block, crossing accesses of every size at every
 *    line boundary of it, reads and writes
 *  - edge: a mapping at 0x600000000000 (when the kernel gives it), whose
 *    line 0x180000000000 follows line ...ffff: where the plain xor of the
 *    line's 4 MiB up, the entry before this one's, gave both lines one
 *    entry; a program that cannot map there fails (exit 3) rather than
 *    test less
 *
 * usage: cross_lines [N]   (N rounds, default 2000)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define NOINLINE __attribute__((noinline))

/* one access each of the given size at p (the compiler's sized hook:
 * the pointer is not known to be misaligned) */
static NOINLINE uint64_t rd2(const uint16_t *p) { return *p; }
static NOINLINE uint64_t rd4(const uint32_t *p) { return *p; }
static NOINLINE uint64_t rd8(const uint64_t *p) { return *p; }
static NOINLINE void wr2(uint16_t *p, uint64_t v) { *p = (uint16_t)v; }
static NOINLINE void wr4(uint32_t *p, uint64_t v) { *p = (uint32_t)v; }
static NOINLINE void wr8(uint64_t *p, uint64_t v) { *p = v; }
/* a whole line: its entry written (a miss), then held (hits) */
static NOINLINE uint64_t touch(const uint64_t *line)
{
	return line[0] + line[7];
}

/* Accesses across the boundary at b (a line's start): the line at b
 * touched first each time */
static NOINLINE uint64_t cross(char *b, uint64_t v)
{
	uint64_t s = 0;

	for (int off = 1; off < 8; off++) {
		s += touch((const uint64_t *)(void *)b);
		s += rd8((const uint64_t *)(void *)(b - off));
		s += touch((const uint64_t *)(void *)b);
		wr8((uint64_t *)(void *)(b - off), v + (uint64_t)off);
	}
	for (int off = 1; off < 4; off++) {
		s += touch((const uint64_t *)(void *)b);
		s += rd4((const uint32_t *)(void *)(b - off));
		wr4((uint32_t *)(void *)(b - off), v);
	}
	s += touch((const uint64_t *)(void *)b);
	s += rd2((const uint16_t *)(void *)(b - 1));
	wr2((uint16_t *)(void *)(b - 1), v);
	return s;
}

/* the heap block: every boundary inside it */
static NOINLINE uint64_t heap(char *blk, size_t lines, uint64_t v)
{
	uint64_t s = 0;

	for (size_t l = 1; l < lines; l++)
		s += cross(blk + l * 64, v);
	return s;
}

static NOINLINE char *alloc_heap(size_t n)
{
	char *p = aligned_alloc(64, n);

	if (p)
		memset(p, 1, n);
	return p;
}

static NOINLINE char *map_edge(void)
{
	/* 64 KiB on either side of 0x600000000000 (line 0x180000000000; the
	 * line before it ends in 0xffff, and 0x600000000000 >> 22 is
	 * 0x1800000: a multiple of 256) */
	char *want = (char *)0x600000000000ull - 65536;
	char *p = mmap(want, 131072, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (p != want) {
		munmap(p, 131072);
		return NULL;
	}
	memset(p, 2, 131072);
	return p + 65536;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
	size_t lines = 32;
	char *blk = alloc_heap(lines * 64);
	char *edge = map_edge();
	uint64_t s = 0;

	if (!blk || n < 1) {
		fprintf(stderr, "cross_lines: %s\n", !blk ? "out of memory" : "usage: cross_lines [N]");
		return 2;
	}
	if (!edge) {
		fprintf(stderr, "cross_lines: cannot map 128 KiB at 0x600000000000 - 65536 "
				"(MAP_FIXED_NOREPLACE): the address space is laid out otherwise\n");
		return 3;
	}
	for (long i = 0; i < n; i++) {
		s += heap(blk, lines, (uint64_t)i);
		s += cross(edge, (uint64_t)i);
	}
	printf("cross_lines: sum %llu\n", (unsigned long long)s);
	free(blk);
	return 0;
}
