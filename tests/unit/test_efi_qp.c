/* SPDX-License-Identifier: MIT */
/*
 * libefi objects without traffic: the QP state machine (legal and illegal
 * transitions, required/optional attribute masks, value ranges), MR keys and
 * the rkey/bounds/access check, CQ and object lifetimes.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efi_testutil.h"
#include "libefi/efi_int.h"

static struct tpair T;
static struct efi_qp *Q;

static void setup(void)
{
	struct efi_qp_init_attr ia;

	tpair_open(&T, 1500, NULL);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = T.cq[0];
	ia.cap.max_send_wr = 10;
	ia.cap.max_recv_wr = 10;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.qp_type = EFI_QPT_RC;
	Q = efi_create_qp(T.pd[0], &ia);
	ck_assert_ptr_nonnull(Q);
	ck_assert_uint_ge(ia.cap.max_send_wr, 10);
	ck_assert_uint_ge(Q->qp_num, 0x1000);
	ck_assert_uint_lt(Q->qp_num, 0x2000);
}

static void teardown(void)
{
	ck_assert_int_eq(efi_destroy_qp(Q), 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(efi_destroy_cq(T.cq[i]), 0);
		ck_assert_int_eq(efi_dealloc_pd(T.pd[i]), 0);
		ck_assert_int_eq(efi_close_device(T.ctx[i]), 0);
	}
}

static int to_init(struct efi_qp *qp)
{
	struct efi_qp_attr a = { .qp_state = EFI_QPS_INIT, .qp_access_flags = EFI_ACCESS_REMOTE_WRITE };
	return efi_modify_qp(qp, &a, EFI_QP_STATE | EFI_QP_ACCESS_FLAGS);
}

static void rtr_attr(struct efi_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = EFI_QPS_RTR;
	a->path_mtu = EFI_MTU_1024;
	a->dest_qp_num = 0x2001;
	a->rq_psn = 5;
	a->max_dest_rd_atomic = 4;
	a->min_rnr_timer = 12;
	a->ah_attr.is_global = 1;
	tgid_v4(&a->ah_attr.grh.dgid, 10, 0, 0, 2);
}

#define RTR_MASK (EFI_QP_STATE | EFI_QP_AV | EFI_QP_PATH_MTU | EFI_QP_DEST_QPN | EFI_QP_RQ_PSN | \
		  EFI_QP_MAX_DEST_RD_ATOMIC | EFI_QP_MIN_RNR_TIMER)
#define RTS_MASK (EFI_QP_STATE | EFI_QP_TIMEOUT | EFI_QP_RETRY_CNT | EFI_QP_RNR_RETRY | \
		  EFI_QP_SQ_PSN | EFI_QP_MAX_QP_RD_ATOMIC)

static void rts_attr(struct efi_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = EFI_QPS_RTS;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->sq_psn = 0xffffff;
	a->max_rd_atomic = 4;
}

/* $EFI_MIN_DEAD_MS: read at open, checked (100 ms .. 600 s, digits only;
 * anything else fails the open with EINVAL and leaves the wire the
 * caller's). */
START_TEST(test_min_dead_env)
{
	static const char *const bad[] = { "99", "600001", "abc", "-5", "1000ms" };
	static const char *const good[] = { "", "30000" };
	static const uint64_t want[] = { 0, 30000ull * 1000000 };
	struct efi_ctx_params p;
	struct efi_wire *w[2];
	union efi_gid g[2];
	struct efi_context *ctx;

	memset(&p, 0, sizeof(p));
	snprintf(p.ifname, sizeof(p.ifname), "efi0");
	p.link_mtu = 1500;
	p.port_base = 18515;
	p.qpn_base = 1u << 12;
	p.ngids = 1;
	tgid_v4(&g[0], 10, 0, 0, 1);
	tgid_v4(&g[1], 10, 0, 0, 2);
	p.gids[0] = g[0];
	tw_pair_create(&w[0], &w[1], &g[0], &g[1], NULL);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("EFI_MIN_DEAD_MS", bad[i], 1);
		ctx = efi_context_create(w[0], &p, NULL);
		ck_assert_msg(!ctx, "EFI_MIN_DEAD_MS=%s accepted", bad[i]);
		ck_assert_int_eq(errno, EINVAL);
	}
	efi_wire_destroy(w[0]);
	efi_wire_destroy(w[1]);
	/* empty is unset: the default (0, EFI_MIN_DEAD_NS) */
	for (unsigned i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		setenv("EFI_MIN_DEAD_MS", good[i], 1);
		tw_pair_create(&w[0], &w[1], &g[0], &g[1], NULL);
		ctx = efi_context_create(w[0], &p, NULL);
		ck_assert_ptr_nonnull(ctx);
		ck_assert_uint_eq(((struct efi_context_int *)ctx)->min_dead_ns, want[i]);
		ck_assert_int_eq(efi_close_device(ctx), 0);
		efi_wire_destroy(w[1]);
	}
	unsetenv("EFI_MIN_DEAD_MS");
}
END_TEST

