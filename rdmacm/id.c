/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm ids and their addresses: rdma_create_id, rdma_destroy_id,
 * rdma_bind_addr, rdma_resolve_addr, rdma_resolve_route, the ports.
 *
 * Address and route resolution are local here: an EFI address is an
 * address of an interface of the instance, and efid finds the way to the
 * peer when connecting.  So both finish at once, and their event is queued
 * before the call returns, as librdmacm would deliver it later.
 */
#include "config.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmacm/rdmacm_int.h"

struct rcm_id *rcm_id_new(struct rcm_channel *ch, void *context, enum rdma_port_space ps)
{
	struct rcm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->id.channel = &ch->ch;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = IBV_QPT_RC;
	id->ch = ch;
	id->dev = -1;
	return id;
}

void rcm_id_free(struct rcm_id *id)
{
	free(id->qp_init);
	free(id->id.route.path_rec);
	free(id);
}

RCM_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
			      void *context, enum rdma_port_space ps)
{
	struct rcm_id *r;
	int sync = 0;

	if (!id)
		return rcm_err(EINVAL);
	/* EFI gives reliable connected QPs only: no UD, no IPoIB */
	if (ps != RDMA_PS_TCP)
		return rcm_err(EOPNOTSUPP);
	/* a NULL channel: a synchronous id, with a channel of its own */
	if (!channel) {
		channel = rdma_create_event_channel();
		if (!channel)
			return -1;
		sync = 1;
	}
	r = rcm_id_new(rcm_channel(channel), context, ps);
	if (!r) {
		if (sync)
			rdma_destroy_event_channel(channel);
		return -1;
	}
	r->sync = r->own_channel = sync;
	*id = &r->id;
	return 0;
}

RCM_EXPORT int rdma_destroy_id(struct rdma_cm_id *cm_id)
{
	struct rcm_id *id = rcm_id(cm_id);
	struct rcm_channel *ch;
	struct rcm_event **pp, *e;
	int own;

	if (!cm_id)
		return rcm_err(EINVAL);
	/* a synchronous id's last event is the library's to ack */
	if (id->sync && cm_id->event) {
		rdma_ack_cm_event(cm_id->event);
		cm_id->event = NULL;
	}
	ch = id->ch;
	pthread_mutex_lock(&ch->lock);
	/* events queued for it are dropped, and the requests a listener
	 * leaves unanswered are rejected, as the kernel does */
	for (pp = &ch->head; (e = *pp);) {
		if (e->owner == id || e->ev.id == cm_id) {
			*pp = e->next;
			if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && e->ev.id != cm_id) {
				struct rcm_id *child = rcm_id(e->ev.id);

				efi_cm_destroy_id(child->request);
				rcm_id_free(child);
			}
			free(e);
			continue;
		}
		pp = &e->next;
	}
	ch->tail = NULL;
	for (e = ch->head; e; e = e->next)
		ch->tail = e;
	if (!ch->head) {
		uint64_t cnt;

		if (read(ch->evfd, &cnt, sizeof(cnt)) != sizeof(cnt))
			(void)0;
	}
	rcm_timewait_cancel(id);
	rcm_unwatch_all(id);
	if (id->request)
		efi_cm_destroy_id(id->request);
	id->request = NULL;
	/* librdmacm waits until the program acked every event it took */
	while (id->events_out > 0)
		pthread_cond_wait(&ch->acked, &ch->lock);
	pthread_mutex_unlock(&ch->lock);
	own = id->own_channel;
	rcm_id_free(id);
	if (own)
		rdma_destroy_event_channel(&ch->ch);
	return 0;
}

/* Binds to addr (lock held): the device whose address it is, or none for
 * the wildcard; port 0 picks one. */
static int bind_locked(struct rcm_id *id, const struct sockaddr *addr)
{
	struct sockaddr *src = (struct sockaddr *)&id->id.route.addr.src_addr;
	int len = rcm_addr_len(addr);
	int dev = -1;

	if (len == 0)
		return rcm_err(EAFNOSUPPORT);
	if (id->state != RCM_IDLE)
		return rcm_err(EINVAL);
	if (!rcm_addr_is_any(addr)) {
		dev = rcm_dev_of_addr(addr);
		if (dev < 0)
			return rcm_err(errno == ENODEV ? ENODEV : EADDRNOTAVAIL);
	}
	memset(&id->id.route.addr.src_addr, 0, sizeof(id->id.route.addr.src_storage));
	memcpy(src, addr, len);
	id->port_auto = rcm_addr_port(addr) == 0;
	if (id->port_auto)
		rcm_addr_set_port(src, rcm_ephemeral_port());
	id->dev = dev;
	if (dev >= 0) {
		struct rcm_dev *d;

		rcm_devices(&d);
		id->id.verbs = d[dev].verbs;
		/* the device's PD, as librdmacm's ids carry theirs (UCX
		 * makes its dummy UD QP on id->pd) */
		id->id.pd = rcm_dev_pd(dev);
		id->id.port_num = 1;
	}
	id->state = RCM_BOUND;
	return 0;
}

