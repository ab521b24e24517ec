/*
 * mri_local.c - the MRI API inside an instrumented program (built with
 * `ameba cc`, which carries the whole MRI in libameba-rt):
 *  - mri_open_local(): the program counts its own accesses to local_arr,
 *    with interval events; while it is open, a connection to its own
 *    socket (from this very process) is refused as busy;
 *  - after mri_close(), the same API by pid: the runtime's server thread
 *    answers this process's own client, and the counts are exact again.
 *  - a file mapping (a page of the program's own file) is listed with its
 *    file's path and offset, named by the file and the mapping site.
 * Control code is built without instrumentation so that the counted
 * windows hold exactly the accesses below.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

static void *self_map;		/* page 1 of this program's file */
static int self_map_line;
static char self_path[PATH_MAX];

UNCOUNTED static void map_self(void)
{
	int fd;

	if (!realpath("/proc/self/exe", self_path) || (fd = open(self_path, O_RDONLY)) < 0) {
		CHECK(!"open /proc/self/exe");
		return;
	}
	self_map = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 4096); self_map_line = __LINE__;
	CHECK(self_map != MAP_FAILED);
	close(fd);
}

/* The mapping is listed as an mmap object with its file and offset. */
UNCOUNTED static void check_file_map(struct mri_session *s)
{
	struct mri_object_query q = { .kinds = 1u << MRI_OBJ_MMAP, .live_only = 1 };
	struct mri_object o[64];
	uint32_t cursor = 0;
	char want[PATH_MAX + 64];
	const char *base = strrchr(self_path, '/') ? strrchr(self_path, '/') + 1 : self_path;
	int n = 0, got, found = 0;

	while (cursor != MRI_END && n < 64 && (got = mri_objects(s, &q, &cursor, o + n, 64 - (uint32_t)n)) >= 0)
		n += got;
	snprintf(want, sizeof(want), "%s <- map_self@mri_local.c:%d", base, self_map_line);
	for (int i = 0; i < n; i++) {
		if (o[i].start != (uintptr_t)self_map)
			continue;
		found++;
		CHECK(o[i].kind == MRI_OBJ_MMAP);
		CHECK_EQ_U64(o[i].end - o[i].start, 4096);
		CHECK(o[i].file && !strcmp(o[i].file, self_path));
		CHECK_EQ_U64(o[i].file_off, 4096);
		CHECK(o[i].name && !strcmp(o[i].name, want));
		if (o[i].name && strcmp(o[i].name, want))
			fprintf(stderr, "file mapping named '%s', want '%s'\n", o[i].name, want);
	}
	CHECK_EQ_U64(found, 1);
	for (int i = 0; i < n; i++)	/* anonymous mappings carry no file */
		CHECK(o[i].start == (uintptr_t)self_map || o[i].file == NULL);
}

UNCOUNTED int main(void)
{
	struct mri_session *s, *s2;
	struct mri_process_info pi;
	int err;

	map_self();
	err = mri_open_local(&s);
	if (err) {
		fprintf(stderr, "mri_open_local: %s\n", mri_errmsg(s));
		return 1;
	}
	check_file_map(s);
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
	if (!err) {
		count_on(s, 3000, 0);
		check_file_map(s);
	}
	CHECK(mri_process(s, &pi) == 0 && !pi.active);
	mri_close(s);
	return check_done();
}