/* Segment sizes: the link's room when path_mtu is the port's active_mtu
 * (the verbs enum cannot say 1424), the enum's bytes below it, the old
 * rule with EFI_LINK_SEG=0, and never above EFI_MAX_SEG. */
START_TEST(test_segment_size)
{
	/* 1500-byte link: active 1024; IPv4 1500 - 20 - 8 - 48, IPv6 - 40 */
	ck_assert_int_eq(efi_active_mtu(1500), EFI_MTU_1024);
	ck_assert_uint_eq(efi_qp_seg(1500, false, EFI_MTU_1024, true), 1424);
	ck_assert_uint_eq(efi_qp_seg(1500, true, EFI_MTU_1024, true), 1404);
	ck_assert_uint_eq(efi_qp_seg(1500, false, EFI_MTU_512, true), 512);
	ck_assert_uint_eq(efi_qp_seg(1500, false, EFI_MTU_1024, false), 1024);
	/* GCP's 1460 */
	ck_assert_uint_eq(efi_qp_seg(1460, false, EFI_MTU_1024, true), 1384);
	/* jumbo: the link filled, not the enum's 4096 (issue 14): 9000 - 20
	 * - 8 - 48, IPv6 - 40; the active MTU stays a legal enum value */
	ck_assert_int_eq(efi_active_mtu(9000), EFI_MTU_4096);
	ck_assert_uint_eq(efi_qp_seg(9000, false, EFI_MTU_4096, true), 8924);
	ck_assert_uint_eq(efi_qp_seg(9000, true, EFI_MTU_4096, true), 8904);
	ck_assert_uint_eq(EFI_MAX_SEG, 8924);
	ck_assert_uint_eq(efi_qp_seg(9000, false, EFI_MTU_4096, false), 4096);
	ck_assert_uint_eq(efi_qp_seg(9000, false, EFI_MTU_2048, true), 2048);
	/* AWS's 9001 and larger links: the packet buffers' limit */
	ck_assert_uint_eq(efi_qp_seg(9001, false, EFI_MTU_4096, true), EFI_MAX_SEG);
	ck_assert_uint_eq(efi_qp_seg(65535, false, EFI_MTU_4096, true), EFI_MAX_SEG);
	/* GCP's 8896, Azure's 4088 */
	ck_assert_uint_eq(efi_qp_seg(8896, false, EFI_MTU_4096, true), 8820);
	ck_assert_uint_eq(efi_qp_seg(4088, false, EFI_MTU_2048, true), 4012);
	/* every packet of such a segment fits the buffers that hold one */
	ck_assert_uint_le(EFI_MAX_SEG + EFI_MAX_HDR_LEN, EFI_PKTBUF_SIZE);
	ck_assert_uint_le(EFI_MAX_SEG + EFI_MAX_HDR_LEN, EFI_RXBUF_SIZE);
	ck_assert_uint_le(EFI_MAX_SEG + EFI_MAX_HDR_LEN, EFI_REORDER_PKT_MAX);
	/* the smallest link with an active 1024: exactly 1024 */
	ck_assert_uint_eq(efi_qp_seg(1100, false, EFI_MTU_1024, true), 1024);
}
END_TEST

