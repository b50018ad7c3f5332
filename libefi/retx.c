/* SPDX-License-Identifier: MIT */
/*
 * The requester's scoreboard: selective retransmission over the per-PSN
 * send records (struct efi_txrec), with everything under ctx->lock.
 *
 * Each transmitted request packet is INFLIGHT (counted in the QP's pipe and
 * its path's in-flight count), SACKED (the responder holds it: it is never
 * sent again; responders never renege, reorder.h), LOST (to be sent again)
 * or NONE (acknowledged).  The transmit path sends LOST packets first,
 * lowest PSN first, then continues in sequence at snd_nxt, skipping SACKED
 * ones; going back (a timeout, a NAK) is "mark every INFLIGHT packet from
 * there LOST"; a lost Read response or atomic ACK sends its request alone
 * (efi_retx_resend), the requests after it being held (efi_retx_held).
 *
 * Loss detection is time-based and per path (RACK, RFC 8985): a packet is
 * lost when a packet sent after it on the same path has been delivered and
 * a reordering window (min RTT / 4) has passed on top of the path's RTT.
 * Spraying over paths of different delays therefore reorders without
 * causing retransmissions.  A tail loss — nothing sent after it arrives —
 * is found by a probe after two smoothed RTTs without an answer (TLP):
 * the oldest packet in flight is sent again asking for an ACK, whose SACK
 * then exposes any other hole.  The retransmission timeout (adaptive, from
 * the RTT, doubling while nothing answers) is the last resort.
 *
 * Scans step one PSN at a time, not over a record's span: a Read asked
 * for again from the middle of its chunk has a record inside the span of
 * the chunk's first request, and skipping it would leave it in the pipe
 * for ever (no RACK, no rewind: the QP stalls with the window full).
 */
#include <string.h>

#include "efi_int.h"

static struct efi_txrec *rec_of(struct efi_qp_int *qp, uint32_t psn)
{
	struct efi_txrec *r = &qp->txrec[psn & (EFI_TXREC_SLOTS - 1)];
	return r->psn == psn && r->tx_ns ? r : NULL;
}

static unsigned path_of(const struct efi_qp_int *qp, unsigned p)
{
	return p < qp->npaths ? p : 0;
}

/* qp's entry in the context's shared RTT table (rtt.h), made if missing,
 * cached in the QP and looked up again when its peer changed.  ctx->lock
 * held. */
static struct efi_rtt_peer *peer_rtt(struct efi_qp_int *qp)
{
	const uint8_t *addr = qp->peer.sin6_addr.s6_addr;

	if (!qp->rtt_peer || memcmp(qp->rtt_peer->addr, addr, 16) != 0)
		qp->rtt_peer = efi_rtt_peer_find(&qp->ctx->rtt_peers, addr, true);
	return qp->rtt_peer;
}

/* The smoothed RTT the QPs to qp's peer measured on path i, 0 if none
 * (rtt.h).  ctx->lock held. */
static uint64_t peer_srtt(const struct efi_qp_int *qp, unsigned i)
{
	const uint8_t *addr = qp->peer.sin6_addr.s6_addr;
	const struct efi_rtt_peer *pr = qp->rtt_peer;

	if (i >= EFI_RTT_PEER_PATHS)
		return 0;
	/* (a QP that has not measured yet has not cached its entry) */
	if (!pr || memcmp(pr->addr, addr, 16) != 0)
		pr = efi_rtt_peer_find(&qp->ctx->rtt_peers, addr, false);
	return pr && pr->path[i].samples ? pr->path[i].srtt_ns : 0;
}

/* The record leaves the pipe. */
static void leave(struct efi_qp_int *qp, struct efi_txrec *r)
{
	uint32_t w = r->npsn ? r->npsn : 1;

	if (r->state != EFI_TX_INFLIGHT)
		return;
	qp->pipe = qp->pipe > w ? qp->pipe - w : 0;
	efi_path_on_leave(&qp->paths[path_of(qp, r->path)], w);
}

