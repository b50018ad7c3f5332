/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues: one ring of receive WQEs that the QPs created with
 * it take from, one WQE per message that needs one (responder.c asks through
 * efi_srq_take), plus the SRQ limit event.  UCX's rc transport and perftest's
 * --use-srq receive this way.
 *
 * The ring lives under ctx->lock, as a QP's receive queue does: posting takes
 * the lock, the responder takes WQEs with it held.  An empty SRQ makes the QP
 * answer with an RNR NAK, as hardware does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "efi_int.h"

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;
	while (p < n)
		p <<= 1;
	return p;
}

/* WQEs posted and not taken (ctx->lock held). */
static uint32_t srq_count(const struct efi_srq_int *srq)
{
	return (srq->tail - srq->head) & srq->mask;
}

static void ring_free(struct efi_rwqe *rq, uint32_t slots)
{
	if (rq)
		for (uint32_t i = 0; i < slots; i++)
			free(rq[i].sge);
	free(rq);
}

/* A ring of slots WQEs with max_sge SGEs each, or NULL (no lock: not shared
 * yet). */
static struct efi_rwqe *ring_alloc(uint32_t slots, uint32_t max_sge)
{
	struct efi_rwqe *rq = calloc(slots, sizeof(*rq));

	if (!rq)
		return NULL;
	for (uint32_t i = 0; i < slots; i++) {
		if (!(rq[i].sge = calloc(max_sge, sizeof(struct efi_sge_int)))) {
			ring_free(rq, slots);
			return NULL;
		}
	}
	return rq;
}

/* No lock: the SRQ is not shared until it is returned. */
struct efi_srq *efi_create_srq(struct efi_pd *pd, struct efi_srq_init_attr *ia)
{
	struct efi_srq_int *srq;
	uint32_t max_wr, max_sge;