START_TEST(test_legal_path)
{
	struct efi_qp_attr a, q;
	struct efi_qp_init_attr qi;

	ck_assert_int_eq(Q->state, EFI_QPS_RESET);
	ck_assert_int_eq(to_init(Q), 0);
	ck_assert_int_eq(Q->state, EFI_QPS_INIT);
	/* INIT → INIT with optional attributes, without STATE too */
	a.qp_access_flags = EFI_ACCESS_REMOTE_READ;
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_ACCESS_FLAGS), 0);
	rtr_attr(&a);
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTR_MASK), 0);
	ck_assert_int_eq(Q->state, EFI_QPS_RTR);
	rts_attr(&a);
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTS_MASK | EFI_QP_CUR_STATE), EINVAL);	/* cur_qp_state 0 */
	a.cur_qp_state = EFI_QPS_RTR;
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTS_MASK | EFI_QP_CUR_STATE), 0);
	ck_assert_int_eq(Q->state, EFI_QPS_RTS);
	a.min_rnr_timer = 3;
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_MIN_RNR_TIMER), 0);
	a.qp_state = EFI_QPS_SQD;
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_STATE), 0);
	a.qp_state = EFI_QPS_RTS;
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_STATE), 0);
	ck_assert_int_eq(efi_query_qp(Q, &q, 0, &qi), 0);
	ck_assert_int_eq(q.qp_state, EFI_QPS_RTS);
	ck_assert_uint_eq(q.dest_qp_num, 0x2001);
	ck_assert_uint_eq(q.rq_psn, 5);
	ck_assert_uint_eq(q.sq_psn, 0xffffff);
	ck_assert_uint_eq(q.min_rnr_timer, 3);
	ck_assert_uint_eq(q.qp_access_flags, EFI_ACCESS_REMOTE_READ);
	ck_assert_ptr_eq(qi.send_cq, T.cq[0]);
	a.qp_state = EFI_QPS_ERR;
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_STATE), 0);
	ck_assert_int_eq(Q->state, EFI_QPS_ERR);
	a.qp_state = EFI_QPS_RESET;
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_STATE), 0);
	ck_assert_int_eq(Q->state, EFI_QPS_RESET);
	ck_assert_int_eq(to_init(Q), 0);
}
END_TEST

