/*
 * test_agent.h - what the agent's unit tests share: the directories they
 * run in and the helpers that load properties, strategies and the fake
 * provider's world.
 */
#ifndef AMEBA_TEST_AGENT_H
#define AMEBA_TEST_AGENT_H

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "check.h"
#include "jschema.h"
#include "plugins.h"
#include "provider.h"
#include "report.h"
#include "search.h"

/* set by main() from its arguments (test_agent.c) */
extern const char *src_dir, *strategy_dir, *plugin_dir;
extern char tmp_dir[256];

/* test_agent.c */
void write_file(const char *path, const char *text);
void load_props(struct agent_plugins *pl, const char *const *files, int nr);
int warned(const struct agent_plugins *pl, const char *a, const char *b);
void builtin_paths(char paths[3][512]);

/* test_agent_search.c */
void test_search_objects(void);
void test_objects_cold_folding(void);
void test_doc_totals_strategy(void);
void test_report_load_errors(void);
void test_provisional_objects(void);
void test_coverage(void);

#endif
