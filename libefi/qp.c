/* SPDX-License-Identifier: MIT */
/*
 * Queue pairs: creation, the verbs RC state machine (efi_modify_qp with its
 * attribute masks), queries, flushing to ERR, destruction.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "efi_int.h"
#include "lease.h"

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;
	while (p < n)
		p <<= 1;
	return p;
}

/* The send records (retx.c) are a mapping of their own, not heap: its pages
 * are zero until written, so they take memory only once the QP has sent
 * that far, and a reset gives them back (issue 18: memory per idle QP). */
#define TXREC_BYTES	((size_t)EFI_TXREC_SLOTS * sizeof(struct efi_txrec))

static void qp_free_queues(struct efi_qp_int *qp)
{
	if (qp->sq) {
		for (uint32_t i = 0; i <= qp->sq_mask; i++) {
			free(qp->sq[i].sge);
			free(qp->sq[i].inline_buf);
		}
	}
	if (qp->rq)
		for (uint32_t i = 0; i <= qp->rq_mask; i++)
			free(qp->rq[i].sge);
	free(qp->srq_wqe.sge);
	free(qp->sq);
	free(qp->rq);
	if (qp->txrec)
		munmap(qp->txrec, TXREC_BYTES);
	efi_reorder_free(&qp->reorder);
}

