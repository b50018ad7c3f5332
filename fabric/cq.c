/* SPDX-License-Identifier: MIT */
/*
 * Completion queues: an efi_cq with a completion channel.  Work completions
 * are polled in batches into a small backlog and returned from there, so an
 * error completion can wait at the head for fi_cq_readerr while nothing
 * behind it is lost, and fi_trywait can look for completions without
 * consuming them.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "efi_fi.h"

/* Refills the backlog when empty; called with cq->lock held. */
static void cq_fill(struct efi_fi_cq *cq)
{
	int n;

	if (cq->count)
		return;
	cq->head = 0;
	n = efi_poll_cq(cq->ecq, EFI_FI_CQ_BATCH, cq->backlog);
	cq->count = n > 0 ? n : 0;
	if (n == -EOVERFLOW)
		cq->overrun = true;
	/* a large inject's slot is free once its send completed (bounce.c);
	 * from here on its completion is the operation's own */
	for (int i = 0; i < cq->count; i++)
		efi_fi_bounce_put(&cq->bounce, &cq->backlog[i].wr_id);
}

/* The operation's context: wr_id without the provider's flag bits. */
static void *wc_context(const struct efi_wc *wc)
{
	return (void *)(uintptr_t)(wc->wr_id & ~EFI_FI_WR_BITS);
}

/*
 * Whether a completion stays out of the CQ: one of an operation the
 * application asked to be silent (an inject, FI_INJECT, no FI_COMPLETION
 * on a selective-completion endpoint), unless it failed and carries a
 * context by which the application can tell which operation failed.
 *
 * A failed silent operation without a context cannot be reported usefully,
 * and reporting it is harmful: ofi_rxm (libfabric 1.17,
 * rxm_handle_comp_error) reads every error of its MSG endpoints' CQ and
 * looks at the buffer op_context points to, so a NULL op_context from a
 * failed fi_inject crashed Open MPI (t-mpi-efi under the sanitizers).  The
 * verbs provider drops such completions too.  The failure is not lost:
 * the QP is in the error state, so everything still posted on it,
 * receives first (always posted, with contexts), completes with an error.
 */
static bool wc_hidden(const struct efi_wc *wc)
{
	return (wc->wr_id & EFI_FI_WR_SILENT) &&
	       (wc->status == EFI_WC_SUCCESS || !wc_context(wc));
}

/* Refills the backlog and drops the hidden completions at its head, so
 * that the head, if any, is one to report; called with cq->lock held. */
static void cq_next(struct efi_fi_cq *cq)
{
	for (;;) {
		cq_fill(cq);
		if (!cq->count || !wc_hidden(&cq->backlog[cq->head]))
			return;
		cq->head++;
		cq->count--;
	}
}

static uint64_t wc_flags(const struct efi_wc *wc)
{
	switch ((int)wc->opcode) {
	case EFI_WC_SEND:
		return FI_SEND | FI_MSG;
	case EFI_WC_RDMA_WRITE:
		return FI_RMA | FI_WRITE;
	case EFI_WC_RDMA_READ:
		return FI_RMA | FI_READ;
	case EFI_WC_COMP_SWAP:
		return FI_ATOMIC | FI_READ;
	case EFI_WC_FETCH_ADD:
		/* fi_atomic (a write) or fi_fetch_atomic */
		return FI_ATOMIC | ((wc->wr_id & EFI_FI_WR_AWRITE) ? FI_WRITE : FI_READ);
	case EFI_WC_RECV:
		return FI_RECV | FI_MSG | ((wc->wc_flags & EFI_WC_WITH_IMM) ? FI_REMOTE_CQ_DATA : 0);
	case EFI_WC_RECV_RDMA_WITH_IMM:
		return FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA;
	default:
		return 0;
	}
}

static void fill_entry(const struct efi_fi_cq *cq, const struct efi_wc *wc, void *buf, size_t i)
{
	void *ctx = wc_context(wc);
	uint64_t flags = wc_flags(wc);
	bool recv = (wc->opcode & EFI_WC_RECV) != 0;

	switch (cq->format) {
	case FI_CQ_FORMAT_CONTEXT:
		((struct fi_cq_entry *)buf)[i].op_context = ctx;
		break;
	case FI_CQ_FORMAT_MSG: {
		struct fi_cq_msg_entry *e = &((struct fi_cq_msg_entry *)buf)[i];

		e->op_context = ctx;
		e->flags = flags;
		e->len = recv ? wc->byte_len : 0;
		break;
	}
	default: {
		struct fi_cq_data_entry *e = &((struct fi_cq_data_entry *)buf)[i];

		e->op_context = ctx;
		e->flags = flags;
		e->len = recv ? wc->byte_len : 0;
		e->buf = NULL;
		e->data = (wc->wc_flags & EFI_WC_WITH_IMM) ? ntohl(wc->imm_data) : 0;
		break;
	}
	}
}

