/* SPDX-License-Identifier: MIT */
/*
 * libefi under stress, in process over the in-memory wire: several threads
 * posting and polling on their own QPs of two shared contexts, and hostile
 * datagrams (random bytes, mutated headers, forged Writes) thrown at a
 * context.
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "efi_testutil.h"
#include "libefi/efi_int.h"

static const struct efi_qp_cap default_cap = {
	.max_send_wr = 256, .max_recv_wr = 256, .max_send_sge = 16, .max_recv_sge = 16,
	.max_inline_data = 256,
};

static struct efi_mr *reg(struct efi_pd *pd, void *buf, size_t len)
{
	return treg(pd, buf, len, EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_WRITE | EFI_ACCESS_REMOTE_READ | EFI_ACCESS_REMOTE_ATOMIC);
}

/* Several threads, each with its own QPs and CQs on the same two contexts,
 * posting and polling at once: Sends byte-exact, and fetch-and-adds from all
 * threads on one counter add up exactly. */
#define NTHREADS 4
struct thr {
	struct tpair *t;
	struct efi_cq *cq[2];
	struct efi_qp *qp[2];
	uint64_t *counter;
	uint32_t counter_rkey;
	int errors;
};

static void *thr_main(void *arg)
{
	struct thr *h = arg;
	struct tpair *t = h->t;
	uint8_t *src = tpattern(10000, (unsigned)(uintptr_t)h), *dst = calloc(1, 10000);
	uint64_t res = 0;
	struct efi_mr *ms = efi_reg_mr(t->pd[0], src, 10000, EFI_ACCESS_LOCAL_WRITE);
	struct efi_mr *md = efi_reg_mr(t->pd[1], dst, 10000, EFI_ACCESS_LOCAL_WRITE);
	struct efi_mr *mres = efi_reg_mr(t->pd[0], &res, 8, EFI_ACCESS_LOCAL_WRITE);
	struct efi_wc wc;

	if (!ms || !md || !mres) {
		h->errors++;
		return NULL;
	}
	for (int i = 0; i < 200 && !h->errors; i++) {
		struct efi_sge s = { (uintptr_t)src, 10000, ms->lkey }, d = { (uintptr_t)dst, 10000, md->lkey };
		struct efi_sge r8 = { (uintptr_t)&res, 8, mres->lkey };
		struct efi_recv_wr rw = { .wr_id = 1, .sg_list = &d, .num_sge = 1 }, *rb;
		struct efi_send_wr sw = { .wr_id = 2, .sg_list = &s, .num_sge = 1, .opcode = EFI_WR_SEND,
					  .send_flags = EFI_SEND_SIGNALED }, *sb;
		struct efi_send_wr aw = { .wr_id = 3, .sg_list = &r8, .num_sge = 1,
					  .opcode = EFI_WR_ATOMIC_FETCH_AND_ADD, .send_flags = EFI_SEND_SIGNALED };
		aw.wr.atomic.remote_addr = (uintptr_t)h->counter;
		aw.wr.atomic.rkey = h->counter_rkey;
		aw.wr.atomic.compare_add = 1;
		if (efi_post_recv(h->qp[1], &rw, &rb) || efi_post_send(h->qp[0], &sw, &sb) ||
		    efi_post_send(h->qp[0], &aw, &sb)) {
			h->errors++;
			break;
		}
		if (tpoll(h->cq[1], &wc, 1, 10000) != 1 || wc.status != EFI_WC_SUCCESS || wc.byte_len != 10000 ||
		    memcmp(src, dst, 10000) != 0)
			h->errors++;
		for (int k = 0; k < 2; k++)
			if (tpoll(h->cq[0], &wc, 1, 10000) != 1 || wc.status != EFI_WC_SUCCESS)
				h->errors++;
		memset(dst, 0, 10000);
	}
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	efi_dereg_mr(mres);
	free(src);
	free(dst);
	return NULL;
}

