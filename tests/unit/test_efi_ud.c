/* SPDX-License-Identifier: MIT */
/*
 * Unreliable datagram QPs and address handles (issue 16; efi.h "Unreliable
 * datagram"): the UD state machine, address handles, datagrams of every size
 * up to the port's MTU both ways with their GRH, immediate data and inline,
 * what is refused at post time, and what a receiver drops (wrong Q_Key, no
 * receive posted, RC traffic for a UD QP and the reverse) without failing
 * the QP; a receive too small completes with LOC_LEN_ERR and the QP goes on;
 * UD QPs sharing an SRQ.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "efi_testutil.h"
#include "libefi/efi_int.h"

#define QKEY 0x1ee7a330u

static const struct efi_qp_cap cap = {
	.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4, .max_recv_sge = 4,
	.max_inline_data = 256,
};

static struct efi_qp *ud_qp(struct efi_pd *pd, struct efi_cq *cq, struct efi_srq *srq)
{
	struct efi_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .srq = srq, .cap = cap,
				       .qp_type = EFI_QPT_UD };
	struct efi_qp *qp = efi_create_qp(pd, &ia);
	ck_assert_ptr_nonnull(qp);
	ck_assert_int_eq(qp->qp_type, EFI_QPT_UD);
	return qp;
}

static void ud_to_rts(struct efi_qp *qp, uint32_t qkey)
{
	struct efi_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = EFI_QPS_INIT;
	a.qkey = qkey;
	a.port_num = 1;
	ck_assert_int_eq(efi_modify_qp(qp, &a, EFI_QP_STATE | EFI_QP_QKEY | EFI_QP_PORT | EFI_QP_PKEY_INDEX), 0);
	a.qp_state = EFI_QPS_RTR;
	ck_assert_int_eq(efi_modify_qp(qp, &a, EFI_QP_STATE), 0);
	a.qp_state = EFI_QPS_RTS;
	a.sq_psn = 0x123;
	ck_assert_int_eq(efi_modify_qp(qp, &a, EFI_QP_STATE | EFI_QP_SQ_PSN), 0);
}

static struct efi_ah *ah_to(struct efi_pd *pd, uint8_t last_octet)
{
	struct efi_ah_attr at;

	memset(&at, 0, sizeof(at));
	at.is_global = 1;
	at.port_num = 1;
	tgid_v4(&at.grh.dgid, 10, 0, 0, last_octet);
	struct efi_ah *ah = efi_create_ah(pd, &at);
	ck_assert_ptr_nonnull(ah);
	return ah;
}

static struct efi_mr *reg(struct efi_pd *pd, void *buf, size_t len)
{
	return treg(pd, buf, len, EFI_ACCESS_LOCAL_WRITE);
}

static int send_ud(struct efi_qp *qp, struct efi_ah *ah, uint32_t dqpn, uint32_t qkey, uint64_t id,
		   void *buf, uint32_t len, struct efi_mr *mr, enum efi_wr_opcode op, unsigned flags)
{
	struct efi_sge sge = { (uintptr_t)buf, len, mr ? mr->lkey : 0 };
	struct efi_send_wr wr, *bad = NULL;
	int r;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = flags | EFI_SEND_SIGNALED;
	wr.imm_data = htonl(0xfeed0000u + (uint32_t)id);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = dqpn;
	wr.wr.ud.remote_qkey = qkey;
	r = efi_post_send(qp, &wr, &bad);
	if (r)
		ck_assert_ptr_eq(bad, &wr);
	return r;
}

static uint64_t drops(struct efi_qp *qp, enum efi_drop_reason r)
{
	struct efi_counters c;
	ck_assert_int_eq(efi_query_qp_counters(qp, &c), 0);
	return c.drop_reasons[r];
}

/* Waits until qp has dropped more than before for reason r. */
static void expect_drop(struct tpair *t, struct efi_qp *qp, enum efi_drop_reason r, uint64_t before)
{
	struct efi_wc wc;
	for (int i = 0; i < 500 && drops(qp, r) == before; i++)
		ck_assert_int_eq(tpoll(t->cq[1], &wc, 1, 2), 0);
	ck_assert_uint_eq(drops(qp, r), before + 1);
}