static void mark_lost(struct efi_qp_int *qp, struct efi_txrec *r)
{
	if (r->state == EFI_TX_INFLIGHT)
		efi_path_on_loss(&qp->paths[path_of(qp, r->path)]);
	leave(qp, r);
	r->state = EFI_TX_LOST;
	if (!qp->have_lost || efi_psn_before(r->psn, qp->lost_hint))
		qp->lost_hint = r->psn;
	qp->have_lost = true;
}

/* A packet was delivered (acknowledged or SACKed): the window's accounting.
 * (RACK's "newest delivered send time" comes from the echoed timestamp
 * instead, efi_retx_after_response: a record's send time is its latest
 * transmission, which need not be the one that arrived.) */
static void delivered(struct efi_qp_int *qp, struct efi_txrec *r)
{
	unsigned p = path_of(qp, r->path);

	if (r->state == EFI_TX_INFLIGHT)
		qp->delivered[p] += r->npsn ? r->npsn : 1;
}

void efi_retx_init(struct efi_qp_int *qp, uint64_t now)
{
	/* One path per lane: path i leaves from our lane i (xport.c, address_pkt). */
	qp->npaths = qp->ctx->p.nlanes;
	if (qp->npaths < 1)
		qp->npaths = 1;
	if (qp->npaths > EFI_MAX_PATHS)
		qp->npaths = EFI_MAX_PATHS;
	qp->burst_left = 0;
	for (unsigned i = 0; i < EFI_MAX_PATHS; i++) {
		efi_path_init(&qp->paths[i], &qp->ctx->ccp, now);
		/* InitialWindow is the connection's: its paths share it (a
		 * first burst of InitialWindow × paths would overflow the
		 * queues it meant to respect). */
		qp->paths[i].cc.cwnd /= qp->npaths;
		if (qp->paths[i].cc.cwnd < qp->ctx->ccp.min_cwnd)
			qp->paths[i].cc.cwnd = qp->ctx->ccp.min_cwnd;
	}
	qp->pipe = 0;
	qp->have_lost = false;
	qp->force_ackreq = false;
	qp->tlp_pending = false;
	qp->backoff = 0;
	qp->tlp_sent = 0;
	qp->last_answer_ns = qp->silent_since_ns = qp->last_tx_ns = now;
	qp->rack_deadline_ns = 0;
	qp->rto_at_ns = 0;
	memset(qp->delivered, 0, sizeof(qp->delivered));
	memset(qp->lost_now, 0, sizeof(qp->lost_now));
	qp->ack_high_valid = false;
	qp->implied_nak_valid = false;
}

void efi_retx_flush(struct efi_qp_int *qp)
{
	for (unsigned i = 0; i < EFI_MAX_PATHS; i++)
		qp->paths[i].inflight = 0;
	qp->pipe = 0;
	qp->have_lost = false;
	qp->force_ackreq = false;
	qp->tlp_pending = false;
	qp->tlp_sent = 0;
	qp->rack_deadline_ns = 0;
	qp->rto_at_ns = 0;
	qp->ack_high_valid = false;
	qp->implied_nak_valid = false;
}

void efi_retx_on_send(struct efi_qp_int *qp, struct efi_txrec *r, uint64_t now)
{
	struct efi_path *p;
	uint32_t w = r->npsn ? r->npsn : 1;

	if (r->nsent) {
		if (r->retx < UINT8_MAX)
			r->retx++;
		qp->cnt.retransmissions++;
		qp->paths[path_of(qp, r->path)].retransmissions++;
	}
	if (r->nsent < UINT8_MAX)
		r->nsent++;
	leave(qp, r);	/* a probe of a packet still in flight */
	qp->tlp_pending = false;
	r->path = qp->cur_path;
	p = &qp->paths[path_of(qp, r->path)];
	r->state = EFI_TX_INFLIGHT;
	/* the transmit path sets it again when the batch has left */
	if (now > qp->last_tx_ns)
		qp->last_tx_ns = now;
	qp->pipe += w;
	efi_path_on_send(p, w, now);
	uint64_t gap = efi_cc_pacing_gap_ns(&p->cc, efi_rtt_srtt(&p->rtt, qp->ctx->ccp.target_delay_ns));
	p->next_send_ns = gap ? now + gap : 0;
}

