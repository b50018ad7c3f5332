/* SPDX-License-Identifier: MIT */
/*
 * libefi end to end in one process: two contexts joined by an in-memory wire
 * (tests/unit/efi_testutil.c), every opcode, 0 B and multi-MB messages, 16
 * SGEs, inline, unsignaled sends, piggybacked ACKs, events, and byte-exact
 * data under 1% loss, duplication and reordering.  The error completions
 * (RNR, rkey violations, retry exhaustion, flushes, CQ overflow):
 * test_efi_errors.c.  Threads and hostile input: test_efi_stress.c.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "efi_testutil.h"
#include "libefi/efi_int.h"	/* efi_qp_set_conn_key: the connection manager's, not public */

#define MB (1024u * 1024u)

/* imm_data of a test's WR id: receivers check it */
#define post1(qp, op, id, buf, len, mr, raddr, rkey, flags) \
	tpost_send1_ex(qp, op, id, buf, len, mr, raddr, rkey, flags, htonl(0xabcd0000u + (uint32_t)(id)))

/* Send/recv of several sizes (0 B, 1 packet, many), with and without imm. */
static void do_send_sizes(struct tpair *t)
{
	static const uint32_t sizes[] = { 0, 1, 8, 1000, 1500, 4096, 65536, 1 * MB + 7, 4 * MB };
	texpect_qp = t->qp[0];
	texpect_peer = t->qp[1];
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t n = sizes[i];
		uint8_t *src = tpattern(n, i), *dst = calloc(1, n + 16);
		struct efi_mr *ms = treg_all(t->pd[0], src, n ? n : 1), *md = treg_all(t->pd[1], dst, n + 16);
		struct efi_wc wc;

		tpost_recv1(t->qp[1], 100 + i, dst, n + 16, md);
		ck_assert_int_eq(post1(t->qp[0], i & 1 ? EFI_WR_SEND_WITH_IMM : EFI_WR_SEND, i, src, n, ms, 0, 0, 0), 0);
		texpect_wc(t->cq[0], EFI_WC_SUCCESS, i, &wc);
		ck_assert_int_eq(wc.opcode, EFI_WC_SEND);
		texpect_wc(t->cq[1], EFI_WC_SUCCESS, 100 + i, &wc);
		ck_assert_int_eq(wc.opcode, EFI_WC_RECV);
		ck_assert_uint_eq(wc.byte_len, n);
		ck_assert_uint_eq(wc.src_qp, t->qp[0]->qp_num);
		ck_assert_uint_eq(wc.qp_num, t->qp[1]->qp_num);
		if (i & 1) {
			ck_assert(wc.wc_flags & EFI_WC_WITH_IMM);
			ck_assert_uint_eq(ntohl(wc.imm_data), 0xabcd0000u + i);
		} else {
			ck_assert(!(wc.wc_flags & EFI_WC_WITH_IMM));
		}
		ck_assert_msg(memcmp(src, dst, n) == 0, "send of %u bytes corrupted", n);
		efi_dereg_mr(ms);
		efi_dereg_mr(md);
		free(src);
		free(dst);
	}
}

