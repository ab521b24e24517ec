/*
 * geom.c - cache geometries (geom.h): the built-in presets, the host's
 * caches from sysfs, `key = value` config files, validation and printing.
 * Compiled into ameba-common for the tools and, with the runtime's flags,
 * into libameba-rt for the simulator.
 *
 * Notes:
 *  - Hardware knowledge lives in the preset table and the key table below;
 *    the code only walks them. Every key is printed by mri_geom_format()
 *    in a form mri_geom_parse() reads back.
 *  - No malloc, no stdio streams (snprintf only): the runtime calls
 *    mri_geom_load while it initialises. Files are read with open/read,
 *    a config file into an anonymous mapping made by the system call
 *    (mmap is interposed in the runtime).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ameba/plugin.h"

#include "geom.h"

/*
 * Presets. Latencies are load-to-use cycles at the core clock.
 *
 * skylake-sp: 2-socket Xeon Gold 6142-class (16 cores, 2.6 GHz): 32 KiB
 *   8-way L1D, 1 MiB 16-way L2, 22 MiB 11-way non-inclusive L3 per socket;
 *   64-entry 4-way L1 dTLB, 1536-entry 12-way STLB. L3 ~70 cycles, DRAM
 *   ~85 ns local / ~140 ns remote, cross-core HITM ~45 ns.
 * zen4: EPYC 9004-class CCD (8 cores share 32 MiB 16-way L3), 32 KiB 8-way
 *   L1D, 1 MiB 8-way L2; 72-entry fully associative L1 dTLB, 3072-entry L2
 *   dTLB (modelled 12-way); ~3.7 GHz, DRAM ~110 ns; NPS1 (one node).
 * r10000: SGI Origin 2000 with 250 MHz MIPS R10000 (seeds 000/001): 32 KiB
 *   2-way L1D with 32 B lines, 4 MiB 2-way L2 with 128 B lines (the real L2
 *   replaces pseudo-randomly, seed 000 section 2.2.3; 2-way LRU here), no
 *   L3; 64-entry fully associative TLB whose entries map pairs of 16 KiB
 *   pages (32 KiB reach); two processors per node. Latencies from seed 001
 *   Table 4.7 (R10K 250 MHz, back-to-back): local memory 425 ns = 106 cycles;
 *   remote one hop +87% (Table 4.11) = 199; dirty intervention (DEXD) 983 ns
 *   = 246; invalidation (RDEX on SHRD minus READ) 320 ns = 80; TLB refill
 *   ~300 ns = 75 (section 2.1).
 * host: the caches of cpu0 from /sys/devices/system/cpu/cpu0/cache, the node
 *   count from /sys/devices/system/node/online, the CPUs per node from
 *   /sys/devices/system/cpu/online (AMEBA_SYSFS replaces "/sys", to read
 *   another machine's tree: tests/mri/sysfs_vm/); TLBs and latencies of
 *   skylake-sp (sysfs does not describe them).
 */
#define LAT(l1, l2, llc, ml, mr, iv, inv, t2, tm) \
	{ .l1_hit = l1, .l2_hit = l2, .llc_hit = llc, .mem_local = ml, .mem_remote = mr, \
	  .intervention = iv, .inval = inv, .tlb2_hit = t2, .tlb_miss = tm }
#define KiB(x) ((uint64_t)(x) << 10)
#define MiB(x) ((uint64_t)(x) << 20)

