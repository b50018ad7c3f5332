/* SPDX-License-Identifier: MIT */
/*
 * The requester side of the RC transport: starting WQEs (PSN assignment),
 * segmentation into request packets, acknowledgement processing, Read
 * response placement (ahead of order: read_resp.c), atomic results, go-back-N retransmission on timeout or
 * NAK, RNR waits (the timers that start them, and the rule that a silent
 * peer fails the QP: req_timers.c).  Everything here runs with ctx->lock
 * held.
 *
 * PSN state: snd_una (oldest unacknowledged), snd_nxt (next to (re)send),
 * snd_max (first PSN of the next WQE to start).  WQEs [sq_head, sq_started)
 * have PSNs; [sq_started, sq_tail) wait.  Packets are rebuilt from the WQEs
 * whenever they are sent again, so no packet copy is kept.  Which packets
 * are sent again (selectively, from the SACK scoreboard), when (RACK,
 * tail-loss probe, adaptive timeout) and how many may be in flight
 * (congestion window, per path) is retx.c's business; going back
 * (efi_retx_rewind) remains for NAKs, RNR and timeouts.  A lost Read
 * response or atomic ACK costs its request alone (efi_retx_resend): responses
 * are taken per WQE, in order within it, whether or not the WQEs before it
 * are done, and ACKs that pass a Read or atomic still waiting are kept
 * (ack_high) until it completes.
 */
#include <string.h>

#include "efi_int.h"

static bool wqe_is_rd(const struct efi_swqe *w)
{
	return w->opcode == EFI_WR_RDMA_READ || w->opcode == EFI_WR_ATOMIC_CMP_AND_SWP ||
	       w->opcode == EFI_WR_ATOMIC_FETCH_AND_ADD;
}

static enum efi_wc_opcode wc_opcode(enum efi_wr_opcode op)
{
	switch (op) {
	case EFI_WR_RDMA_WRITE:
	case EFI_WR_RDMA_WRITE_WITH_IMM:
		return EFI_WC_RDMA_WRITE;
	case EFI_WR_RDMA_READ:
		return EFI_WC_RDMA_READ;
	case EFI_WR_ATOMIC_CMP_AND_SWP:
		return EFI_WC_COMP_SWAP;
	case EFI_WR_ATOMIC_FETCH_AND_ADD:
		return EFI_WC_FETCH_ADD;
	default:
		return EFI_WC_SEND;
	}
}

void efi_complete_send(struct efi_qp_int *qp, struct efi_swqe *w, enum efi_wc_status st)
{
	struct efi_wc wc;

	if (st == EFI_WC_SUCCESS && !w->signaled)
		return;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = w->wr_id;
	wc.status = st;
	wc.opcode = wc_opcode(w->opcode);
	wc.qp_num = qp->pub.qp_num;
	if (w->opcode == EFI_WR_RDMA_READ)
		wc.byte_len = w->length;
	else if (w->opcode == EFI_WR_ATOMIC_CMP_AND_SWP || w->opcode == EFI_WR_ATOMIC_FETCH_AND_ADD)
		wc.byte_len = 8;
	efi_cq_push((struct efi_cq_int *)qp->pub.send_cq, &wc, false);
}

/* Pops the head WQE with status st (success or error). */
static void pop_head(struct efi_qp_int *qp, enum efi_wc_status st)
{
	struct efi_swqe *w = &qp->sq[qp->sq_head];

	if (qp->sq_head == qp->sq_started)
		return;
	if (wqe_is_rd(w) && qp->rd_outstanding && !--qp->rd_outstanding)
		efi_rd_early_free(qp);	/* every Read took its placed responses */
	qp->sq_head = (qp->sq_head + 1) & qp->sq_mask;
	efi_complete_send(qp, w, st);
}

/* Fails the head WQE with st and moves the QP to ERR (flushing the rest).
 * ctx->lock held. */