/* Write, write with imm, read: 0 B to multi-MB. */
static void do_rdma_sizes(struct tpair *t)
{
	static const uint32_t sizes[] = { 0, 1, 1400, 4097, 100000, 3 * MB + 5 };
	texpect_qp = t->qp[0];
	texpect_peer = t->qp[1];
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t n = sizes[i];
		uint8_t *src = tpattern(n, 7 + i), *dst = calloc(1, n + 1), *back = calloc(1, n + 1);
		uint8_t rbuf[4];
		struct efi_mr *ms = treg_all(t->pd[0], src, n + 1), *md = treg_all(t->pd[1], dst, n + 1),
			      *mb = treg_all(t->pd[0], back, n + 1), *mr = treg_all(t->pd[1], rbuf, sizeof(rbuf));
		struct efi_wc wc;

		ck_assert_int_eq(post1(t->qp[0], EFI_WR_RDMA_WRITE, 1, src, n, ms, (uintptr_t)dst, md->rkey, 0), 0);
		texpect_wc(t->cq[0], EFI_WC_SUCCESS, 1, &wc);
		ck_assert_int_eq(wc.opcode, EFI_WC_RDMA_WRITE);
		ck_assert_msg(memcmp(src, dst, n) == 0, "write of %u bytes corrupted", n);

		ck_assert_int_eq(post1(t->qp[0], EFI_WR_RDMA_READ, 2, back, n, mb, (uintptr_t)dst, md->rkey, 0), 0);
		texpect_wc(t->cq[0], EFI_WC_SUCCESS, 2, &wc);
		ck_assert_int_eq(wc.opcode, EFI_WC_RDMA_READ);
		ck_assert_uint_eq(wc.byte_len, n);
		ck_assert_msg(memcmp(src, back, n) == 0, "read of %u bytes corrupted", n);

		/* Write with immediate consumes a receive, byte_len = length */
		tpost_recv1(t->qp[1], 77, rbuf, sizeof(rbuf), mr);
		memset(dst, 0, n + 1);
		ck_assert_int_eq(post1(t->qp[0], EFI_WR_RDMA_WRITE_WITH_IMM, 3, src, n, ms, (uintptr_t)dst,
				       md->rkey, EFI_SEND_SOLICITED), 0);
		texpect_wc(t->cq[0], EFI_WC_SUCCESS, 3, NULL);
		texpect_wc(t->cq[1], EFI_WC_SUCCESS, 77, &wc);
		ck_assert_int_eq(wc.opcode, EFI_WC_RECV_RDMA_WITH_IMM);
		ck_assert(wc.wc_flags & EFI_WC_WITH_IMM);
		ck_assert_uint_eq(ntohl(wc.imm_data), 0xabcd0003u);
		ck_assert_uint_eq(wc.byte_len, n);
		ck_assert_msg(memcmp(src, dst, n) == 0, "write-imm of %u bytes corrupted", n);
		efi_dereg_mr(ms);
		efi_dereg_mr(md);
		efi_dereg_mr(mb);
		efi_dereg_mr(mr);
		free(src);
		free(dst);
		free(back);
	}
}

static void do_atomics(struct tpair *t)
{
	uint64_t *target = aligned_alloc(8, 64), res = 0;
	struct efi_mr *mt = treg_all(t->pd[1], target, 64), *mres = treg_all(t->pd[0], &res, 8);
	struct efi_sge sge = { (uintptr_t)&res, 8, mres->lkey };
	struct efi_send_wr wr, *bad;

	target[1] = 40;
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = EFI_SEND_SIGNALED;
	for (int i = 0; i < 100; i++) {
		wr.wr_id = (uint64_t)i;
		wr.opcode = EFI_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = (uintptr_t)&target[1];
		wr.wr.atomic.rkey = mt->rkey;
		wr.wr.atomic.compare_add = 2;
		ck_assert_int_eq(efi_post_send(t->qp[0], &wr, &bad), 0);
		texpect_wc(t->cq[0], EFI_WC_SUCCESS, (uint64_t)i, NULL);
		ck_assert_uint_eq(res, 40 + 2 * (uint64_t)i);
	}
	ck_assert_uint_eq(target[1], 240);
	wr.opcode = EFI_WR_ATOMIC_CMP_AND_SWP;
	wr.wr_id = 500;
	wr.wr.atomic.compare_add = 240;
	wr.wr.atomic.swap = 7;
	ck_assert_int_eq(efi_post_send(t->qp[0], &wr, &bad), 0);
	texpect_wc(t->cq[0], EFI_WC_SUCCESS, 500, NULL);
	ck_assert_uint_eq(res, 240);
	ck_assert_uint_eq(target[1], 7);
	wr.wr_id = 501;	/* compare fails: unchanged */
	ck_assert_int_eq(efi_post_send(t->qp[0], &wr, &bad), 0);
	texpect_wc(t->cq[0], EFI_WC_SUCCESS, 501, NULL);
	ck_assert_uint_eq(res, 7);
	ck_assert_uint_eq(target[1], 7);
	/* misaligned atomics are refused at post time */
	wr.wr.atomic.remote_addr = (uintptr_t)target + 4;
	ck_assert_int_eq(efi_post_send(t->qp[0], &wr, &bad), EINVAL);
	ck_assert_ptr_eq(bad, &wr);
	efi_dereg_mr(mt);
	efi_dereg_mr(mres);
	free(target);
}

