/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous events.  libefi has no async event queue of its own, so the
 * verbs layer makes the events it can observe: IBV_EVENT_QP_FATAL when a
 * QP's work completes with a transport error (retries exhausted, remote
 * errors: the QP is then in the error state) and IBV_EVENT_PORT_ERR when a
 * libefi call reports the interface gone (ENODEV); libefi itself reports one,
 * the SRQ limit (IBV_EVENT_SRQ_LIMIT_REACHED), through a callback.
 *
 * The queue is a pipe: async_fd is its read end, so programs can poll it and
 * make it non-blocking with fcntl as they do with the kernel's.  Records name
 * QPs by number, not pointer, and are resolved when read, so an event queued
 * for a QP destroyed since is dropped instead of handing out a dangling
 * pointer (the kernel drops those too).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "verbs_int.h"

struct async_record {
	enum ibv_event_type type;
	uint32_t qp_num;	/* QP events; SRQ events: the SRQ's handle */
	int port_num;		/* port events */
};

int efiv_async_init(struct efiv_context *c)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC))
		return errno;
	/* posting must never block the data path */
	if (fcntl(fds[1], F_SETFL, O_NONBLOCK)) {
		int err = errno;

		close(fds[0]);
		close(fds[1]);
		return err;
	}
	c->vctx.context.async_fd = fds[0];
	c->async.wfd = fds[1];
	pthread_mutex_init(&c->async.lock, NULL);
	return 0;
}

void efiv_async_fini(struct efiv_context *c)
{
	close(c->vctx.context.async_fd);
	close(c->async.wfd);
	pthread_mutex_destroy(&c->async.lock);
}

static void post(struct efiv_context *c, const struct async_record *r)
{
	ssize_t n;

	do
		n = write(c->async.wfd, r, sizeof(*r));
	while (n < 0 && errno == EINTR);
	/* a full pipe (EAGAIN): nobody reads events; dropping one is fine */
}

void efiv_async_post(struct efiv_context *c, const struct ibv_async_event *ev)
{
	struct async_record r = { .type = ev->event_type };

	switch (ev->event_type) {
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_GID_CHANGE:
	case IBV_EVENT_DEVICE_FATAL:
		r.port_num = ev->element.port_num;
		break;
	default:
		r.qp_num = ev->element.qp ? ev->element.qp->qp_num : 0;
		break;
	}
	post(c, &r);
}

void efiv_async_port_error(struct efiv_context *c)
{
	struct async_record r = { .type = IBV_EVENT_PORT_ERR, .port_num = 1 };
	int first;

	pthread_mutex_lock(&c->async.lock);
	first = !c->async.port_error_sent;
	c->async.port_error_sent = 1;
	pthread_mutex_unlock(&c->async.lock);
	if (first)
		post(c, &r);
}

void efiv_async_qp_fatal(struct efiv_qp *qp)
{
	struct efiv_context *c = efiv_ctx(qp->ibqp.context);
	struct async_record r = { .type = IBV_EVENT_QP_FATAL, .qp_num = qp->ibqp.qp_num };
	int first;

	pthread_mutex_lock(&c->async.lock);
	first = !qp->fatal_sent;
	qp->fatal_sent = 1;
	pthread_mutex_unlock(&c->async.lock);
	if (first)
		post(c, &r);
	/* in ERR now: it takes nothing more from its SRQ */
	efiv_async_last_wqe(qp);
}

void efiv_async_last_wqe(struct efiv_qp *qp)
{
	struct efiv_context *c = efiv_ctx(qp->ibqp.context);
	struct async_record r = { .type = IBV_EVENT_QP_LAST_WQE_REACHED, .qp_num = qp->ibqp.qp_num };
	int first;

	if (!qp->ibqp.srq)
		return;
	pthread_mutex_lock(&c->async.lock);
	first = !qp->last_wqe_sent;
	qp->last_wqe_sent = 1;
	pthread_mutex_unlock(&c->async.lock);
	if (first)
		post(c, &r);
}

/* Runs inside libefi's transport with its lock held: no libefi call, only
 * the pipe.  The SRQ cannot go away meanwhile (a QP receiving from it keeps
 * ibv_destroy_srq at EBUSY), and the record names it by handle, resolved
 * when read. */
void efiv_async_srq_limit(struct efiv_srq *srq)
{
	struct async_record r = { .type = IBV_EVENT_SRQ_LIMIT_REACHED, .qp_num = srq->ibsrq.handle };

	post(efiv_ctx(srq->ibsrq.context), &r);
}

void efiv_async_add_srq(struct efiv_context *c, struct efiv_srq *srq)
{
	pthread_mutex_lock(&c->async.lock);
	srq->ibsrq.handle = ++c->async.next_srq_handle;
	srq->next = c->async.srqs;
	c->async.srqs = srq;
	pthread_mutex_unlock(&c->async.lock);
}

