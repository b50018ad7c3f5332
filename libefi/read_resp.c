/* SPDX-License-Identifier: MIT */
/*
 * Read responses that arrive ahead of the one their Read expects.  A QP
 * sends over several lanes and the receiver reads them one after the
 * other, so a chunk's responses overtake the last ones of the chunk before,
 * and with several Reads outstanding (libfabric rxm's Read rendezvous
 * issues many at once) any of them may be the one overtaken.  Each such
 * response is checked as an in-order one would be, placed at its offset at
 * once and remembered; the in-order taking (requester.c) then passes over
 * what was placed.
 *
 * What was placed is one bit per PSN in a bitmap of the QP, not of a WQE:
 * the PSN ranges of outstanding Reads are disjoint, so a PSN names its WQE,
 * and every response asked for lies within the send window (plus one
 * chunk) of snd_una, which EFI_RD_EARLY bits cover.  A bit is set only for
 * a PSN beyond its WQE's next expected response and cleared when the
 * in-order taking reaches it, so a WQE completes with none of its bits set
 * and, as snd_una never passes a set bit, bit psn % EFI_RD_EARLY never
 * stands for two PSNs at once.  The bitmap (256 bytes) exists only while
 * some Read placed a response early and is freed when the last outstanding
 * Read or atomic completes, on flush and on reset: an idle QP holds none.
 *
 * A gap is asked for again (efi_retx_resend) once per gap and WQE, when a
 * response EFI_RD_GAP_RESEND or more ahead of it arrives on the path its
 * request went (EFI_RD_GAP_OTHER_PATH on another, gap_evident), or when the
 * response that filled the gap asked for ends at another gap with placed
 * responses beyond it (those came a round trip ago: what is missing
 * between was lost too).  The request sent again asks only up to the next
 * response placed (efi_rd_chunk_limit), not for what is here already.
 * Everything here runs with ctx->lock held.
 */
#include <stdlib.h>

#include "efi_int.h"

_Static_assert(EFI_RD_EARLY % 64 == 0 && (EFI_RD_EARLY & (EFI_RD_EARLY - 1)) == 0,
	       "EFI_RD_EARLY: a power of two, whole words");
_Static_assert(EFI_RD_EARLY >= EFI_SEND_WINDOW_WIDE + EFI_READ_CHUNK,
	       "every response asked for lies within EFI_RD_EARLY of snd_una");

static uint32_t last_psn(const struct efi_swqe *w)
{
	return efi_psn_add(w->first_psn, w->npkts - 1);
}

bool efi_rd_placed(const struct efi_qp_int *qp, uint32_t psn)
{
	unsigned b = psn % EFI_RD_EARLY;

	return qp->rd_early && (qp->rd_early[b / 64] >> (b % 64) & 1);
}

static void clear_placed(struct efi_qp_int *qp, uint32_t psn)
{
	unsigned b = psn % EFI_RD_EARLY;

	qp->rd_early[b / 64] &= ~(UINT64_C(1) << (b % 64));
}

void efi_rd_early_free(struct efi_qp_int *qp)
{
	free(qp->rd_early);
	qp->rd_early = NULL;
}

uint32_t efi_rd_resp_len(const struct efi_qp_int *qp, const struct efi_swqe *w, uint32_t psn)
{
	uint64_t off = (uint64_t)efi_psn_diff(psn, w->first_psn) * qp->seg;

	return w->length - off < qp->seg ? (uint32_t)(w->length - off) : qp->seg;
}

/* Asks again for the response expect of w, unless it did already. */
static void ask_gap(struct efi_qp_int *qp, struct efi_swqe *w, uint32_t expect)
{
	uint32_t k = (uint32_t)efi_psn_diff(expect, w->first_psn);

	if (w->rd_gap_asked == k + 1)
		return;
	w->rd_gap_asked = k + 1;
	efi_retx_resend(qp, expect);
}

/* Places response pkt (ahead of expect, within w) if it passes the checks
 * an in-order one gets: the PSN within the Read, a full segment but for the
 * last, LAST on the last.  LAST elsewhere is no error: every request's
 * responses end with one, and a long Read is several requests (chunks, and
 * any asked for again); refusing it dropped every chunk's last response
 * that the next chunk overtook.  The SGE bounds hold by construction: the
 * offset and length lie within w->length, which post time checked against
 * the SGEs. */
static bool place(struct efi_qp_int *qp, struct efi_swqe *w, const struct efi_pkt *pkt)
{
	uint32_t p = pkt->psn;
	unsigned b = p % EFI_RD_EARLY;

	if (efi_psn_after(p, last_psn(w)) || efi_psn_diff(p, qp->snd_una) >= (int32_t)EFI_RD_EARLY ||
	    pkt->payload_len != efi_rd_resp_len(qp, w, p) ||
	    (p == last_psn(w) && !(pkt->flags & EFI_PKT_F_LAST)))
		return false;
	if (!qp->rd_early) {
		qp->rd_early = calloc(EFI_RD_EARLY / 64, sizeof(*qp->rd_early));
		if (!qp->rd_early)
			return false;	/* then it is dropped, and asked for again */
	}
	efi_sge_copy_in(w->sge, w->num_sge, (uint32_t)efi_psn_diff(p, w->first_psn) * qp->seg,
			pkt->payload, (uint32_t)pkt->payload_len);
	qp->rd_early[b / 64] |= UINT64_C(1) << (b % 64);
	return true;
}

/* The path the response expect of w was asked for on last: that of the
 * latest request covering it (its chunk's, or one sent again from within
 * the chunk), -1 if no record says. */
