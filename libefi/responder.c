/* SPDX-License-Identifier: MIT */
/*
 * The responder side of the RC transport: in-order processing of request
 * packets (early ones wait in the reorder buffer, reorder.h, and are
 * acknowledged selectively with a SACK block), duplicate detection (re-ACK, Read replay, atomic replay from the
 * cache), NAK PSN sequence error once per gap, RNR NAK when no receive is
 * posted, rkey/bounds/access checks before any byte of target memory is
 * touched, placement of Sends into receive SGEs and of Writes into MRs, and
 * the output queue of responses (ACKs, Read responses, atomic ACKs) that the
 * transmit path drains in PSN order (but for Read responses sent again,
 * which go first).  Everything runs with ctx->lock held.
 */
#include <errno.h>
#include <string.h>

#include "efi_int.h"

static struct efi_respq_ent *respq_tail(struct efi_qp_int *qp)
{
	if (!qp->respq_count)
		return NULL;
	return &qp->respq[(qp->respq_head + qp->respq_count - 1) % EFI_RESPQ_SLOTS];
}

static struct efi_respq_ent *respq_add(struct efi_qp_int *qp)
{
	struct efi_respq_ent *e;

	if (qp->respq_count == EFI_RESPQ_SLOTS)
		return NULL;
	e = &qp->respq[(qp->respq_head + qp->respq_count) % EFI_RESPQ_SLOTS];
	qp->respq_count++;
	memset(e, 0, sizeof(*e));
	return e;
}

/* The PSN a causal ACK (efi_req_causal_ack) names (ctx->lock held): every
 * request up to it taken, stopping short of a Read or atomic whose
 * responses are still queued, which a peer of the first PACK version would
 * take an ACK passing for lost. */
uint32_t efi_resp_causal_psn(const struct efi_qp_int *qp)
{
	unsigned k = qp->respq_head;

	for (unsigned i = 0; i < qp->respq_count; i++, k = (k + 1) % EFI_RESPQ_SLOTS) {
		const struct efi_respq_ent *e = &qp->respq[k];
		if (e->kind == RESPQ_READ)
			return efi_psn_add(e->first_psn, EFI_PSN_MASK);
		if (e->kind == RESPQ_ATOMIC)
			return efi_psn_add(e->psn, EFI_PSN_MASK);
	}
	return efi_psn_add(qp->rcv_psn, EFI_PSN_MASK);
}

/* An entry that goes out before everything queued (a Read replay). */
static struct efi_respq_ent *respq_push_front(struct efi_qp_int *qp)
{
	struct efi_respq_ent *e;

	if (qp->respq_count == EFI_RESPQ_SLOTS)
		return NULL;
	qp->respq_head = (qp->respq_head + EFI_RESPQ_SLOTS - 1) % EFI_RESPQ_SLOTS;
	qp->respq_count++;
	e = &qp->respq[qp->respq_head];
	memset(e, 0, sizeof(*e));
	return e;
}

/* Queues an ACK or NAK; consecutive plain ACKs coalesce into one. */
void efi_resp_enqueue_ack(struct efi_qp_int *qp, uint8_t syndrome, uint32_t psn, uint64_t ts_echo, uint8_t path)
{
	struct efi_respq_ent *e = respq_tail(qp);

	if (syndrome == (EFI_AETH_ACK | EFI_AETH_CREDITS_NONE) && e && e->kind == RESPQ_ACK &&
	    e->syndrome == syndrome) {
		e->psn = psn;
		e->msn = qp->msn;
		e->ts_echo = ts_echo;
		e->path = path;
		return;
	}
	if (!(e = respq_add(qp)))
		return;	/* the requester's timer recovers */
	e->kind = RESPQ_ACK;
	e->syndrome = syndrome;
	e->psn = psn;
	e->msn = qp->msn;
	e->ts_echo = ts_echo;
	e->path = path;
}

static void nak(struct efi_qp_int *qp, const struct efi_pkt *pkt, enum efi_nak_code code)
{
	EFI_TRACE("NAK qp %x code %d psn %x\n", qp->pub.qp_num, code, pkt->psn);
	/* The QP goes to ERR first (flushing receives); the NAK still leaves. */
	efi_qp_to_error(qp);
	efi_resp_enqueue_ack(qp, EFI_AETH_NAK | code, pkt->psn, pkt->tx_ts, pkt->path);
}

