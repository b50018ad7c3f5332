/* SPDX-License-Identifier: MIT */
/*
 * Endpoints: an RC QP created at fi_enable (then moved to INIT so receives
 * can be posted before the connection exists, as libfabric allows), the
 * CQs and EQ bound to it, and the options.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "efi_fi.h"

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct efi_fi_ep *ep = (struct efi_fi_ep *)fid;

	if (!bfid)
		return -FI_EINVAL;
	switch (bfid->fclass) {
	case FI_CLASS_EQ:
		if (ep->eq)
			return -FI_EINVAL;
		ep->eq = (struct efi_fi_eq *)bfid;
		efi_fi_eq_attach(ep->eq, &ep->owner);
		return 0;
	case FI_CLASS_CQ: {
		struct efi_fi_cq *cq = (struct efi_fi_cq *)bfid;

		if (ep->enabled || cq->dom != ep->dom ||
		    (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)) ||
		    !(flags & (FI_TRANSMIT | FI_RECV)))
			return -FI_EINVAL;
		if (((flags & FI_TRANSMIT) && ep->tx_cq) || ((flags & FI_RECV) && ep->rx_cq))
			return -FI_EINVAL;
		if (flags & FI_TRANSMIT) {
			ep->tx_cq = cq;
			ep->tx_flags = flags & FI_SELECTIVE_COMPLETION;
			__atomic_fetch_add(&cq->refs, 1, __ATOMIC_SEQ_CST);
		}
		if (flags & FI_RECV) {
			ep->rx_cq = cq;
			ep->rx_flags = flags & FI_SELECTIVE_COMPLETION;
			__atomic_fetch_add(&cq->refs, 1, __ATOMIC_SEQ_CST);
		}
		return 0;
	}
	default:
		return -FI_ENOSYS;	/* counters, AVs, SRX/STX: none */
	}
}

static int ep_enable(struct efi_fi_ep *ep)
{
	struct efi_fi_domain *dom = ep->dom;
	struct efi_qp_init_attr ia = { 0 };
	struct efi_qp_attr qa = { 0 };
	const struct fi_info *fi = ep->info;
	int err;

	if (ep->enabled)
		return 0;
	if (!ep->tx_cq || !ep->rx_cq) {
		/* a CQ for the direction the application left unbound: its
		 * work requests are never signaled, except large injects
		 * without a transmit CQ, whose slots come back through it
		 * (bounce.c) */
		ep->own_cq = efi_create_cq(dom->ctx, 16 + EFI_FI_BOUNCE_SLOTS, NULL, NULL, 0);
		if (!ep->own_cq)
			return efi_fi_errno(errno);
	}
	efi_fi_bounce_init(&ep->bounce, ep->tx_cq ? 0 : EFI_FI_BOUNCE_SLOTS);
	ia.qp_context = ep;
	ia.send_cq = ep->tx_cq ? ep->tx_cq->ecq : ep->own_cq;
	ia.recv_cq = ep->rx_cq ? ep->rx_cq->ecq : ep->own_cq;
	ia.qp_type = EFI_QPT_RC;
	ia.cap.max_send_wr = (uint32_t)(fi->tx_attr->size ? fi->tx_attr->size : 256);
	ia.cap.max_recv_wr = (uint32_t)(fi->rx_attr->size ? fi->rx_attr->size : 256);
	ia.cap.max_send_sge = (uint32_t)(fi->tx_attr->iov_limit ? fi->tx_attr->iov_limit : 1);
	ia.cap.max_recv_sge = (uint32_t)(fi->rx_attr->iov_limit ? fi->rx_attr->iov_limit : 1);
	/* above libefi's inline limit, injects go through a bounce pool */
	ep->inject_size = (uint32_t)fi->tx_attr->inject_size;
	ia.cap.max_inline_data = ep->inject_size < dom->attr.max_inline_data ?
				 ep->inject_size : dom->attr.max_inline_data;
	ep->qp = efi_create_qp(dom->pd, &ia);
	if (!ep->qp)
		goto fail;
	ep->max_inline = ia.cap.max_inline_data;
	qa.qp_state = EFI_QPS_INIT;
	qa.qp_access_flags = EFI_ACCESS_REMOTE_WRITE | EFI_ACCESS_REMOTE_READ |
			     EFI_ACCESS_REMOTE_ATOMIC;
	qa.port_num = 1;
	qa.pkey_index = 0;
	err = efi_modify_qp(ep->qp, &qa, EFI_QP_STATE | EFI_QP_ACCESS_FLAGS | EFI_QP_PORT |
				 EFI_QP_PKEY_INDEX);
	if (err) {
		errno = err;
		goto fail;
	}
	ep->enabled = true;
	return 0;
fail:
	err = errno;
	efi_destroy_qp(ep->qp);
	ep->qp = NULL;
	efi_destroy_cq(ep->own_cq);
	ep->own_cq = NULL;
	efi_fi_bounce_fini(&ep->bounce);
	return efi_fi_errno(err);
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct efi_fi_ep *ep = (struct efi_fi_ep *)fid;

	(void)arg;
	switch (command) {
	case FI_ENABLE:
		return ep_enable(ep);
	default:
		return -FI_ENOSYS;
	}
}

