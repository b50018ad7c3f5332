/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues and send-only/receive-only QPs (issue 16), in one
 * process over the in-memory wire (tests/unit/efi_testutil.c): several QPs
 * sharing one SRQ under 5% loss with every byte checked, the SRQ limit event,
 * RNR when the SRQ is empty, resizing, argument checks.
 */
#include <check.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "efi_testutil.h"
#include "libefi/efi_int.h"

static struct efi_mr *reg(struct efi_pd *pd, void *buf, size_t len)
{
	return treg(pd, buf, len, EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_WRITE | EFI_ACCESS_REMOTE_READ);
}

static int post_srq1(struct efi_srq *srq, uint64_t id, void *buf, uint32_t len, struct efi_mr *mr)
{
	struct efi_sge sge = { (uintptr_t)buf, len, mr->lkey };
	struct efi_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return efi_post_srq_recv(srq, &wr, &bad);
}

static struct efi_qp *make_qp(struct tpair *t, int side, uint32_t send_wr, uint32_t recv_wr,
			      struct efi_srq *srq)
{
	struct efi_qp_init_attr ia;
	struct efi_qp *qp;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = t->cq[side];
	ia.cap.max_send_wr = send_wr;
	ia.cap.max_recv_wr = recv_wr;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.qp_type = EFI_QPT_RC;
	ia.srq = srq;
	qp = efi_create_qp(t->pd[side], &ia);
	ck_assert_ptr_nonnull(qp);
	ck_assert_uint_eq(ia.cap.max_send_wr, send_wr);
	ck_assert_uint_eq(ia.cap.max_recv_wr, srq ? 0 : recv_wr);
	ck_assert_ptr_eq(qp->srq, srq);
	return qp;
}

/* Connects a (side 0) and b (side 1) to each other. */
static void join(struct tpair *t, struct efi_qp *a, struct efi_qp *b, uint8_t rnr_retry)
{
	union efi_gid g[2];
	struct efi_port_attr pa;

	ck_assert_int_eq(efi_query_gid(t->ctx[0], 1, 0, &g[0]), 0);
	ck_assert_int_eq(efi_query_gid(t->ctx[1], 1, 0, &g[1]), 0);
	ck_assert_int_eq(efi_query_port(t->ctx[0], 1, &pa), 0);
	ck_assert_int_eq(tqp_to_rts(a, b->qp_num, &g[1], 100, 200, rnr_retry, 1, 14, 7, pa.active_mtu), 0);
	ck_assert_int_eq(tqp_to_rts(b, a->qp_num, &g[0], 200, 100, rnr_retry, 1, 14, 7, pa.active_mtu), 0);
}

/* A QP with max_recv_wr 0 sends, one with max_send_wr 0 receives; posting
 * to the queue a QP lacks fails with ENOMEM and nothing else breaks. */
START_TEST(test_send_only_recv_only)
{
	struct tpair t;
	static uint8_t src[5000], dst[5000];
	struct efi_recv_wr rwr = { .wr_id = 9 }, *rbad;
	struct efi_qp *a, *b;
	struct efi_wc wc;

	tpair_open(&t, 1500, NULL);
	a = make_qp(&t, 0, 8, 0, NULL);
	b = make_qp(&t, 1, 0, 8, NULL);
	join(&t, a, b, 7);
	struct efi_mr *ms = reg(t.pd[0], src, sizeof(src)), *md = reg(t.pd[1], dst, sizeof(dst));
	for (unsigned i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 1);

	ck_assert_int_eq(efi_post_recv(a, &rwr, &rbad), ENOMEM);
	ck_assert_ptr_eq(rbad, &rwr);
	ck_assert_int_eq(tpost_send1(b, EFI_WR_SEND, 1, dst, 8, md, 0, 0), ENOMEM);

	struct efi_sge sge = { (uintptr_t)dst, sizeof(dst), md->lkey };
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	ck_assert_int_eq(efi_post_recv(b, &rwr, &rbad), 0);
	ck_assert_int_eq(tpost_send1(a, EFI_WR_SEND, 1, src, sizeof(src), ms, 0, 0), 0);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 1, NULL);
	texpect_wc(t.cq[1], EFI_WC_SUCCESS, 9, &wc);
	ck_assert_uint_eq(wc.byte_len, sizeof(src));
	ck_assert(memcmp(src, dst, sizeof(src)) == 0);
	memset(dst, 0, sizeof(dst));
	ck_assert_int_eq(tpost_send1(a, EFI_WR_RDMA_WRITE, 2, src, sizeof(src), ms, (uintptr_t)dst, md->rkey), 0);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 2, NULL);
	ck_assert(memcmp(src, dst, sizeof(src)) == 0);

	ck_assert_int_eq(efi_destroy_qp(a), 0);
	ck_assert_int_eq(efi_destroy_qp(b), 0);
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	tpair_close(&t);
}
END_TEST