/* The receive WQE the current message lands in: the head of the QP's
 * receive queue, or the one it took from its SRQ (ctx->lock held). */
static struct efi_rwqe *cur_rwqe(struct efi_qp_int *qp)
{
	return qp->srq ? &qp->srq_wqe : &qp->rq[qp->rq_head];
}

/* Whether a receive WQE is there for a new message; with an SRQ, takes one
 * from it (ctx->lock held). */
static bool have_rwqe(struct efi_qp_int *qp)
{
	if (!qp->srq)
		return qp->rq_head != qp->rq_tail;
	if (!qp->srq_wqe_held)
		qp->srq_wqe_held = efi_srq_take(qp->srq, &qp->srq_wqe);
	return qp->srq_wqe_held;
}

static void recv_complete(struct efi_qp_int *qp, const struct efi_pkt *pkt, enum efi_wc_status st,
			  enum efi_wc_opcode op, uint32_t byte_len)
{
	struct efi_rwqe *r = cur_rwqe(qp);
	struct efi_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = r->wr_id;
	wc.status = st;
	wc.opcode = op;
	wc.byte_len = byte_len;
	/* A message longer than its receive: what did not fit, for
	 * fi_cq_readerr's olen (efi.h, EFI_WC_LOC_LEN_ERR). */
	if (st == EFI_WC_LOC_LEN_ERR)
		wc.vendor_err = qp->resp_over;
	wc.qp_num = qp->pub.qp_num;
	wc.src_qp = pkt->src_qpn;
	if (pkt->hdrs & EFI_HDR_IMMDT) {
		wc.imm_data = pkt->imm_be;
		wc.wc_flags |= EFI_WC_WITH_IMM;
	}
	if (qp->srq)
		qp->srq_wqe_held = false;
	else
		qp->rq_head = (qp->rq_head + 1) & qp->rq_mask;
	/* the application may answer this message at once: its ACK can
	 * wait a moment to leave behind the answer (xport.c) */
	if (st == EFI_WC_SUCCESS)
		qp->ack_hold_pending = true;
	efi_cq_push((struct efi_cq_int *)qp->pub.recv_cq, &wc, pkt->flags & EFI_PKT_F_SOLICITED);
}

/* A receive WQE for a packet that needs one; false after queueing an RNR
 * NAK (or failing the QP for a receive with a bad SGE). */
static bool need_rwqe(struct efi_qp_int *qp, const struct efi_pkt *pkt)
{
	if (!have_rwqe(qp)) {
		qp->cnt.rnr_naks_sent++;
		/* The requester sends everything again from this PSN after
		 * the RNR wait (and forgets what was SACKed past it, retx.c):
		 * what is held past it goes. */
		efi_reorder_clear(&qp->reorder);
		efi_resp_enqueue_ack(qp, EFI_AETH_RNR_NAK | (qp->attr.min_rnr_timer & 31), pkt->psn,
				     pkt->tx_ts, pkt->path);
		return false;
	}
	if (cur_rwqe(qp)->bad) {
		recv_complete(qp, pkt, EFI_WC_LOC_PROT_ERR, EFI_WC_RECV, 0);
		nak(qp, pkt, EFI_NAK_REM_OP);
		return false;
	}
	return true;
}

static bool is_send(uint8_t op)
{
	return op <= EFI_OP_SEND_ONLY_IMM;
}

static bool is_write(uint8_t op)
{
	return op >= EFI_OP_WRITE_FIRST && op <= EFI_OP_WRITE_ONLY_IMM;
}

static bool rd_room(struct efi_qp_int *qp)
{
	unsigned n = 0;
	for (uint32_t i = 0; i < qp->respq_count; i++)
		if (qp->respq[(qp->respq_head + i) % EFI_RESPQ_SLOTS].kind != RESPQ_ACK)
			n++;
	return n < EFI_MAX_RD_ATOMIC + 1 && qp->respq_count + 2 <= EFI_RESPQ_SLOTS;
}

