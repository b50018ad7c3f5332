/* SPDX-License-Identifier: MIT */
/*
 * Memory per QP (issue 18): what a QP holds beyond the rings the application
 * asked for, idle, after a burst and under loss, by libefi's own accounting
 * (efi_qp_mem: the QP, the resident pages of its send records, its reorder
 * buffer) and, outside sanitizer builds, by the heap (mallinfo2) as well.
 * Prints the table; asserts that an idle QP holds at most 16 KiB, and that a
 * QP whose requests arrived out of order (loss, duplication and reordering
 * on the in-memory wire) delivers every byte and gives its reorder memory
 * back once its requests arrive in order again.  No clocks.
 */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efi_testutil.h"
#include "libefi/efi_int.h"

#define KIB 1024u
#define IDLE_MAX (16u * KIB)
#define NQP 64

#if defined(__SANITIZE_ADDRESS__)
#define HEAP_COUNTS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HEAP_COUNTS 0
#endif
#endif
#ifndef HEAP_COUNTS
#define HEAP_COUNTS 1
#endif

/* The smallest rings: one WQE each way (two slots), one SGE, no inline. */
static const struct efi_qp_cap small_cap = {
	.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1,
};

static const struct efi_qp_cap big_cap = {
	.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1,
};

static size_t held(const struct efi_qp *qp, struct efi_qp_mem *m)
{
	efi_qp_mem(qp, m);
	return m->qp_struct + m->txrec_resident + m->reorder + m->read_early;
}

static size_t heap_now(void)
{
#if HEAP_COUNTS
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
#else
	return 0;
#endif
}

static void row(const char *what, const struct efi_qp *qp)
{
	struct efi_qp_mem m;
	size_t n = held(qp, &m);
	printf("  %-26s %8zu B  (qp %zu, send records %zu of %zu resident, reorder %zu; context reorder %zu)\n",
	       what, n, m.qp_struct, m.txrec_resident, m.txrec_reserved, m.reorder, m.ctx_reorder);
}

/* Idle connected QPs, many of them: each holds at most 16 KiB. */
START_TEST(idle_qps)
{
	struct tpair t;
	struct efi_qp *q[2][NQP];
	size_t before, after;
	struct efi_qp_init_attr ia;

	tpair_open(&t, 4096, NULL);
	before = heap_now();
	for (int i = 0; i < NQP; i++)
		for (int s = 0; s < 2; s++) {
			memset(&ia, 0, sizeof(ia));
			ia.qp_type = EFI_QPT_RC;
			ia.send_cq = ia.recv_cq = t.cq[s];
			ia.cap = small_cap;
			q[s][i] = efi_create_qp(t.pd[s], &ia);
			ck_assert_ptr_nonnull(q[s][i]);
		}
	for (int i = 0; i < NQP; i++) {
		union efi_gid g[2];
		struct efi_port_attr pa;
		for (int s = 0; s < 2; s++)
			ck_assert_int_eq(efi_query_gid(t.ctx[s], 1, 0, &g[s]), 0);
		for (int s = 0; s < 2; s++) {
			ck_assert_int_eq(efi_query_port(t.ctx[s], 1, &pa), 0);
			ck_assert_int_eq(tqp_to_rts(q[s][i], q[!s][i]->qp_num, &g[!s], 100, 100, 7, 1, 14, 7,
						    pa.active_mtu), 0);
		}
	}
	after = heap_now();
	printf("memory per QP beyond its rings (%d idle connected QPs a side):\n", NQP);
	row("idle, connected", q[0][0]);
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < NQP; i++) {
			struct efi_qp_mem m;
			ck_assert_uint_le(held(q[s][i], &m), IDLE_MAX);
			ck_assert_uint_eq(m.reorder, 0);
		}
	if (HEAP_COUNTS) {
		/* the heap's view: the rings are two send WQEs with an SGE
		 * each, two receive WQEs with an SGE each */
		size_t rings = 2 * (sizeof(struct efi_swqe) + sizeof(struct efi_sge_int)) +
			       2 * (sizeof(struct efi_rwqe) + sizeof(struct efi_sge_int));
		size_t per = (after - before) / (2 * NQP);
		printf("  %-26s %8zu B  (heap per QP %zu, rings %zu)\n", "idle, by mallinfo2",
		       per > rings ? per - rings : 0, per, rings);
		ck_assert_uint_le(per - rings, IDLE_MAX);
	}
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < NQP; i++)
			ck_assert_int_eq(efi_destroy_qp(q[s][i]), 0);
	tpair_close(&t);
}
END_TEST

/* Sends len bytes from qp 0 to qp 1 (posting the receive first), polling
 * both sides; returns the largest reorder buffer qp 1 held meanwhile. */
