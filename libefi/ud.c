/* SPDX-License-Identifier: MIT */
/*
 * Unreliable datagram QPs and their address handles (efi.h, "Unreliable
 * datagram"; docs/wire-format.md, "Datagrams").
 *
 * A UD message is one datagram: the send path builds it at post time and
 * hands it to the kernel at once (no send queue to drain, no PSN window, no
 * ACK to wait for), the receive path places it with its GRH into the next
 * receive and completes it.  UCX wires its rc_verbs endpoints up over a UD
 * QP (its ud_verbs "auxiliary" transport), which is why this exists.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "efi_int.h"

struct efi_ah_int {
	struct efi_ah pub;
	struct in6_addr dest;		/* the peer interface's address (IPv4-mapped) */
	bool v6;
};

#define ah_of(a) ((struct efi_ah_int *)(a))

/* Takes ctx->lock (the GID table) and ctx->obj_lock. */
struct efi_ah *efi_create_ah(struct efi_pd *pd, struct efi_ah_attr *attr)
{
	struct efi_context_int *ctx;
	struct efi_ah_int *ah;
	bool ok;

	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	ctx = ctx_of(pd->context);
	pthread_mutex_lock(&ctx->lock);
	ok = attr->is_global && attr->grh.sgid_index < ctx->p.ngids &&
	     efi_gid_is_v4(&attr->grh.dgid) == efi_gid_is_v4(&ctx->p.gids[attr->grh.sgid_index]);
	pthread_mutex_unlock(&ctx->lock);
	if (!ok) {
		errno = EINVAL;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ah->pub.context = pd->context;
	ah->pub.pd = pd;
	memcpy(&ah->dest, attr->grh.dgid.raw, sizeof(ah->dest));
	ah->v6 = !efi_gid_is_v4(&attr->grh.dgid);
	pthread_mutex_lock(&ctx->obj_lock);
	ah->pub.handle = ++ctx->next_ah_handle;
	pthread_mutex_unlock(&ctx->obj_lock);
	atomic_fetch_add(&((struct efi_pd_int *)pd)->users, 1);
	return &ah->pub;
}

int efi_destroy_ah(struct efi_ah *pub)
{
	if (!pub)
		return 0;
	atomic_fetch_sub(&((struct efi_pd_int *)pub->pd)->users, 1);
	free(ah_of(pub));
	return 0;
}

uint32_t efi_ud_max_msg(const struct efi_context_int *ctx)
{
	return (uint32_t)efi_mtu_to_num(efi_active_mtu(ctx->p.link_mtu));
}

/* ------------------------------------------------------------------ send */

#define UD_SEND_FLAGS (EFI_SEND_FENCE | EFI_SEND_SIGNALED | EFI_SEND_SOLICITED | EFI_SEND_INLINE)

/* Hands the datagrams built in ctx->txpkts to the wire, then completes the
 * WRs they and the failed ones came from, in posting order (ctx->lock
 * held).  A datagram the socket would not take now is lost, as one a switch
 * drops: UD promises nothing more, and blocking the poster would stall
 * every QP of the context. */
void efi_ud_flush(struct efi_qp_int *qp, struct efi_ud_batch *b)
{
	struct efi_context_int *ctx = qp->ctx;
	unsigned sent = 0;

	for (int tries = 0; sent < b->npkt && tries < 4; tries++) {
		int r = efi_wire_send(ctx->wire, ctx->txpkts + sent, b->npkt - sent);
		if (r < 0)
			break;
		sent += (unsigned)r;
	}
	for (unsigned i = 0; i < sent; i++) {
		qp->cnt.tx_packets++;
		qp->cnt.tx_bytes += efi_wire_pkt_size(&ctx->txpkts[i]);
	}
	for (unsigned i = 0; i < b->n; i++) {
		if (!b->done[i].complete)
			continue;
		struct efi_wc wc = {
			.wr_id = b->done[i].wr_id, .status = b->done[i].status, .opcode = EFI_WC_SEND,
			.qp_num = qp->pub.qp_num,
		};
		efi_cq_push((struct efi_cq_int *)qp->pub.send_cq, &wc, false);
	}
	b->n = b->npkt = 0;
}

int efi_ud_check(struct efi_qp_int *qp, const struct efi_send_wr *wr, uint64_t *len)
{
	uint64_t total = 0;

	if ((wr->opcode != EFI_WR_SEND && wr->opcode != EFI_WR_SEND_WITH_IMM) ||
	    (wr->send_flags & ~UD_SEND_FLAGS) || wr->num_sge < 0 ||
	    (uint32_t)wr->num_sge > qp->attr.cap.max_send_sge || (wr->num_sge > 0 && !wr->sg_list))
		return EINVAL;
	if (!wr->wr.ud.ah || wr->wr.ud.ah->context != qp->pub.context ||
	    wr->wr.ud.remote_qpn > EFI_QPN_MASK || wr->wr.ud.remote_qpn < EFI_QPN_PER_BLOCK)
		return EINVAL;
	for (int i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (total > efi_ud_max_msg(qp->ctx))
		return EINVAL;
	if ((wr->send_flags & EFI_SEND_INLINE) && total > qp->attr.cap.max_inline_data)
		return EINVAL;
	*len = total;
	return 0;
}

/* Builds wr's datagram into txpkts[slot] (ctx->lock held); false when an SGE
 * fails its lkey check (the WR then completes with LOC_PROT_ERR). */
static bool ud_build(struct efi_qp_int *qp, const struct efi_send_wr *wr, uint32_t len, unsigned slot)
{
	struct efi_context_int *ctx = qp->ctx;
	const struct efi_ah_int *ah = ah_of(wr->wr.ud.ah);
	struct efi_wire_pkt *wp = &ctx->txpkts[slot];
	uint8_t *buf = ctx->txbuf + (size_t)slot * EFI_PKTBUF_SIZE;
	struct efi_pkt h;
	size_t hl;
	uint32_t off;

	memset(&h, 0, sizeof(h));
	h.opcode = wr->opcode == EFI_WR_SEND_WITH_IMM ? EFI_OP_UD_SEND_ONLY_IMM : EFI_OP_UD_SEND_ONLY;
	h.flags = (wr->send_flags & EFI_SEND_SOLICITED) ? EFI_PKT_F_SOLICITED : 0;
	h.dest_qpn = wr->wr.ud.remote_qpn;
	h.src_qpn = qp->pub.qp_num;
	h.psn = qp->ud_psn;
	h.qkey = wr->wr.ud.remote_qkey;
	h.imm_be = wr->imm_data;
	hl = efi_pkt_build_hdr(buf, EFI_PKTBUF_SIZE, &h);
	if (!hl || hl + len > EFI_PKTBUF_SIZE)
		return false;
	off = (uint32_t)hl;
	for (int i = 0; i < wr->num_sge; i++) {
		const struct efi_sge *s = &wr->sg_list[i];
		if (!(wr->send_flags & EFI_SEND_INLINE) &&
		    !efi_mr_check(ctx, s->lkey, qp->pub.pd, s->addr, s->length, 0))
			return false;
		if (s->length)	/* an empty SGE may have no address */
			memcpy(buf + off, (const void *)(uintptr_t)s->addr, s->length);
		off += s->length;
	}
	qp->ud_psn = efi_psn_add(qp->ud_psn, 1);
	memset(wp, 0, sizeof(*wp));
	wp->buf = buf;
	wp->len = off;
	wp->cap = EFI_PKTBUF_SIZE;
	wp->peer.sin6_family = AF_INET6;
	wp->peer.sin6_addr = ah->dest;
	wp->peer.sin6_port = htons((uint16_t)efi_lane_port(ctx->p.port_base, 0, h.dest_qpn));
	/* from lane 0 of the QP's own block: the receiver checks that the
	 * source port belongs to the source QPN */
	wp->lane = qp->lane_base;
	return true;
}

int efi_ud_add(struct efi_qp_int *qp, struct efi_ud_batch *b, const struct efi_send_wr *wr, uint32_t len)
{
	/* a receive-only QP (max_send_wr 0) has no send queue at all */
	if (qp->attr.cap.max_send_wr == 0)
		return ENOMEM;
	b->done[b->n].wr_id = wr->wr_id;
	b->done[b->n].status = EFI_WC_LOC_PROT_ERR;
	if (ud_build(qp, wr, len, b->npkt)) {
		b->done[b->n].status = EFI_WC_SUCCESS;
		b->npkt++;
	}
	b->done[b->n].complete = b->done[b->n].status != EFI_WC_SUCCESS || qp->init.sq_sig_all ||
				 (wr->send_flags & EFI_SEND_SIGNALED);
	if (++b->n == EFI_BATCH)
		efi_ud_flush(qp, b);
	return 0;
}

/* --------------------------------------------------------------- receive */

/*
 * The GRH of a datagram of udp_len bytes from GID src to GID dst (efi.h,
 * EFI_GRH_LEN): a GRH as InfiniBand and RoCE v1 give it, version 6 with
 * the two GIDs whole, an IPv4 peer's as its IPv4-mapped GID.  Not RoCEv2's
 * IPv4 layout (an IPv4 header in the last 20 bytes): a device without
 * sysfs GID types reads as RoCE v1 to its consumers, and UCX's UD
 * transport then compares the whole dgid with its GIDs and drops what
 * does not match (UCX_UD_VERBS_ETH_DGID_CHECK, on by default); the last
 * 4 bytes of sgid and dgid are the IPv4 addresses either way.
 */
static void build_grh(uint8_t grh[EFI_GRH_LEN], const struct in6_addr *src, const struct in6_addr *dst,
		      uint32_t udp_len)
{
	uint32_t plen = udp_len + 8;

	memset(grh, 0, EFI_GRH_LEN);
	grh[0] = 0x60;
	grh[4] = (uint8_t)(plen >> 8);
	grh[5] = (uint8_t)plen;
	grh[6] = 17;		/* next header: UDP, what the datagram came in */
	grh[7] = 64;		/* hop limit */
	memcpy(grh + 8, src, 16);
	memcpy(grh + 24, dst, 16);
}

/* Whether from is a lane port of the context holding src_qpn: what efid
 * bound for that context alone (the keyless source check of an RC QP, for
 * the QPN the datagram names as its source). */
static bool from_qpn_lane(const struct efi_context_int *ctx, const struct sockaddr_in6 *from, uint32_t src_qpn)
{
	uint32_t port = ntohs(from->sin6_port), lane0 = efi_lane_port(ctx->p.port_base, 0, src_qpn);

	if (!lane0 || port < lane0)
		return false;
	return (port - lane0) % EFI_LANE_STRIDE == 0 && (port - lane0) / EFI_LANE_STRIDE < EFI_WIRE_MAX_LANES;
}

/* Our address of the peer's family, for the GRH's destination. */
static struct in6_addr local_addr(const struct efi_context_int *ctx, bool v6)
{
	struct in6_addr a;

	memset(&a, 0, sizeof(a));
	for (int i = 0; i < ctx->p.ngids; i++) {
		if (efi_gid_is_v4(&ctx->p.gids[i]) != v6) {
			memcpy(&a, ctx->p.gids[i].raw, sizeof(a));
			break;
		}
	}
	return a;
}

void efi_ud_receive(struct efi_context_int *ctx, struct efi_qp_int *qp, const struct efi_pkt *pkt,
		    const struct efi_wire_pkt *wp)
{
	enum efi_qp_state st = qp->attr.qp_state;
	struct efi_rwqe *r;
	struct efi_wc wc;
	uint8_t grh[EFI_GRH_LEN];
	uint32_t total, placed;
	bool v6;

	if (st != EFI_QPS_RTR && st != EFI_QPS_RTS && st != EFI_QPS_SQD) {
		efi_count_drop(&qp->cnt, EFI_DROP_QP_STATE);
		return;
	}
	if (pkt->src_qpn < EFI_QPN_PER_BLOCK ||
	    (ctx->wire->source_ports && !from_qpn_lane(ctx, &wp->peer, pkt->src_qpn))) {
		efi_count_drop(&qp->cnt, EFI_DROP_BAD_SOURCE);
		return;
	}
	if (pkt->qkey != qp->attr.qkey) {
		efi_count_drop(&qp->cnt, EFI_DROP_BAD_KEY);
		return;
	}
	qp->cnt.rx_packets++;
	qp->cnt.rx_bytes += wp->len;
	if (qp->srq) {
		if (!efi_srq_take(qp->srq, &qp->srq_wqe)) {
			efi_count_drop(&qp->cnt, EFI_DROP_NO_RECEIVE);
			return;
		}
		r = &qp->srq_wqe;
	} else {
		if (qp->rq_head == qp->rq_tail) {
			efi_count_drop(&qp->cnt, EFI_DROP_NO_RECEIVE);
			return;
		}
		r = &qp->rq[qp->rq_head];
		qp->rq_head = (qp->rq_head + 1) & qp->rq_mask;
	}
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = r->wr_id;
	wc.opcode = EFI_WC_RECV;
	wc.qp_num = qp->pub.qp_num;
	wc.src_qp = pkt->src_qpn;
	wc.wc_flags = EFI_WC_GRH;
	if (pkt->hdrs & EFI_HDR_IMMDT) {
		wc.imm_data = pkt->imm_be;
		wc.wc_flags |= EFI_WC_WITH_IMM;
	}
	if (r->bad) {
		wc.status = EFI_WC_LOC_PROT_ERR;
	} else {
		v6 = !IN6_IS_ADDR_V4MAPPED(&wp->peer.sin6_addr);
		struct in6_addr dst = local_addr(ctx, v6);
		build_grh(grh, &wp->peer.sin6_addr, &dst, wp->len);
		total = EFI_GRH_LEN + (uint32_t)pkt->payload_len;
		placed = total < r->length ? total : r->length;
		efi_sge_copy_in(r->sge, r->num_sge, 0, grh, placed < EFI_GRH_LEN ? placed : EFI_GRH_LEN);
		if (placed > EFI_GRH_LEN)
			efi_sge_copy_in(r->sge, r->num_sge, EFI_GRH_LEN, pkt->payload, placed - EFI_GRH_LEN);
		wc.byte_len = placed;
		wc.status = placed == total ? EFI_WC_SUCCESS : EFI_WC_LOC_LEN_ERR;
		if (wc.status == EFI_WC_LOC_LEN_ERR)
			wc.vendor_err = total - placed;
	}
	efi_cq_push((struct efi_cq_int *)qp->pub.recv_cq, &wc, pkt->flags & EFI_PKT_F_SOLICITED);
}
