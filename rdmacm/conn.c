/* SPDX-License-Identifier: MIT */
/*
 * Connections: rdma_listen, rdma_connect, rdma_accept, rdma_reject,
 * rdma_disconnect on efi_listen, efi_connect, efi_accept, efi_reject and
 * efi_disconnect, and the efi_cm events turned into rdma_cm events with
 * the statuses librdmacm gives on RoCE.
 */
#include "config.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdmacm/rdmacm_int.h"

/* IB CM reject reasons, which librdmacm reports as the status of
 * RDMA_CM_EVENT_REJECTED (IBTA 12.6.7.2). */
enum {
	IB_REJ_NO_RESOURCES = 3,
	IB_REJ_TIMEOUT = 4,
	IB_REJ_INVALID_SERVICE_ID = 8,
	IB_REJ_CONSUMER_DEFINED = 28,
};

/* The address to give efi_listen a turn at another port: when the program
 * bound port 0, a port some other process listens on is not its choice. */
#define LISTEN_PORT_TRIES 16

/* A request that finds no listener is sent again for this long before the
 * client hears REJECTED (status 8).  The kernel answers a REQ at once, and
 * so does efid; but setting a listener up and down goes through efid here,
 * which widens the window a server leaves between closing one listener and
 * opening the next (perftest -R does so between its two connections), and
 * a client of such a server would lose the race where it wins it with the
 * kernel.  RETRY_PAUSE_MS paces the retries. */
#define RCM_NO_LISTENER_GRACE_MS 2000
#define RETRY_PAUSE_MS 10

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int listen_all(struct rcm_id *id, int backlog)
{
	struct rcm_dev *d;
	char svc[8];
	int n, i, e;

	n = rcm_devices(&d);
	if (n < 0)
		return -errno;
	snprintf(svc, sizeof(svc), "%u", rcm_addr_port(&id->id.route.addr.src_addr));
	for (i = 0; i < n; i++) {
		struct efi_cm_id *l;

		if (id->dev >= 0 && i != id->dev)
			continue;
		l = efi_listen(d[i].ectx, svc, backlog);
		if (!l)
			goto fail;
		e = rcm_watch(id, l, i);
		if (e != 0) {
			efi_cm_destroy_id(l);
			errno = -e;
			goto fail;
		}
	}
	return 0;
fail:
	e = errno;
	rcm_unwatch_all(id);
	return -e;
}

RCM_EXPORT int rdma_listen(struct rdma_cm_id *cm_id, int backlog)
{
	struct rcm_id *id = rcm_id(cm_id);
	int ret = 0, tries;

	if (!cm_id)
		return rcm_err(EINVAL);
	if (backlog <= 0 || backlog > 4096)
		backlog = backlog <= 0 ? 0 : 4096;
	pthread_mutex_lock(&id->ch->lock);
	if (id->state == RCM_IDLE) {
		/* as the kernel does: listen on every address, a port of ours */
		struct sockaddr_in any = { .sin_family = AF_INET };

		memcpy(&id->id.route.addr.src_addr, &any, sizeof(any));
		id->port_auto = 1;
		rcm_addr_set_port(&id->id.route.addr.src_addr, rcm_ephemeral_port());
		id->state = RCM_BOUND;
	}
	if (id->state != RCM_BOUND) {
		ret = rcm_err(EINVAL);
		goto out;
	}
	for (tries = 0;; tries++) {
		ret = listen_all(id, backlog);
		if (ret != -EADDRINUSE || !id->port_auto || tries >= LISTEN_PORT_TRIES)
			break;
		rcm_addr_set_port(&id->id.route.addr.src_addr, rcm_ephemeral_port());
	}
	if (ret != 0) {
		ret = rcm_err(-ret);
		goto out;
	}
	id->state = RCM_LISTEN;
out:
	pthread_mutex_unlock(&id->ch->lock);
	return ret;
}

/* Our header, then the consumer's private data. */
static size_t pack(uint8_t *buf, const struct rcm_id *id, const struct rdma_conn_param *p)
{
	return rcm_hdr_pack(buf, rcm_addr_port(&id->id.route.addr.src_addr), p);
}

/* Fills the event's conn parameters from what came (with our header when
 * the peer is libefi-rdmacm; raw private data otherwise). */
