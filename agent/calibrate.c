/*
 * calibrate.c - `ameba calibrate`: measures this machine's memory latencies
 * natively and writes them, with the host's caches, as a sim preset.
 *
 * Notes (what is measured and how; docs/calibrate.md has the user's view):
 * - Every latency is a pointer chase: each 64-byte line of a buffer holds
 *   the address of the next one, in a random cyclic order, so each load
 *   waits for the previous one and the hardware prefetchers cannot guess
 *   the next line. Time per step = load-to-use latency of the level that
 *   holds the buffer. The loop is one dependent load per step.
 * - Cache levels by buffer size: L1D over half the L1D, L2 over half the
 *   L2 (four times the L1D at least), LLC over a quarter of the LLC (four
 *   times the L2 at least), memory over max(4 x LLC, 256 MiB). Buffers
 *   ask for transparent huge pages so that the chase measures the caches,
 *   not page walks; where THP is off, the larger figures include some.
 * - Page walk (lat_tlb_miss): one line per 4 KiB page over 8192 pages
 *   (32 MiB of address space, 512 KiB of lines) against the same 8192 lines
 *   packed into 512 KiB on huge pages: the difference is what a last-level
 *   TLB miss adds. lat_tlb2_hit likewise over 512 pages (more than any L1
 *   dTLB holds, less than any L2 TLB).
 * - Line transfer between two cores (lat_intervention): two threads pinned
 *   to two CPUs hand one cache line back and forth (each waits for the
 *   other's value, then writes its own); a round trip is two transfers of a
 *   modified line. Invalidation and remote memory are not measured: they
 *   keep the base preset's ratio to the intervention and to local memory.
 * - Cycles: the core clock is timed with a chain of dependent integer adds
 *   of a register (one per cycle on every x86-64 and AArch64 core), the
 *   fastest of five. Not of an immediate: the renamer of recent Intel cores
 *   folds `add $1` chains (an AMX Xeon VM, cpuinfo model 167: 20.3 "GHz"
 *   by `add $1`, 3.45 GHz by `add %reg` and by 3-cycle `imul` alike).
 * - Single-threaded figures are timed in the thread's CPU time, so that a
 *   run preempted by another process is not slower; the line transfer,
 *   which needs both threads running, takes the fastest batch of 50 round
 *   trips of each run.
 * - Each figure is the median of five runs; min and max are printed so the
 *   spread is visible. Nothing here needs a PMU.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "ameba/ameba.h"
#include "geom.h"

#define CAL_REPS 5
#define LINE 64
#define PAGE_4K 4096
#define HUGE_2M (2u << 20)
#define TRANSFER_BATCH 50	/* round trips timed together */

struct cal_opts {
	const char *out;	/* output file, or NULL: the user preset `name` */
	const char *name;	/* user preset name (default "calibrated") */
	const char *base;	/* geometry to start from (default "host") */
	int quick;		/* fewer steps (tests) */
	int cpu_a, cpu_b;	/* CPUs of the line transfer; -1: the first two allowed */
};

struct cal_fig {
	const char *label;
	const char *key;
	double ns[CAL_REPS];
	double med, lo, hi;
	int measured;		/* 0: derived from the base preset */
	int no_thp;		/* asked for huge pages, got mostly 4 KiB ones */
	const char *how;
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* This thread's CPU time: a single-threaded figure does not count the
 * time the thread was not running (another process on its CPU). */
static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void fig_finish(struct cal_fig *f)
{
	double s[CAL_REPS];

	memcpy(s, f->ns, sizeof(s));
	qsort(s, CAL_REPS, sizeof(double), cmp_double);
	f->lo = s[0];
	f->hi = s[CAL_REPS - 1];
	f->med = s[CAL_REPS / 2];
	f->measured = 1;
}

/* ---- buffers ---- */

/* An anonymous mapping of sz bytes aligned to 2 MiB, with or without huge
 * pages; NULL on failure. *map_sz gets what to munmap at *map. */
static char *map_buf(size_t sz, int huge, void **map, size_t *map_sz)
{
	size_t total = sz + HUGE_2M;
	char *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)p + HUGE_2M - 1) & ~(uintptr_t)(HUGE_2M - 1));
