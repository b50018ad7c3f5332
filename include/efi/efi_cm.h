/* SPDX-License-Identifier: MIT */
/*
 * <efi/efi_cm.h>: the EFI connection manager, in the spirit of librdmacm.
 *
 * A server listens on a service of one of its devices; a client connects a
 * QP to a host and service.  efid negotiates between the two hosts (QP
 * numbers, PSNs, MTU, GIDs and a per-connection secret the transports use to
 * drop packets that do not belong to the connection), and libefi moves both
 * QPs to RTS: the application never calls efi_modify_qp.
 *
 *   server                                  client
 *   l = efi_listen(ctx, "7471", 8)
 *   efi_cm_get_event(l, &ev, -1)            c = efi_connect(qp, "10.0.0.1", "7471",
 *     ev.event == CONNECT_REQUEST                            NULL, 0, 5000)
 *   efi_accept(ev.request, qp, NULL, 0)     efi_cm_get_event(c, &ev, -1)
 *   efi_cm_get_event(ev.request, …)           ev.event == ESTABLISHED: QP in RTS
 *     ESTABLISHED
 *
 * Every listener and connection has its own event channel: a descriptor
 * (efi_cm_get_fd) that poll/epoll report readable when an event waits;
 * efi_cm_get_event takes the events.  What an event of a connection stands
 * for is done by libefi as soon as efid reports it, whether or not the
 * application takes the event: the client's QP goes to RTS when the server
 * accepts, and a connection's QP goes to ERR (outstanding work flushes)
 * when the peer disconnects or dies.  One thread per context does this for
 * all its connections.  One thread at a time per id.  See
 * docs/connection-manager.md.
 */
#ifndef EFI_EFI_CM_H
#define EFI_EFI_CM_H

#include <stddef.h>
#include <stdint.h>

#include <efi/efi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of private data each side may send (REQ, REP and REJ alike). */
#define EFI_CM_PRIVATE_DATA_MAX 192

/* A listener, an incoming request, or a connection (either side). */
struct efi_cm_id;

enum efi_cm_event_type {
	EFI_CM_EVENT_CONNECT_REQUEST,	/* listener: ev.request is new */
	EFI_CM_EVENT_ESTABLISHED,	/* connection: the QP is in RTS */
	EFI_CM_EVENT_REJECTED,		/* client: see reject_reason, private_data */
	EFI_CM_EVENT_UNREACHABLE,	/* client: no efid answered at that address */
	EFI_CM_EVENT_TIMEOUT,		/* client: the listener did not answer in time */
	EFI_CM_EVENT_DISCONNECTED,	/* connection: the peer disconnected or died;
					 * the QP is now in ERR */
};

enum efi_cm_reject_reason {
	EFI_CM_REJECT_CONSUMER = 1,	/* the server called efi_reject */
	EFI_CM_REJECT_NO_LISTENER = 2,	/* nobody listens on that service there */
	EFI_CM_REJECT_BACKLOG = 3,	/* the listener's backlog is full */
	EFI_CM_REJECT_INVALID = 4,	/* the address is not an EFI interface there */
	EFI_CM_REJECT_EXPIRED = 5,	/* answered too late */
	EFI_CM_DISCONNECT_DETACHED = 6,	/* DISCONNECTED: the local interface was
					 * detached (the device is gone) */
};

struct efi_cm_event {
	enum efi_cm_event_type event;
	struct efi_cm_id *id;		/* the listener or connection it came on */
	struct efi_cm_id *request;	/* CONNECT_REQUEST: accept or reject it */
	int reject_reason;		/* REJECTED: enum efi_cm_reject_reason;
					 * DISCONNECTED: EFI_CM_DISCONNECT_DETACHED
					 * or 0 */
	uint32_t service;		/* CONNECT_REQUEST: the service asked for */
	union efi_gid peer_gid;		/* CONNECT_REQUEST, ESTABLISHED: the peer's GID */
	uint32_t peer_qp_num;		/* CONNECT_REQUEST, ESTABLISHED */
	uint8_t private_data_len;
	uint8_t private_data[EFI_CM_PRIVATE_DATA_MAX];
};

/* Listens on service (a decimal number 1…65535 or a name from services(5))
 * on context's device.  backlog (1…4096, 0: 128) bounds the requests left
 * unanswered; more are rejected with EFI_CM_REJECT_BACKLOG.  Returns the
 * listener, or NULL with errno: EINVAL (bad argument, unknown service name),
 * EADDRINUSE (another process listens on it on this device), ENODEV,
 * ECONNREFUSED (no efid), EPERM (not inside an instance). */
struct efi_cm_id *efi_listen(struct efi_context *context, const char *service, int backlog);

/* Starts connecting qp (in state RESET or INIT) to service on host (an IP
 * address or a name getaddrinfo resolves), with len (≤ 192) bytes of
 * private data for the server and a timeout in milliseconds (0: 5000).  The
 * outcome arrives as one event on the returned id: ESTABLISHED, REJECTED,
 * UNREACHABLE or TIMEOUT, always within the timeout.  Returns the
 * connection, or NULL with errno: EINVAL (bad argument), EHOSTUNREACH (host
 * does not resolve to an address of the device's family), ECONNREFUSED (no
 * efid), ENOMEM. */
struct efi_cm_id *efi_connect(struct efi_qp *qp, const char *host, const char *service,
			      const void *private_data, size_t len, int timeout_ms);

/* Accepts a request (from a CONNECT_REQUEST event) with qp (RESET or INIT),
 * sending len (≤ 192) bytes of private data.  On success the QP is in RTS
 * and request has become a connection: ESTABLISHED follows on it when the
 * client's QP is ready too.  Returns 0, or EINVAL, ENOENT (the client gave
 * up already), or an errno of efi_modify_qp. */
int efi_accept(struct efi_cm_id *request, struct efi_qp *qp, const void *private_data, size_t len);

/* Rejects a request with len (≤ 192) bytes of private data for the client
 * (EFI_CM_REJECT_CONSUMER).  Returns 0, or EINVAL, ENOENT.  The request
 * still has to be destroyed. */
int efi_reject(struct efi_cm_id *request, const void *private_data, size_t len);

/* Ends a connection: the local QP goes to ERR (outstanding work flushes)
 * and the peer gets DISCONNECTED.  Returns 0, or EINVAL (not a connection). */
int efi_disconnect(struct efi_cm_id *id);

/* The id's event channel: readable while an event waits.  -1 for a request
 * not yet accepted. */
int efi_cm_get_fd(const struct efi_cm_id *id);

/* Takes the next event of id, waiting up to timeout_ms (-1: forever, 0: not
 * at all).  Returns 0, or EAGAIN (none in time), ECONNRESET (efid went
 * away), EINVAL, EPROTO. */
int efi_cm_get_event(struct efi_cm_id *id, struct efi_cm_event *event, int timeout_ms);

/* The QP of a connection (NULL for a listener or a request). */
struct efi_qp *efi_cm_get_qp(const struct efi_cm_id *id);

/* Destroys an id: a connection is disconnected first, a listener stops
 * listening (its unanswered requests are rejected), a request not yet
 * accepted or rejected is rejected (EFI_CM_REJECT_CONSUMER).  Destroy ids before
 * their QPs.  Returns 0.  Accepts NULL. */
int efi_cm_destroy_id(struct efi_cm_id *id);

/* A constant name of an event type ("established" …), "unknown" otherwise. */
const char *efi_cm_event_str(enum efi_cm_event_type event);

#ifdef __cplusplus
}
#endif
#endif
