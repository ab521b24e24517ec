/*
 * oracle_cmd.c - `ameba oracle FILE`: prints an AMEBA_ORACLE dump as a table
 * of objects (or bins), heaviest first by a chosen metric.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

static void oracle_usage(FILE *f)
{
	fprintf(f,
		"usage: ameba oracle FILE [--top N] [--metric NAME] [--bins]\n"
		"\n"
		"Prints the exact counts an instrumented program wrote to FILE (run it with\n"
		"AMEBA_ORACLE=FILE) as a table, one row per object, heaviest first.\n"
		"\n"
		"  --top N        rows to print (default 20; 0 = all)\n"
		"  --metric NAME  metric to rank by (default: mem_ref)\n"
		"  --bins         one row per bin (allocation site, global, [stack], ...)\n");
}

struct row {
	const cJSON *item;
	double value;
};

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return (x->value < y->value) - (x->value > y->value);
}

static double metric_of(const cJSON *item, const char *metric)
{
	const cJSON *total = cJSON_GetObjectItemCaseSensitive(item, "total");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(total, metric);

	return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

/* "0:1.2M 1:900k" style summary of the per-thread counts of one metric. */
static void thread_summary(const cJSON *item, const char *metric, char *buf, size_t len)
{
	const cJSON *threads = cJSON_GetObjectItemCaseSensitive(item, "threads");
	const cJSON *t;
	size_t o = 0;
	int shown = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach(t, threads) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, metric);

		if (!cJSON_IsNumber(v) || v->valuedouble == 0)
			continue;
		if (shown == 6) {
			snprintf(buf + o, len - o, " ...");
			return;
		}
		char id[32];

		o += (size_t)snprintf(buf + o, len - o, "%sT%s:%.0f", shown ? " " : "",
				      agent_escape(t->string ? t->string : "?", id, sizeof(id)),
				      v->valuedouble);
		if (o >= len)
			return;
		shown++;
	}
}

int agent_cmd_oracle(int argc, char **argv)
{
	const char *path = NULL, *metric = "mem_ref";
	int top = 20, bins = 0, nr_rows = 0, status = 1;
	char *text;
	cJSON *root;
	const cJSON *list, *item, *metrics;
	struct row *rows;
	double total = 0;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			oracle_usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--top") && i + 1 < argc) {
			top = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--metric") && i + 1 < argc) {
			metric = argv[++i];
		} else if (!strcmp(argv[i], "--bins")) {
			bins = 1;
		} else if (argv[i][0] != '-' && !path) {
			path = argv[i];
		} else {
			fprintf(stderr, "ameba oracle: unexpected argument '%s'\n", argv[i]);
			oracle_usage(stderr);
			return 2;
		}
	}
	if (!path) {
		oracle_usage(stderr);
		return 2;
	}
	text = agent_read_file(path, NULL);
	if (!text) {
		fprintf(stderr, "ameba oracle: cannot read %s: %s\n", path, strerror(errno));
		return 1;
	}
	root = cJSON_Parse(text);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		int line = 1;

		for (const char *p = text; at && p < at; p++)
			line += *p == '\n';
		fprintf(stderr, "ameba oracle: %s:%d: not valid JSON (is it an AMEBA_ORACLE file?)\n",
			path, line);
		free(text);
		return 1;
	}
	free(text);
	metrics = cJSON_GetObjectItemCaseSensitive(root, "metrics");
	{
		const cJSON *m;
		int known = 0;

		cJSON_ArrayForEach(m, metrics)
			known |= cJSON_IsString(m) && !strcmp(m->valuestring, metric);
		if (!known) {
			fprintf(stderr, "ameba oracle: %s has no metric '%s'; it has:", path, metric);
			cJSON_ArrayForEach(m, metrics)
				if (cJSON_IsString(m))
					fprintf(stderr, " %s", m->valuestring);
			fputc('\n', stderr);
			goto out;
		}
	}
	list = cJSON_GetObjectItemCaseSensitive(root, bins ? "bins" : "objects");
	rows = calloc((size_t)cJSON_GetArraySize(list) + 1, sizeof(*rows));
	if (!rows) {
		fprintf(stderr, "ameba oracle: out of memory\n");
		goto out;
	}
	cJSON_ArrayForEach(item, list) {
		rows[nr_rows].item = item;
		rows[nr_rows].value = metric_of(item, metric);
		total += rows[nr_rows].value;
		nr_rows++;
	}
	qsort(rows, (size_t)nr_rows, sizeof(*rows), cmp_row);

	printf("%4s %7s %-7s %-40s %10s %14s  %s\n", "rank", "share", "kind", bins ? "bin" : "object",
	       "size", metric, "per thread");
	for (int r = 0; r < nr_rows && (top == 0 || r < top); r++) {
		const cJSON *it = rows[r].item;
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(it, "kind");
		const cJSON *size = cJSON_GetObjectItemCaseSensitive(it, "size");
		char threads[160], nbuf[256], kbuf[64];

		if (rows[r].value == 0 && r > 0)
			break;
		thread_summary(it, metric, threads, sizeof(threads));
		printf("%4d %6.2f%% %-7s %-40.40s %10.0f %14.0f  %s\n", r + 1,
		       total > 0 ? 100.0 * rows[r].value / total : 0.0,
		       agent_escape(cJSON_IsString(kind) ? kind->valuestring : "?", kbuf, sizeof(kbuf)),
		       agent_escape(cJSON_IsString(name) ? name->valuestring : "?", nbuf, sizeof(nbuf)),
		       cJSON_IsNumber(size) ? size->valuedouble : 0.0, rows[r].value, threads);
	}
	printf("total %s: %.0f over %d %s\n", metric, total, nr_rows, bins ? "bins" : "objects");
	free(rows);
	status = 0;
out:
	cJSON_Delete(root);
	return status;
}
