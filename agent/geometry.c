/*
 * geometry.c - `ameba list presets` and `ameba geometry`: the cache
 * geometries the sim backend can simulate, from the same code the runtime
 * uses (mri/geom.c), so what is printed is what is simulated.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "geom.h"

static void fmt_size(uint64_t b, char *buf, size_t len)
{
	if (b == 0)
		snprintf(buf, len, "-");
	else if (b % (1u << 20) == 0)
		snprintf(buf, len, "%lluM", (unsigned long long)(b >> 20));
	else if (b % 1024 == 0)
		snprintf(buf, len, "%lluK", (unsigned long long)(b >> 10));
	else
		snprintf(buf, len, "%llu", (unsigned long long)b);
}

static void cache_summary(const struct mri_geom_cache *c, char *buf, size_t len)
{
	char sz[32];

	fmt_size(c->sz_bytes, sz, sizeof(sz));
	if (!c->sz_bytes)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%s/%uw/%uB", sz, c->assoc, c->line_bytes);
}

static void preset_row(const char *name)
{
	struct mri_geom g;
	char err[256], l1[48], l2[48], llc[48];

	if (mri_geom_load(name, &g, err, sizeof(err))) {
		printf("%-12s (unavailable: %s)\n", name, err);
		return;
	}
	cache_summary(&g.l1d, l1, sizeof(l1));
	cache_summary(&g.l2, l2, sizeof(l2));
	cache_summary(&g.llc, llc, sizeof(llc));
	printf("%-12s %-14s %-14s %-16s %5u %6u  %u/%u/%u/%u/%u\n", name, l1, l2, llc, g.nr_nodes,
	       g.tlb1.nr_entries, g.lat.l1_hit, g.lat.l2_hit, g.lat.llc_hit, g.lat.mem_local,
	       g.lat.mem_remote);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int agent_list_presets(void)
{
	char dir[512];
	DIR *d;

	printf("%-12s %-14s %-14s %-16s %5s %6s  %s\n", "preset", "l1d", "l2", "llc/node",
	       "nodes", "tlb", "latency l1/l2/llc/mem/remote (cycles)");
	for (const char *const *n = mri_geom_preset_names; *n; n++)
		preset_row(*n);
	/* the user's presets (`ameba calibrate`), by name, sorted */
	if (mri_geom_user_preset_path("x", dir, sizeof(dir)) == 0 && strrchr(dir, '/')) {
		char *names[256];
		size_t nr = 0;
		struct dirent *e;

		*strrchr(dir, '/') = 0;
		if ((d = opendir(dir))) {
			while ((e = readdir(d)) && nr < sizeof(names) / sizeof(names[0])) {
				size_t l = strlen(e->d_name);
				char path[600];
				if (l <= 5 || strcmp(e->d_name + l - 5, ".conf"))
					continue;
				e->d_name[l - 5] = 0;
				/* a name that a built-in preset shadows, or that is no valid name */
				if (mri_geom_user_preset_path(e->d_name, path, sizeof(path)))
					continue;
				names[nr] = strdup(e->d_name);
				if (names[nr])
					nr++;
			}
			closedir(d);
		}
		qsort(names, nr, sizeof(names[0]), cmp_str);
		for (size_t i = 0; i < nr; i++) {
			int builtin = 0;
			for (const char *const *n = mri_geom_preset_names; *n; n++)
				builtin |= !strcmp(*n, names[i]);
			if (!builtin)
				preset_row(names[i]);
			free(names[i]);
		}
		if (nr)
			printf("(presets after the built-in ones are files in %s)\n", dir);
	}
	printf("\nChoose with --preset NAME|FILE on `ameba run`, or AMEBA_PRESET=NAME|FILE (and\n"
	       "AMEBA_NODES=N) in the environment of an instrumented program; `ameba geometry\n"
	       "--preset NAME` prints every parameter; `ameba calibrate` measures this\n"
	       "machine's latencies into a preset of its own.\n");
	return 0;
}

static void geometry_usage(FILE *f)
{
	fprintf(f,
		"usage: ameba geometry [--preset NAME|FILE] [--nodes N]\n"
		"\n"
		"Prints the full geometry the sim backend would simulate, as config-file text\n"
		"(key = value) that can be edited and passed back as AMEBA_PRESET=FILE.\n"
		"\n"
		"  --preset NAME|FILE  host (default, or $AMEBA_PRESET), zen4, skylake-sp, r10000,\n"
		"                      or a config file\n"
		"  --nodes N           simulated NUMA nodes (default: the preset's, or $AMEBA_NODES)\n"
		"\n"
		"Environment: AMEBA_PRESET, AMEBA_NODES (as the options); AMEBA_SYSFS, the\n"
		"directory the host preset reads instead of /sys (another machine's tree).\n");
}

int agent_cmd_geometry(int argc, char **argv)
{
	const char *preset = getenv("AMEBA_PRESET"), *nodes = getenv("AMEBA_NODES");
	struct mri_geom g;
	char err[512], *text;
	size_t need;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			geometry_usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--preset") && i + 1 < argc) {
			preset = argv[++i];
		} else if (!strcmp(argv[i], "--nodes") && i + 1 < argc) {
			nodes = argv[++i];
		} else {
			fprintf(stderr, "ameba geometry: unexpected argument '%s'\n", argv[i]);
			geometry_usage(stderr);
			return 2;
		}
	}
	if (!preset || !*preset)
		preset = "host";
	if (mri_geom_load(preset, &g, err, sizeof(err))) {
		fprintf(stderr, "ameba geometry: %s\n", err);
		return 1;
	}
	if (nodes && *nodes &&
	    (mri_geom_set(&g, "nodes", nodes, err, sizeof(err)) ||
	     mri_geom_check(&g, err, sizeof(err)))) {
		fprintf(stderr, "ameba geometry: --nodes %s: %s\n", nodes, err);
		return 2;
	}
	need = mri_geom_format(&g, NULL, 0) + 1;
	text = malloc(need);
	if (!text) {
		fprintf(stderr, "ameba geometry: out of memory\n");
		return 1;
	}
	mri_geom_format(&g, text, need);
	fputs(text, stdout);
	free(text);
	return 0;
}
