/* SPDX-License-Identifier: MIT */
/*
 * The applications' connection-manager requests (EFI_CTL_CM_*).  Only
 * processes inside an instance may use them, and only on that instance's
 * interfaces and GIDs; every field is checked before anything changes.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "cm_int.h"
#include "control.h"
#include "efid.h"
#include "lease.h"
#include "log.h"

static const struct ctl_policy cm_policy[EFI_A_MAX] = {
	[EFI_A_CLIENT] = { .kind = CTL_STR, .maxlen = 255 },
	[EFI_A_IFNAME] = { .kind = CTL_STR, .minlen = 1, .maxlen = EFI_IFNAME_MAX },
	[EFI_A_CM_SERVICE] = { .kind = CTL_U32 },
	[EFI_A_CM_BACKLOG] = { .kind = CTL_U32 },
	[EFI_A_CM_DEST] = { .kind = CTL_BIN, .minlen = 16, .maxlen = 16 },
	[EFI_A_CM_QPN] = { .kind = CTL_U32 },
	[EFI_A_CM_PSN] = { .kind = CTL_U32 },
	[EFI_A_CM_MTU] = { .kind = CTL_U32 },
	[EFI_A_CM_SGID] = { .kind = CTL_BIN, .minlen = 16, .maxlen = 16 },
	[EFI_A_CM_TIMEOUT] = { .kind = CTL_U32 },
	[EFI_A_CM_PRIVATE] = { .kind = CTL_BIN, .minlen = 0, .maxlen = EFI_CM_PRIVATE_MAX },
	[EFI_A_CM_ID] = { .kind = CTL_U64 },
	[EFI_A_CM_ACTIVE] = { .kind = CTL_U32 },
	[EFI_A_CM_LINK_MTU] = { .kind = CTL_U32 },
};

bool cm_is_request(uint16_t type)
{
	return (type >= EFI_CTL_CM_LISTEN && type <= EFI_CTL_CM_DISCONNECT) ||
	       type == EFI_CTL_CM_RESUME;
}

static bool get_u32(const struct ctl_attr *tb, uint16_t a, uint32_t *v)
{
	return ctl_has(tb, a) && ctl_attr_u32(&tb[a], v) == 0;
}

/* QPN, PSN and MTU, as every QP-carrying request has them. */
static int get_qp(const struct ctl_attr *tb, struct cm_wire_msg *m, char *err, size_t errlen)
{
	if (!get_u32(tb, EFI_A_CM_QPN, &m->qpn) || !get_u32(tb, EFI_A_CM_PSN, &m->psn) ||
	    !get_u32(tb, EFI_A_CM_MTU, &m->mtu)) {
		snprintf(err, errlen, "a QP number, a PSN and a path MTU are required");
		return -EINVAL;
	}
	if (m->qpn == 0 || m->qpn > 0xffffffu || m->psn > 0xffffffu || m->mtu < 1 || m->mtu > 5) {
		snprintf(err, errlen, "QP number or PSN above 24 bits, or a path MTU not in 1..5");
		return -EINVAL;
	}
	/* optional (an older libefi leaves it out): passed on to the peer */
	if (ctl_has(tb, EFI_A_CM_LINK_MTU) &&
	    (!get_u32(tb, EFI_A_CM_LINK_MTU, &m->link_mtu) || m->link_mtu < CM_WIRE_MIN_LINK_MTU ||
	     m->link_mtu > CM_WIRE_MAX_LINK_MTU)) {
		snprintf(err, errlen, "a link MTU not in %u..%u", CM_WIRE_MIN_LINK_MTU, CM_WIRE_MAX_LINK_MTU);
		return -EINVAL;
	}
	if (ctl_has(tb, EFI_A_CM_PRIVATE)) {
		m->private_len = tb[EFI_A_CM_PRIVATE].len;
		memcpy(m->private_data, tb[EFI_A_CM_PRIVATE].data, m->private_len);
	}
	return 0;
}

static int busy(struct efid *d, struct client *c, char *err, size_t errlen)
{
	if (cm_listener_of(d, c) || cm_conn_of(d, c)) {
		snprintf(err, errlen,
			 "this control connection already carries a listener or a connection: open one per listener and per connection");
		return -EBUSY;
	}
	return 0;
}

