/*
 * ameba.h - the public vocabulary shared by the runtime, the MRI and the agent:
 * error codes, the metric table and the backend table.
 *
 * Every function of the project that can fail returns 0 (or a non-negative
 * count) on success and a negative AMEBA_E* code on failure;
 * ameba_strerror() turns a code into one line of text.
 */
#ifndef AMEBA_AMEBA_H
#define AMEBA_AMEBA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AMEBA_VERSION_STRING "0.1.0"

#if defined(__GNUC__)
#define AMEBA_API __attribute__((visibility("default")))
#else
#define AMEBA_API
#endif

enum ameba_error {
	AMEBA_OK = 0,
	AMEBA_ENOMEM = -1,	/* out of memory */
	AMEBA_EINVAL = -2,	/* invalid argument */
	AMEBA_ENOENT = -3,	/* no such object, file or name */
	AMEBA_EIO = -4,		/* read or write failed */
	AMEBA_EPROTO = -5,	/* malformed message or file */
	AMEBA_ENOTSUP = -6,	/* not supported by this backend / machine */
	AMEBA_EPERM = -7,	/* permission denied */
	AMEBA_EABI = -8,	/* plugin or peer built for another ABI */
	AMEBA_EBUSY = -9,	/* resource busy (e.g. another client attached) */
	AMEBA_EEXITED = -10,	/* the target process exited */
	AMEBA_ETIMEDOUT = -11,	/* no answer in time */
	AMEBA_ERANGE = -12,	/* value out of range */
	AMEBA_ENOPMU = -13,	/* no hardware performance monitoring unit */
	AMEBA_E_NR = 14,
};

/* Text for an AMEBA_E* code; never NULL. */
AMEBA_API const char *ameba_strerror(int err);

/*
 * Metrics. The names are a user-visible contract (design.md section 6);
 * the enum order is internal and may grow at the end only.
 */
enum ameba_metric {
	AMEBA_M_MEM_REF,
	AMEBA_M_READS,
	AMEBA_M_WRITES,
	AMEBA_M_L1D_MISS,
	AMEBA_M_L1D_MISS_RD,
	AMEBA_M_L1D_MISS_WR,
	AMEBA_M_L2_MISS,
	AMEBA_M_L2_MISS_RD,
	AMEBA_M_L2_MISS_WR,
	AMEBA_M_LLC_MISS,
	AMEBA_M_LLC_MISS_RD,
	AMEBA_M_LLC_MISS_WR,
	AMEBA_M_TLB_MISS,
	AMEBA_M_COH_MISS,
	AMEBA_M_COH_MISS_TRUE,
	AMEBA_M_COH_MISS_FALSE,
	AMEBA_M_INVAL_SENT,
	AMEBA_M_INVAL_RECV,
	AMEBA_M_INTERVENTION,
	AMEBA_M_MEM_LOCAL,
	AMEBA_M_MEM_REMOTE,
	AMEBA_M_CONFLICT_MISS,
	AMEBA_M_CAPACITY_MISS,
	AMEBA_M_COMPULSORY_MISS,
	AMEBA_M_EST_CYCLES,
	AMEBA_M_EST_STALL_CYCLES,
	AMEBA_M_SAMPLES,
	AMEBA_M_NR
};

struct ameba_metric_info {
	const char *name;	/* e.g. "l1d_miss" */
	const char *unit;	/* "accesses", "events", "cycles", ... */
	const char *desc;	/* one line */
};

/* Table entry for metric m, or NULL when m is out of range. */
AMEBA_API const struct ameba_metric_info *ameba_metric_info(int m);
/* The metric named name, or AMEBA_ENOENT. */
AMEBA_API int ameba_metric_by_name(const char *name);

/* The bit of metric m in a metric mask (AMEBA_M_NR fits in 64 bits). */
#define AMEBA_M_BIT(m) (UINT64_C(1) << (m))

/*
 * Backends: the one table of what observes memory accesses (mri/common.c,
 * docs/backends.md). The names are a user-visible contract (`--backend`,
 * AMEBA_BACKEND, `ameba list backends`, which lists the rows in this
 * order); the order is internal otherwise and may grow at the end.
 */
enum ameba_backend_where {
	AMEBA_BACKEND_RUNTIME,	/* in the target: libameba-rt, reached over the MRI */
	AMEBA_BACKEND_AGENT,	/* in the agent: perf_event_open(2) on the target */
};

struct ameba_backend_info {
	const char *name;	/* e.g. "sim" */
	int where;		/* enum ameba_backend_where */
	int exact;		/* 1: exact counts; 0: estimates from samples */
	uint64_t metrics;	/* AMEBA_M_BIT of each metric it provides */
	const char *desc;	/* one line: what it measures */
	const char *needs;	/* what the target and the machine need */
};

/* Row i of the backend table, or NULL when i is out of range. */
AMEBA_API const struct ameba_backend_info *ameba_backend_info(int i);
/* The row of the backend named name, or NULL. */
AMEBA_API const struct ameba_backend_info *ameba_backend_by_name(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* AMEBA_AMEBA_H */
