/*
 * jschema.c - a validator for the subset of JSON Schema (draft 2020-12)
 * that docs/report-schema.json uses: type (a name or a list), const, enum,
 * required, properties, additionalProperties (a boolean or a schema),
 * items (one schema), minimum, maximum, pattern (POSIX extended regular
 * expressions), and $ref to "#/$defs/NAME". Annotations ($schema, $id,
 * title, description, $defs) are accepted and ignored.
 *
 * A keyword outside the subset makes validation fail with a message, so a
 * schema can never quietly rely on a check that is not made.
 */
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "jschema.h"

struct jv {
	const cJSON *root;	/* the schema document, for $ref */
	char *err;
	size_t len;
	int depth;
};

static int fail(struct jv *v, const char *path, const char *fmt, const char *a, const char *b)
{
	char what[512];

	snprintf(what, sizeof(what), fmt, a ? a : "", b ? b : "");
	snprintf(v->err, v->len, "at %s: %s", path[0] ? path : "/", what);
	return -1;
}

static const char *type_of(const cJSON *d)
{
	if (cJSON_IsNull(d))
		return "null";
	if (cJSON_IsBool(d))
		return "boolean";
	if (cJSON_IsNumber(d))
		return d->valuedouble == floor(d->valuedouble) && fabs(d->valuedouble) < 9.1e15 ?
			       "integer" : "number";
	if (cJSON_IsString(d))
		return "string";
	if (cJSON_IsArray(d))
		return "array";
	return "object";
}

static int type_matches(const char *want, const cJSON *d)
{
	const char *got = type_of(d);

	return !strcmp(want, got) || (!strcmp(want, "number") && !strcmp(got, "integer"));
}

/* Structural equality, enough for const and enum over scalars and arrays. */
static int json_equal(const cJSON *a, const cJSON *b)
{
	return cJSON_Compare(a, b, 1);
}

static void short_text(const cJSON *d, char *buf, size_t len)
{
	char *t = cJSON_PrintUnformatted(d);

	snprintf(buf, len, "%s", t ? t : "?");
	if (t && strlen(t) >= len && len > 4)
		strcpy(buf + len - 4, "...");
	cJSON_free(t);
}

static int validate(struct jv *v, const cJSON *s, const cJSON *d, const char *path);

static int check_keyword_set(struct jv *v, const cJSON *s, const char *path)
{
	static const char *const known[] = { "$schema", "$id", "title", "description", "$defs",
					     "type", "const", "enum", "required", "properties",
					     "additionalProperties", "items", "minimum", "maximum",
					     "exclusiveMinimum", "pattern", "$ref", NULL };
	const cJSON *k;

	cJSON_ArrayForEach(k, s) {
		int ok = 0;

		for (int i = 0; known[i]; i++)
			ok |= !strcmp(k->string, known[i]);
		if (!ok)
			return fail(v, path, "the schema uses keyword '%s', which this validator does "
				    "not implement%s", k->string, "");
	}
	return 0;
}

