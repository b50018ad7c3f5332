/* SPDX-License-Identifier: MIT */
/*
 * [Transport] Uplinks (uplinks.h): the uplinks' state, watched over
 * netlink and published in the path table, and the policy routing that
 * pins lanes to them (uplink_routes.c).
 */
#include "config.h"

#include <errno.h>
#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <netlink/cache.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>
#include <netlink/socket.h>

#include "ctlmsg.h"
#include "ctlproto.h"
#include "efid.h"
#include "kernel.h"
#include "log.h"
#include "path_table.h"
#include "uplinks.h"

#define UPLINKS_RCVBUF (1024 * 1024)

struct uplink {
	char name[16];
	int ifindex;                     /* 0 while it does not exist */
	enum efi_pathtable_state state;
	uint32_t changes;
};

struct uplinks {
	struct efid *d;
	struct efid_pathtable *table;
	struct uplink up[EFID_UPLINKS_MAX];
	unsigned n;
	struct nl_sock *req;             /* requests (dumps, rules, routes) */
	struct nl_sock *events;          /* RTNLGRP_LINK, IPV4_ROUTE, IPV6_ROUTE */
	sd_event_source *events_src;
	sd_event_source *sync_src;       /* deferred: tables (and links after a loss) */
	bool relink;                     /* sync_src also re-reads every link */
	bool routing;                    /* rules installed */
	struct uplink_routing rt;
};

/* ---- link state --------------------------------------------------------- */

/* Up means usable now: administratively up, carrier, and an operational
 * state that does not say otherwise (devices without carrier tracking
 * report "unknown" while working). */
static enum efi_pathtable_state link_state(struct rtnl_link *link)
{
	unsigned flags = rtnl_link_get_flags(link);
	uint8_t op = rtnl_link_get_operstate(link);

	if (!(flags & IFF_UP) || !(flags & IFF_LOWER_UP))
		return EFI_PT_DOWN;
	if (op == IF_OPER_DOWN || op == IF_OPER_LOWERLAYERDOWN || op == IF_OPER_NOTPRESENT)
		return EFI_PT_DOWN;
	return EFI_PT_UP;
}

static const char *state_word(enum efi_pathtable_state s)
{
	static const char *const names[] = EFI_PATHTABLE_STATE_NAMES;
	return (unsigned)s < 3 ? names[s] : "unknown";
}

/* Writes uplink k's state into every lane it carries. */
static void publish(struct uplinks *u, unsigned k)
{
	struct uplink *up = &u->up[k];

	for (unsigned lane = k; lane < u->d->config.lanes; lane += u->n)
		efid_pathtable_set(u->table, lane, (uint32_t)up->ifindex, up->name, up->state);
}

static void set_state(struct uplinks *u, unsigned k, int ifindex, enum efi_pathtable_state st)
{
	struct uplink *up = &u->up[k];
	bool moved = up->ifindex != ifindex;

	if (up->state != st && up->state != EFI_PT_UNKNOWN) {
		/* Changes, not the first look. */
		up->changes++;
		log_info("uplink %s is %s (lanes %u+%u·n)", up->name, state_word(st), k, u->n);
	}
	up->state = st;
	up->ifindex = ifindex;
	publish(u, k);
	if (moved) {
		/* Created, deleted or re-created: its table follows. */
		u->rt.ifindex[k] = ifindex;
		sd_event_source_set_enabled(u->sync_src, SD_EVENT_ONESHOT);
	}
}

static int find_uplink(struct uplinks *u, const char *name, int ifindex)
{
	for (unsigned k = 0; k < u->n; k++)
		if ((name && strcmp(u->up[k].name, name) == 0) ||
		    (ifindex > 0 && u->up[k].ifindex == ifindex))
			return (int)k;
	return -1;
}

/* Re-reads every uplink (start, and after lost events). */
static int read_links(struct uplinks *u)
{
	struct nl_cache *links = NULL;
	int rc = rtnl_link_alloc_cache(u->req, AF_UNSPEC, &links);

	if (rc < 0)
		return -EIO;
	for (unsigned k = 0; k < u->n; k++) {
		struct rtnl_link *l = rtnl_link_get_by_name(links, u->up[k].name);
		if (l) {
			set_state(u, k, rtnl_link_get_ifindex(l), link_state(l));
			rtnl_link_put(l);
		} else {
			set_state(u, k, 0, EFI_PT_DOWN);
		}
	}
	nl_cache_free(links);
	return 0;
}