static size_t send_and_check(struct tpair *t, size_t len, unsigned seed)
{
	uint8_t *src = tpattern(len, seed), *dst = calloc(1, len);
	struct efi_mr *ms = efi_reg_mr(t->pd[0], src, len, EFI_ACCESS_LOCAL_WRITE);
	struct efi_mr *md = efi_reg_mr(t->pd[1], dst, len, EFI_ACCESS_LOCAL_WRITE);
	struct efi_sge ss = { (uintptr_t)src, (uint32_t)len, 0 }, sd = { (uintptr_t)dst, (uint32_t)len, 0 };
	struct efi_send_wr wr, *bad;
	struct efi_recv_wr rw = { .wr_id = seed, .sg_list = &sd, .num_sge = 1 }, *rbad;
	int done = 0;
	size_t peak = 0;
	unsigned spins = 0;

	ck_assert_ptr_nonnull(dst);
	ck_assert_ptr_nonnull(ms);
	ck_assert_ptr_nonnull(md);
	ss.lkey = ms->lkey;
	sd.lkey = md->lkey;
	ck_assert_int_eq(efi_post_recv(t->qp[1], &rw, &rbad), 0);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = seed;
	wr.sg_list = &ss;
	wr.num_sge = 1;
	wr.opcode = EFI_WR_SEND;
	wr.send_flags = EFI_SEND_SIGNALED;
	ck_assert_int_eq(efi_post_send(t->qp[0], &wr, &bad), 0);
	while (done < 2) {
		struct efi_wc wc;
		struct efi_qp_mem m;
		for (int s = 0; s < 2; s++) {
			int n = efi_poll_cq(t->cq[s], 1, &wc);
			ck_assert_int_ge(n, 0);
			if (n) {
				ck_assert_msg(wc.status == EFI_WC_SUCCESS, "%s", efi_wc_status_str(wc.status));
				done++;
			}
		}
		efi_qp_mem(t->qp[1], &m);
		if (m.reorder > peak)
			peak = m.reorder;
		/* a bound on work, not on time: the transport runs in these
		 * calls and in its progress thread */
		ck_assert_uint_lt(++spins, 400000000u);
	}
	ck_assert_int_eq(memcmp(src, dst, len), 0);
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	free(src);
	free(dst);
	return peak;
}

/* A burst in order, then loss and reordering: every byte arrives, the
 * reorder buffer fills and, in order again, goes back. */
START_TEST(reorder_memory_comes_back)
{
	struct tpair t;
	struct tw_fault f = { .loss = 0.02, .dup = 0.01, .reorder = 0.05, .seed = 1812 + (uint64_t)_i * 31 };
	struct efi_counters c;
	struct efi_qp_mem m;
	size_t peak = 0;

	tpair_open(&t, 4096, &f);
	tpair_connect(&t, &big_cap, 0, 7, 1, 12 /* 16 ms */, 7);
	printf("seed %llu:\n", (unsigned long long)f.seed);
	row("idle, connected", t.qp[1]);
	ck_assert_uint_le(held(t.qp[1], &m), IDLE_MAX);

	/* several MB under loss, duplication and reordering */
	for (unsigned k = 0; k < 8; k++) {
		size_t p = send_and_check(&t, (size_t)1 << 20, k + 1);
		if (p > peak)
			peak = p;
	}
	efi_query_qp_counters(t.qp[0], &c);
	printf("  %-26s %8zu B  (at most: qp + all send records + the reorder buffer's peak %zu;"
	       " fast retransmits %llu, retransmissions %llu)\n",
	       "under loss, peak", peak + m.qp_struct + m.txrec_reserved, peak,
	       (unsigned long long)c.fast_retransmits, (unsigned long long)c.retransmissions);
	row("under loss, after", t.qp[1]);
	ck_assert_msg(peak > 0, "no packet was ever held: the test did not reorder");
	/* buffers of the packets' size (a link of 4096 bytes here), not of
	 * EFI_REORDER_PKT_MAX */
	ck_assert_uint_le(peak, (size_t)EFI_REORDER_SLOTS * (4096 + 64) + 24 * KIB);

	/* In order again: one packet at a time cannot overtake another.  The
	 * buffer stays empty for EFI_REORDER_CALM PSNs and its memory goes. */
	for (unsigned k = 0; k < EFI_REORDER_CALM + 16; k++)
		send_and_check(&t, 512, 100 + k);
	row("in order again", t.qp[1]);
	efi_qp_mem(t.qp[1], &m);
	ck_assert_uint_eq(m.reorder, 0);
	ck_assert_uint_eq(m.ctx_reorder, 0);
	tpair_close(&t);
}
END_TEST

