/* SPDX-License-Identifier: MIT */
/*
 * RDMA_CM_EVENT_TIMEWAIT_EXIT.  The kernel's CM keeps a connection's QP in
 * timewait after it ends (DISCONNECTED), so that late packets of the old
 * connection cannot reach a new one, and tells the id when that is over;
 * some programs wait for it before they destroy the QP.  EFI's QPs need no
 * timewait (efid's connection manager lingers on the connection itself), but
 * a program waiting for the event must get it: it comes RCM_TIMEWAIT_MS
 * after DISCONNECTED, a time of the order the kernel takes on RoCE, so a
 * program that destroys its id at DISCONNECTED (most do) never sees it, as
 * with the kernel.
 *
 * One timerfd per channel, in the channel's epoll set (data.ptr NULL, as
 * the eventfd's): it fires at the earliest deadline of the ids waiting, and
 * collect() queues what is due.
 */
#include "config.h"

#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "rdmacm/rdmacm_int.h"

#define RCM_TIMEWAIT_MS 1000

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int rcm_timewait_init(struct rcm_channel *ch)
{
	struct epoll_event ee = { .events = EPOLLIN, .data.ptr = NULL };

	ch->twfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (ch->twfd < 0)
		return -errno;
	if (epoll_ctl(ch->ch.fd, EPOLL_CTL_ADD, ch->twfd, &ee) != 0) {
		int e = errno;

		close(ch->twfd);
		ch->twfd = -1;
		return -e;
	}
	return 0;
}

/* Arms the timer for the earliest deadline, or disarms it (lock held). */
static void arm(struct rcm_channel *ch)
{
	struct itimerspec its;
	uint64_t at = 0;
	struct rcm_id *id;

	memset(&its, 0, sizeof(its));
	for (id = ch->tw_head; id; id = id->tw_next)
		if (!at || id->timewait_at_ms < at)
			at = id->timewait_at_ms;
	if (at) {
		its.it_value.tv_sec = (time_t)(at / 1000);
		its.it_value.tv_nsec = (long)(at % 1000) * 1000000L;
	}
	timerfd_settime(ch->twfd, TFD_TIMER_ABSTIME, &its, NULL);
}

void rcm_timewait_start(struct rcm_id *id)
{
	struct rcm_channel *ch = id->ch;

	if (id->tw_pending || ch->twfd < 0)
		return;
	id->timewait_at_ms = now_ms() + RCM_TIMEWAIT_MS;
	id->tw_next = ch->tw_head;
	ch->tw_head = id;
	id->tw_pending = 1;
	arm(ch);
}

void rcm_timewait_cancel(struct rcm_id *id)
{
	struct rcm_channel *ch = id->ch;
	struct rcm_id **pp;

	if (!id->tw_pending)
		return;
	for (pp = &ch->tw_head; *pp; pp = &(*pp)->tw_next)
		if (*pp == id) {
			*pp = id->tw_next;
			break;
		}
	id->tw_pending = 0;
	arm(ch);
}

void rcm_timewait_expire(struct rcm_channel *ch)
{
	uint64_t now, cnt;
	struct rcm_id **pp, *id;
	int changed = 0;

	if (!ch->tw_head)
		return;
	/* the timer's count says nothing the deadlines do not: clear it */
	if (read(ch->twfd, &cnt, sizeof(cnt)) != sizeof(cnt))
		(void)0;
	now = now_ms();
	for (pp = &ch->tw_head; (id = *pp);) {
		struct rcm_event *e;

		if (id->timewait_at_ms > now) {
			pp = &id->tw_next;
			continue;
		}
		*pp = id->tw_next;
		id->tw_pending = 0;
		changed = 1;
		e = rcm_event_new(id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
		if (e)
			rcm_queue(ch, e);
	}
	if (changed)
		arm(ch);
}