static const struct mri_geom preset_table[] = {
	{
		.name = "skylake-sp",
		.l1d = { KiB(32), 8, 64, MRI_GEOM_LRU },
		.l2 = { MiB(1), 16, 64, MRI_GEOM_LRU },
		.llc = { MiB(22), 11, 64, MRI_GEOM_LRU },
		.tlb1 = { 64, 4 }, .tlb2 = { 1536, 12 },
		.tlb_page_bytes = 4096, .page_bytes = 4096,
		.nr_cores = MRI_GEOM_MAX_CORES, .nr_nodes = 2,
		.core_map = MRI_GEOM_MAP_RR, .cores_per_node = 16,
		.placement = MRI_GEOM_FIRST_TOUCH, .word_bytes = 4, .three_c = 1,
		/* the cost model's table (plugin.h): the weights properties
		 * split stall cycles with are this preset's latencies */
		.lat = LAT(4, AMEBA_LAT_l2_hit, AMEBA_LAT_llc_hit, AMEBA_LAT_mem_local,
			   AMEBA_LAT_mem_remote, AMEBA_LAT_intervention, AMEBA_LAT_inval, 9,
			   AMEBA_LAT_tlb_miss),
	},
	{
		.name = "zen4",
		.l1d = { KiB(32), 8, 64, MRI_GEOM_LRU },
		.l2 = { MiB(1), 8, 64, MRI_GEOM_LRU },
		.llc = { MiB(32), 16, 64, MRI_GEOM_LRU },
		.tlb1 = { 72, 72 }, .tlb2 = { 3072, 12 },
		.tlb_page_bytes = 4096, .page_bytes = 4096,
		.nr_cores = MRI_GEOM_MAX_CORES, .nr_nodes = 1,
		.core_map = MRI_GEOM_MAP_RR, .cores_per_node = 8,
		.placement = MRI_GEOM_FIRST_TOUCH, .word_bytes = 4, .three_c = 1,
		.lat = LAT(4, 14, 50, 400, 560, 200, 150, 7, 35),
	},
	{
		.name = "r10000",
		.l1d = { KiB(32), 2, 32, MRI_GEOM_LRU },
		.l2 = { MiB(4), 2, 128, MRI_GEOM_LRU },
		.llc = { 0, 1, 128, MRI_GEOM_LRU },
		.tlb1 = { 64, 64 }, .tlb2 = { 0, 1 },
		.tlb_page_bytes = KiB(32), .page_bytes = KiB(16),
		.nr_cores = MRI_GEOM_MAX_CORES, .nr_nodes = 4,
		.core_map = MRI_GEOM_MAP_BLOCK, .cores_per_node = 2,
		.placement = MRI_GEOM_FIRST_TOUCH, .word_bytes = 4, .three_c = 1,
		.lat = LAT(2, 10, 10, 106, 199, 246, 80, 0, 75),
	},
};
#define NR_PRESETS (sizeof(preset_table) / sizeof(preset_table[0]))

const char *const mri_geom_preset_names[] = { "host", "zen4", "skylake-sp", "r10000", NULL };

/* ---- error text ---- */

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* ---- small readers (no stdio: the runtime must not allocate) ---- */

/*
 * An anonymous private mapping of sz bytes (a multiple of the page size), or
 * NULL. In the runtime mmap and munmap are interposed (the program's
 * mappings are objects): the system calls, directly.
 */