static void handle_send(struct efi_qp_int *qp, const struct efi_pkt *pkt)
{
	bool first = pkt->flags & EFI_PKT_F_FIRST, last = pkt->flags & EFI_PKT_F_LAST;
	struct efi_rwqe *r;
	uint32_t room, take;

	if ((first && qp->resp_op != RESP_IDLE) || (!first && qp->resp_op != RESP_SEND)) {
		nak(qp, pkt, EFI_NAK_INV_REQ);
		return;
	}
	if (first) {
		if (!need_rwqe(qp, pkt))
			return;
		qp->resp_off = 0;
		qp->resp_over = 0;
	}
	r = cur_rwqe(qp);
	/* A message longer than the receive fills the buffers and is taken to
	 * its last packet (ACKed as usual), so that the error completion can
	 * say how much did not fit; then the QP fails as verbs says, with the
	 * NAK on the last packet's PSN. */
	room = r->length - qp->resp_off;
	take = pkt->payload_len < room ? (uint32_t)pkt->payload_len : room;
	if (take)
		efi_sge_copy_in(r->sge, r->num_sge, qp->resp_off, pkt->payload, take);
	qp->resp_off += take;
	qp->resp_over += (uint32_t)pkt->payload_len - take;
	if (last && qp->resp_over) {
		recv_complete(qp, pkt, EFI_WC_LOC_LEN_ERR, EFI_WC_RECV, qp->resp_off);
		nak(qp, pkt, EFI_NAK_INV_REQ);
		return;
	}
	qp->rcv_psn = efi_psn_add(qp->rcv_psn, 1);
	if (last) {
		qp->msn = (qp->msn + 1) & EFI_MSN_MASK;
		qp->resp_op = RESP_IDLE;
		recv_complete(qp, pkt, EFI_WC_SUCCESS, EFI_WC_RECV, qp->resp_off);
	} else {
		qp->resp_op = RESP_SEND;
	}
}

static void handle_write(struct efi_qp_int *qp, const struct efi_pkt *pkt)
{
	bool first = pkt->flags & EFI_PKT_F_FIRST, last = pkt->flags & EFI_PKT_F_LAST;
	bool imm = pkt->flags & EFI_PKT_F_IMM;

	if ((first && qp->resp_op != RESP_IDLE) || (!first && qp->resp_op != RESP_WRITE)) {
		nak(qp, pkt, EFI_NAK_INV_REQ);
		return;
	}
	if (last && imm && !need_rwqe(qp, pkt))
		return;
	if (first) {
		uint32_t len = pkt->reth.dma_len;
		if (len) {
			struct efi_mr_int *mr;
			if (!(qp->attr.qp_access_flags & EFI_ACCESS_REMOTE_WRITE) ||
			    !(mr = efi_mr_check(qp->ctx, pkt->reth.rkey, qp->pub.pd, pkt->reth.va, len,
						EFI_ACCESS_REMOTE_WRITE))) {
				nak(qp, pkt, EFI_NAK_REM_ACCESS);
				return;
			}
		}
		qp->write_ptr = (uint8_t *)(uintptr_t)pkt->reth.va;
		qp->write_left = qp->write_total = len;
	}
	if (pkt->payload_len > qp->write_left || (last && pkt->payload_len != qp->write_left)) {
		nak(qp, pkt, EFI_NAK_INV_REQ);
		return;
	}
	if (pkt->payload_len)
		memcpy(qp->write_ptr, pkt->payload, pkt->payload_len);
	qp->write_ptr += pkt->payload_len;
	qp->write_left -= (uint32_t)pkt->payload_len;
	qp->rcv_psn = efi_psn_add(qp->rcv_psn, 1);
	if (last) {
		qp->msn = (qp->msn + 1) & EFI_MSN_MASK;
		qp->resp_op = RESP_IDLE;
		if (imm)
			recv_complete(qp, pkt, EFI_WC_SUCCESS, EFI_WC_RECV_RDMA_WITH_IMM, qp->write_total);
		else if (first)
			/* A one-packet Write is how a Write ping-pong (and
			 * eager RDMA) signals: the application spinning on
			 * memory answers it at once, so its ACK waits for the
			 * answer as a Send's does.  Sent first, the ACK's
			 * sendmmsg delayed every answer: write_lat was 3 us
			 * over send_lat (issue 15).  Longer Writes are bulk:
			 * their ACK goes at once. */
			qp->ack_hold_pending = true;
	} else {
		qp->resp_op = RESP_WRITE;
	}
}