START_TEST(test_all_opcodes)
{
	struct tpair t;
	tpair_open(&t, 1500, NULL);
	tpair_connect(&t, &tcap_default, 0, 7, 1, 14, 7);
	do_send_sizes(&t);
	do_rdma_sizes(&t);
	do_atomics(&t);
	tpair_close(&t);
}
END_TEST

START_TEST(test_jumbo_mtu)
{
	struct tpair t;
	tpair_open(&t, 9000, NULL);
	tpair_connect(&t, &tcap_default, 0, 7, 1, 14, 7);
	do_send_sizes(&t);
	do_rdma_sizes(&t);
	tpair_close(&t);
}
END_TEST

START_TEST(test_lossy)
{
	struct tpair t;
	struct tw_fault f = { .loss = 0.01, .dup = 0.01, .reorder = 0.01, .seed = 12345 + (uint64_t)_i * 7777 };
	struct efi_counters c;

	tpair_open(&t, 1500, &f);
	tpair_connect(&t, &tcap_default, 0, 7, 1, 12 /* 16 ms */, 7);
	do_send_sizes(&t);
	do_rdma_sizes(&t);
	do_atomics(&t);
	ck_assert_int_eq(efi_query_qp_counters(t.qp[0], &c), 0);
	ck_assert_uint_gt(c.retransmissions, 0);
	ck_assert_int_eq(efi_query_qp_counters(t.qp[1], &c), 0);
	ck_assert_uint_gt(c.duplicates, 0);
	tpair_close(&t);
}
END_TEST

/* Reads under loss and reordering: exact data, and a response that comes
 * ahead of the one expected (reordering: over lanes a chunk's first
 * responses overtake the last of the one before) is placed where it
 * belongs, not dropped and asked for again with the rest of its chunk. */
START_TEST(test_selective_read)
{
	struct tpair t;
	struct tw_fault f = { .loss = _i == 0 ? 0.02 : 0, .reorder = _i == 1 ? 0.05 : 0, .seed = 4242 };
	struct efi_counters c, r;
	enum { LEN = 1 << 20, N = 8 };
	uint8_t *src = tpattern(LEN, 9), *dst = calloc(1, LEN);

	tpair_open(&t, 1500, &f);
	tpair_connect(&t, &tcap_default, 0, 7, 1, 14, 7);
	struct efi_mr *ms = treg_all(t.pd[1], src, LEN), *md = treg_all(t.pd[0], dst, LEN);
	for (int i = 0; i < N; i++) {
		memset(dst, 0, LEN);
		ck_assert_int_eq(post1(t.qp[0], EFI_WR_RDMA_READ, (uint64_t)i, dst, LEN, md,
				       (uintptr_t)src, ms->rkey, 0), 0);
		texpect_wc(t.cq[0], EFI_WC_SUCCESS, (uint64_t)i, NULL);
		ck_assert_int_eq(memcmp(src, dst, LEN), 0);
	}
	ck_assert_int_eq(efi_query_qp_counters(t.qp[0], &c), 0);
	ck_assert_int_eq(efi_query_qp_counters(t.qp[1], &r), 0);
	fprintf(stderr, "selective read %s: responder tx %llu duplicates %llu; requester retx %llu drops %llu\n",
		_i == 0 ? "loss 2%" : "reorder 5%", (unsigned long long)r.tx_packets,
		(unsigned long long)r.duplicates, (unsigned long long)c.retransmissions,
		(unsigned long long)c.drops);
	/* N MiB in 1424-byte responses: ~5,900.  Dropping a reordered
	 * response and asking again from it resent the rest of its chunk
	 * each time: 31,000 responses and 580 requests twice at 5%.  A
	 * quiet run sees ~35 duplicate requests, a heavily loaded one ~60
	 * (spurious timeouts while the process did not run): the bound
	 * is far below the old behaviour, not at the quiet figure. */
	if (_i == 1) {
		ck_assert_uint_le(r.tx_packets, (uint64_t)N * (LEN / 1024) * 6 / 5);
		ck_assert_uint_le(r.duplicates, 200);
	}
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	free(src);
	free(dst);
	tpair_close(&t);
}
END_TEST

/* Selective retransmission: under loss only the lost packets go again, and
 * reordering alone is not mistaken for loss (go-back-N resent a window per
 * hole: more than the data itself at these rates). */
