/* SPDX-License-Identifier: MIT */
/*
 * Completion channels and completion queues.  A CQ is a power-of-two ring
 * of struct efi_wc filled by the transport (under ctx->lock, then cq->lock)
 * and drained by efi_poll_cq (cq->lock only).  A channel is an eventfd in
 * semaphore mode (one count per event, so poll/epoll see it readable while an
 * event is pending) plus a FIFO of the CQs the events belong to.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "efi_int.h"

/* Takes ctx->obj_lock. */
struct efi_comp_channel *efi_create_comp_channel(struct efi_context *context)
{
	struct efi_context_int *ctx = ctx_of(context);
	struct efi_channel_int *ch;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->pub.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (ch->pub.fd < 0) {
		int e = errno;
		free(ch);
		errno = e;
		return NULL;
	}
	ch->pub.context = context;
	pthread_mutex_init(&ch->lock, NULL);
	pthread_mutex_lock(&ctx->obj_lock);
	ctx->nchannel++;
	pthread_mutex_unlock(&ctx->obj_lock);
	return &ch->pub;
}

/* Takes ctx->obj_lock. */
int efi_destroy_comp_channel(struct efi_comp_channel *pub)
{
	struct efi_channel_int *ch = (struct efi_channel_int *)pub;
	struct efi_context_int *ctx;

	if (!ch)
		return 0;
	if (__atomic_load_n(&ch->pub.refcnt, __ATOMIC_ACQUIRE) > 0)
		return EBUSY;
	ctx = ctx_of(ch->pub.context);
	pthread_mutex_lock(&ctx->obj_lock);
	ctx->nchannel--;
	pthread_mutex_unlock(&ctx->obj_lock);
	close(ch->pub.fd);
	pthread_mutex_destroy(&ch->lock);
	free(ch->events);
	free(ch);
	return 0;
}

/* Takes ctx->obj_lock. */
struct efi_cq *efi_create_cq(struct efi_context *context, int cqe, void *cq_context,
			     struct efi_comp_channel *channel, int comp_vector)
{
	struct efi_context_int *ctx = ctx_of(context);
	struct efi_cq_int *cq;
	uint32_t size = 1;