static int validate(struct jv *v, const cJSON *s, const cJSON *d, const char *path)
{
	const cJSON *kw;
	char buf[160], sub[1024];

	if (++v->depth > 64) {
		v->depth--;
		return fail(v, path, "schema nesting too deep (a $ref cycle?)%s%s", NULL, NULL);
	}
	if (cJSON_IsBool(s)) {
		v->depth--;
		return cJSON_IsTrue(s) ? 0 : fail(v, path, "no value is allowed here%s%s", NULL, NULL);
	}
	if (!cJSON_IsObject(s) || check_keyword_set(v, s, path))
		goto bad;

	if ((kw = cJSON_GetObjectItemCaseSensitive(s, "$ref"))) {
		const cJSON *target;

		if (!cJSON_IsString(kw) || strncmp(kw->valuestring, "#/$defs/", 8)) {
			fail(v, path, "unsupported $ref %s%s (only #/$defs/NAME)",
			     cJSON_IsString(kw) ? kw->valuestring : "?", NULL);
			goto bad;
		}
		target = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(v->root, "$defs"), kw->valuestring + 8);
		if (!target) {
			fail(v, path, "$ref %s names no definition%s", kw->valuestring, NULL);
			goto bad;
		}
		if (validate(v, target, d, path))
			goto bad;
	}
	if ((kw = cJSON_GetObjectItemCaseSensitive(s, "type"))) {
		int ok = 0;

		if (cJSON_IsString(kw)) {
			ok = type_matches(kw->valuestring, d);
		} else {
			const cJSON *t;

			cJSON_ArrayForEach(t, kw)
				ok |= cJSON_IsString(t) && type_matches(t->valuestring, d);
		}
		if (!ok) {
			short_text(kw, buf, sizeof(buf));
			fail(v, path, "a %s where the schema wants %s", type_of(d), buf);
			goto bad;
		}
	}
	if ((kw = cJSON_GetObjectItemCaseSensitive(s, "const")) && !json_equal(kw, d)) {
		char want[160];

		short_text(d, buf, sizeof(buf));
		short_text(kw, want, sizeof(want));
		fail(v, path, "%s is not the constant %s", buf, want);
		goto bad;
	}
	if ((kw = cJSON_GetObjectItemCaseSensitive(s, "enum"))) {
		const cJSON *e;
		int ok = 0;

		cJSON_ArrayForEach(e, kw)
			ok |= json_equal(e, d);
		if (!ok) {
			short_text(d, buf, sizeof(buf));
			fail(v, path, "%s is not one of the values the schema lists%s", buf, NULL);
			goto bad;
		}
	}
	if (cJSON_IsNumber(d)) {
		if ((kw = cJSON_GetObjectItemCaseSensitive(s, "minimum")) && d->valuedouble < kw->valuedouble) {
			char m[64];

			snprintf(buf, sizeof(buf), "%g", d->valuedouble);
			snprintf(m, sizeof(m), "%g", kw->valuedouble);
			fail(v, path, "%s is below the minimum %s", buf, m);
			goto bad;
		}
		if ((kw = cJSON_GetObjectItemCaseSensitive(s, "exclusiveMinimum")) &&
		    d->valuedouble <= kw->valuedouble) {
			char m[64];

			snprintf(buf, sizeof(buf), "%g", d->valuedouble);
			snprintf(m, sizeof(m), "%g", kw->valuedouble);
			fail(v, path, "%s is not above the exclusive minimum %s", buf, m);
			goto bad;
		}
		if ((kw = cJSON_GetObjectItemCaseSensitive(s, "maximum")) && d->valuedouble > kw->valuedouble) {
			char m[64];

			snprintf(buf, sizeof(buf), "%g", d->valuedouble);
			snprintf(m, sizeof(m), "%g", kw->valuedouble);
			fail(v, path, "%s is above the maximum %s", buf, m);
			goto bad;
		}
	}
	if (cJSON_IsString(d) && (kw = cJSON_GetObjectItemCaseSensitive(s, "pattern"))) {
		regex_t re;
		int rc;

		if (!cJSON_IsString(kw) || regcomp(&re, kw->valuestring, REG_EXTENDED | REG_NOSUB)) {
			fail(v, path, "the schema's pattern %s does not compile%s",
			     cJSON_IsString(kw) ? kw->valuestring : "?", NULL);
			goto bad;
		}
		rc = regexec(&re, d->valuestring, 0, NULL, 0);
		regfree(&re);
		if (rc) {
			fail(v, path, "\"%s\" does not match %s", d->valuestring, kw->valuestring);
			goto bad;
		}
	}
	if (cJSON_IsObject(d)) {
		const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
		const cJSON *addl = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
		const cJSON *m;

		cJSON_ArrayForEach(kw, cJSON_GetObjectItemCaseSensitive(s, "required"))
			if (cJSON_IsString(kw) && !cJSON_GetObjectItemCaseSensitive(d, kw->valuestring)) {
				fail(v, path, "the required member \"%s\" is missing%s", kw->valuestring,
				     NULL);
				goto bad;
			}
		cJSON_ArrayForEach(m, d) {
			const cJSON *ps = props ? cJSON_GetObjectItemCaseSensitive(props, m->string) : NULL;

			snprintf(sub, sizeof(sub), "%s/%s", path, m->string);
			if (ps) {
				if (validate(v, ps, m, sub))
					goto bad;
			} else if (addl) {
				if (cJSON_IsFalse(addl)) {
					fail(v, sub, "member \"%s\" is not in the schema%s", m->string, NULL);
					goto bad;
				}
				if (validate(v, addl, m, sub))
					goto bad;
			}
		}
	}
	if (cJSON_IsArray(d) && (kw = cJSON_GetObjectItemCaseSensitive(s, "items"))) {
		const cJSON *e;
		int i = 0;

		cJSON_ArrayForEach(e, d) {
			snprintf(sub, sizeof(sub), "%s/%d", path, i++);
			if (validate(v, kw, e, sub))
				goto bad;
		}
	}
	v->depth--;
	return 0;
bad:
	v->depth--;
	return -1;
}

int agent_jschema_validate(const cJSON *schema, const cJSON *doc, char *err, size_t len)
{
	struct jv v = { schema, err, len, 0 };

	err[0] = '\0';
	return validate(&v, schema, doc, "") ? AMEBA_EPROTO : 0;
}
