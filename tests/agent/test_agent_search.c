/*
 * test_agent_search.c - the agent's search loop on the fake provider
 * (agent/provider_fake.c): experiments, coverage, provisional objects,
 * cold folding, reports built from a search, and what ends a search.
 */
#include "test_agent.h"

/*
 * The fake world: a false-sharing program in miniature. Per interval:
 *   counters  @0x2000 64 B   T1..T4 400 mem_ref each, 200 writes   (1600)
 *   sizes     @0x1000 1 KiB  T1..T4 100 each                        (400)
 *   new_node  3 blocks, 2 adjacent; T0 10 each                      (30)
 *   [stack T0]               T0 5                                   (5)
 * Program total 2035 per interval.
 */
static struct agent_fake_object fake_objs[8];

static void fake_world(struct agent_fake_spec *spec)
{
	static const int metrics[] = { AMEBA_M_MEM_REF, AMEBA_M_READS, AMEBA_M_WRITES };
	struct agent_fake_object *o = fake_objs;

	memset(fake_objs, 0, sizeof(fake_objs));
	o[0].obj = (struct ameba_object){ 1, AMEBA_OBJ_GLOBAL, "sizes", NULL, 0x1000, 0x1400, 1024, 1, 1 };
	for (int t = 1; t <= 4; t++) {
		o[0].rates[t][AMEBA_M_MEM_REF] = 100;
		o[0].rates[t][AMEBA_M_READS] = 100;
	}
	o[1].obj = (struct ameba_object){ 2, AMEBA_OBJ_HEAP, "alloc_counters@false_sharing.c:67",
					  "alloc_counters@false_sharing.c:67", 0x2000, 0x2040, 64, 1, 1 };
	for (int t = 1; t <= 4; t++) {
		o[1].rates[t][AMEBA_M_MEM_REF] = 400;
		o[1].rates[t][AMEBA_M_READS] = 200;
		o[1].rates[t][AMEBA_M_WRITES] = 200;
	}
	for (int b = 0; b < 3; b++) {
		uintptr_t start = b < 2 ? 0x3000 + 0x20 * (uintptr_t)b : 0x3100;

		o[2 + b].obj = (struct ameba_object){ 10 + (uint64_t)b, AMEBA_OBJ_HEAP, "new_node@list.c:10",
						      "new_node@list.c:10", start, start + 0x20, 32, 1, 1 };
		o[2 + b].rates[0][AMEBA_M_MEM_REF] = 10;
		o[2 + b].rates[0][AMEBA_M_WRITES] = 10;
	}
	o[5].obj = (struct ameba_object){ 20, AMEBA_OBJ_STACK, "[stack T0]", NULL, 0x7000, 0x8000, 4096, 1, 1 };
	o[5].rates[0][AMEBA_M_MEM_REF] = 5;
	o[5].rates[0][AMEBA_M_WRITES] = 5;

	memset(spec, 0, sizeof(*spec));
	spec->program = "/tmp/wl_false_sharing";
	spec->backend = "count";
	spec->metrics = metrics;
	spec->nr_metrics = 3;
	spec->objects = fake_objs;
	spec->nr_objects = 6;
	spec->nr_threads = 5;
}

static int load_objects(struct agent_plugins *pl)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/objects.so", strategy_dir);
	return agent_plugins_add_file(pl, path, 0);
}

static cJSON *load_schema(void)
{
	char path[512], *text;
	cJSON *s;

	snprintf(path, sizeof(path), "%s/docs/report-schema.json", src_dir);
	text = agent_read_file(path, NULL);
	if (!text) {
		perror(path);
		exit(2);
	}
	s = cJSON_Parse(text);
	free(text);
	if (!s) {
		fprintf(stderr, "%s: not JSON\n", path);
		exit(2);
	}
	return s;
}