#ifdef MADV_HUGEPAGE
	madvise(a, sz, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#else
	(void)huge;
#endif
	*map = p;
	*map_sz = total;
	return a;
}

/* AnonHugePages (KiB) of the mapping holding addr, from /proc/self/smaps;
 * 0 when unknown. */
static size_t huge_kib(const void *addr)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	int in = 0;
	size_t kib = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
			continue;
		}
		if (in && sscanf(line, "AnonHugePages: %zu kB", &kib) == 1)
			break;
	}
	fclose(f);
	return kib;
}

/* xorshift64*: deterministic shuffles */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* Links the nr slots at base + i * stride + offset(i) into one random cycle;
 * returns the first. */
static void **link_cycle(char *base, size_t nr, size_t stride, int spread)
{
	size_t *order = malloc(nr * sizeof(*order));
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	void **first;

	if (!order)
		return NULL;
	for (size_t i = 0; i < nr; i++)
		order[i] = i;
	for (size_t i = nr - 1; i > 0; i--) {
		size_t j = rnd(&seed) % (i + 1), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
#define SLOT(i) ((void **)(base + order[i] * stride + \
			   (spread ? (order[i] * 7 * LINE) % stride : 0)))
	for (size_t i = 0; i < nr; i++)
		*SLOT(i) = (void *)SLOT((i + 1) % nr);
	first = SLOT(0);
#undef SLOT
	free(order);
	return first;
}

static void *volatile chase_sink;

/* ns per dependent load over the cycle starting at p, steps loads. */
static double chase(void **p, size_t steps)
{
	double t0;

	for (size_t i = 0; i < steps / 8; i++)	/* warm: caches, TLB */
		p = *p;
	t0 = cpu_ns();
	for (size_t i = 0; i < steps; i += 8) {
		p = *p; p = *p; p = *p; p = *p;
		p = *p; p = *p; p = *p; p = *p;
	}
	t0 = cpu_ns() - t0;
	chase_sink = p;
	return t0 / (double)steps;
}

/* A chase over nr slots spaced stride bytes (spread: varying offsets within
 * the stride), CAL_REPS times into f->ns. 0 or -1 (out of memory). */
static int chase_fig(struct cal_fig *f, size_t nr, size_t stride, int spread, int huge, size_t steps)
{
	void *map;
	size_t map_sz;
	char *buf = map_buf(nr * stride, huge, &map, &map_sz);
	void **first;

	if (!buf)
		return -1;
	first = link_cycle(buf, nr, stride, spread);
	if (!first) {
		munmap(map, map_sz);
		return -1;
	}
	for (int r = 0; r < CAL_REPS; r++)
		f->ns[r] = chase(first, steps);
	if (huge && nr * stride >= HUGE_2M && huge_kib(buf) * 1024 < nr * stride / 2)
		f->no_thp = 1;
	munmap(map, map_sz);
	fig_finish(f);
	return 0;
}

/* ---- core clock ---- */

static volatile uint64_t add_sink;

/* Dependent adds per ns (the core clock in GHz), the fastest of five; 0 when
 * this architecture has no add chain here. */
static double core_ghz(int quick)
{
	double best = 0;
	uint64_t iters = quick ? 200000 : 1000000;

	for (int r = 0; r < CAL_REPS; r++) {
		uint64_t x = 0, n = iters, one = 1;
		double t0 = cpu_ns(), dt;
#if defined(__x86_64__)
		__asm__ volatile("1:\n\t.rept 100\n\taddq %2, %0\n\t.endr\n\tdecq %1\n\tjnz 1b"
				 : "+r"(x), "+r"(n) : "r"(one));
#elif defined(__aarch64__)
		__asm__ volatile("1:\n\t.rept 100\n\tadd %0, %0, %2\n\t.endr\n\tsubs %1, %1, #1\n\tb.ne 1b"
				 : "+r"(x), "+r"(n) : "r"(one) : "cc");
#else
		(void)n;
		return 0;
#endif
		dt = cpu_ns() - t0;
		add_sink = x;
		if (dt > 0 && 100.0 * iters / dt > best)
			best = 100.0 * iters / dt;
	}
	return best;
}

/* ---- line transfer between two CPUs ---- */