void efi_retx_unsent(struct efi_qp_int *qp, uint32_t psn)
{
	struct efi_txrec *r = rec_of(qp, psn);

	if (!r)
		return;
	/* It never left: undo what efi_retx_on_send counted. */
	if (r->nsent && --r->nsent) {
		if (r->retx)
			r->retx--;
		qp->cnt.retransmissions--;
		qp->paths[path_of(qp, r->path)].retransmissions--;
	}
	mark_lost(qp, r);
}

void efi_retx_acked(struct efi_qp_int *qp, uint32_t from, uint32_t to)
{
	int32_t n = efi_psn_diff(to, from);

	for (int32_t i = 0; i < n && i < (int32_t)EFI_TXREC_SLOTS; i++) {
		struct efi_txrec *r = rec_of(qp, efi_psn_add(from, (uint32_t)i));
		if (!r)
			continue;
		delivered(qp, r);
		leave(qp, r);
		r->state = EFI_TX_NONE;
	}
	if (qp->have_lost && efi_psn_before(qp->lost_hint, to))
		qp->lost_hint = to;
}

void efi_retx_sack(struct efi_qp_int *qp, const struct efi_pkt *pkt)
{
	if (!(pkt->hdrs & EFI_HDR_SACK))
		return;
	for (unsigned k = 0; k < pkt->sack.nbits; k++) {
		uint32_t psn;
		struct efi_txrec *r;

		if (!(pkt->sack.bitmap[k / 8] & (1u << (k % 8))))
			continue;
		psn = efi_psn_add(pkt->sack.base_psn, k);
		/* Only what is outstanding: a SACK is about [snd_una, snd_nxt). */
		if (efi_psn_before(psn, qp->snd_una) || !efi_psn_before(psn, qp->snd_nxt))
			continue;
		if (!(r = rec_of(qp, psn)) || r->state == EFI_TX_SACKED || r->state == EFI_TX_NONE)
			continue;
		delivered(qp, r);
		leave(qp, r);
		r->state = EFI_TX_SACKED;
	}
}

void efi_retx_held(struct efi_qp_int *qp, uint32_t from, uint32_t to)
{
	uint32_t psn = from;

	for (unsigned n = 0; n < EFI_TXREC_SLOTS && !efi_psn_after(psn, to) && efi_psn_before(psn, qp->snd_nxt); n++) {
		struct efi_txrec *r = rec_of(qp, psn);
		if (r && (r->state == EFI_TX_INFLIGHT || r->state == EFI_TX_LOST)) {
			delivered(qp, r);
			leave(qp, r);
			r->state = EFI_TX_SACKED;
		}
		psn = efi_psn_add(psn, 1);
	}
}

void efi_retx_resend(struct efi_qp_int *qp, uint32_t psn)
{
	struct efi_txrec *r = &qp->txrec[psn & (EFI_TXREC_SLOTS - 1)];

	if (!efi_psn_before(psn, qp->snd_nxt))
		return;	/* not sent yet: it goes in sequence */
	if (r->psn != psn || !r->tx_ns) {
		/* A Read asked for again from the middle of its chunk: the
		 * chunk's own record was acknowledged by its responses. */
		memset(r, 0, sizeof(*r));
		r->psn = psn;
		r->tx_ns = 1;	/* replaced when it leaves */
		r->npsn = 1;
		r->nsent = 1;	/* counts as a retransmission */
	}
	mark_lost(qp, r);
}

/* The reordering window of a path: a quarter of its minimum RTT. */
static uint64_t reo_wnd(const struct efi_qp_int *qp, const struct efi_path *p)
{
	uint64_t w = p->rtt.min_ns / 4;
	return w > qp->ctx->ccp.reo_min_ns ? w : qp->ctx->ccp.reo_min_ns;
}