void efi_req_fail_head(struct efi_qp_int *qp, enum efi_wc_status st)
{
	pop_head(qp, st);
	efi_qp_to_error(qp);
}

static void progress_made(struct efi_qp_int *qp, uint64_t now)
{
	qp->backoff = 0;
	qp->retries = 0;
	qp->stalls = 0;
	qp->timer_start_ns = now;
}

static uint32_t wqe_last_psn(const struct efi_swqe *w)
{
	return efi_psn_add(w->first_psn, w->npkts - 1);
}

/* Index of the started WQE whose PSN range holds psn, or UINT32_MAX. */
static uint32_t wqe_for_psn(struct efi_qp_int *qp, uint32_t psn)
{
	uint32_t i = qp->wqe_hint;

	/* The hint (where the last packet came from) is right nearly always. */
	for (int k = 0; k < 2; k++, i = (i + 1) & qp->sq_mask) {
		if (((i - qp->sq_head) & qp->sq_mask) >= ((qp->sq_started - qp->sq_head) & qp->sq_mask))
			break;
		struct efi_swqe *w = &qp->sq[i];
		if (!efi_psn_before(psn, w->first_psn) && !efi_psn_after(psn, wqe_last_psn(w)))
			return i;
	}
	for (i = qp->sq_head; i != qp->sq_started; i = (i + 1) & qp->sq_mask) {
		struct efi_swqe *w = &qp->sq[i];
		if (!efi_psn_before(psn, w->first_psn) && !efi_psn_after(psn, wqe_last_psn(w)))
			return qp->wqe_hint = i;
	}
	return UINT32_MAX;
}

/* The PSN of the next response a Read or atomic waits for: every Read
 * response but the last carries a full segment. */
static uint32_t rd_expected(const struct efi_qp_int *qp, const struct efi_swqe *w)
{
	if (w->opcode != EFI_WR_RDMA_READ)
		return w->first_psn;
	return efi_psn_add(w->first_psn, w->read_done / qp->seg);
}

/* Everything up to and including psn a has been acknowledged by an ACK (not
 * a response): completes Sends and Writes; a Read or atomic an ACK passes
 * lost its response, so the requester goes back to it (implied NAK).  A
 * causal ACK (efi_req_causal_ack) stops at the first Read or atomic still
 * waiting instead: it is no answer to one. */
static void ack_upto(struct efi_qp_int *qp, uint32_t a, uint64_t now, bool causal)
{
	uint32_t una = qp->snd_una;
	bool implied_nak = false;

	while (qp->sq_head != qp->sq_started) {
		struct efi_swqe *w = &qp->sq[qp->sq_head];
		uint32_t last = wqe_last_psn(w);

		if (wqe_is_rd(w)) {
			uint32_t next;
			/* Answered while a WQE before it waited. */
			if (w->resp_done) {
				qp->snd_una = efi_psn_add(last, 1);
				pop_head(qp, EFI_WC_SUCCESS);
				continue;
			}
			if (causal)
				break;
			next = rd_expected(qp, w);
			if (efi_psn_before(qp->snd_una, next))
				qp->snd_una = next;
			if (!efi_psn_before(a, w->first_psn)) {
				/* Only the Read or atomic goes again: what
				 * follows it up to a reached the responder
				 * (going back over it all, once per ACK in
				 * flight, was a retransmission storm). */
				if (efi_psn_after(a, last))
					efi_retx_held(qp, efi_psn_add(last, 1), a);
				implied_nak = true;
			}
			break;
		}
		if (efi_psn_after(last, a)) {
			if (efi_psn_after(efi_psn_add(a, 1), qp->snd_una))
				qp->snd_una = efi_psn_add(a, 1);
			break;
		}
		qp->snd_una = efi_psn_add(last, 1);
		pop_head(qp, EFI_WC_SUCCESS);
	}
	if (efi_psn_after(qp->snd_una, qp->snd_nxt))
		qp->snd_nxt = qp->snd_una;
	if (qp->snd_una != una)
		progress_made(qp, now);
	/* Once per Read or atomic: later ACKs, and the responses still on
	 * their way, do not ask again (a request sent again and lost again
	 * is RACK's, by its send time; a response lost again leaves a gap). */
	if (implied_nak) {
		uint32_t first = qp->sq[qp->sq_head].first_psn;
		if (!(qp->implied_nak_valid && qp->implied_nak_psn == first)) {
			qp->implied_nak_valid = true;
			qp->implied_nak_psn = first;
			efi_retx_resend(qp, qp->snd_una);
		}
	}
}

