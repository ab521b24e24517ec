/*
 * list.c - `ameba list properties|strategies|metrics|backends|presets`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "ameba/ameba.h"
#include "perfmon/perfmon.h"
#include "plugins.h"

static void list_usage(FILE *f)
{
	fprintf(f, "usage: ameba list properties|strategies|metrics|backends|presets [options]\n"
		   "\n"
		   "  properties   the properties found on the plugin search path, one per line\n"
		   "  strategies   the search strategies found on the plugin search path\n"
		   "  metrics      the metric names a request or --metric accepts, with units\n"
		   "  backends     the monitor backends, whether each works on this machine and why not\n"
		   "  presets      the cache geometries of the sim backend (see ameba geometry)\n"
		   "\n"
		   "options (properties, strategies):\n"
		   "  --plugin-path DIR   also look in DIR (repeatable)\n"
		   "  --property FILE     also load FILE (repeatable)\n"
		   "  -v, --verbose       show the file each plugin came from\n"
		   "\n"
		   "Search path: <prefix>/lib/ameba, ~/.config/ameba/plugins, then --plugin-path.\n");
}

static int list_metrics(void)
{
	printf("%-18s %-10s %s\n", "metric", "unit", "description");
	for (int m = 0; m < AMEBA_M_NR; m++) {
		const struct ameba_metric_info *mi = ameba_metric_info(m);

		printf("%-18s %-10s %s\n", mi->name, mi->unit, mi->desc);
	}
	return 0;
}

static int list_plugins(int argc, char **argv, int props)
{
	struct agent_plugins pl;
	const char **dirs = NULL;
	uint32_t nr_dirs = 0;
	int verbose = 0, ret = 0;
	char err[512];

	agent_plugins_init(&pl);
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = NULL;

		if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			verbose = 1;
			continue;
		}
		if ((!strcmp(a, "--plugin-path") || !strcmp(a, "--property")) && i + 1 < argc)
			v = argv[++i];
		else if (!strncmp(a, "--plugin-path=", 14) || !strncmp(a, "--property=", 11))
			v = strchr(a, '=') + 1;
		if (!v) {
			fprintf(stderr, "ameba list: unexpected argument '%s'\n", a);
			list_usage(stderr);
			ret = 2;
			goto out;
		}
		if (!strncmp(a, "--plugin-path", 13)) {
			const char **d = realloc(dirs, (nr_dirs + 1) * sizeof(*d));

			if (!d)
				goto out;
			dirs = d;
			dirs[nr_dirs++] = v;
		}
	}
	agent_plugins_scan(&pl, dirs, nr_dirs);
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--property") && i + 1 < argc)
			agent_plugins_add_file(&pl, argv[++i], 0);
		else if (!strncmp(a, "--property=", 11))
			agent_plugins_add_file(&pl, a + 11, 0);
	}
	if (agent_plugins_link(&pl, NULL, 0, err, sizeof(err)))
		fprintf(stderr, "ameba list: %s\n", err);
	if (props) {
		printf("%-28s %-4s %-8s %s\n", "property", "lang", "context", "summary");
		for (uint32_t i = 0; i < pl.nr_props; i++) {
			const struct agent_property *p = &pl.props[i];
			char refines[128] = "";

			if (p->refines)
				snprintf(refines, sizeof(refines), " (refines %s)", p->refines);
			printf("%-28s %-4s %-8s %s%s", p->name, p->lang == AGENT_PROP_LUA ? "lua" : "c",
			       agent_ctx_kind_name(p->ctx_kind), p->summary, refines);
			if (verbose)
				printf("  [%s]", p->path);
			putchar('\n');
		}
	} else {
		printf("%-16s %s\n", "strategy", "summary");
		for (uint32_t i = 0; i < pl.nr_strategies; i++) {
			const struct agent_strategy *s = &pl.strategies[i];

			printf("%-16s %s", s->name, s->desc.summary ? s->desc.summary : "");
			if (verbose) {
				printf("  [%s]", s->path);
				for (uint32_t k = 0; k < s->desc.nr_params; k++)
					printf("\n%-16s   %s=%s  %s", "", s->desc.params[k].name,
					       s->desc.params[k].def ? s->desc.params[k].def : "",
					       s->desc.params[k].help ? s->desc.params[k].help : "");
			}
			putchar('\n');
		}
	}
out:
	free(dirs);
	agent_plugins_destroy(&pl);
	return ret;
}

int agent_cmd_list(int argc, char **argv)
{
	if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
		list_usage(argc < 1 ? stderr : stdout);
		return argc < 1 ? 2 : 0;
	}
	if (!strcmp(argv[0], "metrics"))
		return list_metrics();
	if (!strcmp(argv[0], "backends"))
		return perfmon_list_backends(stdout);
	if (!strcmp(argv[0], "presets"))
		return agent_list_presets();
	if (!strcmp(argv[0], "properties"))
		return list_plugins(argc - 1, argv + 1, 1);
	if (!strcmp(argv[0], "strategies"))
		return list_plugins(argc - 1, argv + 1, 0);
	fprintf(stderr, "ameba list: unknown list '%s'; expected properties, strategies, metrics, "
		"backends or presets\n", argv[0]);
	return 2;
}