START_TEST(test_ud_state_machine)
{
	struct tpair t;
	struct efi_qp_attr a;
	struct efi_qp_init_attr ia;

	tpair_open(&t, 1500, NULL);
	struct efi_qp *qp = ud_qp(t.pd[0], t.cq[0], NULL);
	memset(&a, 0, sizeof(a));
	a.qp_state = EFI_QPS_INIT;
	a.qkey = 7;
	/* RESET → INIT needs the Q_Key, takes no access flags */
	ck_assert_int_eq(efi_modify_qp(qp, &a, EFI_QP_STATE), EINVAL);
	ck_assert_int_eq(efi_modify_qp(qp, &a, EFI_QP_STATE | EFI_QP_QKEY | EFI_QP_ACCESS_FLAGS), EINVAL);
	ck_assert_int_eq(efi_modify_qp(qp, &a, EFI_QP_STATE | EFI_QP_QKEY), 0);
	/* no peer to name at RTR */
	a.qp_state = EFI_QPS_RTR;
	ck_assert_int_eq(efi_modify_qp(qp, &a, EFI_QP_STATE | EFI_QP_DEST_QPN), EINVAL);
	ck_assert_int_eq(efi_modify_qp(qp, &a, EFI_QP_STATE | EFI_QP_AV), EINVAL);
	ck_assert_int_eq(efi_modify_qp(qp, &a, EFI_QP_STATE), 0);
	/* RTR → RTS needs the send PSN, nothing of RC's */
	a.qp_state = EFI_QPS_RTS;
	ck_assert_int_eq(efi_modify_qp(qp, &a, EFI_QP_STATE), EINVAL);
	ck_assert_int_eq(efi_modify_qp(qp, &a, EFI_QP_STATE | EFI_QP_SQ_PSN | EFI_QP_TIMEOUT), EINVAL);
	ck_assert_int_eq(efi_modify_qp(qp, &a, EFI_QP_STATE | EFI_QP_SQ_PSN), 0);
	a.qkey = 9;
	ck_assert_int_eq(efi_modify_qp(qp, &a, EFI_QP_QKEY), 0);
	ck_assert_int_eq(efi_query_qp(qp, &a, 0, &ia), 0);
	ck_assert_int_eq(a.qp_state, EFI_QPS_RTS);
	ck_assert_uint_eq(a.qkey, 9);
	ck_assert_int_eq(ia.qp_type, EFI_QPT_UD);
	/* an RC QP does not take a Q_Key */
	struct efi_qp_init_attr rc = { .send_cq = t.cq[0], .recv_cq = t.cq[0], .cap = cap, .qp_type = EFI_QPT_RC };
	struct efi_qp *rqp = efi_create_qp(t.pd[0], &rc);
	ck_assert_ptr_nonnull(rqp);
	a.qp_state = EFI_QPS_INIT;
	a.qp_access_flags = 0;
	ck_assert_int_eq(efi_modify_qp(rqp, &a, EFI_QP_STATE | EFI_QP_ACCESS_FLAGS | EFI_QP_QKEY), EINVAL);
	/* no other type */
	rc.qp_type = (enum efi_qp_type)3;
	errno = 0;
	ck_assert_ptr_null(efi_create_qp(t.pd[0], &rc));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(efi_destroy_qp(rqp), 0);
	ck_assert_int_eq(efi_destroy_qp(qp), 0);
	tpair_close(&t);
}
END_TEST