struct pingpong {
	_Alignas(64) volatile uint64_t flag;
	char pad[56];
	int cpu;
	uint64_t rounds;
	int pinned;
};

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static void *pong(void *arg)
{
	struct pingpong *pp = arg;

	pp->pinned = pin(pp->cpu) == 0;
	for (uint64_t i = 0; i < pp->rounds; i++) {
		while (pp->flag != 2 * i + 1)
			;
		pp->flag = 2 * i + 2;
	}
	return NULL;
}

/* ns per one-way transfer of a modified line between cpu a and cpu b,
 * CAL_REPS times into f->ns. 0, or -1 with why[] (fewer than two CPUs). */
static int transfer_fig(struct cal_fig *f, int a, int b, int quick, char *why, size_t wlen)
{
	cpu_set_t mine;

	if (sched_getaffinity(0, sizeof(mine), &mine)) {
		snprintf(why, wlen, "sched_getaffinity: %s", strerror(errno));
		return -1;
	}
	if (a < 0 || b < 0) {
		a = b = -1;
		for (int c = 0; c < CPU_SETSIZE; c++) {
			if (!CPU_ISSET(c, &mine))
				continue;
			if (a < 0)
				a = c;
			else {
				b = c;
				break;
			}
		}
		if (b < 0) {
			snprintf(why, wlen, "this process may run on one CPU only");
			return -1;
		}
	}
	for (int r = 0; r < CAL_REPS; r++) {
		static struct pingpong pp;
		pthread_t th;
		double t0 = 0;

		pp.flag = 0;
		pp.cpu = b;
		pp.rounds = quick ? 2000 : 20000;
		if (pin(a)) {
			snprintf(why, wlen, "cannot run on CPU %d: %s", a, strerror(errno));
			sched_setaffinity(0, sizeof(mine), &mine);
			return -1;
		}
		if (pthread_create(&th, NULL, pong, &pp)) {
			snprintf(why, wlen, "pthread_create failed");
			sched_setaffinity(0, sizeof(mine), &mine);
			return -1;
		}
		/* batches of TRANSFER_BATCH round trips; the fastest batch is the
		 * transfer time with both threads running (a batch in which either
		 * was preempted is slower, and a loaded machine has many) */
		double best = 0;
		for (uint64_t i = 0; i < pp.rounds; i++) {
			if (i % TRANSFER_BATCH == 0)
				t0 = now_ns();
			pp.flag = 2 * i + 1;
			while (pp.flag != 2 * i + 2)
				;
			if (i % TRANSFER_BATCH == TRANSFER_BATCH - 1) {
				double dt = now_ns() - t0;
				if (best == 0 || dt < best)
					best = dt;
			}
		}
		pthread_join(th, NULL);
		sched_setaffinity(0, sizeof(mine), &mine);
		if (!pp.pinned) {
			snprintf(why, wlen, "cannot run on CPU %d", b);
			return -1;
		}
		f->ns[r] = best / TRANSFER_BATCH / 2;
	}
	fig_finish(f);
	return 0;
}

/* ---- the command ---- */

static void calibrate_usage(FILE *f)
{
	fprintf(f,
		"usage: ameba calibrate [-o FILE | --name NAME] [--base PRESET] [--cpus A,B] [--quick]\n"
		"\n"
		"Measures this machine's memory latencies natively (pointer chases over buffers\n"
		"sized for each cache level, page walks, a modified line handed between two\n"
		"CPUs) and writes them, with the host's caches, as a sim preset: the latency\n"
		"model behind est_cycles and severity then speaks of this machine. Takes about\n"
		"10-20 seconds; run it on an otherwise idle machine.\n"
		"\n"
		"  -o, --output FILE  write the preset to FILE\n"
		"  --name NAME        write ~/.config/ameba/presets/NAME.conf (default: calibrated);\n"
		"                     use it as `ameba run --preset NAME` or AMEBA_PRESET=NAME\n"
		"  --base PRESET      caches, TLBs and unmeasured ratios from PRESET (default: host)\n"
		"  --cpus A,B         the two CPUs of the line transfer (default: the first two\n"
		"                     this process may run on)\n"
		"  --quick            fewer steps per figure (a rough preset in ~2 seconds)\n"
		"\n"
		"Prints each figure (median, min and max of 5 runs, in ns and cycles) and the\n"
		"file written. Exit status: 0 written; 1 error; 2 usage.\n");
}