static int qp_alloc_queues(struct efi_qp_int *qp, const struct efi_qp_cap *cap)
{
	/* One slot more than the cap: a ring keeps one free to tell full from empty. */
	uint32_t ns = pow2_at_least(cap->max_send_wr + 1), nr = pow2_at_least(cap->max_recv_wr + 1);

	qp->sq = calloc(ns, sizeof(*qp->sq));
	qp->rq = calloc(nr, sizeof(*qp->rq));
	qp->txrec = mmap(NULL, TXREC_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (qp->txrec == MAP_FAILED)
		qp->txrec = NULL;
	if (!qp->sq || !qp->rq || !qp->txrec)
		return -ENOMEM;
	qp->sq_mask = ns - 1;
	qp->rq_mask = nr - 1;
	for (uint32_t i = 0; i < ns; i++) {
		qp->sq[i].sge = calloc(cap->max_send_sge ? cap->max_send_sge : 1, sizeof(struct efi_sge_int));
		if (!qp->sq[i].sge)
			return -ENOMEM;
		if (cap->max_inline_data && !(qp->sq[i].inline_buf = malloc(cap->max_inline_data)))
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < nr; i++)
		if (!(qp->rq[i].sge = calloc(cap->max_recv_sge ? cap->max_recv_sge : 1,
					     sizeof(struct efi_sge_int))))
			return -ENOMEM;
	/* the WQE taken from the SRQ for the message being received */
	if (qp->srq && !(qp->srq_wqe.sge = calloc(qp->srq->max_sge, sizeof(struct efi_sge_int))))
		return -ENOMEM;
	return 0;
}

/* Takes ctx->lock (the QP table). */
struct efi_qp *efi_create_qp(struct efi_pd *pd, struct efi_qp_init_attr *ia)
{
	struct efi_context_int *ctx;
	struct efi_qp_int *qp;
	struct efi_qp_cap cap;
	uint32_t idx;
	unsigned blk;

	if (!pd || !ia || (ia->qp_type != EFI_QPT_RC && ia->qp_type != EFI_QPT_UD) ||
	    !ia->send_cq || !ia->recv_cq ||
	    (ia->srq && ia->srq->context != pd->context) ||
	    ia->send_cq->context != pd->context || ia->recv_cq->context != pd->context ||
	    ia->cap.max_send_wr > EFI_MAX_QP_WR || ia->cap.max_recv_wr > EFI_MAX_QP_WR ||
	    ia->cap.max_send_sge > EFI_MAX_SGE || ia->cap.max_recv_sge > EFI_MAX_SGE ||
	    ia->cap.max_inline_data > EFI_MAX_INLINE) {
		errno = EINVAL;
		return NULL;
	}
	ctx = ctx_of(pd->context);
	cap = ia->cap;
	/* 0 stays 0: a send-only or receive-only QP (qperf's, and every
	 * kernel provider accepts them).  Its missing queue is a ring of one
	 * slot, always full: posting to it fails with ENOMEM. */
	if (cap.max_send_wr)
		cap.max_send_wr = pow2_at_least(cap.max_send_wr);
	if (cap.max_recv_wr)
		cap.max_recv_wr = pow2_at_least(cap.max_recv_wr);
	if (cap.max_send_sge == 0)
		cap.max_send_sge = 1;
	if (cap.max_recv_sge == 0)
		cap.max_recv_sge = 1;
	if (ia->srq)	/* no receive queue of its own, as verbs reports it */
		cap.max_recv_wr = cap.max_recv_sge = 0;
	int quota = efi_lease_reserve_qp(ctx->lease);
	if (quota) {
		errno = quota;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		efi_lease_release_qp(ctx->lease);
		errno = ENOMEM;
		return NULL;
	}
	qp->srq = ia->srq ? srq_of(ia->srq) : NULL;
	if (qp_alloc_queues(qp, &cap) < 0) {
		qp_free_queues(qp);
		free(qp);
		efi_lease_release_qp(ctx->lease);
		errno = ENOMEM;
		return NULL;
	}
	ia->cap = cap;
	qp->init = *ia;
	qp->ctx = ctx;
	qp->reorder.ctx_bytes = &ctx->reorder_bytes;	/* under ctx->lock, as the transport */
	qp->pub.context = pd->context;
	qp->pub.qp_context = ia->qp_context;
	qp->pub.pd = pd;
	qp->pub.send_cq = ia->send_cq;
	qp->pub.recv_cq = ia->recv_cq;
	qp->pub.srq = ia->srq;
	qp->pub.qp_type = ia->qp_type;
	qp->pub.state = EFI_QPS_RESET;
	qp->attr.qp_state = EFI_QPS_RESET;
	qp->attr.cap = cap;

	for (;;) {
		pthread_mutex_lock(&ctx->lock);
		/* the first block with room: later blocks fill only when the
		 * earlier ones are full */
		for (blk = 0; blk < ctx->nblocks && ctx->nqp_block[blk] >= EFI_QPN_PER_BLOCK; blk++)
			;
		if (blk < ctx->nblocks)
			break;
		pthread_mutex_unlock(&ctx->lock);
		int g = efi_ctx_grow(ctx);	/* every block full: efid's next slot */
		if (g) {
			qp_free_queues(qp);
			free(qp);
			efi_lease_release_qp(ctx->lease);
			errno = g;
			return NULL;
		}
	}
	idx = ctx->next_qp_index;
	while (ctx->qps[blk][idx])
		idx = (idx + 1) % EFI_QPN_PER_BLOCK;
	ctx->next_qp_index = (idx + 1) % EFI_QPN_PER_BLOCK;
	ctx->qps[blk][idx] = qp;
	ctx->nqp_block[blk]++;
	ctx->nqp++;
	qp->lane_base = (uint8_t)(blk * EFI_WIRE_MAX_LANES);
	qp->next_active = ctx->qp_list;
	if (ctx->qp_list)
		ctx->qp_list->prev_active = qp;
	ctx->qp_list = qp;
	qp->pub.qp_num = ctx->qpn_base[blk] | idx;
	qp->pub.handle = qp->pub.qp_num;
	pthread_mutex_unlock(&ctx->lock);

	atomic_fetch_add(&((struct efi_pd_int *)pd)->users, 1);
	atomic_fetch_add(&((struct efi_cq_int *)ia->send_cq)->users, 1);
	atomic_fetch_add(&((struct efi_cq_int *)ia->recv_cq)->users, 1);
	if (qp->srq)
		atomic_fetch_add(&qp->srq->users, 1);
	return &qp->pub;
}

static void flush_wc(struct efi_qp_int *qp, struct efi_cq *cq, uint64_t wr_id, enum efi_wc_opcode op)
{
	struct efi_wc wc = {
		.wr_id = wr_id, .status = EFI_WC_WR_FLUSH_ERR, .opcode = op,
		.qp_num = qp->pub.qp_num,
	};
	efi_cq_push((struct efi_cq_int *)cq, &wc, false);
}

/* Flushes every outstanding WQE (ctx->lock held). */
static void qp_flush(struct efi_qp_int *qp)
{
	for (uint32_t i = qp->sq_head; i != qp->sq_tail; i = (i + 1) & qp->sq_mask)
		flush_wc(qp, qp->pub.send_cq, qp->sq[i].wr_id, EFI_WC_SEND);
	qp->sq_head = qp->sq_started = qp->sq_tail;
	for (uint32_t i = qp->rq_head; i != qp->rq_tail; i = (i + 1) & qp->rq_mask)
		flush_wc(qp, qp->pub.recv_cq, qp->rq[i].wr_id, EFI_WC_RECV);
	qp->rq_head = qp->rq_tail;
	/* the SRQ's WQE a message was landing in is this QP's now; the SRQ's
	 * others stay for the other QPs */
	if (qp->srq_wqe_held)
		flush_wc(qp, qp->pub.recv_cq, qp->srq_wqe.wr_id, EFI_WC_RECV);
	qp->srq_wqe_held = false;
	qp->respq_count = 0;
	qp->rd_outstanding = 0;
	qp->snd_una = qp->snd_nxt = qp->snd_max;
	/* not freed here: the responder may be inside a held packet when it
	 * fails the QP; reset and destroy free it */
	efi_reorder_clear(&qp->reorder);
	efi_rd_early_free(qp);
	efi_retx_flush(qp);
}

void efi_qp_to_error(struct efi_qp_int *qp)
{
	/* what arrived is acknowledged before the QP stops answering: a
	 * peer's last send must not fail because our ACK of it was held for
	 * an answer that now never comes (a DISCONNECTED right after the
	 * last message: fi_pingpong rdm's flushed send) */
	efi_xport_send_held_ack(qp->ctx, qp);
	qp->attr.qp_state = EFI_QPS_ERR;
	qp->pub.state = EFI_QPS_ERR;
	qp_flush(qp);
}

/* Forgets all queued work and transport state (ctx->lock held). */
void efi_qp_set_conn_key(struct efi_qp *pub, uint32_t key)
{
	struct efi_qp_int *qp = qp_of(pub);
	pthread_mutex_lock(&qp->ctx->lock);
	qp->conn_key = key;
	pthread_mutex_unlock(&qp->ctx->lock);
}

void efi_qp_set_peer_link_mtu(struct efi_qp *pub, uint32_t mtu)
{
	struct efi_qp_int *qp = qp_of(pub);
	pthread_mutex_lock(&qp->ctx->lock);
	qp->peer_link_mtu = mtu ? mtu : EFI_PEER_LINK_OLD;
	pthread_mutex_unlock(&qp->ctx->lock);
}

static void qp_reset(struct efi_qp_int *qp)
{
	struct efi_qp_cap cap = qp->attr.cap;

	qp->sq_head = qp->sq_started = qp->sq_tail = 0;
	qp->rq_head = qp->rq_tail = 0;
	qp->srq_wqe_held = false;
	qp->respq_count = qp->respq_head = 0;
	qp->rd_outstanding = 0;
	qp->resp_op = RESP_IDLE;
	qp->nak_sent = false;
	qp->rnr_wait = false;
	qp->retries = qp->stalls = 0;
	qp->peer_alive = false;
	/* a new peer may not read piggybacked ACKs: it says so again */
	qp->peer_reads_pack = false;
	qp->peer_sends_pack = false;
	qp->peer_wide = false;
	qp->ack_hold_ns = 0;
	qp->ack_hold_pending = false;
	efi_rd_early_free(qp);
	qp->pkts_since_ackreq = 0;
	qp->msn = 0;
	qp->conn_key = 0;
	qp->peer_link_mtu = 0;
	/* zero pages again, and no longer resident (memset would touch them all) */
	if (madvise(qp->txrec, TXREC_BYTES, MADV_DONTNEED) != 0)
		memset(qp->txrec, 0, TXREC_BYTES);
	efi_reorder_free(&qp->reorder);
	efi_retx_init(qp, efi_now_ns());
	efi_pt_qp_reset(qp->ctx, qp);
	memset(qp->acache, 0, sizeof(qp->acache));
	memset(&qp->attr, 0, sizeof(qp->attr));
	qp->attr.cap = cap;
	qp->attr.qp_state = EFI_QPS_RESET;
	qp->pub.state = EFI_QPS_RESET;
}

uint64_t efi_rnr_timer_ns(unsigned code)
{
	/* The verbs/IBTA table, in µs × 100. */
	static const uint32_t t[32] = {
		6553600, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256,
		384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
		24576, 32768, 49152,
	};
	return (uint64_t)t[code & 31] * 10000ull;
}

#define M(x) EFI_QP_##x
/* The attributes each transition requires and allows besides STATE, for an
 * RC and for a UD QP: the verbs tables (efi.h, efi_modify_qp).  Any state
 * goes to RESET or ERR with STATE alone. */
static const struct transition {
	enum efi_qp_state cur, next;
	int rc_req, rc_opt, ud_req, ud_opt;
} transitions[] = {
	{ EFI_QPS_RESET, EFI_QPS_INIT, M(ACCESS_FLAGS), M(PKEY_INDEX) | M(PORT),
	  M(QKEY), M(PKEY_INDEX) | M(PORT) },
	{ EFI_QPS_INIT, EFI_QPS_INIT, 0, M(ACCESS_FLAGS) | M(PKEY_INDEX) | M(PORT),
	  0, M(QKEY) | M(PKEY_INDEX) | M(PORT) },
	{ EFI_QPS_INIT, EFI_QPS_RTR,
	  M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) | M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER),
	  M(ACCESS_FLAGS) | M(PKEY_INDEX), 0, M(QKEY) | M(PKEY_INDEX) },
	{ EFI_QPS_RTR, EFI_QPS_RTS,
	  M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) | M(SQ_PSN) | M(MAX_QP_RD_ATOMIC),
	  M(ACCESS_FLAGS) | M(MIN_RNR_TIMER), M(SQ_PSN), M(QKEY) },
	{ EFI_QPS_RTS, EFI_QPS_RTS, 0, M(ACCESS_FLAGS) | M(MIN_RNR_TIMER), 0, M(QKEY) },
	{ EFI_QPS_RTS, EFI_QPS_SQD, 0, M(ACCESS_FLAGS) | M(MIN_RNR_TIMER), 0, M(QKEY) },
	{ EFI_QPS_SQD, EFI_QPS_RTS, 0, M(ACCESS_FLAGS) | M(MIN_RNR_TIMER), 0, M(QKEY) },
	{ EFI_QPS_SQD, EFI_QPS_SQD, 0, M(ACCESS_FLAGS) | M(MIN_RNR_TIMER), 0, M(QKEY) },
};