static ssize_t cq_read(struct fid_cq *fcq, void *buf, size_t count)
{
	struct efi_fi_cq *cq = (struct efi_fi_cq *)fcq;
	size_t n = 0;

	pthread_mutex_lock(&cq->lock);
	while (n < count) {
		const struct efi_wc *wc;

		cq_next(cq);
		if (!cq->count)
			break;
		wc = &cq->backlog[cq->head];
		if (wc->status != EFI_WC_SUCCESS) {
			if (!n) {
				pthread_mutex_unlock(&cq->lock);
				return -FI_EAVAIL;
			}
			break;
		}
		cq->head++;
		cq->count--;
		fill_entry(cq, wc, buf, n++);
	}
	pthread_mutex_unlock(&cq->lock);
	/* never "nothing yet" after a lost completion: its QPs are in error
	 * and whoever waits for it must hear so (issue 20) */
	if (!n && cq->overrun)
		return -FI_EOVERRUN;
	return n ? (ssize_t)n : -FI_EAGAIN;
}

static ssize_t cq_readfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src_addr)
{
	ssize_t n = cq_read(fcq, buf, count);

	for (ssize_t i = 0; src_addr && i < n; i++)
		src_addr[i] = FI_ADDR_NOTAVAIL;
	return n;
}

static int wc_errno(enum efi_wc_status s)
{
	switch (s) {
	case EFI_WC_WR_FLUSH_ERR:
		return FI_ECANCELED;
	case EFI_WC_LOC_LEN_ERR:
		return FI_ETRUNC;
	case EFI_WC_LOC_PROT_ERR:
	case EFI_WC_LOC_ACCESS_ERR:
	case EFI_WC_REM_ACCESS_ERR:
		return FI_EACCES;
	case EFI_WC_RETRY_EXC_ERR:
	case EFI_WC_RESP_TIMEOUT_ERR:
		return FI_ETIMEDOUT;
	case EFI_WC_RNR_RETRY_EXC_ERR:
		return FI_ENORX;
	case EFI_WC_REM_INV_REQ_ERR:
		return FI_EINVAL;
	default:
		return FI_EIO;
	}
}

static ssize_t cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *e, uint64_t flags)
{
	struct efi_fi_cq *cq = (struct efi_fi_cq *)fcq;
	struct efi_wc wc;

	if (flags & ~FI_PEEK)
		return -FI_EINVAL;
	pthread_mutex_lock(&cq->lock);
	cq_next(cq);
	if (!cq->count || cq->backlog[cq->head].status == EFI_WC_SUCCESS) {
		pthread_mutex_unlock(&cq->lock);
		return -FI_EAGAIN;
	}
	wc = cq->backlog[cq->head];
	if (!(flags & FI_PEEK)) {
		cq->head++;
		cq->count--;
	}
	pthread_mutex_unlock(&cq->lock);
	/* keep err_data/err_data_size as given (1.5+ ABI): we have none */
	e->op_context = wc_context(&wc);
	e->flags = wc_flags(&wc);
	e->len = 0;
	e->buf = NULL;
	e->data = 0;
	e->tag = 0;
	e->olen = 0;
	/* A truncated receive: its buffer holds the message's first byte_len
	 * bytes, vendor_err more did not fit (efi.h, EFI_WC_LOC_LEN_ERR). */
	if (wc.status == EFI_WC_LOC_LEN_ERR) {
		e->len = wc.byte_len;
		e->olen = wc.vendor_err;
	}
	e->err = wc_errno(wc.status);
	e->prov_errno = (int)wc.status;
	e->err_data_size = 0;
	return 1;
}

static const char *cq_strerror(struct fid_cq *fcq, int prov_errno, const void *err_data,
			       char *buf, size_t len)
{
	const char *s = efi_wc_status_str((enum efi_wc_status)prov_errno);

	(void)fcq, (void)err_data;
	if (buf && len) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	return s;
}

