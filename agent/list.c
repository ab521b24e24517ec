/*
 * list.c - `ameba list metrics|backends`.
 */
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "ameba/ameba.h"

static void list_usage(FILE *f)
{
	fprintf(f, "usage: ameba list metrics|backends\n"
		   "\n"
		   "  metrics    the metric names a request or --metric accepts, with units\n"
		   "  backends   the monitor backends built into this ameba\n");
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

static int list_backends(void)
{
	printf("%-8s %s\n", "backend", "description");
	printf("%-8s %s\n", "count",
	       "exact reads/writes per object and thread (programs built with ameba cc)");
	return 0;
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
		return list_backends();
	fprintf(stderr, "ameba list: unknown list '%s'; expected metrics or backends\n", argv[0]);
	return 2;
}