/* The required and optional masks of a transition; false if it does not
 * exist. */
static bool transition_masks(bool ud, enum efi_qp_state cur, enum efi_qp_state next, int *req, int *opt)
{
	*req = M(STATE);
	*opt = 0;
	if (next == EFI_QPS_RESET || next == EFI_QPS_ERR)
		return true;
	for (size_t i = 0; i < sizeof(transitions) / sizeof(transitions[0]); i++) {
		const struct transition *t = &transitions[i];
		if (t->cur == cur && t->next == next) {
			*req |= ud ? t->ud_req : t->rc_req;
			*opt = ud ? t->ud_opt : t->rc_opt;
			return true;
		}
	}
	return false;
}

#define EFI_ACCESS_ALL (EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_WRITE | \
			EFI_ACCESS_REMOTE_READ | EFI_ACCESS_REMOTE_ATOMIC)

/* Checks the attribute values the mask selects (ctx->lock held). */
static int check_values(struct efi_qp_int *qp, const struct efi_qp_attr *a, int mask)
{
	struct efi_ctx_params *p = &qp->ctx->p;

	if ((mask & M(ACCESS_FLAGS)) && (a->qp_access_flags & ~(unsigned)EFI_ACCESS_ALL))
		return EINVAL;
	if ((mask & M(PKEY_INDEX)) && a->pkey_index != 0)
		return EINVAL;
	if ((mask & M(PORT)) && a->port_num != 1)
		return EINVAL;
	if ((mask & M(AV))) {
		if (!a->ah_attr.is_global || a->ah_attr.grh.sgid_index >= p->ngids ||
		    efi_gid_is_v4(&a->ah_attr.grh.dgid) != efi_gid_is_v4(&p->gids[a->ah_attr.grh.sgid_index]))
			return EINVAL;
	}
	if ((mask & M(PATH_MTU)) &&
	    (a->path_mtu < EFI_MTU_256 || a->path_mtu > EFI_MTU_4096 ||
	     a->path_mtu > efi_active_mtu(p->link_mtu)))
		return EINVAL;
	if ((mask & M(DEST_QPN)) && (a->dest_qp_num > EFI_QPN_MASK || a->dest_qp_num < EFI_QPN_PER_BLOCK))
		return EINVAL;
	if ((mask & M(RQ_PSN)) && a->rq_psn > EFI_PSN_MASK)
		return EINVAL;
	if ((mask & M(SQ_PSN)) && a->sq_psn > EFI_PSN_MASK)
		return EINVAL;
	if ((mask & M(RETRY_CNT)) && a->retry_cnt > 7)
		return EINVAL;
	if ((mask & M(RNR_RETRY)) && a->rnr_retry > 7)
		return EINVAL;
	if ((mask & M(MIN_RNR_TIMER)) && a->min_rnr_timer > 31)
		return EINVAL;
	if ((mask & M(TIMEOUT)) && a->timeout > 31)
		return EINVAL;
	if ((mask & M(MAX_QP_RD_ATOMIC)) && a->max_rd_atomic > EFI_MAX_RD_ATOMIC)
		return EINVAL;
	if ((mask & M(MAX_DEST_RD_ATOMIC)) && a->max_dest_rd_atomic > EFI_MAX_RD_ATOMIC)
		return EINVAL;
	return 0;
}

