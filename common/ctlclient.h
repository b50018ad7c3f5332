/* SPDX-License-Identifier: MIT */
/*
 * The client side of the efid control socket: connect, one request, one
 * reply.  Used by efictl and libefi.  Blocking, with a timeout; never prints.
 */
#ifndef EFI_CTLCLIENT_H
#define EFI_CTLCLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "ctlmsg.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ctl_client;

/* A reply: its payload's attributes are parsed by the caller with
 * ctl_parse()/ctl_iter; status and error are already extracted. */
struct ctl_reply {
	uint8_t *buf;          /* the whole frame (owned) */
	struct ctl_hdr hdr;
	const uint8_t *payload;
	size_t payload_len;
	int32_t status;        /* 0 or a negative errno from efid */
	const char *error;     /* efid's message, or NULL; points into buf */
	int fds[EFI_CTL_MAX_FDS];
	int nfds;              /* received descriptors, owned until ctl_reply_free */
};

/* $EFI_SOCKET if set and not empty, else EFI_CTL_DEFAULT_SOCKET. */
const char *ctl_default_socket_path(void);

/* Connects to the socket at path (NULL: the default).  Returns 0 and
 * *out, or a negative errno: -ENOENT/-ECONNREFUSED when no efid listens,
 * -EACCES when the socket may not be opened, -ENAMETOOLONG. */
int ctl_client_connect(const char *path, struct ctl_client **out);

/* Closes the connection; accepts NULL. */
void ctl_client_close(struct ctl_client *c);

/*
 * Sends the message in req (finished with ctl_msg_end; its seq is
 * overwritten), waits up to timeout_ms (-1: forever) for the matching reply.
 * Returns 0 when a well-formed reply arrived (rep->status then says whether
 * the request succeeded), -ETIMEDOUT, -ECONNRESET when efid closed the
 * connection, -EPROTO for a malformed reply, or another negative errno.
 */
int ctl_client_call(struct ctl_client *c, struct ctl_buf *req, const int *fds, int nfds,
		    struct ctl_reply *rep, int timeout_ms);

/*
 * ctl_client_call, for connections that also carry events (the connection
 * manager's): every frame other than a reply that arrives before the reply
 * is handed to other(ud, frame), which then owns it (ctl_reply_free).
 * other NULL: such frames are dropped, as ctl_client_call does.
 */
int ctl_client_call_ex(struct ctl_client *c, struct ctl_buf *req, const int *fds, int nfds,
		       struct ctl_reply *rep, int timeout_ms,
		       void (*other)(void *ud, struct ctl_reply *frame), void *ud);

/*
 * Reads the next frame of any type (an event) into *frame, waiting up to
 * timeout_ms (-1: forever, 0: only what is there).  A frame already begun is
 * always read whole.  Returns 0, -ETIMEDOUT, -ECONNRESET when efid closed the
 * connection, -EPROTO for a malformed frame, or another negative errno.
 * Status and error are not extracted.
 */
int ctl_client_recv(struct ctl_client *c, struct ctl_reply *frame, int timeout_ms);

/* Sends one request without waiting for its reply (someone else reads the
 * connection).  Returns 0 or a negative errno. */
int ctl_client_send(struct ctl_client *c, struct ctl_buf *req);

/* The connection's socket, for poll/epoll (readable when a frame arrives). */
int ctl_client_fd(const struct ctl_client *c);

/* Frees a reply and closes the descriptors it still owns; accepts a zeroed one. */
void ctl_reply_free(struct ctl_reply *rep);

/* Sends one whole frame, with optional descriptors, on a blocking socket.
 * Returns 0 or a negative errno. */
int ctl_send_frame(int fd, const void *buf, size_t len, const int *fds, int nfds);

#ifdef __cplusplus
}
#endif
#endif