static void unpack(struct rcm_event *e, const struct efi_cm_event *ev, uint16_t *peer_port)
{
	struct rdma_conn_param *c = &e->ev.param.conn;

	/* efi_cm's length field cannot exceed its array; -1 leaves none */
	if (rcm_hdr_unpack(ev->private_data, ev->private_data_len, c, e->pdata, peer_port) < 0) {
		c->private_data = NULL;
		c->private_data_len = 0;
	}
	c->qp_num = ev->peer_qp_num;
}

static int conn_param_ok(const struct rdma_conn_param *p, int max)
{
	return !p || (p->private_data_len <= max && (p->private_data || !p->private_data_len));
}

RCM_EXPORT int rdma_connect(struct rdma_cm_id *cm_id, struct rdma_conn_param *conn_param)
{
	struct rcm_id *id = rcm_id(cm_id);
	uint8_t buf[EFI_CM_PRIVATE_DATA_MAX];
	char host[sizeof(id->host)], svc[sizeof(id->svc)];
	const struct sockaddr *dst;
	struct efi_cm_id *c;
	size_t len;
	int ret = 0, e;

	if (!cm_id || !conn_param_ok(conn_param, RCM_REQ_PDATA_MAX))
		return rcm_err(EINVAL);
	pthread_mutex_lock(&id->ch->lock);
	if (id->state != RCM_ROUTE_RESOLVED) {
		ret = rcm_err(EINVAL);
		goto out;
	}
	/* a QP made elsewhere (conn_param->qp_num) is not one efi_cm can drive */
	if (!id->id.qp) {
		ret = rcm_err(EOPNOTSUPP);
		goto out;
	}
	dst = &id->id.route.addr.dst_addr;
	inet_ntop(dst->sa_family,
		  dst->sa_family == AF_INET ? (const void *)&((const struct sockaddr_in *)dst)->sin_addr
					    : (const void *)&((const struct sockaddr_in6 *)dst)->sin6_addr,
		  host, sizeof(host));
	snprintf(svc, sizeof(svc), "%u", rcm_addr_port(dst));
	len = pack(buf, id, conn_param);
	c = efi_connect(rcm_efi_qp(id->id.qp), host, svc, buf, len, 0);
	if (c) {
		memcpy(id->host, host, sizeof(id->host));
		memcpy(id->svc, svc, sizeof(id->svc));
		memcpy(id->req, buf, len);
		id->req_len = len;
		id->connect_deadline_ms = now_ms() + RCM_NO_LISTENER_GRACE_MS;
	}
	if (!c) {
		ret = -1;
		goto out;
	}
	e = rcm_watch(id, c, id->dev);
	if (e != 0) {
		efi_cm_destroy_id(c);
		ret = rcm_err(-e);
		goto out;
	}
	id->state = RCM_CONNECTING;
out:
	pthread_mutex_unlock(&id->ch->lock);
	return rcm_sync_after(id, ret);
}

RCM_EXPORT int rdma_accept(struct rdma_cm_id *cm_id, struct rdma_conn_param *conn_param)
{
	struct rcm_id *id = rcm_id(cm_id);
	uint8_t buf[EFI_CM_PRIVATE_DATA_MAX];
	size_t len;
	int ret = 0, e;

	if (!cm_id || !conn_param_ok(conn_param, RCM_REP_PDATA_MAX))
		return rcm_err(EINVAL);
	pthread_mutex_lock(&id->ch->lock);
	if (id->state != RCM_REQUEST) {
		ret = rcm_err(EINVAL);
		goto out;
	}
	if (!id->id.qp) {
		ret = rcm_err(EOPNOTSUPP);
		goto out;
	}
	len = pack(buf, id, conn_param);
	e = efi_accept(id->request, rcm_efi_qp(id->id.qp), buf, len);
	if (e != 0) {
		ret = rcm_err(e);
		goto out;
	}
	/* the request is a connection now, with an event fd of its own */
	e = rcm_watch(id, id->request, id->dev);
	if (e != 0) {
		ret = rcm_err(-e);
		goto out;
	}
	id->request = NULL;
	id->state = RCM_ACCEPTED;
out:
	pthread_mutex_unlock(&id->ch->lock);
	return rcm_sync_after(id, ret);
}