/* Handles a response packet (ACK, NAK, Read response, atomic ACK). */
static void handle_response(struct efi_qp_int *qp, const struct efi_pkt *pkt, uint64_t now)
{
	uint32_t p = pkt->psn, expect;
	uint32_t idx;
	struct efi_swqe *w;
	bool head;

	/* Anything not in [snd_una − 1, snd_max) answers nothing outstanding. */
	if (efi_psn_before(p, efi_psn_add(qp->snd_una, EFI_PSN_MASK)) || !efi_psn_before(p, qp->snd_max)) {
		/* Except a plain ACK that a later one overtook (ACKs come
		 * back on the lane of the request they answer, and lanes
		 * are read one after the other): nothing left for it to
		 * acknowledge, but it is no stray — its SACK block, RTT
		 * sample and path are still taken (efi_req_handle). */
		if (pkt->opcode == EFI_OP_ACK && (pkt->aeth.syndrome & EFI_AETH_KIND_MASK) == EFI_AETH_ACK &&
		    efi_psn_before(p, qp->snd_una) && efi_psn_diff(qp->snd_una, p) <= (int32_t)EFI_TXREC_SLOTS)
			return;
		efi_count_drop(&qp->cnt, EFI_DROP_OUT_OF_WINDOW);
		return;
	}
	EFI_TRACE_PKT("ack qp %x syn %02x psn %x una %x nxt %x\n", qp->pub.qp_num, pkt->aeth.syndrome, p, qp->snd_una, qp->snd_nxt);
	if (pkt->opcode == EFI_OP_ACK) {
		uint8_t kind = pkt->aeth.syndrome & EFI_AETH_KIND_MASK;
		uint8_t val = pkt->aeth.syndrome & EFI_AETH_VALUE_MASK;

		if (kind == EFI_AETH_ACK) {
			if (efi_psn_before(p, qp->snd_una))
				return;
			ack_upto(qp, p, now, false);
			/* Held back by a Read or atomic: remembered for when
			 * its response arrives. */
			if (!efi_psn_before(p, qp->snd_una) &&
			    (!qp->ack_high_valid || efi_psn_after(p, qp->ack_high))) {
				qp->ack_high = p;
				qp->ack_high_valid = true;
			}
			return;
		}
		if (efi_psn_before(p, qp->snd_una))
			return;	/* a stale NAK for something already acknowledged */
		ack_upto(qp, efi_psn_add(p, EFI_PSN_MASK), now, false);	/* PSNs before p are done */
		if (kind == EFI_AETH_RNR_NAK) {
			qp->cnt.rnr_naks_received++;
			if (qp->sq_head == qp->sq_started)
				return;
			w = &qp->sq[qp->sq_head];
			if (qp->attr.rnr_retry != 7 && ++w->rnr_tries > qp->attr.rnr_retry) {
				efi_req_fail_head(qp, EFI_WC_RNR_RETRY_EXC_ERR);
				return;
			}
			qp->rnr_wait = true;
			qp->rnr_until_ns = now + efi_rnr_timer_ns(val);
			/* The responder dropped what it held past p. */
			efi_retx_unsack(qp, p);
			efi_retx_rewind(qp, p);
			return;
		}
		/* NAK */
		if (val == EFI_NAK_PSN_SEQ_ERR) {
			qp->cnt.seq_naks_received++;
			efi_retx_rewind(qp, p);
			return;
		}
		efi_req_fail_head(qp, val == EFI_NAK_REM_ACCESS ? EFI_WC_REM_ACCESS_ERR :
			      val == EFI_NAK_INV_REQ ? EFI_WC_REM_INV_REQ_ERR : EFI_WC_REM_OP_ERR);
		return;
	}

	/* Read responses and atomic ACKs: find the WQE they answer. */
	idx = wqe_for_psn(qp, p);
	EFI_TRACE_PKT("resp qp %x op %s psn %x una %x\n", qp->pub.qp_num, efi_pkt_opcode_name(pkt->opcode), p, qp->snd_una);
	if (idx == UINT32_MAX || !wqe_is_rd(&qp->sq[idx])) {
		efi_count_drop(&qp->cnt, EFI_DROP_OUT_OF_WINDOW);
		return;
	}
	w = &qp->sq[idx];
	if ((pkt->opcode == EFI_OP_ATOMIC_ACK) != (w->opcode != EFI_WR_RDMA_READ)) {
		efi_count_drop(&qp->cnt, EFI_DROP_OUT_OF_WINDOW);
		return;
	}
	/* A response acknowledges every PSN before its request. */
	if (efi_psn_after(w->first_psn, qp->snd_una))
		ack_upto(qp, efi_psn_add(w->first_psn, EFI_PSN_MASK), now, false);
	/* Responses are taken in order within their WQE, but a WQE need not
	 * wait for the ones before it: one lost response then costs one
	 * request sent again, not every Read and atomic behind it. */
	head = qp->sq_head == idx;
	expect = rd_expected(qp, w);
	if (w->resp_done || p != expect) {
		/* Ahead of the one expected: lanes reorder, so it is placed
		 * now and the gap waits for its response; far enough ahead,
		 * the gap is asked for again (read_resp.c).  Behind it: a
		 * copy of one taken. */
		if (w->resp_done || !efi_psn_after(p, expect) || !efi_rd_ahead(qp, w, pkt, expect))
			efi_count_drop(&qp->cnt, EFI_DROP_OUT_OF_WINDOW);
		return;
	}
	if (pkt->opcode == EFI_OP_ATOMIC_ACK) {
		uint64_t orig = pkt->atomic_orig;
		efi_sge_copy_in(w->sge, w->num_sge, 0, (const uint8_t *)&orig, 8);
		w->resp_done = true;
	} else {
		/* Every response but the Read's last carries a full segment:
		 * that is what places packet k at k × seg. */
		bool last = (pkt->flags & EFI_PKT_F_LAST) && p == wqe_last_psn(w);
		if (pkt->payload_len > w->length - w->read_done ||
		    (p != wqe_last_psn(w) && pkt->payload_len != qp->seg) ||
		    (last && w->read_done + pkt->payload_len != w->length)) {
			if (head)
				efi_req_fail_head(qp, EFI_WC_BAD_RESP_ERR);
			else
				efi_count_drop(&qp->cnt, EFI_DROP_OUT_OF_WINDOW);
			return;
		}
		efi_sge_copy_in(w->sge, w->num_sge, w->read_done, pkt->payload, (uint32_t)pkt->payload_len);
		w->read_done += (uint32_t)pkt->payload_len;
		w->resp_done = last;
		p = efi_rd_drain(qp, w, p);
	}
	if (!head) {
		/* Its request arrived: RACK must not send it again. */
		efi_retx_held(qp, w->first_psn, p);
		return;
	}
	qp->snd_una = efi_psn_add(p, 1);
	progress_made(qp, now);
	/* The last response completes it, and any answered ones behind it. */
	if (w->resp_done)
		ack_upto(qp, efi_psn_add(qp->snd_una, EFI_PSN_MASK), now, false);
	if (efi_psn_after(qp->snd_una, qp->snd_nxt))
		qp->snd_nxt = qp->snd_una;
}