START_TEST(test_illegal_transitions)
{
	struct efi_qp_attr a;

	/* RESET → RTR / RTS / SQD: skipped states */
	rtr_attr(&a);
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTR_MASK), EINVAL);
	rts_attr(&a);
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTS_MASK), EINVAL);
	a.qp_state = EFI_QPS_SQD;
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_STATE), EINVAL);
	a.qp_state = EFI_QPS_SQE;
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_STATE), EINVAL);
	a.qp_state = (enum efi_qp_state)42;
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_STATE), EINVAL);
	/* RESET → INIT without ACCESS_FLAGS (required) */
	a.qp_state = EFI_QPS_INIT;
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_STATE), EINVAL);
	/* with an attribute not allowed there */
	a.qp_access_flags = 0;
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_STATE | EFI_QP_ACCESS_FLAGS | EFI_QP_SQ_PSN), EINVAL);
	ck_assert_int_eq(Q->state, EFI_QPS_RESET);
	ck_assert_int_eq(to_init(Q), 0);
	/* INIT → RTS */
	rts_attr(&a);
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTS_MASK), EINVAL);
	/* INIT → RTR with each required attribute missing */
	rtr_attr(&a);
	for (int bit = 0; bit < 26; bit++) {
		int m = 1 << bit;
		if (!(RTR_MASK & m) || m == EFI_QP_STATE)
			continue;
		ck_assert_msg(efi_modify_qp(Q, &a, RTR_MASK & ~m) == EINVAL, "RTR without bit %d accepted", bit);
	}
	/* unsupported attributes */
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTR_MASK | EFI_QP_ALT_PATH), EINVAL);
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTR_MASK | EFI_QP_QKEY), EINVAL);
	/* values out of range: nothing changes */
	rtr_attr(&a);
	a.rq_psn = 1u << 24;
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTR_MASK), EINVAL);
	rtr_attr(&a);
	a.dest_qp_num = 1u << 24;
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTR_MASK), EINVAL);
	rtr_attr(&a);
	a.path_mtu = EFI_MTU_4096;	/* above the 1500-byte link's active MTU */
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTR_MASK), EINVAL);
	rtr_attr(&a);
	a.path_mtu = (enum efi_mtu)0;
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTR_MASK), EINVAL);
	rtr_attr(&a);
	a.ah_attr.is_global = 0;
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTR_MASK), EINVAL);
	rtr_attr(&a);
	a.ah_attr.grh.sgid_index = 1;
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTR_MASK), EINVAL);
	rtr_attr(&a);
	memset(&a.ah_attr.grh.dgid, 0, 16);
	a.ah_attr.grh.dgid.raw[0] = 0xfd;	/* IPv6 peer from an IPv4 GID */
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTR_MASK), EINVAL);
	rtr_attr(&a);
	a.min_rnr_timer = 32;
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTR_MASK), EINVAL);
	rtr_attr(&a);
	a.max_dest_rd_atomic = 200;
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTR_MASK), EINVAL);
	ck_assert_int_eq(Q->state, EFI_QPS_INIT);
	rtr_attr(&a);
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTR_MASK), 0);
	/* RTR → INIT, RTR → RTR with RTS attributes, bad retry counts */
	a.qp_state = EFI_QPS_INIT;
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_STATE), EINVAL);
	rts_attr(&a);
	a.retry_cnt = 8;
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTS_MASK), EINVAL);
	rts_attr(&a);
	a.rnr_retry = 8;
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTS_MASK), EINVAL);
	rts_attr(&a);
	a.sq_psn = 1u << 24;
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTS_MASK), EINVAL);
	ck_assert_int_eq(Q->state, EFI_QPS_RTR);
	rts_attr(&a);
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTS_MASK), 0);
	/* RTS → RTR, RTS → INIT; RTS → RTS with a path attribute */
	a.qp_state = EFI_QPS_RTR;
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_STATE), EINVAL);
	a.qp_state = EFI_QPS_INIT;
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_STATE), EINVAL);
	rtr_attr(&a);
	a.qp_state = EFI_QPS_RTS;
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_STATE | EFI_QP_PATH_MTU), EINVAL);
	/* ERR → RTS */
	a.qp_state = EFI_QPS_ERR;
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_STATE | EFI_QP_TIMEOUT), EINVAL);
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_STATE), 0);
	rts_attr(&a);
	ck_assert_int_eq(efi_modify_qp(Q, &a, EFI_QP_STATE), EINVAL);
	ck_assert_int_eq(efi_modify_qp(NULL, &a, EFI_QP_STATE), EINVAL);
	ck_assert_int_eq(efi_modify_qp(Q, NULL, EFI_QP_STATE), EINVAL);
}
END_TEST

START_TEST(test_post_states)
{
	uint8_t buf[8];
	struct efi_mr *mr = efi_reg_mr(T.pd[0], buf, 8, EFI_ACCESS_LOCAL_WRITE);
	struct efi_sge sge = { (uintptr_t)buf, 8, mr->lkey };
	struct efi_send_wr s = { .sg_list = &sge, .num_sge = 1, .opcode = EFI_WR_SEND }, *sbad = NULL;
	struct efi_recv_wr r = { .sg_list = &sge, .num_sge = 1 }, *rbad = NULL;
	struct efi_qp_attr a;

	ck_assert_int_eq(efi_post_recv(Q, &r, &rbad), EINVAL);	/* RESET */
	ck_assert_ptr_eq(rbad, &r);
	ck_assert_int_eq(efi_post_send(Q, &s, &sbad), EINVAL);
	ck_assert_ptr_eq(sbad, &s);
	ck_assert_int_eq(to_init(Q), 0);
	ck_assert_int_eq(efi_post_recv(Q, &r, &rbad), 0);	/* INIT: receives ok */
	ck_assert_int_eq(efi_post_send(Q, &s, &sbad), EINVAL);
	rtr_attr(&a);
	ck_assert_int_eq(efi_modify_qp(Q, &a, RTR_MASK), 0);
	ck_assert_int_eq(efi_post_send(Q, &s, &sbad), EINVAL);
	/* a receive queue of 10 (rounded to 16) fills up: ENOMEM with bad_wr */
	int n = 1, err;
	while ((err = efi_post_recv(Q, &r, &rbad)) == 0)
		n++;
	ck_assert_int_eq(err, ENOMEM);
	ck_assert_int_ge(n, 10);
	r.num_sge = 2;
	ck_assert_int_eq(efi_post_recv(Q, &r, &rbad), EINVAL);
	efi_dereg_mr(mr);
}
END_TEST

