/* SPDX-License-Identifier: MIT */
/*
 * Connection manager state: listeners, and connections from the request to
 * their end.  The exchange (docs/connection-manager.md):
 *
 *   app A            efid A                efid B              app B (listener)
 *   CM_CONNECT ───►  REQ ───────────────►  (finds listener) ─► event REQUEST
 *                    ◄─────────────── ACK
 *                                          CM_ACCEPT ◄──────── efi_accept
 *   event REPLY ◄──  ◄───────────────── REP (QPN, PSN, MTU, GIDs, secret)
 *   CM_READY ─────►  RTU ───────────────►  ─────────────────► event ESTABLISHED
 *
 * Every datagram is resent until answered (REQ until ACK/REP/REJ, REP until
 * RTU, DREQ until DREP) with a doubling interval, and every waiting state has
 * a deadline, so nothing waits forever.  A connection's control client
 * closing (disconnect, exit, SIGKILL) sends a DREQ at once.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <systemd/sd-event.h>

#include "auth.h"
#include "cm.h"
#include "control.h"
#include "efid.h"
#include "log.h"
#include "store.h"

#include "cm_int.h"

struct cm_sock **cm_socks(struct efid *d)
{
	return &d->cm->socks;
}

static uint64_t now_usec(struct efid *d)
{
	uint64_t now = 0;
	sd_event_now(d->event, CLOCK_MONOTONIC, &now);
	return now;
}

uint64_t cm_random_u64(void)
{
	uint64_t v = 0;
	while (v == 0)
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			abort(); /* no randomness: handles would be guessable */
	return v;
}