/* Takes ctx->lock. */
int efi_modify_qp(struct efi_qp *pub, struct efi_qp_attr *a, int mask)
{
	struct efi_qp_int *qp = qp_of(pub);
	struct efi_context_int *ctx;
	enum efi_qp_state cur, next;
	int req, opt, err;
	const int known = M(STATE) | M(CUR_STATE) | M(ACCESS_FLAGS) | M(PKEY_INDEX) | M(PORT) |
			  M(AV) | M(PATH_MTU) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
			  M(RQ_PSN) | M(MAX_QP_RD_ATOMIC) | M(MIN_RNR_TIMER) | M(SQ_PSN) |
			  M(MAX_DEST_RD_ATOMIC) | M(DEST_QPN) | M(QKEY);

	if (!qp || !a || (mask & ~known))
		return EINVAL;
	ctx = qp->ctx;
	pthread_mutex_lock(&ctx->lock);
	cur = qp->attr.qp_state;
	next = (mask & M(STATE)) ? a->qp_state : cur;
	err = EINVAL;
	if ((mask & M(CUR_STATE)) && a->cur_qp_state != cur)
		goto out;
	if (next > EFI_QPS_ERR || next == EFI_QPS_SQE)
		goto out;
	if (!transition_masks(qp->pub.qp_type == EFI_QPT_UD, cur, next, &req, &opt))
		goto out;
	if (!(mask & M(STATE)))
		req &= ~M(STATE);	/* a same-state modify without STATE */
	if ((mask & req) != req || (mask & ~(req | opt | M(STATE) | M(CUR_STATE))))
		goto out;
	if ((err = check_values(qp, a, mask)))
		goto out;

	/* what arrived is acknowledged before the QP stops answering */
	if (next == EFI_QPS_RESET || next == EFI_QPS_ERR)
		efi_xport_send_held_ack(ctx, qp);
	if (next == EFI_QPS_RESET) {
		qp_reset(qp);
		goto ok;
	}
	if (next == EFI_QPS_ERR) {
		/* What has already arrived counts first: an ACK sitting in the
		 * socket completes its send successfully rather than being
		 * flushed (a peer that disconnects right after taking our last
		 * message would otherwise fail it, when the disconnect is
		 * handled before the thread that polls runs). */
		if (cur == EFI_QPS_RTS || cur == EFI_QPS_SQD)
			efi_xport_run(ctx);
		if (qp->attr.qp_state != EFI_QPS_ERR)
			efi_qp_to_error(qp);
		goto ok;
	}
	if (mask & M(ACCESS_FLAGS))
		qp->attr.qp_access_flags = a->qp_access_flags;
	if (mask & M(QKEY))
		qp->attr.qkey = a->qkey;
	if (mask & M(PORT))
		qp->attr.port_num = a->port_num;
	if (mask & M(MIN_RNR_TIMER)) {
		qp->attr.min_rnr_timer = a->min_rnr_timer;
		qp->min_rnr_ns = efi_rnr_timer_ns(a->min_rnr_timer);
	}
	if (mask & M(AV))
		qp->attr.ah_attr = a->ah_attr;
	if (mask & M(PATH_MTU))
		qp->attr.path_mtu = a->path_mtu;
	if (mask & M(DEST_QPN))
		qp->attr.dest_qp_num = a->dest_qp_num;
	if (mask & M(RQ_PSN)) {
		qp->attr.rq_psn = a->rq_psn;
		qp->rcv_psn = a->rq_psn;
	}
	if (mask & M(MAX_DEST_RD_ATOMIC))
		qp->attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & M(MAX_QP_RD_ATOMIC))
		qp->attr.max_rd_atomic = a->max_rd_atomic;
	if (mask & M(TIMEOUT)) {
		qp->attr.timeout = a->timeout;
		qp->rto_ns = a->timeout ? (4096ull << a->timeout) : 0;
		if (qp->rto_ns && qp->rto_ns < EFI_MIN_RTO_NS)
			qp->rto_ns = EFI_MIN_RTO_NS;
	}
	if (mask & M(RETRY_CNT))
		qp->attr.retry_cnt = a->retry_cnt;
	if (mask & M(RNR_RETRY))
		qp->attr.rnr_retry = a->rnr_retry;
	if (mask & M(SQ_PSN)) {
		qp->attr.sq_psn = a->sq_psn;
		qp->snd_una = qp->snd_nxt = qp->snd_max = a->sq_psn;
		efi_retx_init(qp, efi_now_ns());
		efi_pt_qp_reset(qp->ctx, qp);
	}
	if (mask & M(SQ_PSN))
		qp->ud_psn = a->sq_psn;
	if (next == EFI_QPS_RTR && cur == EFI_QPS_INIT && qp->pub.qp_type == EFI_QPT_RC) {
		const union efi_gid *dgid = &qp->attr.ah_attr.grh.dgid;
		memset(&qp->peer, 0, sizeof(qp->peer));
		qp->peer.sin6_family = AF_INET6;
		memcpy(&qp->peer.sin6_addr, dgid->raw, 16);
		qp->peer.sin6_port = htons((uint16_t)efi_lane_port(ctx->p.port_base, 0, qp->attr.dest_qp_num));
		uint32_t link = ctx->p.link_mtu;

		if (qp->peer_link_mtu > EFI_PEER_LINK_OLD && qp->peer_link_mtu < link)
			link = qp->peer_link_mtu;	/* the smaller link's room, on both sides */
		qp->seg = efi_qp_seg(link, !efi_gid_is_v4(dgid), qp->attr.path_mtu, ctx->link_seg);
		if (qp->peer_link_mtu == EFI_PEER_LINK_OLD && qp->seg > EFI_OLD_MAX_SEG)
			qp->seg = EFI_OLD_MAX_SEG;	/* what an older peer computes */
		if (qp->seg == 0)
			goto out;
		qp->resp_op = RESP_IDLE;
		qp->nak_sent = false;
	}
	if (next == EFI_QPS_RTS && cur == EFI_QPS_RTR)
		qp->timer_start_ns = efi_now_ns();
	qp->attr.qp_state = next;
	qp->pub.state = next;
	qp->attr.sq_draining = next == EFI_QPS_SQD;
