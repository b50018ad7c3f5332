/* SPDX-License-Identifier: MIT */
/*
 * efi_post_send / efi_post_recv: validate work requests, copy them into the
 * queues (and inline data into the WQE), then run the QP's transmit path in
 * the caller's thread.  No system call besides the datagrams sent.
 */
#include <errno.h>
#include <string.h>

#include "efi_int.h"

void efi_sge_copy_out(const struct efi_sge_int *sge, uint32_t nsge, uint32_t off, uint8_t *dst, uint32_t len)
{
	for (uint32_t i = 0; i < nsge && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		uint32_t n = sge[i].length - off < len ? sge[i].length - off : len;
		memcpy(dst, sge[i].addr + off, n);
		dst += n;
		len -= n;
		off = 0;
	}
}

const uint8_t *efi_sge_contig(const struct efi_sge_int *sge, uint32_t nsge, uint32_t off, uint32_t len)
{
	for (uint32_t i = 0; i < nsge; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		return sge[i].length - off >= len ? sge[i].addr + off : NULL;
	}
	return NULL;
}

void efi_sge_copy_in(const struct efi_sge_int *sge, uint32_t nsge, uint32_t off, const uint8_t *src, uint32_t len)
{
	for (uint32_t i = 0; i < nsge && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		uint32_t n = sge[i].length - off < len ? sge[i].length - off : len;
		memcpy(sge[i].addr + off, src, n);
		src += n;
		len -= n;
		off = 0;
	}
}

static bool is_atomic(enum efi_wr_opcode op)
{
	return op == EFI_WR_ATOMIC_CMP_AND_SWP || op == EFI_WR_ATOMIC_FETCH_AND_ADD;
}

#define SEND_FLAGS (EFI_SEND_FENCE | EFI_SEND_SIGNALED | EFI_SEND_SOLICITED | EFI_SEND_INLINE)

/* Checks one WR against the QP (ctx->lock held).  Returns 0 or EINVAL; sets
 * *total to the message length. */
static int check_send_wr(struct efi_qp_int *qp, const struct efi_send_wr *wr, uint64_t *total)
{
	uint64_t len = 0;

	if ((unsigned)wr->opcode > EFI_WR_ATOMIC_FETCH_AND_ADD || (wr->send_flags & ~SEND_FLAGS) ||
	    wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->attr.cap.max_send_sge ||
	    (wr->num_sge > 0 && !wr->sg_list))
		return EINVAL;
	for (int i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > EFI_MAX_MSG_SIZE)
		return EINVAL;
	if ((wr->send_flags & EFI_SEND_INLINE) &&
	    (len > qp->attr.cap.max_inline_data || wr->opcode == EFI_WR_RDMA_READ || is_atomic(wr->opcode)))
		return EINVAL;
	if (is_atomic(wr->opcode) &&
	    ((wr->wr.atomic.remote_addr & 7) || wr->num_sge != 1 || wr->sg_list[0].length != 8))
		return EINVAL;
	if (qp->seg && efi_pkt_count(len, qp->seg) == 0)
		return EINVAL;
	*total = len;
	return 0;
}

