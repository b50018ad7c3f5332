/* SPDX-License-Identifier: MIT */
/*
 * The active-QP ring: the QPs a transport run visits (efi_xport_run).
 *
 * A run used to visit every QP of the context, idle or not: at 10,000
 * connected QPs that was 0.2-1.7 ms per run (issue 18), above the 0.5 ms
 * RTO floor, paid by every efi_poll_cq and every progress-thread wake-up.
 * Now a QP is on the ring only while something may need doing:
 *
 *  - it joins when something may give it work: a packet accepted for it
 *    (xport.c, dispatch), a flush (post_send and the run itself call
 *    efi_xport_flush_qp), any modify (qp.c: a QP entering RTS, ERR or
 *    RESET gets one visit, so the CQ-loss rule and the path table reach
 *    it as they did when every run visited it);
 *  - it leaves at the end of a visit that finds nothing left
 *    (efi_qp_needs_run): no request unacknowledged or queued, no response
 *    queued, no early request held, no RNR wait, no ACK held or about to
 *    be.  Every timer of the transport (retransmission, tail-loss probe,
 *    RACK, path suspicion, the dead-peer clock, RNR) runs only while one
 *    of those holds, so an idle QP has nothing a run could do for it.
 *
 * Leaving clears the QP's "timers last ran" stamp (timers_ns), which the
 * next timer run of an idle QP would have cleared anyway: otherwise a QP
 * that leaves and comes back much later would take the time it was off
 * the ring for this process not running (efi_req_skip_local_stall).
 *
 * Everything here runs with ctx->lock held.
 */
#include "efi_int.h"

/* ctx->lock held.  Joins at the ring's tail: it goes last in the next run,
 * after the QPs already waiting. */
void efi_qp_activate(struct efi_context_int *ctx, struct efi_qp_int *qp)
{
	struct efi_qp_int *h = ctx->act_head;

	if (qp->act_on)
		return;
	qp->act_on = true;
	if (!h) {
		qp->act_next = qp->act_prev = qp;
		ctx->act_head = qp;
	} else {
		qp->act_next = h;
		qp->act_prev = h->act_prev;
		h->act_prev->act_next = qp;
		h->act_prev = qp;
	}
	ctx->nactive++;
}

/* ctx->lock held.  Also before a QP is destroyed. */
void efi_qp_deactivate(struct efi_context_int *ctx, struct efi_qp_int *qp)
{
	if (!qp->act_on)
		return;
	qp->act_on = false;
	if (qp->act_next == qp) {
		ctx->act_head = NULL;
	} else {
		qp->act_prev->act_next = qp->act_next;
		qp->act_next->act_prev = qp->act_prev;
		if (ctx->act_head == qp)
			ctx->act_head = qp->act_next;
	}
	qp->act_next = qp->act_prev = NULL;
	ctx->nactive--;
	qp->timers_ns = 0;	/* idle: see above */
}

/* ctx->lock held.  Whether the next run has anything to do for qp: what
 * efi_req_timers, efi_retx_timers and efi_xport_flush_qp act on. */
bool efi_qp_needs_run(const struct efi_qp_int *qp)
{
	return qp->snd_una != qp->snd_max || qp->snd_nxt != qp->snd_max || qp->sq_started != qp->sq_tail ||
	       qp->pipe || qp->have_lost || qp->tlp_pending || qp->rnr_wait || qp->respq_count ||
	       qp->reorder.count || qp->ack_hold_pending || qp->ack_hold_ns;
}
