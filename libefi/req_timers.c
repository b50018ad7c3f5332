/* SPDX-License-Identifier: MIT */
/*
 * The requester's timers: the retransmission timeout (a probe, going back,
 * the next path round), the end of an RNR wait, and the rule that fails a
 * QP: only silence, on every path, for as long as verbs' go-back-N would
 * have retried (at least EFI_MIN_DEAD_NS), counted only while this process
 * ran.  Everything here runs with ctx->lock held.
 */
#include "efi_int.h"

/* If this process did not run for EFI_LOCAL_STALL_NS while work was
 * outstanding, the clocks that judge the peer move on by that gap: what the
 * peer sent meanwhile sits unread in our socket, and a QP that failed as soon
 * as its process was scheduled again would blame the peer for our own
 * absence.  (What arrived is read before the timers run, efi_xport_run.) */
void efi_req_skip_local_stall(struct efi_qp_int *qp, uint64_t now)
{
	bool busy = qp->snd_una != qp->snd_max || qp->rnr_wait;
	uint64_t gap = qp->timers_ns && now > qp->timers_ns ? now - qp->timers_ns : 0;

	if (gap > EFI_LOCAL_STALL_NS) {
		EFI_TRACE("qp %x: this process did not run for %llu ms\n", qp->pub.qp_num,
			  (unsigned long long)(gap / 1000000));
		qp->silent_since_ns = qp->silent_since_ns + gap < now ? qp->silent_since_ns + gap : now;
		qp->timer_start_ns = qp->timer_start_ns + gap < now ? qp->timer_start_ns + gap : now;
	}
	qp->timers_ns = busy ? now : 0;
}

uint64_t efi_req_dead_after_ns(const struct efi_qp_int *qp)
{
	uint64_t t = qp->rto_ns * ((uint64_t)qp->attr.retry_cnt + 1);
	uint64_t floor = qp->ctx && qp->ctx->min_dead_ns ? qp->ctx->min_dead_ns : EFI_MIN_DEAD_NS;

	if (!qp->rto_ns)
		return 0;
	return t > floor ? t : floor;
}

bool efi_req_peer_dead(const struct efi_qp_int *qp, uint64_t now)
{
	uint64_t after = efi_req_dead_after_ns(qp);

	return after && now > qp->silent_since_ns && now - qp->silent_since_ns >= after;
}

/*
 * The path of the probe after a timeout: the next one round from the last
 * probe's (the first time, from the path the window went on), passing over
 * paths whose local uplink efid reports down while another is up.  A
 * timeout says only that some direction of some path failed, and a path
 * can fail one way alone: the probe arrives, its answer is lost.  Probing
 * one path again and again then fails the QP with every other path
 * working (t-lossy-flap: the answers on a lane just brought back up were
 * lost for over 2 s); going round, a probe comes back within npaths
 * timeouts as long as one path works both ways.
 */
static uint8_t next_probe_path(const struct efi_qp_int *qp)
{
	unsigned from = qp->rto_at_ns ? qp->rto_path : qp->cur_path;

	for (unsigned k = 1; k <= qp->npaths; k++) {
		unsigned p = (from + k) % qp->npaths;
		if (!(qp->pt_down & (1u << p)))
			return (uint8_t)p;
	}
	return (uint8_t)((from + 1) % qp->npaths);	/* every one down: round all the same */
}

/*
 * Once a whole round of probes, one per path, went unanswered, each next
 * probe's path moves on to the peer's next lane.  To the fabric a path is
 * a four-tuple, and an ECMP fabric may have hashed every one of ours onto
 * the same link: when that link black-holes (a gray failure, or a link
 * that flaps faster than routing follows it), every path dies with it,
 * whatever lane it leaves from.  Seen in t-lossy-flap under load: 30
 * probes over the 4 lanes in 2 s, none arrived, while the other link
 * delivered everything sent on it; the QP failed with RETRY_EXC.  Another
 * destination port is another hash, and the path keeps the lane its probe
 * came back from.  Receivers take requests on every lane (wire_udp.c).
 */
static void rehash_probe_path(struct efi_qp_int *qp)
{
	unsigned nlanes = qp->ctx->p.nlanes;
	struct efi_path *p = &qp->paths[qp->rto_path];

	if (nlanes > 1 && qp->retries >= qp->npaths)
		p->dst_lane = (uint8_t)((p->dst_lane + 1) % nlanes);
}

