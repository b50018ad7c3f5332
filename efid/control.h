/* SPDX-License-Identifier: MIT */
/*
 * The control socket server: a Unix stream socket (created by efid or passed
 * by systemd socket activation), non-blocking per-client buffers on the
 * sd-event loop so that no client can stall another, and framing checks
 * before anything reaches the request handlers (handlers.h).
 */
#ifndef EFID_CONTROL_H
#define EFID_CONTROL_H

struct efid;

/* Limits, chosen so that one client cannot exhaust efid. */
#define CONTROL_MAX_CLIENTS 1024
#define CONTROL_PARTIAL_TIMEOUT_USEC (10ULL * 1000000ULL) /* half-sent request */
#define CONTROL_MAX_PENDING_OUT (8u * 1024u * 1024u)      /* unread replies */

/* Starts listening (socket activation when systemd passed a socket, else
 * d->socket_path).  Returns 0 or -errno (logged). */
int control_start(struct efid *d);
/* Closes every client and the listener; removes the socket file if efid
 * created it.  Accepts a context where control_start was never called. */
void control_stop(struct efid *d);
/* Number of connected clients (for STATUS= and tests). */
unsigned control_client_count(const struct efid *d);

#endif
