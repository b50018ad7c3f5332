/* SPDX-License-Identifier: MIT */
/*
 * The ibv_wr_* API (struct ibv_qp_ex) of QPs created with send_ops_flags:
 * ibv_wr_start, one ibv_wr_<opcode> + ibv_wr_set_sge/… per request,
 * ibv_wr_complete.  The requests are collected as ordinary send WRs and
 * posted as one list by wr_complete, so they take libefi's normal path.
 * perftest uses this API by default (unless --use_old_post_send).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_int.h"

static struct efiv_qp *qp_of(struct ibv_qp_ex *qpx)
{
	return (struct efiv_qp *)qpx;
}

/* The slot of the request being built (the last one started). */
static struct efiv_wr_slot *current(struct efiv_qp *qp)
{
	return qp->batch.count ? &qp->batch.slots[qp->batch.count - 1] : NULL;
}

static void fail(struct efiv_qp *qp, int err)
{
	if (!qp->batch.err)
		qp->batch.err = err;
}

/* Starts a new request with the QP's current wr_id and wr_flags. */
static struct ibv_send_wr *new_wr(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode)
{
	struct efiv_qp *qp = qp_of(qpx);
	struct efiv_wr_batch *b = &qp->batch;
	struct efiv_wr_slot *s;

	if (b->count == b->cap) {
		unsigned int cap = b->cap ? b->cap * 2 : 16;
		struct efiv_wr_slot *n = realloc(b->slots, cap * sizeof(*n));

		if (!n) {
			fail(qp, ENOMEM);
			return NULL;
		}
		memset(n + b->cap, 0, (cap - b->cap) * sizeof(*n));
		/* the list's next pointers are set at wr_complete, so moving
		 * the slots breaks nothing */
		b->slots = n;
		b->cap = cap;
	}
	s = &b->slots[b->count];
	if (!s->sges) {
		s->sges = calloc(qp->max_send_sge ? qp->max_send_sge : 1, sizeof(*s->sges));
		if (!s->sges) {
			fail(qp, ENOMEM);
			return NULL;
		}
	}
	b->count++;
	memset(&s->wr, 0, sizeof(s->wr));
	s->wr.wr_id = qpx->wr_id;
	s->wr.send_flags = qpx->wr_flags;
	s->wr.opcode = opcode;
	s->wr.sg_list = s->sges;
	return &s->wr;
}

static void wr_send(struct ibv_qp_ex *qpx)
{
	new_wr(qpx, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	struct ibv_send_wr *wr = new_wr(qpx, IBV_WR_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm;
}

static void rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
		 __be32 imm)
{
	struct ibv_send_wr *wr = new_wr(qpx, op);

	if (!wr)
		return;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = addr;
	wr->imm_data = imm;
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr)
{
	rdma(qpx, IBV_WR_RDMA_WRITE, rkey, addr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr, __be32 imm)
{
	rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr)
{
	rdma(qpx, IBV_WR_RDMA_READ, rkey, addr, 0);
}

static void atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
		   uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *wr = new_wr(qpx, op);

	if (!wr)
		return;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = addr;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr,
			      uint64_t compare, uint64_t swap)
{
	atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr, uint64_t add)
{
	atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge, const struct ibv_sge *sg_list)
{
	struct efiv_qp *qp = qp_of(qpx);
	struct efiv_wr_slot *s = current(qp);

	if (!s || num_sge > qp->max_send_sge) {
		fail(qp, EINVAL);
		return;
	}
	memcpy(s->sges, sg_list, num_sge * sizeof(*sg_list));
	s->wr.sg_list = s->sges;
	s->wr.num_sge = (int)num_sge;
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	wr_set_sge_list(qpx, 1, &sge);
}

/* Inline data is copied now, as verbs promises: the caller may reuse its
 * buffers as soon as the call returns. */
static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
				    const struct ibv_data_buf *buf_list)
{
	struct efiv_qp *qp = qp_of(qpx);
	struct efiv_wr_slot *s = current(qp);
	size_t total = 0;

	if (!s) {
		fail(qp, EINVAL);
		return;
	}
	for (size_t i = 0; i < num_buf; i++)
		total += buf_list[i].length;
	if (total > qp->max_inline) {
		fail(qp, EINVAL);
		return;
	}
	if (!s->inline_buf) {
		s->inline_buf = malloc(qp->max_inline ? qp->max_inline : 1);
		if (!s->inline_buf) {
			fail(qp, ENOMEM);
			return;
		}
	}
	total = 0;
	for (size_t i = 0; i < num_buf; i++) {
		memcpy(s->inline_buf + total, buf_list[i].addr, buf_list[i].length);
		total += buf_list[i].length;
	}
	s->sges[0].addr = (uintptr_t)s->inline_buf;
	s->sges[0].length = (uint32_t)total;
	s->sges[0].lkey = 0;
	s->wr.sg_list = s->sges;
	s->wr.num_sge = 1;
	s->wr.send_flags |= IBV_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	wr_set_inline_data_list(qpx, 1, &b);
}

