/*
 * sampling_check.c - checks the objects of an ameba report against designed
 * shares: each NAME=SHARE must be within TOL points of SHARE (percent), and
 * the report must list the first ORDERED of them in the given order.
 *
 *   usage: sampling_check REPORT TOL ORDERED NAME-PREFIX=SHARE...
 *   e.g.   sampling_check r.json 4 4 alloc_grid@=40 flux=25 alloc_coef@=15
 *
 * Prints one line per object (designed, reported, error in points).
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv)
{
	char *text;
	cJSON *root;
	const cJSON *objs;
	double tol;
	int ordered, fails = 0, last_pos = -1;

	if (argc < 5) {
		fprintf(stderr, "usage: %s REPORT TOL ORDERED NAME-PREFIX=SHARE...\n", argv[0]);
		return 2;
	}
	text = slurp(argv[1]);
	root = text ? cJSON_Parse(text) : NULL;
	objs = cJSON_GetObjectItemCaseSensitive(root, "objects");
	if (!cJSON_IsArray(objs)) {
		fprintf(stderr, "%s: not a report with an objects array\n", argv[1]);
		return 1;
	}
	tol = atof(argv[2]);
	ordered = atoi(argv[3]);
	for (int a = 4; a < argc; a++) {
		char name[256], *eq;
		double want, got = 0;
		int pos = -1, i = 0;
		const cJSON *o;

		snprintf(name, sizeof(name), "%s", argv[a]);
		eq = strchr(name, '=');
		if (!eq) {
			fprintf(stderr, "%s: want NAME-PREFIX=SHARE\n", argv[a]);
			return 2;
		}
		*eq = '\0';
		want = atof(eq + 1);
		cJSON_ArrayForEach(o, objs) {
			const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "name");
			const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "share");

			if (cJSON_IsString(n) && !strncmp(n->valuestring, name, strlen(name)) &&
			    cJSON_IsNumber(s)) {
				got = 100.0 * s->valuedouble;
				pos = i;
				break;
			}
			i++;
		}
		printf("%-16s designed %5.1f%%  reported %5.1f%%  error %4.1f points  rank %d\n", name,
		       want, got, fabs(got - want), pos + 1);
		if (pos < 0 || fabs(got - want) > tol) {
			fprintf(stderr, "FAIL: %s: reported %.1f%%, designed %.1f%% (tolerance %.1f "
				"points)\n", name, got, want, tol);
			fails++;
		}
		if (a - 4 < ordered) {
			if (pos != last_pos + 1) {
				fprintf(stderr, "FAIL: %s is at rank %d, want %d\n", name, pos + 1,
					last_pos + 2);
				fails++;
			}
			last_pos = pos;
		}
	}
	cJSON_Delete(root);
	free(text);
	return fails ? 1 : 0;
}
