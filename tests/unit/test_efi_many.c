/* SPDX-License-Identifier: MIT */
/*
 * The transport with many QPs (issue 18), over the in-memory wire:
 *  - a transport run visits only the QPs with something to do (active.c):
 *    connected idle QPs leave the ring, a post or a packet brings one
 *    back, and it leaves again once its work and its held ACK are done;
 *  - an idle QP still fails when a CQ it shares loses a completion;
 *  - a new QP without an RTT sample of its own waits for its first probe
 *    at least as long as its peer's other QPs measure (rtt.h).
 * No clocks asserted: loops are bounded by work, not time.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "efi_testutil.h"
#include "libefi/efi_int.h"

#define NQP 64

static const struct efi_qp_cap cap = {
	.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1,
};

static unsigned nactive(struct efi_context *c)
{
	struct efi_context_int *ctx = ctx_of(c);
	unsigned n;

	pthread_mutex_lock(&ctx->lock);
	n = ctx->nactive;
	pthread_mutex_unlock(&ctx->lock);
	return n;
}

/* Polls both sides' CQs once; counts the completions in *got. */
static int poll_both(struct tpair *t, struct efi_wc *wc, int *got)
{
	int polled = 0;

	for (int s = 0; s < 2; s++) {
		int n = efi_poll_cq(t->cq[s], 16, wc);
		ck_assert_int_ge(n, 0);
		for (int k = 0; k < n; k++)
			ck_assert_msg(wc[k].status == EFI_WC_SUCCESS, "%s", efi_wc_status_str(wc[k].status));
		if (got)
			*got += n;
		polled += n;
	}
	return polled;
}

/* Runs the transport (efi_poll_cq does, when no other thread holds it)
 * until neither context has an active QP; false if that never happens
 * within a bound of work.  Completions found are counted in *got. */
static bool settle(struct tpair *t, int *got)
{
	struct efi_wc wc[16];

	for (unsigned spins = 0; spins < 2000000u; spins++) {
		bool idle;
		int polled = poll_both(t, wc, got);

		/* idle, and every completion taken: one more poll after both
		 * rings are empty, since a progress thread may have pushed a
		 * completion between the polls above and the look at the
		 * rings (a QP leaves the ring only after its completions) */
		idle = !polled && nactive(t->ctx[0]) == 0 && nactive(t->ctx[1]) == 0;
		if (idle && poll_both(t, wc, got) == 0)
			return true;
		if (spins % 64 == 63)
			usleep(100);
	}
	return false;
}

/* NQP connected pairs of QPs over t (t->qp[] are not used); side 0's send
 * CQ is send_cq0 if not NULL. */
static void connect_many(struct tpair *t, struct efi_qp *q[2][NQP], struct efi_cq *send_cq0, uint8_t rnr_retry)
{
	struct efi_qp_init_attr ia;

	for (int i = 0; i < NQP; i++)
		for (int s = 0; s < 2; s++) {
			memset(&ia, 0, sizeof(ia));
			ia.qp_type = EFI_QPT_RC;
			ia.send_cq = ia.recv_cq = t->cq[s];
			if (s == 0 && send_cq0)
				ia.send_cq = send_cq0;
			ia.cap = cap;
			q[s][i] = efi_create_qp(t->pd[s], &ia);
			ck_assert_ptr_nonnull(q[s][i]);
		}
	for (int i = 0; i < NQP; i++) {
		union efi_gid g[2];
		for (int s = 0; s < 2; s++)
			ck_assert_int_eq(efi_query_gid(t->ctx[s], 1, 0, &g[s]), 0);
		for (int s = 0; s < 2; s++)
			ck_assert_int_eq(tqp_to_rts(q[s][i], q[!s][i]->qp_num, &g[!s], 100, 100, rnr_retry, 1, 14, 7,
						    EFI_MTU_1024), 0);
	}
}

