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

/* No lock: called once at open, on the lease connection nobody else uses
 * until close.  The progress thread may already run: the pointer is
 * published last, with release order. */
void efi_counters_publish_open(struct efi_context_int *ctx, void *ctl)
{
	struct ctl_client *c = ctl;
	struct ctl_reply rep;
	struct ctl_buf req;
	struct efi_countershm *page;
	int fd, ok = 0;

	if (!c)
		return;
	fd = memfd_create("efi-counters", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return;
	if (ftruncate(fd, EFI_COUNTERSHM_SIZE) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		goto out;
	page = mmap(NULL, EFI_COUNTERSHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (page == MAP_FAILED)
		goto out;
	page->magic = EFI_COUNTERSHM_MAGIC;
	page->version = EFI_COUNTERSHM_VERSION;
	page->pid = (uint32_t)getpid();

	ctl_buf_init(&req);
	ctl_msg_begin(&req, EFI_CTL_PUBLISH_COUNTERS, 0);
	if (ctl_msg_end(&req) == 0 && ctl_client_call(c, &req, &fd, 1, &rep, 5000) == 0) {
		ok = rep.status == 0;
		ctl_reply_free(&rep);
	}
	ctl_buf_free(&req);
	if (ok)
		__atomic_store_n(&ctx->cshm, page, __ATOMIC_RELEASE);
	else
		munmap(page, EFI_COUNTERSHM_SIZE); /* an older efid: no published counters */
out:
	close(fd);
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
	__atomic_store_n(&p->seq, seq + 2, __ATOMIC_RELEASE);
}

/* After the progress thread stopped: no lock needed. */
void efi_counters_publish_close(struct efi_context_int *ctx)
{
	if (ctx->cshm)
		munmap(ctx->cshm, EFI_COUNTERSHM_SIZE);
	ctx->cshm = NULL;
}