void test_search_objects(void)
{
	struct agent_fake_spec spec;
	struct agent_plugins pl;
	struct agent_search s;
	struct agent_run_info ri = { 0 };
	char paths[3][512], err[512], out[600], *table = NULL;
	const char *list[3];
	volatile sig_atomic_t stop = 0;
	size_t table_len = 0;
	cJSON *schema = load_schema(), *rep, *back;
	FILE *mem;
	static char *const cmd[] = { "wl_false_sharing", "1" };

	builtin_paths(paths);
	for (int i = 0; i < 3; i++)
		list[i] = paths[i];
	load_props(&pl, list, 3);
	CHECK(load_objects(&pl) == 0);
	CHECK(agent_plugins_strategy(&pl, "objects") != NULL);

	fake_world(&spec);
	spec.nr_intervals = 5;
	memset(&s, 0, sizeof(s));
	s.pl = &pl;
	s.strat = agent_plugins_strategy(&pl, "objects");
	s.prov = agent_provider_fake_open(&spec);
	s.opts.interval_ms = 100;
	s.opts.primary_metric = -1;
	s.opts.stop = &stop;
	CHECK(agent_search_run(&s) == 0);
	/* 3 metrics x (4 units + the total) */
	CHECK_EQ_U64(agent_provider_fake_last_nr_counters(s.prov), 15);
	CHECK_EQ_U64(agent_provider_fake_nr_experiments(s.prov), 5);
	CHECK_EQ_U64(s.nr_iterations, 5);
	CHECK(s.end == AGENT_END_EXITED);
	CHECK(s.partial == 1);
	CHECK(s.primary_metric == AMEBA_M_MEM_REF);	/* count backend: no l1d_miss */
	CHECK_STR(ameba_param_get(&s.strat_params.view, "metric"), "mem_ref");
	CHECK_NEAR(s.program_totals[AMEBA_M_MEM_REF], 5 * 2035.0);
	CHECK_EQ_U64(s.nr_contexts, 5);	/* program + 4 units */
	CHECK_EQ_U64(s.findings.nr, 2);
	CHECK_STR(s.findings.v[0].property, "HotObject");
	CHECK_STR(s.findings.v[0].object.name, "alloc_counters@false_sharing.c:67");
	CHECK(s.findings.v[0].object.kind == AMEBA_OBJ_HEAP);
	CHECK_EQ_U64(s.findings.v[0].object.addr, 0x2000);
	CHECK_NEAR(s.findings.v[0].severity, 1600.0 / 2035.0);
	CHECK(s.findings.v[0].nr_threads == 4 && s.findings.v[0].threads[0] == 1);
	CHECK_STR(s.findings.v[1].object.name, "sizes");
	CHECK_NEAR(s.findings.v[1].severity, 400.0 / 2035.0);
	/* objects summary: the bin of three blocks is one row, exact */
	CHECK_EQ_U64(s.nr_objects, 4);
	CHECK_STR(s.objects[2].name, "new_node@list.c:10");
	CHECK(s.objects[2].kind == AMEBA_OBJ_BIN);
	CHECK_EQ_U64(s.objects[2].nr_blocks, 3);
	CHECK_EQ_U64(s.objects[2].sz_bytes, 96);
	CHECK_NEAR(s.objects[2].values[AMEBA_M_MEM_REF], 150);
	CHECK_NEAR(s.objects[2].values[AMEBA_M_WRITES], 150);
	CHECK_NEAR(s.threads[1].values[AMEBA_M_MEM_REF], 5 * 500.0);
	/* coverage: the 4 units over the one window account for every event;
	 * the strategy's own total counter (no ranges) serves as the agent's */
	CHECK_EQ_U64(s.coverage.nr_objects, 4);
	CHECK_EQ_U64(s.coverage.nr_windows, 1);
	CHECK_NEAR(s.coverage.total, 5 * 2035.0);
	CHECK_NEAR(s.coverage.attributed, 5 * 2035.0);
	CHECK_NEAR(s.coverage.searched, 5 * 2035.0);
	CHECK_EQ_U64(s.coverage.nr_searched, 5);
	CHECK(s.coverage.searched_exact == 1);

	ri.mode = "run";
	ri.command = cmd;
	ri.nr_command = 2;
	ri.interval_ms = 100;
	ri.target_state = AGENT_TARGET_EXITED;
	rep = agent_report_build(&s, &ri, &pl);
	CHECK(rep != NULL);
	CHECK(agent_jschema_validate(schema, rep, err, sizeof(err)) == 0);
	if (err[0])
		fprintf(stderr, "schema: %s\n", err);
	snprintf(out, sizeof(out), "%s/report.json", tmp_dir);
	CHECK(agent_report_write(rep, out, err, sizeof(err)) == 0);
	{
		char tmp[620];

		snprintf(tmp, sizeof(tmp), "%s.tmp", out);
		CHECK(access(tmp, F_OK) != 0);	/* renamed into place */
	}
	back = agent_report_load(out, err, sizeof(err));
	CHECK(back != NULL);
	CHECK(back && cJSON_Compare(rep, back, 1));
	CHECK(agent_jschema_validate(schema, back, err, sizeof(err)) == 0);
	{
		const cJSON *cov = cJSON_GetObjectItemCaseSensitive(back, "coverage");

		CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(cov, "share")->valuedouble, 1);
		CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(cov, "window_of_search")->valuedouble, 1);
		CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(cov, "factor")->valuedouble, 1);
		CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(cov, "total")->valuedouble, 10175);
		CHECK_STR(cJSON_GetObjectItemCaseSensitive(cov, "window_of_search_by")->valuestring,
			  "mem_ref");
		CHECK_EQ_U64(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cov, "missing")), 0);
	}

	mem = open_memstream(&table, &table_len);
	agent_report_table(back, mem, 20, AGENT_MIN_SEVERITY_DEFAULT);
	fclose(mem);
	CHECK(strstr(table, "warning:") == NULL && strstr(table, "note:") == NULL);
	CHECK_HAS(table, "partial report: target exited");
	CHECK_HAS(table, "rank severity conf property               context                                 threads  evidence\n");
	CHECK_HAS(table, "   1   78.6%  1.00 HotObject              heap alloc_counters@false_sharing.c:67 (64 B) 1-4      78.6% of mem_ref (8000 of 10.2k)\n");
	CHECK_HAS(table, "   2   19.7%  1.00 HotObject              global sizes (1.0 KiB)                  1-4      19.7% of mem_ref (2000 of 10.2k)\n");
	CHECK_HAS(table, "advice:\n  1. HotObject on heap alloc_counters@false_sharing.c:67 (64 B): Most memory work");
	CHECK(strstr(table, "not shown") == NULL);
	free(table);

	/* --min-severity: rows below it are left out, counted, still in the JSON */
	mem = open_memstream(&table, &table_len);
	agent_report_table(back, mem, 20, 0.5);
	fclose(mem);
	CHECK_HAS(table, "   1   78.6%  1.00 HotObject              heap alloc_counters@false_sharing.c:67");
	CHECK(strstr(table, "global sizes") == NULL);
	CHECK_HAS(table, "(1 finding below severity 50.0% not shown; --min-severity 0 shows it)\n");
	free(table);
	mem = open_memstream(&table, &table_len);
	agent_report_table(back, mem, 1, 0.19);	/* 19.7% shown, cut by --top */
	fclose(mem);
	CHECK_HAS(table, "(1 more findings in the JSON report)\n");
	CHECK(strstr(table, "not shown") == NULL);
	free(table);
	mem = open_memstream(&table, &table_len);
	agent_report_table(back, mem, 20, 0.9);
	fclose(mem);
	CHECK_HAS(table, "no finding reaches severity 90.0% on the 5 contexts measured\n");
	CHECK_HAS(table, "top objects by mem_ref:\n");
	CHECK_HAS(table, "(2 findings below severity 90.0% not shown; --min-severity 0 shows them)\n");
	CHECK(strstr(table, "advice:") == NULL);
	free(table);
	CHECK_EQ_U64(cJSON_GetArraySize(cJSON_GetObjectItem(back, "findings")), 2);
	{
		double v = -1;

		CHECK(agent_parse_min_severity("0.1%", &v) == 0);
		CHECK_NEAR(v, 0.001);
		CHECK(agent_parse_min_severity("0", &v) == 0 && v == 0);
		CHECK(agent_parse_min_severity("0.25", &v) == 0);
		CHECK_NEAR(v, 0.25);
		CHECK(agent_parse_min_severity("2", &v) == -1);
		CHECK(agent_parse_min_severity("-0.1", &v) == -1);
		CHECK(agent_parse_min_severity("0.1x", &v) == -1);
		CHECK(agent_parse_min_severity("", &v) == -1);
		CHECK_NEAR(v, 0.25);	/* a refused value stores nothing */
	}

	/* the validator catches what a broken report would get wrong */
	{
		static const struct {
			int line;
			const char *path, *json, *msg;
		} rows[] = {
			{ __LINE__, "severity", "1.5", "at /findings/0/severity: 1.5 is above the maximum 1" },
			{ __LINE__, "rank", "0", "at /findings/0/rank: 0 is below the minimum 1" },
			{ __LINE__, "property", "7", "at /findings/0/property: a integer where the schema wants \"string\"" },
			{ __LINE__, "refined_from", "3.5", "at /findings/0/refined_from: a number where" },
			{ __LINE__, "extra", "1", "member \"extra\" is not in the schema" },
			{ __LINE__, "predicted_speedup", "0",
			  "at /findings/0/predicted_speedup: 0 is not above the exclusive minimum 0" },
			{ __LINE__, "absorbed", "[{\"rank\": 1}]",
			  "at /findings/0/absorbed/0: the required member \"property\" is missing" },
		};

		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
			cJSON *bad = cJSON_Duplicate(rep, 1);
			cJSON *f0 = cJSON_GetArrayItem(cJSON_GetObjectItem(bad, "findings"), 0);

			cJSON_DeleteItemFromObject(f0, rows[i].path);
			cJSON_AddItemToObject(f0, rows[i].path, cJSON_Parse(rows[i].json));
			CHECK_AT(rows[i].line, agent_jschema_validate(schema, bad, err, sizeof(err)) ==
						       AMEBA_EPROTO);
			if (!strstr(err, rows[i].msg))
				fprintf(stderr, "row %d: %s\n", rows[i].line, err);
			CHECK_AT(rows[i].line, strstr(err, rows[i].msg) != NULL);
			cJSON_Delete(bad);
		}
		cJSON *bad = cJSON_Duplicate(rep, 1);

		cJSON_DeleteItemFromObject(bad, "findings");
		CHECK(agent_jschema_validate(schema, bad, err, sizeof(err)) == AMEBA_EPROTO);
		CHECK_HAS(err, "the required member \"findings\" is missing");
		cJSON_ReplaceItemInObject(bad, "reason", cJSON_CreateString("bored"));
		cJSON_AddItemToObject(bad, "findings", cJSON_CreateArray());
		CHECK(agent_jschema_validate(schema, bad, err, sizeof(err)) == AMEBA_EPROTO);
		CHECK_HAS(err, "at /reason: \"bored\" is not one of the values");
		cJSON_ReplaceItemInObject(bad, "reason", cJSON_CreateString("complete"));
		cJSON_ReplaceItemInObject(bad, "started", cJSON_CreateString("yesterday"));
		CHECK(agent_jschema_validate(schema, bad, err, sizeof(err)) == AMEBA_EPROTO);
		CHECK_HAS(err, "at /started: \"yesterday\" does not match");
		cJSON_Delete(bad);
	}
	cJSON_Delete(back);
	cJSON_Delete(rep);
	s.prov->ops->close(s.prov);
	agent_search_free(&s);

	/* a budget: --duration ends it, complete data, not partial */
	fake_world(&spec);
	spec.interval_delay_ms = 20;
	memset(&s, 0, sizeof(s));
	s.pl = &pl;
	s.strat = agent_plugins_strategy(&pl, "objects");
	s.prov = agent_provider_fake_open(&spec);
	s.opts.interval_ms = 20;
	s.opts.duration_ms = 150;
	s.opts.primary_metric = AMEBA_M_WRITES;
	s.opts.stop = &stop;
	CHECK(agent_search_run(&s) == 0);
	CHECK(s.end == AGENT_END_DURATION);
	CHECK(s.partial == 0);
	CHECK(s.nr_iterations >= 3 && s.nr_iterations <= 9);
	CHECK(s.findings.nr >= 1);
	/* ranked by writes: counters 800 of 835 per interval */
	CHECK_STR(s.findings.v[0].object.name, "alloc_counters@false_sharing.c:67");
	CHECK_NEAR(s.findings.v[0].severity, 800.0 / 835.0);
	s.prov->ops->close(s.prov);
	agent_search_free(&s);

	/* rounds=2: the strategy finishes by itself */
	{
		struct agent_params given = { 0 };

		agent_params_set(&given, "rounds", "2");
		fake_world(&spec);
		memset(&s, 0, sizeof(s));
		s.pl = &pl;
		s.strat = agent_plugins_strategy(&pl, "objects");
		s.strat_given = &given;
		s.prov = agent_provider_fake_open(&spec);
		s.opts.interval_ms = 10;
		s.opts.primary_metric = -1;
		s.opts.stop = &stop;
		CHECK(agent_search_run(&s) == 0);
		CHECK(s.end == AGENT_END_COMPLETE);
		CHECK(s.partial == 0);
		CHECK_EQ_U64(s.nr_iterations, 2);
		s.prov->ops->close(s.prov);
		agent_search_free(&s);
		agent_params_free(&given);
	}

	/* a bad strategy parameter is refused before anything runs */
	{
		struct agent_params given = { 0 };

		agent_params_set(&given, "metrics", "mem_ref+l2_miss");
		fake_world(&spec);
		memset(&s, 0, sizeof(s));
		s.pl = &pl;
		s.strat = agent_plugins_strategy(&pl, "objects");
		s.strat_given = &given;
		s.prov = agent_provider_fake_open(&spec);
		s.opts.interval_ms = 10;
		s.opts.primary_metric = -1;
		s.opts.stop = &stop;
		CHECK(agent_search_run(&s) == AMEBA_EINVAL);
		CHECK_HAS(s.error, "'l2_miss' is not measured by this backend");
		s.prov->ops->close(s.prov);
		agent_search_free(&s);
		agent_params_free(&given);
	}

	/* interrupted before the first experiment: an empty, valid, partial report */
	fake_world(&spec);
	memset(&s, 0, sizeof(s));
	s.pl = &pl;
	s.strat = agent_plugins_strategy(&pl, "objects");
	s.prov = agent_provider_fake_open(&spec);
	s.opts.interval_ms = 10;
	s.opts.primary_metric = -1;
	stop = 1;
	s.opts.stop = &stop;
	CHECK(agent_search_run(&s) == 0);
	CHECK(s.end == AGENT_END_INTERRUPTED);
	CHECK(s.partial == 1);
	CHECK_EQ_U64(s.nr_iterations, 0);
	ri.target_state = AGENT_TARGET_RUNNING;
	rep = agent_report_build(&s, &ri, &pl);
	CHECK(agent_jschema_validate(schema, rep, err, sizeof(err)) == 0);
	if (err[0])
		fprintf(stderr, "schema: %s\n", err);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(rep, "partial")));
	CHECK_STR(cJSON_GetObjectItem(rep, "reason")->valuestring, "interrupted");
	cJSON_Delete(rep);
	s.prov->ops->close(s.prov);
	agent_search_free(&s);

	/* the target exits during the first experiment: the report says nothing
	 * was measured (an empty ranking is not "nothing to fix") */
	fake_world(&spec);
	spec.exit_in_experiment = 1;
	memset(&s, 0, sizeof(s));
	stop = 0;
	s.pl = &pl;
	s.strat = agent_plugins_strategy(&pl, "objects");
	s.prov = agent_provider_fake_open(&spec);
	s.opts.interval_ms = 10;
	s.opts.primary_metric = -1;
	s.opts.stop = &stop;
	CHECK(!warned(&pl, "before its first interval was measured", NULL));
	CHECK(agent_search_run(&s) == 0);
	CHECK(s.end == AGENT_END_EXITED);
	CHECK_EQ_U64(s.nr_iterations, 0);
	CHECK_EQ_U64(s.findings.nr, 0);
	CHECK(warned(&pl, "before its first interval was measured", "nothing was measured"));
	s.prov->ops->close(s.prov);
	agent_search_free(&s);

	/* --metric the backend lacks: a clear refusal */
	fake_world(&spec);
	memset(&s, 0, sizeof(s));
	stop = 0;
	s.pl = &pl;
	s.strat = agent_plugins_strategy(&pl, "objects");
	s.prov = agent_provider_fake_open(&spec);
	s.opts.interval_ms = 10;
	s.opts.primary_metric = AMEBA_M_L2_MISS;
	s.opts.stop = &stop;
	CHECK(agent_search_run(&s) == AMEBA_ENOTSUP);
	CHECK_HAS(s.error, "--metric l2_miss: the count backend of pid 4242 does not measure it; it measures: mem_ref reads writes");
	s.prov->ops->close(s.prov);
	agent_search_free(&s);

	cJSON_Delete(schema);
	agent_plugins_destroy(&pl);
}