START_TEST(test_threads)
{
	struct tpair t;
	struct thr h[NTHREADS];
	pthread_t th[NTHREADS];
	uint64_t *counter = aligned_alloc(8, 8);
	union efi_gid g[2];

	*counter = 0;
	tpair_open(&t, 1500, NULL);
	tpair_connect(&t, &default_cap, 0, 7, 1, 14, 7);
	struct efi_mr *mc = reg(t.pd[1], counter, 8);
	efi_query_gid(t.ctx[0], 1, 0, &g[0]);
	efi_query_gid(t.ctx[1], 1, 0, &g[1]);
	for (int i = 0; i < NTHREADS; i++) {
		h[i] = (struct thr){ .t = &t, .counter = counter, .counter_rkey = mc->rkey };
		for (int s = 0; s < 2; s++) {
			struct efi_qp_init_attr ia = { .qp_type = EFI_QPT_RC, .cap = default_cap };
			h[i].cq[s] = efi_create_cq(t.ctx[s], 64, NULL, NULL, 0);
			ck_assert_ptr_nonnull(h[i].cq[s]);
			ia.send_cq = ia.recv_cq = h[i].cq[s];
			h[i].qp[s] = efi_create_qp(t.pd[s], &ia);
			ck_assert_ptr_nonnull(h[i].qp[s]);
		}
		for (int s = 0; s < 2; s++)
			ck_assert_int_eq(tqp_to_rts(h[i].qp[s], h[i].qp[!s]->qp_num, &g[!s], 1000u * (unsigned)i,
						    1000u * (unsigned)i, 7, 1, 14, 7, EFI_MTU_1024), 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, thr_main, &h[i]), 0);
	for (int i = 0; i < NTHREADS; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_int_eq(h[i].errors, 0);
	}
	ck_assert_uint_eq(*counter, 200u * NTHREADS);
	for (int i = 0; i < NTHREADS; i++)
		for (int s = 0; s < 2; s++) {
			ck_assert_int_eq(efi_destroy_qp(h[i].qp[s]), 0);
			ck_assert_int_eq(efi_destroy_cq(h[i].cq[s]), 0);
		}
	efi_dereg_mr(mc);
	tpair_close(&t);
	free(counter);
}
END_TEST

/* Hostile input: random datagrams and random mutations of valid headers
 * reach a context; nothing crashes, drops are counted, a forged Write with
 * a guessed rkey never touches memory. */
START_TEST(test_hostile)
{
	struct tpair t;
	struct efi_context_int *c1;
	uint8_t *victim = calloc(1, 65536), pkt[2048];
	struct efi_counters cc;
	uint64_t x = 88172645463325252ull;
	struct efi_wire *w1;

	tpair_open(&t, 1500, NULL);
	tpair_connect(&t, &default_cap, 0, 7, 1, 14, 7);
	c1 = (struct efi_context_int *)t.ctx[1];
	w1 = c1->wire;
	struct efi_mr *mv = reg(t.pd[1], victim, 65536);
	for (int i = 0; i < 20000; i++) {
		struct efi_pkt h;
		uint32_t len;
		size_t hl;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memset(&h, 0, sizeof(h));
		h.version = EFI_WIRE_VERSION;
		h.opcode = (uint8_t)(x % EFI_OP_COUNT);
		h.dest_qpn = (x >> 8) & 1 ? t.qp[1]->qp_num : (uint32_t)(x >> 16) & EFI_QPN_MASK;
		h.src_qpn = (x >> 9) & 1 ? t.qp[0]->qp_num : (uint32_t)(x >> 20) & EFI_QPN_MASK;
		h.psn = (uint32_t)(x >> 24) & EFI_PSN_MASK;
		h.reth.va = (uintptr_t)victim + ((x >> 30) & 0xffff);
		h.reth.rkey = mv->rkey ^ (uint32_t)((x >> 40) | 1);	/* never the right key */
		h.reth.dma_len = (uint32_t)(x >> 48) & 0x7ff;
		h.atomic.va = h.reth.va & ~7ull;
		h.atomic.rkey = h.reth.rkey;
		h.aeth.syndrome = (uint8_t)(x >> 5) & 0x1f;
		hl = efi_pkt_build_hdr(pkt, sizeof(pkt), &h);
		len = (uint32_t)hl + (uint32_t)((x >> 33) % 1400);
		if (!hl || (x >> 60) == 0) {
			for (uint32_t k = 0; k < sizeof(pkt); k++)
				pkt[k] = (uint8_t)(x >> (k % 57));
			len = (uint32_t)(x % sizeof(pkt));
		} else if ((x >> 58) & 1) {
			pkt[(x >> 3) % hl] ^= (uint8_t)(x >> 50);	/* flip a header byte */
		}
		if (len > sizeof(pkt))
			len = sizeof(pkt);
		tw_inject(w1, pkt, len);
		if (i % 256 == 0)
			efi_poll_cq(t.cq[1], 0, NULL);
	}
	for (int i = 0; i < 1000; i++)
		efi_poll_cq(t.cq[1], 0, NULL);
	usleep(100000);
	for (int i = 0; i < 65536; i++)
		ck_assert_msg(victim[i] == 0, "victim byte %d written", i);
	ck_assert_int_eq(efi_query_context_counters(t.ctx[1], &cc), 0);
	ck_assert_uint_gt(cc.drops, 1000);
	ck_assert_uint_gt(cc.drop_reasons[EFI_DROP_MALFORMED], 0);
	ck_assert_uint_gt(cc.drop_reasons[EFI_DROP_UNKNOWN_QP], 0);
	ck_assert_uint_gt(cc.drop_reasons[EFI_DROP_BAD_SOURCE], 0);
	efi_dereg_mr(mv);
	tpair_close(&t);
	free(victim);
}
END_TEST