/* Writes text to path atomically (a temporary file in the same directory,
 * then rename), creating missing parent directories. 0 or -1 (errno). */
static int write_atomic(const char *path, const char *text)
{
	char tmp[PATH_MAX + 16], dir[PATH_MAX];
	size_t len = strlen(text);
	ssize_t w;
	int fd;

	snprintf(dir, sizeof(dir), "%s", path);
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(dir, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	w = write(fd, text, len);
	if (w != (ssize_t)len || fsync(fd) || close(fd) || rename(tmp, path)) {
		int e = errno ? errno : EIO;
		unlink(tmp);
		errno = e;
		return -1;
	}
	return 0;
}

static uint32_t to_cycles(double ns, double ghz)
{
	double c = ns * ghz + 0.5;

	return c < 1 ? 1 : c > 100000 ? 100000 : (uint32_t)c;
}

static int parse_opts(int argc, char **argv, struct cal_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->name = "calibrated";
	o->base = "host";
	o->cpu_a = o->cpu_b = -1;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			calibrate_usage(stdout);
			return -1;
		} else if (!strcmp(a, "--quick")) {
			o->quick = 1;
		} else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && i + 1 < argc) {
			o->out = argv[++i];
		} else if (!strcmp(a, "--name") && i + 1 < argc) {
			o->name = argv[++i];
		} else if (!strcmp(a, "--base") && i + 1 < argc) {
			o->base = argv[++i];
		} else if (!strcmp(a, "--cpus") && i + 1 < argc) {
			char *end;
			long x = strtol(argv[++i], &end, 10), y = -1;
			if (*end == ',')
				y = strtol(end + 1, &end, 10);
			if (*end || x < 0 || y < 0 || x == y || x >= CPU_SETSIZE || y >= CPU_SETSIZE) {
				fprintf(stderr, "ameba calibrate: --cpus %s: want two different CPU "
					"numbers, e.g. --cpus 0,1\n", argv[i]);
				return 2;
			}
			o->cpu_a = (int)x;
			o->cpu_b = (int)y;
		} else {
			fprintf(stderr, "ameba calibrate: unexpected argument '%s'\n", a);
			calibrate_usage(stderr);
			return 2;
		}
	}
	return 0;
}

