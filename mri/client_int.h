/*
 * client_int.h - what the MRI client's files share: the session, its
 * per-function result slots, the request/reply call and the JSON helpers.
 * Private to mri/client*.c; the public interface is mri.h.
 */
#ifndef AMEBA_MRI_CLIENT_INT_H
#define AMEBA_MRI_CLIENT_INT_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "json.h"
#include "mri.h"
#include "protocol.h"
#include "transport.h"

#define DEFAULT_TIMEOUT_MS 10000
#define MARK_TIMEOUT_MS 120000		/* a mark is an oracle dump */
#define EVENT_QUEUE_MAX 4096
#define MAX_PAGE 4096			/* the server's limit of one listing page */

/* Per-function storage of results (see the notes). */
enum slot {
	SLOT_PROCESS, SLOT_THREADS, SLOT_OBJECTS, SLOT_BINS, SLOT_REGIONS, SLOT_METRICS,
	SLOT_BACKEND, SLOT_READ, SLOT_STOP, SLOT_EVENT, SLOT_FINAL, SLOT_NR
};

struct slot_mem {
	cJSON *root;
	void *mem[7];
};

struct mri_session {
	uint32_t objects_total;		/* nr_total of the last objects reply */
	uint64_t objects_freed;		/* its nr_freed; UINT64_MAX: not given */
	struct mri_transport tr;
	int connected;
	int timeout_ms;
	uint64_t next_id;
	int exited;
	int attached;
	char err[1024];
	/* events received while waiting for replies: a ring of message texts */
	char **evq;
	uint32_t evq_head, evq_nr;
	uint64_t evq_dropped;
	/* the final reading carried by the exit event (arrays in SLOT_FINAL) */
	int has_final;
	struct mri_reading final;
	int keep_error_reply;		/* mri_cl_call() hands back error replies too (mri_request) */
	int product;			/* the server takes counters in the product form */
	struct slot_mem slots[SLOT_NR];
	/*
	 * Bin labels of the sites samples hit, by site id (samples_read names
	 * them). Labels handed out stay valid until mri_close, also when a
	 * site's label deepens: the replaced ones are kept in old_labels.
	 */
	char **site_label;
	uint32_t nr_site_label;
	char **old_labels;
	uint32_t nr_old_labels, cap_old_labels;
};

/* client.c */
void mri_cl_enter(struct mri_session *s);
void mri_cl_leave(struct mri_session *s);
int mri_cl_set_err(struct mri_session *s, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void mri_cl_slot_reset(struct mri_session *s, enum slot k);
uint64_t mri_cl_num_u64(const cJSON *j);
uint64_t mri_cl_hex_u64(const cJSON *j);
const char *mri_cl_str_of(const cJSON *j);
int mri_cl_parse_reading(struct mri_session *s, enum slot k, const cJSON *o, struct mri_reading *r);
int mri_cl_call(struct mri_session *s, cJSON *req, cJSON **root, const cJSON **result);
cJSON *mri_cl_request(const char *op);
cJSON *mri_cl_drop(cJSON *req);
int mri_cl_call_simple(struct mri_session *s, cJSON *req);

/* Brackets a typed call: enter/leave around the transport work. */
#define GUARDED(s, expr)          \
	({                        \
		int r_;           \
		mri_cl_enter(s);  \
		r_ = (expr);      \
		mri_cl_leave(s);  \
		r_;               \
	})

#endif
