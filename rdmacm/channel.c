/* SPDX-License-Identifier: MIT */
/*
 * Event channels: rdma_create_event_channel, rdma_get_cm_event,
 * rdma_ack_cm_event (rdmacm_int.h says how the fd works).
 */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rdmacm/rdmacm_int.h"

RCM_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct epoll_event ee = { .events = EPOLLIN, .data.ptr = NULL };
	struct rcm_channel *ch;
	struct rcm_dev *d;
	int e;

	/* librdmacm fails here when there is no RDMA device: so do we */
	if (rcm_devices(&d) < 0)
		return NULL;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return NULL;
	ch->ch.fd = epoll_create1(EPOLL_CLOEXEC);
	if (ch->ch.fd < 0)
		goto err_free;
	ch->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ch->evfd < 0)
		goto err_epoll;
	if (epoll_ctl(ch->ch.fd, EPOLL_CTL_ADD, ch->evfd, &ee) != 0)
		goto err_evfd;
	e = rcm_timewait_init(ch);
	if (e != 0) {
		errno = -e;
		goto err_evfd;
	}
	pthread_mutex_init(&ch->lock, NULL);
	pthread_cond_init(&ch->acked, NULL);
	return &ch->ch;

err_evfd:
	e = errno;
	close(ch->evfd);
	errno = e;
err_epoll:
	e = errno;
	close(ch->ch.fd);
	errno = e;
err_free:
	free(ch);
	return NULL;
}

RCM_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct rcm_channel *ch = rcm_channel(channel);
	struct rcm_event *e;

	if (!channel)
		return;
	/* librdmacm requires every id of the channel destroyed first; events
	 * still queued belong to nobody now */
	while ((e = ch->head)) {
		ch->head = e->next;
		free(e);
	}
	pthread_cond_destroy(&ch->acked);
	pthread_mutex_destroy(&ch->lock);
	close(ch->twfd);
	close(ch->evfd);
	close(ch->ch.fd);
	free(ch);
}

struct rcm_event *rcm_event_new(struct rcm_id *id, enum rdma_cm_event_type type, int status)
{
	struct rcm_event *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->ev.id = &id->id;
	e->ev.event = type;
	e->ev.status = status;
	e->owner = id;
	return e;
}

void rcm_queue(struct rcm_channel *ch, struct rcm_event *e)
{
	uint64_t one = 1;

	e->next = NULL;
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	/* the eventfd counts at most 2^64-2: never blocks at this rate */
	if (write(ch->evfd, &one, sizeof(one)) != sizeof(one))
		(void)0;
}

static struct rcm_event *dequeue(struct rcm_channel *ch)
{
	struct rcm_event *e = ch->head;
	uint64_t cnt;

	if (!e)
		return NULL;
	ch->head = e->next;
	if (!ch->head) {
		ch->tail = NULL;
		/* empty: the fd stops being readable (unless an efi_cm fd is) */
		if (read(ch->evfd, &cnt, sizeof(cnt)) != sizeof(cnt))
			(void)0;
	}
	return e;
}

int rcm_watch(struct rcm_id *id, struct efi_cm_id *eid, int dev)
{
	struct rcm_src *s = &id->src[id->nsrc];
	struct epoll_event ee = { .events = EPOLLIN };
	int fd = efi_cm_get_fd(eid);

	if (id->nsrc >= RCM_MAX_DEVS || fd < 0)
		return -EINVAL;
	s->owner = id;
	s->eid = eid;
	s->dev = dev;
	ee.data.ptr = s;
	if (epoll_ctl(id->ch->ch.fd, EPOLL_CTL_ADD, fd, &ee) != 0)
		return -errno;
	id->nsrc++;
	return 0;
}

void rcm_unwatch_all(struct rcm_id *id)
{
	while (id->nsrc > 0) {
		struct rcm_src *s = &id->src[--id->nsrc];

		epoll_ctl(id->ch->ch.fd, EPOLL_CTL_DEL, efi_cm_get_fd(s->eid), NULL);
		efi_cm_destroy_id(s->eid);
		s->eid = NULL;
	}
}

/* Takes what the efi_cm ids of the channel have into the queue (lock
 * held).  The epoll data pointers are used only here, under the lock that
 * destroy takes to remove them, so none is stale. */
static void collect(struct rcm_channel *ch)
{
	struct epoll_event ee[16];
	int n, i, pass;

	rcm_timewait_expire(ch);
	n = epoll_wait(ch->ch.fd, ee, 16, 0);
	/* connections first, then listeners: a client's next request must
	 * not overtake the ESTABLISHED or DISCONNECTED of its last connection
	 * when both wait (the kernel delivers them in that order) */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < n; i++) {
			struct rcm_src *s = ee[i].data.ptr;
			struct efi_cm_event ev;

			if (!s || (s->owner->state == RCM_LISTEN) != pass)
				continue;	/* NULL: the eventfd or the timewait
						 * timer; the queue says it all */
			while (s->eid && efi_cm_get_event(s->eid, &ev, 0) == 0)
				rcm_translate(s, &ev);
		}
	}
}

RCM_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct rcm_channel *ch = rcm_channel(channel);
	struct rcm_event *e;
	struct pollfd pfd;

	if (!channel || !event)
		return rcm_err(EINVAL);
	for (;;) {
		pthread_mutex_lock(&ch->lock);
		collect(ch);
		e = dequeue(ch);
		if (e)
			e->owner->events_out++;
		pthread_mutex_unlock(&ch->lock);
		if (e) {
			*event = &e->ev;
			return 0;
		}
		/* the program may have made the fd non-blocking, as it may
		 * with librdmacm's */
		if (fcntl(ch->ch.fd, F_GETFL) & O_NONBLOCK)
			return rcm_err(EAGAIN);
		pfd.fd = ch->ch.fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return -1;
	}
}

RCM_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct rcm_event *e = (struct rcm_event *)event;
	struct rcm_channel *ch;

	if (!event)
		return rcm_err(EINVAL);
	ch = e->owner->ch;
	pthread_mutex_lock(&ch->lock);
	e->owner->events_out--;
	pthread_cond_broadcast(&ch->acked);
	pthread_mutex_unlock(&ch->lock);
	free(e);
	return 0;
}