/*
 * Cold units: two globals that count nothing are folded into one counter
 * per metric once they have been silent for 3 intervals and 1 s (intervals
 * of 400 ms after the warm-up of 5, 10, 20, 40, 80, 160, 320 ms: silent for
 * 1035 ms after experiment 8). One of them wakes up in experiment 10 (the
 * cold group reads non-zero) and has its own counters again from 11 on;
 * what the group counted in 10 is given to it (cold_give).
 * Counters per experiment, 3 metrics:
 *   1-8: (6 units + total) x 3 = 21;  9-10: (4 + total + cold) x 3 = 18;
 *   11-13: (6 + total) x 3 = 21 (the sleeper is silent again, not yet 1 s).
 */
void test_objects_cold_folding(void)
{
	struct agent_fake_spec spec;
	struct agent_plugins pl;
	struct agent_search s;
	volatile sig_atomic_t stop = 0;
	static const uint32_t want[] = { 21, 21, 21, 21, 21, 21, 21, 21, 18, 18, 21, 21, 21 };

	agent_plugins_init(&pl);
	pl.quiet = 1;
	CHECK(load_objects(&pl) == 0);
	fake_world(&spec);
	fake_objs[6].obj = (struct ameba_object){ 30, AMEBA_OBJ_GLOBAL, "sleeper", NULL, 0x9000, 0x9008, 8, 1, 1 };
	fake_objs[7].obj = (struct ameba_object){ 31, AMEBA_OBJ_GLOBAL, "waker", NULL, 0x9100, 0x9108, 8, 1, 1 };
	fake_objs[7].rates[2][AMEBA_M_MEM_REF] = 1000;
	fake_objs[7].rates[2][AMEBA_M_WRITES] = 1000;
	fake_objs[7].from_experiment = 10;
	spec.nr_objects = 8;
	spec.nr_intervals = 13;
	memset(&s, 0, sizeof(s));
	s.pl = &pl;
	s.strat = agent_plugins_strategy(&pl, "objects");
	s.prov = agent_provider_fake_open(&spec);
	s.opts.interval_ms = 400;
	s.opts.primary_metric = -1;
	s.opts.stop = &stop;
	CHECK(agent_search_run(&s) == 0);
	CHECK_EQ_U64(s.nr_iterations, 13);
	for (uint32_t k = 1; k <= 13; k++) {
		if (agent_provider_fake_nr_counters_at(s.prov, k) != want[k - 1])
			fprintf(stderr, "experiment %u: %u counters, want %u\n", k,
				agent_provider_fake_nr_counters_at(s.prov, k), want[k - 1]);
		CHECK(agent_provider_fake_nr_counters_at(s.prov, k) == want[k - 1]);
	}
	/* the program saw the waker 4 times (10-13); its own counters 3 times,
	 * and the cold group's count of experiment 10 is given to it (the
	 * sleeper, woken with it, counts nothing in 11: none of it) */
	CHECK_NEAR(s.program_totals[AMEBA_M_MEM_REF], 13 * 2035.0 + 4 * 1000.0);
	{
		int found = 0;

		for (uint32_t i = 0; i < s.nr_objects; i++)
			if (!strcmp(s.objects[i].name, "waker")) {
				CHECK_NEAR(s.objects[i].values[AMEBA_M_MEM_REF], 4000);
				found = 1;
			}
		CHECK(found);
	}
	s.prov->ops->close(s.prov);
	agent_search_free(&s);
	agent_plugins_destroy(&pl);
}