static int handle_listen(struct efid *d, struct client *c, const struct peer *p,
			 const struct ctl_attr *tb, char *err, size_t errlen)
{
	uint32_t service = 0, backlog = 128;
	struct gid_lookup g;
	int r = busy(d, c, err, errlen);
	if (r)
		return r;
	if (!ctl_has(tb, EFI_A_IFNAME) || !get_u32(tb, EFI_A_CM_SERVICE, &service) ||
	    service == 0 || service > 65535) {
		snprintf(err, errlen, "listen needs an interface name and a service number in 1..65535");
		return -EINVAL;
	}
	if (ctl_has(tb, EFI_A_CM_BACKLOG) &&
	    (!get_u32(tb, EFI_A_CM_BACKLOG, &backlog) || backlog == 0 || backlog > 4096)) {
		snprintf(err, errlen, "backlog must be 1..4096");
		return -EINVAL;
	}
	const char *ifname = (const char *)tb[EFI_A_IFNAME].data;
	if (!cm_local_iface(d, p->instance, ifname, &g)) {
		snprintf(err, errlen, "no attached EFI interface '%s' in instance '%s'", ifname,
			 p->instance);
		return -ENODEV;
	}
	struct cm_listener *other = cm_listener_find(d, p->instance, ifname, service);
	if (other && other->orphan && other->pid == p->pid) {
		/* efid restarted and the listener's process listens again:
		 * the record is its own (cm_persist.c) */
		other->client = c;
		if (cm_listener_index(d->cm, other) < 0) {
			other->client = NULL;
			return -ENOMEM;
		}
		other->orphan = false;
		other->backlog = backlog;
		cm_persist_listener(d, other, true);
		log_debug("cm: pid %d took up its listener on %s/%s service %u again", (int)p->pid,
			  p->instance, ifname, service);
		return 0;
	}
	if (other && other->orphan) {
		snprintf(err, errlen,
			 "service %u on %s is kept for pid %d, which listened on it before efid restarted (for up to 10 s)",
			 service, ifname, (int)other->pid);
		return -EADDRINUSE;
	}
	if (other) {
		snprintf(err, errlen, "service %u on %s is already listened on (pid %d)", service,
			 ifname, (int)other->pid);
		return -EADDRINUSE;
	}
	if (d->config.max_listeners) {
		unsigned n = 0;
		for (const struct cm_listener *o = d->cm->listeners; o; o = o->next)
			n += strcmp(o->instance, p->instance) == 0;
		if (n >= d->config.max_listeners) {
			snprintf(err, errlen,
				 "instance '%s' has %u of its %u listeners ([Limits] MaxListeners in efid.conf)",
				 p->instance, n, d->config.max_listeners);
			log_info("pid %d refused: %s", (int)p->pid, err);
			return -EDQUOT;
		}
	}
	struct cm_listener *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->client = c;
	l->pid = p->pid;
	if (cm_listener_index(d->cm, l) < 0) {
		free(l);
		return -ENOMEM;
	}
	l->service = service;
	l->backlog = backlog;
	snprintf(l->instance, sizeof(l->instance), "%s", p->instance);
	snprintf(l->ifname, sizeof(l->ifname), "%s", ifname);
	l->next = d->cm->listeners;
	d->cm->listeners = l;
	d->cm->nlisteners++;
	cm_persist_listener(d, l, true);
	log_debug("cm: pid %d listens on %s/%s service %u", (int)p->pid, p->instance, ifname,
		  service);
	return 0;
}