START_TEST(test_ah)
{
	struct tpair t;
	struct efi_ah_attr at;

	tpair_open(&t, 1500, NULL);
	memset(&at, 0, sizeof(at));
	tgid_v4(&at.grh.dgid, 10, 0, 0, 2);
	errno = 0;
	ck_assert_ptr_null(efi_create_ah(t.pd[0], &at));	/* is_global 0 */
	ck_assert_int_eq(errno, EINVAL);
	at.is_global = 1;
	at.grh.sgid_index = 1;					/* one GID only */
	ck_assert_ptr_null(efi_create_ah(t.pd[0], &at));
	at.grh.sgid_index = 0;
	inet_pton(AF_INET6, "fd77::2", at.grh.dgid.raw);	/* IPv6 from an IPv4 GID */
	ck_assert_ptr_null(efi_create_ah(t.pd[0], &at));
	ck_assert_ptr_null(efi_create_ah(NULL, &at));
	ck_assert_ptr_null(efi_create_ah(t.pd[0], NULL));
	struct efi_ah *ah = ah_to(t.pd[0], 2);
	ck_assert_ptr_eq(ah->pd, t.pd[0]);
	ck_assert_ptr_eq(ah->context, t.ctx[0]);
	/* the AH holds its PD */
	ck_assert_int_eq(efi_dealloc_pd(t.pd[0]), EBUSY);
	ck_assert_int_eq(efi_destroy_ah(ah), 0);
	ck_assert_int_eq(efi_destroy_ah(NULL), 0);
	tpair_close(&t);
}
END_TEST

/* Datagrams of every size to the MTU, both ways, with their GRH. */
START_TEST(test_ud_datagrams)
{
	struct tpair t;
	struct efi_port_attr pa;
	uint8_t *src = malloc(8192), *dst = malloc(8192);

	tpair_open(&t, 1500, NULL);
	ck_assert_int_eq(efi_query_port(t.ctx[0], 1, &pa), 0);
	uint32_t mtu = (uint32_t)efi_mtu_to_num(pa.active_mtu);
	struct efi_qp *q[2] = { ud_qp(t.pd[0], t.cq[0], NULL), ud_qp(t.pd[1], t.cq[1], NULL) };
	struct efi_ah *ah[2] = { ah_to(t.pd[0], 2), ah_to(t.pd[1], 1) };
	struct efi_mr *ms[2] = { reg(t.pd[0], src, 8192), reg(t.pd[1], src, 8192) };
	struct efi_mr *md[2] = { reg(t.pd[0], dst, 8192), reg(t.pd[1], dst, 8192) };
	const uint32_t sizes[] = { 0, 1, 8, 100, 1000, mtu };

	ud_to_rts(q[0], QKEY);
	ud_to_rts(q[1], QKEY);
	for (uint32_t i = 0; i < 8192; i++)
		src[i] = (uint8_t)(i * 13 + 5);
	for (unsigned k = 0; k < 2 * sizeof(sizes) / sizeof(sizes[0]); k++) {
		int from = k & 1, to = !from;
		uint32_t n = sizes[k / 2];
		enum efi_wr_opcode op = k % 3 ? EFI_WR_SEND : EFI_WR_SEND_WITH_IMM;
		unsigned flags = n <= cap.max_inline_data && k % 4 == 0 ? EFI_SEND_INLINE : 0;
		struct efi_wc wc;

		memset(dst, 0xee, 8192);
		tpost_recv1(q[to], 100 + k, dst, EFI_GRH_LEN + mtu, md[to]);
		ck_assert_int_eq(send_ud(q[from], ah[from], q[to]->qp_num, QKEY, k, src, n, ms[from], op, flags), 0);
		texpect_wc(t.cq[from], EFI_WC_SUCCESS, k, &wc);
		ck_assert_int_eq(wc.opcode, EFI_WC_SEND);
		texpect_wc(t.cq[to], EFI_WC_SUCCESS, 100 + k, &wc);
		ck_assert_int_eq(wc.opcode, EFI_WC_RECV);
		ck_assert_uint_eq(wc.byte_len, EFI_GRH_LEN + n);
		ck_assert_uint_eq(wc.src_qp, q[from]->qp_num);
		ck_assert_uint_eq(wc.qp_num, q[to]->qp_num);
		ck_assert(wc.wc_flags & EFI_WC_GRH);
		if (op == EFI_WR_SEND_WITH_IMM) {
			ck_assert(wc.wc_flags & EFI_WC_WITH_IMM);
			ck_assert_uint_eq(ntohl(wc.imm_data), 0xfeed0000u + k);
		} else {
			ck_assert(!(wc.wc_flags & EFI_WC_WITH_IMM));
		}
		/* the GRH: version 6, the sender's GID as sgid and ours as
		 * dgid, whole (IPv4-mapped), where struct ibv_grh has them */
		ck_assert_uint_eq(dst[0] >> 4, 6);
		ck_assert_uint_eq(dst[6], 17);
		union efi_gid g_from, g_to;
		tgid_v4(&g_from, 10, 0, 0, (uint8_t)(from + 1));
		tgid_v4(&g_to, 10, 0, 0, (uint8_t)(to + 1));
		ck_assert_mem_eq(dst + 8, g_from.raw, 16);
		ck_assert_mem_eq(dst + 24, g_to.raw, 16);
		if (n)
			ck_assert_mem_eq(dst + EFI_GRH_LEN, src, n);
		ck_assert_uint_eq(dst[EFI_GRH_LEN + n], 0xee);	/* nothing past the message */
	}
	/* more than the MTU, another opcode, a foreign AH, no AH, a bad QPN:
	 * refused at post time, nothing leaves */
	ck_assert_int_eq(send_ud(q[0], ah[0], q[1]->qp_num, QKEY, 1, src, mtu + 1, ms[0], EFI_WR_SEND, 0), EINVAL);
	ck_assert_int_eq(send_ud(q[0], ah[0], q[1]->qp_num, QKEY, 1, src, 8, ms[0], EFI_WR_RDMA_WRITE, 0), EINVAL);
	ck_assert_int_eq(send_ud(q[0], ah[1], q[1]->qp_num, QKEY, 1, src, 8, ms[0], EFI_WR_SEND, 0), EINVAL);
	ck_assert_int_eq(send_ud(q[0], NULL, q[1]->qp_num, QKEY, 1, src, 8, ms[0], EFI_WR_SEND, 0), EINVAL);
	ck_assert_int_eq(send_ud(q[0], ah[0], 1, QKEY, 1, src, 8, ms[0], EFI_WR_SEND, 0), EINVAL);
	/* a bad lkey completes with LOC_PROT_ERR, and the QP goes on */
	ck_assert_int_eq(send_ud(q[0], ah[0], q[1]->qp_num, QKEY, 77, src, 8, NULL, EFI_WR_SEND, 0), 0);
	texpect_wc(t.cq[0], EFI_WC_LOC_PROT_ERR, 77, NULL);
	struct efi_qp_attr qa;
	struct efi_qp_init_attr qia;
	ck_assert_int_eq(efi_query_qp(q[0], &qa, 0, &qia), 0);
	ck_assert_int_eq(qa.qp_state, EFI_QPS_RTS);

	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(efi_destroy_qp(q[i]), 0);
		ck_assert_int_eq(efi_destroy_ah(ah[i]), 0);
		efi_dereg_mr(ms[i]);
		efi_dereg_mr(md[i]);
	}
	tpair_close(&t);
	free(src);
	free(dst);
}
END_TEST

