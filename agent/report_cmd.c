/*
 * report_cmd.c - `ameba report FILE`: re-renders a saved JSON report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "report.h"

static void report_usage(FILE *f)
{
	fprintf(f, "usage: ameba report FILE [--format table|json] [--top N] [--min-severity S]\n"
		   "       ameba report FILE --html OUT.html\n"
		   "\n"
		   "Prints a report saved by `ameba run` or `ameba attach` (ameba-PID.json) as the\n"
		   "ranked table the run printed (table, the default) or as JSON, or writes it as\n"
		   "one self-contained HTML page (no network needed to view it: findings, a\n"
		   "timeline per object, address heat strips, the thread x object map, line maps\n"
		   "of false sharing, the search trace; docs/user-guide.md, \"The HTML report\").\n"
		   "\n"
		   "  --html OUT.html      write the page (atomically) instead of printing; views\n"
		   "                       whose data the report lacks say so (heat strips and line\n"
		   "                       maps need a run with --html or --views)\n"
		   "  --format table|json  output form (default table)\n"
		   "  --top N              rows of the table (default 20; 0 = all)\n"
		   "  --min-severity S     leave findings below severity S out of the table (0.001\n"
		   "                       or 0.1%%, the default; 0 = all); --format json keeps them\n");
}

int agent_cmd_report(int argc, char **argv)
{
	const char *path = NULL, *html = NULL;
	int json = 0;
	long top = 20;
	double min_severity = AGENT_MIN_SEVERITY_DEFAULT;
	char err[1024];
	cJSON *root;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			report_usage(stdout);
			return 0;
		} else if ((!strcmp(a, "--format") && i + 1 < argc) || !strncmp(a, "--format=", 9)) {
			const char *v = a[8] == '=' ? a + 9 : argv[++i];

			if (!strcmp(v, "json"))
				json = 1;
			else if (!strcmp(v, "table"))
				json = 0;
			else {
				fprintf(stderr, "ameba report: --format %s: want table or json (for a "
					"page: --html OUT.html)\n", v);
				return 2;
			}
		} else if ((!strcmp(a, "--html") && i + 1 < argc) || !strncmp(a, "--html=", 7)) {
			html = a[6] == '=' ? a + 7 : argv[++i];
			if (!*html) {
				fprintf(stderr, "ameba report: --html: an empty file name; give one, "
					"e.g. --html report.html\n");
				return 2;
			}
		} else if ((!strcmp(a, "--top") && i + 1 < argc) || !strncmp(a, "--top=", 6)) {
			const char *v = a[5] == '=' ? a + 6 : argv[++i];
			char *end;

			top = strtol(v, &end, 10);
			if (*end || top < 0) {
				fprintf(stderr, "ameba report: --top %s: want a count (0 = all)\n", v);
				return 2;
			}
		} else if ((!strcmp(a, "--min-severity") && i + 1 < argc) ||
			   !strncmp(a, "--min-severity=", 15)) {
			const char *v = a[14] == '=' ? a + 15 : argv[++i];

			if (agent_parse_min_severity(v, &min_severity)) {
				fprintf(stderr, "ameba report: --min-severity %s: want a severity from 0 "
					"to 1 such as 0.001 or 0.1%% (0 shows every finding)\n", v);
				return 2;
			}
		} else if (a[0] != '-' && !path) {
			path = a;
		} else {
			fprintf(stderr, "ameba report: unexpected argument '%s'\n", a);
			report_usage(stderr);
			return 2;
		}
	}
	if (!path) {
		report_usage(stderr);
		return 2;
	}
	root = agent_report_load(path, err, sizeof(err));
	if (!root) {
		fprintf(stderr, "ameba report: %s\n", err);
		return 1;
	}
	if (html) {
		int rc = agent_report_html_write(root, html, err, sizeof(err));

		if (rc)
			fprintf(stderr, "ameba report: %s\n", err);
		else
			printf("html: %s\n", html);
		cJSON_Delete(root);
		return rc ? 1 : 0;
	}
	if (json) {
		char *text = cJSON_Print(root);

		if (text)
			printf("%s\n", text);
		free(text);
	} else {
		agent_report_table(root, stdout, (uint32_t)top, min_severity);
	}
	cJSON_Delete(root);
	return 0;
}