/* ---- events -------------------------------------------------------------- */

static void on_link(struct uplinks *u, struct rtnl_link *link, int type)
{
	const char *name = rtnl_link_get_name(link);
	int ifindex = rtnl_link_get_ifindex(link);
	int k = find_uplink(u, name, ifindex);

	if (k < 0)
		return;
	if (type == RTM_DELLINK) {
		set_state(u, (unsigned)k, 0, EFI_PT_DOWN);
	} else if (name && strcmp(name, u->up[k].name) != 0) {
		/* Renamed away: the uplink by that name is gone. */
		set_state(u, (unsigned)k, 0, EFI_PT_DOWN);
	} else {
		set_state(u, (unsigned)k, ifindex, link_state(link));
	}
}

static void on_object(struct nl_object *obj, void *arg)
{
	struct uplinks *u = arg;
	int type = nl_object_get_msgtype(obj);

	if (type == RTM_NEWLINK || type == RTM_DELLINK) {
		on_link(u, (struct rtnl_link *)obj, type);
	} else if (type == RTM_NEWROUTE || type == RTM_DELROUTE) {
		struct rtnl_route *rt = (struct rtnl_route *)obj;
		/* Our own changes come back as events: only main matters. */
		if (rtnl_route_get_table(rt) == RT_TABLE_MAIN && u->routing)
			sd_event_source_set_enabled(u->sync_src, SD_EVENT_ONESHOT);
	}
}

static int on_msg(struct nl_msg *msg, void *arg)
{
	nl_msg_parse(msg, on_object, arg);
	return NL_OK;
}

static int on_events(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct uplinks *u = ud;

	for (int i = 0; i < 256; i++) {
		int rc = nl_recvmsgs_default(u->events);
		if (rc == -NLE_AGAIN)
			return 0;
		if (rc < 0) {
			log_debug("uplinks: netlink events lost (%s): re-reading", nl_geterror(rc));
			u->relink = true;
			sd_event_source_set_enabled(u->sync_src, SD_EVENT_ONESHOT);
			return 0;
		}
	}
	return 0;
}

static int on_sync(sd_event_source *s, void *ud)
{
	struct uplinks *u = ud;
	char err[256];

	if (u->relink) {
		u->relink = false;
		if (read_links(u) < 0)
			log_warning("uplinks: cannot read the links");
	}
	if (u->routing && uplink_routes_sync(u->req, &u->rt, err, sizeof(err)) < 0)
		log_warning("uplinks: %s; retried on the next route change", err);
	return 0;
}

static struct nl_sock *event_socket(void)
{
	struct nl_sock *sk = nl_socket_alloc();
	int size = UPLINKS_RCVBUF;

