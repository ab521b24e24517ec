/*
 * json.h - the cJSON functions the MRI uses, and small helpers.
 *
 * In the runtime (AMEBA_RT defined) every cJSON function used here is
 * renamed to mri_cj_<name> before cJSON.h is read, so cJSON.h itself
 * declares the renamed functions with their exact signatures;
 * monitor/mri_cjson.c defines them by forwarding to libcjson.so.1, loaded
 * with dlopen when the first client connects. Why:
 *  - an instrumented program then does not depend on libcjson at link time
 *    (nor does anything else linking the runtime's objects);
 *  - a program that carries its own copy of cJSON (a common vendored file)
 *    cannot clash with ours: the runtime defines no cJSON_* symbol.
 * Outside the runtime (client library, tests, fuzzer) the names are the
 * plain cJSON ones and the program links libcjson. The runtime carries the
 * whole MRI (client, dispatcher, framing) so that an instrumented program
 * gets mri.h from libameba-rt and must not link libameba-mri.a as well.
 */
#ifndef AMEBA_MRI_JSON_H
#define AMEBA_MRI_JSON_H

#ifdef AMEBA_RT
#define cJSON_ParseWithLengthOpts mri_cj_ParseWithLengthOpts
#define cJSON_Delete mri_cj_Delete
#define cJSON_PrintUnformatted mri_cj_PrintUnformatted
#define cJSON_free mri_cj_free
#define cJSON_GetObjectItemCaseSensitive mri_cj_GetObjectItemCaseSensitive
#define cJSON_CreateObject mri_cj_CreateObject
#define cJSON_CreateArray mri_cj_CreateArray
#define cJSON_CreateString mri_cj_CreateString
#define cJSON_CreateNumber mri_cj_CreateNumber
#define cJSON_CreateRaw mri_cj_CreateRaw
#define cJSON_CreateBool mri_cj_CreateBool
#define cJSON_CreateNull mri_cj_CreateNull
#define cJSON_AddItemToObject mri_cj_AddItemToObject
#define cJSON_AddItemToArray mri_cj_AddItemToArray
#define cJSON_DeleteItemFromObjectCaseSensitive mri_cj_DeleteItemFromObjectCaseSensitive
#define cJSON_AddItemReferenceToObject mri_cj_AddItemReferenceToObject
#endif

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#ifdef AMEBA_RT
/* monitor/mri_cjson.c: loads libcjson once; 0, or AMEBA_ENOENT and why. */
int mri_cjson_load(const char **msg) __attribute__((visibility("hidden")));
#endif

/* 0 when the cJSON functions may be called; else an AMEBA_E* code and, in
 * *msg, what is missing. Always 0 outside the runtime. */
static inline int mri_json_ready(const char **msg)
{
#ifdef AMEBA_RT
	return mri_cjson_load(msg);
#else
	*msg = "";
	return 0;
#endif
}

/* Parses len bytes (need not be NUL-terminated); NULL when not JSON. */
static inline cJSON *mri_json_parse(const char *text, size_t len)
{
	return cJSON_ParseWithLengthOpts(text, len, NULL, 0);
}

/* Number of elements of an array or members of an object (0 otherwise). */
static inline uint32_t mri_json_count(const cJSON *j)
{
	uint32_t n = 0;

	if (j && (j->type & (cJSON_Array | cJSON_Object)))
		for (const cJSON *e = j->child; e; e = e->next)
			n++;
	return n;
}

/* The type of j without the flag bits (cJSON_Number, cJSON_String, ...). */
static inline int mri_json_type(const cJSON *j)
{
	return j ? j->type & 0xff : cJSON_Invalid;
}

/* obj[key] (case-sensitive), NULL when absent or obj is not an object. */
static inline cJSON *mri_json_get(const cJSON *obj, const char *key)
{
	if (mri_json_type(obj) != cJSON_Object)
		return NULL;
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* Adds item to obj under key; frees item and returns -1 when obj is NULL or
 * item is NULL (allocation failure anywhere simply propagates). */
static inline int mri_json_add(cJSON *obj, const char *key, cJSON *item)
{
	if (!obj || !item || !cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(item);
		return -1;
	}
	return 0;
}

static inline int mri_json_push(cJSON *arr, cJSON *item)
{
	if (!arr || !item || !cJSON_AddItemToArray(arr, item)) {
		cJSON_Delete(item);
		return -1;
	}
	return 0;
}

#endif /* AMEBA_MRI_JSON_H */