	if (!context || cqe < 1 || (uint32_t)cqe > EFI_MAX_CQE || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors || (channel && channel->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	while (size < (uint32_t)cqe + 1)	/* one slot stays free: full ≠ empty */
		size <<= 1;
	cq = calloc(1, sizeof(*cq));
	if (!cq || !(cq->ring = calloc(size, sizeof(*cq->ring)))) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->mask = size - 1;
	cq->pub.context = context;
	cq->pub.channel = channel;
	cq->pub.cq_context = cq_context;
	cq->pub.cqe = (int)size - 1;
	pthread_mutex_init(&cq->lock, NULL);
	pthread_cond_init(&cq->acked, NULL);
	if (channel)
		__atomic_add_fetch(&channel->refcnt, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_lock(&ctx->obj_lock);
	cq->pub.handle = ++ctx->next_cq_handle;
	ctx->ncq++;
	pthread_mutex_unlock(&ctx->obj_lock);
	return &cq->pub;
}

/* Takes cq->lock (waits for events to be acknowledged), ctx->obj_lock. */
int efi_destroy_cq(struct efi_cq *pub)
{
	struct efi_cq_int *cq = (struct efi_cq_int *)pub;
	struct efi_context_int *ctx;

	if (!cq)
		return 0;
	if (atomic_load(&cq->users) > 0)
		return EBUSY;
	ctx = ctx_of(cq->pub.context);
	if (cq->pub.channel) {
		/* Drop events of this CQ still queued on the channel. */
		struct efi_channel_int *ch = (struct efi_channel_int *)cq->pub.channel;
		pthread_mutex_lock(&ch->lock);
		for (unsigned i = 0; i < ch->ev_count; i++) {
			unsigned k = (ch->ev_head + i) % ch->ev_cap;
			if (ch->events[k] == cq)
				ch->events[k] = NULL;
		}
		pthread_mutex_unlock(&ch->lock);
		/* Every event handed out was counted under ch->lock above. */
		pthread_mutex_lock(&cq->lock);
		while (cq->events_acked < __atomic_load_n(&cq->events_got, __ATOMIC_ACQUIRE))
			pthread_cond_wait(&cq->acked, &cq->lock);
		pthread_mutex_unlock(&cq->lock);
		__atomic_sub_fetch(&cq->pub.channel->refcnt, 1, __ATOMIC_ACQ_REL);
	}
	pthread_mutex_lock(&ctx->obj_lock);
	ctx->ncq--;
	pthread_mutex_unlock(&ctx->obj_lock);
	pthread_cond_destroy(&cq->acked);
	pthread_mutex_destroy(&cq->lock);
	free(cq->ring);
	free(cq);
	return 0;
}

/* Queues an event for cq on its channel (cq->lock held; takes channel->lock).
 * The eventfd write is the one system call of event mode. */
static void channel_post(struct efi_channel_int *ch, struct efi_cq_int *cq)
{
	uint64_t one = 1;

	pthread_mutex_lock(&ch->lock);
	if (ch->ev_count == ch->ev_cap) {
		unsigned ncap = ch->ev_cap ? ch->ev_cap * 2 : 16;
		struct efi_cq_int **n = malloc(ncap * sizeof(*n));
		if (!n) {
			pthread_mutex_unlock(&ch->lock);
			return;
		}
		for (unsigned i = 0; i < ch->ev_count; i++)
			n[i] = ch->events[(ch->ev_head + i) % ch->ev_cap];
		free(ch->events);
		ch->events = n;
		ch->ev_cap = ncap;
		ch->ev_head = 0;
	}
	ch->events[(ch->ev_head + ch->ev_count) % ch->ev_cap] = cq;
	ch->ev_count++;
	pthread_mutex_unlock(&ch->lock);
	if (write(ch->pub.fd, &one, sizeof(one)) < 0) {
		/* The counter cannot overflow with one count per event. */
	}
}

void efi_cq_push(struct efi_cq_int *cq, const struct efi_wc *wc, bool solicited)
{
	pthread_mutex_lock(&cq->lock);
	if (((cq->tail + 1) & cq->mask) == (cq->head & cq->mask)) {
		/* never silent: a lost completion leaves its consumer waiting
		 * forever (a hang, not an error); the transport fails the
		 * CQ's QPs and efi_poll_cq reports it */
		cq->overflows++;
		atomic_store_explicit(&cq->overflowed, true, memory_order_relaxed);
		atomic_store_explicit(&ctx_of(cq->pub.context)->cq_lost_any, true, memory_order_relaxed);
	} else {
		cq->ring[cq->tail & cq->mask] = *wc;
		cq->tail = (cq->tail + 1) & cq->mask;
	}
	if (cq->armed && cq->pub.channel &&
	    (cq->armed == 1 || solicited || wc->status != EFI_WC_SUCCESS)) {
		cq->armed = 0;
		channel_post((struct efi_channel_int *)cq->pub.channel, cq);
	}
	pthread_mutex_unlock(&cq->lock);
}

/* Runs the transport if no other thread is (trylock ctx->lock), then takes
 * cq->lock to drain the ring. */
int efi_poll_cq(struct efi_cq *pub, int num_entries, struct efi_wc *wc)
{
	struct efi_cq_int *cq = (struct efi_cq_int *)pub;
	struct efi_context_int *ctx;
	int n = 0;

	if (!cq || num_entries < 0 || (!wc && num_entries > 0))
		return -EINVAL;
	ctx = ctx_of(cq->pub.context);
	if (pthread_mutex_trylock(&ctx->lock) == 0) {
		uint64_t ran_at;

		ctx->in_app_poll = true;
		efi_xport_run_clock(ctx, &ran_at);
		ctx->in_app_poll = false;
		/* the run's own clock read, when it made one */
		atomic_store_explicit(&ctx->app_active_ns, ran_at ? ran_at : efi_now_ns(),
				      memory_order_relaxed);
		pthread_mutex_unlock(&ctx->lock);
	}
	pthread_mutex_lock(&cq->lock);
	while (n < num_entries && cq->head != cq->tail) {
		wc[n++] = cq->ring[cq->head];
		cq->head = (cq->head + 1) & cq->mask;
	}
	pthread_mutex_unlock(&cq->lock);
	/* what the ring held first, then the error, for good */
	if (!n && num_entries && atomic_load_explicit(&cq->overflowed, memory_order_relaxed))
		return -EOVERFLOW;
	return n;
}

/* Takes cq->lock. */
int efi_req_notify_cq(struct efi_cq *pub, int solicited_only)
{
	struct efi_cq_int *cq = (struct efi_cq_int *)pub;

	if (!cq || !cq->pub.channel)
		return EINVAL;
	pthread_mutex_lock(&cq->lock);
	/* Arming for "any" wins over an earlier "solicited only". */
	if (!solicited_only || cq->armed == 0)
		cq->armed = solicited_only ? 2 : 1;
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

/* Blocks in read(2) on the eventfd (unless O_NONBLOCK), then takes
 * channel->lock to pop the event. */
int efi_get_cq_event(struct efi_comp_channel *pub, struct efi_cq **cq_out, void **cq_context)
{
	struct efi_channel_int *ch = (struct efi_channel_int *)pub;
	struct efi_cq_int *cq = NULL;
	uint64_t v;

	if (!ch || !cq_out || !cq_context) {
		errno = EINVAL;
		return -1;
	}
	efi_progress_kick(ctx_of(ch->pub.context));
	while (!cq) {
		if (read(ch->pub.fd, &v, sizeof(v)) != sizeof(v))
			return -1;	/* errno from read: EAGAIN, EINTR */
		pthread_mutex_lock(&ch->lock);
		if (ch->ev_count) {
			cq = ch->events[ch->ev_head];
			ch->ev_head = (ch->ev_head + 1) % ch->ev_cap;
			ch->ev_count--;
			if (cq)	/* counted here, so efi_destroy_cq waits for its ack */
				__atomic_add_fetch(&cq->events_got, 1, __ATOMIC_ACQ_REL);
		}
		pthread_mutex_unlock(&ch->lock);
		/* A NULL entry belonged to a destroyed CQ: wait for the next. */
	}
	*cq_out = &cq->pub;
	*cq_context = cq->pub.cq_context;
	return 0;
}

/* Takes cq->lock. */
void efi_ack_cq_events(struct efi_cq *pub, unsigned int nevents)
{
	struct efi_cq_int *cq = (struct efi_cq_int *)pub;

	if (!cq)
		return;
	pthread_mutex_lock(&cq->lock);
	cq->events_acked += nevents;
	pthread_cond_broadcast(&cq->acked);
	pthread_mutex_unlock(&cq->lock);
}