#define NQP 4
#define MSGS 150
#define MAXLEN 5000u
#define NBUF 32

static uint32_t msg_len(unsigned qi, unsigned seq)
{
	return 8 + (seq * 7919u + qi * 131u) % (MAXLEN - 8);
}

static uint8_t msg_byte(unsigned qi, unsigned seq, uint32_t i)
{
	return (uint8_t)((qi + 1) * 31 + seq * 17 + i * 13 + (i >> 8));
}

static void fill_msg(uint8_t *p, unsigned qi, unsigned seq)
{
	uint32_t len = msg_len(qi, seq);

	memcpy(p, &qi, 4);
	memcpy(p + 4, &seq, 4);
	for (uint32_t i = 8; i < len; i++)
		p[i] = msg_byte(qi, seq, i);
}

/* NQP QPs of one context share one SRQ of NBUF receives, refilled as they
 * complete; NQP peers send MSGS messages each of 8 … 5000 bytes (up to four
 * packets) over a wire that loses 5% of the datagrams each way.  Every
 * message arrives once, in its QP's order, byte for byte. */
START_TEST(test_srq_shared_lossy)
{
	struct tw_fault f = { .loss = 0.05, .seed = 16 };
	struct efi_srq_init_attr sa = { .attr = { .max_wr = NBUF, .max_sge = 1 } };
	struct efi_qp *snd[NQP], *rcv[NQP];
	uint8_t *sbuf = malloc((size_t)NQP * 64 * MAXLEN), *rbuf = malloc((size_t)NBUF * MAXLEN);
	unsigned posted[NQP] = { 0 }, sent[NQP] = { 0 }, got[NQP] = { 0 }, total = 0;
	struct efi_mr *ms, *mr;
	struct efi_srq *srq;
	struct tpair t;
	uint64_t end;

	ck_assert_ptr_nonnull(sbuf);
	ck_assert_ptr_nonnull(rbuf);
	tpair_open(&t, 1500, &f);
	srq = efi_create_srq(t.pd[1], &sa);
	ck_assert_ptr_nonnull(srq);
	ck_assert_uint_eq(sa.attr.max_wr, NBUF);
	for (int i = 0; i < NQP; i++) {
		snd[i] = make_qp(&t, 0, 64, 0, NULL);
		rcv[i] = make_qp(&t, 1, 0, 0, srq);
		join(&t, snd[i], rcv[i], 7);
	}
	ms = reg(t.pd[0], sbuf, (size_t)NQP * 64 * MAXLEN);
	mr = reg(t.pd[1], rbuf, (size_t)NBUF * MAXLEN);
	for (unsigned b = 0; b < NBUF; b++)
		ck_assert_int_eq(post_srq1(srq, b, rbuf + (size_t)b * MAXLEN, MAXLEN, mr), 0);

	end = efi_now_ns() + 120ull * 1000000000;
	while (total < NQP * MSGS) {
		struct efi_wc wc[32];
		int n;

		ck_assert_msg(efi_now_ns() < end, "only %u of %u messages arrived", total, NQP * MSGS);
		for (unsigned qi = 0; qi < NQP; qi++) {
			/* 64 send slots per QP, one buffer each */
			while (posted[qi] < MSGS && posted[qi] - sent[qi] < 64) {
				uint8_t *p = sbuf + ((size_t)qi * 64 + posted[qi] % 64) * MAXLEN;

				fill_msg(p, qi, posted[qi]);
				ck_assert_int_eq(tpost_send1(snd[qi], EFI_WR_SEND, posted[qi], p,
							    msg_len(qi, posted[qi]), ms, 0, 0), 0);
				posted[qi]++;
			}
		}
		n = efi_poll_cq(t.cq[0], 32, wc);
		for (int i = 0; i < n; i++) {
			unsigned qi = 0;

			ck_assert_msg(wc[i].status == EFI_WC_SUCCESS, "send: %s", efi_wc_status_str(wc[i].status));
			while (qi < NQP && snd[qi]->qp_num != wc[i].qp_num)
				qi++;
			ck_assert_uint_lt(qi, NQP);
			ck_assert_uint_eq(wc[i].wr_id, sent[qi]);
			sent[qi]++;
		}
		n = efi_poll_cq(t.cq[1], 32, wc);
		for (int i = 0; i < n; i++) {
			unsigned qi = 0, hq, hs;
			uint8_t *p;

			ck_assert_msg(wc[i].status == EFI_WC_SUCCESS, "recv: %s", efi_wc_status_str(wc[i].status));
			ck_assert_int_eq(wc[i].opcode, EFI_WC_RECV);
			ck_assert_uint_lt(wc[i].wr_id, NBUF);
			while (qi < NQP && rcv[qi]->qp_num != wc[i].qp_num)
				qi++;
			ck_assert_uint_lt(qi, NQP);
			ck_assert_uint_eq(wc[i].src_qp, snd[qi]->qp_num);
			p = rbuf + wc[i].wr_id * MAXLEN;
			memcpy(&hq, p, 4);
			memcpy(&hs, p + 4, 4);
			ck_assert_uint_eq(hq, qi);
			ck_assert_uint_eq(hs, got[qi]);
			ck_assert_uint_eq(wc[i].byte_len, msg_len(qi, hs));
			for (uint32_t k = 8; k < wc[i].byte_len; k++)
				ck_assert_msg(p[k] == msg_byte(qi, hs, k), "QP %u message %u byte %u", qi, hs, k);
			got[qi]++;
			total++;
			memset(p, 0, MAXLEN);
			ck_assert_int_eq(post_srq1(srq, wc[i].wr_id, p, MAXLEN, mr), 0);
		}
	}
	for (unsigned qi = 0; qi < NQP; qi++) {
		struct efi_wc wc;

		while (sent[qi] < MSGS) {
			ck_assert_int_eq(tpoll(t.cq[0], &wc, 1, 20000), 1);
			ck_assert_int_eq(wc.status, EFI_WC_SUCCESS);
			for (unsigned k = 0; k < NQP; k++)
				if (snd[k]->qp_num == wc.qp_num)
					sent[k]++;
		}
	}
	{
		/* the loss was real: the senders had to send again */
		struct efi_counters c;
		uint64_t retx = 0;

		for (int i = 0; i < NQP; i++) {
			ck_assert_int_eq(efi_query_qp_counters(snd[i], &c), 0);
			retx += c.retransmissions;
		}
		ck_assert_uint_gt(retx, 0);
	}
	ck_assert_int_eq(efi_destroy_srq(srq), EBUSY);
	for (int i = 0; i < NQP; i++) {
		ck_assert_int_eq(efi_destroy_qp(snd[i]), 0);
		ck_assert_int_eq(efi_destroy_qp(rcv[i]), 0);
	}
	ck_assert_int_eq(efi_destroy_srq(srq), 0);
	ck_assert_int_eq(efi_destroy_srq(NULL), 0);
	efi_dereg_mr(ms);
	efi_dereg_mr(mr);
	tpair_close(&t);
	free(sbuf);
	free(rbuf);
}
END_TEST

