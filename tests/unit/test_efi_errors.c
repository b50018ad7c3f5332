/* SPDX-License-Identifier: MIT */
/*
 * libefi's error completions end to end in one process (two contexts joined
 * by the in-memory wire of tests/unit/efi_testutil.c): RNR waits and their
 * exhaustion, rkey and access violations, a Send longer than its receive,
 * a peer that stops answering, flushes, and a CQ that overflows.  Each is a
 * completion with the status verbs gives it and the QP in the error state,
 * never silence and never a byte in memory the peer had no right to.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "efi_testutil.h"

#define post1(qp, op, id, buf, len, mr, raddr, rkey, flags) \
	tpost_send1_ex(qp, op, id, buf, len, mr, raddr, rkey, flags, htonl(0xabcd0000u + (uint32_t)(id)))

/* RNR: the receive comes later; with rnr_retry 7 the send waits for it,
 * with rnr_retry 0 it fails with RNR_RETRY_EXC_ERR. */
START_TEST(test_rnr)
{
	struct tpair t;
	static uint8_t buf[20000], dst[20000];
	struct efi_wc wc;
	struct efi_counters c;

	tpair_open(&t, 1500, NULL);
	tpair_connect(&t, &tcap_default, 0, 7, 1 /* 0.01 ms */, 14, 7);
	struct efi_mr *ms = treg_all(t.pd[0], buf, sizeof(buf)), *md = treg_all(t.pd[1], dst, sizeof(dst));
	memset(buf, 3, sizeof(buf));
	/* a multi-packet Send: its FIRST finds no receive */
	for (unsigned i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 3);
	ck_assert_int_eq(post1(t.qp[0], EFI_WR_SEND, 1, buf, sizeof(buf), ms, 0, 0, 0), 0);
	/* wait until the responder has refused it at least twice */
	for (int i = 0; i < 5000; i++) {
		ck_assert_int_eq(tpoll(t.cq[0], &wc, 1, 1), 0);
		ck_assert_int_eq(efi_query_qp_counters(t.qp[1], &c), 0);
		if (c.rnr_naks_sent >= 2)
			break;
	}
	ck_assert_uint_ge(c.rnr_naks_sent, 2);
	tpost_recv1(t.qp[1], 2, dst, sizeof(dst), md);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 1, NULL);
	texpect_wc(t.cq[1], EFI_WC_SUCCESS, 2, &wc);
	ck_assert_uint_eq(wc.byte_len, sizeof(buf));
	ck_assert(memcmp(buf, dst, sizeof(buf)) == 0);
	/* a multi-packet Write with immediate: its LAST waits for a receive */
	memset(dst, 0, sizeof(dst));
	ck_assert_int_eq(post1(t.qp[0], EFI_WR_RDMA_WRITE_WITH_IMM, 3, buf, sizeof(buf), ms, (uintptr_t)dst,
			       md->rkey, 0), 0);
	ck_assert_int_eq(tpoll(t.cq[0], &wc, 1, 20), 0);
	tpost_recv1(t.qp[1], 4, dst, 1, md);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 3, NULL);
	texpect_wc(t.cq[1], EFI_WC_SUCCESS, 4, &wc);
	ck_assert_int_eq(wc.opcode, EFI_WC_RECV_RDMA_WITH_IMM);
	ck_assert(memcmp(buf, dst, sizeof(buf)) == 0);
	ck_assert_int_eq(efi_query_qp_counters(t.qp[0], &c), 0);
	ck_assert_msg(c.rnr_naks_received > 0, "no RNR NAK: tx %llu rx %llu, drops %llu",
		      (unsigned long long)c.tx_packets, (unsigned long long)c.rx_packets,
		      (unsigned long long)c.drops);
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	tpair_close(&t);

	tpair_open(&t, 1500, NULL);
	tpair_connect(&t, &tcap_default, 0, 0, 1, 14, 7);
	ms = treg_all(t.pd[0], buf, sizeof(buf));
	ck_assert_int_eq(post1(t.qp[0], EFI_WR_SEND, 1, buf, 64, ms, 0, 0, 0), 0);
	ck_assert_int_eq(post1(t.qp[0], EFI_WR_SEND, 2, buf, 64, ms, 0, 0, 0), 0);
	texpect_wc(t.cq[0], EFI_WC_RNR_RETRY_EXC_ERR, 1, NULL);
	texpect_wc(t.cq[0], EFI_WC_WR_FLUSH_ERR, 2, NULL);
	ck_assert_int_eq(t.qp[0]->state, EFI_QPS_ERR);
	efi_dereg_mr(ms);
	tpair_close(&t);
}
END_TEST

/* A bad rkey, an access the MR does not grant, a range past its end: REM_ACCESS_ERR,
 * QP in ERR, target memory untouched. */