static void *map_anon(size_t sz)
{
	void *p = (void *)syscall(SYS_mmap, NULL, sz, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void unmap_anon(void *p, size_t sz)
{
	syscall(SYS_munmap, p, sz);
}

/* Reads a whole small file into buf (NUL-terminated). Returns its length or -errno. */
static long read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;

	if (fd < 0)
		return -errno;
	while (n + 1 < cap) {
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = 0;
	return (long)n;
}

/* "32K", "4M", "1G", "4096" (binary units); 0 on success. */
static int parse_size(const char *v, uint64_t *out)
{
	char *end;
	unsigned long long x;

	if (*v < '0' || *v > '9')
		return -1;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'k': case 'K': x <<= 10; end++; break;
	case 'm': case 'M': x <<= 20; end++; break;
	case 'g': case 'G': x <<= 30; end++; break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end)
		return -1;
	*out = x;
	return 0;
}

/* ---- the key table ---- */

enum key_type { KT_SIZE64, KT_SIZE32, KT_U32, KT_REPL, KT_MAP, KT_PLACE, KT_BOOL };

struct key_desc {
	const char *name;
	int type;
	size_t off;
	const char *what;	/* for "expected ..." */
};

#define G(f) offsetof(struct mri_geom, f)
static const struct key_desc key_table[] = {
	{ "l1d_size", KT_SIZE64, G(l1d.sz_bytes), "a size like 32K" },
	{ "l1d_assoc", KT_U32, G(l1d.assoc), "ways" },
	{ "l1d_line", KT_SIZE32, G(l1d.line_bytes), "bytes (a power of two)" },
	{ "l1d_repl", KT_REPL, G(l1d.repl), "lru or plru" },
	{ "l2_size", KT_SIZE64, G(l2.sz_bytes), "a size like 1M, or 0 for none" },
	{ "l2_assoc", KT_U32, G(l2.assoc), "ways" },
	{ "l2_line", KT_SIZE32, G(l2.line_bytes), "bytes (a power of two)" },
	{ "l2_repl", KT_REPL, G(l2.repl), "lru or plru" },
	{ "llc_size", KT_SIZE64, G(llc.sz_bytes), "a size like 32M, or 0 for none" },
	{ "llc_assoc", KT_U32, G(llc.assoc), "ways" },
	{ "llc_line", KT_SIZE32, G(llc.line_bytes), "bytes (a power of two)" },
	{ "llc_repl", KT_REPL, G(llc.repl), "lru or plru" },
	{ "tlb1_entries", KT_U32, G(tlb1.nr_entries), "entries, or 0 for no TLB model" },
	{ "tlb1_assoc", KT_U32, G(tlb1.assoc), "ways" },
	{ "tlb2_entries", KT_U32, G(tlb2.nr_entries), "entries, or 0 for none" },
	{ "tlb2_assoc", KT_U32, G(tlb2.assoc), "ways" },
	{ "tlb_page", KT_SIZE64, G(tlb_page_bytes), "bytes mapped by one TLB entry" },
	{ "page_size", KT_SIZE64, G(page_bytes), "bytes (NUMA placement unit)" },
	{ "cores", KT_U32, G(nr_cores), "1..64" },
	{ "nodes", KT_U32, G(nr_nodes), "1..64" },
	{ "core_map", KT_MAP, G(core_map), "rr or block" },
	{ "cores_per_node", KT_U32, G(cores_per_node), "cores" },
	{ "placement", KT_PLACE, G(placement), "first_touch or interleave" },
	{ "word_size", KT_SIZE32, G(word_bytes), "bytes (a power of two)" },
	{ "three_c", KT_BOOL, G(three_c), "0 or 1" },
	{ "lat_l1_hit", KT_U32, G(lat.l1_hit), "cycles" },
	{ "lat_l2_hit", KT_U32, G(lat.l2_hit), "cycles" },
	{ "lat_llc_hit", KT_U32, G(lat.llc_hit), "cycles" },
	{ "lat_mem_local", KT_U32, G(lat.mem_local), "cycles" },
	{ "lat_mem_remote", KT_U32, G(lat.mem_remote), "cycles" },
	{ "lat_intervention", KT_U32, G(lat.intervention), "cycles" },
	{ "lat_inval", KT_U32, G(lat.inval), "cycles" },
	{ "lat_tlb2_hit", KT_U32, G(lat.tlb2_hit), "cycles" },
	{ "lat_tlb_miss", KT_U32, G(lat.tlb_miss), "cycles" },
};
#define NR_KEYS (sizeof(key_table) / sizeof(key_table[0]))

static const char *const repl_names[] = { "lru", "plru", NULL };
static const char *const map_names[] = { "rr", "block", NULL };
static const char *const place_names[] = { "first_touch", "interleave", NULL };

static int enum_index(const char *const *names, const char *v)
{
	for (int i = 0; names[i]; i++)
		if (strcmp(names[i], v) == 0)
			return i;
	return -1;
}

/* Sets key k from text v; 0 or -1 (bad value). */
static int key_set(struct mri_geom *g, const struct key_desc *k, const char *v)
{
	char *p = (char *)g + k->off;
	uint64_t x;
	int e;

	switch (k->type) {
	case KT_SIZE64:
		if (parse_size(v, &x))
			return -1;
		*(uint64_t *)p = x;
		return 0;
	case KT_SIZE32:
	case KT_U32:
		if (parse_size(v, &x))
			return -1;
		if (k->type == KT_U32 && strspn(v, "0123456789") != strlen(v))
			return -1;	/* counts take no unit */
		if (x > UINT32_MAX)
			return -1;
		*(uint32_t *)p = (uint32_t)x;
		return 0;
	case KT_BOOL:
		if (strcmp(v, "0") && strcmp(v, "1"))
			return -1;
		*(int *)p = v[0] == '1';
		return 0;
	case KT_REPL:
		e = enum_index(repl_names, v);
		break;
	case KT_MAP:
		e = enum_index(map_names, v);
		break;
	default:
		e = enum_index(place_names, v);
		break;
	}
	if (e < 0)
		return -1;
	*(int *)p = e;
	return 0;
}

static const struct mri_geom *preset_find(const char *name)
{
	for (size_t i = 0; i < NR_PRESETS; i++)
		if (strcmp(preset_table[i].name, name) == 0)
			return &preset_table[i];
	return NULL;
}

/* ---- host ---- */

#define SYSFS_PATH_MAX 512

/* Reads the sysfs file dir/file (a path that does not fit: -1). */
static long sysfs_read(const char *dir, const char *file, char *buf, size_t cap)
{
	char path[SYSFS_PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/%s", dir, file);

	if (n < 0 || (size_t)n >= sizeof(path))
		return -1;
	return read_file(path, buf, cap);
}

static int sysfs_u64(const char *dir, const char *file, uint64_t *out)
{
	char buf[64];

	if (sysfs_read(dir, file, buf, sizeof(buf)) <= 0)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return parse_size(buf, out);
}

/* Counts the CPUs / nodes of a sysfs list like "0-3,8,10-11". */
static uint32_t count_list(const char *s)
{
	uint32_t n = 0;

	while (*s >= '0' && *s <= '9') {
		char *end;
		unsigned long a = strtoul(s, &end, 10), b = a;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		if (b >= a)
			n += (uint32_t)(b - a + 1);
		s = end;
		if (*s == ',')
			s++;
	}
	return n;
}

/* The root of sysfs: /sys, or $AMEBA_SYSFS (another machine's tree, for tests). */
static const char *sysfs_root(void)
{
	const char *r = getenv("AMEBA_SYSFS");

	return r && *r ? r : "/sys";
}

/* Puts a data or unified cache of `level` into g (the highest level above
 * 2 is the LLC); returns the bit of the level it set (1 L1D, 2 L2, 4 LLC),
 * 0 when the figures do not make a cache. ways 0: fully associative. */
static int put_level(struct mri_geom *g, uint64_t level, uint64_t size, uint64_t ways,
		     uint64_t line, int *llc_level)
{
	if (!ways && line)
		ways = size / line;
	if (!line || (line & (line - 1)) || !ways || size < ways * line)
		return 0;
	size -= size % (ways * line);
	struct mri_geom_cache cg = { size, (uint32_t)ways, (uint32_t)line, MRI_GEOM_LRU };
	if (level == 1) {
		g->l1d = cg;
		return 1;
	}
	if (level == 2) {
		g->l2 = cg;
		return 2;
	}
	if ((int)level > *llc_level) {
		g->llc = cg;
		*llc_level = (int)level;
		return 4;
	}
	return 0;
}

int mri_geom_cpuid_leaf(struct mri_geom *g, uint32_t leaf, uint32_t a, uint32_t b, uint32_t c,
			int *llc_level)
{
	/* 0x80000006's associativity codes (AMD APM vol. 3, E.4.4); 0: not given */
	static const uint8_t amd_ways[16] = { 0, 1, 2, 3, 4, 6, 8, 0, 16, 0, 32, 48, 64, 96, 128, 0 };

	if (leaf == 4 || leaf == 0x8000001d) {
		uint32_t type = a & 31;
		uint64_t ways = ((b >> 22) & 0x3ff) + 1, parts = ((b >> 12) & 0x3ff) + 1;
		uint64_t line = (b & 0xfff) + 1, sets = (uint64_t)c + 1;

		if (type != 1 && type != 3)	/* data or unified */
			return 0;
		return put_level(g, (a >> 5) & 7, ways * parts * line * sets,
				 (a >> 9) & 1 ? 0 : ways, line, llc_level);
	}
	if (leaf == 0x80000005 && c >> 24)	/* L1D: KiB, ways (0xff: fully), line */
		return put_level(g, 1, (uint64_t)(c >> 24) << 10,
				 ((c >> 16) & 0xff) == 0xff ? 0 : (c >> 16) & 0xff, c & 0xff, llc_level);
	if (leaf == 0x80000006 && c >> 16 && amd_ways[(c >> 12) & 0xf])	/* L2 */
		return put_level(g, 2, (uint64_t)(c >> 16) << 10, amd_ways[(c >> 12) & 0xf], c & 0xff,
				 llc_level);
	return 0;
}

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
/*
 * The caches CPUID describes, for a host whose sysfs has no cache directory
 * (a VM that hides it: Firecracker guests do). The deterministic cache
 * parameters (Intel's leaf 4, AMD's 0x8000001D with TOPOEXT: ways,
 * partitions, line and sets of every level), else AMD's legacy leaves for
 * the L1D (0x80000005) and L2 (0x80000006; their L3 field is the whole
 * chip's, not a core's share, and is not used).
 */
static void cpuid_caches(struct mri_geom *g, int *llc_level)
{
	unsigned a, b, c, d, max = 0, emax = 0, leaf = 0;

	__cpuid(0, max, b, c, d);
	__cpuid(0x80000000, emax, b, c, d);
	if (max >= 4) {
		__cpuid_count(4, 0, a, b, c, d);
		leaf = a & 31 ? 4 : 0;
	}
	if (!leaf && emax >= 0x8000001d) {
		__cpuid_count(0x8000001d, 0, a, b, c, d);
		leaf = a & 31 ? 0x8000001d : 0;
	}
	for (unsigned i = 0; leaf && i < 16; i++) {
		__cpuid_count(leaf, i, a, b, c, d);
		if (!(a & 31))
			break;
		mri_geom_cpuid_leaf(g, leaf, a, b, c, llc_level);
	}
	if (!leaf && emax >= 0x80000006) {
		__cpuid(0x80000005, a, b, c, d);
		mri_geom_cpuid_leaf(g, 0x80000005, a, b, c, llc_level);
		__cpuid(0x80000006, a, b, c, d);
		mri_geom_cpuid_leaf(g, 0x80000006, a, b, c, llc_level);
	}
}
#else
static void cpuid_caches(struct mri_geom *g, int *llc_level)
{
	(void)g;
	(void)llc_level;
}
#endif

static void host_geom(struct mri_geom *g)
{
	int have_l2 = 0, have_llc = 0, llc_level = 0, seen = 0;
	const char *root = sysfs_root();
	char dir[SYSFS_PATH_MAX], buf[64];
	int w, sys_ok;

	*g = *preset_find("skylake-sp");
	snprintf(g->name, sizeof(g->name), "host");
	for (int i = 0; i < 16; i++) {
		uint64_t level, size, ways, line;
		w = snprintf(dir, sizeof(dir), "%s/devices/system/cpu/cpu0/cache/index%d", root, i);
		if (w < 0 || (size_t)w >= sizeof(dir))
			break;
		if (sysfs_u64(dir, "level", &level) || sysfs_u64(dir, "size", &size) ||
		    sysfs_u64(dir, "coherency_line_size", &line))
			continue;
		char type[32];
		if (sysfs_read(dir, "type", type, sizeof(type)) <= 0)
			continue;
		if (strncmp(type, "Instruction", 11) == 0)
			continue;
		if (sysfs_u64(dir, "ways_of_associativity", &ways))
			ways = 0;	/* 0 = fully associative */
		seen = 1;
		int got = put_level(g, level, size, ways, line, &llc_level);
		have_l2 |= got == 2;
		have_llc |= got == 4;
	}
	/* No cache directory at all is not a machine without caches: the
	 * host's CPUID (not when AMEBA_SYSFS names another machine's tree),
	 * and skylake-sp's for a level it does not give. A level missing from
	 * a directory that describes others is absent. */
	if (!seen) {
		if (!getenv("AMEBA_SYSFS"))
			cpuid_caches(g, &llc_level);
		have_l2 = have_llc = 1;
	}
	if (!have_l2)
		g->l2.sz_bytes = 0;
	if (!have_llc)
		g->llc.sz_bytes = 0;
	/* line sizes must nest: fall back to none for a level that does not fit */
	if (g->l2.sz_bytes && g->l2.line_bytes < g->l1d.line_bytes)
		g->l2.sz_bytes = 0;
	uint32_t coh = g->l2.sz_bytes ? g->l2.line_bytes : g->l1d.line_bytes;
	if (g->llc.sz_bytes && g->llc.line_bytes != coh)
		g->llc.sz_bytes = 0;
	w = snprintf(dir, sizeof(dir), "%s/devices/system", root);
	sys_ok = w > 0 && (size_t)w < sizeof(dir);
	if (sys_ok && sysfs_read(dir, "node/online", buf, sizeof(buf)) > 0) {
		uint32_t n = count_list(buf);
		if (n >= 1 && n <= MRI_GEOM_MAX_NODES)
			g->nr_nodes = n;
	} else {
		g->nr_nodes = 1;
	}
	if (sys_ok && sysfs_read(dir, "cpu/online", buf, sizeof(buf)) > 0) {
		uint32_t n = count_list(buf);
		if (n >= g->nr_nodes)
			g->cores_per_node = n / g->nr_nodes;
	}
}

static int preset_load(const char *name, struct mri_geom *g)
{
	const struct mri_geom *p;

	if (strcmp(name, "host") == 0) {
		host_geom(g);
		return 0;
	}
	p = preset_find(name);
	if (!p)
		return AMEBA_ENOENT;
	*g = *p;
	return 0;
}

/* ---- config text ---- */

/* The built-in presets' names, comma-separated (mri_geom_preset_names). */
static const char *preset_list(void)
{
	static char buf[128];

	if (!buf[0])
		for (const char *const *n = mri_geom_preset_names; *n; n++)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s",
				 n == mri_geom_preset_names ? "" : ", ", *n);
	return buf;
}

int mri_geom_set(struct mri_geom *g, const char *key, const char *value, char *err,
		 size_t errlen)
{
	if (strcmp(key, "preset") == 0) {
		if (preset_load(value, g))
			return fail(err, errlen, AMEBA_ENOENT,
				    "unknown preset '%s' (%s)", value, preset_list());
		return 0;
	}
	for (size_t i = 0; i < NR_KEYS; i++) {
		if (strcmp(key_table[i].name, key))
			continue;
		if (key_set(g, &key_table[i], value))
			return fail(err, errlen, AMEBA_EPROTO, "bad value '%s' for %s (expected %s)",
				    value, key, key_table[i].what);
		return 0;
	}
	return fail(err, errlen, AMEBA_EPROTO, "unknown key '%s'", key);
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = 0;
	return s;
}

int mri_geom_parse(const char *text, size_t len, const char *fname, struct mri_geom *g,
		   char *err, size_t errlen)
{
	char line[512];
	size_t pos = 0;
	int lineno = 0;

	while (pos < len) {
		size_t n = 0;
		lineno++;
		while (pos < len && text[pos] != '\n') {
			if (n + 1 < sizeof(line))
				line[n++] = text[pos];
			pos++;
		}
		pos++;
		line[n] = 0;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		char *s = trim(line);
		if (!*s)
			continue;
		char *eq = strchr(s, '=');
		if (!eq)
			return fail(err, errlen, AMEBA_EPROTO, "%s:%d: expected 'key = value', got '%s'",
				    fname, lineno, s);
		*eq = 0;
		char *key = trim(s), *val = trim(eq + 1);
		char msg[256];
		int r = mri_geom_set(g, key, val, msg, sizeof(msg));
		if (r)
			return fail(err, errlen, r, "%s:%d: %s", fname, lineno, msg);
	}
	return 0;
}

int mri_geom_user_preset_path(const char *name, char *buf, size_t len)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	int n;

	if (!*name || strlen(name) > 64)
		return AMEBA_EINVAL;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
			return AMEBA_EINVAL;
	if (xdg && *xdg == '/')
		n = snprintf(buf, len, "%s/ameba/presets/%s.conf", xdg, name);
	else if (home && *home)
		n = snprintf(buf, len, "%s/.config/ameba/presets/%s.conf", home, name);
	else
		return AMEBA_ENOENT;
	return n > 0 && (size_t)n < len ? 0 : AMEBA_EINVAL;
}

