/* SPDX-License-Identifier: MIT */
/*
 * Wire-endpoint leases.  A libefi context asks efid (OPEN_DEVICE) for an
 * endpoint on one of its instance's interfaces: efid makes a UDP socket
 * inside the instance's namespace, bound to the interface on the port of a
 * free slot, and hands it over.  The slot's 4096 QPNs belong to that
 * context: qpn = slot << 12 | index, and its lanes (one socket per path,
 * [Transport] Lanes) are bound to port PortBase + lane × 4096 + slot, so a
 * peer finds every port from the QPN alone.  A context with more than
 * 4096 QPs asks again on the same connection (libefi/qpn_blocks.c): one
 * connection holds up to LEASE_MAX_PER_CLIENT slots.  The lease lives as long as the control
 * connection that took it; when the process exits or crashes, efid frees
 * its slots.
 */
#ifndef EFID_LEASE_H
#define EFID_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "auth.h"
#include "ctlmsg.h"
#include "handlers.h"

#define LEASE_SLOT_BITS 12
#define LEASE_QPNS_PER_SLOT (1u << LEASE_SLOT_BITS)
#define LEASE_MAX_SLOTS 4095u       /* slots 1..4095; slot 0 never (QPN 0) */
#define LEASE_MAX_PER_CLIENT 16u    /* blocks one connection may hold */
#define LEASE_SOCKET_BUFFER (4 * 1024 * 1024)

struct efid;
struct lease;

struct client;
struct ctl_attr;

/* Client c's (initially empty) lease set.  NULL on ENOMEM. */
struct lease *lease_new(struct client *c);
/* Releases every slot the client held; accepts NULL. */
void lease_free(struct efid *d, struct lease *l);

/*
 * OPEN_DEVICE: checks that the caller lives in the instance owning ifname,
 * takes a slot whose ports are free on every lane, creates and binds the
 * sockets, and appends the reply attributes to body.  out receives the
 * sockets in lane order (the caller sends and closes them).  Returns 0 or
 * -errno with a message in err.
 */
int lease_open_device(struct efid *d, struct lease *l, const struct peer *p, const char *ifname,
		      struct ctl_buf *body, struct ctl_fds *out, char *err, size_t errlen);
/* The port of lane `lane` of slot `slot`. */
unsigned lease_lane_port(const struct efid *d, unsigned slot, unsigned lane);

/*
 * PUBLISH_COUNTERS: takes fd (always consumed), the context's counters page
 * (common/countershm.h).  It must be a memfd of exactly one page sealed
 * against shrinking (so reading it can never fault efid) and the caller must
 * hold an endpoint.  Mapped read-only for as long as the lease lives.
 */
int lease_publish_counters(struct efid *d, struct lease *l, const struct peer *p, int fd,
			   char *err, size_t errlen);

/* Appends one EFI_A_CONTEXT nest (pid, counters) per lease holding an
 * endpoint on instance/ifname that published counters. */
void lease_put_contexts(struct efid *d, struct ctl_buf *b, const char *instance,
			const char *ifname);

/*
 * LEASE_RESUME (lease_resume.c): a process whose efid restarted hands back
 * the wire sockets it holds (fds, one per lane, always consumed) with
 * IFNAME and QPN_BASE; efid checks that each is really that slot's (bound to
 * its lane's port on that interface, in the caller's instance namespace) and free in
 * its registry, and records the lease again with the reservations it
 * reports (RES_*).  Returns 0 or -errno with a message.
 */
int lease_resume(struct efid *d, struct lease *l, const struct peer *p, const struct ctl_attr *tb,
		 struct ctl_fds *fds, struct ctl_buf *body, char *err, size_t errlen);

/*
 * RESERVE / RELEASE (lease_quota.c): RES_QPS, RES_MRS, RES_BYTES against
 * the instance's [Limits].  Reserve is all or nothing (-EDQUOT with what
 * is in use and the limit); its reply carries the limits (0: none).
 * Release gives back at most what the lease holds.
 */
int lease_reserve(struct efid *d, struct lease *l, const struct ctl_attr *tb,
		  struct ctl_buf *body, char *err, size_t errlen);
int lease_release(struct efid *d, struct lease *l, const struct ctl_attr *tb, char *err,
		  size_t errlen);

/* Detach: pushes a REVOKE frame on every lease holding a slot of
 * instance/ifname (ifname NULL: any interface of the instance); their
 * further reservations fail.  Returns the number of leases told. */
unsigned lease_revoke(struct efid *d, const char *instance, const char *ifname);

/* LIST: EFI_A_LEASES and EFI_A_RES_QPS of instance/ifname, into an IFACE nest. */
void lease_put_iface_usage(struct efid *d, struct ctl_buf *b, const char *instance,
			   const char *ifname);

/* Frees the registry at shutdown (after every client's lease_free). */
void lease_registry_free(struct efid *d);

/* True when process pid holds the slot of qpn on instance/ifname: a QP
 * number the connection manager may announce for it. */
bool lease_qpn_owned(const struct efid *d, const char *instance, const char *ifname, uint32_t qpn,
		     pid_t pid);

/* Slots currently leased, all instances (for STATUS= and tests). */
size_t lease_slots_in_use(const struct efid *d);

#endif