/* The example strategy of docs/writing-strategies.md, built from the page. */
void test_doc_totals_strategy(void)
{
	struct agent_fake_spec spec;
	struct agent_plugins pl;
	struct agent_search s;
	struct agent_params given = { 0 };
	volatile sig_atomic_t stop = 0;
	char path[512];

	agent_plugins_init(&pl);
	pl.quiet = 1;
	snprintf(path, sizeof(path), "%s/strategy_doc_totals.so", plugin_dir);
	CHECK(agent_plugins_add_file(&pl, path, 0) == 0);
	CHECK(agent_plugins_strategy(&pl, "totals") != NULL);
	agent_params_set(&given, "rounds", "3");
	fake_world(&spec);
	memset(&s, 0, sizeof(s));
	s.pl = &pl;
	s.strat = agent_plugins_strategy(&pl, "totals");
	s.strat_given = &given;
	s.prov = agent_provider_fake_open(&spec);
	s.opts.interval_ms = 10;
	s.opts.primary_metric = -1;
	s.opts.stop = &stop;
	CHECK(agent_search_run(&s) == 0);
	CHECK(s.end == AGENT_END_COMPLETE);
	CHECK_EQ_U64(s.nr_iterations, 3);
	CHECK_EQ_U64(agent_provider_fake_last_nr_counters(s.prov), 3);
	CHECK_EQ_U64(s.nr_contexts, 1);
	CHECK_NEAR(s.program_totals[AMEBA_M_MEM_REF], 3 * 2035.0);
	CHECK_NEAR(s.program_totals[AMEBA_M_WRITES], 3 * (800.0 + 30 + 5));
	CHECK_NEAR(s.threads[0].values[AMEBA_M_MEM_REF], 3 * 35.0);
	CHECK_NEAR(s.threads[3].values[AMEBA_M_MEM_REF], 3 * 500.0);
	s.prov->ops->close(s.prov);
	agent_search_free(&s);
	agent_params_free(&given);
	agent_plugins_destroy(&pl);
}

