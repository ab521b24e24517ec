/*
 * mri_local.c - the MRI API inside an instrumented program (built with
 * `ameba cc`, which carries the whole MRI in libameba-rt):
 *  - mri_open_local(): the program counts its own accesses to local_arr,
 *    with interval events; while it is open, a connection to its own
 *    socket (from this very process) is refused as busy;
 *  - after mri_close(), the same API by pid: the runtime's server thread
 *    answers this process's own client, and the counts are exact again.
 * Control code is built without instrumentation so that the counted
 * windows hold exactly the accesses below.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "mri.h"

#define UNCOUNTED __attribute__((no_sanitize("thread"), noinline))

uint64_t local_arr[1000] __attribute__((aligned(64)));

/* n volatile writes: n counted accesses to local_arr. */
__attribute__((noinline)) static void touch(int n)
{
	volatile uint64_t *a = local_arr;

	for (int i = 0; i < n; i++)
		a[i % 1000] = (uint64_t)i;
}

UNCOUNTED static uint32_t find(struct mri_session *s, const char *name)
{
	struct mri_object_query q = { .name = name, .live_only = 1 };
	struct mri_object o[2];
	uint32_t cursor = 0;
	int n = 0, got;

	while (cursor != MRI_END && (got = mri_objects(s, &q, &cursor, o + n, 2 - (uint32_t)n)) >= 0)
		n += got;
	CHECK_EQ_U64(n, 1);
	return n ? o[0].id : UINT32_MAX;
}

/* Counts `touch(n)` through session s; checks the object and total counters. */
UNCOUNTED static void count_on(struct mri_session *s, int n, uint32_t interval_ms)
{
	uint32_t id = find(s, "local_arr");
	struct mri_counter c[2] = {
		{ .metric = AMEBA_M_WRITES, .nr_objects = 1, .objects = &id },
		{ .metric = AMEBA_M_MEM_REF },
	};
	struct mri_reading r;
	struct mri_event ev;
	uint64_t exp;
	int err, err_read;

	CHECK(mri_attach(s, NULL) == 0);
	/* No CHECK between start and read: check.h is instrumented, and its
	 * bookkeeping would count in the total. */
	err = mri_experiment_start(s, c, 2, interval_ms, &exp);
	touch(n);
	err_read = mri_experiment_read(s, exp, 0, &r);
	if (err)
		fprintf(stderr, "start: %s\n", mri_errmsg(s));
	CHECK(err == 0);
	CHECK(err_read == 0);
	CHECK_EQ_U64(r.values[0], (uint64_t)n);
	CHECK_EQ_U64(r.values[1], (uint64_t)n);
	printf("local_arr writes %" PRIu64 ", total %" PRIu64 " (want %d)\n", r.values[0], r.values[1], n);
	if (interval_ms) {
		touch(10);
		err = mri_next_event(s, &ev, 5000);
		CHECK(err == 0 && ev.kind == MRI_EV_INTERVAL);
		CHECK(ev.reading.nr == 2 && ev.reading.deltas[0] == 10);
	}
	CHECK(mri_experiment_stop(s, exp, NULL) == 0);
	CHECK(mri_detach(s) == 0);
}

UNCOUNTED int main(void)
{
	struct mri_session *s, *s2;
	struct mri_process_info pi;
	int err;

	err = mri_open_local(&s);
	if (err) {
		fprintf(stderr, "mri_open_local: %s\n", mri_errmsg(s));
		return 1;
	}
	CHECK(mri_process(s, &pi) == 0);
	CHECK(pi.pid == getpid() && !pi.active);
	/* Our own socket, while the local session is open: busy. */
	err = mri_open_pid(&s2, getpid(), 5000);
	if (err != AMEBA_EBUSY)
		fprintf(stderr, "own socket while local: %d %s\n", err, mri_errmsg(s2));
	CHECK(err == AMEBA_EBUSY);
	CHECK(strstr(mri_errmsg(s2), "in-process session") != NULL);
	mri_close(s2);
	/* A second local session: busy too. */
	CHECK(mri_open_local(&s2) == AMEBA_EBUSY);
	mri_close(s2);
	count_on(s, 5000, 20);
	mri_close(s);

	/* The same API, by pid, served by this process's server thread. */
	err = mri_open_pid(&s, getpid(), 5000);
	if (err)
		fprintf(stderr, "mri_open_pid(self): %s\n", mri_errmsg(s));
	CHECK(err == 0);
	if (!err)
		count_on(s, 3000, 0);
	CHECK(mri_process(s, &pi) == 0 && !pi.active);
	mri_close(s);
	return check_done();
}