static atomic_int limit_events;
static void *limit_ctx_seen;

static void on_limit(struct efi_srq *srq, void *srq_context)
{
	(void)srq;
	limit_ctx_seen = srq_context;
	atomic_fetch_add(&limit_events, 1);
}

/* The limit event fires once when fewer WRs than srq_limit remain, and
 * disarms the SRQ; resizing keeps what is posted, in order; bad arguments. */
START_TEST(test_srq_limit_resize)
{
	struct efi_srq_init_attr sa = { .srq_context = &limit_events,
					.attr = { .max_wr = 10, .max_sge = 2 }, .limit_event = on_limit };
	static uint8_t src[64], dst[64][64];
	struct efi_srq_attr q;
	struct efi_qp *a, *b;
	struct efi_srq *srq;
	struct efi_wc wc;
	struct tpair t;
	unsigned id = 0, next = 0;

	tpair_open(&t, 1500, NULL);
	srq = efi_create_srq(t.pd[1], &sa);
	ck_assert_ptr_nonnull(srq);
	ck_assert_uint_eq(sa.attr.max_wr, 16);
	ck_assert_uint_eq(sa.attr.max_sge, 2);
	a = make_qp(&t, 0, 16, 0, NULL);
	b = make_qp(&t, 1, 0, 0, srq);
	join(&t, a, b, 7);
	struct efi_mr *ms = reg(t.pd[0], src, sizeof(src)), *md = reg(t.pd[1], dst, sizeof(dst));

	/* arguments */
	q.max_wr = 8;
	q.srq_limit = 17;
	ck_assert_int_eq(efi_modify_srq(srq, &q, EFI_SRQ_LIMIT), EINVAL);
	ck_assert_int_eq(efi_modify_srq(srq, &q, 1 << 5), EINVAL);
	ck_assert_int_eq(efi_modify_srq(NULL, &q, EFI_SRQ_LIMIT), EINVAL);
	{
		struct efi_sge sg[3] = { { (uintptr_t)dst, 1, md->lkey }, { (uintptr_t)dst, 1, md->lkey },
					 { (uintptr_t)dst, 1, md->lkey } };
		struct efi_recv_wr w = { .wr_id = 1, .sg_list = sg, .num_sge = 3 }, *bad;

		ck_assert_int_eq(efi_post_srq_recv(srq, &w, &bad), EINVAL);
		ck_assert_ptr_eq(bad, &w);
	}
	{
		struct efi_srq_init_attr bad_attr = { .attr = { .max_wr = 0 } };

		errno = 0;
		ck_assert_ptr_null(efi_create_srq(t.pd[1], &bad_attr));
		ck_assert_int_eq(errno, EINVAL);
		bad_attr.attr.max_wr = 4;
		bad_attr.attr.srq_limit = 5;
		ck_assert_ptr_null(efi_create_srq(t.pd[1], &bad_attr));
	}
	/* a QP with an SRQ has no receive queue of its own */
	{
		struct efi_recv_wr w = { .wr_id = 1 }, *bad;

		ck_assert_int_ne(efi_post_recv(b, &w, &bad), 0);
	}

	for (; id < 8; id++)
		ck_assert_int_eq(post_srq1(srq, id, dst[id], 64, md), 0);
	q.srq_limit = 4;
	ck_assert_int_eq(efi_modify_srq(srq, &q, EFI_SRQ_LIMIT), 0);
	ck_assert_int_eq(efi_query_srq(srq, &q), 0);
	ck_assert_uint_eq(q.srq_limit, 4);
	ck_assert_uint_eq(q.max_wr, 16);
	/* 8 → 4 left: not below the limit yet */
	for (int i = 0; i < 4; i++, next++) {
		ck_assert_int_eq(tpost_send1(a, EFI_WR_SEND, next, src, 16, ms, 0, 0), 0);
		texpect_wc(t.cq[0], EFI_WC_SUCCESS, next, NULL);
		texpect_wc(t.cq[1], EFI_WC_SUCCESS, next, NULL);
	}
	ck_assert_int_eq(atomic_load(&limit_events), 0);
	/* 3 left: the event, once, and the SRQ disarmed */
	ck_assert_int_eq(tpost_send1(a, EFI_WR_SEND, next, src, 16, ms, 0, 0), 0);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, next, NULL);
	texpect_wc(t.cq[1], EFI_WC_SUCCESS, next, NULL);
	next++;
	ck_assert_int_eq(atomic_load(&limit_events), 1);
	ck_assert_ptr_eq(limit_ctx_seen, &limit_events);
	ck_assert_int_eq(efi_query_srq(srq, &q), 0);
	ck_assert_uint_eq(q.srq_limit, 0);
	ck_assert_int_eq(tpost_send1(a, EFI_WR_SEND, next, src, 16, ms, 0, 0), 0);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, next, NULL);
	texpect_wc(t.cq[1], EFI_WC_SUCCESS, next, NULL);
	next++;
	ck_assert_int_eq(atomic_load(&limit_events), 1);

	/* 2 posted: cannot shrink below them; grow to 64 keeps them in order */
	q.max_wr = 1;
	ck_assert_int_eq(efi_modify_srq(srq, &q, EFI_SRQ_MAX_WR), EINVAL);
	q.max_wr = 40;
	ck_assert_int_eq(efi_modify_srq(srq, &q, EFI_SRQ_MAX_WR), 0);
	ck_assert_int_eq(efi_query_srq(srq, &q), 0);
	ck_assert_uint_eq(q.max_wr, 64);
	/* 2 + 62 = max_wr: full */
	for (; id < 70; id++)
		ck_assert_int_eq(post_srq1(srq, id, dst[id % 64], 64, md), 0);
	ck_assert_int_eq(post_srq1(srq, id, dst[0], 64, md), ENOMEM);
	for (; next < 70; next++) {
		ck_assert_int_eq(tpost_send1(a, EFI_WR_SEND, next, src, 16, ms, 0, 0), 0);
		texpect_wc(t.cq[0], EFI_WC_SUCCESS, next, NULL);
		texpect_wc(t.cq[1], EFI_WC_SUCCESS, next, &wc);
		ck_assert_uint_eq(wc.qp_num, b->qp_num);
	}

	ck_assert_int_eq(efi_destroy_qp(a), 0);
	ck_assert_int_eq(efi_destroy_qp(b), 0);
	ck_assert_int_eq(efi_destroy_srq(srq), 0);
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	tpair_close(&t);
}
END_TEST

