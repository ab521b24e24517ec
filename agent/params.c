/*
 * params.c - plugin parameters: "name:k=v,k=v" specs from the command line,
 * defaults and type checks against a plugin's declared parameters.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins.h"

static void params_sync_view(struct agent_params *p)
{
	p->view.nr = p->nr;
	p->view.names = (const char *const *)p->names;
	p->view.values = (const char *const *)p->values;
}

void agent_params_free(struct agent_params *p)
{
	for (uint32_t i = 0; i < p->nr; i++) {
		free(p->names[i]);
		free(p->values[i]);
	}
	free(p->names);
	free(p->values);
	memset(p, 0, sizeof(*p));
}

int agent_params_set(struct agent_params *p, const char *name, const char *value)
{
	char *v, **names, **values;

	for (uint32_t i = 0; i < p->nr; i++) {
		if (strcmp(p->names[i], name))
			continue;
		v = strdup(value);
		if (!v)
			return AMEBA_ENOMEM;
		free(p->values[i]);
		p->values[i] = v;
		return 0;
	}
	names = realloc(p->names, (p->nr + 1) * sizeof(*names));
	if (!names)
		return AMEBA_ENOMEM;
	p->names = names;
	values = realloc(p->values, (p->nr + 1) * sizeof(*values));
	if (!values)
		return AMEBA_ENOMEM;
	p->values = values;
	p->names[p->nr] = strdup(name);
	p->values[p->nr] = strdup(value);
	if (!p->names[p->nr] || !p->values[p->nr]) {
		free(p->names[p->nr]);
		free(p->values[p->nr]);
		return AMEBA_ENOMEM;
	}
	p->nr++;
	params_sync_view(p);
	return 0;
}

int agent_spec_parse(const char *spec, char **name, struct agent_params *out, char *err,
		     size_t len)
{
	const char *colon = strchr(spec, ':');
	char *rest = NULL, *tok, *save = NULL;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	*name = colon ? strndup(spec, (size_t)(colon - spec)) : strdup(spec);
	if (!*name)
		return AMEBA_ENOMEM;
	if (!**name) {
		snprintf(err, len, "'%s': the name is missing; write NAME or NAME:key=value,...", spec);
		rc = AMEBA_EINVAL;
		goto fail;
	}
	if (!colon)
		return 0;
	rest = strdup(colon + 1);
	if (!rest) {
		rc = AMEBA_ENOMEM;
		goto fail;
	}
	for (tok = strtok_r(rest, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq || eq == tok) {
			snprintf(err, len, "'%s': '%s' is not key=value; write %s:key=value,key=value",
				 spec, tok, *name);
			rc = AMEBA_EINVAL;
			goto fail;
		}
		*eq = '\0';
		rc = agent_params_set(out, tok, eq + 1);
		if (rc)
			goto fail;
	}
	free(rest);
	return 0;
fail:
	free(rest);
	free(*name);
	*name = NULL;
	agent_params_free(out);
	return rc;
}

static const char *param_type_name(int type)
{
	switch (type) {
	case AMEBA_PARAM_INT: return "an integer";
	case AMEBA_PARAM_DOUBLE: return "a number";
	case AMEBA_PARAM_METRIC: return "a metric name (see `ameba list metrics`)";
	default: return "a string";
	}
}

/* 0 when value parses as type. */
static int param_check(int type, const char *value)
{
	char *end;

	errno = 0;
	switch (type) {
	case AMEBA_PARAM_INT:
		(void)strtoll(value, &end, 0);
		return (*value && !*end && !errno) ? 0 : -1;
	case AMEBA_PARAM_DOUBLE: {
		double d = strtod(value, &end);

		return (*value && !*end && !errno && isfinite(d)) ? 0 : -1;
	}
	case AMEBA_PARAM_METRIC:
		return ameba_metric_by_name(value) >= 0 ? 0 : -1;
	default:
		return 0;
	}
}

int agent_params_resolve(const char *who, const struct ameba_param *decl, uint32_t nr_decl,
			 const struct agent_params *given, struct agent_params *out, char *err,
			 size_t len)
{
	int rc;

	memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; i < nr_decl; i++) {
		rc = agent_params_set(out, decl[i].name, decl[i].def ? decl[i].def : "");
		if (rc)
			goto fail;
	}
	for (uint32_t g = 0; given && g < given->nr; g++) {
		const struct ameba_param *d = NULL;

		for (uint32_t i = 0; i < nr_decl; i++)
			if (!strcmp(decl[i].name, given->names[g]))
				d = &decl[i];
		if (!d) {
			size_t o = (size_t)snprintf(err, len, "%s has no parameter '%s'; it takes:", who,
						    given->names[g]);

			for (uint32_t i = 0; i < nr_decl && o < len; i++)
				o += (size_t)snprintf(err + o, len - o, "%s %s", i ? "," : "",
						      decl[i].name);
			if (!nr_decl && o < len)
				snprintf(err + o, len - o, " none");
			rc = AMEBA_EINVAL;
			goto fail;
		}
		if (param_check(d->type, given->values[g])) {
			snprintf(err, len, "%s: parameter %s wants %s, got '%s' (default %s)", who,
				 d->name, param_type_name(d->type), given->values[g],
				 d->def ? d->def : "none");
			rc = AMEBA_EINVAL;
			goto fail;
		}
		rc = agent_params_set(out, given->names[g], given->values[g]);
		if (rc)
			goto fail;
	}
	params_sync_view(out);
	return 0;
fail:
	agent_params_free(out);
	return rc;
}

const char *agent_params_format(const struct agent_params *p, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < p->nr && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s=%s", i ? "," : "", p->names[i],
				      p->values[i]);
	return buf;
}
