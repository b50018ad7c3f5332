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
struct client;
struct ctl_buf;
struct peer;

/* Limits, chosen so that one client cannot exhaust efid. */
/* Every connection-manager listener and connection is a client too. */
#define CONTROL_MAX_CLIENTS 16384
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

/* Queues an unsolicited frame (a connection-manager event, finished with
 * ctl_msg_end) to client c and starts sending it.  Returns 0, or -ENOMEM
 * (the client is then closed: it would miss an event). */
int control_push(struct client *c, const struct ctl_buf *frame);
/* The credentials efid read for client c. */
const struct peer *control_peer(const struct client *c);


#endif
