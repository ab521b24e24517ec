/*
 * test_protocol.c - MRI framing (mri/protocol.c): headers, the incremental
 * reader fed byte by byte and in bulk, limits, and the blocking send/recv
 * helpers over a socketpair (timeouts, a peer that closes, a peer that never
 * reads - which must not raise SIGPIPE).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ameba/ameba.h"
#include "check.h"
#include "protocol.h"

/* A framed message in buf; returns its length. */
static size_t frame(uint8_t *buf, const char *body, uint32_t len)
{
	mri_frame_header(buf, len);
	memcpy(buf + MRI_HDR_BYTES, body, len);
	return MRI_HDR_BYTES + len;
}

static void test_header(void)
{
	uint8_t h[4];

	mri_frame_header(h, 0x01020304);
	CHECK(h[0] == 1 && h[1] == 2 && h[2] == 3 && h[3] == 4);
	mri_frame_header(h, 0);
	CHECK(h[0] == 0 && h[1] == 0 && h[2] == 0 && h[3] == 0);
}

/* Byte by byte: the message completes exactly at its last byte. */
static void test_reader_bytewise(void)
{
	static struct mri_reader r;
	uint8_t buf[64];
	size_t n = frame(buf, "{\"v\":1}", 7);
	char *msg = NULL;
	uint32_t len = 0;

	mri_reader_init(&r, 0);
	for (size_t i = 0; i < n; i++) {
		int got;

		CHECK(mri_reader_feed(&r, buf + i, 1) == 1);
		got = mri_reader_next(&r, &msg, &len);
		CHECK_AT(__LINE__, got == (i + 1 == n ? 1 : 0));
		if (i + 1 < n)
			CHECK(mri_reader_partial(&r) == (i + 1 > 0));
	}
	CHECK_STR(msg, "{\"v\":1}");
	CHECK_EQ_U64(len, 7);
	CHECK(!mri_reader_partial(&r));
	free(msg);
	mri_reader_destroy(&r);
}

/* Several messages in one feed (and an empty one) come out one by one. */
static void test_reader_bulk(void)
{
	static struct mri_reader r;
	uint8_t buf[128];
	size_t n = 0;
	char *msg;
	uint32_t len;

	n += frame(buf + n, "a", 1);
	n += frame(buf + n, "", 0);
	n += frame(buf + n, "hello", 5);
	mri_reader_init(&r, 0);
	CHECK_EQ_U64(mri_reader_feed(&r, buf, n), n);
	CHECK(mri_reader_next(&r, &msg, &len) == 1);
	CHECK_STR(msg, "a");
	free(msg);
	CHECK(mri_reader_next(&r, &msg, &len) == 1);
	CHECK_STR(msg, "");
	CHECK_EQ_U64(len, 0);
	free(msg);
	CHECK(mri_reader_next(&r, &msg, &len) == 1);
	CHECK_STR(msg, "hello");
	free(msg);
	CHECK(mri_reader_next(&r, &msg, &len) == 0);
	mri_reader_destroy(&r);
}

/* An announced length over the limit is refused after the 4 header bytes,
 * before any body byte is read or allocated; the limit itself is fine. */
static void test_reader_limits(void)
{
	static struct mri_reader r;
	uint8_t h[4 + 8] = { 0 };
	char *msg = NULL;
	uint32_t len;

	mri_reader_init(&r, 100);
	mri_frame_header(h, 101);
	memcpy(h + 4, "xxxxxxxx", 8);
	CHECK_EQ_U64(mri_reader_feed(&r, h, sizeof(h)), sizeof(h));
	CHECK(mri_reader_next(&r, &msg, &len) == AMEBA_ERANGE);
	CHECK_EQ_U64(r.len, 101);
	CHECK(r.body == NULL);
	CHECK_EQ_U64(r.in_off, 4);	/* the body was not consumed */
	mri_reader_destroy(&r);

	mri_reader_init(&r, 0);
	CHECK_EQ_U64(r.max, MRI_MSG_MAX);
	mri_frame_header(h, 0xffffffffu);
	mri_reader_feed(&r, h, 4);
	CHECK(mri_reader_next(&r, &msg, &len) == AMEBA_ERANGE);
	mri_reader_destroy(&r);

	mri_reader_init(&r, 3);
	mri_frame_header(h, 3);
	memcpy(h + 4, "abc", 3);
	mri_reader_feed(&r, h, 7);
	CHECK(mri_reader_next(&r, &msg, &len) == 1);
	CHECK_STR(msg, "abc");
	free(msg);
	mri_reader_destroy(&r);
}

