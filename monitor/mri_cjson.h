/*
 * mri_cjson.h - libcjson for the runtime's MRI dispatcher (mri_cjson.c).
 */
#ifndef AMEBA_MRI_CJSON_H
#define AMEBA_MRI_CJSON_H

/*
 * Loads libcjson.so.1 once (any later call returns the first outcome):
 * 0, or AMEBA_ENOENT with *msg (optional) saying what is missing and how to
 * install it. No cJSON function may be called before this returned 0.
 */
int mri_cjson_load(const char **msg) MON_HIDDEN;	/* also declared in mri/json.h */

#endif
