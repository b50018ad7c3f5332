/* SPDX-License-Identifier: MIT */
/*
 * [Transport] Uplinks: lanes pinned to uplinks, their state watched and
 * published (docs/path-table.md).
 *
 * With Uplinks=up0 … upP-1, UDP packets that an instance sends from lane
 * L's ports (PortBase + L*4096 …+4095) and efid's namespace forwards leave
 * by uplink L mod P: one fib rule per lane and family (ipproto udp, that
 * sport range, priorities EFID_UPLINK_PRIO_BASE + L) looks up table
 * EFID_UPLINK_TABLE_BASE + k, which holds main's routes over uplink k
 * restricted to it (and main's more specific routes that those would
 * otherwise shadow, as they are).  Everything efid installs carries
 * protocol EFID_UPLINK_RTPROT; nothing else is ever removed.  A route over
 * a dead uplink is skipped by the kernel (ignore_routes_with_linkdown) and
 * the lookup falls through to main: packets still flow.
 *
 * efid watches the uplinks and main's routes over netlink (its own event
 * socket on the sd-event loop): a link event updates the path table at
 * once, in the callback; route changes resynchronise the tables from a
 * deferred source.  Event loop only, no lock.
 */
#ifndef EFID_UPLINKS_H
#define EFID_UPLINKS_H

#include <stdbool.h>
#include <stdint.h>

#include "pathtable.h"

struct efid;
struct ctl_buf;
struct nl_sock;
struct uplinks;

#define EFID_UPLINK_PRIO_BASE 17400u   /* rule priorities PRIO_BASE + lane */
#define EFID_UPLINK_TABLE_BASE 17400u  /* table of uplink k: TABLE_BASE + k */
#define EFID_UPLINK_RTPROT 0xefu       /* rtm_protocol / FRA_PROTOCOL of efid's */

/* Starts the feature when d->config.nuplinks > 0: path table, watch,
 * policy routing.  A failure is logged and leaves the feature off (0);
 * only -ENOMEM-like failures of the loop itself return an error. */
int uplinks_start(struct efid *d);
/* Removes what uplinks_start installed and frees everything; accepts a
 * daemon where it never ran. */
void uplinks_stop(struct efid *d);

/* A read-only descriptor of the path table for a client, or a negative
 * errno (-ENOENT when the feature is off). */
int uplinks_table_fd(struct efid *d);
/* LIST replies: one EFI_A_UPLINK_ENTRY per configured uplink. */
void uplinks_list(struct efid *d, struct ctl_buf *body);

/* uplink_routes.c, used by uplinks.c: the policy routing of one
 * configuration in the namespace of sk. */
struct uplink_routing {
	uint32_t port_base, lanes, nuplinks;
	int ifindex[8]; /* of each uplink, 0 while it does not exist */
	bool v6;        /* install IPv6 rules too (false once they were refused) */
};
/* Removes every rule and route this feature may have left (its priority
 * range, table range and protocol together).  Returns how many. */
int uplink_routes_purge(struct nl_sock *sk);
/* Installs the per-lane rules.  Returns 0 or a negative errno, err says
 * what failed. */
int uplink_routes_rules(struct nl_sock *sk, struct uplink_routing *r, char *err, size_t errlen);
/* Makes each uplink's table match main's routes over it.  Returns 0 or a
 * negative errno with err (a route the kernel refuses is logged and
 * skipped, not an error). */
int uplink_routes_sync(struct nl_sock *sk, const struct uplink_routing *r, char *err,
		       size_t errlen);

#endif
