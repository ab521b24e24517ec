/*
 * transport.h - how a client session reaches a monitor (internal to the MRI).
 *
 * The client library (mri/client.c) speaks messages; a transport carries
 * them. Two exist:
 *   socket  (client.c)             framed messages over the target's Unix socket
 *   local   (monitor/mri_server.c) the dispatcher called in-process, for
 *                                  mri_open_local()
 *
 * Notes:
 *  - The client library does not know the runtime: libameba-mri links
 *    without it. The runtime offers its local transport at initialisation
 *    (mri_set_local_open, from mri_server_start); until then, and in a
 *    program without the runtime, mri_open_local() answers AMEBA_ENOTSUP.
 */
#ifndef AMEBA_MRI_TRANSPORT_H
#define AMEBA_MRI_TRANSPORT_H

#include <stddef.h>

struct mri_transport {
	void *ctx;
	/* Sends one message. 0, AMEBA_ETIMEDOUT, AMEBA_EIO (peer gone). */
	int (*send)(void *ctx, const char *msg, size_t len, int timeout_ms);
	/*
	 * The next message from the monitor (a reply or an event), waiting at
	 * most timeout_ms (-1: forever). 1 with *msg (malloc'd, NUL-terminated)
	 * and *len; AMEBA_ETIMEDOUT; AMEBA_EEXITED (the monitor closed the
	 * connection); AMEBA_EIO; AMEBA_ERANGE (oversized message).
	 */
	int (*recv)(void *ctx, char **msg, size_t *len, int timeout_ms);
	/* Optional: bracket every API call (the local transport keeps the
	 * calling thread's own work out of the monitor's books). */
	void (*enter)(void *ctx);
	void (*leave)(void *ctx);
	/* Ends the connection; the transport is unusable afterwards. */
	void (*close)(void *ctx);
};

/*
 * Opens an in-process transport into *t. 0, AMEBA_EBUSY (a session is
 * open: msg says whose), AMEBA_ENOMEM, AMEBA_ENOENT (libcjson cannot be
 * loaded).
 */
typedef int (*mri_local_open_fn)(struct mri_transport *t, char *msg, size_t len);

/*
 * Registers the opener mri_open_local() uses (client.c); the runtime calls
 * it once it is initialised. NULL withdraws it. Any thread; the last call
 * wins.
 */
void mri_set_local_open(mri_local_open_fn fn);

#endif /* AMEBA_MRI_TRANSPORT_H */