RCM_EXPORT int rdma_reject(struct rdma_cm_id *cm_id, const void *private_data, uint8_t private_data_len)
{
	struct rcm_id *id = rcm_id(cm_id);
	int ret = 0, e;

	if (!cm_id || private_data_len > RCM_REJ_PDATA_MAX || (private_data_len && !private_data))
		return rcm_err(EINVAL);
	pthread_mutex_lock(&id->ch->lock);
	if (id->state != RCM_REQUEST) {
		ret = rcm_err(EINVAL);
	} else {
		e = efi_reject(id->request, private_data, private_data_len);
		if (e != 0)
			ret = rcm_err(e);
		else
			id->state = RCM_DISCONNECTED;
	}
	pthread_mutex_unlock(&id->ch->lock);
	return ret;
}

/* DISCONNECTED for id, once, whoever ended the connection. */
static void disconnected(struct rcm_id *id)
{
	struct rcm_event *e;

	id->state = RCM_DISCONNECTED;
	if (id->disconnect_sent)
		return;
	e = rcm_event_new(id, RDMA_CM_EVENT_DISCONNECTED, 0);
	if (!e)
		return;
	id->disconnect_sent = 1;
	id->disc_queued = 1;
	rcm_queue(id->ch, e);
	rcm_timewait_start(id);
}

/*
 * The connection ended because its interface was detached (efi_cm says so
 * in the DISCONNECTED: EFI_CM_DISCONNECT_DETACHED; the QP is in ERR).
 * librdmacm reports that as DEVICE_REMOVAL, and nothing after it: the
 * program is to destroy the id.  (libefi's lease learns the detach too, but
 * on another socket: asking it at this event races it.)
 */
static void device_removed(struct rcm_id *id)
{
	struct rcm_event *e;

	id->state = RCM_DISCONNECTED;
	if (id->disconnect_sent)
		return;
	e = rcm_event_new(id, RDMA_CM_EVENT_DEVICE_REMOVAL, 0);
	if (!e)
		return;
	id->disconnect_sent = 1;
	rcm_queue(id->ch, e);
}

RCM_EXPORT int rdma_disconnect(struct rdma_cm_id *cm_id)
{
	struct rcm_id *id = rcm_id(cm_id);
	int ret = 0, e, wait;

	if (!cm_id)
		return rcm_err(EINVAL);
	pthread_mutex_lock(&id->ch->lock);
	switch (id->state) {
	case RCM_CONNECTING:
	case RCM_ACCEPTED:
	case RCM_CONNECTED:
		e = efi_disconnect(id->src[0].eid);
		if (e != 0) {
			ret = rcm_err(e);
			break;
		}
		/* the kernel reports the end to the side that ends it too */
		disconnected(id);
		break;
	case RCM_DISCONNECTED:
		break;	/* the peer was first: nothing left to end */
	default:
		ret = rcm_err(EINVAL);
	}
	/* synchronous: the DISCONNECTED, unless the program has it already
	 * (or the connection ended otherwise: reject, removal) */
	wait = ret == 0 && id->sync && id->disc_queued && !id->disc_taken;
	pthread_mutex_unlock(&id->ch->lock);
	return wait ? rcm_sync_complete(id) : ret;
}

static void conn_request(struct rcm_src *src, const struct efi_cm_event *ev)
{
	struct rcm_id *l = src->owner, *child;
	struct sockaddr_storage peer, local;
	uint16_t peer_port = 0;
	struct rcm_dev *d;
	struct rcm_event *e;

	child = rcm_id_new(l->ch, l->id.context, l->id.ps);
	e = child ? rcm_event_new(child, RDMA_CM_EVENT_CONNECT_REQUEST, 0) : NULL;
	if (!e) {
		/* the client hears a reject rather than nothing */
		free(child);
		efi_cm_destroy_id(ev->request);
		return;
	}
	/* librdmacm counts a request against the listener: the program may
	 * destroy the new id before it acks the event */
	e->owner = l;
	e->ev.listen_id = &l->id;
	unpack(e, ev, &peer_port);
	rcm_devices(&d);
	child->request = ev->request;
	child->dev = src->dev;
	child->id.verbs = d[src->dev].verbs;
	child->id.pd = rcm_dev_pd(src->dev);
	child->id.port_num = 1;
	child->state = RCM_REQUEST;
	rcm_addr_from_gid(&peer, &ev->peer_gid, peer_port);
	memcpy(&child->id.route.addr.dst_storage, &peer, sizeof(peer));
	/* our address towards the peer, at the listener's port */
	if (rcm_route_src((struct sockaddr *)&peer, &local) == 0) {
		rcm_addr_set_port((struct sockaddr *)&local, rcm_addr_port(&l->id.route.addr.src_addr));
		memcpy(&child->id.route.addr.src_storage, &local, sizeof(local));
	} else {
		memcpy(&child->id.route.addr.src_storage, &l->id.route.addr.src_storage,
		       sizeof(local));
	}
	rcm_queue(l->ch, e);
}