/* Queues len bytes of the responses of Read request pkt from its packet
 * skip on: behind everything queued, or before it (front: a replay of
 * responses that left already). */
static bool queue_read_at(struct efi_qp_int *qp, const struct efi_pkt *pkt, uint32_t skip, uint32_t len,
			  bool front)
{
	struct efi_respq_ent *e;
	uint64_t va = pkt->reth.va + (uint64_t)skip * qp->seg;

	if (len && (!(qp->attr.qp_access_flags & EFI_ACCESS_REMOTE_READ) ||
		    !efi_mr_check(qp->ctx, pkt->reth.rkey, qp->pub.pd, va, len, EFI_ACCESS_REMOTE_READ)))
		return false;
	e = front ? respq_push_front(qp) : respq_add(qp);
	if (!e)
		return false;
	e->kind = RESPQ_READ;
	e->first_psn = e->psn = efi_psn_add(pkt->psn, skip);
	e->src = (uint8_t *)(uintptr_t)va;
	e->left = e->total = len;
	e->ts_echo = pkt->tx_ts;
	e->path = pkt->path;
	e->msn = qp->msn;
	return true;
}

/* Queues the responses of a new Read request. */
static bool queue_read(struct efi_qp_int *qp, const struct efi_pkt *pkt)
{
	return queue_read_at(qp, pkt, 0, pkt->reth.dma_len, false);
}

static void queue_atomic(struct efi_qp_int *qp, const struct efi_pkt *pkt, uint64_t orig)
{
	struct efi_respq_ent *e = respq_add(qp);

	e->kind = RESPQ_ATOMIC;
	e->psn = pkt->psn;
	e->orig = orig;
	e->ts_echo = pkt->tx_ts;
	e->path = pkt->path;
	e->msn = qp->msn;
}

/* The part of responses [psn, psn + n) to send again: from the first that
 * left already (is in no queued Read's unsent range) up to the next that is
 * still queued.  Returns how many (0: every one is still queued), the
 * first in *from. */
static uint32_t replay_range(const struct efi_qp_int *qp, uint32_t psn, uint32_t n, uint32_t *from)
{
	uint32_t p = psn, end = efi_psn_add(psn, n), q;
	bool moved = true;

	while (moved && efi_psn_before(p, end)) {
		moved = false;
		for (uint32_t i = 0; i < qp->respq_count; i++) {
			const struct efi_respq_ent *e = &qp->respq[(qp->respq_head + i) % EFI_RESPQ_SLOTS];
			uint32_t stop;

			if (e->kind != RESPQ_READ)
				continue;
			stop = efi_psn_add(e->first_psn, efi_pkt_count(e->total, qp->seg));
			if (!efi_psn_before(p, e->psn) && efi_psn_before(p, stop)) {
				p = stop;
				moved = true;
			}
		}
	}
	if (!efi_psn_before(p, end))
		return 0;
	q = end;
	for (uint32_t i = 0; i < qp->respq_count; i++) {
		const struct efi_respq_ent *e = &qp->respq[(qp->respq_head + i) % EFI_RESPQ_SLOTS];
		if (e->kind == RESPQ_READ && efi_psn_after(e->psn, p) && efi_psn_before(e->psn, q))
			q = e->psn;
	}
	*from = p;
	return (uint32_t)efi_psn_diff(q, p);
}