/*
 * A causal ACK (ctx->lock held): the peer's responder had taken every
 * request of ours up to psn a when it sent the message that carries it.
 * The Sends and Writes it covers complete now, before that message's
 * receive completion is queued, so a CQ never shows the peer's answer
 * ahead of the completion of what it answered.  ofi_rxm's Write
 * rendezvous depends on that order: its wr_done message, seen before the
 * send completion of its wr_data, found no waiting entry and failed the
 * job (issue 20: a segfault in Open MPI's ofi MTL under 1% loss, where the
 * ACK of wr_data was lost or came behind wr_done).  Reads and atomics are
 * left to their responses: an ACK passing one would ask for it again.
 * No RTT sample, no path answer: the ACK echoes no packet.
 */
void efi_req_causal_ack(struct efi_qp_int *qp, uint32_t a)
{
	uint32_t una = qp->snd_una;

	if (una == qp->snd_max || efi_psn_before(a, una) || !efi_psn_before(a, qp->snd_max))
		return;	/* nothing outstanding, nothing new, or not ours */
	ack_upto(qp, a, efi_now_ns(), true);
	if (efi_psn_after(qp->snd_una, una))
		efi_retx_acked(qp, una, qp->snd_una);
}

void efi_req_handle(struct efi_qp_int *qp, const struct efi_pkt *pkt)
{
	uint64_t now = efi_now_ns();
	uint32_t una = qp->snd_una;

	handle_response(qp, pkt, now);
	if (qp->attr.qp_state != EFI_QPS_RTS && qp->attr.qp_state != EFI_QPS_SQD)
		return;
	if (qp->ack_high_valid) {
		if (efi_psn_before(qp->ack_high, qp->snd_una))
			qp->ack_high_valid = false;
		else if (qp->snd_una != una)
			ack_upto(qp, qp->ack_high, now, false);
	}
	if (efi_psn_after(qp->snd_una, una))
		efi_retx_acked(qp, una, qp->snd_una);
	efi_retx_sack(qp, pkt);
	efi_retx_after_response(qp, pkt, now);
}