START_TEST(test_mr_checks)
{
	struct efi_context_int *ctx = (struct efi_context_int *)T.ctx[0];
	uint8_t *buf = malloc(8192);
	struct efi_mr *mr[64];
	struct efi_mr_int *m;

	ck_assert_ptr_null(efi_reg_mr(T.pd[0], buf, 100, EFI_ACCESS_REMOTE_WRITE));	/* no LOCAL_WRITE */
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(efi_reg_mr(T.pd[0], buf, 100, 1 << 9));
	ck_assert_ptr_null(efi_reg_mr(T.pd[0], NULL, 100, 0));
	ck_assert_ptr_null(efi_reg_mr(NULL, buf, 100, 0));
	ck_assert_ptr_null(efi_reg_mr(T.pd[0], (void *)(uintptr_t)(UINTPTR_MAX - 10), 100, 0));

	for (int i = 0; i < 64; i++) {
		mr[i] = efi_reg_mr(T.pd[0], buf + i * 128, 128,
				   i & 1 ? EFI_ACCESS_REMOTE_READ : EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_WRITE);
		ck_assert_ptr_nonnull(mr[i]);
		ck_assert_uint_ne(mr[i]->rkey, 0);
	}
	/* keys are not sequential: no two consecutive differ by a small constant */
	int close_pairs = 0;
	for (int i = 1; i < 64; i++)
		if (mr[i]->rkey - mr[i - 1]->rkey < 1024 || mr[i - 1]->rkey - mr[i]->rkey < 1024)
			close_pairs++;
	ck_assert_int_lt(close_pairs, 3);
	ck_assert_int_eq(efi_dealloc_pd(T.pd[0]), EBUSY);

	pthread_mutex_lock(&ctx->lock);
	for (int i = 0; i < 64; i++) {
		uintptr_t base = (uintptr_t)buf + (uintptr_t)i * 128;
		int acc = i & 1 ? EFI_ACCESS_REMOTE_READ : EFI_ACCESS_REMOTE_WRITE;
		ck_assert_ptr_eq(efi_mr_lookup(ctx, mr[i]->rkey), (struct efi_mr_int *)mr[i]);
		ck_assert_ptr_nonnull(efi_mr_check(ctx, mr[i]->rkey, NULL, base, 128, acc));
		ck_assert_ptr_nonnull(efi_mr_check(ctx, mr[i]->rkey, NULL, base + 127, 1, acc));
		ck_assert_ptr_null(efi_mr_check(ctx, mr[i]->rkey, NULL, base, 129, acc));
		ck_assert_ptr_null(efi_mr_check(ctx, mr[i]->rkey, NULL, base + 128, 1, acc));
		ck_assert_ptr_null(efi_mr_check(ctx, mr[i]->rkey, NULL, base - 1, 2, acc));
		ck_assert_ptr_null(efi_mr_check(ctx, mr[i]->rkey, NULL, base + 1, UINT64_MAX, acc));
		ck_assert_ptr_null(efi_mr_check(ctx, mr[i]->rkey, NULL, UINT64_MAX, 2, acc));
		ck_assert_ptr_null(efi_mr_check(ctx, mr[i]->rkey, NULL, base, 8, EFI_ACCESS_REMOTE_ATOMIC));
		ck_assert_ptr_null(efi_mr_check(ctx, mr[i]->rkey, NULL, base, 8,
						i & 1 ? EFI_ACCESS_REMOTE_WRITE : EFI_ACCESS_REMOTE_READ));
		ck_assert_ptr_null(efi_mr_check(ctx, mr[i]->rkey, T.pd[1], base, 8, acc));	/* other PD */
		ck_assert_ptr_null(efi_mr_check(ctx, mr[i]->rkey + 1, NULL, base, 8, acc));
	}
	pthread_mutex_unlock(&ctx->lock);
	/* deregistered keys stop working, the others keep working */
	uint32_t keys[64];
	for (int i = 0; i < 64; i++)
		keys[i] = mr[i]->rkey;
	for (int i = 0; i < 64; i += 2)
		ck_assert_int_eq(efi_dereg_mr(mr[i]), 0);
	pthread_mutex_lock(&ctx->lock);
	for (int i = 0; i < 64; i++) {
		m = efi_mr_lookup(ctx, keys[i]);
		if (i & 1)
			ck_assert_ptr_eq(m, (struct efi_mr_int *)mr[i]);
		else
			ck_assert_ptr_null(m);
	}
	pthread_mutex_unlock(&ctx->lock);
	for (int i = 1; i < 64; i += 2)
		ck_assert_int_eq(efi_dereg_mr(mr[i]), 0);
	free(buf);
}
END_TEST