/* A duplicate request (PSN before rcv_psn). */
static void handle_duplicate(struct efi_qp_int *qp, const struct efi_pkt *pkt)
{
	qp->cnt.duplicates++;
	if (pkt->opcode == EFI_OP_READ_REQUEST) {
		uint32_t n = efi_pkt_count(pkt->reth.dma_len, qp->seg);
		/* A replay may not reach PSNs this responder has not
		 * accepted: that would acknowledge requests it never saw. */
		if (n == 0 || efi_psn_diff(efi_psn_add(pkt->psn, n), qp->rcv_psn) > 0) {
			efi_count_drop(&qp->cnt, EFI_DROP_OUT_OF_WINDOW);
			return;
		}
		/* Asked for again: a response lost (a gap the requester saw
		 * with later ones placed), a probe or a timeout.  What is
		 * still queued leaves anyway, once: only what left already is
		 * sent again, and first, since the requester waits for it
		 * with the rest held behind.  The Reads queued after it stay
		 * (dropping them, as the going-back requester of old needed,
		 * made a requester that asks for its gaps alone lose every
		 * Read behind the gap, and find out only by timeout or when
		 * each in turn became its oldest). */
		uint32_t from, m = replay_range(qp, pkt->psn, n, &from);
		if (m && rd_room(qp)) {
			uint32_t skip = (uint32_t)efi_psn_diff(from, pkt->psn);
			uint64_t left = pkt->reth.dma_len - (uint64_t)skip * qp->seg;
			uint64_t len = (uint64_t)m * qp->seg < left ? (uint64_t)m * qp->seg : left;
			queue_read_at(qp, pkt, skip, (uint32_t)len, true);
		}
		return;
	}
	if (pkt->opcode == EFI_OP_CMP_SWP || pkt->opcode == EFI_OP_FETCH_ADD) {
		for (unsigned i = 0; i < EFI_ATOMIC_CACHE; i++)
			if (qp->acache[i].valid && qp->acache[i].psn == pkt->psn) {
				if (rd_room(qp))
					queue_atomic(qp, pkt, qp->acache[i].orig);
				return;
			}
		return;	/* older than the requester can still be waiting for */
	}
	efi_resp_enqueue_ack(qp, EFI_AETH_ACK | EFI_AETH_CREDITS_NONE,
			     efi_psn_add(qp->rcv_psn, EFI_PSN_MASK), pkt->tx_ts, pkt->path);
}