static void wr_start(struct ibv_qp_ex *qpx)
{
	qp_of(qpx)->batch.count = 0;
	qp_of(qpx)->batch.err = 0;
}

static int wr_complete(struct ibv_qp_ex *qpx)
{
	struct efiv_qp *qp = qp_of(qpx);
	struct efiv_wr_batch *b = &qp->batch;
	struct ibv_send_wr *bad = NULL;
	int err = b->err;

	if (!err && b->count) {
		for (unsigned int i = 0; i < b->count; i++)
			b->slots[i].wr.next = i + 1 < b->count ? &b->slots[i + 1].wr : NULL;
		err = efiv_post_send(&qp->ibqp, &b->slots[0].wr, &bad);
	}
	b->count = 0;
	b->err = 0;
	return err;
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
	qp_of(qpx)->batch.count = 0;
	qp_of(qpx)->batch.err = 0;
}

/* Operations EFI has no counterpart for: the batch fails at wr_complete. */
static void wr_unsupported_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	(void)rkey;
	fail(qp_of(qpx), EOPNOTSUPP);
}

static void wr_unsupported_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	(void)rkey;
	fail(qp_of(qpx), EOPNOTSUPP);
}

static void wr_unsupported_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
				   const struct ibv_mw_bind_info *info)
{
	(void)mw;
	(void)rkey;
	(void)info;
	fail(qp_of(qpx), EOPNOTSUPP);
}

static void wr_unsupported_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr;
	(void)hdr_sz;
	(void)mss;
	fail(qp_of(qpx), EOPNOTSUPP);
}

static void wr_unsupported_ud(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	(void)ah;
	(void)qpn;
	(void)qkey;
	fail(qp_of(qpx), EOPNOTSUPP);
}

static void wr_unsupported_xrc(struct ibv_qp_ex *qpx, uint32_t srqn)
{
	(void)srqn;
	fail(qp_of(qpx), EOPNOTSUPP);
}

static void wr_unsupported_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr,
					const void *wr)
{
	(void)rkey;
	(void)addr;
	(void)wr;
	fail(qp_of(qpx), EOPNOTSUPP);
}

void efiv_qp_ex_init(struct efiv_qp *qp)
{
	struct ibv_qp_ex *x = &qp->qpx;

	x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	x->wr_bind_mw = wr_unsupported_bind_mw;
	x->wr_local_inv = wr_unsupported_local_inv;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_send_inv = wr_unsupported_send_inv;
	x->wr_send_tso = wr_unsupported_tso;
	x->wr_set_ud_addr = wr_unsupported_ud;
	x->wr_set_xrc_srqn = wr_unsupported_xrc;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	x->wr_atomic_write = wr_unsupported_atomic_write;
}

void efiv_qp_ex_fini(struct efiv_qp *qp)
{
	for (unsigned int i = 0; i < qp->batch.cap; i++) {
		free(qp->batch.slots[i].sges);
		free(qp->batch.slots[i].inline_buf);
	}
	free(qp->batch.slots);
}