	if (!pd || !ia || ia->attr.max_wr == 0 || ia->attr.max_wr > EFI_MAX_QP_WR ||
	    ia->attr.max_sge > EFI_MAX_SGE || ia->attr.srq_limit > ia->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	max_wr = pow2_at_least(ia->attr.max_wr);
	max_sge = ia->attr.max_sge ? ia->attr.max_sge : 1;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		goto nomem;
	/* one slot more than max_wr: a ring keeps one free to tell full from empty */
	srq->rq = ring_alloc(max_wr * 2, max_sge);
	if (!srq->rq)
		goto nomem;
	srq->mask = max_wr * 2 - 1;
	srq->max_wr = max_wr;
	srq->max_sge = max_sge;
	srq->limit = ia->attr.srq_limit;
	srq->limit_event = ia->limit_event;
	srq->ctx = ctx_of(pd->context);
	srq->pub.context = pd->context;
	srq->pub.srq_context = ia->srq_context;
	srq->pub.pd = pd;
	srq->pub.handle = (uint32_t)(uintptr_t)srq;
	atomic_fetch_add(&((struct efi_pd_int *)pd)->users, 1);
	ia->attr.max_wr = max_wr;
	ia->attr.max_sge = max_sge;
	return &srq->pub;
nomem:
	free(srq);
	errno = ENOMEM;
	return NULL;
}

/* No lock: with no QP created with it, nothing but the caller reaches it. */
int efi_destroy_srq(struct efi_srq *pub)
{
	struct efi_srq_int *srq = srq_of(pub);

	if (!srq)
		return 0;
	if (atomic_load(&srq->users) > 0)
		return EBUSY;
	atomic_fetch_sub(&((struct efi_pd_int *)srq->pub.pd)->users, 1);
	ring_free(srq->rq, srq->mask + 1);
	free(srq);
	return 0;
}

/* Takes ctx->lock: the ring is replaced under it. */
int efi_modify_srq(struct efi_srq *pub, struct efi_srq_attr *attr, int mask)
{
	struct efi_srq_int *srq = srq_of(pub);
	struct efi_rwqe *rq = NULL, *old;
	uint32_t max_wr = 0, n, rq_slots = 0, old_slots;
	int err = 0;

	if (!srq || !attr || (mask & ~(EFI_SRQ_MAX_WR | EFI_SRQ_LIMIT)))
		return EINVAL;
	if (mask & EFI_SRQ_MAX_WR) {
		if (attr->max_wr == 0 || attr->max_wr > EFI_MAX_QP_WR)
			return EINVAL;
		max_wr = pow2_at_least(attr->max_wr);
		/* allocated outside the lock: the transport never waits for malloc */
		rq_slots = max_wr * 2;
		if (!(rq = ring_alloc(rq_slots, srq->max_sge)))
			return ENOMEM;
	}
	pthread_mutex_lock(&srq->ctx->lock);
	n = srq_count(srq);
	if ((mask & EFI_SRQ_MAX_WR) && attr->max_wr < n)
		err = EINVAL;
	else if ((mask & EFI_SRQ_LIMIT) &&
		 attr->srq_limit > ((mask & EFI_SRQ_MAX_WR) ? max_wr : srq->max_wr))
		err = EINVAL;
	if (err || !(mask & EFI_SRQ_MAX_WR))
		goto out;
	/* move the posted WQEs, oldest first, by swapping SGE arrays (both
	 * rings have max_sge SGEs per WQE) */
	for (uint32_t i = 0; i < n; i++) {
		struct efi_rwqe *from = &srq->rq[(srq->head + i) & srq->mask];
		struct efi_sge_int *sge = rq[i].sge;

		rq[i] = *from;
		from->sge = sge;
	}
	old = srq->rq;
	srq->rq = rq;
	rq = old;			/* the old ring is freed below */
	old_slots = srq->mask + 1;
	srq->mask = rq_slots - 1;
	rq_slots = old_slots;
	srq->head = 0;
	srq->tail = n;
	srq->max_wr = max_wr;
out:
	if (!err && (mask & EFI_SRQ_LIMIT))
		srq->limit = attr->srq_limit;
	pthread_mutex_unlock(&srq->ctx->lock);
	ring_free(rq, rq_slots);	/* the new one unused, or the old one */
	return err;
}

/* Takes ctx->lock. */
int efi_query_srq(struct efi_srq *pub, struct efi_srq_attr *attr)
{
	struct efi_srq_int *srq = srq_of(pub);

	if (!srq || !attr)
		return EINVAL;
	pthread_mutex_lock(&srq->ctx->lock);
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	pthread_mutex_unlock(&srq->ctx->lock);
	return 0;
}

/* Takes ctx->lock. */
int efi_post_srq_recv(struct efi_srq *pub, struct efi_recv_wr *wr, struct efi_recv_wr **bad_wr)
{
	struct efi_srq_int *srq = srq_of(pub);
	struct efi_context_int *ctx;
	int err = 0;

	if (!srq || !bad_wr) {
		if (bad_wr)
			*bad_wr = wr;
		return EINVAL;
	}
	ctx = srq->ctx;
	pthread_mutex_lock(&ctx->lock);
	for (; wr; wr = wr->next) {
		struct efi_rwqe *r;
		uint64_t len = 0;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > srq->max_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			err = EINVAL;
			break;
		}
		/* max_wr posted at most, whatever room the ring has */
		if (srq_count(srq) >= srq->max_wr) {
			err = ENOMEM;
			break;
		}
		r = &srq->rq[srq->tail];
		r->wr_id = wr->wr_id;
		r->num_sge = (uint32_t)wr->num_sge;
		r->bad = false;
		for (int i = 0; i < wr->num_sge; i++) {
			const struct efi_sge *s = &wr->sg_list[i];
			if (!efi_mr_check(ctx, s->lkey, srq->pub.pd, s->addr, s->length,
					  EFI_ACCESS_LOCAL_WRITE))
				r->bad = true;
			r->sge[i].addr = (uint8_t *)(uintptr_t)s->addr;
			r->sge[i].length = s->length;
			len += s->length;
		}
		r->length = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
		srq->tail = (srq->tail + 1) & srq->mask;
	}
	if (err)
		*bad_wr = wr;
	pthread_mutex_unlock(&ctx->lock);
	return err;
}

bool efi_srq_take(struct efi_srq_int *srq, struct efi_rwqe *into)
{
	struct efi_rwqe *r;

	if (srq->head == srq->tail)
		return false;
	r = &srq->rq[srq->head];
	into->wr_id = r->wr_id;
	into->num_sge = r->num_sge;
	into->length = r->length;
	into->bad = r->bad;
	memcpy(into->sge, r->sge, r->num_sge * sizeof(*r->sge));
	srq->head = (srq->head + 1) & srq->mask;
	if (srq->limit && srq_count(srq) < srq->limit) {
		/* verbs: the event disarms the SRQ; the program re-arms it */
		srq->limit = 0;
		if (srq->limit_event)
			srq->limit_event(&srq->pub, srq->pub.srq_context);
	}
	return true;
}
