/* SPDX-License-Identifier: MIT */
/*
 * The connection manager's state across efid restarts (issue 18).
 *
 * Listeners and established connections are written to the store
 * (store_cm.c) when they come and removed when they end, so that an efid
 * stopped (SIGTERM), killed (SIGKILL) or replaced finds them at start.  It
 * loads them as orphans — records without a control connection — and the
 * applications take them up again: libefi's watcher reconnects, sends
 * CM_LISTEN again for a listener and CM_RESUME for a connection, and
 * efid hands the record to the caller when it is the same process
 * (SO_PEERCRED pid) in the same instance.  Meanwhile:
 *   - a request for an orphan listener gets no answer (the requester
 *     resends it until the listener is back), and nobody else may take
 *     its service;
 *   - a DREQ for an orphan connection is answered; the record remembers
 *     that the peer is gone, and the resume is told so (ENOTCONN: libefi
 *     reports DISCONNECTED and moves the QP to ERR);
 *   - what nobody takes up within CM_RESUME_GRACE_USEC ended while efid
 *     was away: a connection's peer gets its DREQ then, a listener goes.
 *
 * Writes are grouped: the records changed within CM_PERSIST_DELAY_USEC go
 * in one transaction (synchronous=FULL makes each commit an fsync, too
 * slow for one per connect), and a connection that ends before its record
 * was written never reaches the disk (connect-and-close loops cost no
 * write).  A SIGKILL can lose the last few milliseconds' records; SIGTERM
 * writes them before efid exits.
 *
 * The writing waits for a quiet moment: its timer has idle priority, so a
 * burst (1,000 control connections closing when a process dies, 1,000
 * DREQs arriving) is answered first and written after in one transaction,
 * instead of a commit and fsync every 5 ms stalling the DREQs and
 * DISCONNECTEDs in between (issue 18).  Records waiting longer than
 * CM_PERSIST_MAX_WAIT_USEC raise the timer to normal priority, so a busy
 * efid still writes them.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-event.h>

#include "cm_int.h"
#include "control.h"
#include "efid.h"
#include "log.h"
#include "store.h"
#include "store_cm.h"

#define CM_PERSIST_DELAY_USEC (5ull * 1000)
#define CM_PERSIST_MAX_WAIT_USEC (500ull * 1000)
#define CM_RESUME_GRACE_USEC (10ull * 1000000)

enum op_kind { OP_NONE, OP_LISTENER_PUT, OP_LISTENER_DEL, OP_CONN_PUT, OP_CONN_DEL };

struct cm_persist_op {
	struct cm_persist_op *next;
	enum op_kind kind;
	struct cm_conn *owner;		/* OP_CONN_PUT not written yet: its connection */
	union {
		struct store_cm_listener l;
		struct store_cm_conn c;
	};
};

static uint64_t now_usec(struct efid *d)
{
	uint64_t now = 0;
	sd_event_now(d->event, CLOCK_MONOTONIC, &now);
	return now;
}

static int on_flush(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)s;
	(void)usec;
	cm_persist_flush(userdata);
	return 0;
}

static void enqueue(struct efid *d, struct cm_persist_op *op)
{
	struct cm *cm = d->cm;
	if (!cm->persist_tail) {
		cm->persist_head = op;
		cm->persist_since = now_usec(d);
	} else {
		cm->persist_tail->next = op;
	}
	cm->persist_tail = op;
	if (cm->persist_timer && now_usec(d) - cm->persist_since >= CM_PERSIST_MAX_WAIT_USEC)
		sd_event_source_set_priority(cm->persist_timer, SD_EVENT_PRIORITY_NORMAL);
	if (cm->persist_timer) {
		int en = SD_EVENT_OFF;
		sd_event_source_get_enabled(cm->persist_timer, &en);
		if (en == SD_EVENT_OFF) {
			sd_event_source_set_time(cm->persist_timer, now_usec(d) + CM_PERSIST_DELAY_USEC);
			sd_event_source_set_enabled(cm->persist_timer, SD_EVENT_ONESHOT);
		}
	}
}

