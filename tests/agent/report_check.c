/*
 * report_check.c - validates an ameba report against docs/report-schema.json
 * and checks what the end-to-end tests expect of it.
 *
 * usage: report_check SCHEMA REPORT [--top REGEX] [--partial 0|1] [--reason TEXT]
 *                     [--finding PROPERTY] [--disabled PROPERTY] [--exit-status N]
 *                     [--no-finding PROPERTY]
 *   --top REGEX       the first finding's context object name matches REGEX
 *                     (POSIX extended)
 *   --finding P       some finding is of property P
 *   --no-finding P    no finding is of property P
 *   --disabled P      property P is listed with status "disabled"
 * Prints one line per failed expectation; exit 0 when all hold.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "jschema.h"

static int nr_fail;

static void fail(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "report_check: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	nr_fail++;
}

static cJSON *load(const char *path)
{
	char *text = agent_read_file(path, NULL);
	cJSON *j;

	if (!text) {
		perror(path);
		exit(2);
	}
	j = cJSON_Parse(text);
	free(text);
	if (!j) {
		fprintf(stderr, "report_check: %s is not valid JSON\n", path);
		exit(1);
	}
	return j;
}

static int has_finding(const cJSON *rep, const char *prop)
{
	const cJSON *f;

	cJSON_ArrayForEach(f, cJSON_GetObjectItem(rep, "findings")) {
		const cJSON *p = cJSON_GetObjectItem(f, "property");

		if (cJSON_IsString(p) && !strcmp(p->valuestring, prop))
			return 1;
	}
	return 0;
}

static const cJSON *object_of(const cJSON *f)
{
	return cJSON_GetObjectItem(cJSON_GetObjectItem(f, "context"), "object");
}

static int same_object(const cJSON *a, const cJSON *b)
{
	const cJSON *x = object_of(a), *y = object_of(b);

	return cJSON_IsObject(x) && cJSON_IsObject(y) &&
	       !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(x, "name")),
		       cJSON_GetStringValue(cJSON_GetObjectItem(y, "name"))) &&
	       !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(x, "addr")),
		       cJSON_GetStringValue(cJSON_GetObjectItem(y, "addr")));
}

/*
 * --alone PROP: one root cause shown once: exactly one finding of PROP, and
 * no other finding on its object that the table shows (severity >= 0.1%);
 * its symptoms, if any, are under it ("absorbed"), never ranked. Prints the
 * absorbed properties.
 */
static void check_alone(const cJSON *rep, const char *prop)
{
	const cJSON *all = cJSON_GetObjectItem(rep, "findings"), *f, *root = NULL, *a;
	int n = 0;

	cJSON_ArrayForEach(f, all) {
		const cJSON *p = cJSON_GetObjectItem(f, "property");

		if (cJSON_IsString(p) && !strcmp(p->valuestring, prop)) {
			root = f;
			n++;
		}
	}
	if (n != 1 || !object_of(root) || !cJSON_IsObject(object_of(root))) {
		char nr[16];

		snprintf(nr, sizeof(nr), "%d", n);
		fail("%s findings of %s on an object, want one", nr, prop);
		return;
	}
	cJSON_ArrayForEach(f, all) {
		double sev = cJSON_GetNumberValue(cJSON_GetObjectItem(f, "severity"));

		if (f != root && same_object(f, root) && sev >= 0.001)
			fail("%s, shown in the table, is on the object of %s: want it absorbed",
			     cJSON_GetStringValue(cJSON_GetObjectItem(f, "property")), prop);
	}
	printf("report_check: %s rank %.0f, absorbed:", prop,
	       cJSON_GetNumberValue(cJSON_GetObjectItem(root, "rank")));
	cJSON_ArrayForEach(a, cJSON_GetObjectItem(root, "absorbed")) {
		if (!same_object(a, root))
			fail("absorbed %s is on another object%s",
			     cJSON_GetStringValue(cJSON_GetObjectItem(a, "property")), "");
		printf(" %s", cJSON_GetStringValue(cJSON_GetObjectItem(a, "property")));
	}
	printf("\n");
}

/*
 * --verdict V: summary.verdict is V, consistent with the findings (some
 * finding reaches summary.threshold iff V is "findings"), and top_objects
 * are sorted by stall_share, each in (0, 1].
 */
static void check_verdict(const cJSON *rep, const char *want)
{
	const cJSON *sum = cJSON_GetObjectItem(rep, "summary"), *f, *o;
	const char *got = cJSON_GetStringValue(cJSON_GetObjectItem(sum, "verdict"));
	double thr = cJSON_GetNumberValue(cJSON_GetObjectItem(sum, "threshold")), best = 0, prev = 2;
	int n = 0;

	if (!got || strcmp(got, want)) {
		fail("verdict %s, want %s", got ? got : "(none)", want);
		return;
	}
	cJSON_ArrayForEach(f, cJSON_GetObjectItem(rep, "findings"))
		if (cJSON_GetNumberValue(cJSON_GetObjectItem(f, "severity")) > best)
			best = cJSON_GetNumberValue(cJSON_GetObjectItem(f, "severity"));
	if ((best >= thr) != !strcmp(want, "findings"))
		fail("verdict %s, but the largest severity is %s the threshold", want,
		     best >= thr ? "at or over" : "under");
	cJSON_ArrayForEach(o, cJSON_GetObjectItem(sum, "top_objects")) {
		double x = cJSON_GetNumberValue(cJSON_GetObjectItem(o, "stall_share"));

		if (cJSON_IsTrue(cJSON_GetObjectItem(o, "provisional")))
			continue;	/* after the measured ones, not comparable */
		if (!(x > 0 && x <= prev))
			fail("top_objects: %s is out of order or has no stall share%s",
			     cJSON_GetStringValue(cJSON_GetObjectItem(o, "name")), "");
		prev = x;
		n++;
	}
	if (!n)
		fail("summary.top_objects is empty%s%s", "", "");
	printf("report_check: verdict %s, largest severity %.4f, %d top objects\n", want, best, n);
}