/* In order: a burst leaves no reorder memory at all. */
START_TEST(burst_in_order)
{
	struct tpair t;
	size_t peak = 0;

	tpair_open(&t, 4096, NULL);
	tpair_connect(&t, &big_cap, 0, 7, 1, 14, 7);
	for (unsigned k = 0; k < 4; k++) {
		size_t p = send_and_check(&t, (size_t)4 << 20, k + 1);
		if (p > peak)
			peak = p;
	}
	printf("after an in-order burst of 16 MB (reorder peak %zu B):\n", peak);
	row("requester, after a burst", t.qp[0]);
	row("responder, after a burst", t.qp[1]);
	tpair_close(&t);
}
END_TEST

/* The reorder buffer alone: memory per packet held, the hysteresis, the
 * context's budget. */
START_TEST(reorder_hysteresis_and_budget)
{
	struct efi_reorder r;
	struct efi_pkt ack;
	uint8_t pkt[64] = { 1, 2, 3 };
	size_t ctx = 0, one;
	uint32_t base = 0xfffff0;	/* across the 24-bit wrap */

	memset(&r, 0, sizeof(r));
	r.ctx_bytes = &ctx;
	ck_assert_uint_eq(efi_reorder_bytes(&r), 0);
	/* a first episode: memory per packet held, all back when it ends */
	ck_assert_int_eq(efi_reorder_store(&r, base, efi_psn_add(base, 2), pkt, sizeof(pkt)), 0);
	one = efi_reorder_bytes(&r);
	ck_assert_uint_gt(one, EFI_REORDER_SLOTS * 22);
	/* the slot table, 22 bytes per slot (pointer, length, PSN, spare),
	 * 1024 slots since the window went wide, and one buffer the size of
	 * the packet: not one of EFI_REORDER_PKT_MAX */
	ck_assert_uint_lt(one, EFI_REORDER_SLOTS * 22 + 1 * KIB);
	ck_assert_int_eq(efi_reorder_store(&r, base, efi_psn_add(base, 3), pkt, sizeof(pkt)), 0);
	size_t per = efi_reorder_bytes(&r) - one;	/* a 64-byte packet's buffer */
	ck_assert_uint_ge(per, sizeof(pkt));
	ck_assert_uint_lt(per, sizeof(pkt) + 64);
	ck_assert_uint_eq(ctx, efi_reorder_bytes(&r));
	efi_reorder_remove(&r, efi_psn_add(base, 2));
	ck_assert_uint_eq(efi_reorder_bytes(&r), one + per);	/* a spare now */
	efi_reorder_remove(&r, efi_psn_add(base, 3));
	ck_assert_uint_eq(efi_reorder_bytes(&r), 0);
	ck_assert_uint_eq(ctx, 0);

	/* a second one soon after: the memory stays when it ends ... */
	base = efi_psn_add(base, 10);
	ck_assert_int_eq(efi_reorder_store(&r, base, efi_psn_add(base, 1), pkt, sizeof(pkt)), 0);
	efi_reorder_remove(&r, efi_psn_add(base, 1));
	ck_assert_uint_eq(efi_reorder_bytes(&r), one);
	/* ... a third reuses it, without allocating ... */
	ck_assert_int_eq(efi_reorder_store(&r, base, efi_psn_add(base, 5), pkt, sizeof(pkt)), 0);
	ck_assert_uint_eq(efi_reorder_bytes(&r), one);
	ck_assert(efi_reorder_sack(&r, base, &ack));
	efi_reorder_remove(&r, efi_psn_add(base, 5));
	ck_assert_uint_eq(efi_reorder_bytes(&r), one);
	/* ... and goes once the ACKs saw it empty for EFI_REORDER_CALM PSNs */
	for (uint32_t k = 6; k < 6 + EFI_REORDER_CALM; k += 64) {
		ck_assert(!efi_reorder_sack(&r, efi_psn_add(base, k), &ack));
		ck_assert_uint_eq(efi_reorder_bytes(&r), one);
	}
	ck_assert(!efi_reorder_sack(&r, efi_psn_add(base, 6 + EFI_REORDER_CALM), &ack));
	ck_assert_uint_eq(efi_reorder_bytes(&r), 0);
	ck_assert_uint_eq(ctx, 0);

	/* the context's budget: beyond it nothing is kept */
	ctx = EFI_REORDER_CTX_MAX - 100;
	ck_assert_int_eq(efi_reorder_store(&r, base, efi_psn_add(base, 1), pkt, sizeof(pkt)), ENOMEM);
	ck_assert_uint_eq(efi_reorder_bytes(&r), 0);
	ck_assert_uint_eq(ctx, EFI_REORDER_CTX_MAX - 100);
	ctx = EFI_REORDER_CTX_MAX - one;	/* room for the table and one packet */
	ck_assert_int_eq(efi_reorder_store(&r, base, efi_psn_add(base, 1), pkt, sizeof(pkt)), 0);
	ck_assert_int_eq(efi_reorder_store(&r, base, efi_psn_add(base, 2), pkt, sizeof(pkt)), ENOMEM);
	ck_assert(efi_reorder_has(&r, efi_psn_add(base, 1)));
	ck_assert_uint_eq(ctx, EFI_REORDER_CTX_MAX);
	efi_reorder_free(&r);
	ck_assert_uint_eq(ctx, EFI_REORDER_CTX_MAX - one);
}
END_TEST

