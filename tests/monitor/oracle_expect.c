/*
 * oracle_expect.c - checks an AMEBA_ORACLE file against a table of expected
 * counts (tests/monitor/<name>.expect).
 *
 *   usage: oracle_expect ORACLE.json SPEC
 *
 * SPEC rows, whitespace separated, '#' starts a comment:
 *   bin      NAME-PREFIX  THREAD  METRIC  [OP] VALUE  count of the one bin whose name starts with NAME-PREFIX
 *   object   NAME-PREFIX  THREAD  METRIC  [OP] VALUE  count of the one object whose name starts with it
 *   field    NAME-PREFIX  -       FIELD   [OP] VALUE  numeric field of that bin (nr_objects, size)
 *   objects  NAME-PREFIX  -       count   [OP] VALUE  how many objects carry that name prefix
 *   binshare NAME-PREFIX  THREAD  METRIC  [OP] VALUE  the bin's share (0..1) of METRIC over all bins
 *   ratio    NAME-PREFIX  THREAD  M1/M2   [OP] VALUE  the bin's M1 divided by its M2
 *   ofield   NAME-PREFIX  -       FIELD   [OP] VALUE  numeric field of the one object (size, offset)
 *   text     LIST NAME-PREFIX FIELD PATTERN             string field of the one entry of LIST
 *            (objects, bins, sites) named NAME-PREFIX*: PATTERN "abc" is equal, "abc*"
 *            a prefix, "*abc" a suffix, "-" the field is absent
 * THREAD is a thread id or "all" (the total). A missing count is 0. OP is one
 * of = >= <= > < (default =). Each row is one check, reported with its SPEC
 * line number.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	long n;
	char *buf;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[n] = '\0';
	fclose(f);
	return buf;
}

static int prefix(const char *s, const char *p)
{
	return s && strncmp(s, p, strlen(p)) == 0;
}

/* The single entry of list whose name starts with p; *nr gets the match count. */
static const cJSON *find(const cJSON *list, const char *p, int *nr)
{
	const cJSON *it, *found = NULL;

	*nr = 0;
	cJSON_ArrayForEach(it, list) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");

		if (cJSON_IsString(name) && prefix(name->valuestring, p)) {
			found = it;
			(*nr)++;
		}
	}
	return found;
}

static double count_of(const cJSON *item, const char *thread, const char *metric)
{
	const cJSON *c;

	if (!strcmp(thread, "all"))
		c = cJSON_GetObjectItemCaseSensitive(item, "total");
	else
		c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(item, "threads"),
						     thread);
	c = cJSON_GetObjectItemCaseSensitive(c, metric);
	return cJSON_IsNumber(c) ? c->valuedouble : 0;
}

/* A `text` row: LIST's one entry named name*, its string field against pat. */
static void check_text(const cJSON *root, const char *spec, int lineno, const char *list_name,
		       const char *name, const char *field, const char *pat)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, list_name), *item, *f;
	const char *got = NULL;
	size_t np = strlen(pat), ng;
	int nr, ok;

	item = find(list, name, &nr);
	if (nr != 1) {
		fprintf(stderr, "%s:%d: %d %s named %s*, want exactly 1\n", spec, lineno, nr, list_name, name);
		CHECK_AT(lineno, 0);
		return;
	}
	f = cJSON_GetObjectItemCaseSensitive(item, field);
	got = cJSON_IsString(f) ? f->valuestring : NULL;
	ng = got ? strlen(got) : 0;
	if (!strcmp(pat, "-"))
		ok = !f;
	else if (!got)
		ok = 0;
	else if (np && pat[np - 1] == '*')
		ok = !strncmp(got, pat, np - 1);
	else if (pat[0] == '*')
		ok = ng >= np - 1 && !strcmp(got + ng - (np - 1), pat + 1);
	else
		ok = !strcmp(got, pat);
	if (!ok)
		fprintf(stderr, "%s:%d: %s %s* %s = %s, want %s\n", spec, lineno, list_name, name, field,
			got ? got : f ? "(not a string)" : "(absent)", pat);
	else if (getenv("ORACLE_EXPECT_VERBOSE"))
		printf("%s:%d: %s %s* %s = %s (%s)\n", spec, lineno, list_name, name, field, got ? got : "-",
		       pat);
	CHECK_AT(lineno, ok);
}

