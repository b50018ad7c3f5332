/* SPDX-License-Identifier: MIT */
/*
 * The lease watcher: see lease.h.  One small thread per context (signals
 * blocked, 128 KiB stack) sleeps in poll on the lease connection and an
 * eventfd; it never touches the data path except to revoke.  The
 * connection is shared with the reservation calls of application threads
 * under l->lock: whole frames are read under it, so a REVOKE that arrives
 * while a thread waits for its RESERVE reply is set aside for the watcher.
 *
 * QP reservations come in batches (issue 18): without a QP limit in
 * [Limits] a context reserves ahead, an eighth of what it holds at a time
 * (one QP at a time while it holds fewer than 16, so that small contexts
 * show exact counts in `efictl status`), hands QPs out of what it reserved
 * without asking efid, and gives back what it holds beyond a quarter more
 * than it uses (all of it once it uses none, so `detach --wait` sees 0).
 * 10,000 QPs then cost about 60 round trips, not 10,000.  With a QP limit
 * every QP is asked for alone, so that one process's batch never refuses
 * another's QP.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <fcntl.h>

#include "ctlclient.h"
#include "ctlproto.h"
#include "efi_int.h"
#include "lease.h"

#define WATCHER_STACK (128u * 1024u)
#define CALL_TIMEOUT_MS 5000
#define BACKOFF_FIRST_MS 20
#define BACKOFF_MAX_MS 250

struct efi_lease {
	struct efi_context_int *ctx;
	pthread_mutex_t lock;      /* ctl, broken and the counts below */
	struct ctl_client *ctl;    /* NULL while efid is away */
	bool broken;               /* a call saw the connection fail: the watcher drops it */
	bool gave_up;              /* a restarted efid refused the lease: stop asking */
	bool no_quota;             /* an efid without RESERVE: count here, ask nothing */
	int wire_fd[EFI_WIRE_MAX_LANES]; /* our duplicates of the wire sockets, by lane */
	unsigned nwire;
	/* further QPN blocks (qpn_blocks.c): their bases and socket copies,
	 * handed back at resume as block 0's are */
	struct {
		uint32_t qpn_base;
		int fd[EFI_WIRE_MAX_LANES];
		unsigned n;
	} blk[EFI_MAX_BLOCKS - 1];
	unsigned nblk;
	int wake_fd;               /* eventfd: stop, or a revoke to carry out */
	pthread_t thread;
	_Atomic bool stopping, revoke_pending, revoked;
	/* what the context holds, and what of it efid was told */
	uint32_t qps, mrs, told_mrs;
	uint32_t told_qps;         /* QPs efid granted: qps plus a batch reserved ahead */
	bool qp_limited;           /* efid's last word: a QP limit exists (ask one by one) */
	uint64_t bytes, told_bytes;
	bool mr_limited;           /* efid's last word: MR or byte limits exist */
	/* A resumed lease's path table (the new efid's), for the watcher to
	 * hand to the context under ctx->lock: pt_fd, or -1 for none. */
	bool pt_pending;
	int pt_fd;
};

static void wake(struct efi_lease *l)
{
	uint64_t one = 1;
	ssize_t n = write(l->wake_fd, &one, sizeof(one));
	(void)n; /* a full counter wakes the watcher all the same */
}

/* Frames that are not the reply a call waits for (lock held). */
static void on_frame(struct efi_lease *l, const struct ctl_reply *f)
{
	if (f->hdr.type == EFI_CTL_REVOKE) {
		atomic_store(&l->revoke_pending, true);
		wake(l);
	}
}

static void set_aside(void *ud, struct ctl_reply *f)
{
	on_frame(ud, f);
	ctl_reply_free(f);
}

/* Every QP to ERR, outstanding work flushed (watcher thread). */
static void revoke_all(struct efi_lease *l)
{
	struct efi_context_int *ctx = l->ctx;
	atomic_store(&l->revoked, true);
	pthread_mutex_lock(&ctx->lock);
	for (struct efi_qp_int *qp = ctx->qp_list; qp; qp = qp->next_active)
		if (qp->pub.state != EFI_QPS_RESET && qp->pub.state != EFI_QPS_ERR)
			efi_qp_to_error(qp);
	pthread_mutex_unlock(&ctx->lock);
}