int mri_geom_load(const char *spec, struct mri_geom *g, char *err, size_t errlen)
{
	size_t sl = strlen(spec);
	int r;

	if (!strchr(spec, '/') && !(sl > 5 && strcmp(spec + sl - 5, ".conf") == 0)) {
		char path[512];
		int fd;

		if (!preset_load(spec, g))
			return mri_geom_check(g, err, errlen);
		/* a preset of the user's (`ameba calibrate` writes them) */
		if (mri_geom_user_preset_path(spec, path, sizeof(path)) == 0 &&
		    (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
			close(fd);
			return mri_geom_load(path, g, err, errlen);
		}
		return fail(err, errlen, AMEBA_ENOENT,
			    "unknown preset '%s' (%s, a preset file in ~/.config/ameba/presets/ "
			    "such as `ameba calibrate` writes, or a config file path)", spec,
			    preset_list());
	}
	size_t cap = 64 << 10;
	char *buf = map_anon(cap);
	if (!buf)
		return fail(err, errlen, AMEBA_ENOMEM, "%s: out of memory", spec);
	long n = read_file(spec, buf, cap);
	if (n < 0) {
		unmap_anon(buf, cap);
		return fail(err, errlen, n == -ENOENT ? AMEBA_ENOENT : AMEBA_EIO, "%s: %s", spec,
			    strerror((int)-n));
	}
	host_geom(g);	/* the base when the file names no preset */
	r = mri_geom_parse(buf, (size_t)n, spec, g, err, errlen);
	unmap_anon(buf, cap);
	if (r)
		return r;
	snprintf(g->name, sizeof(g->name), "%s", spec);
	r = mri_geom_check(g, err, errlen);
	if (r) {
		char msg[256];
		snprintf(msg, sizeof(msg), "%s", err);
		return fail(err, errlen, r, "%s: %s", spec, msg);
	}
	return 0;
}

/* ---- validation ---- */

static int is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

static int check_cache(const char *lv, const struct mri_geom_cache *c, char *err, size_t errlen)
{
	if (!is_pow2(c->line_bytes) || c->line_bytes < 4 || c->line_bytes > 4096)
		return fail(err, errlen, AMEBA_EINVAL, "%s_line = %u: want a power of two in 4..4096",
			    lv, c->line_bytes);
	if (!c->assoc || c->assoc > 1024)
		return fail(err, errlen, AMEBA_EINVAL, "%s_assoc = %u: want 1..1024", lv, c->assoc);
	uint64_t way_set = (uint64_t)c->assoc * c->line_bytes;
	if (c->sz_bytes < way_set || c->sz_bytes % way_set)
		return fail(err, errlen, AMEBA_EINVAL,
			    "%s_size = %llu: not a multiple of %s_assoc * %s_line = %llu", lv,
			    (unsigned long long)c->sz_bytes, lv, lv, (unsigned long long)way_set);
	if (c->repl == MRI_GEOM_PLRU && (!is_pow2(c->assoc) || c->assoc > 64))
		return fail(err, errlen, AMEBA_EINVAL,
			    "%s_repl = plru needs a power-of-two %s_assoc <= 64 (have %u)", lv, lv,
			    c->assoc);
	if (c->repl != MRI_GEOM_LRU && c->repl != MRI_GEOM_PLRU)
		return fail(err, errlen, AMEBA_EINVAL, "%s_repl: unknown policy", lv);
	return 0;
}

int mri_geom_check(const struct mri_geom *g, char *err, size_t errlen)
{
	int r;

	if ((r = check_cache("l1d", &g->l1d, err, errlen)))
		return r;
	if (g->l2.sz_bytes && (r = check_cache("l2", &g->l2, err, errlen)))
		return r;
	if (g->llc.sz_bytes && (r = check_cache("llc", &g->llc, err, errlen)))
		return r;
	uint32_t coh = g->l2.sz_bytes ? g->l2.line_bytes : g->l1d.line_bytes;
	if (g->l2.sz_bytes && g->l2.line_bytes < g->l1d.line_bytes)
		return fail(err, errlen, AMEBA_EINVAL,
			    "l2_line = %u is smaller than l1d_line = %u (the L2 includes the L1)",
			    g->l2.line_bytes, g->l1d.line_bytes);
	if (g->llc.sz_bytes && g->llc.line_bytes != coh)
		return fail(err, errlen, AMEBA_EINVAL,
			    "llc_line = %u must equal the %s line (%u), the coherence unit",
			    g->llc.line_bytes, g->l2.sz_bytes ? "l2" : "l1d", coh);
	if (!g->tlb1.assoc || g->tlb1.nr_entries % g->tlb1.assoc)
		return fail(err, errlen, AMEBA_EINVAL,
			    "tlb1_entries = %u must be a multiple of tlb1_assoc = %u (0: no TLB)",
			    g->tlb1.nr_entries, g->tlb1.assoc);
	if (!g->tlb1.nr_entries && g->tlb2.nr_entries)
		return fail(err, errlen, AMEBA_EINVAL,
			    "tlb2_entries = %u without an L1 TLB (tlb1_entries = 0 turns the TLBs off: "
			    "set tlb2_entries = 0 too)", g->tlb2.nr_entries);
	if (g->tlb2.nr_entries && (!g->tlb2.assoc || g->tlb2.nr_entries % g->tlb2.assoc))
		return fail(err, errlen, AMEBA_EINVAL,
			    "tlb2_entries = %u must be a multiple of tlb2_assoc = %u",
			    g->tlb2.nr_entries, g->tlb2.assoc);
	if (g->tlb1.assoc > 1024 || g->tlb2.assoc > 1024)
		return fail(err, errlen, AMEBA_EINVAL, "TLB associativity above 1024");
	if (!is_pow2(g->tlb_page_bytes) || g->tlb_page_bytes < coh)
		return fail(err, errlen, AMEBA_EINVAL,
			    "tlb_page = %llu: want a power of two >= the line size %u",
			    (unsigned long long)g->tlb_page_bytes, coh);
	if (!is_pow2(g->page_bytes) || g->page_bytes < coh)
		return fail(err, errlen, AMEBA_EINVAL,
			    "page_size = %llu: want a power of two >= the line size %u",
			    (unsigned long long)g->page_bytes, coh);
	if (!g->nr_cores || g->nr_cores > MRI_GEOM_MAX_CORES)
		return fail(err, errlen, AMEBA_EINVAL, "cores = %u: want 1..%d", g->nr_cores,
			    MRI_GEOM_MAX_CORES);
	if (!g->nr_nodes || g->nr_nodes > MRI_GEOM_MAX_NODES)
		return fail(err, errlen, AMEBA_EINVAL, "nodes = %u: want 1..%d", g->nr_nodes,
			    MRI_GEOM_MAX_NODES);
	if (g->core_map != MRI_GEOM_MAP_RR && g->core_map != MRI_GEOM_MAP_BLOCK)
		return fail(err, errlen, AMEBA_EINVAL, "core_map: want rr or block");
	if (g->core_map == MRI_GEOM_MAP_BLOCK && !g->cores_per_node)
		return fail(err, errlen, AMEBA_EINVAL, "cores_per_node = 0 with core_map = block");
	if (g->placement != MRI_GEOM_FIRST_TOUCH && g->placement != MRI_GEOM_INTERLEAVE)
		return fail(err, errlen, AMEBA_EINVAL, "placement: want first_touch or interleave");
	if (!is_pow2(g->word_bytes) || g->word_bytes > coh || coh / g->word_bytes > 64)
		return fail(err, errlen, AMEBA_EINVAL,
			    "word_size = %u: want a power of two with %u / word_size <= 64 words",
			    g->word_bytes, coh);
	/* every level that can serve an access costs at least an L1 hit */
	const struct {
		const char *name;
		uint32_t v;
		int present;
	} serve[] = {
		{ "lat_l2_hit", g->lat.l2_hit, g->l2.sz_bytes != 0 },
		{ "lat_llc_hit", g->lat.llc_hit, g->llc.sz_bytes != 0 },
		{ "lat_mem_local", g->lat.mem_local, 1 },
		{ "lat_mem_remote", g->lat.mem_remote, 1 },
		{ "lat_intervention", g->lat.intervention, 1 },
	};
	for (size_t i = 0; i < sizeof(serve) / sizeof(serve[0]); i++)
		if (serve[i].present && serve[i].v < g->lat.l1_hit)
			return fail(err, errlen, AMEBA_EINVAL, "%s = %u is below lat_l1_hit = %u",
				    serve[i].name, serve[i].v, g->lat.l1_hit);
	return 0;
}

/* ---- printing ---- */

static void put_size(char *v, size_t n, uint64_t x)
{
	if (x && x % (1ull << 30) == 0)
		snprintf(v, n, "%lluG", (unsigned long long)(x >> 30));
	else if (x && x % (1ull << 20) == 0)
		snprintf(v, n, "%lluM", (unsigned long long)(x >> 20));
	else if (x && x % (1ull << 10) == 0)
		snprintf(v, n, "%lluK", (unsigned long long)(x >> 10));
	else
		snprintf(v, n, "%llu", (unsigned long long)x);
}

size_t mri_geom_format(const struct mri_geom *g, char *buf, size_t len)
{
	size_t off = 0;
	char v[64];

#define PUT(...)                                                                      \
	do {                                                                          \
		int w_ = snprintf(buf ? buf + (off < len ? off : len) : NULL,         \
				  off < len ? len - off : 0, __VA_ARGS__);            \
		if (w_ > 0)                                                           \
			off += (size_t)w_;                                            \
	} while (0)

	PUT("# ameba sim geometry: %s\n", g->name);
	for (size_t i = 0; i < NR_KEYS; i++) {
		const struct key_desc *k = &key_table[i];
		const char *p = (const char *)g + k->off;
		switch (k->type) {
		case KT_SIZE64:
			put_size(v, sizeof(v), *(const uint64_t *)p);
			break;
		case KT_SIZE32:
			put_size(v, sizeof(v), *(const uint32_t *)p);
			break;
		case KT_U32:
			snprintf(v, sizeof(v), "%u", *(const uint32_t *)p);
			break;
		case KT_BOOL:
			snprintf(v, sizeof(v), "%d", *(const int *)p ? 1 : 0);
			break;
		case KT_REPL:
			snprintf(v, sizeof(v), "%s", repl_names[*(const int *)p & 1]);
			break;
		case KT_MAP:
			snprintf(v, sizeof(v), "%s", map_names[*(const int *)p & 1]);
			break;
		default:
			snprintf(v, sizeof(v), "%s", place_names[*(const int *)p & 1]);
			break;
		}
		PUT("%s = %s\n", k->name, v);
	}
#undef PUT
	return off;
}