static struct cm_persist_op *new_op(struct efid *d, enum op_kind kind)
{
	if (!d->cm || d->cm->no_persist || !d->store)
		return NULL;
	struct cm_persist_op *op = calloc(1, sizeof(*op));
	if (!op)
		log_warning("cm: out of memory: a connection-manager record is not stored");
	else
		op->kind = kind;
	return op;
}

void cm_persist_listener(struct efid *d, const struct cm_listener *l, bool keep)
{
	struct cm_persist_op *op = new_op(d, keep ? OP_LISTENER_PUT : OP_LISTENER_DEL);
	if (!op)
		return;
	snprintf(op->l.instance, sizeof(op->l.instance), "%s", l->instance);
	snprintf(op->l.ifname, sizeof(op->l.ifname), "%s", l->ifname);
	op->l.service = l->service;
	op->l.backlog = l->backlog;
	op->l.pid = l->pid;
	enqueue(d, op);
}

void cm_persist_conn(struct efid *d, struct cm_conn *c, bool keep)
{
	if (keep == c->persisted)
		return;
	c->persisted = keep;
	if (!keep && c->pending_op) {
		/* its record was not written yet: write nothing */
		c->pending_op->kind = OP_NONE;
		c->pending_op->owner = NULL;
		c->pending_op = NULL;
		return;
	}
	struct cm_persist_op *op = new_op(d, keep ? OP_CONN_PUT : OP_CONN_DEL);
	if (!op)
		return;
	snprintf(op->c.instance, sizeof(op->c.instance), "%s", c->instance);
	snprintf(op->c.ifname, sizeof(op->c.ifname), "%s", c->ifname);
	op->c.tid = c->tid;
	op->c.active = c->active;
	op->c.handle = c->handle;
	memcpy(op->c.peer, &c->peer.sin6_addr, 16);
	op->c.peer_gid = c->peer_gid;
	op->c.local_qpn = c->local_qpn;
	op->c.peer_qpn = c->peer_qpn;
	op->c.pid = c->pid;
	if (keep) {
		op->owner = c;
		c->pending_op = op;
	}
	enqueue(d, op);
}

void cm_persist_flush(struct efid *d)
{
	struct cm *cm = d->cm;
	if (!cm || !cm->persist_head)
		return;
	if (cm->persist_timer)
		sd_event_source_set_priority(cm->persist_timer, SD_EVENT_PRIORITY_IDLE);
	struct cm_persist_op *ops = cm->persist_head;
	cm->persist_head = cm->persist_tail = NULL;
	unsigned n = 0;
	int r = 0;
	bool any = false;
	for (struct cm_persist_op *op = ops; op; op = op->next) {
		if (op->owner) {
			op->owner->pending_op = NULL;
			op->owner = NULL;
		}
		any |= op->kind != OP_NONE;
	}
	r = any ? store_begin(d->store) : -ECANCELED; /* nothing to write: no fsync */
	struct store_cm_batch b;
	store_cm_batch_begin(&b, d->store);
	for (struct cm_persist_op *op = ops; op && r == 0; op = op->next, n++) {
		switch (op->kind) {
		case OP_NONE:
			break;
		case OP_LISTENER_PUT:
			r = store_cm_listener_put(&b, &op->l);
			break;
		case OP_LISTENER_DEL:
			r = store_cm_listener_del(&b, op->l.instance, op->l.ifname, op->l.service);
			break;
		case OP_CONN_PUT:
			r = store_cm_conn_put(&b, &op->c);
			break;
		case OP_CONN_DEL:
			r = store_cm_conn_del(&b, op->c.instance, op->c.tid, op->c.active);
			break;
		}
	}
	store_cm_batch_end(&b); /* statements finalized before the commit */
	if (r == 0)
		r = store_commit(d->store);
	else if (r != -ECANCELED)
		store_rollback(d->store);
	if (r < 0 && r != -ECANCELED)
		log_warning("cm: %u connection-manager records not stored (they will not survive an efid restart): %s",
			    n, store_errmsg(d->store));
	while (ops) {
		struct cm_persist_op *next = ops->next;
		free(ops);
		ops = next;
	}
}

/* ---- after a restart ------------------------------------------------------ */

struct load_ctx {
	struct efid *d;
	unsigned listeners, conns;
};