static const char *cm_state_name(enum conn_state s)
{
	static const char *const names[] = {
		"req-sent", "acked", "rep-rcvd", "pending", "rep-sent", "established", "closing", "dead",
	};
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

/* ---- connections ---------------------------------------------------- */

void cm_conn_unlink(struct cm *cm, struct cm_conn *c)
{
	cm_persist_conn(cm->d, c, false);
	cm_conn_unindex(cm, c);
	cm_timed_del(cm, c);
	if (c->prev)
		c->prev->next = c->next;
	else
		cm->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	cm->nconns--;
	free(c);
}

struct cm_conn *cm_conn_new(struct efid *d, bool active, const char *instance, uint64_t tid)
{
	struct cm *cm = d->cm;
	if (cm->nconns >= MAX_CONNS)
		return NULL;
	struct cm_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (cm_map_put(&cm->by_tid, tid, c) < 0) {
		free(c);
		return NULL;
	}
	c->tid = tid;
	c->active = active;
	snprintf(c->instance, sizeof(c->instance), "%s", instance);
	c->next = cm->conns;
	if (cm->conns)
		cm->conns->prev = c;
	cm->conns = c;
	cm->nconns++;
	return c;
}

static bool same_addr(const struct sockaddr_in6 *a, const struct sockaddr_in6 *b)
{
	return memcmp(&a->sin6_addr, &b->sin6_addr, sizeof(a->sin6_addr)) == 0;
}

/* The active connection tid, or the passive one tid from peer. */
static struct cm_conn *conn_find(struct efid *d, bool active, uint64_t tid,
				 const struct sockaddr_in6 *peer, const char *instance)
{
	for (struct cm_map_node *n = cm_map_first(&d->cm->by_tid, tid); n; n = cm_map_next(n)) {
		struct cm_conn *c = n->val;
		if (c->active == active && same_addr(&c->peer, peer) &&
		    strcmp(c->instance, instance) == 0)
			return c;
	}
	return NULL;
}

/* When c next needs the tick: its deadline or its next resend. */
static uint64_t conn_due(const struct cm_conn *c)
{
	uint64_t due = c->deadline ? c->deadline : UINT64_MAX;
	if (c->resending && c->next_send < due)
		due = c->next_send;
	return due;
}

/* c waits for a time: the tick looks at it from now on, and comes no later
 * than c is due.  The tick sleeps until the earliest record is due rather
 * than walking every record every TICK_USEC: 1,000 connections lingering
 * 2 s after their peer died made that walk most of efid's work while it
 * relayed their DREQs (issue 18). */
static void tick_on(struct efid *d, struct cm_conn *c)
{
	sd_event_source *t = d->cm->tick;
	uint64_t due = conn_due(c), at = 0;
	int en = SD_EVENT_OFF;
	cm_timed_add(d->cm, c);
	if (due == UINT64_MAX)
		due = now_usec(d) + TICK_USEC; /* cannot happen: it waits for something */
	sd_event_source_get_enabled(t, &en);
	sd_event_source_get_time(t, &at);
	if (en == SD_EVENT_OFF || due < at)
		sd_event_source_set_time(t, due);
	sd_event_source_set_enabled(t, SD_EVENT_ON);
}

/* Sends m now and keeps resending it until answered (resend) or not. */
void cm_conn_send(struct efid *d, struct cm_conn *c, const struct cm_wire_msg *m, bool resend)
{
	c->out = *m;
	c->out.tid = c->tid;
	c->resending = resend;
	c->rto = RTO_FIRST_USEC;
	c->next_send = now_usec(d) + c->rto;
	int r = cm_sock_send(d, c->instance, &c->peer, &c->out);
	if (r < 0 && r != -ECONNREFUSED)
		log_debug("cm: %s of %016llx from %s: %s", cm_wire_type_str(m->type),
			  (unsigned long long)c->tid, c->instance, strerror(-r));
	if (resend)
		tick_on(d, c);
}

/* One-off answer to a datagram from `to` (no state kept). */
static void reply_once(struct efid *d, const char *instance, const struct sockaddr_in6 *to,
		       uint16_t type, uint64_t tid, uint32_t reason, bool from_active)
{
	struct cm_wire_msg m = { .type = type, .tid = tid, .reason = reason,
				 .from_active = from_active };
	cm_sock_send(d, instance, to, &m);
}

void cm_set_deadline(struct efid *d, struct cm_conn *c, uint64_t usec)
{
	c->deadline = usec ? now_usec(d) + usec : 0;
	if (usec)
		tick_on(d, c);
}

/* The connection stays around only to answer duplicates, then goes. */
void cm_conn_bury(struct efid *d, struct cm_conn *c, uint64_t linger_usec)
{
	if (c->listener) {
		c->listener->pending--;
		c->listener = NULL;
	}
	cm_conn_set_client(d->cm, c, NULL);
	c->state = CS_DEAD;
	c->resending = false;
	cm_set_deadline(d, c, linger_usec ? linger_usec : 1);
}

uint64_t cm_tombstone_usec(const struct cm_conn *c)
{
	uint64_t t = (uint64_t)c->timeout_ms * 1000ull;
	return t > TOMBSTONE_MAX_USEC ? TOMBSTONE_MAX_USEC : t ? t : 1;
}

/* ---- events to applications --------------------------------------------- */

static void event_begin(struct ctl_buf *b, uint32_t ev)
{
	ctl_buf_init(b);
	ctl_msg_begin(b, EFI_CTL_CM_EVENT, 0);
	ctl_put_u32(b, EFI_A_CM_EVENT, ev);
}

static void event_send(struct client *c, struct ctl_buf *b)
{
	ctl_msg_end(b);
	control_push(c, b);
	ctl_buf_free(b);
}

static void push_simple(struct client *c, uint32_t ev, uint32_t reason, const uint8_t *priv,
			size_t priv_len)
{
	struct ctl_buf b;
	if (!c)
		return;
	event_begin(&b, ev);
	if (reason)
		ctl_put_u32(&b, EFI_A_CM_REASON, reason);
	if (priv_len)
		ctl_put(&b, EFI_A_CM_PRIVATE, priv, priv_len);
	event_send(c, &b);
}

static void put_gids(struct ctl_buf *b, const struct cm_wire_msg *m)
{
	for (unsigned i = 0; i < m->ngids; i++)
		ctl_put(b, EFI_A_CM_PEER_GID, m->gids[i].raw, 16);
}

/* ---- listeners -------------------------------------------------------- */

struct cm_listener *cm_listener_find(struct efid *d, const char *instance, const char *ifname,
					 uint32_t service)
{
	for (struct cm_listener *l = d->cm->listeners; l; l = l->next)
		if (l->service == service && strcmp(l->instance, instance) == 0 &&
		    strcmp(l->ifname, ifname) == 0)
			return l;
	return NULL;
}

struct cm_listener *cm_listener_of(struct efid *d, const struct client *c)
{
	return cm_listener_of_client(d->cm, c);
}

struct cm_conn *cm_conn_of(struct efid *d, const struct client *c)
{
	return cm_conn_of_client(d->cm, c);
}

/* ---- the local interface of a GID -------------------------------------- */

/* The interface an instance's GID belongs to (g->gid), or the one named
 * g->ifname (g->gid NULL), with the GIDs of its table (its path set). */
static int gid_lookup_cb(const struct store_iface *it, void *ud)
{
	struct gid_lookup *g = ud;
	struct store_gid gids[STORE_MAX_GIDS];
	size_t n = 0;
	bool match = false;

	if (strcmp(it->state, "attached") != 0)
		return 0;
	if (!g->gid && strcmp(it->spec.name, g->ifname) != 0)
		return 0;
	if (store_gids_get(g->d->store, it->id, gids, STORE_MAX_GIDS, &n) < 0)
		return 0;
	for (size_t i = 0; i < n && g->gid && !match; i++)
		match = memcmp(gids[i].gid.raw, g->gid->raw, 16) == 0;
	if (g->gid && !match)
		return 0;
	g->found = true;
	snprintf(g->ifname, sizeof(g->ifname), "%s", it->spec.name);
	for (size_t k = 0; k < n && g->ngids < CM_WIRE_MAX_GIDS; k++)
		g->gids[g->ngids++] = gids[k].gid;
	return 1;
}

bool cm_local_gid(struct efid *d, const char *instance, const union efi_gid *gid,
		  struct gid_lookup *out)
{
	memset(out, 0, sizeof(*out));
	out->d = d;
	out->gid = gid;
	store_iface_foreach(d->store, instance, gid_lookup_cb, out);
	return out->found;
}

bool cm_local_iface(struct efid *d, const char *instance, const char *ifname,
		    struct gid_lookup *out)
{
	memset(out, 0, sizeof(*out));
	out->d = d;
	snprintf(out->ifname, sizeof(out->ifname), "%s", ifname);
	store_iface_foreach(d->store, instance, gid_lookup_cb, out);
	return out->found;
}

/* ---- datagrams from other efids ---------------------------------------- */

static void input_req(struct efid *d, const char *instance, const struct sockaddr_in6 *from,
		      const struct cm_wire_msg *m)
{
	struct cm_conn *c = conn_find(d, false, m->tid, from, instance);
	if (c) {
		/* a duplicate: the answer got lost, give it again */
		if (c->state == CS_PENDING)
			reply_once(d, instance, from, CM_W_ACK, m->tid, 0, false);
		else if (c->state == CS_REP_SENT || c->state == CS_DEAD || c->state == CS_CLOSING)
			cm_sock_send(d, instance, from, &c->out);
		return;
	}
	struct gid_lookup g;
	uint32_t reason = 0;
	struct cm_listener *l = NULL;
	if (!cm_local_gid(d, instance, &m->dest, &g))
		reason = EFI_CM_REJ_INVALID;
	else if (!(l = cm_listener_find(d, instance, g.ifname, m->service)))
		reason = EFI_CM_REJ_NO_LISTENER;
	else if (l->orphan)
		return; /* efid restarted and the listener is not back yet: the requester resends */
	else if (l->pending >= l->backlog)
		reason = EFI_CM_REJ_BACKLOG;
	c = cm_conn_new(d, false, instance, m->tid);
	if (!c)
		return; /* out of memory or connections: the requester times out */
	c->peer = *from;
	c->timeout_ms = m->timeout_ms;
	if (reason) {
		struct cm_wire_msg rej = { .type = CM_W_REJ, .reason = reason };
		cm_conn_send(d, c, &rej, false);
		cm_conn_bury(d, c, cm_tombstone_usec(c));
		log_debug("cm: request %016llx for service %u in %s refused (reason %u)",
			  (unsigned long long)m->tid, m->service, instance, reason);
		return;
	}
	if (cm_conn_set_handle(d->cm, c, cm_random_u64()) < 0) {
		cm_conn_unlink(d->cm, c);
		return; /* out of memory: the requester resends */
	}
	c->state = CS_PENDING;
	c->listener = l;
	c->req = *m;
	c->peer_qpn = m->qpn;
	c->peer_gid = m->sgid;
	snprintf(c->ifname, sizeof(c->ifname), "%s", g.ifname);
	l->pending++;
	cm_set_deadline(d, c, (uint64_t)m->timeout_ms * 1000ull);
	struct cm_wire_msg ack = { .type = CM_W_ACK };
	cm_conn_send(d, c, &ack, false);

	struct ctl_buf b;
	event_begin(&b, EFI_CM_EV_REQUEST);
	ctl_put_u64(&b, EFI_A_CM_ID, c->handle);
	ctl_put_u32(&b, EFI_A_CM_SERVICE, m->service);
	ctl_put_u32(&b, EFI_A_CM_QPN, m->qpn);
	ctl_put_u32(&b, EFI_A_CM_PSN, m->psn);
	ctl_put_u32(&b, EFI_A_CM_MTU, m->mtu);
	if (m->link_mtu)
		ctl_put_u32(&b, EFI_A_CM_LINK_MTU, m->link_mtu);
	ctl_put(&b, EFI_A_CM_SGID, m->sgid.raw, 16);
	ctl_put(&b, EFI_A_CM_DEST, m->dest.raw, 16);
	ctl_put_u32(&b, EFI_A_CM_TIMEOUT, m->timeout_ms);
	put_gids(&b, m);
	if (m->private_len)
		ctl_put(&b, EFI_A_CM_PRIVATE, m->private_data, m->private_len);
	event_send(l->client, &b);
}

static void input_rep(struct efid *d, struct cm_conn *c, const char *instance,
		      const struct sockaddr_in6 *from, const struct cm_wire_msg *m)
{
	if (!c) {
		/* the request was given up on: withdraw it */
		reply_once(d, instance, from, CM_W_REJ, m->tid, EFI_CM_REJ_EXPIRED, true);
		return;
	}
	if (c->state == CS_REP_RCVD)
		return; /* a duplicate; the application is still moving its QP */
	if (c->state == CS_ESTABLISHED) {
		reply_once(d, instance, from, CM_W_RTU, m->tid, 0, true); /* the RTU was lost */
		return;
	}
	if (c->state != CS_REQ_SENT && c->state != CS_ACKED)
		return;
	c->state = CS_REP_RCVD;
	c->resending = false;
	c->deadline = 0;
	c->peer_qpn = m->qpn;
	c->peer_gid = m->sgid;
	struct ctl_buf b;
	event_begin(&b, EFI_CM_EV_REPLY);
	ctl_put_u32(&b, EFI_A_CM_QPN, m->qpn);
	ctl_put_u32(&b, EFI_A_CM_PSN, m->psn);
	ctl_put_u32(&b, EFI_A_CM_MTU, m->mtu);
	if (m->link_mtu)
		ctl_put_u32(&b, EFI_A_CM_LINK_MTU, m->link_mtu);
	ctl_put_u32(&b, EFI_A_CM_KEY, m->key);
	ctl_put(&b, EFI_A_CM_SGID, m->sgid.raw, 16);
	put_gids(&b, m);
	if (m->private_len)
		ctl_put(&b, EFI_A_CM_PRIVATE, m->private_data, m->private_len);
	event_send(c->client, &b);
}

/* The other side is gone: tell the application, answer, forget. */
static void peer_disconnected(struct efid *d, struct cm_conn *c)
{
	log_debug("cm: connection %016llx in %s: the peer disconnected", (unsigned long long)c->tid,
		  c->instance);
	if (c->client && (c->state == CS_ESTABLISHED || c->state == CS_REP_RCVD ||
			  c->state == CS_REP_SENT))
		push_simple(c->client, EFI_CM_EV_DISCONNECTED, 0, NULL, 0);
	cm_persist_conn(d, c, false);
	if (c->orphan) {
		/* its application has not taken it up since efid restarted:
		 * the record tells it when it does */
		c->peer_gone = true;
		cm_conn_bury(d, c, 5 * DREQ_LINGER_USEC);
		return;
	}
	cm_conn_bury(d, c, DREQ_LINGER_USEC);
}

void cm_input(struct efid *d, const char *instance, const struct sockaddr_in6 *from,
	      const struct cm_wire_msg *m)
{
	struct cm_conn *c;

	switch (m->type) {
	case CM_W_REQ:
		input_req(d, instance, from, m);
		return;
	case CM_W_ACK:
		c = conn_find(d, true, m->tid, from, instance);
		if (c && c->state == CS_REQ_SENT) {
			c->state = CS_ACKED;
			c->resending = false; /* the deadline stays */
		}
		return;
	case CM_W_REP:
		input_rep(d, conn_find(d, true, m->tid, from, instance), instance, from, m);
		return;
	case CM_W_REJ:
		c = conn_find(d, !m->from_active, m->tid, from, instance);
		if (!c)
			return;
		if (c->active && (c->state == CS_REQ_SENT || c->state == CS_ACKED)) {
			push_simple(c->client, EFI_CM_EV_REJECTED, m->reason, m->private_data,
				    m->private_len);
			cm_conn_unlink(d->cm, c);
		} else if (!c->active && (c->state == CS_PENDING || c->state == CS_REP_SENT)) {
			/* withdrawn by the requester (it gave up) */
			peer_disconnected(d, c);
		}
		return;
	case CM_W_RTU:
		c = conn_find(d, false, m->tid, from, instance);
		if (c && c->state == CS_REP_SENT) {
			c->state = CS_ESTABLISHED;
			c->resending = false;
			c->deadline = 0;
			cm_persist_conn(d, c, true);
			push_simple(c->client, EFI_CM_EV_ESTABLISHED, 0, NULL, 0);
		}
		return;
	case CM_W_DREQ:
		/* a DREQ from the active side names a passive connection here */
		c = conn_find(d, !m->from_active, m->tid, from, instance);
		reply_once(d, instance, from, CM_W_DREP, m->tid, 0, !m->from_active);
		if (c && c->state == CS_CLOSING)
			cm_conn_unlink(d->cm, c); /* both sides closed: the peer knows */
		else if (c && c->state != CS_DEAD)
			peer_disconnected(d, c);
		return;
	case CM_W_DREP:
		c = conn_find(d, !m->from_active, m->tid, from, instance);
		if (c && c->state == CS_CLOSING)
			cm_conn_unlink(d->cm, c);
		return;
	default:
		return;
	}
}

void cm_unreachable(struct efid *d, const char *instance, const struct sockaddr_in6 *to)
{
	for (struct cm_conn *c = d->cm->conns, *next; c; c = next) {
		next = c->next;
		if (!c->active || c->state != CS_REQ_SENT || !same_addr(&c->peer, to) ||
		    strcmp(c->instance, instance) != 0)
			continue;
		push_simple(c->client, EFI_CM_EV_UNREACHABLE, 0, NULL, 0);
		cm_conn_unlink(d->cm, c);
	}
}

/* ---- ending a connection from this side ---------------------------------- */

/* The application let go of c (disconnect, close, death). */
void cm_conn_release(struct efid *d, struct cm_conn *c)
{
	cm_conn_set_client(d->cm, c, NULL);
	switch (c->state) {
	case CS_REQ_SENT:
	case CS_ACKED: {
		struct cm_wire_msg rej = { .type = CM_W_REJ, .reason = EFI_CM_REJ_EXPIRED,
					   .from_active = true };
		cm_conn_send(d, c, &rej, false);
		cm_conn_unlink(d->cm, c);
		return;
	}
	case CS_REP_RCVD:
	case CS_REP_SENT:
	case CS_ESTABLISHED: {
		struct cm_wire_msg dreq = { .type = CM_W_DREQ, .from_active = c->active };
		c->state = CS_CLOSING;
		cm_persist_conn(d, c, false);
		cm_conn_send(d, c, &dreq, true);
		cm_set_deadline(d, c, DREQ_GIVEUP_USEC);
		return;
	}
	default:
		return;
	}
}

void cm_shutdown(struct efid *d)
{
	if (d->cm)
		d->cm->shutting_down = true;
}

void cm_client_gone(struct efid *d, struct client *cl)
{
	if (!d->cm)
		return;
	if (d->cm->shutting_down) {
		/* efid is stopping, not the application: its QPs go on (the
		 * data path never involves efid), so the peers are not told */
		struct cm_conn *own = cm_conn_of_client(d->cm, cl);
		if (own)
			cm_conn_set_client(d->cm, own, NULL);
		for (struct cm_listener **pp = &d->cm->listeners; *pp;) {
			struct cm_listener *l = *pp;
			if (l->client == cl) {
				cm_listener_unindex(d->cm, l);
				*pp = l->next;
				d->cm->nlisteners--;
				for (struct cm_conn *c = d->cm->conns; c; c = c->next)
					if (c->listener == l)
						c->listener = NULL;
				free(l);
			} else {
				pp = &l->next;
			}
		}
		return;
	}
	struct cm_listener *l = cm_listener_of(d, cl);
	if (l) {
		for (struct cm_conn *c = d->cm->conns; c; c = c->next) {
			if (c->listener != l)
				continue;
			struct cm_wire_msg rej = { .type = CM_W_REJ, .reason = EFI_CM_REJ_NO_LISTENER };
			cm_conn_send(d, c, &rej, false);
			cm_conn_bury(d, c, cm_tombstone_usec(c));
		}
		for (struct cm_listener **pp = &d->cm->listeners; *pp; pp = &(*pp)->next) {
			if (*pp == l) {
				*pp = l->next;
				break;
			}
		}
		cm_listener_unindex(d->cm, l);
		log_debug("cm: listener on %s/%s service %u closed", l->instance, l->ifname,
			  l->service);
		cm_persist_listener(d, l, false);
		d->cm->nlisteners--;
		free(l);
	}
	struct cm_conn *c = cm_conn_of_client(d->cm, cl);
	if (c)
		cm_conn_release(d, c); /* one per control connection */
}

void cm_iface_gone(struct efid *d, const char *instance, const char *ifname)
{
	if (!d->cm)
		return;
	for (struct cm_conn *c = d->cm->conns, *next; c; c = next) {
		next = c->next;
		if (strcmp(c->instance, instance) || (ifname && strcmp(c->ifname, ifname)))
			continue;
		if (c->state == CS_PENDING) {
			struct cm_wire_msg rej = { .type = CM_W_REJ, .reason = EFI_CM_REJ_INVALID };
			cm_conn_send(d, c, &rej, false);
			cm_conn_bury(d, c, cm_tombstone_usec(c));
			continue;
		}
		if (!c->client)
			continue;
		/* the application's watcher moves its QP to ERR at this event */
		if (c->state == CS_ESTABLISHED || c->state == CS_REP_RCVD || c->state == CS_REP_SENT)
			push_simple(c->client, EFI_CM_EV_DISCONNECTED, EFI_CM_REJ_DETACHED, NULL, 0);
		else
			push_simple(c->client, EFI_CM_EV_UNREACHABLE, 0, NULL, 0);
		cm_conn_release(d, c);
	}
}

/* ---- the timer ----------------------------------------------------------- */

static void conn_expire(struct efid *d, struct cm_conn *c)
{
	log_debug("cm: %s connection %016llx in %s: deadline passed in state %s",
		  c->active ? "active" : "passive", (unsigned long long)c->tid, c->instance,
		  cm_state_name(c->state));
	switch (c->state) {
	case CS_REQ_SENT:
		/* no efid ever answered at that address */
		push_simple(c->client, EFI_CM_EV_UNREACHABLE, 0, NULL, 0);
		cm_conn_unlink(d->cm, c);
		return;
	case CS_ACKED: {
		/* a listener has it but did not answer */
		struct cm_wire_msg rej = { .type = CM_W_REJ, .reason = EFI_CM_REJ_EXPIRED,
					   .from_active = true };
		push_simple(c->client, EFI_CM_EV_TIMEOUT, 0, NULL, 0);
		cm_conn_send(d, c, &rej, false);
		cm_conn_unlink(d->cm, c);
		return;
	}
	case CS_PENDING: {
		struct cm_wire_msg rej = { .type = CM_W_REJ, .reason = EFI_CM_REJ_EXPIRED };
		cm_conn_send(d, c, &rej, false);
		cm_conn_bury(d, c, cm_tombstone_usec(c));
		return;
	}
	case CS_REP_SENT:
		/* no RTU: the requester never finished */
		push_simple(c->client, EFI_CM_EV_DISCONNECTED, 0, NULL, 0);
		c->state = CS_ESTABLISHED; /* so that the release sends a DREQ */
		cm_conn_release(d, c);
		return;
	case CS_CLOSING:
		log_info("cm: connection %016llx in %s: no answer to its DREQ in %llu s, given up",
			 (unsigned long long)c->tid, c->instance,
			 (unsigned long long)(DREQ_GIVEUP_USEC / 1000000));
		cm_conn_unlink(d->cm, c);
		return;
	default:
		cm_conn_unlink(d->cm, c);
		return;
	}
}

static int on_tick(sd_event_source *s, uint64_t scheduled, void *userdata)
{
	struct efid *d = userdata;
	bool waiting = false;
	/* not `scheduled`: after a pause of the timer that is long past */
	uint64_t usec = now_usec(d), due_min = UINT64_MAX;
	(void)scheduled;

	/* only the records waiting for a time, not every connection */
	for (struct cm_conn *c = d->cm->timed, *next; c; c = next) {
		next = c->tnext;
		if (c->deadline && usec >= c->deadline) {
			c->deadline = 0;
			conn_expire(d, c); /* may free c, never another record */
			waiting = true; /* c may wait again: look once more */
			due_min = 0;
			continue;
		}
		if (c->resending && usec >= c->next_send) {
			uint64_t cap = c->state == CS_CLOSING ? DREQ_RTO_MAX_USEC : RTO_MAX_USEC;
			cm_sock_send(d, c->instance, &c->peer, &c->out);
			c->rto = c->rto * 2 > cap ? cap : c->rto * 2;
			c->next_send = usec + c->rto;
		}
		if (!c->resending && !c->deadline) {
			cm_timed_del(d->cm, c);
		} else {
			waiting = true;
			if (conn_due(c) < due_min)
				due_min = conn_due(c);
		}
	}
	/* no sooner than a tick from now: records due together go together */
	if (waiting)
		sd_event_source_set_time(s, due_min > usec + TICK_USEC ? due_min : usec + TICK_USEC);
	else
		sd_event_source_set_enabled(s, SD_EVENT_OFF);
	return 0;
}

static int on_sync(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct efid *d = userdata;
	cm_sync(d);
	sd_event_source_set_time(s, usec + 1000000ull);
	return 0;
}

int cm_start(struct efid *d)
{
	struct cm *cm = calloc(1, sizeof(*cm));
	if (!cm)
		return -ENOMEM;
	d->cm = cm;
	cm->d = d;
	uint64_t now = now_usec(d);
	int r = sd_event_add_time(d->event, &cm->tick, CLOCK_MONOTONIC, now + TICK_USEC, 1000,
				  on_tick, d);
	if (r >= 0)
		r = sd_event_add_time(d->event, &cm->sync_timer, CLOCK_MONOTONIC, now + 1000000ull,
				      100000ull, on_sync, d);
	if (r >= 0)
		r = cm_persist_start(d);
	if (r < 0) {
		log_error("cm: cannot set up timers: %s", strerror(-r));
		cm_stop(d);
		return r;
	}
	/* A tick source keeps re-arming itself while needed (SD_EVENT_ON),
	 * the sync timer forever. */
	sd_event_source_set_enabled(cm->tick, SD_EVENT_OFF);
	sd_event_source_set_enabled(cm->sync_timer, SD_EVENT_ON);
	cm_sync(d);
	log_info("connection manager on UDP port %u in each instance", d->config.cm_port);
	return 0;
}

void cm_stop(struct efid *d)
{
	struct cm *cm = d->cm;
	if (!cm)
		return;
	/* control_stop let go of every client without telling any peer
	 * (cm_shutdown): established connections outlive efid, and their
	 * records stay in the store for the next one. */
	cm_persist_stop(d);
	while (cm->conns)
		cm_conn_unlink(cm, cm->conns);
	while (cm->listeners) {
		struct cm_listener *l = cm->listeners;
		cm->listeners = l->next;
		free(l);
	}
	cm_map_free(&cm->by_tid);
	cm_map_free(&cm->by_handle);
	cm_map_free(&cm->by_client);
	cm_map_free(&cm->listener_by_client);
	cm_sock_close_all(d);
	sd_event_source_disable_unref(cm->tick);
	sd_event_source_disable_unref(cm->sync_timer);
	free(cm);
	d->cm = NULL;
}

unsigned cm_listener_count(const struct efid *d)
{
	return d->cm ? d->cm->nlisteners : 0;
}

unsigned cm_connection_count(const struct efid *d)
{
	unsigned n = 0;
	if (d->cm)
		for (const struct cm_conn *c = d->cm->conns; c; c = c->next)
			n += c->state != CS_DEAD && c->state != CS_CLOSING;
	return n;
}
