/* SPDX-License-Identifier: MIT */
/*
 * Publishing a context's counters for efid: a sealed memfd page that the
 * progress thread rewrites about every 100 ms (common/countershm.h).  This
 * is the only way efid learns them: the data path never talks to efid.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "countershm.h"
#include "ctlclient.h"
#include "efi_int.h"
#include "peer_table.h"

#define PUBLISH_INTERVAL_NS (100ull * 1000 * 1000)

/* The mapped size of a page this file made: its version says which. */
static size_t page_size(const struct efi_countershm *p)
{
	return p->version >= 3 ? EFI_COUNTERSHM_V3_SIZE : EFI_COUNTERSHM_SIZE;
}

/* Makes a page of one version and hands it to efid.  Returns the page, or
 * NULL when efid refused it (or memory ran out).  *refused: efid answered
 * -EINVAL, as an efid older than the version does. */
static struct efi_countershm *publish_page(struct ctl_client *c, uint32_t version,
					   bool *refused)
{
	size_t size = version >= 3 ? EFI_COUNTERSHM_V3_SIZE : EFI_COUNTERSHM_SIZE;
	struct efi_countershm *page = NULL;
	struct ctl_reply rep;
	struct ctl_buf req;
	int fd, ok = 0;

	*refused = false;
	fd = memfd_create("efi-counters", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto out;
	page = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (page == MAP_FAILED) {
		page = NULL;
		goto out;
	}
	page->magic = EFI_COUNTERSHM_MAGIC;
	page->version = version;
	page->pid = (uint32_t)getpid();

	ctl_buf_init(&req);
	ctl_msg_begin(&req, EFI_CTL_PUBLISH_COUNTERS, 0);
	if (ctl_msg_end(&req) == 0 && ctl_client_call(c, &req, &fd, 1, &rep, 5000) == 0) {
		ok = rep.status == 0;
		*refused = rep.status == -EINVAL;
		ctl_reply_free(&rep);
	}
	ctl_buf_free(&req);
	if (!ok) {
		munmap(page, size);
		page = NULL;
	}
out:
	close(fd);
	return page;
}

/* No lock: called once at open, on the lease connection nobody else uses
 * until close.  The progress thread may already run: the pointer is
 * published last, with release order.  An efid that refuses the version 4
 * page (it knows only the one-page size: versions 3 and 4 have the same
 * size, and efid decides by size) gets a version 2 page instead; an efid
 * older still, none. */
void efi_counters_publish_open(struct efi_context_int *ctx, void *ctl)
{
	struct efi_countershm *page;
	bool refused;

	if (!ctl)
		return;
	page = publish_page(ctl, EFI_COUNTERSHM_VERSION, &refused);
	if (!page && refused)
		page = publish_page(ctl, 2, &refused);
	if (page)
		__atomic_store_n(&ctx->cshm, page, __ATOMIC_RELEASE);
}

/* Only QPs that are connected and may carry traffic count: RTS/SQD (the
 * peer address is set on the way to RTR; RTR alone only answers, ERR is
 * over). */
static bool qp_connected(const struct efi_qp_int *qp)
{
	return (qp->attr.qp_state == EFI_QPS_RTS || qp->attr.qp_state == EFI_QPS_SQD) &&
	       qp->peer.sin6_family == AF_INET6;
}

/* Takes ctx->lock: the QP list and every QP's paths are the transport's. */
static void build_peer_table(struct efi_context_int *ctx, struct efi_peer_table *t)
{
	pthread_mutex_lock(&ctx->lock);
	efi_peer_table_init(t, ctx->nqp);
	for (const struct efi_qp_int *qp = ctx->qp_list; qp; qp = qp->next_active) {
		if (!qp_connected(qp))
			continue;
		bool busy = qp->sq_head != qp->sq_tail || qp->pipe != 0;
		efi_peer_table_add(t, qp->peer.sin6_addr.s6_addr, qp->paths, qp->npaths, busy);
	}
	pthread_mutex_unlock(&ctx->lock);
}

/* The stall detector's look at one QP at `now`: the send WQEs it has
 * outstanding, and for how long (ms) it has had some and made no progress
 * (no WQE completed, no request acknowledged), 0 when it has none or moved
 * since the last look; *rnr: the peer answered RNR meanwhile (it has no
 * receive posted: an application-level wait, not a transport fault).
 * Looks come every PUBLISH_INTERVAL_NS, so a stall is seen to within
 * that.  ctx->lock held. */
static uint32_t qp_stalled_ms(struct efi_qp_int *qp, uint64_t now, uint32_t *outstanding, bool *rnr)
{
	uint32_t out = (qp->sq_tail - qp->sq_head) & qp->sq_mask;

	*outstanding = out;
	*rnr = false;
	if (!out || qp->sq_head != qp->watch_sq_head || qp->snd_una != qp->watch_snd_una ||
	    !qp->watch_since_ns) {
		qp->watch_sq_head = qp->sq_head;
		qp->watch_snd_una = qp->snd_una;
		qp->watch_rnr_naks = qp->cnt.rnr_naks_received;
		qp->watch_since_ns = out ? now : 0;
		return 0;
	}
	*rnr = qp->cnt.rnr_naks_received != qp->watch_rnr_naks;
	uint64_t ms = (now - qp->watch_since_ns) / 1000000;
	return ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

/* The version 3 extension's QP table: every QP of the context, up to
 * EFI_CSHM_MAX_QPS, with (version 4) the stall detector's view of each,
 * and how many of all the context's QPs are stalled.  Takes ctx->lock. */
static void build_qp_table(struct efi_context_int *ctx, uint64_t now, struct efi_countershm_qp *q,
			   struct efi_countershm_qp_work *w, uint32_t *nqps, uint32_t *omitted,
			   uint32_t *stalled)
{
	uint32_t n = 0, more = 0, nstalled = 0;

	pthread_mutex_lock(&ctx->lock);
	for (struct efi_qp_int *qp = ctx->qp_list; qp; qp = qp->next_active) {
		uint32_t outstanding;
		bool rnr;
		uint32_t stalled_ms = qp_stalled_ms(qp, now, &outstanding, &rnr);
		if (stalled_ms >= EFI_CSHM_STALL_MS)
			nstalled++;
		if (n == EFI_CSHM_MAX_QPS) {
			more++;
			continue;
		}
		struct efi_countershm_qp *e = &q[n];
		const struct efi_counters *c = &qp->cnt;
		memset(e, 0, sizeof(*e));
		e->qpn = qp->pub.qp_num;
		e->state = (uint32_t)qp->attr.qp_state;
		if (qp->peer.sin6_family == AF_INET6)
			memcpy(e->peer, qp->peer.sin6_addr.s6_addr, 16);
		e->value[EFI_CSHM_QP_TX_PACKETS] = c->tx_packets;
		e->value[EFI_CSHM_QP_TX_BYTES] = c->tx_bytes;
		e->value[EFI_CSHM_QP_RX_PACKETS] = c->rx_packets;
		e->value[EFI_CSHM_QP_RX_BYTES] = c->rx_bytes;
		e->value[EFI_CSHM_QP_RETRANSMISSIONS] = c->retransmissions;
		e->value[EFI_CSHM_QP_TIMEOUTS] = c->timeouts;
		e->value[EFI_CSHM_QP_DUPLICATES] = c->duplicates;
		e->value[EFI_CSHM_QP_DROPS] = c->drops;
		w[n] = (struct efi_countershm_qp_work){
			.outstanding = outstanding,
			.stalled_ms = stalled_ms,
			.flags = rnr ? EFI_CSHM_QPW_RNR : 0,
		};
		n++;
	}
	pthread_mutex_unlock(&ctx->lock);
	*nqps = n;
	*omitted = more;
	*stalled = nstalled;
}

/* Writes the extension (the caller holds the sequence count odd); the
 * stall detector's part only into a version 4 page. */
static void store_ext(struct efi_countershm *p, const struct efi_counters *c,
		      const struct efi_countershm_qp *q, const struct efi_countershm_qp_work *w,
		      uint32_t nqps, uint32_t omitted, uint32_t stalled)
{
	struct efi_countershm_ext *x = efi_cshm_ext(p);

	for (unsigned i = 0; i < EFI_CSHM_DROP_REASONS; i++)
		__atomic_store_n(&x->drop_reasons[i],
				 i < EFI_DROP_REASON_MAX ? c->drop_reasons[i] : 0, __ATOMIC_RELAXED);
	__atomic_store_n(&x->nqps, nqps, __ATOMIC_RELAXED);
	__atomic_store_n(&x->qps_omitted, omitted, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < nqps; i++) {
		struct efi_countershm_qp *d = &x->qp[i];
		__atomic_store_n(&d->qpn, q[i].qpn, __ATOMIC_RELAXED);
		__atomic_store_n(&d->state, q[i].state, __ATOMIC_RELAXED);
		__atomic_store_n(&d->peer[0], q[i].peer[0], __ATOMIC_RELAXED);
		__atomic_store_n(&d->peer[1], q[i].peer[1], __ATOMIC_RELAXED);
		for (unsigned k = 0; k < EFI_CSHM_QP_VALUES; k++)
			__atomic_store_n(&d->value[k], q[i].value[k], __ATOMIC_RELAXED);
	}
	if (p->version < 4)
		return;
	__atomic_store_n(&x->stalled_qps, stalled, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < nqps; i++) {
		struct efi_countershm_qp_work *d = &x->work[i];
		__atomic_store_n(&d->outstanding, w[i].outstanding, __ATOMIC_RELAXED);
		__atomic_store_n(&d->stalled_ms, w[i].stalled_ms, __ATOMIC_RELAXED);
		__atomic_store_n(&d->flags, w[i].flags, __ATOMIC_RELAXED);
	}
}

/* Progress thread only; takes ctx->lock twice (inside
 * efi_query_context_counters, then for the peer table), never while writing
 * the page. */
void efi_counters_publish(struct efi_context_int *ctx)
{
	struct efi_countershm *p = __atomic_load_n(&ctx->cshm, __ATOMIC_ACQUIRE);
	struct efi_countershm_peer peers[EFI_CSHM_MAX_PEERS];
	struct efi_peer_table table;
	uint32_t npeers, omitted;
	struct efi_counters c;
	uint64_t now;

	if (!p)
		return;
	now = efi_now_ns();
	if (now < ctx->cshm_next_ns)
		return;
	ctx->cshm_next_ns = now + PUBLISH_INTERVAL_NS;
	if (efi_query_context_counters(&ctx->pub, &c))
		return;
	build_peer_table(ctx, &table);
	efi_peer_table_result(&table, peers, &npeers, &omitted);
	efi_peer_table_fini(&table);
	/* 64 × (88 + 16) bytes on the progress thread's stack, so that the page
	 * is written from a finished copy, not while holding ctx->lock */
	struct efi_countershm_qp qps[EFI_CSHM_MAX_QPS];
	struct efi_countershm_qp_work work[EFI_CSHM_MAX_QPS];
	bool v3 = p->version >= 3;
	uint32_t nqps = 0, qps_omitted = 0, stalled = 0;
	if (v3)
		build_qp_table(ctx, now, qps, work, &nqps, &qps_omitted, &stalled);
	uint32_t seq = __atomic_load_n(&p->seq, __ATOMIC_RELAXED);
	__atomic_store_n(&p->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	uint64_t v[EFI_CSHM_COUNT] = {
		[EFI_CSHM_TX_PACKETS] = c.tx_packets,
		[EFI_CSHM_TX_BYTES] = c.tx_bytes,
		[EFI_CSHM_RX_PACKETS] = c.rx_packets,
		[EFI_CSHM_RX_BYTES] = c.rx_bytes,
		[EFI_CSHM_RETRANSMISSIONS] = c.retransmissions,
		[EFI_CSHM_TIMEOUTS] = c.timeouts,
		[EFI_CSHM_DUPLICATES] = c.duplicates,
		[EFI_CSHM_RNR_NAKS_SENT] = c.rnr_naks_sent,
		[EFI_CSHM_RNR_NAKS_RECEIVED] = c.rnr_naks_received,
		[EFI_CSHM_SEQ_NAKS_SENT] = c.seq_naks_sent,
		[EFI_CSHM_SEQ_NAKS_RECEIVED] = c.seq_naks_received,
		[EFI_CSHM_DROPS] = c.drops,
	};
	for (int i = 0; i < EFI_CSHM_COUNT; i++)
		__atomic_store_n(&p->value[i], v[i], __ATOMIC_RELAXED);
	__atomic_store_n(&p->npeers, npeers, __ATOMIC_RELAXED);
	__atomic_store_n(&p->peers_omitted, omitted, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < EFI_CSHM_MAX_PEERS; i++)
		efi_cshm_peer_store(&p->peer[i], &peers[i]);
	if (v3)
		store_ext(p, &c, qps, work, nqps, qps_omitted, stalled);
	__atomic_store_n(&p->seq, seq + 2, __ATOMIC_RELEASE);
}

/* After the progress thread stopped: no lock needed. */
void efi_counters_publish_close(struct efi_context_int *ctx)
{
	if (ctx->cshm)
		munmap(ctx->cshm, page_size(ctx->cshm));
	ctx->cshm = NULL;
}