/* The input buffer fills: feed takes what fits, next drains, feed again. */
static void test_reader_backpressure(void)
{
	static struct mri_reader r;
	size_t body = 3 * MRI_READER_BUF, total = MRI_HDR_BYTES + body, fed = 0;
	uint8_t *buf = malloc(total);
	char *msg = NULL;
	uint32_t len = 0;
	int got = 0, rounds = 0;

	mri_frame_header(buf, (uint32_t)body);
	for (size_t i = 0; i < body; i++)
		buf[MRI_HDR_BYTES + i] = (uint8_t)('a' + i % 26);
	mri_reader_init(&r, 0);
	while (got == 0 && rounds++ < 100) {
		fed += mri_reader_feed(&r, buf + fed, total - fed);
		got = mri_reader_next(&r, &msg, &len);
	}
	CHECK(got == 1);
	CHECK_EQ_U64(len, body);
	CHECK(msg && memcmp(msg, buf + MRI_HDR_BYTES, body) == 0);
	free(msg);
	free(buf);
	mri_reader_destroy(&r);
}

static void test_socket(void)
{
	static struct mri_reader r;
	int sv[2];
	char *msg = NULL, *big;
	uint32_t len = 0;
	uint64_t t0;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(mri_send_frame(sv[0], "{\"x\":1}", 7, 1000) == 0);
	mri_reader_init(&r, 0);
	CHECK(mri_recv_frame(sv[1], &r, &msg, &len, 1000) == 1);
	CHECK_STR(msg, "{\"x\":1}");
	free(msg);

	/* Nothing comes: a timeout, in about the time asked. */
	t0 = mri_now_ns();
	CHECK(mri_recv_frame(sv[1], &r, &msg, &len, 50) == AMEBA_ETIMEDOUT);
	CHECK(mri_now_ns() - t0 >= 40000000ull);
	CHECK(mri_now_ns() - t0 < 2000000000ull);

	/* Too large to send at all. */
	CHECK(mri_send_frame(sv[0], "", (size_t)MRI_MSG_MAX + 1, 10) == AMEBA_ERANGE);

	/* A peer that never reads: the send gives up (the buffer is smaller
	 * than 1 MiB), it does not block. */
	big = calloc(1, MRI_MSG_MAX);
	memset(big, ' ', MRI_MSG_MAX);
	t0 = mri_now_ns();
	CHECK(mri_send_frame(sv[0], big, MRI_MSG_MAX, 100) == AMEBA_ETIMEDOUT);
	CHECK(mri_now_ns() - t0 < 2000000000ull);
	mri_reader_destroy(&r);
	close(sv[0]);
	close(sv[1]);

	/* Truncated: a header and half the body, then the peer closes. */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	{
		uint8_t h[4 + 5];

		mri_frame_header(h, 10);
		memcpy(h + 4, "01234", 5);
		CHECK(write(sv[0], h, sizeof(h)) == (ssize_t)sizeof(h));
	}
	close(sv[0]);
	mri_reader_init(&r, 0);
	CHECK(mri_recv_frame(sv[1], &r, &msg, &len, 1000) == AMEBA_EEXITED);
	mri_reader_destroy(&r);
	close(sv[1]);

	/* Writing to a closed peer: an error, never SIGPIPE (SIGPIPE's default
	 * action would end this test). */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	close(sv[1]);
	CHECK(mri_send_frame(sv[0], big, 1000, 100) == AMEBA_EIO);
	close(sv[0]);
	free(big);
}

int main(void)
{
	signal(SIGPIPE, SIG_DFL);
	test_header();
	test_reader_bytewise();
	test_reader_bulk();
	test_reader_limits();
	test_reader_backpressure();
	test_socket();
	return check_done();
}