void test_report_load_errors(void)
{
	static const struct {
		int line;
		const char *text, *msg;
	} rows[] = {
		{ __LINE__, "{\n\"schema\": \"ameba-report\",\n\"version\": 1,\n", "bad.json:4: not valid JSON" },
		{ __LINE__, "{\"format\": \"ameba-oracle\"}", "not an ameba report" },
		{ __LINE__, "{\"schema\": \"ameba-report\", \"version\": 2}", "report schema version 2; this ameba reads version 1" },
	};
	char path[512], err[512];

	snprintf(path, sizeof(path), "%s/bad.json", tmp_dir);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		cJSON *r;

		write_file(path, rows[i].text);
		r = agent_report_load(path, err, sizeof(err));
		CHECK_AT(rows[i].line, r == NULL);
		if (!strstr(err, rows[i].msg))
			fprintf(stderr, "row %d: %s\n", rows[i].line, err);
		CHECK_AT(rows[i].line, strstr(err, rows[i].msg) != NULL);
		cJSON_Delete(r);
	}
	CHECK(agent_report_load("/nonexistent/x.json", err, sizeof(err)) == NULL);
	CHECK_HAS(err, "cannot read /nonexistent/x.json: No such file or directory");
}

/*
 * A rescan still searching as the program exits (nway): two objects
 * measured over the common window, one the search measured over its last
 * intervals only. The provisional one ranks after the measured ones even
 * with more misses, is flagged in the JSON and marked in the table.
 */