START_TEST(test_rkey_violation)
{
	for (int kind = 0; kind < 4; kind++) {
		struct tpair t;
		uint8_t src[4096], dst[4096];
		struct efi_mr *ms, *md;
		uint32_t rkey;
		uint64_t raddr;

		tpair_open(&t, 1500, NULL);
		tpair_connect(&t, &tcap_default, 0, 7, 1, 14, 7);
		memset(src, 0xee, sizeof(src));
		memset(dst, 0x11, sizeof(dst));
		ms = treg_all(t.pd[0], src, sizeof(src));
		md = efi_reg_mr(t.pd[1], dst, 2048, kind == 2 ? EFI_ACCESS_REMOTE_READ : EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_WRITE);
		ck_assert_ptr_nonnull(md);
		rkey = kind == 0 ? md->rkey ^ 0x5a5a5a5a : md->rkey;
		raddr = kind == 1 ? (uintptr_t)dst + 1024 : (uintptr_t)dst;	/* 1024 + 3000 > 2048 */
		if (kind == 3) {
			ck_assert_int_eq(post1(t.qp[0], EFI_WR_RDMA_READ, 1, src, 100, ms, raddr, rkey, 0), 0);
		} else {
			ck_assert_int_eq(post1(t.qp[0], EFI_WR_RDMA_WRITE, 1, src, 3000, ms, raddr, rkey, 0), 0);
		}
		ck_assert_int_eq(post1(t.qp[0], EFI_WR_SEND, 2, src, 10, ms, 0, 0, 0), 0);
		texpect_wc(t.cq[0], EFI_WC_REM_ACCESS_ERR, 1, NULL);
		texpect_wc(t.cq[0], EFI_WC_WR_FLUSH_ERR, 2, NULL);
		for (int i = 0; i < 4096; i++)
			ck_assert_msg(dst[i] == 0x11, "target byte %d touched (kind %d)", i, kind);
		ck_assert_int_eq(t.qp[0]->state, EFI_QPS_ERR);
		efi_dereg_mr(ms);
		efi_dereg_mr(md);
		tpair_close(&t);
	}
}
END_TEST

/* A Send longer than the receive: LOC_LEN_ERR at the responder, with the
 * buffer filled by the message's first bytes, byte_len what was placed and
 * vendor_err what did not fit (libfabric's olen); REM_INV_REQ_ERR at the
 * requester.  4000 bytes over a 1500-byte link is a multi-packet message:
 * the overflow starts in its first packet and the count still covers them
 * all. */
START_TEST(test_loc_len_err)
{
	struct tpair t;
	uint8_t src[4000], dst[100];
	struct efi_wc wc;

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 3);
	memset(dst, 0, sizeof(dst));
	tpair_open(&t, 1500, NULL);
	tpair_connect(&t, &tcap_default, 0, 7, 1, 14, 7);
	struct efi_mr *ms = treg_all(t.pd[0], src, sizeof(src)), *md = treg_all(t.pd[1], dst, sizeof(dst));
	tpost_recv1(t.qp[1], 5, dst, sizeof(dst), md);
	tpost_recv1(t.qp[1], 6, dst, sizeof(dst), md);
	ck_assert_int_eq(post1(t.qp[0], EFI_WR_SEND, 1, src, 4000, ms, 0, 0, 0), 0);
	texpect_wc(t.cq[1], EFI_WC_LOC_LEN_ERR, 5, &wc);
	ck_assert_uint_eq(wc.byte_len, sizeof(dst));
	ck_assert_uint_eq(wc.vendor_err, sizeof(src) - sizeof(dst));
	ck_assert_mem_eq(dst, src, sizeof(dst));
	texpect_wc(t.cq[1], EFI_WC_WR_FLUSH_ERR, 6, NULL);
	texpect_wc(t.cq[0], EFI_WC_REM_INV_REQ_ERR, 1, NULL);
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	tpair_close(&t);
}
END_TEST

/* More completions than the CQ holds: the lost one is never silent
 * (issue 20's hang was "nothing arriving, no error").  The CQ gives what it
 * held, then -EOVERFLOW for good, and its QP is in the error state. */
