/*
 * geom.h - cache geometries: what the sim backend simulates, in the words
 * the runtime and the tools share (geom.c).
 *
 * A geometry (struct mri_geom) describes a machine: per core a private L1D
 * and L2 and an L1/L2 dTLB, a shared LLC per NUMA node, the NUMA layout and
 * a latency model. It comes from a built-in preset ("host": this machine's
 * caches from sysfs; "zen4", "skylake-sp", "r10000"), a preset of the
 * user's (`ameba calibrate` writes them) or a `key = value` config file.
 *
 * Notes:
 *  - One module for both sides: the simulator (monitor/sim/, inside
 *    libameba-rt) builds from a geometry, the agent (`ameba geometry`,
 *    `ameba list presets`, `ameba calibrate`, `ameba run --preset`) loads,
 *    checks and prints the same one, so what the agent prints is what the
 *    runtime simulates. Neither side needs the other to do so.
 *  - No malloc and no stdio streams: the runtime loads its geometry while
 *    it initialises, before it may allocate (a config file is read into an
 *    anonymous mapping).
 *  - AMEBA_SYSFS replaces the "/sys" the host preset reads (to test what
 *    another machine's caches give).
 *  - Invariant: every key mri_geom_format() prints, mri_geom_parse() reads
 *    back to an identical geometry.
 *
 * Errors: 0 or a negative AMEBA_E* code; functions that take an `err` buffer
 * also write one line naming the culprit (file, line, key, value).
 */
#ifndef AMEBA_MRI_GEOM_H
#define AMEBA_MRI_GEOM_H

#include <stddef.h>
#include <stdint.h>

#include "ameba/ameba.h"

#define MRI_GEOM_MAX_CORES 64	/* the simulator's directory sharer sets are 64-bit masks */
#define MRI_GEOM_MAX_NODES 64
#define MRI_GEOM_NAME_MAX 64

enum mri_geom_repl {
	MRI_GEOM_LRU,		/* true LRU */
	MRI_GEOM_PLRU,		/* binary-tree pseudo-LRU (assoc a power of two <= 64) */
};

enum mri_geom_placement {
	MRI_GEOM_FIRST_TOUCH,	/* a page lives on the node of the core that touched it first */
	MRI_GEOM_INTERLEAVE,	/* page p lives on node p % nr_nodes */
};

enum mri_geom_core_map {
	MRI_GEOM_MAP_RR,	/* node = core % nr_nodes */
	MRI_GEOM_MAP_BLOCK,	/* node = (core / cores_per_node) % nr_nodes */
};

/* One cache level. sz_bytes == 0: the level is absent (L2 and LLC only). */
struct mri_geom_cache {
	uint64_t sz_bytes;
	uint32_t assoc;		/* ways; sz_bytes / (assoc * line_bytes) sets */
	uint32_t line_bytes;	/* a power of two */
	int repl;		/* enum mri_geom_repl */
};

/* One TLB level. nr_entries == 0: absent (L2 TLB only). */
struct mri_geom_tlb {
	uint32_t nr_entries;
	uint32_t assoc;		/* nr_entries for fully associative */
};

/*
 * Latency model, in core cycles. An access costs the latency of the level
 * that served it (l1_hit .. mem_remote, or intervention when another core's
 * cache supplied a dirty line), plus inval when it had to invalidate other
 * copies, plus tlb2_hit or tlb_miss when the L1 dTLB missed.
 */
struct mri_geom_lat {
	uint32_t l1_hit, l2_hit, llc_hit;
	uint32_t mem_local, mem_remote;
	uint32_t intervention;	/* a dirty line supplied by another core (HITM) */
	uint32_t inval;		/* an upgrade / RFO that invalidated >= 1 copy */
	uint32_t tlb2_hit;	/* L1 dTLB miss that hits the L2 TLB */
	uint32_t tlb_miss;	/* page walk (miss in the last TLB level) */
};

struct mri_geom {
	char name[MRI_GEOM_NAME_MAX];	/* preset or config file it came from */
	struct mri_geom_cache l1d, l2, llc;	/* llc: one per NUMA node */
	struct mri_geom_tlb tlb1, tlb2;
	uint64_t tlb_page_bytes;	/* reach of one TLB entry */
	uint64_t page_bytes;		/* NUMA placement granularity */
	uint32_t nr_cores;		/* simulated cores, 1 .. MRI_GEOM_MAX_CORES */
	uint32_t nr_nodes;		/* NUMA nodes, 1 .. MRI_GEOM_MAX_NODES */
	int core_map;			/* enum mri_geom_core_map */
	uint32_t cores_per_node;	/* MRI_GEOM_MAP_BLOCK only */
	int placement;			/* enum mri_geom_placement */
	uint32_t word_bytes;		/* false-sharing granularity (power of two) */
	int three_c;			/* classify L1 misses compulsory/capacity/conflict */
	struct mri_geom_lat lat;
};

/*
 * Fills g from `spec`: a preset name ("host", "zen4", "skylake-sp", "r10000")
 * or the path of a config file (anything containing '/' or ending in
 * ".conf"). A config file holds `key = value` lines ('#' starts a comment);
 * `preset = NAME` (first) picks the base, the other keys override it; the
 * keys are those printed by mri_geom_format(). The result is validated.
 * Returns 0, AMEBA_ENOENT (unknown preset, missing file), AMEBA_EPROTO (bad
 * line) or AMEBA_EINVAL (inconsistent geometry); err gets "file:line: ...".
 */
int mri_geom_load(const char *spec, struct mri_geom *g, char *err, size_t errlen);

/* The file of the user's preset `name` (letters, digits, '-', '_', '.'):
 * $XDG_CONFIG_HOME/ameba/presets/NAME.conf, else
 * $HOME/.config/ameba/presets/NAME.conf. 0, AMEBA_EINVAL (bad name, too
 * long) or AMEBA_ENOENT (no home). mri_geom_load(NAME) reads it when
 * NAME is no built-in preset. */
int mri_geom_user_preset_path(const char *name, char *buf, size_t len);

/* Parses config text (as if read from file `fname`) on top of g. */
int mri_geom_parse(const char *text, size_t len, const char *fname, struct mri_geom *g,
		   char *err, size_t errlen);

/* Sets one key (a config-file line's key and value) on g. */
int mri_geom_set(struct mri_geom *g, const char *key, const char *value, char *err,
		 size_t errlen);

/* Validates g once; the simulator then trusts it. 0 or AMEBA_EINVAL + err. */
int mri_geom_check(const struct mri_geom *g, char *err, size_t errlen);

/* Writes g as config text (`key = value` lines that mri_geom_parse reads
 * back to an identical geometry) into buf; returns the length it needed. */
size_t mri_geom_format(const struct mri_geom *g, char *buf, size_t len);

/* Names of the built-in presets, NULL-terminated. */
extern const char *const mri_geom_preset_names[];

/*
 * One CPUID cache descriptor into g, as the host preset reads them where
 * sysfs has no cache directory: leaf 4 or 0x8000001D (a, b, c of one
 * subleaf: type, level, ways, partitions, line, sets), or AMD's legacy
 * 0x80000005 / 0x80000006 (c: the L1D / the L2). *llc_level: the highest
 * level above 2 put so far (0 at first). Returns the level's bit (1 L1D,
 * 2 L2, 4 LLC), 0 when the registers describe no data cache.
 */
int mri_geom_cpuid_leaf(struct mri_geom *g, uint32_t leaf, uint32_t a, uint32_t b, uint32_t c,
			int *llc_level);

#endif /* AMEBA_MRI_GEOM_H */