/* Whether a request packet can go now; starts the next WQE when snd_nxt
 * has reached snd_max. */
bool efi_req_can_send(struct efi_qp_int *qp, uint64_t now)
{
	struct efi_swqe *w;
	uint32_t max_rd;

	(void)now;
	if (qp->rnr_wait || efi_psn_diff(qp->snd_nxt, qp->snd_una) >= (int32_t)efi_send_window(qp))
		return false;
	if (qp->snd_nxt != qp->snd_max)
		return true;
	if (qp->sq_started == qp->sq_tail || qp->attr.qp_state != EFI_QPS_RTS)
		return false;
	w = &qp->sq[qp->sq_started];
	if (w->local_error) {
		if (qp->sq_head == qp->sq_started) {
			qp->sq_started = (qp->sq_started + 1) & qp->sq_mask;
			w->first_psn = qp->snd_max;
			w->npkts = 1;
			efi_req_fail_head(qp, w->status);
		}
		return false;
	}
	max_rd = qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1;
	if ((w->send_flags & EFI_SEND_FENCE) && qp->rd_outstanding)
		return false;
	if (wqe_is_rd(w) && qp->rd_outstanding >= max_rd)
		return false;
	w->first_psn = qp->snd_max;
	w->npkts = w->opcode == EFI_WR_RDMA_READ || !wqe_is_rd(w) ? efi_pkt_count(w->length, qp->seg) : 1;
	w->read_done = 0;
	w->resp_done = false;
	w->rd_high = 0;
	w->rd_gap_asked = 0;
	if (wqe_is_rd(w))
		qp->rd_outstanding++;
	qp->snd_max = efi_psn_add(qp->snd_max, w->npkts);
	qp->sq_started = (qp->sq_started + 1) & qp->sq_mask;
	return true;
}