void efi_retx_detect(struct efi_qp_int *qp, uint64_t now)
{
	const struct efi_cc_params *cp = &qp->ctx->ccp;
	uint64_t next = 0;
	uint32_t psn = qp->snd_una;

	qp->rack_deadline_ns = 0;
	if (!qp->pipe)
		return;
	/* Only as far as a SACK block reaches from snd_una: the responder
	 * may hold packets further ahead (a wide window) without being able
	 * to say so yet, and a later packet's arrival says nothing about
	 * those.  They are judged once snd_una has come within reach. */
	for (unsigned n = 0; n < EFI_SACK_MAX_BITS && efi_psn_before(psn, qp->snd_nxt); n++) {
		struct efi_txrec *r = rec_of(qp, psn);
		if (!r) {
			psn = efi_psn_add(psn, 1);
			continue;
		}
		psn = efi_psn_add(psn, 1);
		if (r->state != EFI_TX_INFLIGHT)
			continue;
		struct efi_path *p = &qp->paths[path_of(qp, r->path)];
		if (r->tx_ns >= p->rack_xmit_ns)
			continue;	/* nothing sent after it on its path arrived yet */
		uint64_t deadline = r->tx_ns + efi_rtt_srtt(&p->rtt, cp->target_delay_ns) + reo_wnd(qp, p);
		if (now >= deadline) {
			qp->lost_now[path_of(qp, r->path)]++;
			mark_lost(qp, r);
			qp->cnt.fast_retransmits++;
		} else if (!next || deadline < next) {
			next = deadline;
		}
	}
	qp->rack_deadline_ns = next;
	for (unsigned i = 0; i < qp->npaths; i++) {
		if (!qp->lost_now[i])
			continue;
		struct efi_path *p = &qp->paths[i];
		efi_cc_on_loss(&p->cc, cp, qp->lost_now[i], efi_rtt_srtt(&p->rtt, cp->target_delay_ns), now);
		qp->lost_now[i] = 0;
	}
}

void efi_retx_rewind(struct efi_qp_int *qp, uint32_t to)
{
	uint32_t psn = to;

	if (!efi_psn_before(to, qp->snd_nxt))
		return;
	for (unsigned n = 0; n < EFI_TXREC_SLOTS && efi_psn_before(psn, qp->snd_nxt); n++) {
		struct efi_txrec *r = rec_of(qp, psn);
		if (!r) {
			psn = efi_psn_add(psn, 1);
			continue;
		}
		psn = efi_psn_add(psn, 1);
		if (r->state == EFI_TX_INFLIGHT || r->state == EFI_TX_LOST) {
			leave(qp, r);
			/* sent again in sequence, not from the lost list */
			r->state = EFI_TX_NONE;
		}
	}
	qp->snd_nxt = to;
	if (qp->have_lost && !efi_psn_before(qp->lost_hint, to))
		qp->have_lost = false;
}

void efi_retx_unsack(struct efi_qp_int *qp, uint32_t from)
{
	uint32_t psn = from;

	for (unsigned n = 0; n < EFI_TXREC_SLOTS && efi_psn_before(psn, qp->snd_nxt); n++) {
		struct efi_txrec *r = rec_of(qp, psn);
		if (r && r->state == EFI_TX_SACKED)
			r->state = EFI_TX_NONE;	/* sent again in sequence */
		psn = efi_psn_add(psn, 1);
	}
}

int efi_retx_path_of(const struct efi_qp_int *qp, uint32_t psn)
{
	const struct efi_txrec *r = &qp->txrec[psn & (EFI_TXREC_SLOTS - 1)];
	return r->psn == psn && r->tx_ns ? (int)path_of(qp, r->path) : -1;
}