/* What a receiver drops, and that none of it fails the QP. */
START_TEST(test_ud_drops)
{
	struct tpair t;
	uint8_t src[64] = "datagram", dst[256];
	struct efi_wc wc;

	tpair_open(&t, 1500, NULL);
	struct efi_qp *q0 = ud_qp(t.pd[0], t.cq[0], NULL), *q1 = ud_qp(t.pd[1], t.cq[1], NULL);
	struct efi_ah *ah = ah_to(t.pd[0], 2);
	struct efi_mr *ms = reg(t.pd[0], src, sizeof(src)), *md = reg(t.pd[1], dst, sizeof(dst));
	ud_to_rts(q0, QKEY);
	ud_to_rts(q1, QKEY);

	/* no receive posted: gone */
	uint64_t b = drops(q1, EFI_DROP_NO_RECEIVE);
	ck_assert_int_eq(send_ud(q0, ah, q1->qp_num, QKEY, 1, src, 8, ms, EFI_WR_SEND, 0), 0);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 1, NULL);
	expect_drop(&t, q1, EFI_DROP_NO_RECEIVE, b);
	/* another Q_Key: gone, the receive stays posted */
	tpost_recv1(q1, 50, dst, sizeof(dst), md);
	b = drops(q1, EFI_DROP_BAD_KEY);
	ck_assert_int_eq(send_ud(q0, ah, q1->qp_num, QKEY + 1, 2, src, 8, ms, EFI_WR_SEND, 0), 0);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 2, NULL);
	expect_drop(&t, q1, EFI_DROP_BAD_KEY, b);
	/* the same receive takes the next good one */
	ck_assert_int_eq(send_ud(q0, ah, q1->qp_num, QKEY, 3, src, 8, ms, EFI_WR_SEND, 0), 0);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 3, NULL);
	texpect_wc(t.cq[1], EFI_WC_SUCCESS, 50, &wc);
	ck_assert_uint_eq(wc.byte_len, EFI_GRH_LEN + 8);
	/* a receive too small: LOC_LEN_ERR with what fit and what did not,
	 * and the QP takes the next datagram */
	tpost_recv1(q1, 51, dst, EFI_GRH_LEN + 4, md);
	tpost_recv1(q1, 52, dst, sizeof(dst), md);
	ck_assert_int_eq(send_ud(q0, ah, q1->qp_num, QKEY, 4, src, 20, ms, EFI_WR_SEND, 0), 0);
	texpect_wc(t.cq[1], EFI_WC_LOC_LEN_ERR, 51, &wc);
	ck_assert_uint_eq(wc.byte_len, EFI_GRH_LEN + 4);
	ck_assert_uint_eq(wc.vendor_err, 16);
	ck_assert_int_eq(send_ud(q0, ah, q1->qp_num, QKEY, 5, src, 20, ms, EFI_WR_SEND, 0), 0);
	texpect_wc(t.cq[1], EFI_WC_SUCCESS, 52, &wc);
	ck_assert_mem_eq(dst + EFI_GRH_LEN, src, 20);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 4, NULL);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 5, NULL);

	/* a datagram for an RC QP, and an RC QP's traffic for a UD QP */
	struct efi_qp_init_attr rc = { .send_cq = t.cq[1], .recv_cq = t.cq[1], .cap = cap, .qp_type = EFI_QPT_RC };
	struct efi_qp *r1 = efi_create_qp(t.pd[1], &rc);
	ck_assert_ptr_nonnull(r1);
	rc.send_cq = rc.recv_cq = t.cq[0];
	struct efi_qp *r0 = efi_create_qp(t.pd[0], &rc);
	ck_assert_ptr_nonnull(r0);
	union efi_gid g0, g1;
	tgid_v4(&g0, 10, 0, 0, 1);
	tgid_v4(&g1, 10, 0, 0, 2);
	ck_assert_int_eq(tqp_to_rts(r1, r0->qp_num, &g0, 0, 0, 7, 1, 14, 7, EFI_MTU_1024), 0);
	ck_assert_int_eq(tqp_to_rts(r0, q1->qp_num, &g1, 0, 0, 7, 1, 14, 7, EFI_MTU_1024), 0);
	b = drops(r1, EFI_DROP_QP_TYPE);
	ck_assert_int_eq(send_ud(q0, ah, r1->qp_num, QKEY, 6, src, 8, ms, EFI_WR_SEND, 0), 0);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 6, NULL);
	expect_drop(&t, r1, EFI_DROP_QP_TYPE, b);
	b = drops(q1, EFI_DROP_QP_TYPE);
	struct efi_sge sge = { (uintptr_t)src, 8, ms->lkey };
	struct efi_send_wr w = { .wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = EFI_WR_SEND }, *bad;
	ck_assert_int_eq(efi_post_send(r0, &w, &bad), 0);
	expect_drop(&t, q1, EFI_DROP_QP_TYPE, b);
	ck_assert_str_eq(efi_drop_reason_str(EFI_DROP_QP_TYPE), "qp_type");
	ck_assert_str_eq(efi_drop_reason_str(EFI_DROP_NO_RECEIVE), "no_receive");
	/* the UD QP is still in RTS */
	struct efi_qp_attr qa;
	struct efi_qp_init_attr qia;
	ck_assert_int_eq(efi_query_qp(q1, &qa, 0, &qia), 0);
	ck_assert_int_eq(qa.qp_state, EFI_QPS_RTS);

	efi_destroy_qp(r0);
	efi_destroy_qp(r1);
	efi_destroy_qp(q0);
	efi_destroy_qp(q1);
	efi_destroy_ah(ah);
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	tpair_close(&t);
}
END_TEST