/* What a failed --top has to go on (the CI log is all there is): the
 * verdict, the findings, and the search and sampling behind them. */
static void top_context(const cJSON *rep)
{
	const cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "findings"), 0);
	const cJSON *smp = cJSON_GetObjectItem(rep, "sampling");
	const char *verdict = cJSON_GetStringValue(
		cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "summary"), "verdict"));
	const char *prop = cJSON_GetStringValue(cJSON_GetObjectItem(f, "property"));

	fprintf(stderr,
		"report_check:   verdict %s; %d findings, the first %s; %g iterations, %g contexts, "
		"%g s measured; %g bursts\n",
		verdict ? verdict : "(none)", cJSON_GetArraySize(cJSON_GetObjectItem(rep, "findings")),
		prop ? prop : "(none)", cJSON_GetNumberValue(cJSON_GetObjectItem(rep, "iterations")),
		cJSON_GetNumberValue(cJSON_GetObjectItem(rep, "contexts")),
		cJSON_GetNumberValue(cJSON_GetObjectItem(rep, "measured_s")),
		cJSON_IsObject(smp) ? cJSON_GetNumberValue(cJSON_GetObjectItem(smp, "bursts")) : 0);
}

int main(int argc, char **argv)
{
	cJSON *schema, *rep;
	char err[1024];

	if (argc < 3) {
		fprintf(stderr, "usage: report_check SCHEMA REPORT [expectations]\n");
		return 2;
	}
	schema = load(argv[1]);
	rep = load(argv[2]);
	if (agent_jschema_validate(schema, rep, err, sizeof(err)))
		fail("%s does not validate: %s", argv[2], err);
	for (int i = 3; i + 1 < argc; i += 2) {
		const char *opt = argv[i], *val = argv[i + 1];

		if (!strcmp(opt, "--top")) {
			const cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "findings"), 0);
			const cJSON *name = cJSON_GetObjectItem(
				cJSON_GetObjectItem(cJSON_GetObjectItem(f, "context"), "object"), "name");
			regex_t re;

			if (regcomp(&re, val, REG_EXTENDED | REG_NOSUB)) {
				fprintf(stderr, "report_check: bad regex %s\n", val);
				return 2;
			}
			if (!cJSON_IsString(name) || regexec(&re, name->valuestring, 0, NULL, 0)) {
				fail("the top finding's object is %s, want /%s/",
				     cJSON_IsString(name) ? name->valuestring : "(none)", val);
				top_context(rep);
			}
			regfree(&re);
		} else if (!strcmp(opt, "--partial")) {
			int want = atoi(val);

			if (cJSON_IsTrue(cJSON_GetObjectItem(rep, "partial")) != want)
				fail("partial is %s, want %s",
				     cJSON_IsTrue(cJSON_GetObjectItem(rep, "partial")) ? "true" : "false",
				     want ? "true" : "false");
		} else if (!strcmp(opt, "--reason")) {
			const cJSON *r = cJSON_GetObjectItem(rep, "reason");

			if (!cJSON_IsString(r) || strcmp(r->valuestring, val))
				fail("reason is %s, want %s", cJSON_IsString(r) ? r->valuestring : "?", val);
		} else if (!strcmp(opt, "--finding")) {
			if (!has_finding(rep, val))
				fail("no finding of property %s%s", val, "");
		} else if (!strcmp(opt, "--nr-findings")) {
			char got[16];

			snprintf(got, sizeof(got), "%d", cJSON_GetArraySize(cJSON_GetObjectItem(rep, "findings")));
			if (atoi(got) != atoi(val))
				fail("%s findings (not counting absorbed ones), want %s", got, val);
		} else if (!strcmp(opt, "--verdict")) {
			check_verdict(rep, val);
		} else if (!strcmp(opt, "--alone")) {
			check_alone(rep, val);
		} else if (!strcmp(opt, "--no-finding")) {
			if (has_finding(rep, val))
				fail("a finding of property %s%s, want none", val, "");
		} else if (!strcmp(opt, "--disabled")) {
			const cJSON *p;
			int ok = 0;

			cJSON_ArrayForEach(p, cJSON_GetObjectItem(rep, "properties")) {
				const cJSON *n = cJSON_GetObjectItem(p, "name"), *s = cJSON_GetObjectItem(p, "status");

				ok |= cJSON_IsString(n) && !strcmp(n->valuestring, val) && cJSON_IsString(s) &&
				      !strcmp(s->valuestring, "disabled");
			}
			if (!ok)
				fail("property %s is not listed as disabled%s", val, "");
		} else if (!strcmp(opt, "--exit-status")) {
			const cJSON *e = cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "target"), "exit_status");
			char got[32];

			snprintf(got, sizeof(got), "%d", cJSON_IsNumber(e) ? e->valueint : -1);
			if (!cJSON_IsNumber(e) || e->valueint != atoi(val))
				fail("target exit status %s, want %s", got, val);
		} else {
			fprintf(stderr, "report_check: unknown option %s\n", opt);
			return 2;
		}
	}
	cJSON_Delete(schema);
	cJSON_Delete(rep);
	if (!nr_fail)
		printf("report_check: %s: ok\n", argv[2]);
	return nr_fail ? 1 : 0;
}