static int gap_path(const struct efi_qp_int *qp, const struct efi_swqe *w, uint32_t expect)
{
	uint32_t k = (uint32_t)efi_psn_diff(expect, w->first_psn);

	for (uint32_t i = k + 1; i-- > k / EFI_READ_CHUNK * EFI_READ_CHUNK;) {
		int path = efi_retx_path_of(qp, efi_psn_add(w->first_psn, i));
		if (path >= 0)
			return path;
	}
	return -1;
}

/* Whether response pkt, ahead of expect in w, shows that expect was lost.
 * A path's responses come in order (the responder sends in PSN order, on
 * the lane of the request), so one far enough ahead on the gap's own path
 * is evidence.  On another path it is not: lanes are read one after the
 * other, and a chunk on one overtakes the chunk before it on another by up
 * to a receive batch; asking then sent the rest of that chunk twice.  From
 * another path only a distance no batch explains counts (the gap's path
 * may have failed). */
static bool gap_evident(const struct efi_qp_int *qp, const struct efi_swqe *w, const struct efi_pkt *pkt,
			uint32_t expect)
{
	int32_t dist = efi_psn_diff(pkt->psn, expect);
	int path;

	if (dist < (int32_t)EFI_RD_GAP_RESEND)
		return false;
	if (qp->npaths <= 1 || dist >= (int32_t)EFI_RD_GAP_OTHER_PATH)
		return true;
	path = gap_path(qp, w, expect);
	return path < 0 || (unsigned)path == (pkt->path < qp->npaths ? pkt->path : 0u);
}

/* Once every response a request asked for is placed ahead of its turn,
 * the request was answered: its record leaves RACK's scoreboard.  Left in
 * flight, it was judged by its send time alone: when responses to requests
 * sent after it arrived and the gap before it took longer than srtt +
 * reo_wnd to fill, RACK asked for the whole chunk again, all of it here
 * already (seen in test_read_reorder under load).  The record is the
 * latest at or before p within p's chunk (a chunk's own, or one sent again
 * from within it, as gap_path finds it).  A request with a response still
 * missing stays in flight: RACK may be what asks for that one. */
static void answered_if_whole(struct efi_qp_int *qp, const struct efi_swqe *w, uint32_t p)
{
	uint32_t k = (uint32_t)efi_psn_diff(p, w->first_psn);

	for (uint32_t i = k + 1; i-- > k / EFI_READ_CHUNK * EFI_READ_CHUNK;) {
		uint32_t r = efi_psn_add(w->first_psn, i), n = efi_retx_span_of(qp, r);
		if (!n)
			continue;
		for (uint32_t j = 0; j < n; j++) {
			uint32_t q = efi_psn_add(r, j);
			if (efi_psn_after(q, last_psn(w)))
				break;
			if (!efi_rd_placed(qp, q))
				return;
		}
		efi_retx_held(qp, r, r);
		return;
	}
}

bool efi_rd_ahead(struct efi_qp_int *qp, struct efi_swqe *w, const struct efi_pkt *pkt, uint32_t expect)
{
	uint32_t p = pkt->psn, k = (uint32_t)efi_psn_diff(p, w->first_psn);
	bool taken = false;

	if (w->opcode != EFI_WR_RDMA_READ) {
		ask_gap(qp, w, expect);
		return false;
	}
	/* A copy of one placed already is no news about the gap's length. */
	if (!efi_rd_placed(qp, p)) {
		taken = place(qp, w, pkt);
		if (taken && k + 1 > w->rd_high)
			w->rd_high = k + 1;
		if (taken)
			answered_if_whole(qp, w, p);
	}
	/* The scoreboard is left alone: the request of the gap may be the
	 * very one to send again. */
	if (gap_evident(qp, w, pkt, expect))
		ask_gap(qp, w, expect);
	return taken;
}

uint32_t efi_rd_drain(struct efi_qp_int *qp, struct efi_swqe *w, uint32_t p)
{
	bool drained = false;

	while (!w->resp_done && qp->rd_early) {
		uint32_t next = efi_psn_add(p, 1);
		if (!efi_rd_placed(qp, next))
			break;
		clear_placed(qp, next);
		w->read_done += efi_rd_resp_len(qp, w, next);
		w->resp_done = next == last_psn(w);
		p = next;
		drained = true;
	}
	if (!drained || w->resp_done)
		return p;
	/* A gap was asked for (always the one expected then: this run of
	 * in-order responses is its answer), it is filled now, and another
	 * follows with placed responses beyond it: those were sent before
	 * the answer, a round trip ago, so what is missing between is lost,
	 * not late, and no later response may come to say so.  Without that
	 * request, a drain says nothing: the responses just taken in order
	 * may have been overtaken by a chunk whose own first ones are on
	 * their way. */
	if (w->rd_gap_asked && w->rd_high > (uint32_t)efi_psn_diff(p, w->first_psn) + 1)
		ask_gap(qp, w, efi_psn_add(p, 1));
	else
		w->rd_gap_asked = 0;	/* past the gap asked for */
	return p;
}

uint32_t efi_rd_chunk_limit(const struct efi_qp_int *qp, const struct efi_swqe *w, uint32_t k, uint32_t chunk)
{
	if (!qp->rd_early || w->opcode != EFI_WR_RDMA_READ)
		return chunk;
	for (uint32_t i = 1; i < chunk; i++)
		if (efi_rd_placed(qp, efi_psn_add(w->first_psn, k + i)))
			return i;
	return chunk;
}