START_TEST(test_selective)
{
	struct tpair t;
	struct tw_fault f = { .loss = _i == 0 ? 0.02 : 0, .reorder = _i == 1 ? 0.05 : 0, .seed = 99 };
	struct efi_counters c;
	enum { LEN = 1 << 20, N = 16 };
	uint8_t *src = tpattern(LEN, 7), *dst = calloc(1, LEN);

	tpair_open(&t, 1500, &f);
	tpair_connect(&t, &tcap_default, 0, 7, 1, 14, 7);
	struct efi_mr *ms = treg_all(t.pd[0], src, LEN), *md = treg_all(t.pd[1], dst, LEN);
	for (int i = 0; i < N; i++) {
		memset(dst, 0, LEN);
		ck_assert_int_eq(post1(t.qp[0], EFI_WR_RDMA_WRITE, (uint64_t)i, src, LEN, ms,
				       (uintptr_t)dst, md->rkey, 0), 0);
		texpect_wc(t.cq[0], EFI_WC_SUCCESS, (uint64_t)i, NULL);
		ck_assert_int_eq(memcmp(src, dst, LEN), 0);
	}
	ck_assert_int_eq(efi_query_qp_counters(t.qp[0], &c), 0);
	fprintf(stderr, "selective %s: tx %llu retx %llu fast %llu probes %llu timeouts %llu\n",
		_i == 0 ? "loss 2%" : "reorder 5%", (unsigned long long)c.tx_packets,
		(unsigned long long)c.retransmissions, (unsigned long long)c.fast_retransmits,
		(unsigned long long)c.tail_probes, (unsigned long long)c.timeouts);
	/* Loose (a loaded machine's scheduling stalls cost a timeout, which
	 * resends a window), yet far below go-back-N's. */
	ck_assert_uint_le(c.retransmissions, c.tx_packets / 5);
	if (_i == 0)
		ck_assert_uint_gt(c.retransmissions, 0);
	ck_assert_uint_eq(c.num_paths, 1);
	ck_assert_uint_gt(c.paths[0].rtt_smoothed_ns, 0);
	ck_assert_uint_gt(c.paths[0].cwnd_milli, 0);
	ck_assert_uint_eq(c.paths[0].active + c.paths[0].suspected - c.paths[0].restored, 1);
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	free(src);
	free(dst);
	tpair_close(&t);
}
END_TEST

/* A connection keyed by the connection manager takes only packets with its
 * key: others are dropped (EFI_DROP_BAD_KEY) before they touch memory. */
START_TEST(test_conn_key)
{
	struct tpair t;
	uint8_t src[100], dst[100];
	struct efi_counters c;

	memset(src, 0x3c, sizeof(src));
	memset(dst, 0, sizeof(dst));
	tpair_open(&t, 1500, NULL);
	tpair_connect(&t, &tcap_default, 0, 7, 1, 12 /* 16 ms: fails after ~50 ms of silence */, 2);
	struct efi_mr *ms = treg_all(t.pd[0], src, sizeof(src)), *md = treg_all(t.pd[1], dst, sizeof(dst));
	efi_qp_set_conn_key(t.qp[0], 0x5eed1234);
	efi_qp_set_conn_key(t.qp[1], 0x5eed1234);
	ck_assert_int_eq(post1(t.qp[0], EFI_WR_RDMA_WRITE, 1, src, 50, ms, (uintptr_t)dst, md->rkey, 0), 0);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 1, NULL);
	ck_assert_uint_eq(dst[49], 0x3c);
	/* The responder now expects another key: the Write never lands, the
	 * requester hears nothing and gives up. */
	efi_qp_set_conn_key(t.qp[1], 0x0badcafe);
	ck_assert_int_eq(post1(t.qp[0], EFI_WR_RDMA_WRITE, 2, src, 100, ms, (uintptr_t)dst, md->rkey, 0), 0);
	texpect_wc(t.cq[0], EFI_WC_RETRY_EXC_ERR, 2, NULL);
	ck_assert_uint_eq(dst[50], 0);
	/* (The requester may give up before the responder's thread, on a
	 * loaded machine, has even looked at the Write: wait for that.) */
	for (int wait_ms = 0; wait_ms < 10000; wait_ms++) {
		ck_assert_int_eq(efi_query_qp_counters(t.qp[1], &c), 0);
		if (c.drop_reasons[EFI_DROP_BAD_KEY])
			break;
		usleep(1000);
	}
	ck_assert_uint_gt(c.drop_reasons[EFI_DROP_BAD_KEY], 0);
	ck_assert_str_eq(efi_drop_reason_str(EFI_DROP_BAD_KEY), "bad_key");
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	tpair_close(&t);
}
END_TEST