int agent_cmd_calibrate(int argc, char **argv)
{
	struct cal_opts o;
	struct mri_geom g;
	char err[512], path[PATH_MAX], why[256] = "", *text;
	int r = parse_opts(argc, argv, &o);
	double ghz;
	size_t l1, l2, llc, mem, steps;

	if (r)
		return r < 0 ? 0 : r;
	if (mri_geom_load(o.base, &g, err, sizeof(err))) {
		fprintf(stderr, "ameba calibrate: --base %s: %s\n", o.base, err);
		return 2;
	}
	if (o.out)
		snprintf(path, sizeof(path), "%s", o.out);
	else if (mri_geom_user_preset_path(o.name, path, sizeof(path))) {
		fprintf(stderr, "ameba calibrate: --name '%s': want letters, digits, '-', '_' or '.' "
			"(and a $HOME), or give -o FILE\n", o.name);
		return 2;
	}
	steps = o.quick ? 200000 : 2000000;
	l1 = g.l1d.sz_bytes / 2;
	l2 = g.l2.sz_bytes ? g.l2.sz_bytes / 2 : 0;
	if (l2 && l2 < 4 * g.l1d.sz_bytes)
		l2 = 4 * g.l1d.sz_bytes;
	llc = g.llc.sz_bytes ? g.llc.sz_bytes / 4 : 0;
	if (llc && llc < 4 * (g.l2.sz_bytes ? g.l2.sz_bytes : g.l1d.sz_bytes))
		llc = 4 * (g.l2.sz_bytes ? g.l2.sz_bytes : g.l1d.sz_bytes);
	mem = 4 * (g.llc.sz_bytes ? g.llc.sz_bytes : g.l2.sz_bytes);
	if (mem < (256u << 20))
		mem = 256u << 20;
	if (o.quick && mem > (256u << 20))
		mem = 256u << 20;

	struct cal_fig f_l1 = { "L1D hit", "lat_l1_hit", .how = "chase, half the L1D" };
	struct cal_fig f_l2 = { "L2 hit", "lat_l2_hit", .how = "chase, half the L2" };
	struct cal_fig f_llc = { "LLC hit", "lat_llc_hit", .how = "chase, a quarter of the LLC" };
	struct cal_fig f_mem = { "memory", "lat_mem_local", .how = "chase, 4x the LLC (256 MiB at least)" };
	struct cal_fig f_dense = { "8192 lines packed", NULL, .how = "512 KiB, huge pages" };
	struct cal_fig f_walk = { "8192 lines, 1 per page", NULL, .how = "32 MiB, 4 KiB pages" };
	struct cal_fig f_dense2 = { "512 lines packed", NULL, .how = "32 KiB, huge pages" };
	struct cal_fig f_stlb = { "512 lines, 1 per page", NULL, .how = "2 MiB, 4 KiB pages" };
	struct cal_fig f_xfer = { "line transfer", "lat_intervention", .how = "two pinned threads" };

	fprintf(stderr, "ameba calibrate: timing the core clock\n");
	ghz = core_ghz(o.quick);
	if (ghz <= 0) {
		fprintf(stderr, "ameba calibrate: no add chain for this CPU architecture; "
			"assuming 1 cycle per ns\n");
		ghz = 1;
	}
	fprintf(stderr, "ameba calibrate: core clock %.2f GHz\n", ghz);
#define CHASE(f, nr, stride, spread, huge)                                                     \
	do {                                                                                    \
		fprintf(stderr, "ameba calibrate: %s (%s)\n", (f).label, (f).how);              \
		if (chase_fig(&(f), (nr), (stride), (spread), (huge), steps)) {                  \
			fprintf(stderr, "ameba calibrate: out of memory for %s\n", (f).label);   \
			return 1;                                                               \
		}                                                                               \
	} while (0)
	CHASE(f_l1, l1 / LINE, LINE, 0, 1);
	if (l2)
		CHASE(f_l2, l2 / LINE, LINE, 0, 1);
	if (llc)
		CHASE(f_llc, llc / LINE, LINE, 0, 1);
	CHASE(f_mem, mem / LINE, LINE, 0, 1);
	CHASE(f_dense, 8192, LINE, 0, 1);
	CHASE(f_walk, 8192, PAGE_4K, 1, 0);
	CHASE(f_dense2, 512, LINE, 0, 1);
	CHASE(f_stlb, 512, PAGE_4K, 1, 0);
#undef CHASE
	fprintf(stderr, "ameba calibrate: %s (%s)\n", f_xfer.label, f_xfer.how);
	if (transfer_fig(&f_xfer, o.cpu_a, o.cpu_b, o.quick, why, sizeof(why)))
		fprintf(stderr, "ameba calibrate: line transfer not measured: %s; keeping %s's "
			"%u cycles\n", why, g.name, g.lat.intervention);

	/* the latencies, in cycles, onto the base geometry */
	struct mri_geom_lat base = g.lat;
	double walk = f_walk.med - f_dense.med, stlb = f_stlb.med - f_dense2.med;

	g.lat.l1_hit = to_cycles(f_l1.med, ghz);
	if (l2)
		g.lat.l2_hit = to_cycles(f_l2.med, ghz);
	if (llc)
		g.lat.llc_hit = to_cycles(f_llc.med, ghz);
	g.lat.mem_local = to_cycles(f_mem.med, ghz);
	g.lat.mem_remote = (uint32_t)((double)g.lat.mem_local * base.mem_remote / base.mem_local + 0.5);
	if (f_xfer.measured) {
		g.lat.intervention = to_cycles(f_xfer.med, ghz);
		g.lat.inval = (uint32_t)((double)g.lat.intervention * base.inval / base.intervention + 0.5);
	}
	g.lat.tlb_miss = walk > 0 ? to_cycles(walk, ghz) : 1;
	if (g.tlb2.nr_entries)
		g.lat.tlb2_hit = stlb > 0 ? to_cycles(stlb, ghz) : 1;
	/* keep the order the checker wants (each level no faster than the one above) */
	if (g.lat.l2_hit < g.lat.l1_hit)
		g.lat.l2_hit = g.lat.l1_hit;
	if (g.lat.llc_hit < g.lat.l2_hit)
		g.lat.llc_hit = g.lat.l2_hit;
	if (g.lat.mem_local < g.lat.llc_hit)
		g.lat.mem_local = g.lat.llc_hit;
	if (g.lat.mem_remote < g.lat.mem_local)
		g.lat.mem_remote = g.lat.mem_local;
	if (g.lat.intervention < g.lat.l1_hit)
		g.lat.intervention = g.lat.l1_hit;
	snprintf(g.name, sizeof(g.name), "%s", o.out ? o.out : o.name);
	if (mri_geom_check(&g, err, sizeof(err))) {
		fprintf(stderr, "ameba calibrate: the measured latencies do not make a valid "
			"geometry: %s\n", err);
		return 1;
	}

	/* the table */
	const struct cal_fig *rows[] = { &f_l1, &f_l2, &f_llc, &f_mem, &f_dense, &f_walk,
					 &f_dense2, &f_stlb, &f_xfer };
	printf("ameba calibrate: core clock %.2f GHz (dependent register adds); base geometry %s\n", ghz, o.base);
	printf("%-24s %10s %21s  %s\n", "figure", "median ns", "min..max ns", "how");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char range[48];
		if (!rows[i]->measured)
			continue;
		snprintf(range, sizeof(range), "%.2f..%.2f", rows[i]->lo, rows[i]->hi);
		printf("%-24s %10.2f %21s  %s%s\n", rows[i]->label, rows[i]->med, range, rows[i]->how,
		       rows[i]->no_thp ? " (no huge pages granted: includes page walks)" : "");
	}
	printf("\n%-16s %8s %8s  %s\n", "latency", "cycles", base.l1_hit ? "base" : "", "source");
