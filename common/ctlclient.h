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

/* Frees a reply and closes the descriptors it still owns; accepts a zeroed one. */
void ctl_reply_free(struct ctl_reply *rep);

/* Sends one whole frame, with optional descriptors, on a blocking socket.
 * Returns 0 or a negative errno. */
int ctl_send_frame(int fd, const void *buf, size_t len, const int *fds, int nfds);

#ifdef __cplusplus
}
#endif
#endif
