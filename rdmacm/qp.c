/* SPDX-License-Identifier: MIT */
/*
 * rdma_create_qp / rdma_destroy_qp: an RC QP of libefi-verbs on the id's
 * device, with CQs of its own when the program gives none (as librdmacm).
 */
#include "config.h"

#include "rdmacm/rdmacm_int.h"

static void free_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq && id->recv_cq != id->send_cq)
		ibv_destroy_cq(id->recv_cq);
	if (id->send_cq)
		ibv_destroy_cq(id->send_cq);
	if (id->recv_cq_channel && id->recv_cq_channel != id->send_cq_channel)
		ibv_destroy_comp_channel(id->recv_cq_channel);
	if (id->send_cq_channel)
		ibv_destroy_comp_channel(id->send_cq_channel);
	id->recv_cq = id->send_cq = NULL;
	id->recv_cq_channel = id->send_cq_channel = NULL;
}

static struct ibv_cq *make_cq(struct rdma_cm_id *id, int size, struct ibv_comp_channel **ch)
{
	*ch = ibv_create_comp_channel(id->verbs);
	if (!*ch)
		return NULL;
	return ibv_create_cq(id->verbs, size > 0 ? size : 1, id, *ch, 0);
}

RCM_EXPORT int rdma_create_qp(struct rdma_cm_id *cm_id, struct ibv_pd *pd,
			      struct ibv_qp_init_attr *attr)
{
	struct rcm_id *id = rcm_id(cm_id);
	struct ibv_qp_attr init = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	};
	struct ibv_qp *qp;
	int own_cqs = 0;

	if (!cm_id || !attr)
		return rcm_err(EINVAL);
	if (!cm_id->verbs || cm_id->qp)
		return rcm_err(EINVAL);
	if (attr->qp_type != IBV_QPT_RC)
		return rcm_err(EOPNOTSUPP);
	if (!pd) {
		pd = rcm_dev_pd(id->dev);
		if (!pd)
			return -1;
	}
	if (pd->context != cm_id->verbs)
		return rcm_err(EINVAL);
	if (!attr->send_cq && !attr->recv_cq) {
		own_cqs = 1;
		cm_id->send_cq = make_cq(cm_id, (int)attr->cap.max_send_wr, &cm_id->send_cq_channel);
		if (!cm_id->send_cq)
			goto err;
		cm_id->recv_cq = make_cq(cm_id, (int)attr->cap.max_recv_wr, &cm_id->recv_cq_channel);
		if (!cm_id->recv_cq)
			goto err;
		attr->send_cq = cm_id->send_cq;
		attr->recv_cq = cm_id->recv_cq;
	} else if (!attr->send_cq || !attr->recv_cq) {
		return rcm_err(EINVAL);
	}
	qp = ibv_create_qp(pd, attr);
	if (!qp)
		goto err;
	/* librdmacm hands out the QP in INIT, so programs post receives
	 * before connecting (rping does); with the access efi_cm would give */
	if (ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS) != 0) {
		int e = errno;

		ibv_destroy_qp(qp);
		errno = e;
		goto err;
	}
	cm_id->qp = qp;
	cm_id->pd = pd;
	return 0;
err:
	if (own_cqs) {
		int e = errno;

		free_cqs(cm_id);
		attr->send_cq = attr->recv_cq = NULL;
		errno = e;
	}
	return -1;
}

RCM_EXPORT void rdma_destroy_qp(struct rdma_cm_id *cm_id)
{
	struct rcm_id *id = rcm_id(cm_id);

	if (!cm_id || !cm_id->qp)
		return;
	/* efi_cm lets a QP go before its connection (libefi/cm.c unbinds
	 * them): the connection and its events stay until rdma_destroy_id,
	 * as with librdmacm */
	(void)id;
	ibv_destroy_qp(cm_id->qp);
	cm_id->qp = NULL;
	free_cqs(cm_id);
}