bool efi_req_next(struct efi_qp_int *qp, uint64_t now, uint32_t *psn)
{
	uint32_t lost_psn = 0;
	bool lost;
	int path;

	if (qp->rnr_wait)
		return false;
	/* After a timeout, one packet in flight until something answers
	 * (TCP's loss window): most timeouts here are a stalled peer, not a
	 * lost window, and a window sent again into a peer that does not
	 * run only comes back as duplicates (~250 per 10 ms stall on a
	 * loaded host).  The answer says which it was (efi_retx_after_
	 * response: a spurious timeout's going back is undone). */
	if (qp->rto_at_ns && qp->pipe)
		return false;
	if (!qp->have_lost && qp->snd_nxt == qp->snd_max && qp->sq_started == qp->sq_tail)
		return false;	/* nothing to send (the responder side's usual case) */
	lost = efi_retx_next_lost(qp, &lost_psn);
	path = -1;
	if (qp->rto_at_ns && qp->npaths > 1) {
		/* The one packet after a timeout: its own path (next_probe_path). */
		path = qp->rto_path < qp->npaths ? qp->rto_path : 0;
		qp->burst_left = 0;
	} else if (lost && qp->npaths > 1) {
		/* A lost packet goes again on another path, the one heard
		 * from last: the path it was lost on may be dead. */
		path = efi_paths_pick_retx(qp->paths, qp->npaths, now, efi_retx_path_of(qp, lost_psn));
		qp->burst_left = 0;
	} else if (qp->burst_left && qp->cur_path < qp->npaths) {
		/* Bursts stay on one path while it is healthy and has room
		 * (GSO runs, one system call per burst); then the path with
		 * most room. */
		if (efi_path_usable(&qp->paths[qp->cur_path], now)) {
			path = qp->cur_path;
			qp->burst_left--;
		}
	}
	if (path < 0) {
		path = efi_paths_pick(qp->paths, qp->npaths, now);
		qp->burst_left = EFI_PATH_BURST - 1;
	}
	/* A suspected path gets a packet now and then, asking for an ACK:
	 * its answer re-admits it (with one path, every packet probes it).
	 * Not a lost one while another path can take it: a repair must not
	 * wait for a dead path. */
	for (unsigned i = 0; qp->npaths > 1 && !(lost && path >= 0) && !qp->rto_at_ns && i < qp->npaths; i++) {
		if (efi_path_probe_due(&qp->paths[i], now)) {
			efi_path_on_probe(&qp->paths[i], &qp->ctx->ccp, now);
			qp->force_ackreq = true;
			qp->burst_left = 0;
			path = (int)i;
			break;
		}
	}
	if (path < 0) {
		/* A tail-loss probe goes even when the window is full: the
		 * window may be full of packets whose ACK was lost. */
		if (!qp->tlp_pending || !qp->have_lost)
			return false;
		path = 0;
	}
	qp->cur_path = (uint8_t)path;
	if (lost) {
		*psn = lost_psn;
		qp->force_ackreq = true;	/* its ACK repairs the hole at once */
		return true;
	}
	/* Going on in sequence after going back: what the responder holds
	 * is not sent again, nor asked for when its Read response is here
	 * (placed early: a request from the gap before it stopped there). */
	while (qp->snd_nxt != qp->snd_max) {
		const struct efi_txrec *r = &qp->txrec[qp->snd_nxt & (EFI_TXREC_SLOTS - 1)];
		if (efi_rd_placed(qp, qp->snd_nxt)) {
			qp->snd_nxt = efi_psn_add(qp->snd_nxt, 1);
			continue;
		}
		if (r->psn != qp->snd_nxt || !r->tx_ns || r->state != EFI_TX_SACKED)
			break;
		qp->snd_nxt = efi_psn_add(qp->snd_nxt, r->npsn ? r->npsn : 1);
	}
	if (!efi_req_can_send(qp, now))
		return false;
	*psn = qp->snd_nxt;
	return true;
}