START_TEST(test_cq_overflow_is_loud)
{
	struct tpair t;
	uint8_t src[64];
	struct efi_wc wc[64];
	struct efi_qp_attr qa;
	struct efi_qp_init_attr qia;
	struct efi_cq *small;
	int n = 0, r;

	tpair_open(&t, 1500, NULL);
	tpair_connect(&t, &tcap_default, 0, 7, 1, 14, 7);
	struct efi_mr *ms = treg_all(t.pd[0], src, sizeof(src));
	/* a second QP on side 0 whose send CQ has room for 3 */
	small = efi_create_cq(t.ctx[0], 3, NULL, NULL, 0);
	ck_assert_ptr_nonnull(small);
	struct efi_qp_init_attr ia = { .send_cq = small, .recv_cq = t.cq[0], .cap = tcap_default,
				       .qp_type = EFI_QPT_RC };
	struct efi_qp *q = efi_create_qp(t.pd[0], &ia);
	ck_assert_ptr_nonnull(q);
	{
		union efi_gid g;
		tgid_v4(&g, 10, 0, 0, 2);
		/* side 1's QP is connected to another QP: it drops these */
		ck_assert_int_eq(tqp_to_rts(q, t.qp[1]->qp_num, &g, 1, 1, 7, 1, 8 /* ~1 ms */, 1,
					    EFI_MTU_1024), 0);
	}
	for (int i = 0; i < 2 * small->cqe + 2; i++)
		ck_assert_int_eq(post1(q, EFI_WR_RDMA_WRITE, (uint64_t)i, src, 8, ms, (uintptr_t)src, ms->rkey, 0), 0);
	/* the Writes get no answer: the first fails with RETRY_EXC, the rest
	 * are flushed, each with a completion, more than the ring holds */
	for (int tries = 0; tries < 20000; tries++) {
		r = efi_poll_cq(small, 64, wc);
		if (r < 0)
			break;
		n += r;
		usleep(1000);
	}
	ck_assert_int_eq(r, -EOVERFLOW);
	ck_assert_int_le(n, small->cqe);
	ck_assert_int_eq(efi_poll_cq(small, 64, wc), -EOVERFLOW);
	ck_assert_int_eq(efi_query_qp(q, &qa, EFI_QP_STATE, &qia), 0);
	ck_assert_int_eq(qa.qp_state, EFI_QPS_ERR);
	ck_assert_int_eq(efi_destroy_qp(q), 0);
	ck_assert_int_eq(efi_destroy_cq(small), 0);
	efi_dereg_mr(ms);
	tpair_close(&t);
}
END_TEST

/* The peer stops answering: RETRY_EXC_ERR after timeout × retry_cnt, not a hang. */
START_TEST(test_retry_exceeded)
{
	struct tpair t;
	uint8_t src[100];
	struct efi_qp_attr a = { .qp_state = EFI_QPS_ERR };

	tpair_open(&t, 1500, NULL);
	tpair_connect(&t, &tcap_default, 0, 7, 1, 8 /* ~1 ms */, 3);
	struct efi_mr *ms = treg_all(t.pd[0], src, sizeof(src));
	ck_assert_int_eq(efi_modify_qp(t.qp[1], &a, EFI_QP_STATE), 0);
	ck_assert_int_eq(post1(t.qp[0], EFI_WR_RDMA_WRITE, 1, src, 100, ms, 0, 0, 0), 0);
	texpect_wc(t.cq[0], EFI_WC_RETRY_EXC_ERR, 1, NULL);
	efi_dereg_mr(ms);
	tpair_close(&t);
}
END_TEST

/* Moving to ERR flushes posted receives; posting in ERR completes with a flush. */
START_TEST(test_flush)
{
	struct tpair t;
	uint8_t dst[64];
	struct efi_qp_attr a = { .qp_state = EFI_QPS_ERR };

	tpair_open(&t, 1500, NULL);
	tpair_connect(&t, &tcap_default, 0, 7, 1, 14, 7);
	struct efi_mr *md = treg_all(t.pd[1], dst, sizeof(dst));
	for (int i = 0; i < 5; i++)
		tpost_recv1(t.qp[1], (uint64_t)i, dst, sizeof(dst), md);
	ck_assert_int_eq(efi_modify_qp(t.qp[1], &a, EFI_QP_STATE), 0);
	for (int i = 0; i < 5; i++)
		texpect_wc(t.cq[1], EFI_WC_WR_FLUSH_ERR, (uint64_t)i, NULL);
	tpost_recv1(t.qp[1], 9, dst, sizeof(dst), md);
	texpect_wc(t.cq[1], EFI_WC_WR_FLUSH_ERR, 9, NULL);
	efi_dereg_mr(md);
	tpair_close(&t);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("efi_errors");
	TCase *tc = tcase_create("errors");
	tcase_set_timeout(tc, 120);
	const char *only = getenv("EFI_TEST_ONLY");	/* run one test: its name */
#define ADD(t) if (!only || strcmp(only, #t) == 0) tcase_add_test(tc, t)
	ADD(test_rnr);
	ADD(test_rkey_violation);
	ADD(test_loc_len_err);
	ADD(test_cq_overflow_is_loud);
	ADD(test_retry_exceeded);
	ADD(test_flush);
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