int main(int argc, char **argv)
{
	char *text, line[512];
	cJSON *root;
	FILE *spec;
	int lineno = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: oracle_expect ORACLE.json SPEC\n");
		return 2;
	}
	text = slurp(argv[1]);
	if (!text) {
		fprintf(stderr, "oracle_expect: cannot read %s\n", argv[1]);
		return 2;
	}
	root = cJSON_Parse(text);
	free(text);
	if (!root) {
		fprintf(stderr, "oracle_expect: %s is not valid JSON\n", argv[1]);
		return 2;
	}
	spec = fopen(argv[2], "r");
	if (!spec) {
		fprintf(stderr, "oracle_expect: cannot read %s\n", argv[2]);
		return 2;
	}
	while (fgets(line, sizeof(line), spec)) {
		char what[32], name[256], thread[32], metric[64], op[8] = "=", m2[64], pat[256];
		double want, got = -1;
		const cJSON *list, *item;
		int nr, ok;

		lineno++;
		if (strchr(line, '#'))
			*strchr(line, '#') = '\0';
		if (sscanf(line, "%31s %31s %255s %63s %255s", what, thread, name, metric, pat) == 5 &&
		    !strcmp(what, "text")) {
			check_text(root, argv[2], lineno, thread, name, metric, pat);
			continue;
		}
		if (sscanf(line, "%31s %255s %31s %63s %7s %lf", what, name, thread, metric, op, &want) != 6) {
			strcpy(op, "=");
			if (sscanf(line, "%31s %255s %31s %63s %lf", what, name, thread, metric, &want) != 5)
				continue;
		}
		list = cJSON_GetObjectItemCaseSensitive(root, strcmp(what, "object") && strcmp(what, "objects") &&
								      strcmp(what, "ofield") ? "bins" : "objects");
		item = find(list, name, &nr);
		if (!strcmp(what, "objects")) {
			got = nr;
		} else if (nr != 1) {
			fprintf(stderr, "%s:%d: %d entries named %s*, want exactly 1\n", argv[2], lineno,
				nr, name);
		} else if (!strcmp(what, "field") || !strcmp(what, "ofield")) {
			const cJSON *f = cJSON_GetObjectItemCaseSensitive(item, metric);

			got = cJSON_IsNumber(f) ? f->valuedouble : -1;
		} else if (!strcmp(what, "binshare")) {
			const cJSON *it;
			double sum = 0;

			cJSON_ArrayForEach(it, list)
				sum += count_of(it, thread, metric);
			got = sum > 0 ? count_of(item, thread, metric) / sum : 0;
		} else if (!strcmp(what, "ratio") && strchr(metric, '/')) {
			double den;

			snprintf(m2, sizeof(m2), "%s", strchr(metric, '/') + 1);
			*strchr(metric, '/') = '\0';
			den = count_of(item, thread, m2);
			got = den > 0 ? count_of(item, thread, metric) / den : 0;
		} else {
			got = count_of(item, thread, metric);
		}
		if (!strcmp(op, ">="))
			ok = got >= want;
		else if (!strcmp(op, "<="))
			ok = got <= want;
		else if (!strcmp(op, ">"))
			ok = got > want;
		else if (!strcmp(op, "<"))
			ok = got < want;
		else
			ok = got == want;
		ok = ok && nr >= (strcmp(what, "objects") ? 1 : 0);
		if (!ok)
			fprintf(stderr, "%s:%d: %s %s thread %s %s = %g, want %s %g\n", argv[2], lineno,
				what, name, thread, metric, got, op, want);
		else if (getenv("ORACLE_EXPECT_VERBOSE"))
			printf("%s:%d: %s %s thread %s %s = %g (%s %g)\n", argv[2], lineno, what, name,
			       thread, metric, got, op, want);
		CHECK_AT(lineno, ok);
	}
	fclose(spec);
	cJSON_Delete(root);
	return check_done();
}