static void load_listener(const struct store_cm_listener *r, void *ud)
{
	struct load_ctx *lc = ud;
	struct cm *cm = lc->d->cm;
	if (cm_listener_find(lc->d, r->instance, r->ifname, r->service))
		return;
	struct cm_listener *l = calloc(1, sizeof(*l));
	if (!l)
		return;
	snprintf(l->instance, sizeof(l->instance), "%s", r->instance);
	snprintf(l->ifname, sizeof(l->ifname), "%s", r->ifname);
	l->service = r->service;
	l->backlog = r->backlog;
	l->pid = r->pid;
	l->orphan = true;
	l->next = cm->listeners;
	cm->listeners = l;
	cm->nlisteners++;
	lc->listeners++;
}

static void load_conn(const struct store_cm_conn *r, void *ud)
{
	struct load_ctx *lc = ud;
	struct cm_conn *c = cm_conn_new(lc->d, r->active, r->instance, r->tid);
	if (!c)
		return;
	if (r->handle && cm_conn_set_handle(lc->d->cm, c, r->handle) < 0) {
		cm_conn_unlink(lc->d->cm, c);
		return;
	}
	snprintf(c->ifname, sizeof(c->ifname), "%s", r->ifname);
	c->state = CS_ESTABLISHED;
	c->peer.sin6_family = AF_INET6;
	memcpy(&c->peer.sin6_addr, r->peer, 16);
	c->peer_gid = r->peer_gid;
	c->local_qpn = r->local_qpn;
	c->peer_qpn = r->peer_qpn;
	c->pid = r->pid;
	c->orphan = true;
	c->persisted = true;
	c->timeout_ms = DEFAULT_TIMEOUT_MS;
	lc->conns++;
}

/* The grace is over: what was not taken up ended while efid was away. */
static int on_grace(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct efid *d = userdata;
	struct cm *cm = d->cm;
	unsigned nl = 0, nc = 0;
	(void)s;
	(void)usec;
	for (struct cm_listener **pp = &cm->listeners; *pp;) {
		struct cm_listener *l = *pp;
		if (!l->orphan) {
			pp = &l->next;
			continue;
		}
		*pp = l->next;
		cm->nlisteners--;
		cm_persist_listener(d, l, false);
		free(l);
		nl++;
	}
	for (struct cm_conn *c = cm->conns, *next; c; c = next) {
		next = c->next;
		if (!c->orphan)
			continue;
		c->orphan = false;
		nc++;
		if (c->state == CS_ESTABLISHED)
			cm_conn_release(d, c); /* the DREQ the dead process owed its peer */
	}
	if (nl || nc)
		log_info("cm: %u listeners and %u connections from before the restart were not taken up again: ended",
			 nl, nc);
	return 0;
}

int cm_persist_start(struct efid *d)
{
	struct cm *cm = d->cm;
	int r = sd_event_add_time(d->event, &cm->persist_timer, CLOCK_MONOTONIC, 0, 1000, on_flush, d);
	if (r < 0)
		return r;
	sd_event_source_set_priority(cm->persist_timer, SD_EVENT_PRIORITY_IDLE);
	sd_event_source_set_enabled(cm->persist_timer, SD_EVENT_OFF);
	if (!d->store)
		return 0;
	struct load_ctx lc = { .d = d };
	r = store_cm_load(d->store, load_listener, load_conn, &lc);
	if (r < 0) {
		log_warning("cm: the listeners and connections of before cannot be read: %s",
			    store_errmsg(d->store));
		return 0;
	}
	if (!lc.listeners && !lc.conns)
		return 0;
	log_info("cm: %u listeners and %u connections from before the restart wait to be taken up again",
		 lc.listeners, lc.conns);
	return sd_event_add_time(d->event, &cm->grace_timer, CLOCK_MONOTONIC,
				 now_usec(d) + CM_RESUME_GRACE_USEC, 100000, on_grace, d);
}

void cm_persist_stop(struct efid *d)
{
	struct cm *cm = d->cm;
	cm_persist_flush(d);
	cm->no_persist = true; /* what efid drops now while stopping stays stored */
	sd_event_source_disable_unref(cm->persist_timer);
	sd_event_source_disable_unref(cm->grace_timer);
	cm->persist_timer = cm->grace_timer = NULL;
}