/* One request on the lease (lock held).  Returns 0 / the positive errno
 * efid answered, or -1 when efid could not be asked. */
static int call(struct efi_lease *l, uint16_t type, uint32_t qps, uint32_t mrs, uint64_t bytes,
		struct ctl_reply *rep)
{
	struct ctl_buf req;
	int r;

	memset(rep, 0, sizeof(*rep));
	if (!l->ctl || l->broken || l->no_quota)
		return -1;
	ctl_buf_init(&req);
	ctl_msg_begin(&req, type, 0);
	if (qps)
		ctl_put_u32(&req, EFI_A_RES_QPS, qps);
	if (mrs)
		ctl_put_u32(&req, EFI_A_RES_MRS, mrs);
	if (bytes)
		ctl_put_u64(&req, EFI_A_RES_BYTES, bytes);
	r = ctl_msg_end(&req);
	if (r == 0)
		r = ctl_client_call_ex(l->ctl, &req, NULL, 0, rep, CALL_TIMEOUT_MS, set_aside, l);
	ctl_buf_free(&req);
	if (r < 0) {
		/* efid went away (or is wedged): the watcher reconnects */
		l->broken = true;
		wake(l);
		return -1;
	}
	if (rep->status < 0) {
		int e = -rep->status;
		ctl_reply_free(rep);
		if (e == EOPNOTSUPP) {
			/* an older efid: no quotas to keep */
			l->no_quota = true;
			l->mr_limited = false;
			return -1;
		}
		return e;
	}
	return 0;
}

/* Reads the limits a RESERVE reply carries (lock held). */
static void learn_limits(struct efi_lease *l, const struct ctl_reply *rep)
{
	struct ctl_iter it;
	struct ctl_attr a;
	uint32_t v32;
	uint64_t v64;
	bool limited = false;

	ctl_iter_init(&it, rep->payload, rep->payload_len);
	while (ctl_iter_next(&it, &a)) {
		if (a.type == EFI_A_RES_QPS && ctl_attr_u32(&a, &v32) == 0)
			l->qp_limited = v32 != 0;
		else if (a.type == EFI_A_RES_MRS && ctl_attr_u32(&a, &v32) == 0)
			limited |= v32 != 0;
		else if (a.type == EFI_A_RES_BYTES && ctl_attr_u64(&a, &v64) == 0)
			limited |= v64 != 0;
	}
	l->mr_limited = limited;
}

/* Asks for the limits with an empty reservation (lock held). */
static void ask_limits(struct efi_lease *l)
{
	struct ctl_reply rep;
	if (call(l, EFI_CTL_RESERVE, 0, 0, 0, &rep) == 0) {
		learn_limits(l, &rep);
		ctl_reply_free(&rep);
	}
}

/* The path table of a LEASE_RESUME reply (the restarted efid's own, or
 * none): kept for the watcher (lock held). */
static void take_path_table(struct efi_lease *l, struct ctl_reply *rep)
{
	struct ctl_iter it;
	struct ctl_attr a;
	uint32_t idx = UINT32_MAX;

	ctl_iter_init(&it, rep->payload, rep->payload_len);
	while (ctl_iter_next(&it, &a))
		if (a.type == EFI_A_PATH_TABLE)
			ctl_attr_u32(&a, &idx);
	if (l->pt_fd >= 0)
		close(l->pt_fd);
	l->pt_fd = -1;
	if (idx < (uint32_t)rep->nfds && rep->fds[idx] >= 0) {
		l->pt_fd = rep->fds[idx];
		rep->fds[idx] = -1; /* ours now */
	}
	l->pt_pending = true;
}

/* The context takes the resumed lease's path table (watcher thread, no
 * lock held; takes ctx->lock, as the transport reads it under that). */