uint32_t efi_retx_span_of(const struct efi_qp_int *qp, uint32_t psn)
{
	const struct efi_txrec *r = &qp->txrec[psn & (EFI_TXREC_SLOTS - 1)];
	return r->psn == psn && r->tx_ns ? (r->npsn ? r->npsn : 1u) : 0u;
}

bool efi_retx_next_lost(struct efi_qp_int *qp, uint32_t *out)
{
	uint32_t psn;

	if (!qp->have_lost)
		return false;
	psn = efi_psn_before(qp->lost_hint, qp->snd_una) ? qp->snd_una : qp->lost_hint;
	for (unsigned n = 0; n < EFI_TXREC_SLOTS && efi_psn_before(psn, qp->snd_nxt); n++) {
		struct efi_txrec *r = rec_of(qp, psn);
		if (r && r->state == EFI_TX_LOST) {
			qp->lost_hint = psn;
			*out = psn;
			return true;
		}
		psn = efi_psn_add(psn, 1);
	}
	qp->have_lost = false;
	return false;
}

/*
 * A spurious timeout's going back undone (RFC 4015's response: resume with
 * new data, not with what is known to be on its way).  The timeout rewound
 * snd_nxt to snd_una; what it has not sent again yet is still in flight,
 * as the answer to a packet sent before the timeout shows, and sending it
 * again only made duplicates: a peer descheduled for 10 ms on a loaded
 * host cost a window (~250 packets) of them per stall.  Those records go
 * back into the pipe with their first send times (RACK and the next
 * timeout still find any of them that was really lost: the answered
 * packet left after them).
 */
static void undo_rewind(struct efi_qp_int *qp, uint64_t now)
{
	uint32_t psn = qp->snd_nxt;

	if (!efi_psn_before(qp->snd_nxt, qp->rto_nxt) || efi_psn_after(qp->rto_nxt, qp->snd_max))
		return;
	for (unsigned n = 0; n < EFI_TXREC_SLOTS && efi_psn_before(psn, qp->rto_nxt); n++) {
		struct efi_txrec *r = rec_of(qp, psn);
		uint32_t w;

		psn = efi_psn_add(psn, 1);
		if (!r || r->state != EFI_TX_NONE || !r->nsent)
			continue;
		w = r->npsn ? r->npsn : 1;
		r->state = EFI_TX_INFLIGHT;
		qp->pipe += w;
		efi_path_on_send(&qp->paths[path_of(qp, r->path)], w, now);
	}
	EFI_TRACE("qp %x: spurious timeout, snd_nxt %x back to %x\n", qp->pub.qp_num, qp->snd_nxt, qp->rto_nxt);
	qp->snd_nxt = qp->rto_nxt;
}

/* After a response was processed: the RTT sample, the window update and
 * loss detection. */