ok:
	/* one visit at least: the CQ-loss rule and the path table reach it
	 * as if every run visited every QP (active.c) */
	efi_qp_activate(ctx, qp);
	err = 0;
out:
	pthread_mutex_unlock(&ctx->lock);
	return err;
}
#undef M

/* Takes ctx->lock. */
int efi_query_qp(struct efi_qp *pub, struct efi_qp_attr *attr, int attr_mask,
		 struct efi_qp_init_attr *init_attr)
{
	struct efi_qp_int *qp = qp_of(pub);

	(void)attr_mask;
	if (!qp || !attr || !init_attr)
		return EINVAL;
	pthread_mutex_lock(&qp->ctx->lock);
	*attr = qp->attr;
	attr->cur_qp_state = qp->attr.qp_state;
	attr->sq_psn = qp->attr.sq_psn;
	*init_attr = qp->init;
	qp->pub.state = qp->attr.qp_state;
	pthread_mutex_unlock(&qp->ctx->lock);
	return 0;
}

/* Takes ctx->lock: flushes, then unlinks the QP so no packet finds it. */
int efi_destroy_qp(struct efi_qp *pub)
{
	struct efi_qp_int *qp = qp_of(pub);
	struct efi_context_int *ctx;

	if (!qp)
		return 0;
	ctx = qp->ctx;
	/* first, so a connection-manager watcher never touches it again */
	efi_cm_unbind_qp(qp);
	pthread_mutex_lock(&ctx->lock);
	efi_xport_send_held_ack(ctx, qp);
	qp_flush(qp);
	int blk = efi_qpn_block(ctx, qp->pub.qp_num);
	ctx->qps[blk][qp->pub.qp_num & (EFI_QPN_PER_BLOCK - 1)] = NULL;
	ctx->nqp_block[blk]--;
	ctx->nqp--;
	efi_qp_deactivate(ctx, qp);
	if (qp->prev_active)
		qp->prev_active->next_active = qp->next_active;
	else
		ctx->qp_list = qp->next_active;
	if (qp->next_active)
		qp->next_active->prev_active = qp->prev_active;
	efi_counters_add(&ctx->dead, &qp->cnt);
	efi_reorder_free(&qp->reorder);	/* its bytes leave the context's count under the lock */
	pthread_mutex_unlock(&ctx->lock);
	atomic_fetch_sub(&((struct efi_pd_int *)qp->pub.pd)->users, 1);
	atomic_fetch_sub(&((struct efi_cq_int *)qp->pub.send_cq)->users, 1);
	atomic_fetch_sub(&((struct efi_cq_int *)qp->pub.recv_cq)->users, 1);
	if (qp->srq)
		atomic_fetch_sub(&qp->srq->users, 1);
	qp_free_queues(qp);
	free(qp);
	efi_lease_release_qp(ctx->lease);
	return 0;
}