/* Takes the channel's pending events (its fd is non-blocking) and says
 * how many there were.  efi_get_cq_event also kicks libefi's progress
 * thread: it takes the transport over at once instead of leaving it to a
 * caller it believes is still polling. */
static unsigned int cq_drain_events(struct efi_fi_cq *cq)
{
	struct efi_cq *ecq;
	void *ctx;
	unsigned int n = 0;

	while (!efi_get_cq_event(cq->channel, &ecq, &ctx))
		n++;
	if (n)
		efi_ack_cq_events(cq->ecq, n);
	return n;
}

/* Arms the CQ and says whether the caller may now sleep on the fd:
 * -FI_EAGAIN when completions are already waiting.
 *
 * The order matters.  efi_poll_cq (cq_fill) runs the transport in the
 * caller and tells libefi's progress thread that the application is
 * polling, so that thread stays away for up to ~0.45 ms (libefi
 * progress.c: APP_ACTIVE_NS + APP_BACKOFF_NS).  A caller that then sleeps
 * on the fd would wait that long for its completion (ofi_rxm's waits,
 * fi_cq_sread: ~0.4 ms per message).  So the last call before sleeping is
 * efi_get_cq_event (cq_drain_events), whose kick hands the transport to
 * the progress thread now; an event it finds means a completion arrived
 * after arming: not time to sleep. */
int efi_fi_cq_trywait(struct efi_fi_cq *cq)
{
	int ret = 0;

	if (!cq->channel)
		return -FI_EINVAL;
	pthread_mutex_lock(&cq->lock);
	cq_drain_events(cq);
	if (efi_req_notify_cq(cq->ecq, 0)) {
		ret = -FI_EINVAL;
	} else {
		cq_next(cq);
		if (cq->count || cq_drain_events(cq))
			ret = -FI_EAGAIN;
	}
	pthread_mutex_unlock(&cq->lock);
	return ret;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Takes a pending fi_cq_signal; whether there was one. */
static bool cq_take_signal(struct efi_fi_cq *cq)
{
	uint64_t v;

	return read(cq->sigfd, &v, sizeof(v)) == (ssize_t)sizeof(v);
}

static ssize_t cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src_addr,
			    const void *cond, int timeout)
{
	struct efi_fi_cq *cq = (struct efi_fi_cq *)fcq;
	int64_t end = timeout >= 0 ? now_ms() + timeout : 0;

	(void)cond;
	if (!cq->channel)
		return -FI_EINVAL;
	for (;;) {
		ssize_t n = cq_readfrom(fcq, buf, count, src_addr);
		struct pollfd pfd[2] = {
			{ .fd = cq->channel->fd, .events = POLLIN },
			{ .fd = cq->sigfd, .events = POLLIN },
		};
		int wait = -1, ret;

		if (n != -FI_EAGAIN)
			return n;
		if (cq_take_signal(cq))
			return -FI_EAGAIN;	/* fi_cq_signal: wake up empty-handed */
		ret = efi_fi_cq_trywait(cq);
		if (ret == -FI_EAGAIN)
			continue;
		if (ret)
			return ret;
		if (timeout >= 0) {
			wait = (int)(end - now_ms());
			if (wait < 0)
				return -FI_EAGAIN;
		}
		ret = poll(pfd, 2, wait);
		if (ret < 0 && errno != EINTR)
			return -FI_EOTHER;
		if (ret == 0 && timeout >= 0 && now_ms() >= end) {
			n = cq_readfrom(fcq, buf, count, src_addr);
			return n;
		}
	}
}

static ssize_t cq_sread(struct fid_cq *fcq, void *buf, size_t count, const void *cond,
			int timeout)
{
	return cq_sreadfrom(fcq, buf, count, NULL, cond, timeout);
}

/* Wakes a thread blocked in fi_cq_sread (which returns -FI_EAGAIN), or
 * the next one to block. */
static int cq_signal(struct fid_cq *fcq)
{
	struct efi_fi_cq *cq = (struct efi_fi_cq *)fcq;
	uint64_t one = 1;

	if (cq->sigfd < 0)
		return 0;	/* FI_WAIT_NONE: nobody can block on it */
	return write(cq->sigfd, &one, sizeof(one)) == (ssize_t)sizeof(one) ? 0 : -FI_EOTHER;
}