static void hand_path_table(struct efi_lease *l)
{
	int fd;

	pthread_mutex_lock(&l->lock);
	if (!l->pt_pending) {
		pthread_mutex_unlock(&l->lock);
		return;
	}
	l->pt_pending = false;
	fd = l->pt_fd;
	l->pt_fd = -1;
	pthread_mutex_unlock(&l->lock);
	pthread_mutex_lock(&l->ctx->lock);
	if (fd < 0 || efi_pt_attach(l->ctx, fd) < 0)
		efi_pt_detach(l->ctx); /* the old efid's page says nothing now */
	pthread_mutex_unlock(&l->ctx->lock);
}

/* LEASE_RESUME of a further QPN block on c, the resumed lease's connection
 * (lock held).  Returns 0 or the errno efid answered. */
static int resume_block(struct ctl_client *c, const char *ifname, uint32_t qpn_base, const int *fds,
			unsigned n)
{
	struct ctl_reply rep;
	struct ctl_buf req;
	int r;

	ctl_buf_init(&req);
	ctl_msg_begin(&req, EFI_CTL_LEASE_RESUME, 0);
	ctl_put_str(&req, EFI_A_CLIENT, "libefi");
	ctl_put_str(&req, EFI_A_IFNAME, ifname);
	ctl_put_u32(&req, EFI_A_QPN_BASE, qpn_base);
	r = ctl_msg_end(&req);
	if (r == 0)
		r = ctl_client_call_ex(c, &req, fds, (int)n, &rep, CALL_TIMEOUT_MS, NULL, NULL);
	ctl_buf_free(&req);
	if (r < 0)
		return -r;
	r = rep.status < 0 ? -rep.status : 0;
	ctl_reply_free(&rep);
	return r;
}

/* efid is back (or another one is): hand it the socket (lock held).
 * Returns true when the lease is efid's again or must not be retried. */
static bool resume(struct efi_lease *l)
{
	struct efi_context_int *ctx = l->ctx;
	struct ctl_client *c = NULL;
	struct ctl_reply rep;
	struct ctl_buf req;
	int r;

	if (ctl_client_connect(NULL, &c) < 0)
		return false;
	ctl_buf_init(&req);
	ctl_msg_begin(&req, EFI_CTL_LEASE_RESUME, 0);
	ctl_put_str(&req, EFI_A_CLIENT, "libefi");
	ctl_put_str(&req, EFI_A_IFNAME, ctx->p.ifname);
	ctl_put_u32(&req, EFI_A_QPN_BASE, ctx->p.qpn_base);
	ctl_put_u32(&req, EFI_A_RES_QPS, l->qps);
	ctl_put_u32(&req, EFI_A_RES_MRS, l->mrs);
	ctl_put_u64(&req, EFI_A_RES_BYTES, l->bytes);
	if (efi_pt_wanted())
		ctl_put_u32(&req, EFI_A_PATH_TABLE, EFI_PATHTABLE_VERSION);
	r = ctl_msg_end(&req);
	if (r == 0)
		r = ctl_client_call_ex(c, &req, l->wire_fd, (int)l->nwire, &rep, CALL_TIMEOUT_MS, NULL,
				       NULL);
	ctl_buf_free(&req);
	if (r < 0) {
		ctl_client_close(c);
		return false; /* efid not ready yet: try again */
	}
	r = rep.status;
	if (r == 0)
		take_path_table(l, &rep);
	ctl_reply_free(&rep);
	if (r == -ENODEV || r == -ENOENT) {
		/* detached while efid was away: the same as a revoke */
		ctl_client_close(c);
		atomic_store(&l->revoke_pending, true);
		l->gave_up = true;
		return true;
	}
	if (r == -EAGAIN || r == -EBUSY) {
		ctl_client_close(c);
		return false; /* an efid still starting */
	}
	if (r < 0) {
		/* refused for good (slot taken, not ours, an older efid
		 * without LEASE_RESUME): the data path runs on without an
		 * efid watching it */
		ctl_client_close(c);
		l->gave_up = true;
		return true;
	}
	/* The further blocks on the same connection (efid counts them against
	 * the lease that resumed block 0).  One refused is left to the data
	 * path alone, as block 0 would be: its sockets keep its ports ours. */
	for (unsigned k = 0; k < l->nblk; k++)
		resume_block(c, ctx->p.ifname, l->blk[k].qpn_base, l->blk[k].fd, l->blk[k].n);
	l->ctl = c;
	/* efid reads the counters page of the lease's connection: the
	 * restarted one never had it, so efictl showed no counters or path
	 * states after a restart.  A new page (the old one stays mapped: the
	 * progress thread may be writing it this moment) */
	if (__atomic_load_n(&ctx->cshm, __ATOMIC_ACQUIRE))
		efi_counters_publish_open(ctx, c);
	l->broken = false;
	l->no_quota = false;
	l->told_qps = l->qps;
	l->told_mrs = l->mrs;
	l->told_bytes = l->bytes;
	ask_limits(l);
	return true;
}

