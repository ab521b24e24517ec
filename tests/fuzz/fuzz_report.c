/*
 * fuzz_report.c - libFuzzer target: `ameba report FILE` on arbitrary files
 * (agent_report_load, then the table agent_report_table prints). A file is
 * read as a report or refused with a message; the table of anything that
 * passes the load is printed without a crash, leak or undefined behaviour
 * whatever its fields hold (wrong types, huge or negative numbers, control
 * characters in names).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "report.h"

/* report.c's builder names these (search.c, plugin.c); reading and the
 * table, all that is fuzzed here, do not */
const char *agent_end_name(int end) { (void)end; return "?"; }
const char *agent_obj_kind_name(int kind) { (void)kind; return "?"; }
const char *agent_ctx_kind_name(int kind) { (void)kind; return "?"; }
double agent_ci_half(const struct agent_ci_tab *t, const char *name, int metric, double value) { (void)t; (void)name; (void)metric; (void)value; return -1; }
double agent_ci_share_half(const struct agent_ci_tab *t, const char *name, int metric, double value,
			   double prog) { (void)t; (void)name; (void)metric; (void)value; (void)prog; return -1; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	static FILE *sink;
	char err[512];
	cJSON *root;
	FILE *f;

	if (!path[0]) {
		snprintf(path, sizeof(path), "/tmp/fuzz_report.%d.json", (int)getpid());
		sink = fopen("/dev/null", "w");
	}
	f = fopen(path, "w");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	root = agent_report_load(path, err, sizeof(err));
	if (!root) {
		if (!err[0])
			__builtin_trap();	/* a refusal says why */
		return 0;
	}
	agent_report_table(root, sink, 0, 0);
	agent_report_table(root, sink, 3, 0.5);
	cJSON_Delete(root);
	return 0;
}
