/*
 * fuzz_dispatch.c - libFuzzer target for the MRI message parser and
 * dispatcher (mri/protocol.c, mri/dispatch.c) over the fake monitor.
 *
 * The input's first byte picks the mode, the rest is the data:
 *   bit 0 set    a framed byte stream (4-byte lengths + bodies), read by
 *                the frame reader and dispatched message after message in
 *                one session, so sequences (hello, attach, start, read, ...)
 *                and out-of-order requests are reached
 *   bit 0 clear  the data is one request, handed to the dispatcher whole
 *   bit 1 set    the session ends with the exit event
 * Between messages the fake clock and counters advance, so interval and
 * thread events fire too. The fake monitor aborts when the dispatcher
 * breaks a promise it makes to the ops (validated arguments, attach/detach
 * pairing): such a break is a crash here.
 *
 * Build: clang -fsanitize=fuzzer,address,undefined (tests/mri/mri.cmake).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "fake_ops.h"
#include "protocol.h"

#define FUZZ_MSG_MAX (64u * 1024)	/* a smaller limit reaches the oversize path */

static void drain_events(struct mri_disp *d)
{
	char *ev;
	size_t len;

	for (int i = 0; i < 64 && mri_disp_poll_event(d, &ev, &len) == 1; i++)
		free(ev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mri_reader r;
	static struct fake_mon f;
	struct mri_disp *d;
	char *reply;
	size_t rlen;
	uint8_t mode;

	if (size < 1)
		return 0;
	mode = data[0];
	data++;
	size--;
	fake_init(&f);
	d = mri_disp_new(&fake_ops, &f, 1);
	if (!d)
		return 0;
	if (mode & 1) {
		size_t off = 0;
		int stop = 0;

		mri_reader_init(&r, FUZZ_MSG_MAX);
		while (!stop && off < size) {
			off += mri_reader_feed(&r, data + off, size - off);
			for (;;) {
				char *msg;
				uint32_t len;
				int got = mri_reader_next(&r, &msg, &len), rc;

				if (got == 0)
					break;
				if (got < 0) {	/* oversized: the server replies, then closes */
					reply = mri_disp_error_text(got, "oversized", &rlen);
					free(reply);
					stop = 1;
					break;
				}
				rc = mri_disp_handle(d, msg, len, &reply, &rlen);
				free(msg);
				free(reply);
				f.now_ns += 37000000ull * (1 + len % 7);
				fake_tick(&f);
				if (len % 5 == 0 && f.nr_threads < FAKE_MAX_THREADS) {
					f.exited[f.nr_threads - 1] = 1;
					f.nr_threads++;
				}
				drain_events(d);
				if (rc == MRI_DISP_CLOSE) {
					stop = 1;
					break;
				}
			}
		}
		mri_reader_destroy(&r);
	} else {
		mri_disp_handle(d, (const char *)data, size, &reply, &rlen);
		free(reply);
		drain_events(d);
	}
	if (mode & 2) {
		reply = mri_disp_exit_event(d, &rlen);
		free(reply);
	}
	mri_disp_end(d);
	mri_disp_free(d);
	return 0;
}
