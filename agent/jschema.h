/*
 * jschema.h - validating a JSON document against the subset of JSON Schema
 * (draft 2020-12) the report schema uses (jschema.c lists it).
 */
#ifndef AMEBA_AGENT_JSCHEMA_H
#define AMEBA_AGENT_JSCHEMA_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "ameba/ameba.h"

/*
 * 0 when doc satisfies schema; AMEBA_EPROTO otherwise, with err (len bytes)
 * saying where and why ("at /findings/0/severity: 1.5 is above the maximum
 * 1"). A schema keyword outside the subset is an error too.
 */
int agent_jschema_validate(const cJSON *schema, const cJSON *doc, char *err, size_t len);

#endif