/* Forges one Read request of n response packets from qp[0] to qp[1]. */
static uint32_t forge_read(uint8_t *pkt, size_t cap, const struct tpair *t, uint32_t psn, uint64_t va,
			   uint32_t rkey, uint32_t n)
{
	struct efi_pkt h;

	memset(&h, 0, sizeof(h));
	h.version = EFI_WIRE_VERSION;
	h.opcode = EFI_OP_READ_REQUEST;
	h.dest_qpn = t->qp[1]->qp_num;
	h.src_qpn = t->qp[0]->qp_num;
	h.psn = psn & EFI_PSN_MASK;
	h.flags = EFI_PKT_F_ACKREQ;
	h.tx_ts = 1;
	h.reth.va = va;
	h.reth.rkey = rkey;
	h.reth.dma_len = n * qp_of(t->qp[1])->seg;
	return (uint32_t)efi_pkt_build_hdr(pkt, cap, &h);
}

/* A Read request that arrives again while all of its responses are still
 * queued (a requester's probe or timeout while the responder was
 * stalled) changes nothing: the responses leave once each, and the Read
 * queued behind it is not dropped.  Two Reads and a copy of the first
 * reach the responder in one receive batch (both contexts' locks held
 * meanwhile, so no transport runs in between); the test plays the
 * requester and counts the responses. */
START_TEST(test_dup_read_while_queued)
{
	enum { N = 64 };
	struct tpair t;
	struct efi_context_int *c0, *c1;
	uint8_t *src = calloc(1, 2 * N * 4096), pkt[EFI_RXBUF_SIZE], req[3][256];
	uint32_t len[3], psn, seen[2 * N] = { 0 }, others = 0;
	int got;

	tpair_open(&t, 1500, NULL);
	tpair_connect(&t, &default_cap, 0, 7, 1, 14, 7);
	c0 = (struct efi_context_int *)t.ctx[0];
	c1 = (struct efi_context_int *)t.ctx[1];
	struct efi_mr *m = reg(t.pd[1], src, 2 * N * 4096);
	pthread_mutex_lock(&c0->lock);	/* ctx 0 takes nothing off the wire: the test is the requester */
	pthread_mutex_lock(&c1->lock);
	psn = qp_of(t.qp[1])->rcv_psn;
	len[0] = forge_read(req[0], sizeof(req[0]), &t, psn, (uintptr_t)src, m->rkey, N);
	len[1] = forge_read(req[1], sizeof(req[1]), &t, psn + N,
			    (uintptr_t)src + (uint64_t)N * qp_of(t.qp[1])->seg, m->rkey, N);
	ck_assert(len[0] && len[1]);
	memcpy(req[2], req[0], len[0]);
	len[2] = len[0];
	for (int i = 0; i < 3; i++)
		tw_inject(c1->wire, req[i], len[i]);
	pthread_mutex_unlock(&c1->lock);
	/* Run the responder until every response left (a loaded machine may
	 * give its transport few turns: 200 polls were not always enough),
	 * then 200 polls more, in which nothing may leave twice. */
	uint32_t total = 0, extra = 0;
	uint64_t give_up = efi_now_ns() + 10ull * 1000000000;
	while (extra < 200 && efi_now_ns() < give_up) {
		efi_poll_cq(t.cq[1], 0, NULL);
		if (total >= 2 * N)
			extra++;
		while ((got = tw_take(c1->wire, pkt, sizeof(pkt))) >= 0) {
			struct efi_pkt r;
			uint32_t k;

			if (efi_pkt_parse(pkt, (size_t)got, &r) != 0 || r.opcode < EFI_OP_READ_RESP_FIRST ||
			    r.opcode > EFI_OP_READ_RESP_ONLY) {
				others++;
				continue;
			}
			k = (r.psn - psn) & EFI_PSN_MASK;
			ck_assert_uint_lt(k, 2 * N);
			seen[k]++;
			total++;
		}
	}
	pthread_mutex_unlock(&c0->lock);
	for (uint32_t k = 0; k < 2 * N; k++)
		ck_assert_msg(seen[k] == 1, "response %u sent %u times (%u other packets)", k, seen[k], others);
	efi_dereg_mr(m);
	tpair_close(&t);
	free(src);
}
END_TEST