/* 16 SGEs on both sides, gathered and scattered at odd lengths. */
START_TEST(test_16_sge)
{
	struct tpair t;
	uint8_t *src = tpattern(16 * 3001, 3), *dst = calloc(1, 16 * 3001);
	struct efi_sge ss[16], ds[16];
	struct efi_send_wr wr, *bad;
	struct efi_recv_wr rwr, *rbad;
	struct efi_wc wc;
	uint32_t off = 0;

	tpair_open(&t, 1500, NULL);
	tpair_connect(&t, &tcap_default, 0, 7, 1, 14, 7);
	struct efi_mr *ms = treg_all(t.pd[0], src, 16 * 3001), *md = treg_all(t.pd[1], dst, 16 * 3001);
	for (int i = 0; i < 16; i++) {
		uint32_t l = 1000 + (uint32_t)i * 250;	/* sums to 46000 */
		ss[i] = (struct efi_sge){ (uintptr_t)src + off, l, ms->lkey };
		ds[15 - i] = (struct efi_sge){ 0, l, md->lkey };
		off += l;
	}
	off = 0;
	for (int i = 0; i < 16; i++) {
		ds[i].addr = (uintptr_t)dst + off;
		off += ds[i].length;
	}
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 9;
	rwr.sg_list = ds;
	rwr.num_sge = 16;
	ck_assert_int_eq(efi_post_recv(t.qp[1], &rwr, &rbad), 0);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 8;
	wr.sg_list = ss;
	wr.num_sge = 16;
	wr.opcode = EFI_WR_SEND;
	wr.send_flags = EFI_SEND_SIGNALED;
	ck_assert_int_eq(efi_post_send(t.qp[0], &wr, &bad), 0);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 8, NULL);
	texpect_wc(t.cq[1], EFI_WC_SUCCESS, 9, &wc);
	ck_assert_uint_eq(wc.byte_len, off);
	ck_assert(memcmp(src, dst, off) == 0);
	/* 17 SGEs: EINVAL */
	wr.num_sge = 17;
	ck_assert_int_eq(efi_post_send(t.qp[0], &wr, &bad), EINVAL);
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	tpair_close(&t);
	free(src);
	free(dst);
}
END_TEST

/* Inline at max_inline_data: the buffer may change right after posting. */
START_TEST(test_inline)
{
	struct tpair t;
	uint8_t buf[256], dst[256];
	struct efi_wc wc;

	tpair_open(&t, 1500, NULL);
	tpair_connect(&t, &tcap_default, 0, 7, 1, 14, 7);
	struct efi_mr *md = treg_all(t.pd[1], dst, sizeof(dst));
	memset(buf, 0x5a, sizeof(buf));
	tpost_recv1(t.qp[1], 1, dst, sizeof(dst), md);
	ck_assert_int_eq(post1(t.qp[0], EFI_WR_SEND, 2, buf, 256, NULL, 0, 0, EFI_SEND_INLINE), 0);
	memset(buf, 0, sizeof(buf));
	texpect_wc(t.cq[1], EFI_WC_SUCCESS, 1, &wc);
	ck_assert_uint_eq(wc.byte_len, 256);
	for (int i = 0; i < 256; i++)
		ck_assert_uint_eq(dst[i], 0x5a);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 2, NULL);
	ck_assert_int_eq(post1(t.qp[0], EFI_WR_SEND, 3, buf, 257, NULL, 0, 0, EFI_SEND_INLINE), EINVAL);
	ck_assert_int_eq(post1(t.qp[0], EFI_WR_RDMA_READ, 3, buf, 8, NULL, 0, 0, EFI_SEND_INLINE), EINVAL);
	efi_dereg_mr(md);
	tpair_close(&t);
}
END_TEST