void efi_retx_after_response(struct efi_qp_int *qp, const struct efi_pkt *pkt, uint64_t now)
{
	const struct efi_cc_params *cp = &qp->ctx->ccp;
	unsigned echo = path_of(qp, pkt->path);
	uint64_t rtt = 0;
	bool rescan = qp->rack_deadline_ns && now >= qp->rack_deadline_ns;

	/* Only responses that answer one request packet measure its RTT: a
	 * Read's last response also carries the time its chunk took. */
	if ((pkt->opcode == EFI_OP_ACK || pkt->opcode == EFI_OP_ATOMIC_ACK ||
	     pkt->opcode == EFI_OP_READ_RESP_FIRST || pkt->opcode == EFI_OP_READ_RESP_ONLY) &&
	    pkt->ts_echo && pkt->ts_echo <= now)
		rtt = now - pkt->ts_echo;
	/* The first answer after a timeout echoes a packet sent before it:
	 * the timeout was spurious (a stalled peer, not a loss), and the
	 * windows it cut are given back (Eifel, RFC 3522). */
	if (qp->rto_at_ns) {
		if (pkt->ts_echo && pkt->ts_echo < qp->rto_at_ns) {
			for (unsigned i = 0; i < qp->npaths; i++)
				if (qp->paths[i].cwnd_before_rto > qp->paths[i].cc.cwnd)
					qp->paths[i].cc.cwnd = qp->paths[i].cwnd_before_rto;
			undo_rewind(qp, now);
			rescan = true;	/* records back in the pipe, old send times */
		}
		qp->rto_at_ns = 0;
	}
	qp->last_answer_ns = qp->silent_since_ns = now;
	if (pkt->ts_echo && pkt->ts_echo <= now && pkt->ts_echo > qp->answered_tx_ns)
		qp->answered_tx_ns = pkt->ts_echo;
	qp->tlp_sent = 0;
	/* The request that caused this response left at ts_echo on path
	 * echo and has arrived: what left that path before it and is still
	 * unaccounted for is lost, once the reordering window has passed. */
	if ((pkt->hdrs & EFI_HDR_AETH) && pkt->ts_echo <= now && pkt->ts_echo > qp->paths[echo].rack_xmit_ns) {
		qp->paths[echo].rack_xmit_ns = pkt->ts_echo;
		rescan = true;
	}
	efi_path_on_answer(&qp->paths[echo], cp, rtt, now);
	/* the peer's estimate, for its QPs that have none of their own */
	if (rtt && echo < EFI_RTT_PEER_PATHS && peer_rtt(qp))
		efi_rtt_sample(&qp->rtt_peer->path[echo], rtt);
	for (unsigned i = 0; i < qp->npaths; i++) {
		struct efi_path *p = &qp->paths[i];
		if (!qp->delivered[i] && i != echo)
			continue;
		/* Its packets arrived (acknowledged or SACKed by an answer on
		 * another path): the path works, whatever carried the answer. */
		if (i != echo)
			efi_path_on_answer(p, cp, 0, now);
		efi_cc_on_ack(&p->cc, cp, i == echo ? rtt : 0, qp->delivered[i],
			      efi_rtt_srtt(&p->rtt, cp->target_delay_ns), now);
		qp->delivered[i] = 0;
	}
	/* The scan walks the whole window: only when its answer can have
	 * changed.  A record becomes a loss candidate when a later send on
	 * its path is answered (rack_xmit_ns moves) and lost when its
	 * deadline passes (rack_deadline_ns, also run from efi_retx_timers).
	 * The 64 responses of a Read chunk echo one request, so all but the
	 * first moved nothing: scanning after each was 5% of an
	 * MPI_Allreduce rank's CPU (perf, 16 MiB over rxm's Reads). */
	if (rescan)
		efi_retx_detect(qp, now);
}

uint64_t efi_retx_rto_ns(const struct efi_qp_int *qp)
{
	uint64_t cap = qp->rto_ns ? qp->rto_ns : EFI_MAX_RTO_NS;
	uint64_t floor = qp->ctx->ccp.min_rto_ns < cap ? qp->ctx->ccp.min_rto_ns : cap;
	uint64_t rto = 0;

	/* The slowest path that has been measured: a path never used yet
	 * (no sample) would otherwise put the timeout at its cap. */
	for (unsigned i = 0; i < qp->npaths; i++) {
		if (!qp->paths[i].rtt.samples)
			continue;
		uint64_t r = efi_rtt_rto(&qp->paths[i].rtt, floor, cap, cap);
		if (r > rto)
			rto = r;
	}
	if (!rto)
		rto = efi_rtt_rto(&qp->paths[0].rtt, floor, cap, cap);
	rto <<= qp->backoff;
	return rto < cap ? rto : cap;
}

