/* SPDX-License-Identifier: MIT */
/*
 * The connection manager (docs/connection-manager.md).  Applications talk to
 * it over their control connections (EFI_CTL_CM_*): a listener or a
 * connection is one control connection, and efid pushes EFI_CTL_CM_EVENT
 * frames on it.  efids talk to each other in UDP datagrams (common/cmwire.h)
 * on [ConnectionManager] Port= from a socket efid keeps in each instance's
 * namespace (cm_sock.c), so a request travels the same network as the data
 * and reaches whichever efid serves the address connected to.
 */
#ifndef EFID_CM_H
#define EFID_CM_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cmwire.h"
#include "ctlmsg.h"

struct efid;
struct client;

/* Sets up the state and the first sockets.  Returns 0 or -errno (logged). */
int cm_start(struct efid *d);
/* efid is about to stop (call before control_stop): clients closing from
 * now on are efid's doing, not the applications', so their connections'
 * peers are not told — a restart of efid must not end connections whose
 * data path runs without it. */
void cm_shutdown(struct efid *d);
/* Frees everything (after control_stop).  Accepts a context where
 * cm_start was never called. */
void cm_stop(struct efid *d);
/* Makes the sockets match the instances recorded (a socket per instance
 * namespace, re-made when the namespace was re-created).  Also runs every
 * second. */
void cm_sync(struct efid *d);

/* True for the EFI_CTL_CM_* request types. */
bool cm_is_request(uint16_t type);
/* Handles one CM request of client c; as handle_request (handlers.h). */
int cm_handle_request(struct efid *d, struct client *c, uint16_t type, const uint8_t *payload,
		      size_t len, struct ctl_buf *body, char *err, size_t errlen);
/* Client c is closing: its listener is unregistered, its connection's peer
 * told (DREQ), and no reference to c remains. */
void cm_client_gone(struct efid *d, struct client *c);

/* instance/ifname (every interface of instance when ifname is NULL) is
 * being detached: its connections end (DISCONNECTED to the application,
 * DREQ to the peer), its unanswered requests are refused.  Listeners stay:
 * they serve the interface again if it is re-attached. */
void cm_iface_gone(struct efid *d, const char *instance, const char *ifname);

/* Appends the CM_LISTENER and CM_CONNECTION nests of instance/ifname to a
 * LIST reply's IFACE nest (cm_status.c). */
void cm_put_status(struct efid *d, struct ctl_buf *b, const char *instance, const char *ifname);

/* Listeners and connections, for STATUS= and tests. */
unsigned cm_listener_count(const struct efid *d);
unsigned cm_connection_count(const struct efid *d);

/* ---- between cm.c and cm_sock.c ------------------------------------------ */

/* Sends msg to [to]:Port from the socket in instance's namespace.  Returns 0
 * or -errno (-ENOENT: efid has no socket there). */
int cm_sock_send(struct efid *d, const char *instance, const struct sockaddr_in6 *to,
		 const struct cm_wire_msg *msg);
/* A datagram arrived on instance's socket from `from` (cm.c). */
void cm_input(struct efid *d, const char *instance, const struct sockaddr_in6 *from,
	      const struct cm_wire_msg *msg);
/* The network said `to` has nobody on the CM port (ICMP) (cm.c). */
void cm_unreachable(struct efid *d, const char *instance, const struct sockaddr_in6 *to);
/* Closes every socket. */
void cm_sock_close_all(struct efid *d);
/* Socket bookkeeping lives in the struct cm; cm_sock.c reaches it here. */
struct cm_sock **cm_socks(struct efid *d);

#endif