#define ROW(k, v, b, src) printf("%-16s %8u %8u  %s\n", k, v, b, src)
	ROW("lat_l1_hit", g.lat.l1_hit, base.l1_hit, "measured");
	ROW("lat_l2_hit", g.lat.l2_hit, base.l2_hit, l2 ? "measured" : "base preset (no L2)");
	ROW("lat_llc_hit", g.lat.llc_hit, base.llc_hit, llc ? "measured" : "base preset (no LLC)");
	ROW("lat_mem_local", g.lat.mem_local, base.mem_local, "measured");
	ROW("lat_mem_remote", g.lat.mem_remote, base.mem_remote, "mem_local x base ratio");
	ROW("lat_intervention", g.lat.intervention, base.intervention,
	    f_xfer.measured ? "measured (one-way line transfer)" : "base preset");
	ROW("lat_inval", g.lat.inval, base.inval,
	    f_xfer.measured ? "intervention x base ratio" : "base preset");
	ROW("lat_tlb2_hit", g.lat.tlb2_hit, base.tlb2_hit, "measured (512 pages - packed)");
	ROW("lat_tlb_miss", g.lat.tlb_miss, base.tlb_miss, "measured (8192 pages - packed)");
#undef ROW
	if (f_xfer.measured)
		printf("line round trip between CPUs: %.0f ns\n", 2 * f_xfer.med);

	size_t need = mri_geom_format(&g, NULL, 0) + 1;
	size_t hdr = 1024;
	text = malloc(need + hdr);
	if (!text) {
		fprintf(stderr, "ameba calibrate: out of memory\n");
		return 1;
	}
	int h = snprintf(text, hdr,
			 "# written by `ameba calibrate` (base geometry %s, core clock %.2f GHz)\n"
			 "# measured: l1/l2/llc hit, local memory, line transfer (intervention),\n"
			 "# page walk (tlb_miss), L2 TLB hit; derived by the base's ratios:\n"
			 "# mem_remote, inval. Median of %d runs each.\n",
			 o.base, ghz, CAL_REPS);
	/* the formatted geometry starts with a comment naming it: keep ours */
	mri_geom_format(&g, text + h, need);
	if (write_atomic(path, text)) {
		fprintf(stderr, "ameba calibrate: cannot write %s: %s\n", path, strerror(errno));
		free(text);
		return 1;
	}
	free(text);
	printf("\nwrote %s\n", path);
	if (!o.out)
		printf("use it with `ameba run --preset %s` or AMEBA_PRESET=%s\n", o.name, o.name);
	else
		printf("use it with `ameba run --preset %s` or AMEBA_PRESET=%s\n", path, path);
	return 0;
}