uint64_t efi_retx_pto_ns(const struct efi_qp_int *qp)
{
	const struct efi_cc_params *cp = &qp->ctx->ccp;
	uint64_t srtt = 0;

	for (unsigned i = 0; i < qp->npaths; i++) {
		uint64_t s = qp->paths[i].rtt.samples ? qp->paths[i].rtt.srtt_ns : 0;
		if (s > srtt)
			srtt = s;
	}
	if (!srtt) {
		/* No sample of its own: the default (the target delay), or
		 * what the QPs to its peer measure when that is more.  Only
		 * ever more patient: a new QP in a burst waits behind the
		 * others' requests in the peer's queue, and probed after the
		 * default's 4 ms (10,888 duplicates for 10,000 new QPs); a
		 * shared estimate below the default is not trusted for the
		 * first probe (with 256 in flight it probed 582-1,674 of
		 * 10,000 new QPs too early).  Its first answer gives it its
		 * own. */
		srtt = cp->target_delay_ns;
		for (unsigned i = 0; i < qp->npaths; i++) {
			uint64_t s = peer_srtt(qp, i);
			if (s > srtt)
				srtt = s;
		}
	}
	return 2 * srtt > cp->tlp_min_ns ? 2 * srtt : cp->tlp_min_ns;
}

/* The oldest packet in flight, for a tail-loss probe. */
static struct efi_txrec *oldest_inflight(struct efi_qp_int *qp)
{
	uint32_t psn = qp->snd_una;

	for (unsigned n = 0; n < EFI_TXREC_SLOTS && efi_psn_before(psn, qp->snd_nxt); n++) {
		struct efi_txrec *r = rec_of(qp, psn);
		if (r && r->state == EFI_TX_INFLIGHT)
			return r;
		psn = efi_psn_add(psn, 1);
	}
	return NULL;
}

/*
 * Whether path i's silence is a queue, not a loss (ctx->lock held): its
 * oldest packet in flight follows the response the oldest Read (or atomic)
 * waits for.  The responder answers in PSN order, so whatever follows a
 * Read waits for that Read's responses: with a window of Read chunks
 * spread over four paths, each path's request waited for up to three
 * chunks of other paths' responses (half a millisecond at 5 Gb/s), was
 * suspected, asked again elsewhere and answered twice (read_bw 1M:
 * ~1,000 suspicions per path and 19,000 duplicate requests in 3 s).  A
 * request really lost behind the Read is found once the responses reach
 * it: the path then carries the one waited for, and its silence counts.
 */
static bool queued_behind_read(struct efi_qp_int *qp, unsigned i)
{
	const struct efi_swqe *head;
	uint32_t psn = qp->snd_una, waited;

	if (qp->sq_head == qp->sq_started || !qp->rd_outstanding)
		return false;
	head = &qp->sq[qp->sq_head & qp->sq_mask];
	if (head->opcode != EFI_WR_RDMA_READ && head->opcode != EFI_WR_ATOMIC_CMP_AND_SWP &&
	    head->opcode != EFI_WR_ATOMIC_FETCH_AND_ADD)
		return false;
	/* the response it waits for (all but a Read's last are full) */
	waited = head->opcode == EFI_WR_RDMA_READ ? efi_psn_add(head->first_psn, head->read_done / qp->seg)
						  : head->first_psn;
	for (unsigned n = 0; n < EFI_TXREC_SLOTS && efi_psn_before(psn, qp->snd_nxt); n++) {
		const struct efi_txrec *r = rec_of(qp, psn);
		if (r && r->state == EFI_TX_INFLIGHT && path_of(qp, r->path) == i)
			return efi_psn_after(psn, waited);
		psn = efi_psn_add(psn, 1);
	}
	return false;
}

/* Reordering timer, tail-loss probe, path health.  The retransmission
 * timeout itself is efi_req_timers' (it owns the verbs retry semantics). */