/* Fills a datagram of len bytes with a pattern of seed. */
static void fill(uint8_t *b, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 7 + seed);
}

/* Each packet held takes a buffer of about its own size, so that a 1500-byte
 * link's packets do not take a jumbo packet's buffer each; a buffer too
 * small for the packet that comes to reuse it (a spare, or a slot's stale
 * copy) is replaced, and the budget counts what is allocated. */
START_TEST(reorder_buffers_fit_packets)
{
	static uint8_t big[EFI_REORDER_PKT_MAX], small[1500];
	struct efi_reorder r;
	size_t ctx = 0, len, table, b0;
	const uint8_t *got;
	uint32_t base = 1000;

	memset(&r, 0, sizeof(r));
	r.ctx_bytes = &ctx;
	fill(small, sizeof(small), 1);
	fill(big, sizeof(big), 2);
	ck_assert_int_eq(efi_reorder_store(&r, base, base + 1, small, 100), 0);
	table = efi_reorder_bytes(&r);
	ck_assert_int_eq(efi_reorder_store(&r, base, base + 2, small, sizeof(small)), 0);
	b0 = efi_reorder_bytes(&r) - table;	/* a 1500-byte packet's buffer */
	ck_assert_uint_ge(b0, sizeof(small));
	ck_assert_uint_lt(b0, sizeof(small) + 128);
	/* the largest there is: a jumbo link's full segment */
	ck_assert_int_eq(efi_reorder_store(&r, base, base + 3, big, sizeof(big)), 0);
	ck_assert_uint_ge(efi_reorder_bytes(&r) - table - b0, sizeof(big));
	ck_assert_uint_eq(ctx, efi_reorder_bytes(&r));
	/* each comes back as it went in */
	got = efi_reorder_get(&r, base + 3, &len);
	ck_assert_uint_eq(len, sizeof(big));
	ck_assert_int_eq(memcmp(got, big, len), 0);
	got = efi_reorder_get(&r, base + 2, &len);
	ck_assert_uint_eq(len, sizeof(small));
	ck_assert_int_eq(memcmp(got, small, len), 0);

	/* The 100-byte one's buffer goes spare; a jumbo packet that takes it
	 * must not overrun it (ASan would say so): it gets a new one. */
	efi_reorder_remove(&r, base + 1);
	ck_assert_int_eq(efi_reorder_store(&r, base, base + 4, big, sizeof(big)), 0);
	got = efi_reorder_get(&r, base + 4, &len);
	ck_assert_uint_eq(len, sizeof(big));
	ck_assert_int_eq(memcmp(got, big, len), 0);
	ck_assert_uint_eq(ctx, efi_reorder_bytes(&r));

	/* A slot's stale copy (its PSN was taken in order from another
	 * arrival and never removed) is overwritten by the PSN a window
	 * later; a larger one needs a larger buffer. */
	base += 3;	/* 1002 (1500 bytes, held) was taken in order */
	ck_assert(efi_reorder_has(&r, base - 1));
	ck_assert(!efi_reorder_has(&r, base - 1 + EFI_REORDER_SLOTS));
	fill(big, sizeof(big), 3);
	ck_assert_int_eq(efi_reorder_store(&r, base, base - 1 + EFI_REORDER_SLOTS, big, sizeof(big)), 0);
	got = efi_reorder_get(&r, base - 1 + EFI_REORDER_SLOTS, &len);
	ck_assert_uint_eq(len, sizeof(big));
	ck_assert_int_eq(memcmp(got, big, len), 0);
	ck_assert_uint_eq(ctx, efi_reorder_bytes(&r));

	efi_reorder_free(&r);
	ck_assert_uint_eq(efi_reorder_bytes(&r), 0);
	ck_assert_uint_eq(ctx, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("efi_mem");
	TCase *tc = tcase_create("mem");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, reorder_hysteresis_and_budget);
	tcase_add_test(tc, reorder_buffers_fit_packets);
	tcase_add_test(tc, idle_qps);
	tcase_add_test(tc, burst_in_order);
	tcase_add_loop_test(tc, reorder_memory_comes_back, 0, 2);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
