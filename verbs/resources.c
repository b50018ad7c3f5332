/* SPDX-License-Identifier: MIT */
/*
 * Protection domains, memory regions, completion channels and completion
 * queues: ibv_* wrappers around the libefi objects.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_int.h"

/* --------------------------------------------------------------------- PD */

EFIV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct efiv_pd *pd;
	int err;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	pd->epd = efi_alloc_pd(efiv_ctx(context)->ectx);
	if (!pd->epd) {
		err = errno;
		free(pd);
		errno = err;
		return NULL;
	}
	pd->ibpd.context = context;
	pd->ibpd.handle = pd->epd->handle;
	efiv_track(efiv_ctx(context), EFIV_PD, &pd->link);
	return &pd->ibpd;
}

EFIV_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	int err;

	if (!pd)
		return EINVAL;
	err = efi_dealloc_pd(efiv_pd(pd)->epd);
	if (err)
		return err;
	efiv_untrack(efiv_ctx(pd->context), &efiv_pd(pd)->link);
	free(pd);
	return 0;
}

/* --------------------------------------------------------------------- MR */

/* The access bits libefi knows; IBV_ACCESS_OPTIONAL_RANGE bits are hints a
 * provider may ignore (libibverbs masks them the same way). */
#define EFIV_ACCESS_KNOWN (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			     uint64_t iova, unsigned int access)
{
	struct efiv_mr *mr;
	int err;

	_Static_assert((int)IBV_ACCESS_LOCAL_WRITE == (int)EFI_ACCESS_LOCAL_WRITE &&
		       (int)IBV_ACCESS_REMOTE_WRITE == (int)EFI_ACCESS_REMOTE_WRITE &&
		       (int)IBV_ACCESS_REMOTE_READ == (int)EFI_ACCESS_REMOTE_READ &&
		       (int)IBV_ACCESS_REMOTE_ATOMIC == (int)EFI_ACCESS_REMOTE_ATOMIC, "access bits");
	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	access &= ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	/* EFI's remote addresses are virtual addresses: an IOVA other than
	 * the buffer's own would need translation libefi does not offer */
	if (iova != (uintptr_t)addr || (access & ~(unsigned int)EFIV_ACCESS_KNOWN)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return NULL;
	mr->emr = efi_reg_mr(efiv_pd(pd)->epd, addr, length, (int)access);
	if (!mr->emr) {
		err = errno;
		free(mr);
		errno = err;
		return NULL;
	}
	mr->ibmr.context = pd->context;
	mr->ibmr.pd = pd;
	mr->ibmr.addr = addr;
	mr->ibmr.length = length;
	mr->ibmr.handle = mr->emr->handle;
	mr->ibmr.lkey = mr->emr->lkey;
	mr->ibmr.rkey = mr->emr->rkey;
	efiv_track(efiv_ctx(pd->context), EFIV_MR, &mr->link);
	return &mr->ibmr;
}

/* The header's ibv_reg_mr macro calls this for constant access flags
 * without optional bits, ibv_reg_mr_iova2 otherwise. */
#undef ibv_reg_mr
EFIV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return reg_mr(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

#undef ibv_reg_mr_iova
EFIV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
					   uint64_t iova, int access)
{
	return reg_mr(pd, addr, length, iova, (unsigned int)access);
}

EFIV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
					    uint64_t iova, unsigned int access)
{
	return reg_mr(pd, addr, length, iova, access);
}

EFIV_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	int err;

	if (!mr)
		return EINVAL;
	err = efi_dereg_mr(efiv_mr(mr)->emr);
	if (err)
		return err;
	efiv_untrack(efiv_ctx(mr->context), &efiv_mr(mr)->link);
	free(mr);
	return 0;
}

/* ----------------------------------------------------- completion channel */

EFIV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct efiv_comp_channel *ch;
	int err;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return NULL;
	ch->ech = efi_create_comp_channel(efiv_ctx(context)->ectx);
	if (!ch->ech) {
		err = errno;
		free(ch);
		errno = err;
		return NULL;
	}
	ch->ibch.context = context;
	ch->ibch.fd = ch->ech->fd;
	efiv_track(efiv_ctx(context), EFIV_CHANNEL, &ch->link);
	return &ch->ibch;
}

EFIV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	int err;

	if (!channel)
		return EINVAL;
	err = efi_destroy_comp_channel(efiv_channel(channel)->ech);
	if (err)
		return err;
	efiv_untrack(efiv_ctx(channel->context), &efiv_channel(channel)->link);
	free(channel);
	return 0;
}

/* --------------------------------------------------------------------- CQ */

EFIV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			       struct ibv_comp_channel *channel, int comp_vector)
{
	struct efiv_cq *cq;
	int err;

	if (!context || (channel && channel->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	/* libefi hands our wrapper back from efi_get_cq_event */
	cq->ecq = efi_create_cq(efiv_ctx(context)->ectx, cqe, cq,
				channel ? efiv_channel(channel)->ech : NULL, comp_vector);
	if (!cq->ecq) {
		err = errno;
		free(cq);
		errno = err;
		return NULL;
	}
	cq->ibcq.context = context;
	cq->ibcq.channel = channel;
	cq->ibcq.cq_context = cq_context;
	cq->ibcq.handle = cq->ecq->handle;
	cq->ibcq.cqe = cq->ecq->cqe;
	pthread_mutex_init(&cq->ibcq.mutex, NULL);
	pthread_cond_init(&cq->ibcq.cond, NULL);
	if (channel)
		channel->refcnt++;
	efiv_track(efiv_ctx(context), EFIV_CQ, &cq->link);
	return &cq->ibcq;
}

EFIV_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	int err;

	if (!cq)
		return EINVAL;
	/* libefi waits for the acknowledgements of the events it delivered */
	err = efi_destroy_cq(efiv_cq(cq)->ecq);
	if (err)
		return err;
	if (cq->channel)
		cq->channel->refcnt--;
	efiv_untrack(efiv_ctx(cq->context), &efiv_cq(cq)->link);
	pthread_cond_destroy(&cq->cond);
	pthread_mutex_destroy(&cq->mutex);
	free(cq);
	return 0;
}

EFIV_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	(void)cqe;
	if (!cq)
		return EINVAL;
	/* libefi's CQ rings are fixed; a provider without resize says so */
	return EOPNOTSUPP;
}

EFIV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct efi_cq *ecq;
	void *wrapper;

	if (!channel || !cq || !cq_context) {
		errno = EINVAL;
		return -1;
	}
	if (efi_get_cq_event(efiv_channel(channel)->ech, &ecq, &wrapper))
		return -1;
	*cq = &((struct efiv_cq *)wrapper)->ibcq;
	*cq_context = (*cq)->cq_context;
	return 0;
}

EFIV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (!cq)
		return;
	efi_ack_cq_events(efiv_cq(cq)->ecq, nevents);
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_mutex_unlock(&cq->mutex);
}