/* A Read asked for again while Reads behind it are still queued (a
 * requester that saw a gap in its responses asks for that gap alone): only
 * what left already is sent again, and the queued ones leave once each.
 * The responder is driven by hand under its lock (no race with its
 * progress thread): a Read longer than one transport run sends (64
 * batches of 64), a second Read queued behind it, then the copy of the
 * first from packet 10. */
START_TEST(test_replay_keeps_reads_behind)
{
	enum { N1 = 64 * 64 + 104, N2 = 64, FROM = 10 };
	struct tpair t;
	struct efi_context_int *c0, *c1;
	struct efi_qp_int *q1;
	uint8_t *src, pkt[EFI_RXBUF_SIZE], req[256];
	uint32_t psn, seg, *seen, others = 0, first_pass = 0;
	struct efi_pkt h;
	int got;

	tpair_open(&t, 1500, NULL);
	tpair_connect(&t, &default_cap, 0, 7, 1, 14, 7);
	c0 = (struct efi_context_int *)t.ctx[0];
	c1 = (struct efi_context_int *)t.ctx[1];
	q1 = qp_of(t.qp[1]);
	seg = q1->seg;
	src = calloc(N1 + N2, seg);
	seen = calloc(N1 + N2, sizeof(*seen));
	ck_assert(src && seen);
	struct efi_mr *m = reg(t.pd[1], src, (size_t)(N1 + N2) * seg);
	pthread_mutex_lock(&c0->lock);	/* the test is the requester */
	pthread_mutex_lock(&c1->lock);
	psn = q1->rcv_psn;
	for (int i = 0; i < 3; i++) {
		uint32_t p = i == 1 ? psn + N1 : psn + (i ? FROM : 0);
		uint32_t n = i == 0 ? N1 : i == 1 ? N2 : N1 - FROM;
		uint64_t va = (uintptr_t)src + (uint64_t)(p - psn) * seg;
		uint32_t len = forge_read(req, sizeof(req), &t, p, va, m->rkey, n);

		ck_assert_uint_gt(len, 0);
		ck_assert_int_eq(efi_pkt_parse(req, len, &h), 0);
		efi_resp_handle(q1, &h);
		if (i == 1) {
			/* one transport run: the first Read is not sent in full */
			efi_xport_flush_qp(c1, q1);
			while ((got = tw_take(c1->wire, pkt, sizeof(pkt))) >= 0)
				first_pass++;
			ck_assert_uint_lt(first_pass, N1);
		}
	}
	for (int i = 0; i < 100 && q1->respq_count; i++)
		efi_xport_flush_qp(c1, q1);
	while ((got = tw_take(c1->wire, pkt, sizeof(pkt))) >= 0) {
		struct efi_pkt r;
		uint32_t k;

		if (efi_pkt_parse(pkt, (size_t)got, &r) != 0 || r.opcode < EFI_OP_READ_RESP_FIRST ||
		    r.opcode > EFI_OP_READ_RESP_ONLY) {
			others++;
			continue;
		}
		k = (r.psn - psn) & EFI_PSN_MASK;
		ck_assert_uint_lt(k, N1 + N2);
		seen[k]++;
	}
	pthread_mutex_unlock(&c1->lock);
	pthread_mutex_unlock(&c0->lock);
	/* the first pass is counted apart: responses k < first_pass left then */
	for (uint32_t k = 0; k < N1 + N2; k++) {
		uint32_t want = k >= FROM && k < first_pass ? 1 : k < first_pass ? 0 : 1;
		ck_assert_msg(seen[k] == want, "response %u sent %u times after the copy, not %u (first pass %u)", k,
			      seen[k], want, first_pass);
	}
	ck_assert_uint_eq(others, 0);
	efi_dereg_mr(m);
	tpair_close(&t);
	free(src);
	free(seen);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("efi_stress");
	TCase *tc = tcase_create("stress");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_dup_read_while_queued);
	tcase_add_test(tc, test_replay_keeps_reads_behind);
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