/* Two UD QPs receiving from one SRQ; ERR flushes what a QP holds. */
START_TEST(test_ud_srq)
{
	struct tpair t;
	uint8_t src[64] = "to either", dst[8][128];
	struct efi_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct efi_wc wc;

	tpair_open(&t, 1500, NULL);
	struct efi_srq *srq = efi_create_srq(t.pd[1], &sa);
	ck_assert_ptr_nonnull(srq);
	struct efi_qp *q0 = ud_qp(t.pd[0], t.cq[0], NULL);
	struct efi_qp *a = ud_qp(t.pd[1], t.cq[1], srq), *b = ud_qp(t.pd[1], t.cq[1], srq);
	struct efi_ah *ah = ah_to(t.pd[0], 2);
	struct efi_mr *ms = reg(t.pd[0], src, sizeof(src)), *md = reg(t.pd[1], dst, sizeof(dst));
	ud_to_rts(q0, QKEY);
	ud_to_rts(a, QKEY);
	ud_to_rts(b, QKEY);
	for (int i = 0; i < 4; i++) {
		struct efi_sge s = { (uintptr_t)dst[i], sizeof(dst[i]), md->lkey };
		struct efi_recv_wr r = { .wr_id = 200 + (uint64_t)i, .sg_list = &s, .num_sge = 1 }, *bad;
		ck_assert_int_eq(efi_post_srq_recv(srq, &r, &bad), 0);
	}
	for (int i = 0; i < 4; i++) {
		struct efi_qp *to = i & 1 ? b : a;
		ck_assert_int_eq(send_ud(q0, ah, to->qp_num, QKEY, (uint64_t)i, src, 9, ms, EFI_WR_SEND, 0), 0);
		texpect_wc(t.cq[0], EFI_WC_SUCCESS, (uint64_t)i, NULL);
		texpect_wc(t.cq[1], EFI_WC_SUCCESS, 200 + (uint64_t)i, &wc);
		ck_assert_uint_eq(wc.qp_num, to->qp_num);
		ck_assert_mem_eq(dst[i] + EFI_GRH_LEN, src, 9);
	}
	/* the SRQ is empty now: the next datagram is dropped */
	uint64_t before = drops(a, EFI_DROP_NO_RECEIVE);
	ck_assert_int_eq(send_ud(q0, ah, a->qp_num, QKEY, 9, src, 9, ms, EFI_WR_SEND, 0), 0);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 9, NULL);
	expect_drop(&t, a, EFI_DROP_NO_RECEIVE, before);

	efi_destroy_qp(a);
	efi_destroy_qp(b);
	efi_destroy_qp(q0);
	ck_assert_int_eq(efi_destroy_srq(srq), 0);
	efi_destroy_ah(ah);
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	tpair_close(&t);
}
END_TEST