/* The request found no listener: sends it again (lock held) while the
 * grace lasts.  Returns 1 when it did. */
static int retry_connect(struct rcm_id *id)
{
	struct timespec pause = { 0, RETRY_PAUSE_MS * 1000000L };
	struct efi_cm_id *c;

	if (id->state != RCM_CONNECTING || !id->id.qp || now_ms() >= id->connect_deadline_ms)
		return 0;
	/* the rejected request's id is closed; the QP is still in INIT */
	rcm_unwatch_all(id);
	nanosleep(&pause, NULL);
	c = efi_connect(rcm_efi_qp(id->id.qp), id->host, id->svc, id->req, id->req_len, 0);
	if (!c)
		return 0;
	if (rcm_watch(id, c, id->dev) != 0) {
		efi_cm_destroy_id(c);
		return 0;
	}
	return 1;
}

void rcm_translate(struct rcm_src *src, const struct efi_cm_event *ev)
{
	struct rcm_id *id = src->owner;
	struct rcm_event *e;

	if (ev->event == EFI_CM_EVENT_REJECTED && ev->reject_reason == EFI_CM_REJECT_NO_LISTENER &&
	    retry_connect(id))
		return;

	if (ev->event == EFI_CM_EVENT_CONNECT_REQUEST) {
		conn_request(src, ev);
		return;
	}
	if (ev->event == EFI_CM_EVENT_DISCONNECTED) {
		if (id->state != RCM_DISCONNECTED && ev->reject_reason == EFI_CM_DISCONNECT_DETACHED)
			device_removed(id);
		else if (id->state != RCM_DISCONNECTED)
			disconnected(id);
		return;
	}
	e = rcm_event_new(id, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (!e)
		return;
	switch (ev->event) {
	case EFI_CM_EVENT_ESTABLISHED:
		if (id->state == RCM_CONNECTING)
			unpack(e, ev, NULL);	/* the server's accept data */
		id->state = RCM_CONNECTED;
		break;
	case EFI_CM_EVENT_REJECTED:
		e->ev.event = RDMA_CM_EVENT_REJECTED;
		switch (ev->reject_reason) {
		case EFI_CM_REJECT_CONSUMER:
			e->ev.status = IB_REJ_CONSUMER_DEFINED;
			unpack(e, ev, NULL);
			break;
		case EFI_CM_REJECT_BACKLOG:
			e->ev.status = IB_REJ_NO_RESOURCES;
			break;
		case EFI_CM_REJECT_EXPIRED:
			e->ev.status = IB_REJ_TIMEOUT;
			break;
		default:	/* no listener, not an EFI address there */
			e->ev.status = IB_REJ_INVALID_SERVICE_ID;
		}
		id->state = RCM_DISCONNECTED;
		break;
	case EFI_CM_EVENT_UNREACHABLE:
		e->ev.event = RDMA_CM_EVENT_UNREACHABLE;
		e->ev.status = -EHOSTUNREACH;
		id->state = RCM_DISCONNECTED;
		break;
	case EFI_CM_EVENT_TIMEOUT:
		e->ev.event = RDMA_CM_EVENT_UNREACHABLE;
		e->ev.status = -ETIMEDOUT;
		id->state = RCM_DISCONNECTED;
		break;
	default:
		free(e);
		return;
	}
	/* a reject or timeout is an end that is not a disconnect */
	if (e->ev.event != RDMA_CM_EVENT_ESTABLISHED)
		id->disconnect_sent = 1;
	rcm_queue(id->ch, e);
}