void efi_retx_timers(struct efi_qp_int *qp, uint64_t now)
{
	const struct efi_cc_params *cp = &qp->ctx->ccp;

	if (qp->rack_deadline_ns && now >= qp->rack_deadline_ns)
		efi_retx_detect(qp, now);
	for (unsigned i = 0; qp->npaths > 1 && i < qp->npaths; i++) {
		/* Silence is a path's fault only while another path answers
		 * what left after this one went quiet: when every path goes
		 * quiet at once, the peer (or its CPU) stalled, and moving
		 * packets between paths would only send them twice; the
		 * tail-loss probe and the timeout handle it.  An answer that
		 * merely arrives later is no evidence: after a stall of the
		 * peer the first answers are to packets sent before it, and
		 * counting them suspected every busy path of a 4-lane Write
		 * on a loaded host (0.5-5 ms stalls, ~150 needless
		 * retransmissions per second, 4 lanes slower than one). */
		if (qp->answered_tx_ns <= qp->paths[i].quiet_since_ns)
			continue;
		/* Due for suspicion, but waiting in the responder's queue
		 * behind a Read: its clock starts when its turn comes. */
		if (qp->paths[i].state == EFI_PATH_ACTIVE && qp->paths[i].inflight &&
		    now - qp->paths[i].quiet_since_ns >= efi_path_suspect_after_ns(&qp->paths[i], cp) &&
		    queued_behind_read(qp, i)) {
			qp->paths[i].quiet_since_ns = now;
			continue;
		}
		if (!efi_path_check(&qp->paths[i], cp, now))
			continue;
		EFI_TRACE("suspect qp %x path %u at %llu us: inflight %u srtt %llu us\n", qp->pub.qp_num, i,
			  (unsigned long long)(now / 1000), qp->paths[i].inflight,
			  (unsigned long long)(efi_rtt_srtt(&qp->paths[i].rtt, cp->target_delay_ns) / 1000));
		/* Suspected: what it carries goes again on the others. */
		uint32_t psn = qp->snd_una;
		for (unsigned n = 0; n < EFI_TXREC_SLOTS && efi_psn_before(psn, qp->snd_nxt); n++) {
			struct efi_txrec *r = rec_of(qp, psn);
			if (r && r->state == EFI_TX_INFLIGHT && path_of(qp, r->path) == i)
				mark_lost(qp, r);
			psn = efi_psn_add(psn, 1);
		}
	}
	if ((qp->pipe || qp->have_lost) && qp->tlp_sent < 2 && !qp->tlp_pending) {
		uint64_t pto = efi_retx_pto_ns(qp);
		/* Measured from the newest transmission (RFC 8985, 7.2), not
		 * from the start of the work: a message longer than the
		 * probe timeout takes longer than it to leave (on a veth the
		 * sender's own sendmmsg carries the receiver's stack), and a
		 * clock started at its first packet fired before its ACK
		 * could come, sending the first packet again for nothing —
		 * a duplicate at the responder, a stale ACK at the requester. */
		uint64_t since = qp->last_answer_ns > qp->silent_since_ns ? qp->last_answer_ns : qp->silent_since_ns;
		if (qp->last_tx_ns > since)
			since = qp->last_tx_ns;
		if (now > since && now - since >= pto << qp->tlp_sent) {
			/* The probe: the first lost packet waiting for room,
			 * else the oldest in flight, asking for an ACK. */
			struct efi_txrec *r = qp->have_lost ? NULL : oldest_inflight(qp);
			if (r)
				mark_lost(qp, r);
			if (qp->have_lost) {
				qp->tlp_pending = true;
				qp->tlp_sent++;
				qp->cnt.tail_probes++;
			}
		}
	}
}

uint32_t efi_retx_ackreq_every(const struct efi_qp_int *qp)
{
	double half = efi_paths_window(qp->paths, qp->npaths) / 2;

	if (half < 1)
		return 1;
	return half < EFI_ACKREQ_EVERY ? (uint32_t)half : EFI_ACKREQ_EVERY;
}

void efi_retx_path_down(struct efi_qp_int *qp, unsigned path)
{
	uint32_t psn = qp->snd_una;

	for (unsigned n = 0; n < EFI_TXREC_SLOTS && efi_psn_before(psn, qp->snd_nxt); n++) {
		struct efi_txrec *r = rec_of(qp, psn);
		if (r && r->state == EFI_TX_INFLIGHT && path_of(qp, r->path) == path)
			mark_lost(qp, r);
		psn = efi_psn_add(psn, 1);
	}
}