/* The wire bytes of a UD_SEND_ONLY_IMM: base header, DETH (the Q_Key), ImmDt. */
START_TEST(test_ud_wire_bytes)
{
	static const uint8_t want[] = {
		0x02, 0x16, 0x1d, 0x00,			/* version, opcode, SE|FIRST|LAST|IMM, path */
		0x00, 0x00, 0x20, 0x01,			/* dest QPN */
		0x00, 0x00, 0x01, 0x23,			/* PSN */
		0x00, 0x00, 0x10, 0x02,			/* source QPN */
		0, 0, 0, 0, 0, 0, 0, 0,			/* tx timestamp: none */
		0, 0, 0, 0,				/* connection key: none */
		0x1e, 0xe7, 0xa3, 0x30,			/* DETH: Q_Key */
		0xde, 0xad, 0xbe, 0xef,			/* ImmDt */
	};
	struct efi_pkt p, out;
	uint8_t buf[128];

	memset(&p, 0, sizeof(p));
	p.opcode = EFI_OP_UD_SEND_ONLY_IMM;
	p.flags = EFI_PKT_F_SOLICITED;
	p.dest_qpn = 0x2001;
	p.psn = 0x123;
	p.src_qpn = 0x1002;
	p.qkey = QKEY;
	memcpy(&p.imm_be, want + 32, 4);
	ck_assert_uint_eq(efi_pkt_build_hdr(buf, sizeof(buf), &p), sizeof(want));
	ck_assert_mem_eq(buf, want, sizeof(want));
	ck_assert_int_eq(efi_pkt_parse(buf, sizeof(want), &out), 0);
	ck_assert_uint_eq(out.qkey, QKEY);
	ck_assert(efi_pkt_is_datagram(out.opcode) && !efi_pkt_is_request(out.opcode));
	/* a datagram asks for no ACK and carries none */
	p.flags = EFI_PKT_F_ACKREQ;
	ck_assert_uint_eq(efi_pkt_build_hdr(buf, sizeof(buf), &p), 0);
	buf[2] |= EFI_PKT_F_ACKREQ;
	ck_assert_int_eq(efi_pkt_parse(buf, sizeof(want), &out), -EBADMSG);
}
END_TEST

