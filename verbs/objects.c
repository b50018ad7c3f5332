/* SPDX-License-Identifier: MIT */
/*
 * The objects of each open context, kept in lists so that ibv_close_device
 * can release whatever the program did not destroy first.  libefi refuses to
 * close a context with objects (EBUSY); the kernel's uverbs, which verbs
 * programs are written against, releases them when the device file is
 * closed, and programs (perftest among them) rely on that.
 */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>

#include "verbs_int.h"

#define CONTAINER(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

void efiv_objs_init(struct efiv_context *c)
{
	pthread_mutex_init(&c->obj_lock, NULL);
	for (int k = 0; k < EFIV_KINDS; k++)
		c->objs[k].prev = c->objs[k].next = &c->objs[k];
}

void efiv_track(struct efiv_context *c, enum efiv_kind kind, struct efiv_link *l)
{
	struct efiv_link *head = &c->objs[kind];

	pthread_mutex_lock(&c->obj_lock);
	l->next = head;
	l->prev = head->prev;
	head->prev->next = l;
	head->prev = l;
	pthread_mutex_unlock(&c->obj_lock);
}

void efiv_untrack(struct efiv_context *c, struct efiv_link *l)
{
	pthread_mutex_lock(&c->obj_lock);
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = l;
	pthread_mutex_unlock(&c->obj_lock);
}

/* The first object of a kind, or NULL. */
static struct efiv_link *first(struct efiv_context *c, enum efiv_kind kind)
{
	struct efiv_link *l;

	pthread_mutex_lock(&c->obj_lock);
	l = c->objs[kind].next == &c->objs[kind] ? NULL : c->objs[kind].next;
	pthread_mutex_unlock(&c->obj_lock);
	return l;
}

void efiv_release_all(struct efiv_context *c)
{
	struct efiv_link *l;

	/* dependents first: QPs use SRQs, CQs and PDs, SRQs and MRs use PDs,
	 * CQs channels.
	 * A program closing its device has given up on its events: QPs are
	 * not held for unacknowledged ones. */
	while ((l = first(c, EFIV_QP)))
		efiv_destroy_qp_now(CONTAINER(l, struct efiv_qp, link), 0);
	while ((l = first(c, EFIV_AH)))
		efiv_destroy_ah_now(CONTAINER(l, struct efiv_ah, link));
	/* no QP left, so no SRQ is busy */
	while ((l = first(c, EFIV_SRQ)))
		if (efiv_destroy_srq_now(CONTAINER(l, struct efiv_srq, link), 0))
			break;
	while ((l = first(c, EFIV_MR))) {
		struct efiv_mr *mr = CONTAINER(l, struct efiv_mr, link);

		efiv_untrack(c, l);
		efi_dereg_mr(mr->emr);
		free(mr);
	}
	while ((l = first(c, EFIV_PD))) {
		struct efiv_pd *pd = CONTAINER(l, struct efiv_pd, link);

		efiv_untrack(c, l);
		efi_dealloc_pd(pd->epd);
		free(pd);
	}
	while ((l = first(c, EFIV_CQ))) {
		struct efiv_cq *cq = CONTAINER(l, struct efiv_cq, link);

		efiv_untrack(c, l);
		efi_destroy_cq(cq->ecq);
		pthread_cond_destroy(&cq->ibcq.cond);
		pthread_mutex_destroy(&cq->ibcq.mutex);
		free(cq);
	}
	while ((l = first(c, EFIV_CHANNEL))) {
		struct efiv_comp_channel *ch = CONTAINER(l, struct efiv_comp_channel, link);

		efiv_untrack(c, l);
		efi_destroy_comp_channel(ch->ech);
		free(ch);
	}
}
