/*
 * protocol.h - MRI wire framing: every message is a 4-byte big-endian length
 * followed by that many bytes of JSON text (UTF-8, no terminating NUL).
 *
 * The framing is shared by the client library (mri/client.c), the runtime's
 * server (monitor/mri_server.c), the tests and the fuzzer. It knows nothing
 * about JSON: the dispatcher (mri/dispatch.c) gives the bytes their meaning.
 *
 * Limits: a message body is at most MRI_MSG_MAX bytes in either direction.
 * A reader refuses a larger announced length as soon as it has the 4 header
 * bytes, before it reads (or allocates) any of the body: the stream cannot be
 * trusted after that, and the server closes the connection after replying.
 */
#ifndef AMEBA_MRI_PROTOCOL_H
#define AMEBA_MRI_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#define MRI_HDR_BYTES 4
#define MRI_MSG_MAX (1u << 20)		/* 1 MiB: body bytes of one message */
#define MRI_READER_BUF 8192		/* bytes read from the socket at a time */

/* Writes the 4-byte header announcing a body of len bytes. */
void mri_frame_header(uint8_t hdr[MRI_HDR_BYTES], uint32_t len);

/*
 * Incremental frame reader. Bytes arrive through mri_reader_feed() (from
 * memory: tests, fuzzer) or mri_reader_fill() (from a file descriptor); whole
 * messages leave through mri_reader_next(). Bytes after the end of one
 * message stay buffered for the next, so a reader never loses data when two
 * messages arrive in one read(2).
 */
struct mri_reader {
	uint32_t max;			/* largest body accepted (<= MRI_MSG_MAX) */
	uint8_t hdr[MRI_HDR_BYTES];
	uint32_t hdr_got;		/* header bytes collected so far */
	uint32_t len;			/* announced body length (valid when hdr_got == 4) */
	uint32_t body_got;
	char *body;			/* [len + 1], malloc'd when the header completes */
	uint32_t in_off, in_len;	/* unconsumed bytes: in[in_off, in_len) */
	uint8_t in[MRI_READER_BUF];
};

/* Prepares r for a stream; max is clamped to [1, MRI_MSG_MAX]. */
void mri_reader_init(struct mri_reader *r, uint32_t max);
/* Frees a half-read body; r can be initialised again. */
void mri_reader_destroy(struct mri_reader *r);

/*
 * Copies up to n bytes into r's buffer. Returns how many were taken (0 when
 * the buffer is full: call mri_reader_next first).
 */
size_t mri_reader_feed(struct mri_reader *r, const void *data, size_t n);

/*
 * One read(2) from fd into the buffer. Returns the number of bytes read (>0),
 * 0 at end of file, AMEBA_ETIMEDOUT when a non-blocking fd has nothing
 * (EAGAIN), AMEBA_EIO on an error (errno kept), or AMEBA_ERANGE when the
 * buffer is full (call mri_reader_next first). Retries EINTR.
 */
int mri_reader_fill(struct mri_reader *r, int fd);

/*
 * Takes the next complete message out of the buffered bytes. Returns 1 and
 * sets *msg (malloc'd, NUL-terminated, the caller frees it) and *len; 0 when
 * more bytes are needed; AMEBA_ENOMEM; or AMEBA_ERANGE when the header
 * announces more than r->max bytes (r->len holds the announced length; the
 * stream is unusable afterwards). A zero-length message is returned as "".
 */
int mri_reader_next(struct mri_reader *r, char **msg, uint32_t *len);

/* Non-zero while a message is partly read (a header or body in progress). */
int mri_reader_partial(const struct mri_reader *r);

/*
 * Writes one framed message to fd, waiting at most timeout_ms in total for
 * the socket to take it (-1: no limit). Never raises SIGPIPE (MSG_NOSIGNAL).
 * Returns 0, AMEBA_ERANGE (len > MRI_MSG_MAX), AMEBA_ETIMEDOUT (the peer does
 * not read: the message may be partly written, the stream is unusable) or
 * AMEBA_EIO (peer gone; errno kept).
 */
int mri_send_frame(int fd, const char *body, size_t len, int timeout_ms);

/*
 * Reads until one message is complete, waiting at most timeout_ms in total
 * (-1: no limit). Returns what mri_reader_next returns for a message (1), or
 * AMEBA_ETIMEDOUT, AMEBA_EEXITED (end of file: the peer closed), AMEBA_EIO,
 * AMEBA_ERANGE, AMEBA_ENOMEM.
 */
int mri_recv_frame(int fd, struct mri_reader *r, char **msg, uint32_t *len, int timeout_ms);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t mri_now_ns(void);

#endif /* AMEBA_MRI_PROTOCOL_H */
