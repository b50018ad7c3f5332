/* SPDX-License-Identifier: MIT */
/*
 * Synchronous ids (rdma_create_id with a NULL channel), rdma_create_ep and
 * rdma_get_request, as librdmacm has them: such an id gets an event channel
 * of its own, and each call that would produce an event (address and route
 * resolution, connect, accept, disconnect) waits for it, keeps it in
 * id->event (acked at the next such call or at destroy) and fails with
 * errno from its status.  A synchronous listener's requests come with
 * rdma_get_request, each moved to a channel of its own (it has no efi_cm
 * descriptor to move yet: that comes with the accept) and given a QP made
 * as rdma_create_ep was asked.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "rdmacm/rdmacm_int.h"

int rcm_sync_complete(struct rcm_id *id)
{
	struct rdma_cm_event *ev;

	if (id->id.event) {
		rdma_ack_cm_event(id->id.event);
		id->id.event = NULL;
	}
	if (rdma_get_cm_event(id->id.channel, &ev) != 0)
		return -1;
	id->id.event = ev;
	if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
		id->disc_taken = 1;
	if (ev->status) {
		/* librdmacm's mapping (ucma_complete) */
		if (ev->event == RDMA_CM_EVENT_REJECTED)
			return rcm_err(ECONNREFUSED);
		return rcm_err(ev->status < 0 ? -ev->status : ev->status);
	}
	return 0;
}

int rcm_sync_after(struct rcm_id *id, int ret)
{
	return ret == 0 && id->sync ? rcm_sync_complete(id) : ret;
}

RCM_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct rcm_id *l = rcm_id(listen), *child;
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	int e;

	if (!listen || !id || !l->sync)
		return rcm_err(EINVAL);
	if (rdma_get_cm_event(listen->channel, &ev) != 0)
		return -1;
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST || ev->status) {
		e = ev->status ? (ev->status < 0 ? -ev->status : ev->status) : EINVAL;
		rdma_ack_cm_event(ev);
		return rcm_err(e);
	}
	child = rcm_id(ev->id);
	ch = rdma_create_event_channel();
	if (!ch)
		goto err;
	pthread_mutex_lock(&l->ch->lock);
	child->ch = rcm_channel(ch);
	child->id.channel = ch;
	child->sync = 1;
	child->own_channel = 1;
	pthread_mutex_unlock(&l->ch->lock);
	if (l->qp_init) {
		/* a copy each time: rdma_create_qp fills in the CQs it made */
		struct ibv_qp_init_attr a = *l->qp_init;

		if (rdma_create_qp(&child->id, l->qp_pd, &a) != 0)
			goto err;
	}
	child->id.event = ev;
	*id = &child->id;
	return 0;
err:
	e = errno;
	/* the client hears a reject, as when the kernel's id is destroyed */
	rdma_ack_cm_event(ev);
	rdma_destroy_id(&child->id);
	return rcm_err(e);
}

RCM_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
			      struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm;
	struct rcm_id *r;
	int e;

	if (!id || !res)
		return rcm_err(EINVAL);
	if (rdma_create_id(NULL, &cm, NULL, res->ai_port_space ? res->ai_port_space : RDMA_PS_TCP))
		return -1;
	r = rcm_id(cm);
	if (res->ai_flags & RAI_PASSIVE) {
		if (res->ai_src_addr && rdma_bind_addr(cm, res->ai_src_addr) != 0)
			goto err;
		if (qp_init_attr) {
			r->qp_init = malloc(sizeof(*r->qp_init));
			if (!r->qp_init)
				goto err;
			*r->qp_init = *qp_init_attr;
			r->qp_init->qp_type = res->ai_qp_type;
			r->qp_pd = pd;
		}
	} else {
		if (rdma_resolve_addr(cm, res->ai_src_addr, res->ai_dst_addr, 2000) != 0 ||
		    rdma_resolve_route(cm, 2000) != 0)
			goto err;
		/* as librdmacm: the QP's type is the addrinfo's (RC) */
		if (qp_init_attr) {
			qp_init_attr->qp_type = res->ai_qp_type;
			if (rdma_create_qp(cm, pd, qp_init_attr) != 0)
				goto err;
		}
	}
	*id = cm;
	return 0;
err:
	e = errno;
	rdma_destroy_id(cm);
	return rcm_err(e);
}

/* As librdmacm's: the id's QP, then the id (and with it a synchronous
 * id's own channel; no SRQ can exist here).  Works on any id, as
 * librdmacm's does. */
RCM_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
}