static int ep_close(struct fid *fid)
{
	struct efi_fi_ep *ep = (struct efi_fi_ep *)fid;

	if (ep->eq) {
		efi_fi_eq_detach(ep->eq, &ep->owner);
		pthread_mutex_lock(&ep->eq->lock);
		efi_cm_destroy_id(ep->owner.id);	/* disconnects first */
		pthread_mutex_unlock(&ep->eq->lock);
	} else {
		efi_cm_destroy_id(ep->owner.id);
	}
	efi_fi_connreq_ep_close(ep);
	efi_destroy_qp(ep->qp);
	efi_dereg_mr(ep->scratch_mr);	/* after the QP: no fetch-add lands in it */
	efi_destroy_cq(ep->own_cq);
	if (ep->enabled)
		efi_fi_bounce_fini(&ep->bounce);	/* the QP is gone: no send reads it */
	if (ep->tx_cq)
		__atomic_fetch_sub(&ep->tx_cq->refs, 1, __ATOMIC_SEQ_CST);
	if (ep->rx_cq)
		__atomic_fetch_sub(&ep->rx_cq->refs, 1, __ATOMIC_SEQ_CST);
	__atomic_fetch_sub(&ep->dom->refs, 1, __ATOMIC_SEQ_CST);
	fi_freeinfo(ep->info);
	free(ep);
	return 0;
}

static ssize_t ep_cancel(fid_t fid, void *context)
{
	(void)fid, (void)context;
	return -FI_ENOSYS;	/* posted work cannot be withdrawn from an RC QP */
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	(void)fid;
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname == FI_OPT_CM_DATA_SIZE) {
		if (!optval || !optlen || *optlen < sizeof(size_t))
			return -FI_ETOOSMALL;
		*(size_t *)optval = EFI_FI_CM_DATA_MAX;
		*optlen = sizeof(size_t);
		return 0;
	}
	return -FI_ENOPROTOOPT;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	(void)fid, (void)level, (void)optname, (void)optval, (void)optlen;
	return -FI_ENOPROTOOPT;
}

static int no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		     struct fid_ep **tx_ep, void *context)
{
	(void)sep, (void)index, (void)attr, (void)tx_ep, (void)context;
	return -FI_ENOSYS;
}

static int no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		     struct fid_ep **rx_ep, void *context)
{
	(void)sep, (void)index, (void)attr, (void)rx_ep, (void)context;
	return -FI_ENOSYS;
}

static ssize_t no_size_left(struct fid_ep *ep)
{
	(void)ep;
	return -FI_ENOSYS;
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = efi_fi_no_ops_open,
	.tostr = efi_fi_no_tostr,
	.ops_set = efi_fi_no_ops_set,
};

/* shared with passive endpoints (getopt FI_OPT_CM_DATA_SIZE) */
struct fi_ops_ep efi_fi_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = no_tx_ctx,
	.rx_ctx = no_rx_ctx,
	.rx_size_left = no_size_left,
	.tx_size_left = no_size_left,
};

int efi_fi_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **out,
		   void *context)
{
	struct efi_fi_domain *dom = (struct efi_fi_domain *)domain;
	struct efi_fi_ep *ep;

	if (!info || (info->ep_attr && info->ep_attr->type != FI_EP_MSG &&
		      info->ep_attr->type != FI_EP_UNSPEC))
		return -FI_EINVAL;
	if (info->handle && info->handle->fclass != FI_CLASS_CONNREQ &&
	    !efi_fi_is_pep(info->handle))
		return -FI_EINVAL;	/* shared contexts: none */
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->info = fi_dupinfo(info);
	if (!ep->info) {
		free(ep);
		return -FI_ENOMEM;
	}
	ep->info->handle = NULL;	/* ours is ep->connreq */
	if (info->handle && efi_fi_is_pep(info->handle)) {
		/* a sockets-style client: the endpoint takes the address its
		 * passive endpoint was bound to (fi_getname says it; efi_cm
		 * carries no source port on the wire) */
		const struct efi_fi_pep *pep = (const struct efi_fi_pep *)info->handle;
		size_t len = efi_fi_sockaddr_len((const struct sockaddr *)&pep->addr);
		void *src = malloc(len);

		if (!src) {
			fi_freeinfo(ep->info);
			free(ep);
			return -FI_ENOMEM;
		}
		memcpy(src, &pep->addr, len);
		free(ep->info->src_addr);
		ep->info->src_addr = src;
		ep->info->src_addrlen = len;
	} else if (info->handle) {
		int ret = efi_fi_connreq_hold((struct efi_fi_connreq *)info->handle, ep);

		if (ret) {
			fi_freeinfo(ep->info);
			free(ep);
			return ret;
		}
		/* fi_accept answers it; fi_reject or the close may instead */
		ep->connreq = (struct efi_fi_connreq *)info->handle;
	}
	if (info->dest_addr && info->dest_addrlen <= sizeof(ep->peer))
		memcpy(&ep->peer, info->dest_addr, info->dest_addrlen);
	ep->dom = dom;
	ep->owner.fid = &ep->ep.fid;
	ep->ep.fid.fclass = FI_CLASS_EP;
	ep->ep.fid.context = context;
	ep->ep.fid.ops = &ep_fi_ops;
	ep->ep.ops = &efi_fi_ep_ops;
	ep->ep.cm = &efi_fi_ep_cm_ops;
	ep->ep.msg = &efi_fi_msg_ops;
	ep->ep.rma = &efi_fi_rma_ops;
	ep->ep.tagged = &efi_fi_no_tagged_ops;
	ep->ep.atomic = efi_fi_atomics_offered(&dom->attr) ? &efi_fi_atomic_ops
							   : &efi_fi_no_atomic_ops;
	ep->ep.collective = &efi_fi_no_collective_ops;
	__atomic_fetch_add(&dom->refs, 1, __ATOMIC_SEQ_CST);
	*out = &ep->ep;
	return 0;
}
