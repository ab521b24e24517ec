/*
 * report.h - the ameba report: JSON (schema "ameba-report", version 1,
 * docs/report-schema.md) and the ranked terminal table rendered from it, so
 * that `ameba report FILE` shows exactly what the run showed.
 */
#ifndef AMEBA_AGENT_REPORT_H
#define AMEBA_AGENT_REPORT_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "search.h"

#define AGENT_REPORT_SCHEMA "ameba-report"
#define AGENT_REPORT_VERSION 1

/* How the run went around the search. */
struct agent_run_info {
	const char *mode;		/* "run" or "attach" */
	char *const *command;		/* the target's argv (run), or NULL */
	int nr_command;
	uint32_t interval_ms;
	uint64_t duration_ms;		/* 0: none */
	int target_state;		/* enum agent_target_state */
	int target_exit_code;		/* AGENT_TARGET_EXITED */
	int target_signal;		/* AGENT_TARGET_KILLED */
	double target_wall_s;		/* run: fork to exit; < 0 when unknown */
	double agent_cpu_s;		/* the agent's own CPU time (user + system) */
};

enum agent_target_state {
	AGENT_TARGET_RUNNING,		/* still running when the report was written */
	AGENT_TARGET_EXITED,		/* exited with target_exit_code */
	AGENT_TARGET_KILLED,		/* killed by target_signal */
	AGENT_TARGET_GONE,		/* ended; status unknown (attach) */
};

/*
 * Coverage (the report's "coverage" block, docs/report-schema.md): below
 * this share of the program's accesses accounted for, the report says what
 * is missing and multiplies every finding's confidence by coverage / 0.95.
 * A search that accounts for everything attributes at least 98% (nway stops
 * when the unsearched share is under 2%; the objects strategy measures every
 * object): 95% leaves room for the stack and small objects no strategy
 * measures, and flags windows that miss a third of the run.
 */
#define AGENT_COVERAGE_MIN 0.95

/* Builds the report; NULL on allocation failure. pl may be NULL. */
cJSON *agent_report_build(const struct agent_search *s, const struct agent_run_info *ri,
			  const struct agent_plugins *pl);

/*
 * Writes root to path atomically: path.tmp, fsync, rename, fsync of the
 * directory. A reader sees the old file or the whole new one. 0 or
 * AMEBA_EIO with err (len bytes) naming the file and the reason.
 */
int agent_report_write(const cJSON *root, const char *path, char *err, size_t len);
/* The same for n bytes of data; opt names the option that picks another
 * place (--output, --html) in the error. */
int agent_write_atomic(const char *path, const char *data, size_t n, const char *opt, char *err,
		       size_t len);
/*
 * The report as one self-contained HTML page (report_html.c), written
 * atomically like the JSON. 0, or AMEBA_E* with err naming the file.
 */
int agent_report_html_write(const cJSON *root, const char *path, char *err, size_t len);

/*
 * Reads a saved report. NULL on failure with err naming the file, the line
 * of a JSON syntax error, or the schema/version mismatch.
 */
cJSON *agent_report_load(const char *path, char *err, size_t len);

/*
 * The table hides findings below this severity by default (0.1% of the
 * program's estimated cycles): a cause that costs less is not worth a row,
 * and properties whose severity is the part no other cause claims (HotObject)
 * produce many 0.0% rows. The JSON report keeps every finding.
 */
#define AGENT_MIN_SEVERITY_DEFAULT 0.001

/*
 * Significance: when no finding reaches this severity (2% of the run's
 * estimated time), the report's verdict is "nothing significant" and the
 * table says so, showing where the memory time goes (the top objects by
 * their share of the stall cycles) rather than ranking noise.
 */
#define AGENT_SIGNIFICANT_SEVERITY 0.02
/* Objects in the summary's top_objects. */
#define AGENT_SUMMARY_TOP_OBJECTS 5

/*
 * The ranked table (design.md section 1): the findings whose severity is at
 * least min_severity, top rows of them (0: all), a line counting the hidden
 * ones, then advice. Ranks are the report's, so a row matches its JSON
 * finding.
 */
void agent_report_table(const cJSON *root, FILE *out, uint32_t top, double min_severity);

/*
 * --min-severity: "0.001", "0.1%" or "0" (show all), a share from 0 to 1.
 * 0, or -1 (nothing stored) when s is not one.
 */
int agent_parse_min_severity(const char *s, double *out);

/* "1-4,7" or "all" (when ids are every thread of the report). */
const char *agent_threads_text(const uint32_t *ids, uint32_t nr, uint32_t nr_all, char *buf,
			       size_t len);

#endif