void efiv_async_del_srq(struct efiv_context *c, struct efiv_srq *srq, int wait_for_acks)
{
	struct efiv_srq **p;

	pthread_mutex_lock(&srq->ibsrq.mutex);
	while (wait_for_acks && srq->ibsrq.events_completed != srq->async_events)
		pthread_cond_wait(&srq->ibsrq.cond, &srq->ibsrq.mutex);
	pthread_mutex_unlock(&srq->ibsrq.mutex);
	pthread_mutex_lock(&c->async.lock);
	for (p = &c->async.srqs; *p; p = &(*p)->next) {
		if (*p == srq) {
			*p = srq->next;
			break;
		}
	}
	pthread_mutex_unlock(&c->async.lock);
}

/* The live SRQ with this handle, its delivered count raised; NULL if gone. */
static struct efiv_srq *take_srq(struct efiv_context *c, uint32_t handle)
{
	struct efiv_srq *srq;

	pthread_mutex_lock(&c->async.lock);
	for (srq = c->async.srqs; srq; srq = srq->next)
		if (srq->ibsrq.handle == handle)
			break;
	if (srq) {
		pthread_mutex_lock(&srq->ibsrq.mutex);
		srq->async_events++;
		pthread_mutex_unlock(&srq->ibsrq.mutex);
	}
	pthread_mutex_unlock(&c->async.lock);
	return srq;
}

void efiv_async_add_qp(struct efiv_context *c, struct efiv_qp *qp)
{
	pthread_mutex_lock(&c->async.lock);
	qp->next = c->async.qps;
	c->async.qps = qp;
	pthread_mutex_unlock(&c->async.lock);
}

void efiv_async_del_qp(struct efiv_context *c, struct efiv_qp *qp, int wait_for_acks)
{
	struct efiv_qp **p;

	pthread_mutex_lock(&qp->ibqp.mutex);
	while (wait_for_acks && qp->ibqp.events_completed != qp->async_events)
		pthread_cond_wait(&qp->ibqp.cond, &qp->ibqp.mutex);
	pthread_mutex_unlock(&qp->ibqp.mutex);
	pthread_mutex_lock(&c->async.lock);
	for (p = &c->async.qps; *p; p = &(*p)->next) {
		if (*p == qp) {
			*p = qp->next;
			break;
		}
	}
	pthread_mutex_unlock(&c->async.lock);
}

/* The live QP with this number, its delivered count raised; NULL if gone. */
static struct efiv_qp *take_qp(struct efiv_context *c, uint32_t qp_num)
{
	struct efiv_qp *qp;

	pthread_mutex_lock(&c->async.lock);
	for (qp = c->async.qps; qp; qp = qp->next)
		if (qp->ibqp.qp_num == qp_num)
			break;
	if (qp) {
		pthread_mutex_lock(&qp->ibqp.mutex);
		qp->async_events++;
		pthread_mutex_unlock(&qp->ibqp.mutex);
	}
	pthread_mutex_unlock(&c->async.lock);
	return qp;
}

EFIV_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct efiv_context *c;
	struct async_record r;
	struct efiv_srq *srq;
	struct efiv_qp *qp;
	ssize_t n;

	if (!context || !event) {
		errno = EINVAL;
		return -1;
	}
	c = efiv_ctx(context);
	for (;;) {
		n = read(context->async_fd, &r, sizeof(r));
		if (n < 0)
			return -1;	/* errno: EAGAIN when non-blocking, EINTR */
		if (n != (ssize_t)sizeof(r)) {
			errno = EIO;
			return -1;
		}
		memset(event, 0, sizeof(*event));
		event->event_type = r.type;
		if (r.type == IBV_EVENT_PORT_ERR || r.type == IBV_EVENT_PORT_ACTIVE ||
		    r.type == IBV_EVENT_GID_CHANGE || r.type == IBV_EVENT_DEVICE_FATAL) {
			event->element.port_num = r.port_num;
			return 0;
		}
		if (r.type == IBV_EVENT_SRQ_LIMIT_REACHED || r.type == IBV_EVENT_SRQ_ERR) {
			srq = take_srq(c, r.qp_num);
			if (!srq)
				continue;	/* destroyed since */
			event->element.srq = &srq->ibsrq;
			return 0;
		}
		qp = take_qp(c, r.qp_num);
		if (!qp)
			continue;	/* destroyed since: the event died with it */
		event->element.qp = &qp->ibqp;
		return 0;
	}
}

EFIV_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	struct ibv_srq *srq;
	struct ibv_qp *qp;

	if (!event)
		return;
	switch (event->event_type) {
	case IBV_EVENT_SRQ_LIMIT_REACHED:
	case IBV_EVENT_SRQ_ERR:
		srq = event->element.srq;
		if (!srq)
			return;
		pthread_mutex_lock(&srq->mutex);
		srq->events_completed++;
		pthread_cond_signal(&srq->cond);
		pthread_mutex_unlock(&srq->mutex);
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		qp = event->element.qp;
		if (!qp)
			return;
		pthread_mutex_lock(&qp->mutex);
		qp->events_completed++;
		pthread_cond_signal(&qp->cond);
		pthread_mutex_unlock(&qp->mutex);
		break;
	default:
		break;	/* port and device events need no acknowledgement */
	}
}