void test_provisional_objects(void)
{
	static const struct ameba_object objs[3] = {
		{ .id = 1, .kind = AMEBA_OBJ_GLOBAL, .name = "grid", .start = 0x1000,
		  .end = 0x2000, .sz_bytes = 4096, .nr_blocks = 1 },
		{ .id = 2, .kind = AMEBA_OBJ_GLOBAL, .name = "halo", .start = 0x2000,
		  .end = 0x2400, .sz_bytes = 1024, .nr_blocks = 1 },
		{ .id = 3, .kind = AMEBA_OBJ_BIN, .name = "new_small@m.c:9", .start = 0x9000,
		  .end = 0xa000, .sz_bytes = 4096, .nr_blocks = 64 },
	};
	struct ameba_context c[4];
	struct ameba_context_data d[4];
	struct agent_search s;
	struct agent_run_info ri = { 0 };
	static char *const cmd[] = { "wl_million_live" };
	cJSON *schema = load_schema(), *rep, *o;
	char err[512], *table = NULL, **marks = calloc(1, sizeof(*marks));
	size_t table_len = 0;
	FILE *mem;
	int m = AMEBA_M_L1D_MISS;

	for (int i = 0; i < (int)(sizeof(c) / sizeof(c[0])); i++)
		ameba_context_init(&c[i], &d[i]);
	memset(&s, 0, sizeof(s));
	s.primary_metric = m;
	CHECK(marks != NULL);
	if (!marks)
		return;
	marks[0] = strdup("nway-2");
	s.marks = marks;
	s.nr_marks = 1;
	c[0].kind = AMEBA_CTX_PROGRAM;
	d[0].has[m] = 1;
	d[0].values[m] = d[0].program[m] = 10000;
	c[0].window_ns = 2000000000;
	for (int i = 1; i < 4; i++) {
		c[i].kind = AMEBA_CTX_OBJECT;
		c[i].object = &objs[i - 1];
		d[i].has[m] = 1;
		c[i].confidence = 1;
		d[i].program[m] = 10000;
		c[i].window_ns = 2000000000;
		c[i].extra = "strategy=nway\nmark=nway-2";
	}
	d[1].values[m] = 3000;
	d[2].values[m] = 1000;
	d[3].values[m] = 7830;		/* of 10,000 over its own 0.4 s */
	c[3].window_ns = 400000000;
	c[3].confidence = 0.5;
	c[3].extra = "strategy=nway\nmeasured=search_intervals";
	agent_summarize_contexts(&s, c, 4);
	CHECK_EQ_U64(s.nr_objects, 3);
	CHECK_STR(s.objects[0].name, "grid");
	CHECK_STR(s.objects[1].name, "halo");
	CHECK_STR(s.objects[2].name, "new_small@m.c:9");
	CHECK(!s.objects[0].provisional && !s.objects[1].provisional);
	CHECK(s.objects[2].provisional);
	CHECK_STR(s.objects[0].mark ? s.objects[0].mark : "", "nway-2");
	CHECK(s.objects[2].mark == NULL);

	ri.mode = "run";
	ri.command = cmd;
	ri.nr_command = 1;
	ri.interval_ms = 100;
	ri.target_state = AGENT_TARGET_EXITED;
	rep = agent_report_build(&s, &ri, NULL);
	CHECK(rep != NULL);
	CHECK(agent_jschema_validate(schema, rep, err, sizeof(err)) == 0);
	if (err[0])
		fprintf(stderr, "schema: %s\n", err);
	o = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(rep, "objects"), 2);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "provisional")));
	CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(o, "share")->valuedouble, 0.783);
	o = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(rep, "objects"), 0);
	CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, "provisional")));
	mem = open_memstream(&table, &table_len);
	agent_report_table(rep, mem, 20, AGENT_MIN_SEVERITY_DEFAULT);
	fclose(mem);
	CHECK_HAS(table, "   30.0%  global grid (4.0 KiB)\n   10.0%  global halo (1.0 KiB)\n"
		  "   78.3%~ bin new_small@m.c:9 (4.0 KiB) (provisional: over the 0.40 s the "
		  "search measured it in, not the others' window)\n");
	free(table);
	cJSON_Delete(rep);
	cJSON_Delete(schema);
	agent_search_free(&s);
}