/* An inline send whose first SGE is empty and has no address (UCX's
 * am_short posts one): the data of the others arrives, nothing reads
 * through the NULL (UBSan in the sanitizer build), on a UD and an RC QP. */
START_TEST(test_inline_empty_sge)
{
	struct tpair t;
	uint8_t src[16] = "after an empty", dst[128];
	struct efi_wc wc;

	tpair_open(&t, 1500, NULL);
	struct efi_qp *q0 = ud_qp(t.pd[0], t.cq[0], NULL), *q1 = ud_qp(t.pd[1], t.cq[1], NULL);
	struct efi_ah *ah = ah_to(t.pd[0], 2);
	struct efi_mr *md = reg(t.pd[1], dst, sizeof(dst));
	ud_to_rts(q0, QKEY);
	ud_to_rts(q1, QKEY);
	struct efi_sge sg[2] = { { 0, 0, 0 }, { (uintptr_t)src, 14, 0 } };
	struct efi_send_wr w, *bad;
	memset(&w, 0, sizeof(w));
	w.wr_id = 1;
	w.sg_list = sg;
	w.num_sge = 2;
	w.opcode = EFI_WR_SEND;
	w.send_flags = EFI_SEND_INLINE | EFI_SEND_SIGNALED;
	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = q1->qp_num;
	w.wr.ud.remote_qkey = QKEY;
	tpost_recv1(q1, 2, dst, sizeof(dst), md);
	ck_assert_int_eq(efi_post_send(q0, &w, &bad), 0);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 1, NULL);
	texpect_wc(t.cq[1], EFI_WC_SUCCESS, 2, &wc);
	ck_assert_uint_eq(wc.byte_len, EFI_GRH_LEN + 14);
	ck_assert_mem_eq(dst + EFI_GRH_LEN, src, 14);
	efi_destroy_qp(q0);
	efi_destroy_qp(q1);
	efi_destroy_ah(ah);

	/* the same on an RC QP */
	tpair_connect(&t, &cap, 0, 7, 1, 14, 7);
	memset(dst, 0, sizeof(dst));
	tpost_recv1(t.qp[1], 3, dst, sizeof(dst), md);
	w.wr_id = 4;
	ck_assert_int_eq(efi_post_send(t.qp[0], &w, &bad), 0);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 4, NULL);
	texpect_wc(t.cq[1], EFI_WC_SUCCESS, 3, &wc);
	ck_assert_uint_eq(wc.byte_len, 14);
	ck_assert_mem_eq(dst, src, 14);
	efi_dereg_mr(md);
	tpair_close(&t);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("efi_ud");
	TCase *tc = tcase_create("ud");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_ud_state_machine);
	tcase_add_test(tc, test_ah);
	tcase_add_test(tc, test_ud_datagrams);
	tcase_add_test(tc, test_ud_drops);
	tcase_add_test(tc, test_ud_srq);
	tcase_add_test(tc, test_ud_wire_bytes);
	tcase_add_test(tc, test_inline_empty_sge);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