/* 1000 sends, every 100th signaled: exactly 10 send completions. */
START_TEST(test_unsignaled)
{
	struct tpair t;
	uint8_t buf[64], dst[64];
	struct efi_wc wc[16];
	int recvd = 0, sent = 0, posted_r = 0, posted_s = 0;

	tpair_open(&t, 1500, NULL);
	tpair_connect(&t, &tcap_default, 0, 7, 1, 14, 7);
	struct efi_mr *ms = treg_all(t.pd[0], buf, sizeof(buf)), *md = treg_all(t.pd[1], dst, sizeof(dst));
	for (int spins = 0; recvd < 1000 || sent < 10; spins++) {
		ck_assert_int_lt(spins, 50000000);
		while (posted_r - recvd < 200 && posted_r < 1000)
			tpost_recv1(t.qp[1], (uint64_t)posted_r++, dst, sizeof(dst), md);
		/* unsignaled WQEs free up with the next signaled completion */
		while (posted_s < posted_r && posted_s - sent * 100 < 200) {
			struct efi_sge sge = { (uintptr_t)buf, 8, ms->lkey };
			struct efi_send_wr wr = { .wr_id = (uint64_t)posted_s, .sg_list = &sge, .num_sge = 1,
						  .opcode = EFI_WR_SEND,
						  .send_flags = (posted_s % 100 == 99) ? EFI_SEND_SIGNALED : 0 }, *bad;
			ck_assert_int_eq(efi_post_send(t.qp[0], &wr, &bad), 0);
			posted_s++;
		}
		int n = efi_poll_cq(t.cq[1], 16, wc);
		for (int k = 0; k < n; k++) {
			ck_assert_int_eq(wc[k].status, EFI_WC_SUCCESS);
			ck_assert_uint_eq(wc[k].wr_id, (uint64_t)(recvd + k));
		}
		recvd += n;
		n = efi_poll_cq(t.cq[0], 16, wc);
		for (int k = 0; k < n; k++) {
			ck_assert_int_eq(wc[k].status, EFI_WC_SUCCESS);
			ck_assert_uint_eq(wc[k].wr_id, (uint64_t)(sent + k) * 100 + 99);
		}
		sent += n;
	}
	ck_assert_int_eq(tpoll(t.cq[0], wc, 1, 100), 0);
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	tpair_close(&t);
}
END_TEST

/* Polls cq until a receive completion arrives (send completions on the
 * way are checked and counted in *sends); returns it. */
static struct efi_wc poll_recv(struct efi_cq *cq, unsigned *sends)
{
	struct efi_wc wc;

	for (;;) {
		ck_assert_msg(tpoll(cq, &wc, 1, 20000) == 1, "no completion");
		ck_assert_msg(wc.status == EFI_WC_SUCCESS, "completion %s", efi_wc_status_str(wc.status));
		if (wc.opcode == EFI_WC_RECV)
			return wc;
		(*sends)++;
	}
}

/* Request and response (issue 15): the answer the application posts right
 * after polling the request carries the request's ACK (PACK), so a ping-pong
 * costs one datagram per message, not two.  A peer whose ACKs do not say
 * it reads piggybacked ACKs (a libefi that predates them: pack_deaf)
 * never gets one, held or causal, and the exchange works as before. */
