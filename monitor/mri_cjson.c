/*
 * mri_cjson.c - the cJSON functions of the runtime's MRI dispatcher,
 * forwarded to libcjson.so.1 loaded on first use (mri/json.h says why).
 *
 * Notes:
 *  - mri/json.h renames each cJSON function the dispatcher uses to
 *    mri_cj_<name> before cJSON.h is read, so the definitions below have
 *    exactly the library's signatures (typeof of the renamed declaration).
 *  - Loading runs once, on the MRI server thread (or the first in-process
 *    session), never on an application thread's hot path. Until it has
 *    succeeded nothing calls the forwarders: mri_cjson_load() gates them.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "mon.h"
#include "json.h"
#include "mri_cjson.h"

#define CJSON_LIB "libcjson.so.1"

#define CJ_FUNCS(X)                        \
	X(ParseWithLengthOpts)             \
	X(Delete)                          \
	X(PrintUnformatted)                \
	X(free)                            \
	X(GetObjectItemCaseSensitive)      \
	X(CreateObject)                    \
	X(CreateArray)                     \
	X(CreateString)                    \
	X(CreateNumber)                    \
	X(CreateRaw)                       \
	X(CreateBool)                      \
	X(CreateNull)                      \
	X(AddItemToObject)                 \
	X(AddItemToArray)                  \
	X(DeleteItemFromObjectCaseSensitive) \
	X(AddItemReferenceToObject)

static struct {
#define X(name) __typeof__(mri_cj_##name) *name;
	CJ_FUNCS(X)
#undef X
} cj;

static pthread_once_t cj_once = PTHREAD_ONCE_INIT;
static int cj_err = AMEBA_ENOENT;
static char cj_msg[256];

static void cj_load(void)
{
	void *h = dlopen(CJSON_LIB, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(cj_msg, sizeof(cj_msg), "the MRI server needs %s (Debian/Ubuntu: apt install "
			 "libcjson1): %s", CJSON_LIB, dlerror());
		return;
	}
#define X(name)                                                                                \
	cj.name = (__typeof__(cj.name))dlsym(h, "cJSON_" #name);                               \
	if (!cj.name) {                                                                        \
		snprintf(cj_msg, sizeof(cj_msg), "%s lacks cJSON_%s (cJSON 1.7.13 or later is "   \
			 "needed)", CJSON_LIB, #name);                                         \
		return;                                                                        \
	}
	CJ_FUNCS(X)
#undef X
	cj_err = 0;
}

int mri_cjson_load(const char **msg)
{
	pthread_once(&cj_once, cj_load);
	if (msg)
		*msg = cj_err ? cj_msg : "";
	return cj_err;
}

/* After fork the once-control is reset by nothing: its state (done or not)
 * and the loaded library are inherited as they are, which is right. */

cJSON *cJSON_ParseWithLengthOpts(const char *value, size_t len, const char **end, cJSON_bool nul)
{
	return cj.ParseWithLengthOpts(value, len, end, nul);
}

void cJSON_Delete(cJSON *item)
{
	cj.Delete(item);
}

char *cJSON_PrintUnformatted(const cJSON *item)
{
	return cj.PrintUnformatted(item);
}

void cJSON_free(void *object)
{
	cj.free(object);
}

cJSON *cJSON_GetObjectItemCaseSensitive(const cJSON *const object, const char *const string)
{
	return cj.GetObjectItemCaseSensitive(object, string);
}

cJSON *cJSON_CreateObject(void)
{
	return cj.CreateObject();
}

cJSON *cJSON_CreateArray(void)
{
	return cj.CreateArray();
}

cJSON *cJSON_CreateString(const char *string)
{
	return cj.CreateString(string);
}

cJSON *cJSON_CreateNumber(double num)
{
	return cj.CreateNumber(num);
}

cJSON *cJSON_CreateRaw(const char *raw)
{
	return cj.CreateRaw(raw);
}

cJSON *cJSON_CreateBool(cJSON_bool boolean)
{
	return cj.CreateBool(boolean);
}

cJSON *cJSON_CreateNull(void)
{
	return cj.CreateNull();
}

cJSON_bool cJSON_AddItemToObject(cJSON *object, const char *string, cJSON *item)
{
	return cj.AddItemToObject(object, string, item);
}

cJSON_bool cJSON_AddItemToArray(cJSON *array, cJSON *item)
{
	return cj.AddItemToArray(array, item);
}

void cJSON_DeleteItemFromObjectCaseSensitive(cJSON *object, const char *string)
{
	cj.DeleteItemFromObjectCaseSensitive(object, string);
}

cJSON_bool cJSON_AddItemReferenceToObject(cJSON *object, const char *string, cJSON *item)
{
	return cj.AddItemReferenceToObject(object, string, item);
}