static int handle_connect(struct efid *d, struct client *c, const struct peer *p,
			  const struct ctl_attr *tb, struct ctl_buf *body, char *err, size_t errlen)
{
	struct cm_wire_msg m = { .type = CM_W_REQ };
	struct gid_lookup g;
	int r = busy(d, c, err, errlen);
	if (r)
		return r;
	if (!ctl_has(tb, EFI_A_IFNAME) || !ctl_has(tb, EFI_A_CM_DEST) ||
	    !ctl_has(tb, EFI_A_CM_SGID) || !get_u32(tb, EFI_A_CM_SERVICE, &m.service) ||
	    m.service == 0 || m.service > 65535) {
		snprintf(err, errlen,
			 "connect needs an interface, a source GID, a destination GID and a service in 1..65535");
		return -EINVAL;
	}
	r = get_qp(tb, &m, err, errlen);
	if (r)
		return r;
	m.timeout_ms = 5000;
	if (ctl_has(tb, EFI_A_CM_TIMEOUT) &&
	    (!get_u32(tb, EFI_A_CM_TIMEOUT, &m.timeout_ms) || m.timeout_ms == 0 ||
	     m.timeout_ms > CM_WIRE_MAX_TIMEOUT)) {
		snprintf(err, errlen, "timeout must be 1..%u ms", CM_WIRE_MAX_TIMEOUT);
		return -EINVAL;
	}
	memcpy(m.dest.raw, tb[EFI_A_CM_DEST].data, 16);
	memcpy(m.sgid.raw, tb[EFI_A_CM_SGID].data, 16);
	const char *ifname = (const char *)tb[EFI_A_IFNAME].data;
	if (!cm_local_gid(d, p->instance, &m.sgid, &g) || strcmp(g.ifname, ifname) != 0) {
		snprintf(err, errlen, "the source GID is not one of %s's in instance '%s'", ifname,
			 p->instance);
		return -EADDRNOTAVAIL;
	}
	if (!lease_qpn_owned(d, p->instance, ifname, m.qpn, p->pid)) {
		snprintf(err, errlen, "QP number 0x%06x is not one of this process's on %s", m.qpn,
			 ifname);
		return -EPERM;
	}
	m.ngids = g.ngids;
	memcpy(m.gids, g.gids, sizeof(m.gids));

	struct cm_conn *cn = cm_conn_new(d, true, p->instance, cm_random_u64());
	if (!cn)
		return -ENOMEM;
	if (cm_conn_set_client(d->cm, cn, c) < 0) {
		cm_conn_unlink(d->cm, cn);
		return -ENOMEM;
	}
	cn->timeout_ms = m.timeout_ms;
	cn->state = CS_REQ_SENT;
	cn->local_qpn = m.qpn;
	cn->peer_gid = m.dest;
	cn->pid = p->pid;
	snprintf(cn->ifname, sizeof(cn->ifname), "%s", ifname);
	cn->peer.sin6_family = AF_INET6;
	memcpy(&cn->peer.sin6_addr, m.dest.raw, 16);
	cm_set_deadline(d, cn, (uint64_t)m.timeout_ms * 1000ull);
	cm_conn_send(d, cn, &m, true);
	ctl_put_u64(body, EFI_A_CM_ID, cn->tid);
	return 0;
}

static struct cm_conn *pending_request(struct efid *d, const struct peer *p,
				       const struct ctl_attr *tb, char *err, size_t errlen)
{
	uint64_t handle = 0;
	if (!ctl_has(tb, EFI_A_CM_ID) || ctl_attr_u64(&tb[EFI_A_CM_ID], &handle) < 0) {
		snprintf(err, errlen, "the request's id is required");
		return NULL;
	}
	struct cm_conn *c = cm_conn_by_handle(d->cm, handle);
	if (c && !c->active && c->state == CS_PENDING && strcmp(c->instance, p->instance) == 0)
		return c;
	snprintf(err, errlen,
		 "no such connect request: it was answered already, or the requester gave up");
	return NULL;
}

static int handle_accept(struct efid *d, struct client *c, const struct peer *p,
			 const struct ctl_attr *tb, struct ctl_buf *body, char *err, size_t errlen)
{
	struct cm_wire_msg m = { .type = CM_W_REP };
	struct gid_lookup g;
	int r = busy(d, c, err, errlen);
	if (r)
		return r;
	struct cm_conn *cn = pending_request(d, p, tb, err, errlen);
	if (!cn)
		return -ENOENT;
	r = get_qp(tb, &m, err, errlen);
	if (r)
		return r;
	if (!lease_qpn_owned(d, p->instance, cn->ifname, m.qpn, p->pid)) {
		snprintf(err, errlen, "QP number 0x%06x is not one of this process's on %s", m.qpn,
			 cn->ifname);
		return -EPERM;
	}
	m.sgid = cn->req.dest;
	if (cm_local_iface(d, cn->instance, cn->ifname, &g)) {
		m.ngids = g.ngids;
		memcpy(m.gids, g.gids, sizeof(m.gids));
	}
	while (m.key == 0)
		m.key = (uint32_t)cm_random_u64();
	if (cm_conn_set_client(d->cm, cn, c) < 0)
		return -ENOMEM;
	cn->listener->pending--;
	cn->listener = NULL;
	cn->state = CS_REP_SENT;
	cn->local_qpn = m.qpn;
	cn->pid = p->pid;
	cm_set_deadline(d, cn, (uint64_t)cn->timeout_ms * 1000ull);
	cm_conn_send(d, cn, &m, true);
	ctl_put_u32(body, EFI_A_CM_KEY, m.key);
	return 0;
}

static int handle_reject(struct efid *d, const struct peer *p, const struct ctl_attr *tb,
			 char *err, size_t errlen)
{
	struct cm_wire_msg m = { .type = CM_W_REJ, .reason = EFI_CM_REJ_CONSUMER };
	struct cm_conn *cn = pending_request(d, p, tb, err, errlen);
	if (!cn)
		return -ENOENT;
	if (ctl_has(tb, EFI_A_CM_PRIVATE)) {
		m.private_len = tb[EFI_A_CM_PRIVATE].len;
		memcpy(m.private_data, tb[EFI_A_CM_PRIVATE].data, m.private_len);
	}
	cm_conn_send(d, cn, &m, false);
	cm_conn_bury(d, cn, cm_tombstone_usec(cn));
	return 0;
}

