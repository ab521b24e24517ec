/*
 * protocol.c - MRI wire framing (see protocol.h).
 *
 * Notes:
 *  - The header is big-endian (network order) so that a hex dump of a
 *    capture reads naturally: 00 00 00 1c {"v":1,"id":1,"op":"ping"}.
 *  - The reader never trusts the header: an announced length above the limit
 *    is refused before a single body byte is read or allocated, so a peer
 *    cannot make the target allocate or wait for more than MRI_MSG_MAX bytes.
 *  - Writers use MSG_NOSIGNAL: a client that vanished must never kill the
 *    target with SIGPIPE.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ameba/ameba.h"
#include "ameba/plugin.h"
#include "protocol.h"

/* what the agent tells strategies (ameba_host.max_message_bytes) */
_Static_assert(AMEBA_MAX_MESSAGE_BYTES == MRI_MSG_MAX,
	       "the plugin ABI's message limit is the MRI's");

#ifdef AMEBA_RT
/* The object map's mark of a runtime file (mon.h, elfsyms.c). */
static const char mon_rt_unit_marker[1] __attribute__((used)) = "";
#endif

uint64_t mri_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void mri_frame_header(uint8_t hdr[MRI_HDR_BYTES], uint32_t len)
{
	hdr[0] = (uint8_t)(len >> 24);
	hdr[1] = (uint8_t)(len >> 16);
	hdr[2] = (uint8_t)(len >> 8);
	hdr[3] = (uint8_t)len;
}

void mri_reader_init(struct mri_reader *r, uint32_t max)
{
	memset(r, 0, offsetof(struct mri_reader, in));
	if (max == 0 || max > MRI_MSG_MAX)
		max = MRI_MSG_MAX;
	r->max = max;
}

void mri_reader_destroy(struct mri_reader *r)
{
	free(r->body);
	r->body = NULL;
	r->hdr_got = 0;
	r->body_got = 0;
	r->in_off = r->in_len = 0;
}

int mri_reader_partial(const struct mri_reader *r)
{
	return r->hdr_got > 0;
}

size_t mri_reader_feed(struct mri_reader *r, const void *data, size_t n)
{
	size_t room;

	if (r->in_off == r->in_len)
		r->in_off = r->in_len = 0;
	if (r->in_off > 0 && r->in_len == sizeof(r->in)) {
		memmove(r->in, r->in + r->in_off, r->in_len - r->in_off);
		r->in_len -= r->in_off;
		r->in_off = 0;
	}
	room = sizeof(r->in) - r->in_len;
	if (n > room)
		n = room;
	memcpy(r->in + r->in_len, data, n);
	r->in_len += (uint32_t)n;
	return n;
}

int mri_reader_fill(struct mri_reader *r, int fd)
{
	ssize_t n;

	if (r->in_off == r->in_len)
		r->in_off = r->in_len = 0;
	if (r->in_len == sizeof(r->in)) {
		if (r->in_off == 0)
			return AMEBA_ERANGE;
		memmove(r->in, r->in + r->in_off, r->in_len - r->in_off);
		r->in_len -= r->in_off;
		r->in_off = 0;
	}
	do
		n = read(fd, r->in + r->in_len, sizeof(r->in) - r->in_len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? AMEBA_ETIMEDOUT : AMEBA_EIO;
	r->in_len += (uint32_t)n;
	return (int)n;
}

int mri_reader_next(struct mri_reader *r, char **msg, uint32_t *len)
{
	while (r->hdr_got < MRI_HDR_BYTES) {
		if (r->in_off == r->in_len)
			return 0;
		r->hdr[r->hdr_got++] = r->in[r->in_off++];
		if (r->hdr_got < MRI_HDR_BYTES)
			continue;
		r->len = (uint32_t)r->hdr[0] << 24 | (uint32_t)r->hdr[1] << 16 |
			 (uint32_t)r->hdr[2] << 8 | r->hdr[3];
		if (r->len > r->max)
			return AMEBA_ERANGE;	/* refused before reading the body */
		r->body = malloc((size_t)r->len + 1);
		if (!r->body) {
			r->hdr_got = 0;
			return AMEBA_ENOMEM;
		}
		r->body_got = 0;
	}
	if (r->body_got < r->len) {
		uint32_t avail = r->in_len - r->in_off, want = r->len - r->body_got;
		uint32_t n = avail < want ? avail : want;

		memcpy(r->body + r->body_got, r->in + r->in_off, n);
		r->body_got += n;
		r->in_off += n;
		if (r->body_got < r->len)
			return 0;
	}
	r->body[r->len] = '\0';
	*msg = r->body;
	*len = r->len;
	r->body = NULL;
	r->hdr_got = 0;
	r->body_got = 0;
	return 1;
}

/* Milliseconds left until deadline_ns (-1: no deadline), at least 0. */
static int ms_left(uint64_t deadline_ns)
{
	uint64_t now;

	if (deadline_ns == UINT64_MAX)
		return -1;
	now = mri_now_ns();
	if (now >= deadline_ns)
		return 0;
	return (int)((deadline_ns - now + 999999) / 1000000);
}

static uint64_t deadline_after(int timeout_ms)
{
	return timeout_ms < 0 ? UINT64_MAX : mri_now_ns() + (uint64_t)timeout_ms * 1000000ull;
}

/* Writes all of [p, p + n) within the deadline. */
static int send_all(int fd, const uint8_t *p, size_t n, uint64_t deadline_ns)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			int left = ms_left(deadline_ns), r;

			if (left == 0)
				return AMEBA_ETIMEDOUT;
			r = poll(&pfd, 1, left);
			if (r < 0 && errno != EINTR)
				return AMEBA_EIO;
			if (r == 0)
				return AMEBA_ETIMEDOUT;
			continue;
		}
		return AMEBA_EIO;
	}
	return 0;
}

int mri_send_frame(int fd, const char *body, size_t len, int timeout_ms)
{
	uint64_t deadline = deadline_after(timeout_ms);
	uint8_t hdr[MRI_HDR_BYTES];
	int err;

	if (len > MRI_MSG_MAX)
		return AMEBA_ERANGE;
	mri_frame_header(hdr, (uint32_t)len);
	err = send_all(fd, hdr, sizeof(hdr), deadline);
	if (!err)
		err = send_all(fd, (const uint8_t *)body, len, deadline);
	return err;
}

int mri_recv_frame(int fd, struct mri_reader *r, char **msg, uint32_t *len, int timeout_ms)
{
	uint64_t deadline = deadline_after(timeout_ms);

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int got = mri_reader_next(r, msg, len), left, p;

		if (got != 0)
			return got;
		left = ms_left(deadline);
		p = poll(&pfd, 1, left);
		if (p < 0 && errno == EINTR)
			continue;
		if (p < 0)
			return AMEBA_EIO;
		if (p == 0)
			return AMEBA_ETIMEDOUT;
		got = mri_reader_fill(r, fd);
		if (got == 0)
			return AMEBA_EEXITED;
		if (got < 0 && got != AMEBA_ETIMEDOUT)
			return got;
	}
}