START_TEST(test_piggybacked_acks)
{
	enum { N = 400, SZ = 8 };

	for (int old_peer = 0; old_peer < 2; old_peer++) {
		struct tpair t;
		uint8_t a[2 * SZ], b[2 * SZ];
		unsigned sends[2] = { 0, 0 };
		struct efi_counters ca, cb;

		tpair_open(&t, 1500, NULL);
		/* as EFI_ACK_PIGGYBACK=1 on both, or on one only */
		ctx_of(t.ctx[0])->pack = !old_peer;
		ctx_of(t.ctx[0])->pack_deaf = old_peer;
		ctx_of(t.ctx[1])->pack = true;
		tpair_connect(&t, &tcap_default, 0, 7, 1, 14, 7);
		struct efi_mr *ma = treg_all(t.pd[0], a, sizeof(a)), *mb = treg_all(t.pd[1], b, sizeof(b));
		for (uint32_t i = 0; i < N; i++) {
			struct efi_wc wc;

			tpost_recv1(t.qp[1], i, b + SZ, SZ, mb);
			tpost_recv1(t.qp[0], i, a + SZ, SZ, ma);
			memset(a, (int)(i & 0xff), SZ);
			ck_assert_int_eq(post1(t.qp[0], EFI_WR_SEND, i, a, SZ, ma, 0, 0, 0), 0);
			wc = poll_recv(t.cq[1], &sends[1]);
			ck_assert_uint_eq(wc.byte_len, SZ);
			ck_assert_uint_eq(b[SZ], i & 0xff);
			memset(b, (int)(~i & 0xff), SZ);
			ck_assert_int_eq(post1(t.qp[1], EFI_WR_SEND, i, b, SZ, mb, 0, 0, 0), 0);
			wc = poll_recv(t.cq[0], &sends[0]);
			ck_assert_uint_eq(a[SZ + SZ - 1], ~i & 0xff);
		}
		/* the last answer's ACK leaves on its own after the delay */
		while (sends[0] < N || sends[1] < N) {
			struct efi_wc wc;
			for (int k = 0; k < 2; k++)
				if (sends[k] < N && tpoll(t.cq[k], &wc, 1, 1) == 1) {
					ck_assert_int_eq(wc.status, EFI_WC_SUCCESS);
					sends[k]++;
				}
		}
		ck_assert_int_eq(efi_query_qp_counters(t.qp[0], &ca), 0);
		ck_assert_int_eq(efi_query_qp_counters(t.qp[1], &cb), 0);
		fprintf(stderr, "piggybacked ACKs %s: %d round trips, datagrams sent %llu + %llu\n",
			old_peer ? "off on one side" : "on", N, (unsigned long long)ca.tx_packets,
			(unsigned long long)cb.tx_packets);
		ck_assert_uint_eq(ca.drops + cb.drops, 0);
		if (old_peer) {
			/* every message and every ACK its own datagram */
			ck_assert_uint_ge(ca.tx_packets, 2 * N - N / 10);
			ck_assert_uint_ge(cb.tx_packets, 2 * N - N / 10);
		} else {
			/* a progress thread taking a datagram now and then
			 * sends that ACK alone: most ride along */
			ck_assert_uint_le(ca.tx_packets + cb.tx_packets, 3 * N);
		}
		efi_dereg_mr(ma);
		efi_dereg_mr(mb);
		tpair_close(&t);
	}
}
END_TEST

/* A program that destroys its QP right after its last receive (as
 * ibv_rc_pingpong does), or whose QP the connection manager fails then, still
 * acknowledges that message: the ACK held for
 * an answer (xport.c) leaves before the QP goes, and the peer's send
 * completes instead of ending in RETRY_EXC. */
START_TEST(test_held_ack_leaves_at_destroy)
{
	for (int how = 0; how < 3; how++) {
		struct tpair t;
		uint8_t src[64], dst[64];
		struct efi_wc wc;
		unsigned sends = 0;

		tpair_open(&t, 1500, NULL);
		/* the longest hold: the destroy comes well within it */
		ctx_of(t.ctx[1])->ack_delay_ns = EFI_ACK_DELAY_MAX_US * 1000ull;
		tpair_connect(&t, &tcap_default, 0, 7, 1, 8 /* ~1 ms */, 1);
		struct efi_mr *ms = treg_all(t.pd[0], src, sizeof(src)), *md = treg_all(t.pd[1], dst, sizeof(dst));
		tpost_recv1(t.qp[1], 5, dst, sizeof(dst), md);
		ck_assert_int_eq(post1(t.qp[0], EFI_WR_SEND, 1, src, 8, ms, 0, 0, 0), 0);
		wc = poll_recv(t.cq[1], &sends);
		ck_assert_uint_eq(wc.wr_id, 5);
		if (how == 0) {
			ck_assert_int_eq(efi_destroy_qp(t.qp[1]), 0);
			t.qp[1] = NULL;
		} else if (how == 1) {
			struct efi_qp_attr a = { .qp_state = EFI_QPS_ERR };
			ck_assert_int_eq(efi_modify_qp(t.qp[1], &a, EFI_QP_STATE), 0);
		} else {
			/* as the connection manager ends a connection whose
			 * peer disconnected (efi_cm_qps_to_error) */
			struct efi_context_int *c1 = ctx_of(t.ctx[1]);
			pthread_mutex_lock(&c1->lock);
			efi_qp_to_error((struct efi_qp_int *)t.qp[1]);
			pthread_mutex_unlock(&c1->lock);
		}
		texpect_wc(t.cq[0], EFI_WC_SUCCESS, 1, NULL);
		efi_dereg_mr(ms);
		efi_dereg_mr(md);
		tpair_close(&t);
	}
}
END_TEST