/* Takes ctx->lock. */
int efi_query_qp_counters(struct efi_qp *pub, struct efi_counters *c)
{
	struct efi_qp_int *qp = qp_of(pub);

	if (!qp || !c)
		return EINVAL;
	pthread_mutex_lock(&qp->ctx->lock);
	*c = qp->cnt;
	c->num_paths = qp->npaths;
	for (unsigned i = 0; i < qp->npaths && i < EFI_COUNTERS_PATHS; i++) {
		const struct efi_path *p = &qp->paths[i];
		struct efi_path_counters *o = &c->paths[i];
		o->rtt_min_ns = p->rtt.min_ns;
		o->rtt_smoothed_ns = p->rtt.samples ? p->rtt.srtt_ns : 0;
		o->cwnd_milli = (uint64_t)(p->cc.cwnd * 1000);
		o->inflight = p->inflight;
		o->retransmissions = p->retransmissions;
		o->suspected = p->suspected;
		o->restored = p->restored;
		o->active = p->state == EFI_PATH_ACTIVE;
		o->peer_lane = p->dst_lane;
	}
	pthread_mutex_unlock(&qp->ctx->lock);
	return 0;
}

void efi_qp_mem(const struct efi_qp *pub, struct efi_qp_mem *m)
{
	const struct efi_qp_int *qp = (const struct efi_qp_int *)pub;
	long page = sysconf(_SC_PAGESIZE);
	size_t npages = (TXREC_BYTES + (size_t)page - 1) / (size_t)page;
	unsigned char vec[64];

	memset(m, 0, sizeof(*m));
	m->qp_struct = sizeof(*qp);
	m->txrec_reserved = TXREC_BYTES;
	if (npages <= sizeof(vec) && mincore(qp->txrec, TXREC_BYTES, vec) == 0)
		for (size_t i = 0; i < npages; i++)
			m->txrec_resident += vec[i] & 1 ? (size_t)page : 0;
	pthread_mutex_lock(&qp->ctx->lock);
	m->reorder = efi_reorder_bytes(&qp->reorder);
	m->read_early = qp->rd_early ? EFI_RD_EARLY / 8 : 0;
	m->ctx_reorder = qp->ctx->reorder_bytes;
	pthread_mutex_unlock(&qp->ctx->lock);
}