/* An empty SRQ answers with RNR NAKs: with rnr_retry 7 the Send waits until
 * a receive is posted to the SRQ, with rnr_retry 0 it fails with
 * RNR_RETRY_EXC_ERR.  A QP in ERR leaves the SRQ's WQEs to the others; a
 * Write with immediate takes one as a Send does. */
START_TEST(test_srq_rnr)
{
	struct efi_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	static uint8_t src[8000], dst[8000];
	struct efi_counters c;
	struct efi_qp *a, *b;
	struct efi_srq *srq;
	struct efi_wc wc;
	struct tpair t;

	for (unsigned i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 5 + 3);
	tpair_open(&t, 1500, NULL);
	srq = efi_create_srq(t.pd[1], &sa);
	ck_assert_ptr_nonnull(srq);
	a = make_qp(&t, 0, 8, 0, NULL);
	b = make_qp(&t, 1, 0, 0, srq);
	join(&t, a, b, 7);
	struct efi_mr *ms = reg(t.pd[0], src, sizeof(src)), *md = reg(t.pd[1], dst, sizeof(dst));

	ck_assert_int_eq(tpost_send1(a, EFI_WR_SEND, 1, src, sizeof(src), ms, 0, 0), 0);
	for (int i = 0; i < 5000; i++) {
		ck_assert_int_eq(tpoll(t.cq[0], &wc, 1, 1), 0);
		ck_assert_int_eq(efi_query_qp_counters(b, &c), 0);
		if (c.rnr_naks_sent >= 2)
			break;
	}
	ck_assert_uint_ge(c.rnr_naks_sent, 2);
	ck_assert_int_eq(post_srq1(srq, 7, dst, sizeof(dst), md), 0);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 1, NULL);
	texpect_wc(t.cq[1], EFI_WC_SUCCESS, 7, &wc);
	ck_assert_uint_eq(wc.byte_len, sizeof(src));
	ck_assert(memcmp(src, dst, sizeof(src)) == 0);
	ck_assert_int_eq(efi_destroy_qp(a), 0);
	ck_assert_int_eq(efi_destroy_qp(b), 0);

	/* rnr_retry 0: the first RNR NAK fails the Send */
	a = make_qp(&t, 0, 8, 0, NULL);
	b = make_qp(&t, 1, 0, 0, srq);
	join(&t, a, b, 0);
	ck_assert_int_eq(tpost_send1(a, EFI_WR_SEND, 2, src, 64, ms, 0, 0), 0);
	texpect_wc(t.cq[0], EFI_WC_RNR_RETRY_EXC_ERR, 2, NULL);

	/* a WQE left in the SRQ survives its QP going to ERR and destroyed */
	ck_assert_int_eq(post_srq1(srq, 8, dst, sizeof(dst), md), 0);
	{
		struct efi_qp_attr qa = { .qp_state = EFI_QPS_ERR };

		ck_assert_int_eq(efi_modify_qp(b, &qa, EFI_QP_STATE), 0);
		ck_assert_int_eq(tpoll(t.cq[1], &wc, 1, 50), 0);
	}
	ck_assert_int_eq(efi_destroy_qp(a), 0);
	ck_assert_int_eq(efi_destroy_qp(b), 0);
	a = make_qp(&t, 0, 8, 0, NULL);
	b = make_qp(&t, 1, 0, 0, srq);
	join(&t, a, b, 0);
	ck_assert_int_eq(tpost_send1(a, EFI_WR_SEND, 3, src, 100, ms, 0, 0), 0);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 3, NULL);
	texpect_wc(t.cq[1], EFI_WC_SUCCESS, 8, &wc);
	ck_assert_uint_eq(wc.byte_len, 100);
	/* a Write with immediate takes its receive from the SRQ too */
	ck_assert_int_eq(post_srq1(srq, 9, dst, 1, md), 0);
	memset(dst, 0, sizeof(dst));
	ck_assert_int_eq(tpost_send1(a, EFI_WR_RDMA_WRITE_WITH_IMM, 4, src, 6000, ms, (uintptr_t)dst, md->rkey), 0);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 4, NULL);
	texpect_wc(t.cq[1], EFI_WC_SUCCESS, 9, &wc);
	ck_assert_int_eq(wc.opcode, EFI_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(wc.byte_len, 6000);
	ck_assert(memcmp(src, dst, 6000) == 0);

	ck_assert_int_eq(efi_destroy_qp(a), 0);
	ck_assert_int_eq(efi_destroy_qp(b), 0);
	ck_assert_int_eq(efi_destroy_srq(srq), 0);
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	tpair_close(&t);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("efi_srq");
	TCase *tc = tcase_create("srq");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_send_only_recv_only);
	tcase_add_test(tc, test_srq_limit_resize);
	tcase_add_test(tc, test_srq_rnr);
	tcase_add_test(tc, test_srq_shared_lossy);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