/* Retransmission and RNR timers. */
void efi_req_timers(struct efi_qp_int *qp, uint64_t now)
{
	if (qp->attr.qp_state != EFI_QPS_RTS && qp->attr.qp_state != EFI_QPS_SQD)
		return;
	efi_req_skip_local_stall(qp, now);
	if (qp->rnr_wait) {
		if (now >= qp->rnr_until_ns) {
			qp->rnr_wait = false;
			qp->timer_start_ns = now;
		}
		return;
	}
	efi_retx_timers(qp, now);
	if (qp->snd_una == qp->snd_nxt || now - qp->timer_start_ns < efi_retx_rto_ns(qp))
		return;
	qp->cnt.timeouts++;
	EFI_TRACE("timeout qp %x at %llu us: una %x nxt %x max %x pipe %u backoff %u\n", qp->pub.qp_num,
		  (unsigned long long)(now / 1000), qp->snd_una,
		  qp->snd_nxt, qp->snd_max, qp->pipe, qp->backoff);
	/* Only silence fails the QP: no answer at all, on any path, for
	 * timeout × (retry_cnt + 1) (the time verbs' go-back-N would have
	 * retried for, at least EFI_MIN_DEAD_NS), counted only while this
	 * process ran (efi_req_skip_local_stall).  While the
	 * peer keeps answering (responses that do not advance snd_una, e.g.
	 * behind a lost packet), it is alive and the loss is repaired by
	 * going back, however long a backlog takes to drain. */
	if (qp->peer_alive) {
		if (qp->stalls++ >= EFI_MAX_STALLS) {
			EFI_TRACE("qp %x at %llu us: retry exceeded: %u timeouts answered without progress\n",
				  qp->pub.qp_num, (unsigned long long)(now / 1000), qp->stalls);
			efi_req_fail_head(qp, EFI_WC_RETRY_EXC_ERR);
			return;
		}
	} else if (efi_req_peer_dead(qp, now)) {
		EFI_TRACE("qp %x at %llu us: retry exceeded: peer silent for %llu ms (limit %llu ms), "
			  "last answer %llu ms ago, last tx %llu ms ago, una %x nxt %x max %x\n",
			  qp->pub.qp_num, (unsigned long long)(now / 1000),
			  (unsigned long long)((now - qp->silent_since_ns) / 1000000),
			  (unsigned long long)(efi_req_dead_after_ns(qp) / 1000000),
			  (unsigned long long)((now - qp->last_answer_ns) / 1000000),
			  (unsigned long long)((now - qp->last_tx_ns) / 1000000),
			  qp->snd_una, qp->snd_nxt, qp->snd_max);
		efi_req_fail_head(qp, EFI_WC_RETRY_EXC_ERR);
		return;
	}
	/* timeouts in a row that nothing at all answered before this one */
	qp->retries = qp->peer_alive ? 0 : qp->retries + 1;
	qp->peer_alive = false;
	/* A second timeout in a row: trust no SACK any more.  Responders do
	 * not renege, but a stale SACK reordered behind an RNR NAK (which
	 * empties the responder's buffer) could mark a packet the responder
	 * no longer holds; sending everything again cannot be wrong. */
	if (qp->backoff)
		efi_retx_unsack(qp, qp->snd_una);
	if (!qp->rto_at_ns) {
		qp->rto_nxt = qp->snd_nxt;
		for (unsigned i = 0; i < qp->npaths; i++)
			qp->paths[i].cwnd_before_rto = qp->paths[i].cc.cwnd;
	}
	efi_retx_rewind(qp, qp->snd_una);
	/* Nothing is in flight any more, and every path was silent alike:
	 * their health clocks start again with what they carry next (a
	 * clock left running from before a stall suspected a path for
	 * packets sent a moment ago). */
	for (unsigned i = 0; i < qp->npaths; i++) {
		qp->paths[i].loss_unanswered = false;
		qp->paths[i].quiet_since_ns = now;
	}
	qp->rto_path = next_probe_path(qp);
	rehash_probe_path(qp);
	qp->rto_at_ns = now;
	qp->force_ackreq = true;	/* the probe asks for an answer at once */
	for (unsigned i = 0; i < qp->npaths; i++)
		efi_cc_on_timeout(&qp->paths[i].cc, &qp->ctx->ccp, now);
	if (qp->backoff < EFI_MAX_BACKOFF)
		qp->backoff++;
	qp->timer_start_ns = now;
}