/* Takes ctx->lock; runs the QP's transmit path before returning. */
int efi_post_send(struct efi_qp *pub, struct efi_send_wr *wr, struct efi_send_wr **bad_wr)
{
	struct efi_qp_int *qp = qp_of(pub);
	struct efi_context_int *ctx;
	int err = 0;

	if (!qp || !bad_wr) {
		if (bad_wr)
			*bad_wr = wr;
		return EINVAL;
	}
	ctx = qp->ctx;
	/* No app_active_ns stamp here: posting does not receive, so a thread
	 * that only posts must not keep the progress thread away. */
	bool ud = qp->pub.qp_type == EFI_QPT_UD;
	struct efi_ud_batch ub;	/* UD: datagrams built, sent at the end */

	ub.n = ub.npkt = 0;
	pthread_mutex_lock(&ctx->lock);
	for (; wr; wr = wr->next) {
		enum efi_qp_state st = qp->attr.qp_state;
		uint64_t total;
		struct efi_swqe *w;

		if (st == EFI_QPS_RESET || st == EFI_QPS_INIT || st == EFI_QPS_RTR) {
			err = EINVAL;
			break;
		}
		if ((err = ud ? efi_ud_check(qp, wr, &total) : check_send_wr(qp, wr, &total)))
			break;
		if (st == EFI_QPS_ERR) {
			struct efi_wc wc = { .wr_id = wr->wr_id, .status = EFI_WC_WR_FLUSH_ERR,
					     .qp_num = qp->pub.qp_num };
			efi_cq_push((struct efi_cq_int *)qp->pub.send_cq, &wc, false);
			continue;
		}
		if (ud) {
			if ((err = efi_ud_add(qp, &ub, wr, (uint32_t)total)))
				break;
			continue;
		}
		if (((qp->sq_tail + 1) & qp->sq_mask) == qp->sq_head) {
			err = ENOMEM;
			break;
		}
		w = &qp->sq[qp->sq_tail];
		w->wr_id = wr->wr_id;
		w->opcode = wr->opcode;
		w->send_flags = wr->send_flags;
		w->signaled = qp->init.sq_sig_all || (wr->send_flags & EFI_SEND_SIGNALED);
		w->imm_be = wr->imm_data;
		w->length = (uint32_t)total;
		w->local_error = false;
		w->rnr_tries = 0;
		w->read_done = 0;
		w->is_inline = wr->send_flags & EFI_SEND_INLINE;
		if (is_atomic(wr->opcode)) {
			w->remote_addr = wr->wr.atomic.remote_addr;
			w->rkey = wr->wr.atomic.rkey;
			w->compare_add = wr->wr.atomic.compare_add;
			w->swap = wr->wr.atomic.swap;
		} else {
			w->remote_addr = wr->wr.rdma.remote_addr;
			w->rkey = wr->wr.rdma.rkey;
		}
		if (w->is_inline) {
			uint32_t off = 0;
			for (int i = 0; i < wr->num_sge; i++) {
				/* an empty SGE may have no address (UCX's
				 * am_short): memcpy with NULL is undefined */
				if (wr->sg_list[i].length)
					memcpy(w->inline_buf + off, (const void *)(uintptr_t)wr->sg_list[i].addr,
					       wr->sg_list[i].length);
				off += wr->sg_list[i].length;
			}
			w->num_sge = 1;
			w->sge[0].addr = w->inline_buf;
			w->sge[0].length = off;
		} else {
			int need = (wr->opcode == EFI_WR_RDMA_READ || is_atomic(wr->opcode))
				   ? EFI_ACCESS_LOCAL_WRITE : 0;
			w->num_sge = (uint32_t)wr->num_sge;
			for (int i = 0; i < wr->num_sge; i++) {
				const struct efi_sge *s = &wr->sg_list[i];
				if (!efi_mr_check(ctx, s->lkey, qp->pub.pd, s->addr, s->length, need)) {
					w->local_error = true;
					w->status = EFI_WC_LOC_PROT_ERR;
				}
				w->sge[i].addr = (uint8_t *)(uintptr_t)s->addr;
				w->sge[i].length = s->length;
			}
		}
		qp->sq_tail = (qp->sq_tail + 1) & qp->sq_mask;
	}
	if (err)
		*bad_wr = wr;
	if (ud)
		efi_ud_flush(qp, &ub);
	else
		efi_xport_flush_qp(ctx, qp);
	pthread_mutex_unlock(&ctx->lock);
	return err;
}

/* Takes ctx->lock. */
int efi_post_recv(struct efi_qp *pub, struct efi_recv_wr *wr, struct efi_recv_wr **bad_wr)
{
	struct efi_qp_int *qp = qp_of(pub);
	struct efi_context_int *ctx;
	int err = 0;

	if (!qp || !bad_wr) {
		if (bad_wr)
			*bad_wr = wr;
		return EINVAL;
	}
	ctx = qp->ctx;
	pthread_mutex_lock(&ctx->lock);
	for (; wr; wr = wr->next) {
		struct efi_rwqe *r;
		uint64_t len = 0;

		if (qp->attr.qp_state == EFI_QPS_RESET || wr->num_sge < 0 ||
		    (uint32_t)wr->num_sge > qp->attr.cap.max_recv_sge || (wr->num_sge && !wr->sg_list)) {
			err = EINVAL;
			break;
		}
		if (qp->attr.qp_state == EFI_QPS_ERR) {
			struct efi_wc wc = { .wr_id = wr->wr_id, .status = EFI_WC_WR_FLUSH_ERR,
					     .opcode = EFI_WC_RECV, .qp_num = qp->pub.qp_num };
			efi_cq_push((struct efi_cq_int *)qp->pub.recv_cq, &wc, false);
			continue;
		}
		if (((qp->rq_tail + 1) & qp->rq_mask) == qp->rq_head) {
			err = ENOMEM;
			break;
		}
		r = &qp->rq[qp->rq_tail];
		r->wr_id = wr->wr_id;
		r->num_sge = (uint32_t)wr->num_sge;
		r->bad = false;
		for (int i = 0; i < wr->num_sge; i++) {
			const struct efi_sge *s = &wr->sg_list[i];
			if (!efi_mr_check(ctx, s->lkey, qp->pub.pd, s->addr, s->length, EFI_ACCESS_LOCAL_WRITE))
				r->bad = true;
			r->sge[i].addr = (uint8_t *)(uintptr_t)s->addr;
			r->sge[i].length = s->length;
			len += s->length;
		}
		r->length = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
		qp->rq_tail = (qp->rq_tail + 1) & qp->rq_mask;
	}
	if (err)
		*bad_wr = wr;
	pthread_mutex_unlock(&ctx->lock);
	return err;
}