static void handle_atomic(struct efi_qp_int *qp, const struct efi_pkt *pkt)
{
	uint64_t *target, orig;
	struct efi_atomic_cache_ent *c;

	if (qp->resp_op != RESP_IDLE || (pkt->atomic.va & 7)) {
		nak(qp, pkt, EFI_NAK_INV_REQ);
		return;
	}
	if (!(qp->attr.qp_access_flags & EFI_ACCESS_REMOTE_ATOMIC) ||
	    !efi_mr_check(qp->ctx, pkt->atomic.rkey, qp->pub.pd, pkt->atomic.va, 8,
			  EFI_ACCESS_REMOTE_ATOMIC)) {
		nak(qp, pkt, EFI_NAK_REM_ACCESS);
		return;
	}
	target = (uint64_t *)(uintptr_t)pkt->atomic.va;
	if (pkt->opcode == EFI_OP_FETCH_ADD) {
		orig = __atomic_fetch_add(target, pkt->atomic.swap_add, __ATOMIC_SEQ_CST);
	} else {
		orig = pkt->atomic.compare;
		__atomic_compare_exchange_n(target, &orig, pkt->atomic.swap_add, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	}
	c = &qp->acache[qp->acache_next++ % EFI_ATOMIC_CACHE];
	c->valid = true;
	c->psn = pkt->psn;
	c->orig = orig;
	qp->rcv_psn = efi_psn_add(qp->rcv_psn, 1);
	qp->msn = (qp->msn + 1) & EFI_MSN_MASK;
	queue_atomic(qp, pkt, orig);
}

/* Processes the request at rcv_psn.  Returns false, changing nothing, when
 * the response queue has no room for what it may queue (the requester
 * retries, or the reorder buffer keeps it).  ack: acknowledge it if it asks
 * (a held packet drained later is acknowledged once for the lot). */
static bool in_order(struct efi_qp_int *qp, const struct efi_pkt *pkt, bool ack)
{
	uint32_t before = qp->rcv_psn;

	if (!rd_room(qp))
		return false;
	qp->nak_sent = false;
	if (is_send(pkt->opcode)) {
		handle_send(qp, pkt);
	} else if (is_write(pkt->opcode)) {
		handle_write(qp, pkt);
	} else if (pkt->opcode == EFI_OP_READ_REQUEST) {
		if (qp->resp_op != RESP_IDLE) {
			nak(qp, pkt, EFI_NAK_INV_REQ);
			return true;
		}
		if (!queue_read(qp, pkt)) {
			nak(qp, pkt, EFI_NAK_REM_ACCESS);
			return true;
		}
		qp->rcv_psn = efi_psn_add(qp->rcv_psn, efi_pkt_count(pkt->reth.dma_len, qp->seg));
		qp->msn = (qp->msn + 1) & EFI_MSN_MASK;
		/* A Read takes several PSNs: nothing held can have those. */
		efi_reorder_remove_range(&qp->reorder, efi_psn_add(before, 1), qp->rcv_psn);
		return true;
	} else {
		handle_atomic(qp, pkt);
		return true;
	}
	if (ack && qp->attr.qp_state != EFI_QPS_ERR && (pkt->flags & EFI_PKT_F_ACKREQ) &&
	    efi_psn_diff(qp->rcv_psn, pkt->psn) > 0)
		efi_resp_enqueue_ack(qp, EFI_AETH_ACK | EFI_AETH_CREDITS_NONE, pkt->psn, pkt->tx_ts, pkt->path);
	return true;
}

/* Processes the held packets that are now in order.  Returns how many. */
static unsigned drain(struct efi_qp_int *qp)
{
	unsigned n = 0;

	while (qp->reorder.count && qp->attr.qp_state != EFI_QPS_ERR) {
		uint32_t psn = qp->rcv_psn;
		struct efi_pkt held;
		size_t len;
		const uint8_t *raw = efi_reorder_get(&qp->reorder, psn, &len);

		if (!raw)
			break;
		/* It passed the parser when it arrived, with this PSN. */
		if (efi_pkt_parse(raw, len, &held) != 0 || held.psn != psn) {
			efi_reorder_remove(&qp->reorder, psn);
			break;
		}
		if (!in_order(qp, &held, false))
			break;
		if (qp->rcv_psn == psn)
			break;	/* not taken (RNR): the buffer was emptied */
		efi_reorder_remove(&qp->reorder, psn);
		n++;
	}
	if (qp->attr.qp_state == EFI_QPS_ERR)
		efi_reorder_clear(&qp->reorder);
	return n;
}

void efi_resp_drain(struct efi_qp_int *qp)
{
	if (qp->reorder.count && drain(qp))
		efi_resp_enqueue_ack(qp, EFI_AETH_ACK | EFI_AETH_CREDITS_NONE,
				     efi_psn_add(qp->rcv_psn, EFI_PSN_MASK), 0, 0);
}

/* A request ahead of rcv_psn: held and acknowledged with a SACK at once
 * (that ACK is what tells the requester about the hole), or, when it cannot
 * be held, dropped with one NAK sequence error per gap (go-back-N). */
static void early(struct efi_qp_int *qp, const struct efi_pkt *pkt)
{
	int r = efi_reorder_store(&qp->reorder, qp->rcv_psn, pkt->psn, pkt->payload - pkt->hdr_len,
				  pkt->hdr_len + pkt->payload_len);

	if (r == 0 || r == EEXIST) {
		if (r == EEXIST)
			qp->cnt.duplicates++;
		efi_resp_enqueue_ack(qp, EFI_AETH_ACK | EFI_AETH_CREDITS_NONE,
				     efi_psn_add(qp->rcv_psn, EFI_PSN_MASK), pkt->tx_ts, pkt->path);
		return;
	}
	if (!qp->nak_sent) {
		qp->nak_sent = true;
		qp->cnt.seq_naks_sent++;
		efi_resp_enqueue_ack(qp, EFI_AETH_NAK | EFI_NAK_PSN_SEQ_ERR, qp->rcv_psn, pkt->tx_ts, pkt->path);
	}
	efi_count_drop(&qp->cnt, EFI_DROP_OUT_OF_WINDOW);
}

void efi_resp_handle(struct efi_qp_int *qp, const struct efi_pkt *pkt)
{
	int32_t d = efi_psn_diff(pkt->psn, qp->rcv_psn);

	EFI_TRACE_PKT("req qp %x op %s psn %x rcv %x len %zu respq %u\n", qp->pub.qp_num,
		  efi_pkt_opcode_name(pkt->opcode), pkt->psn, qp->rcv_psn, pkt->payload_len, qp->respq_count);

	if (d > 0) {
		early(qp, pkt);
		return;
	}
	if (d < 0) {
		handle_duplicate(qp, pkt);
		return;
	}
	/* Room for what this request may queue; else let the requester retry. */
	if (!in_order(qp, pkt, true)) {
		efi_count_drop(&qp->cnt, EFI_DROP_OUT_OF_WINDOW);
		return;
	}
	/* Another copy of it may be held (it arrived early on another path
	 * and could not be drained yet): that copy is done with. */
	efi_reorder_remove(&qp->reorder, pkt->psn);
	/* It filled a hole: what waited behind it goes now, acknowledged by
	 * one ACK echoing this packet (the held ones' own timestamps would
	 * count their wait as network delay). */
	if (qp->reorder.count && drain(qp) && qp->attr.qp_state != EFI_QPS_ERR)
		efi_resp_enqueue_ack(qp, EFI_AETH_ACK | EFI_AETH_CREDITS_NONE,
				     efi_psn_add(qp->rcv_psn, EFI_PSN_MASK), pkt->tx_ts, pkt->path);
}

size_t efi_resp_build(struct efi_qp_int *qp, struct efi_respq_ent *e, struct efi_wire_pkt *wp, bool *done)
{
	uint8_t *buf = wp->buf;
	struct efi_pkt h;
	uint32_t plen = 0;
	size_t hl;

	memset(&h, 0, sizeof(h));
	h.version = EFI_WIRE_VERSION;
	h.dest_qpn = qp->attr.dest_qp_num;
	h.src_qpn = qp->pub.qp_num;
	h.psn = e->psn;
	h.tx_ts = efi_now_ns();
	h.path = e->path;
	h.conn_key = qp->conn_key;
	h.aeth.syndrome = EFI_AETH_ACK | EFI_AETH_CREDITS_NONE;
	h.aeth.msn = e->msn;
	h.ts_echo = e->ts_echo;
	*done = true;
	switch (e->kind) {
	case RESPQ_ACK:
		h.opcode = EFI_OP_ACK;
		h.aeth.syndrome = e->syndrome;
		/* our plain ACKs tell the peer how far ahead we hold
		 * requests, and that we read piggybacked ACKs: causal ones
		 * always (efi_req_causal_ack), held ones when the peer sends
		 * them ($EFI_ACK_PIGGYBACK) */
		if (e->syndrome == (EFI_AETH_ACK | EFI_AETH_CREDITS_NONE))
			h.aeth.syndrome = EFI_AETH_ACK | (qp->ctx->pack_deaf ? EFI_AETH_CREDITS_WIDE
									      : EFI_AETH_CREDITS_WIDE_PACK);
		/* What is held beyond the hole, as of now. */
		if (e->syndrome == (EFI_AETH_ACK | EFI_AETH_CREDITS_NONE))
			efi_reorder_sack(&qp->reorder, qp->rcv_psn, &h);
		break;
	case RESPQ_ATOMIC:
		h.opcode = EFI_OP_ATOMIC_ACK;
		h.atomic_orig = e->orig;
		break;
	default: {
		bool first = e->left == e->total, last;
		plen = e->left < qp->seg ? e->left : qp->seg;
		last = plen == e->left;
		h.opcode = first && last ? EFI_OP_READ_RESP_ONLY : first ? EFI_OP_READ_RESP_FIRST
			   : last ? EFI_OP_READ_RESP_LAST : EFI_OP_READ_RESP_MIDDLE;
		*done = last;
		break;
	}
	}
	/* headers only: wp->buf may be a header-sized buffer (xport.c) */
	hl = efi_pkt_build_hdr(buf, EFI_MAX_HDR_LEN, &h);
	if (!hl)
		return 0;
	wp->len = (uint32_t)hl;
	wp->payload = NULL;
	wp->payload_len = plen;
	if (plen) {
		/* sent from the registered memory itself (checked when the
		 * Read was queued), no copy */
		wp->payload = e->src;
		e->src += plen;
		e->left -= plen;
		e->psn = efi_psn_add(e->psn, 1);
	}
	return hl + plen;
}