RCM_EXPORT int rdma_bind_addr(struct rdma_cm_id *cm_id, struct sockaddr *addr)
{
	struct rcm_id *id = rcm_id(cm_id);
	int ret;

	if (!cm_id || !addr)
		return rcm_err(EINVAL);
	pthread_mutex_lock(&id->ch->lock);
	ret = bind_locked(id, addr);
	pthread_mutex_unlock(&id->ch->lock);
	return ret;
}

RCM_EXPORT int rdma_resolve_addr(struct rdma_cm_id *cm_id, struct sockaddr *src_addr,
				 struct sockaddr *dst_addr, int timeout_ms)
{
	struct rcm_id *id = rcm_id(cm_id);
	struct sockaddr_storage src;
	struct rcm_event *e;
	int ret = 0, status = 0;

	(void)timeout_ms;	/* resolution is local: it never waits */
	if (!cm_id || !dst_addr || rcm_addr_len(dst_addr) == 0)
		return rcm_err(EINVAL);
	if (src_addr && src_addr->sa_family != dst_addr->sa_family)
		return rcm_err(EINVAL);
	e = rcm_event_new(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	if (!e)
		return -1;
	pthread_mutex_lock(&id->ch->lock);
	if (id->state == RCM_IDLE) {
		if (src_addr && !rcm_addr_is_any(src_addr)) {
			ret = bind_locked(id, src_addr);
		} else {
			/* the kernel's route to dst says which address we use */
			status = rcm_route_src(dst_addr, &src);
			if (status == 0) {
				if (src_addr)
					rcm_addr_set_port((struct sockaddr *)&src, rcm_addr_port(src_addr));
				else
					rcm_addr_set_port((struct sockaddr *)&src, 0);
				if (bind_locked(id, (struct sockaddr *)&src) != 0)
					status = -errno;
			}
		}
	} else if (id->state != RCM_BOUND) {
		ret = rcm_err(EINVAL);
	}
	if (ret == 0 && status == 0 && id->dev < 0) {
		/* bound to the wildcard: the address towards dst decides */
		status = rcm_route_src(dst_addr, &src);
		if (status == 0) {
			id->dev = rcm_dev_of_addr((struct sockaddr *)&src);
			if (id->dev < 0) {
				status = -EADDRNOTAVAIL;
			} else {
				struct rcm_dev *d;

				rcm_devices(&d);
				id->id.verbs = d[id->dev].verbs;
				id->id.pd = rcm_dev_pd(id->dev);
				id->id.port_num = 1;
			}
		}
	}
	if (ret == 0) {
		memset(&id->id.route.addr.dst_addr, 0, sizeof(id->id.route.addr.dst_storage));
		memcpy(&id->id.route.addr.dst_addr, dst_addr, rcm_addr_len(dst_addr));
		if (status == 0) {
			id->state = RCM_ADDR_RESOLVED;
		} else {
			e->ev.event = RDMA_CM_EVENT_ADDR_ERROR;
			e->ev.status = status;
		}
		rcm_queue(id->ch, e);
		e = NULL;
	}
	pthread_mutex_unlock(&id->ch->lock);
	free(e);
	return rcm_sync_after(id, ret);
}

static void gid_of(const struct sockaddr *a, union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	if (a->sa_family == AF_INET) {
		g->raw[10] = 0xff;
		g->raw[11] = 0xff;
		memcpy(&g->raw[12], &((const struct sockaddr_in *)a)->sin_addr, 4);
	} else if (a->sa_family == AF_INET6) {
		memcpy(g->raw, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
	}
}

RCM_EXPORT int rdma_resolve_route(struct rdma_cm_id *cm_id, int timeout_ms)
{
	struct rcm_id *id = rcm_id(cm_id);
	struct rcm_event *e;
	int ret = 0;

	(void)timeout_ms;
	if (!cm_id)
		return rcm_err(EINVAL);
	e = rcm_event_new(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	if (!e)
		return -1;
	pthread_mutex_lock(&id->ch->lock);
	if (id->state != RCM_ADDR_RESOLVED) {
		ret = rcm_err(EINVAL);
	} else {
		/* one path record with the two GIDs: efid and the transport
		 * pick the wire paths themselves */
		struct ibv_sa_path_rec *pr = calloc(1, sizeof(*pr));

		if (pr) {
			gid_of(&id->id.route.addr.src_addr, &pr->sgid);
			gid_of(&id->id.route.addr.dst_addr, &pr->dgid);
			pr->pkey = htons(0xffff);
			pr->reversible = 1;
			pr->numb_path = 1;
			free(id->id.route.path_rec);
			id->id.route.path_rec = pr;
			id->id.route.num_paths = 1;
		}
		id->state = RCM_ROUTE_RESOLVED;
		rcm_queue(id->ch, e);
		e = NULL;
	}
	pthread_mutex_unlock(&id->ch->lock);
	free(e);
	return rcm_sync_after(id, ret);
}

RCM_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return htons(rcm_addr_port(&id->route.addr.src_addr));
}

RCM_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return htons(rcm_addr_port(&id->route.addr.dst_addr));
}
