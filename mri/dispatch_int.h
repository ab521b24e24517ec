/*
 * dispatch_int.h - what the two halves of the MRI dispatcher share:
 * dispatch.c (the session: envelope, replies, validation, readings, events)
 * and dispatch_ops.c (the ops). Internal to mri/; the interface is
 * dispatch.h.
 */
#ifndef AMEBA_MRI_DISPATCH_INT_H
#define AMEBA_MRI_DISPATCH_INT_H

#include <stddef.h>
#include <stdint.h>

#include "dispatch.h"
#include "json.h"

#ifdef AMEBA_RT
/* In the runtime these files' statics are the runtime's, not the program's:
 * the object map recognises them by this marker (mon.h, elfsyms.c). */
static const char mon_rt_unit_marker[1] __attribute__((used)) = "";
#endif

#define MAX_INTEGER (1ull << 53)	/* integers a JSON double holds exactly */
#define THREAD_POLL_NS 100000000ull	/* thread events are looked for every 100 ms */
#define THREAD_SCAN 65536		/* thread records examined per poll */
#define MIN_INTERVAL_MS 10
#define MAX_INTERVAL_MS 3600000

struct mri_disp {
	const struct mri_monitor_ops *ops;
	void *ctx;
	int32_t peer_pid;
	int hello;			/* hello answered */
	uint64_t hello_id;
	int attached;
	int exited;			/* the exit event was produced */
	const char *backend;		/* from ops->attach; static storage */

	/* the experiment (one at a time) */
	int exp_on;
	uint64_t exp_id;		/* the monitor's generation */
	uint32_t exp_nr;
	uint64_t *exp_prev;		/* [exp_nr]: values at the previous reading */
	uint64_t *exp_cur;		/* [exp_nr]: scratch for a reading */
	uint64_t exp_seq;
	uint64_t exp_prev_ns;
	uint32_t interval_ms;
	uint64_t next_tick_ns;		/* UINT64_MAX: no interval events */

	/* the sample stream */
	int samples_on;
	int sample_metric;

	/* events */
	unsigned subs;			/* MRI_SUB_* */
	uint32_t thr_seen;		/* ids [0, thr_seen) were announced as started */
	uint8_t *thr_gone;		/* [thr_cap]: exit announced (or exited before) */
	uint32_t thr_cap;
	uint32_t thr_scan;		/* next id to check for an exit */
	uint32_t thr_scanned;		/* ids checked in the current round */
	uint64_t next_thr_ns;		/* next round of thread polling */
};

/* One request being handled. */
struct mri_req {
	struct mri_disp *d;
	const cJSON *msg;
	const char *op;
	cJSON *result;
	int code;			/* AMEBA_E* of the failure, 0 */
	char err[768];
	cJSON *err_extra;		/* optional fields added to "error" */
	int close;
};

/* One op: its wire name and handler (dispatch_ops.c). A handler validates
 * r->msg, calls the ops, fills r->result; on failure it returns the code
 * mri_req_fail() recorded. */
struct mri_op_entry {
	const char *name;
	int (*fn)(struct mri_req *r);
};

extern const struct mri_op_entry mri_disp_ops[];
extern const size_t mri_disp_nr_ops;
/* the experiment ops (dispatch_exp.c) */
int mri_disp_op_start(struct mri_req *r);
int mri_disp_op_read(struct mri_req *r);
int mri_disp_op_stop(struct mri_req *r);
/* a mark's label field, and its result in the reply (start and mark) */
int mri_disp_mark_label(struct mri_req *r, const cJSON *jl, const char *field, const char **label);
int mri_disp_mark_result(struct mri_req *r, cJSON *to, const char *label, int err,
			 const char *path, const char *why);

/* ---- JSON output (dispatch.c) ---- */

/* An exact unsigned integer (a raw number: doubles would round above 2^53). */
cJSON *mri_json_u64(uint64_t v);
/* "0x1f00": addresses as strings. */
cJSON *mri_json_hex(uint64_t v);
cJSON *mri_json_u64_array(const uint64_t *v, uint32_t nr);
/* v in decimal at p (20 bytes at most, no terminator); returns the end. */
char *mri_put_u64(char *p, uint64_t v);
/* Bytes s takes in JSON output, quotes and escapes included (upper bound). */
size_t mri_json_str_cost(const char *s);
/* A short printable rendering of j for error messages, in buf. */
const char *mri_json_show(const cJSON *j, char *buf, size_t len);

/* ---- validation (dispatch.c): 0, or the code recorded with mri_req_fail ---- */

/* Records the request's failure (the first one wins) and returns code. */
int mri_req_fail(struct mri_req *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int mri_req_nomem(struct mri_req *r);
/* Refuses members of obj not named in allowed[] (NULL-terminated); where
 * names obj in the message. */
int mri_req_fields(struct mri_req *r, const cJSON *obj, const char *where, const char *const *allowed);
/* An integer number in [lo, hi] (hi <= 2^53). */
int mri_req_uint(struct mri_req *r, const cJSON *j, const char *name, uint64_t lo, uint64_t hi, uint64_t *out);
/* The integer member key of obj, def when absent. */
int mri_req_opt_uint(struct mri_req *r, const cJSON *obj, const char *key, uint64_t lo, uint64_t hi,
		     uint64_t def, uint64_t *out);
int mri_req_opt_bool(struct mri_req *r, const cJSON *obj, const char *key, int def, int *out);
/* A string of at most maxlen bytes. */
int mri_req_str(struct mri_req *r, const cJSON *j, const char *name, size_t maxlen, const char **out);
/* An address: "0x" and 1-16 hex digits, or an integer up to 2^53. */
int mri_req_addr(struct mri_req *r, const cJSON *j, const char *name, uint64_t *out);
/* An array of at most max elements; *nr receives its length. */
int mri_req_array(struct mri_req *r, const cJSON *j, const char *name, uint32_t max, uint32_t *nr);

/* ---- the session ---- */

/* A reading of the running experiment (values, deltas since the previous
 * reading, per-thread rows); NULL with *err on failure (dispatch.c). */
cJSON *mri_disp_read_now(struct mri_disp *d, int per_thread, int *err);
cJSON *mri_disp_read_swap(struct mri_disp *d, int per_thread, const struct mri_cond *c,
			  uint32_t nr, uint64_t *gen, int *err);
/* Forgets the experiment's state (not the monitor's: disarm first). */
void mri_disp_forget_experiment(struct mri_disp *d);
/* Disarms the experiment and the sample stream (dispatch_ops.c). */
void mri_disp_quiesce(struct mri_disp *d);
/* The backend in use (zeroed when none); always 0 (dispatch_ops.c). */
int mri_disp_backend_rec(struct mri_disp *d, struct mri_backend_rec *b);
/* Does backend b provide metric m? */
int mri_backend_has(const struct mri_backend_rec *b, int m);

#endif /* AMEBA_MRI_DISPATCH_INT_H */