START_TEST(test_objects)
{
	struct efi_cq *cq;
	struct efi_comp_channel *ch;
	struct efi_qp_init_attr ia;
	struct efi_device_attr da;
	struct efi_port_attr pa;
	union efi_gid g;

	ck_assert_ptr_null(efi_create_cq(T.ctx[0], 0, NULL, NULL, 0));
	ck_assert_ptr_null(efi_create_cq(T.ctx[0], 4, NULL, NULL, 1));
	ch = efi_create_comp_channel(T.ctx[1]);
	ck_assert_ptr_null(efi_create_cq(T.ctx[0], 4, NULL, ch, 0));	/* channel of another context */
	cq = efi_create_cq(T.ctx[0], 5, NULL, NULL, 0);
	ck_assert_ptr_nonnull(cq);
	ck_assert_int_ge(cq->cqe, 5);
	ck_assert_int_eq(efi_req_notify_cq(cq, 0), EINVAL);	/* no channel */
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = T.cq[1];	/* of another context */
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
	ia.qp_type = EFI_QPT_RC;
	ck_assert_ptr_null(efi_create_qp(T.pd[0], &ia));
	ia.recv_cq = cq;
	ia.qp_type = (enum efi_qp_type)3;
	ck_assert_ptr_null(efi_create_qp(T.pd[0], &ia));
	ia.qp_type = EFI_QPT_RC;
	ia.cap.max_send_sge = 1000;
	ck_assert_ptr_null(efi_create_qp(T.pd[0], &ia));
	ck_assert_int_eq(efi_close_device(T.ctx[0]), EBUSY);
	ck_assert_int_eq(efi_destroy_cq(cq), 0);
	ck_assert_int_eq(efi_destroy_comp_channel(ch), 0);
	ck_assert_int_eq(efi_destroy_cq(NULL), 0);
	ck_assert_int_eq(efi_destroy_qp(NULL), 0);
	ck_assert_int_eq(efi_query_device(T.ctx[0], &da), 0);
	ck_assert_int_eq(da.max_sge, 32);
	ck_assert_uint_eq(da.vendor_id, EFI_VENDOR_ID);	/* "EFI", as the verbs layer reports it */
	ck_assert_int_eq(efi_query_port(T.ctx[0], 1, &pa), 0);
	ck_assert_int_eq(pa.state, EFI_PORT_ACTIVE);
	ck_assert_int_eq(pa.active_mtu, EFI_MTU_1024);
	ck_assert_int_eq(efi_query_port(T.ctx[0], 2, &pa), EINVAL);
	ck_assert_int_eq(efi_query_gid(T.ctx[0], 1, 0, &g), 0);
	ck_assert_int_eq(g.raw[15], 1);
	ck_assert_int_eq(efi_query_gid(T.ctx[0], 1, 1, &g), EINVAL);
	ck_assert_str_eq(efi_wc_status_str(EFI_WC_SUCCESS), "success");
	ck_assert_str_eq(efi_wc_status_str((enum efi_wc_status)999), "unknown");
	ck_assert_str_eq(efi_port_state_str(EFI_PORT_ACTIVE), "active");
	ck_assert_str_eq(efi_drop_reason_str(EFI_DROP_BAD_SOURCE), "bad_source");
	ck_assert_str_eq(efi_drop_reason_str((enum efi_drop_reason)99), "unknown");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("efi_qp");
	TCase *tc = tcase_create("qp");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_segment_size);
	tcase_add_test(tc, test_min_dead_env);
	tcase_add_test(tc, test_legal_path);
	tcase_add_test(tc, test_illegal_transitions);
	tcase_add_test(tc, test_post_states);
	tcase_add_test(tc, test_mr_checks);
	tcase_add_test(tc, test_objects);
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