static int cq_control(struct fid *fid, int command, void *arg)
{
	struct efi_fi_cq *cq = (struct efi_fi_cq *)fid;

	switch (command) {
	case FI_GETWAIT:
		if (!cq->channel || !arg)
			return -FI_ENODATA;
		*(int *)arg = cq->channel->fd;
		return 0;
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *)arg = cq->channel ? FI_WAIT_FD : FI_WAIT_NONE;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static int cq_close(struct fid *fid)
{
	struct efi_fi_cq *cq = (struct efi_fi_cq *)fid;
	int err;

	if (__atomic_load_n(&cq->refs, __ATOMIC_SEQ_CST))
		return -FI_EBUSY;
	if (cq->channel)
		cq_drain_events(cq);
	err = efi_destroy_cq(cq->ecq);
	if (err)
		return efi_fi_errno(err);
	efi_destroy_comp_channel(cq->channel);
	if (cq->sigfd >= 0)
		close(cq->sigfd);
	efi_fi_bounce_fini(&cq->bounce);	/* no endpoint is bound: nothing in flight */
	__atomic_fetch_sub(&cq->dom->refs, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_destroy(&cq->lock);
	free(cq);
	return 0;
}

static struct fi_ops cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close,
	.bind = efi_fi_no_bind,
	.control = cq_control,
	.ops_open = efi_fi_no_ops_open,
	.tostr = efi_fi_no_tostr,
	.ops_set = efi_fi_no_ops_set,
};

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

int efi_fi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **out,
		   void *context)
{
	struct efi_fi_domain *dom = (struct efi_fi_domain *)domain;
	struct efi_fi_cq *cq;
	size_t size, slots;
	int ret;

	if (!attr || attr->flags || attr->wait_cond != FI_CQ_COND_NONE)
		return -FI_EINVAL;
	switch (attr->format) {
	case FI_CQ_FORMAT_UNSPEC:
	case FI_CQ_FORMAT_CONTEXT:
	case FI_CQ_FORMAT_MSG:
	case FI_CQ_FORMAT_DATA:
		break;
	default:
		return -FI_ENOSYS;	/* tagged: no FI_TAGGED in this provider */
	}
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		break;
	default:
		return -FI_ENOSYS;
	}
	size = attr->size ? attr->size : (size_t)dom->attr.max_qp_wr * 2;
	if (size > (size_t)dom->attr.max_cqe)
		size = (size_t)dom->attr.max_cqe;
	/* room for the completions of large injects in flight (bounce.c),
	 * beyond what the application sized for: an overflowing CQ fails its
	 * QPs.  Without that room (a CQ of the device's maximum) the pool
	 * takes at most half. */
	slots = (size_t)dom->attr.max_cqe - size >= EFI_FI_BOUNCE_SLOTS ? EFI_FI_BOUNCE_SLOTS
									: size / 2;
	if ((size_t)dom->attr.max_cqe - size >= EFI_FI_BOUNCE_SLOTS)
		size += slots;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->dom = dom;
	cq->sigfd = -1;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_DATA : attr->format;
	cq->wait_obj = attr->wait_obj == FI_WAIT_NONE ? FI_WAIT_NONE : FI_WAIT_FD;
	if (cq->wait_obj == FI_WAIT_FD) {
		cq->channel = efi_create_comp_channel(dom->ctx);
		if (!cq->channel)
			goto fail;
		if (fcntl(cq->channel->fd, F_SETFL,
			  fcntl(cq->channel->fd, F_GETFL) | O_NONBLOCK) < 0)
			goto fail;
		cq->sigfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (cq->sigfd < 0)
			goto fail;
	}
	cq->ecq = efi_create_cq(dom->ctx, (int)size, cq, cq->channel,
				attr->signaling_vector > 0 &&
				attr->signaling_vector < dom->ctx->num_comp_vectors ?
				attr->signaling_vector : 0);
	if (!cq->ecq)
		goto fail;
	pthread_mutex_init(&cq->lock, NULL);
	efi_fi_bounce_init(&cq->bounce, (unsigned int)slots);
	cq->cq.fid.fclass = FI_CLASS_CQ;
	cq->cq.fid.context = context;
	cq->cq.fid.ops = &cq_fi_ops;
	cq->cq.ops = &cq_ops;
	__atomic_fetch_add(&dom->refs, 1, __ATOMIC_SEQ_CST);
	*out = &cq->cq;
	return 0;
fail:
	ret = efi_fi_errno(errno);
	if (cq->sigfd >= 0)
		close(cq->sigfd);
	efi_destroy_comp_channel(cq->channel);
	free(cq);
	return ret ? ret : -FI_EOTHER;
}