static void *watch(void *arg)
{
	struct efi_lease *l = arg;
	int backoff = BACKOFF_FIRST_MS;

	while (!atomic_load(&l->stopping)) {
		struct pollfd pf[2] = { { .fd = l->wake_fd, .events = POLLIN },
					{ .fd = -1, .events = POLLIN } };
		int timeout = -1;

		pthread_mutex_lock(&l->lock);
		if (l->ctl && !l->broken)
			pf[1].fd = ctl_client_fd(l->ctl);
		else if (!l->gave_up)
			timeout = backoff;
		pthread_mutex_unlock(&l->lock);

		int n = poll(pf, 2, timeout);
		if (n < 0 && errno != EINTR)
			break;
		if (pf[0].revents & POLLIN) {
			uint64_t v;
			ssize_t k = read(l->wake_fd, &v, sizeof(v));
			(void)k;
		}
		if (atomic_load(&l->stopping))
			break;

		pthread_mutex_lock(&l->lock);
		if (pf[1].fd >= 0 && (pf[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			struct ctl_reply f;
			int r = ctl_client_recv(l->ctl, &f, 0);
			if (r == 0) {
				on_frame(l, &f);
				ctl_reply_free(&f);
			} else if (r != -ETIMEDOUT) {
				l->broken = true; /* EOF: efid stopped */
			}
		}
		if (l->broken && l->ctl) {
			ctl_client_close(l->ctl);
			l->ctl = NULL;
			l->broken = false;
			backoff = BACKOFF_FIRST_MS;
		} else if (!l->ctl && !l->gave_up && n == 0) {
			if (resume(l))
				backoff = BACKOFF_FIRST_MS;
			else if ((backoff *= 2) > BACKOFF_MAX_MS)
				backoff = BACKOFF_MAX_MS;
		}
		pthread_mutex_unlock(&l->lock);

		hand_path_table(l);
		if (atomic_exchange(&l->revoke_pending, false))
			revoke_all(l);
	}
	return NULL;
}

struct efi_lease *efi_lease_start(struct efi_context_int *ctx, const int *wire_fds, unsigned n)
{
	struct efi_lease *l;
	pthread_attr_t attr;
	sigset_t all, old;
	int r = 0;

	if (!ctx || !ctx->ctl || !wire_fds || n == 0 || n > EFI_WIRE_MAX_LANES) {
		errno = EINVAL;
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->ctx = ctx;
	l->mr_limited = true;
	l->qp_limited = true;	/* until efid says otherwise: exact */
	l->pt_fd = -1;
	l->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (l->wake_fd < 0)
		r = errno;
	for (; !r && l->nwire < n; l->nwire++) {
		l->wire_fd[l->nwire] = fcntl(wire_fds[l->nwire], F_DUPFD_CLOEXEC, 3);
		if (l->wire_fd[l->nwire] < 0)
			r = errno;
	}
	if (r)
		goto fail;
	pthread_mutex_init(&l->lock, NULL);
	l->ctl = ctx->ctl;
	pthread_mutex_lock(&l->lock);
	ask_limits(l);
	pthread_mutex_unlock(&l->lock);

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, WATCHER_STACK);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&l->thread, &attr, watch, l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r) {
		pthread_mutex_destroy(&l->lock);
		goto fail;
	}
	ctx->ctl = NULL; /* the lease's now */
	return l;
fail:
	while (l->nwire--)
		if (l->wire_fd[l->nwire] >= 0)
			close(l->wire_fd[l->nwire]);
	if (l->wake_fd >= 0)
		close(l->wake_fd);
	free(l);
	errno = r;
	return NULL;
}

void efi_lease_stop(struct efi_lease *l)
{
	if (!l)
		return;
	atomic_store(&l->stopping, true);
	wake(l);
	pthread_join(l->thread, NULL);
	ctl_client_close(l->ctl); /* ends the lease */
	for (unsigned i = 0; i < l->nwire; i++)
		close(l->wire_fd[i]);
	for (unsigned k = 0; k < l->nblk; k++)
		for (unsigned i = 0; i < l->blk[k].n; i++)
			close(l->blk[k].fd[i]);
	if (l->pt_fd >= 0)
		close(l->pt_fd); /* a table the watcher did not hand over */
	close(l->wake_fd);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

bool efi_lease_revoked(const struct efi_lease *l)
{
	return l && (atomic_load(&l->revoked) || atomic_load(&l->revoke_pending));
}

/* QPs to reserve ahead when qps are in use and none is left (lock held). */
static uint32_t qp_batch(const struct efi_lease *l)
{
	uint32_t n = l->qps / 8;

	if (l->qp_limited || l->qps < 16)
		return 1;
	return n > 1024 ? 1024 : n;
}

int efi_lease_reserve_qp(struct efi_lease *l)
{
	struct ctl_reply rep;
	uint32_t ask;
	int r = 0;

	if (!l)
		return 0;
	if (efi_lease_revoked(l))
		return ENODEV;
	pthread_mutex_lock(&l->lock);
	if (l->qps < l->told_qps && !l->qp_limited) {
		l->qps++;	/* out of the batch: no round trip */
		pthread_mutex_unlock(&l->lock);
		return 0;
	}
	ask = qp_batch(l);
	r = call(l, EFI_CTL_RESERVE, ask, 0, 0, &rep);
	if (r == EDQUOT && ask > 1) {
		ask = 1;	/* a limit came (efid restarted with one): exact again */
		r = call(l, EFI_CTL_RESERVE, ask, 0, 0, &rep);
	}
	if (r == 0) {
		l->told_qps = (l->told_qps > l->qps ? l->told_qps : l->qps) + ask;
		learn_limits(l, &rep);
		ctl_reply_free(&rep);
	}
	if (r <= 0) /* granted, or efid away: counted, told at resume */
		l->qps++;
	pthread_mutex_unlock(&l->lock);
	return r > 0 ? r : 0;
}

void efi_lease_release_qp(struct efi_lease *l)
{
	struct ctl_reply rep;
	uint32_t keep;

	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	if (l->qps)
		l->qps--;
	keep = l->qp_limited ? 0 : l->qps / 4;
	if (l->told_qps > l->qps && l->told_qps - l->qps > keep) {
		/* down to an eighth more than in use: the next few QPs
		 * still need no round trip */
		uint32_t give = l->told_qps - l->qps - (l->qp_limited ? 0 : l->qps / 8);
		l->told_qps -= give;
		if (call(l, EFI_CTL_RELEASE, give, 0, 0, &rep) == 0)
			ctl_reply_free(&rep);
	}
	pthread_mutex_unlock(&l->lock);
}

int efi_lease_open_block(struct efi_lease *l, uint32_t *qpn_base, int *fds, unsigned *nfds)
{
	struct ctl_reply rep;
	struct ctl_buf req;
	struct ctl_iter it;
	struct ctl_attr a;
	uint32_t base = 0, lanes = 0;
	int r;

	if (!l)
		return ENOSPC;
	if (efi_lease_revoked(l))
		return ENODEV;
	pthread_mutex_lock(&l->lock);
	if (l->nblk >= EFI_MAX_BLOCKS - 1) {
		pthread_mutex_unlock(&l->lock);
		return ENOSPC;
	}
	if (!l->ctl || l->broken) {
		pthread_mutex_unlock(&l->lock);
		return EAGAIN;	/* efid is away: no new slot until it is back */
	}
	ctl_buf_init(&req);
	ctl_msg_begin(&req, EFI_CTL_OPEN_DEVICE, 0);
	ctl_put_str(&req, EFI_A_CLIENT, "libefi");
	ctl_put_str(&req, EFI_A_IFNAME, l->ctx->p.ifname);
	r = ctl_msg_end(&req);
	memset(&rep, 0, sizeof(rep));
	if (r == 0)
		r = ctl_client_call_ex(l->ctl, &req, NULL, 0, &rep, CALL_TIMEOUT_MS, set_aside, l);
	ctl_buf_free(&req);
	if (r < 0) {
		l->broken = true;
		wake(l);
		pthread_mutex_unlock(&l->lock);
		return EAGAIN;
	}
	if (rep.status < 0) {
		r = -rep.status;
		ctl_reply_free(&rep);
		pthread_mutex_unlock(&l->lock);
		return r == EPERM ? EACCES : r;
	}
	ctl_iter_init(&it, rep.payload, rep.payload_len);
	while (ctl_iter_next(&it, &a)) {
		if (a.type == EFI_A_QPN_BASE)
			ctl_attr_u32(&a, &base);
		else if (a.type == EFI_A_LANES)
			ctl_attr_u32(&a, &lanes);
	}
	/* the same checks as block 0's reply (device.c), and exactly the
	 * lanes' sockets: nothing else was asked for */
	r = 0;
	if (it.err || lanes < 1 || lanes > EFI_WIRE_MAX_LANES || rep.nfds < 0 ||
	    (unsigned)rep.nfds != lanes || base < EFI_QPN_PER_BLOCK || base > 0xffffffu ||
	    (base & (EFI_QPN_PER_BLOCK - 1)))
		r = EPROTO;
	unsigned k = l->nblk;
	for (unsigned i = 0; !r && i < lanes; i++) {
		l->blk[k].fd[i] = fcntl(rep.fds[i], F_DUPFD_CLOEXEC, 3);
		if (l->blk[k].fd[i] < 0) {
			r = errno;
			while (i--)
				close(l->blk[k].fd[i]);
		}
	}
	if (r) {
		ctl_reply_free(&rep);	/* closes the sockets: efid frees the slot at close */
		pthread_mutex_unlock(&l->lock);
		return r;
	}
	l->blk[k].n = lanes;
	l->blk[k].qpn_base = base;
	l->nblk++;
	memcpy(fds, rep.fds, lanes * sizeof(int));
	rep.nfds = 0;	/* the caller's now */
	ctl_reply_free(&rep);
	pthread_mutex_unlock(&l->lock);
	*qpn_base = base;
	*nfds = lanes;
	return 0;
}

int efi_lease_reserve_mr(struct efi_lease *l, uint64_t len)
{
	struct ctl_reply rep;
	int r = 0;

	if (!l)
		return 0;
	if (efi_lease_revoked(l))
		return ENODEV;
	pthread_mutex_lock(&l->lock);
	/* Without MR limits registration costs no round trip: counted here,
	 * told to efid only if it restarts with limits. */
	if (l->mr_limited) {
		r = call(l, EFI_CTL_RESERVE, 0, 1, len ? len : 0, &rep);
		if (r == 0) {
			l->told_mrs++;
			l->told_bytes += len;
			learn_limits(l, &rep);
			ctl_reply_free(&rep);
		}
	}
	if (r <= 0) {
		l->mrs++;
		l->bytes += len;
	}
	pthread_mutex_unlock(&l->lock);
	return r > 0 ? r : 0;
}

void efi_lease_release_mr(struct efi_lease *l, uint64_t len)
{
	struct ctl_reply rep;

	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	if (l->mrs)
		l->mrs--;
	l->bytes -= len < l->bytes ? len : l->bytes;
	if (l->told_mrs) {
		uint64_t b = len < l->told_bytes ? len : l->told_bytes;
		l->told_mrs--;
		l->told_bytes -= b;
		if (call(l, EFI_CTL_RELEASE, 0, 1, b, &rep) == 0)
			ctl_reply_free(&rep);
	}
	pthread_mutex_unlock(&l->lock);
}