static int handle_ready(struct efid *d, struct client *c, char *err, size_t errlen)
{
	struct cm_conn *cn = cm_conn_of(d, c);
	if (!cn || !cn->active || cn->state != CS_REP_RCVD) {
		snprintf(err, errlen, "ready comes once, after the reply of a connect on this connection");
		return -EINVAL;
	}
	struct cm_wire_msg rtu = { .type = CM_W_RTU };
	cn->state = CS_ESTABLISHED;
	cm_persist_conn(d, cn, true);
	cm_conn_send(d, cn, &rtu, false);
	return 0;
}

/* CM_RESUME: after an efid restart, a process takes up an established
 * connection of its own again (cm_persist.c): CM_ID is the tid of an active
 * connection or the handle of a passive one (CM_ACTIVE says which). */
static int handle_resume(struct efid *d, struct client *c, const struct peer *p,
			 const struct ctl_attr *tb, char *err, size_t errlen)
{
	uint64_t id = 0;
	uint32_t active = 0;
	int r = busy(d, c, err, errlen);
	if (r)
		return r;
	if (!ctl_has(tb, EFI_A_CM_ID) || ctl_attr_u64(&tb[EFI_A_CM_ID], &id) < 0 ||
	    !get_u32(tb, EFI_A_CM_ACTIVE, &active) || active > 1) {
		snprintf(err, errlen, "resume needs the connection's id and which side it is");
		return -EINVAL;
	}
	struct cm_conn *cn = NULL;
	struct cm_map *map = active ? &d->cm->by_tid : &d->cm->by_handle;
	for (struct cm_map_node *n = cm_map_first(map, id); n && !cn; n = cm_map_next(n)) {
		struct cm_conn *x = n->val;
		if (x->active == (active != 0) && strcmp(x->instance, p->instance) == 0 &&
		    (x->orphan || x->peer_gone))
			cn = x;
	}
	if (!cn) {
		snprintf(err, errlen,
			 "no connection to take up: this efid does not know it (it ended, or was made before efid kept connections)");
		return -ENOENT;
	}
	if (cn->pid != p->pid) {
		snprintf(err, errlen, "the connection belongs to pid %d", (int)cn->pid);
		return -EPERM;
	}
	if (cn->peer_gone) {
		/* the peer disconnected while efid was away */
		cm_conn_unlink(d->cm, cn);
		snprintf(err, errlen, "the peer disconnected while efid restarted");
		return -ENOTCONN;
	}
	if (cm_conn_set_client(d->cm, cn, c) < 0)
		return -ENOMEM;
	cn->orphan = false;
	log_debug("cm: pid %d took up connection %016llx in %s again", (int)p->pid,
		  (unsigned long long)cn->tid, p->instance);
	return 0;
}

int cm_handle_request(struct efid *d, struct client *c, uint16_t type, const uint8_t *payload,
		      size_t len, struct ctl_buf *body, char *err, size_t errlen)
{
	const struct peer *p = control_peer(c);
	struct ctl_attr tb[EFI_A_MAX];
	uint16_t bad = 0;

	if (!d->cm)
		return -ENOTCONN;
	if (ctl_parse(payload, len, cm_policy, EFI_A_MAX, tb, &bad) < 0) {
		snprintf(err, errlen, "malformed request: attribute %u has a wrong type or length, or is repeated", bad);
		return -EBADMSG;
	}
	if (!p->instance[0]) {
		snprintf(err, errlen,
			 "permission denied: connections are made from inside an instance (run the program with `ip netns exec INSTANCE …`)");
		return -EPERM;
	}
	switch (type) {
	case EFI_CTL_CM_LISTEN:
		return handle_listen(d, c, p, tb, err, errlen);
	case EFI_CTL_CM_CONNECT:
		return handle_connect(d, c, p, tb, body, err, errlen);
	case EFI_CTL_CM_ACCEPT:
		return handle_accept(d, c, p, tb, body, err, errlen);
	case EFI_CTL_CM_REJECT:
		return handle_reject(d, p, tb, err, errlen);
	case EFI_CTL_CM_READY:
		return handle_ready(d, c, err, errlen);
	case EFI_CTL_CM_RESUME:
		return handle_resume(d, c, p, tb, err, errlen);
	case EFI_CTL_CM_DISCONNECT: {
		struct cm_conn *cn = cm_conn_of(d, c);
		if (cn)
			cm_conn_release(d, cn);
		return 0;
	}
	default:
		return -EOPNOTSUPP;
	}
}