/* A completion channel wakes a consumer blocked in poll(2) on its fd while
 * nobody polls the CQ (the progress thread runs the transport); solicited-only
 * arming ignores unsolicited sends. */
START_TEST(test_events)
{
	struct tpair t;
	uint8_t src[64], dst[64];
	struct efi_comp_channel *ch;
	struct efi_cq *cq, *evcq;
	struct efi_qp_init_attr ia;
	struct efi_wc wc;
	void *cqctx;
	struct pollfd pfd;

	tpair_open(&t, 1500, NULL);
	ch = efi_create_comp_channel(t.ctx[1]);
	ck_assert_ptr_nonnull(ch);
	/* replace side 1's CQ with one on the channel */
	ck_assert_int_eq(efi_destroy_cq(t.cq[1]), 0);
	cq = efi_create_cq(t.ctx[1], 16, (void *)0x1234, ch, 0);
	ck_assert_ptr_nonnull(cq);
	t.cq[1] = cq;
	memset(&ia, 0, sizeof(ia));
	tpair_connect(&t, &tcap_default, 0, 7, 1, 14, 7);
	struct efi_mr *ms = treg_all(t.pd[0], src, sizeof(src)), *md = treg_all(t.pd[1], dst, sizeof(dst));
	tpost_recv1(t.qp[1], 1, dst, sizeof(dst), md);
	tpost_recv1(t.qp[1], 2, dst, sizeof(dst), md);
	ck_assert_int_eq(efi_req_notify_cq(cq, 1), 0);
	ck_assert_int_eq(post1(t.qp[0], EFI_WR_SEND, 1, src, 10, ms, 0, 0, 0), 0);
	texpect_wc(t.cq[0], EFI_WC_SUCCESS, 1, NULL);
	pfd = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	ck_assert_int_eq(poll(&pfd, 1, 50), 0);	/* not solicited: no event */
	ck_assert_int_eq(post1(t.qp[0], EFI_WR_SEND, 2, src, 10, ms, 0, 0, EFI_SEND_SOLICITED), 0);
	ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
	ck_assert_int_eq(efi_get_cq_event(ch, &evcq, &cqctx), 0);
	ck_assert_ptr_eq(evcq, cq);
	ck_assert_ptr_eq(cqctx, (void *)0x1234);
	efi_ack_cq_events(cq, 1);
	ck_assert_int_eq(efi_poll_cq(cq, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_int_eq(efi_poll_cq(cq, 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 2);
	ck_assert_int_eq(efi_destroy_comp_channel(ch), EBUSY);
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(efi_destroy_qp(t.qp[i]), 0);
		ck_assert_int_eq(efi_destroy_cq(t.cq[i]), 0);
		ck_assert_int_eq(efi_dealloc_pd(t.pd[i]), 0);
	}
	ck_assert_int_eq(efi_destroy_comp_channel(ch), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(efi_close_device(t.ctx[i]), 0);
}
END_TEST


static Suite *suite(void)
{
	Suite *s = suite_create("efi_loop");
	TCase *tc = tcase_create("loop");
	tcase_set_timeout(tc, 120);
	const char *only = getenv("EFI_TEST_ONLY");	/* run one test: its name */
#define ADD(t) if (!only || strcmp(only, #t) == 0) tcase_add_test(tc, t)
	ADD(test_all_opcodes);
	ADD(test_jumbo_mtu);
	ADD(test_16_sge);
	ADD(test_inline);
	ADD(test_unsignaled);
	ADD(test_piggybacked_acks);
	ADD(test_held_ack_leaves_at_destroy);
	ADD(test_events);
	ADD(test_conn_key);
	if (!only || strcmp(only, "test_selective") == 0)
		tcase_add_loop_test(tc, test_selective, 0, 2);	/* loss, reordering */
	if (!only || strcmp(only, "test_selective_read") == 0)
		tcase_add_loop_test(tc, test_selective_read, 0, 2);
	if (!only || strcmp(only, "test_lossy") == 0)
		tcase_add_loop_test(tc, test_lossy, 0, 4);	/* 4 seeds */
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