/*
 * Coverage under the threshold: 2 objects account for 4,000 of the window's
 * 10,000 events, and the window for 10,000 of the 20,000 the search saw, so
 * the figures cover 0.4 x 0.5 = 20% and every confidence is multiplied by
 * 0.2 / 0.95. The table says so above the findings.
 */
void test_coverage(void)
{
	static const struct ameba_object objs[2] = {
		{ .id = 1, .kind = AMEBA_OBJ_GLOBAL, .name = "grid", .start = 0x1000,
		  .end = 0x2000, .sz_bytes = 4096, .nr_blocks = 1 },
		{ .id = 2, .kind = AMEBA_OBJ_GLOBAL, .name = "halo", .start = 0x2000,
		  .end = 0x2400, .sz_bytes = 1024, .nr_blocks = 1 },
	};
	struct ameba_context c[3];
	struct ameba_context_data d[3];
	struct agent_search s;
	struct agent_run_info ri = { 0 };
	static char *const cmd[] = { "wl_hot_arrays" };
	cJSON *schema = load_schema(), *rep, *cov, *f;
	char err[512] = "", *table = NULL;
	size_t table_len = 0;
	FILE *mem;
	int m = AMEBA_M_MEM_REF;

	for (int i = 0; i < (int)(sizeof(c) / sizeof(c[0])); i++)
		ameba_context_init(&c[i], &d[i]);
	memset(&s, 0, sizeof(s));
	s.primary_metric = m;
	s.end = AGENT_END_DURATION;
	s.started.tv_sec = 100;
	s.ended.tv_sec = 104;		/* 4 s searched */
	s.coverage.searched = 20000;	/* what search.c's total counter summed */
	s.coverage.searched_exact = 1;
	s.coverage.nr_searched = 7;
	c[0].kind = AMEBA_CTX_PROGRAM;
	d[0].has[m] = 1;
	d[0].values[m] = d[0].program[m] = 10000;
	c[0].window_ns = 2000000000;
	for (int i = 1; i < 3; i++) {
		c[i].kind = AMEBA_CTX_OBJECT;
		c[i].object = &objs[i - 1];
		d[i].has[m] = 1;
		c[i].confidence = 1;
		d[i].program[m] = 10000;
		c[i].window_ns = 2000000000;
	}
	d[1].values[m] = 3000;
	d[2].values[m] = 1000;
	agent_summarize_contexts(&s, c, 3);
	CHECK_EQ_U64(s.coverage.nr_objects, 2);
	CHECK_EQ_U64(s.coverage.nr_windows, 1);
	CHECK_NEAR(s.coverage.total, 10000);
	CHECK_NEAR(s.coverage.attributed, 4000);
	CHECK_EQ_U64(s.coverage.window_ns, 2000000000);
	s.findings.v = calloc(1, sizeof(*s.findings.v));
	CHECK(s.findings.v != NULL);
	if (!s.findings.v)
		return;
	s.findings.nr = s.findings.cap = 1;
	s.findings.v[0].property = strdup("HotObject");
	s.findings.v[0].evidence = strdup("30.0% of mem_ref");
	s.findings.v[0].advice = strdup("");
	s.findings.v[0].severity = 0.3;
	s.findings.v[0].confidence = 0.9;
	s.findings.v[0].ctx_kind = AMEBA_CTX_PROGRAM;

	ri.mode = "run";
	ri.command = cmd;
	ri.nr_command = 1;
	ri.interval_ms = 100;
	ri.target_state = AGENT_TARGET_RUNNING;
	rep = agent_report_build(&s, &ri, NULL);
	CHECK(rep != NULL);
	CHECK(agent_jschema_validate(schema, rep, err, sizeof(err)) == 0);
	if (err[0])
		fprintf(stderr, "schema: %s\n", err);
	cov = cJSON_GetObjectItemCaseSensitive(rep, "coverage");
	CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(cov, "share")->valuedouble, 0.4);
	CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(cov, "window_of_search")->valuedouble, 0.5);
	CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(cov, "coverage")->valuedouble, 0.2);
	CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(cov, "factor")->valuedouble, 0.210526);
	CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(cov, "searched")->valuedouble, 20000);
	CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(cov, "search_s")->valuedouble, 4);
	CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(cov, "window_s")->valuedouble, 2);
	CHECK_EQ_U64(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cov, "missing")), 3);
	f = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(rep, "findings"), 0);
	CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(f, "confidence")->valuedouble, 0.189474);
	mem = open_memstream(&table, &table_len);
	agent_report_table(rep, mem, 20, AGENT_MIN_SEVERITY_DEFAULT);
	fclose(mem);
	CHECK_HAS(table, "warning: the figures account for 20.0% of the program's mem_ref (under "
		  "95%): window 2.00 s of 4.00 s searched, 40.0% of it attributed to objects; "
		  "confidences x 0.21\n");
	CHECK_HAS(table, "warning: 50.0% of the mem_ref the search saw (10.0k of 20.0k) fell "
		  "outside the measured window (2.00 s of 4.00 s)");
	CHECK_HAS(table, "warning: 60.0% of the mem_ref counted in the measured window (6.0k of "
		  "10.0k) was not attributed to the 2 objects measured");
	CHECK_HAS(table, "warning: the search ended (duration) before the program did");
	CHECK_HAS(table, "   1   30.0%  0.19 HotObject");
	free(table);
	/* sampled with no burst measured (a short attach): said first */
	for (int bursts = 0; bursts < 2; bursts++) {
		const cJSON *miss;

		cJSON_Delete(rep);
		s.world.sampled = 1;
		s.world.bursts = (uint64_t)bursts;
		rep = agent_report_build(&s, &ri, NULL);
		CHECK(rep != NULL);
		CHECK(agent_jschema_validate(schema, rep, err, sizeof(err)) == 0);
		miss = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(rep, "coverage"), "missing");
		CHECK_EQ_U64(cJSON_GetArraySize(miss), bursts ? 3 : 4);
		CHECK(!bursts == !!strstr(cJSON_GetArrayItem(miss, 0)->valuestring,
					  "sampled simulation measured no burst in the 4.00 s "
					  "searched: nothing was simulated"));
	}
	s.world.sampled = 0;
	cJSON_Delete(rep);
	cJSON_Delete(schema);
	agent_search_free(&s);
}