static uint8_t data_opcode(const struct efi_swqe *w, uint32_t k)
{
	bool first = k == 0, last = k == w->npkts - 1;
	bool send = w->opcode == EFI_WR_SEND || w->opcode == EFI_WR_SEND_WITH_IMM;
	bool imm = w->opcode == EFI_WR_SEND_WITH_IMM || w->opcode == EFI_WR_RDMA_WRITE_WITH_IMM;

	if (first && last)
		return send ? (imm ? EFI_OP_SEND_ONLY_IMM : EFI_OP_SEND_ONLY)
			    : (imm ? EFI_OP_WRITE_ONLY_IMM : EFI_OP_WRITE_ONLY);
	if (first)
		return send ? EFI_OP_SEND_FIRST : EFI_OP_WRITE_FIRST;
	if (last)
		return send ? (imm ? EFI_OP_SEND_LAST_IMM : EFI_OP_SEND_LAST)
			    : (imm ? EFI_OP_WRITE_LAST_IMM : EFI_OP_WRITE_LAST);
	return send ? EFI_OP_SEND_MIDDLE : EFI_OP_WRITE_MIDDLE;
}

size_t efi_req_build(struct efi_qp_int *qp, uint32_t psn, struct efi_wire_pkt *wp, uint32_t *next, uint64_t now)
{
	uint8_t *buf = wp->buf;
	uint32_t idx = wqe_for_psn(qp, psn), k, plen = 0;
	struct efi_swqe *w;
	struct efi_pkt h;
	struct efi_txrec *rec;
	size_t hl;

	if (idx == UINT32_MAX)
		return 0;
	w = &qp->sq[idx];
	k = (uint32_t)efi_psn_diff(psn, w->first_psn);
	memset(&h, 0, sizeof(h));
	h.version = EFI_WIRE_VERSION;
	h.dest_qpn = qp->attr.dest_qp_num;
	h.src_qpn = qp->pub.qp_num;
	h.psn = psn;
	h.tx_ts = now;
	h.path = qp->cur_path;
	h.conn_key = qp->conn_key;
	*next = efi_psn_add(psn, 1);
	switch (w->opcode) {
	case EFI_WR_RDMA_READ: {
		/* A long Read goes out as several requests of at most
		 * EFI_READ_CHUNK response packets, paced by the send window
		 * like Writes, so the responder never has more in flight than
		 * the window allows. */
		/* Chunks start at fixed offsets: a request sent again from
		 * the middle of one never asks past that chunk's end, which
		 * the responder may not have accepted yet. */
		uint32_t end = (k / EFI_READ_CHUNK + 1) * EFI_READ_CHUNK;
		/* Asked again from a gap: not for responses placed already. */
		uint32_t chunk = efi_rd_chunk_limit(qp, w, k, (end < w->npkts ? end : w->npkts) - k);
		uint64_t off = (uint64_t)k * qp->seg;
		h.opcode = EFI_OP_READ_REQUEST;
		h.reth.va = w->remote_addr + off;
		h.reth.rkey = w->rkey;
		h.reth.dma_len = (uint32_t)((uint64_t)chunk * qp->seg < w->length - off
					    ? (uint64_t)chunk * qp->seg : w->length - off);
		h.flags = EFI_PKT_F_ACKREQ;
		*next = efi_psn_add(psn, chunk);
		break;
	}
	case EFI_WR_ATOMIC_CMP_AND_SWP:
	case EFI_WR_ATOMIC_FETCH_AND_ADD:
		h.opcode = w->opcode == EFI_WR_ATOMIC_CMP_AND_SWP ? EFI_OP_CMP_SWP : EFI_OP_FETCH_ADD;
		h.atomic.va = w->remote_addr;
		h.atomic.rkey = w->rkey;
		if (w->opcode == EFI_WR_ATOMIC_CMP_AND_SWP) {
			h.atomic.swap_add = w->swap;
			h.atomic.compare = w->compare_add;
		} else {
			h.atomic.swap_add = w->compare_add;
		}
		h.flags = EFI_PKT_F_ACKREQ;
		break;
	default: {
		uint32_t off = k * qp->seg;
		plen = w->length - off < qp->seg ? w->length - off : qp->seg;
		h.opcode = data_opcode(w, k);
		h.reth.va = w->remote_addr;
		h.reth.rkey = w->rkey;
		h.reth.dma_len = w->length;
		h.imm_be = w->imm_be;
		if (k == w->npkts - 1) {
			h.flags |= EFI_PKT_F_ACKREQ;
			if ((w->send_flags & EFI_SEND_SOLICITED) &&
			    (w->opcode != EFI_WR_RDMA_WRITE))
				h.flags |= EFI_PKT_F_SOLICITED;
		} else if (++qp->pkts_since_ackreq >= efi_retx_ackreq_every(qp)) {
			h.flags |= EFI_PKT_F_ACKREQ;
		}
		break;
	}
	}
	if (qp->force_ackreq) {
		h.flags |= EFI_PKT_F_ACKREQ;
		qp->force_ackreq = false;
	}
	if (h.flags & EFI_PKT_F_ACKREQ)
		qp->pkts_since_ackreq = 0;
	/* A PACK rides along only if the packet still fits the segment the
	 * link was sized for with it: every last packet of a Send, and of a
	 * Write with immediate but a single-packet one of over seg - 16 bytes
	 * (its RETH leaves no room). */
	bool pack_fits = efi_pkt_hdr_len(h.opcode, h.flags | EFI_PKT_F_ACKED) + plen <=
			 EFI_MAX_DATA_HDR_LEN + qp->seg;
	/* the held ACK (xport.c) */
	if (qp->pack_offer && pack_fits) {
		const struct efi_respq_ent *e = qp->pack_offer;

		h.hdrs |= EFI_HDR_PACK;
		h.pack.syndrome = e->syndrome;
		h.pack.msn = e->msn;
		h.pack.path = e->path;
		h.pack.psn = e->psn;
		h.pack.ts_echo = e->ts_echo;
		qp->pack_offer = NULL;
		qp->pack_taken = true;
	} else if (pack_fits && qp->peer_reads_pack && efi_pkt_completes_receive(h.opcode) &&
		   !qp->ctx->pack_deaf) {
		/* the causal ACK (efi_req_causal_ack) */
		h.hdrs |= EFI_HDR_PACK;
		h.pack.syndrome = EFI_AETH_ACK | EFI_AETH_CREDITS_WIDE_PACK;
		h.pack.msn = qp->msn;
		h.pack.path = 0;
		h.pack.psn = efi_resp_causal_psn(qp);
		h.pack.ts_echo = 0;
	}
	hl = efi_pkt_build_hdr(buf, EFI_PKTBUF_SIZE, &h);
	if (!hl)
		return 0;
	wp->len = (uint32_t)hl;
	wp->payload = NULL;
	wp->payload_len = 0;
	if (plen) {
		/* from where the data lies; the copy only for a packet that
		 * spans SGEs */
		wp->payload = efi_sge_contig(w->sge, w->num_sge, k * qp->seg, plen);
		if (wp->payload) {
			wp->payload_len = plen;
		} else {
			efi_sge_copy_out(w->sge, w->num_sge, k * qp->seg, buf + hl, plen);
			wp->len += plen;
		}
	}
	rec = &qp->txrec[psn & (EFI_TXREC_SLOTS - 1)];
	if (rec->psn != psn || !rec->tx_ns) {
		memset(rec, 0, sizeof(*rec));
		rec->psn = psn;
	}
	rec->wqe = idx;
	rec->tx_ns = now;
	rec->npsn = (uint8_t)efi_psn_diff(*next, psn);
	efi_retx_on_send(qp, rec, now);
	return hl + plen;
}