static void post_send1(struct efi_qp *qp, struct efi_mr *mr, void *buf, uint32_t len)
{
	struct efi_sge sg = { (uintptr_t)buf, len, mr->lkey };
	struct efi_send_wr wr = { .sg_list = &sg, .num_sge = 1, .opcode = EFI_WR_SEND,
				  .send_flags = EFI_SEND_SIGNALED }, *bad;
	ck_assert_int_eq(efi_post_send(qp, &wr, &bad), 0);
}

static void post_recv1(struct efi_qp *qp, struct efi_mr *mr, void *buf, uint32_t len)
{
	struct efi_sge sg = { (uintptr_t)buf, len, mr->lkey };
	struct efi_recv_wr wr = { .sg_list = &sg, .num_sge = 1 }, *bad;
	ck_assert_int_eq(efi_post_recv(qp, &wr, &bad), 0);
}

START_TEST(idle_qps_leave_the_ring)
{
	struct tpair t;
	struct efi_qp *q[2][NQP];
	static uint8_t src[64], dst[NQP][64];
	int got = 0;

	tpair_open(&t, 1500, NULL);
	connect_many(&t, q, NULL, 7);
	/* connected and idle: a run visits none of them */
	ck_assert(settle(&t, NULL));
	struct efi_mr *ms = efi_reg_mr(t.pd[0], src, sizeof(src), EFI_ACCESS_LOCAL_WRITE);
	struct efi_mr *md = efi_reg_mr(t.pd[1], dst, sizeof(dst), EFI_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(ms);
	ck_assert_ptr_nonnull(md);
	for (int i = 0; i < NQP; i++)
		post_recv1(q[1][i], md, dst[i], sizeof(dst[i]));
	ck_assert(settle(&t, NULL));	/* a receive posted gives no work */

	/* one message: its QP joins the ring, and both sides leave it once
	 * the send is acknowledged (its ACK held for an answer included) */
	memcpy(src, "one", 4);
	post_send1(q[0][3], ms, src, 4);
	/* Either it is on the ring now, or the progress threads already ran
	 * the whole exchange (this thread descheduled right after the post,
	 * under load): then, since a QP leaves the ring only after its
	 * completions, the send's completion is in the CQ already. */
	if (nactive(t.ctx[0]) == 0) {
		struct efi_wc wc;

		ck_assert_int_eq(efi_poll_cq(t.cq[0], 1, &wc), 1);
		ck_assert_int_eq(wc.opcode, EFI_WC_SEND);
		got++;
	}
	ck_assert(settle(&t, &got));
	ck_assert_int_eq(got, 2);
	ck_assert_str_eq((char *)dst[3], "one");

	/* a message over every other QP, all at once */
	for (int i = 0; i < NQP; i++)
		if (i != 3)
			post_send1(q[0][i], ms, src, 4);
	ck_assert(settle(&t, &got));
	ck_assert_int_eq(got, 2 * NQP);

	for (int s = 0; s < 2; s++)
		for (int i = 0; i < NQP; i++)
			ck_assert_int_eq(efi_destroy_qp(q[s][i]), 0);
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	tpair_close(&t);
}
END_TEST

/* A CQ loses a completion: every QP of it fails, the idle ones too (they
 * are not on the ring when it happens). */
START_TEST(idle_qp_fails_on_cq_loss)
{
	struct tpair t;
	struct efi_qp *q[2][NQP];
	static uint8_t src[8];
	struct efi_wc wc[64];
	struct efi_qp_attr qa;
	struct efi_qp_init_attr qia;
	struct efi_cq *small = NULL;
	int r = 0;

	tpair_open(&t, 1500, NULL);
	small = efi_create_cq(t.ctx[0], 3, NULL, NULL, 0);
	ck_assert_ptr_nonnull(small);
	connect_many(&t, q, small, 0);
	ck_assert(settle(&t, NULL));
	struct efi_mr *ms = efi_reg_mr(t.pd[0], src, sizeof(src), EFI_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(ms);
	/* side 1 posted no receive and allows no RNR retry: each send
	 * completes with an error, more of them than the small CQ holds */
	for (int i = 0; i < 8; i++)
		post_send1(q[0][i], ms, src, 8);
	for (int tries = 0; tries < 20000; tries++) {
		r = efi_poll_cq(small, 64, wc);
		if (r < 0)
			break;
		usleep(500);
	}
	ck_assert_int_eq(r, -EOVERFLOW);
	/* every QP of the small CQ, whether it ever had work or not */
	for (int i = 0; i < NQP; i++) {
		ck_assert_int_eq(efi_query_qp(q[0][i], &qa, EFI_QP_STATE, &qia), 0);
		ck_assert_msg(qa.qp_state == EFI_QPS_ERR, "QP %d (%s) is in state %d", i,
			      i < 8 ? "busy" : "idle", qa.qp_state);
	}
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < NQP; i++)
			ck_assert_int_eq(efi_destroy_qp(q[s][i]), 0);
	efi_dereg_mr(ms);
	ck_assert_int_eq(efi_destroy_cq(small), 0);
	tpair_close(&t);
}
END_TEST

/* A new QP's tail-loss probe timeout before it has a sample of its own:
 * the default (twice the target delay) while its peer's other QPs measure
 * less, twice theirs once they measure more; a QP with samples of its own
 * goes by them.  The retransmission timeout of a new QP stays its verbs
 * timeout. */
/* The probe timeout a QP with samples of its own gets: twice its largest
 * smoothed RTT (ctx->lock held).  What the samples are depends on the
 * machine's load, so the test computes, not assumes, them. */
static uint64_t own_pto(const struct efi_qp_int *qp)
{
	uint64_t srtt = 0;
	for (unsigned i = 0; i < qp->npaths; i++)
		if (qp->paths[i].rtt.samples && qp->paths[i].rtt.srtt_ns > srtt)
			srtt = qp->paths[i].rtt.srtt_ns;
	ck_assert_uint_gt(srtt, 0);
	return 2 * srtt > qp->ctx->ccp.tlp_min_ns ? 2 * srtt : qp->ctx->ccp.tlp_min_ns;
}

/* ... and one without: twice the default or the peer's estimate, the
 * larger (ctx->lock held). */
static uint64_t peer_pto(const struct efi_qp_int *qp, const struct efi_rtt_peer *pr)
{
	uint64_t srtt = qp->ctx->ccp.target_delay_ns;
	for (unsigned i = 0; i < qp->npaths && i < EFI_RTT_PEER_PATHS; i++)
		if (pr->path[i].samples && pr->path[i].srtt_ns > srtt)
			srtt = pr->path[i].srtt_ns;
	return 2 * srtt > qp->ctx->ccp.tlp_min_ns ? 2 * srtt : qp->ctx->ccp.tlp_min_ns;
}

START_TEST(new_qp_goes_by_its_peers_rtt)
{
	struct tpair t;
	struct efi_qp *q[2][NQP];
	static uint8_t src[8], dst[NQP][8];
	int got = 0;

	tpair_open(&t, 1500, NULL);
	connect_many(&t, q, NULL, 7);
	struct efi_qp_int *a = qp_of(q[0][0]), *b = qp_of(q[0][1]);
	struct efi_context_int *ctx = ctx_of(t.ctx[0]);
	const uint64_t dflt = 2 * ctx->ccp.target_delay_ns;
	struct efi_mr *ms = efi_reg_mr(t.pd[0], src, sizeof(src), EFI_ACCESS_LOCAL_WRITE);
	struct efi_mr *md = efi_reg_mr(t.pd[1], dst, sizeof(dst), EFI_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(ms);
	ck_assert_ptr_nonnull(md);

	pthread_mutex_lock(&ctx->lock);
	uint64_t rto_cap = a->rto_ns;	/* timeout 14: 67 ms */
	ck_assert_uint_eq(efi_retx_pto_ns(b), dflt);
	ck_assert_uint_eq(efi_retx_rto_ns(b), rto_cap);
	pthread_mutex_unlock(&ctx->lock);
	/* QP a measures its RTT (a few messages; microseconds here) */
	for (int k = 0; k < 4; k++) {
		post_recv1(q[1][0], md, dst[0], sizeof(dst[0]));
		post_send1(q[0][0], ms, src, sizeof(src));
		ck_assert(settle(&t, &got));
	}
	ck_assert_int_eq(got, 8);
	pthread_mutex_lock(&ctx->lock);
	ck_assert_uint_gt(a->paths[0].rtt.samples, 0);
	ck_assert_uint_eq(b->paths[0].rtt.samples, 0);
	/* a goes by its own samples; b, without, by the default or its
	 * peer's estimate (a's samples), never below the default */
	struct efi_rtt_peer *pr = efi_rtt_peer_find(&ctx->rtt_peers, b->peer.sin6_addr.s6_addr, false);
	ck_assert_ptr_nonnull(pr);
	ck_assert_uint_gt(pr->path[0].samples, 0);
	ck_assert_uint_eq(efi_retx_pto_ns(a), own_pto(a));
	ck_assert_uint_eq(efi_retx_pto_ns(b), peer_pto(b, pr));
	ck_assert_uint_ge(efi_retx_pto_ns(b), dflt);
	/* the peer's queue grows to 10 ms (its QPs' samples say so): b,
	 * without a sample of its own, waits twice that; a goes by its own */
	for (int k = 0; k < 100; k++)
		efi_rtt_sample(&pr->path[0], 10u * 1000 * 1000);
	ck_assert_uint_gt(efi_retx_pto_ns(b), dflt);
	ck_assert_uint_eq(efi_retx_pto_ns(b), peer_pto(b, pr));
	ck_assert_uint_eq(efi_retx_pto_ns(b), 2 * pr->path[0].srtt_ns);
	ck_assert_uint_eq(efi_retx_pto_ns(a), own_pto(a));
	ck_assert_uint_eq(efi_retx_rto_ns(b), rto_cap);
	pthread_mutex_unlock(&ctx->lock);

	for (int s = 0; s < 2; s++)
		for (int i = 0; i < NQP; i++)
			ck_assert_int_eq(efi_destroy_qp(q[s][i]), 0);
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	tpair_close(&t);
}
END_TEST

/* The table alone: the first peers met keep their place, lookups find
 * them, and a peer with no room has no entry (its QPs go by defaults). */
START_TEST(rtt_peer_table)
{
	struct efi_rtt_peers t = { 0 };
	uint8_t addr[16] = { 0 };
	struct efi_rtt_peer *first;
	unsigned made = 0;

	ck_assert_ptr_null(efi_rtt_peer_find(&t, addr, true));	/* not allocated */
	efi_rtt_peers_alloc(&t);
	ck_assert_ptr_nonnull(t.slot);
	first = efi_rtt_peer_find(&t, addr, true);
	ck_assert_ptr_nonnull(first);
	efi_rtt_sample(&first->path[1], 5000);
	for (unsigned i = 1; i < 4 * EFI_RTT_PEER_SLOTS; i++) {
		memcpy(addr, &i, sizeof(i));
		made += efi_rtt_peer_find(&t, addr, true) != NULL;
	}
	ck_assert_uint_lt(made, EFI_RTT_PEER_SLOTS);	/* full: no more */
	ck_assert_uint_ge(made, EFI_RTT_PEER_SLOTS / 2);
	memset(addr, 0, sizeof(addr));
	ck_assert_ptr_eq(efi_rtt_peer_find(&t, addr, false), first);
	ck_assert_uint_eq(first->path[1].srtt_ns, 5000);
	addr[15] = 0xee;
	addr[14] = 0xee;
	addr[13] = 0xee;
	addr[12] = 0xee;
	addr[11] = 0xee;
	ck_assert_ptr_null(efi_rtt_peer_find(&t, addr, false));	/* never met */
	efi_rtt_peers_free(&t);
	ck_assert_ptr_null(t.slot);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("efi_many");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, idle_qps_leave_the_ring);
	tcase_add_test(tc, idle_qp_fails_on_cq_loss);
	tcase_add_test(tc, new_qp_goes_by_its_peers_rtt);
	tcase_add_test(tc, rtt_peer_table);
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
	return failed ? 1 : 0;
}