	if (!sk)
		return NULL;
	nl_socket_disable_seq_check(sk);
	if (nl_connect(sk, NETLINK_ROUTE) < 0 ||
	    nl_socket_add_memberships(sk, RTNLGRP_LINK, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE, 0) < 0 ||
	    nl_socket_set_nonblocking(sk) < 0) {
		nl_socket_free(sk);
		return NULL;
	}
	if (setsockopt(nl_socket_get_fd(sk), SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		nl_socket_set_buffer_size(sk, size, 0);
	return sk;
}

/* ---- start and stop ------------------------------------------------------ */

static void uplinks_free(struct uplinks *u)
{
	if (!u)
		return;
	if (u->routing) {
		int n = uplink_routes_purge(u->req);
		log_info("uplinks: removed %d policy rules and routes", n);
	}
	u->events_src = sd_event_source_disable_unref(u->events_src);
	u->sync_src = sd_event_source_disable_unref(u->sync_src);
	nl_socket_free(u->events);
	nl_socket_free(u->req);
	efid_pathtable_free(u->table);
	free(u);
}

int uplinks_start(struct efid *d)
{
	const struct efid_config *c = &d->config;
	struct uplinks *u;
	char err[256] = "";
	int rc, stale;

	if (!c->nuplinks)
		return 0;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->d = d;
	u->n = c->nuplinks;
	for (unsigned k = 0; k < u->n; k++)
		snprintf(u->up[k].name, sizeof(u->up[k].name), "%s", c->uplinks[k]);
	rc = efid_pathtable_create(c->lanes, &u->table);
	if (rc < 0) {
		snprintf(err, sizeof(err), "cannot create the path table: %s", strerror(-rc));
		goto off;
	}
	u->req = kernel_ns_socket(d->kernel, -1);
	u->events = event_socket();
	if (!u->req || !u->events) {
		snprintf(err, sizeof(err), "cannot open netlink sockets");
		goto off;
	}
	rc = sd_event_add_io(d->event, &u->events_src, nl_socket_get_fd(u->events), EPOLLIN,
			     on_events, u);
	if (rc >= 0)
		rc = sd_event_add_defer(d->event, &u->sync_src, on_sync, u);
	if (rc < 0) {
		snprintf(err, sizeof(err), "cannot watch netlink: %s", strerror(-rc));
		goto off;
	}
	sd_event_source_set_enabled(u->sync_src, SD_EVENT_OFF);
	sd_event_source_set_description(u->events_src, "netlink-uplinks");
	sd_event_source_set_description(u->sync_src, "uplinks-sync");
	nl_socket_modify_cb(u->events, NL_CB_VALID, NL_CB_CUSTOM, on_msg, u);
	/* Subscribed first, read second: no change falls between. */
	if (read_links(u) < 0) {
		snprintf(err, sizeof(err), "cannot read the links");
		goto off;
	}

	/* What an earlier efid left (crashed, killed): recognised by all
	 * three marks, never anything else. */
	stale = uplink_routes_purge(u->req);
	if (stale)
		log_notice("uplinks: removed %d stale policy rules and routes of an earlier efid", stale);
	u->rt.port_base = c->port_base;
	u->rt.lanes = c->lanes;
	u->rt.nuplinks = c->nuplinks;
	u->rt.v6 = true;
	for (unsigned k = 0; k < u->n; k++)
		u->rt.ifindex[k] = u->up[k].ifindex;
	u->routing = true; /* from here on, a failure removes what was made */
	rc = uplink_routes_rules(u->req, &u->rt, err, sizeof(err));
	if (rc >= 0)
		rc = uplink_routes_sync(u->req, &u->rt, err, sizeof(err));
	if (rc < 0)
		goto off;
	d->uplinks = u;
	for (unsigned k = 0; k < u->n; k++)
		log_info("uplink %s (ifindex %d): %s", u->up[k].name, u->up[k].ifindex,
			 state_word(u->up[k].state));
	log_info("uplinks: lane L leaves by uplink L mod %u (rules %u..%u, tables %u..%u)", u->n,
		 EFID_UPLINK_PRIO_BASE, EFID_UPLINK_PRIO_BASE + c->lanes - 1, EFID_UPLINK_TABLE_BASE,
		 EFID_UPLINK_TABLE_BASE + u->n - 1);
	return 0;

off:
	log_error("uplinks: %s; [Transport] Uplinks= is off, lanes follow the main table", err);
	uplinks_free(u);
	return 0;
}

void uplinks_stop(struct efid *d)
{
	uplinks_free(d->uplinks);
	d->uplinks = NULL;
}

int uplinks_table_fd(struct efid *d)
{
	if (!d->uplinks)
		return -ENOENT;
	return efid_pathtable_reader_fd(d->uplinks->table);
}

void uplinks_list(struct efid *d, struct ctl_buf *body)
{
	struct uplinks *u = d->uplinks;

	for (unsigned k = 0; u && k < u->n; k++) {
		uint32_t mask = 0;
		size_t nest = ctl_nest_begin(body, EFI_A_UPLINK_ENTRY);
		for (unsigned lane = k; lane < d->config.lanes; lane += u->n)
			mask |= 1u << lane;
		ctl_put_str(body, EFI_A_UPLINK, u->up[k].name);
		ctl_put_u32(body, EFI_A_IFINDEX, (uint32_t)u->up[k].ifindex);
		ctl_put_str(body, EFI_A_LINK, state_word(u->up[k].state));
		ctl_put_u32(body, EFI_A_UPLINK_LANES, mask);
		ctl_put_u32(body, EFI_A_UPLINK_CHANGES, u->up[k].changes);
		ctl_nest_end(body, nest);
	}
}
