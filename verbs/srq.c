/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues over libefi's (libefi/srq.c): ibv_create_srq,
 * ibv_create_srq_ex for the basic type, modify/query/destroy, the
 * ibv_context.ops entry the header's inline ibv_post_srq_recv calls, and the
 * SRQ limit event, which libefi reports through a callback and we queue for
 * ibv_get_async_event.
 *
 * libefi's SRQ attributes are laid out as verbs' (asserted below), and its
 * receive WRs too (qp.c), so the data path passes the program's structs
 * through.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_int.h"

#define SAME_FIELD(a, b, f) (offsetof(a, f) == offsetof(b, f) && \
			     sizeof(((a *)0)->f) == sizeof(((b *)0)->f))

_Static_assert(sizeof(struct ibv_srq_attr) == sizeof(struct efi_srq_attr) &&
	       SAME_FIELD(struct ibv_srq_attr, struct efi_srq_attr, max_wr) &&
	       SAME_FIELD(struct ibv_srq_attr, struct efi_srq_attr, max_sge) &&
	       SAME_FIELD(struct ibv_srq_attr, struct efi_srq_attr, srq_limit) &&
	       IBV_SRQ_MAX_WR == (int)EFI_SRQ_MAX_WR && IBV_SRQ_LIMIT == (int)EFI_SRQ_LIMIT,
	       "ibv_srq_attr layout");

/* libefi's limit callback: srq_context is our wrapper. */
static void on_limit(struct efi_srq *esrq, void *srq_context)
{
	(void)esrq;
	efiv_async_srq_limit(srq_context);
}

int efiv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	return efi_post_srq_recv(efiv_srq(srq)->esrq, (struct efi_recv_wr *)wr,
				 (struct efi_recv_wr **)bad_wr);
}

static struct ibv_srq *create(struct ibv_context *context, struct ibv_pd *pd,
			      void *srq_context, struct ibv_srq_attr *attr)
{
	struct efi_srq_init_attr ia;
	struct efiv_srq *srq;
	int err;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	memset(&ia, 0, sizeof(ia));
	ia.srq_context = srq;
	ia.attr.max_wr = attr->max_wr;
	ia.attr.max_sge = attr->max_sge;
	ia.attr.srq_limit = attr->srq_limit;
	ia.limit_event = on_limit;
	/* set before libefi can call on_limit */
	srq->ibsrq.context = context;
	srq->ibsrq.srq_context = srq_context;
	srq->ibsrq.pd = pd;
	pthread_mutex_init(&srq->ibsrq.mutex, NULL);
	pthread_cond_init(&srq->ibsrq.cond, NULL);
	efiv_async_add_srq(efiv_ctx(context), srq);
	srq->esrq = efi_create_srq(efiv_pd(pd)->epd, &ia);
	if (!srq->esrq) {
		err = errno;
		efiv_async_del_srq(efiv_ctx(context), srq, 0);
		pthread_cond_destroy(&srq->ibsrq.cond);
		pthread_mutex_destroy(&srq->ibsrq.mutex);
		free(srq);
		errno = err;
		return NULL;
	}
	/* as allocated, as verbs providers write back */
	attr->max_wr = ia.attr.max_wr;
	attr->max_sge = ia.attr.max_sge;
	efiv_track(efiv_ctx(context), EFIV_SRQ, &srq->link);
	return &srq->ibsrq;
}

EFIV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	return create(pd->context, pd, attr->srq_context, &attr->attr);
}

/* The header sends the basic type with only PD (and TYPE) to ibv_create_srq
 * itself; this takes what else a program may pass for it (a CQ, which a
 * basic SRQ does not use).  XRC and tag-matching SRQs: EOPNOTSUPP. */
struct ibv_srq *efiv_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_CQ;

	if (!context || !attr || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & ~known) ||
	    ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type != IBV_SRQT_BASIC)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return create(context, attr->pd, attr->srq_context, &attr->attr);
}

EFIV_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	if (!srq || !attr)
		return EINVAL;
	return efi_modify_srq(efiv_srq(srq)->esrq, (struct efi_srq_attr *)attr, mask);
}

EFIV_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	if (!srq || !attr)
		return EINVAL;
	return efi_query_srq(efiv_srq(srq)->esrq, (struct efi_srq_attr *)attr);
}

int efiv_destroy_srq_now(struct efiv_srq *srq, int wait_for_acks)
{
	struct efiv_context *c = efiv_ctx(srq->ibsrq.context);
	int err = efi_destroy_srq(srq->esrq);

	if (err)
		return err;	/* EBUSY: QPs still use it; nothing changed */
	efiv_async_del_srq(c, srq, wait_for_acks);
	efiv_untrack(c, &srq->link);
	pthread_cond_destroy(&srq->ibsrq.cond);
	pthread_mutex_destroy(&srq->ibsrq.mutex);
	free(srq);
	return 0;
}

EFIV_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	if (!srq)
		return EINVAL;
	return efiv_destroy_srq_now(efiv_srq(srq), 1);
}
