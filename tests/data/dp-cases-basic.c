/* SPDX-License-Identifier: MIT */
/*
 * Cases: every opcode with byte-exact data, 0-byte and large messages, 16
 * SGEs, inline at max_inline_data, unsignaled sends.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/data/dp.h"

/* Checks the receive completion of a Send (or Write with immediate). */
static void check_recv(const struct dp_conn *c, const struct efi_wc *wc, enum efi_wc_opcode op,
		       uint32_t len, bool imm, uint32_t imm_host, const char *what)
{
	DP_CHECK(wc->opcode == op, "%s: receive opcode %d, expected %d", what, wc->opcode, op);
	DP_CHECK(wc->byte_len == len, "%s: byte_len %u, expected %u", what, wc->byte_len, len);
	DP_CHECK(wc->qp_num == c->qp->qp_num, "%s: qp_num %u, expected %u", what, wc->qp_num, c->qp->qp_num);
	DP_CHECK(wc->src_qp == c->remote.qpn, "%s: src_qp %u, expected the peer's %u", what, wc->src_qp,
		 c->remote.qpn);
	if (imm) {
		DP_CHECK(wc->wc_flags & EFI_WC_WITH_IMM, "%s: no EFI_WC_WITH_IMM", what);
		DP_CHECK(ntohl(wc->imm_data) == imm_host, "%s: imm_data 0x%x, expected 0x%x", what,
			 ntohl(wc->imm_data), imm_host);
	} else {
		DP_CHECK(!(wc->wc_flags & EFI_WC_WITH_IMM), "%s: EFI_WC_WITH_IMM without immediate", what);
	}
}

static const uint32_t op_sizes[] = { 1, 100, 1500, 4096, 65537 };

void dp_case_opcodes(struct dp_side *s)
{
	struct dp_qp_cfg cfg = { .buf_size = 256 << 10 };
	struct dp_conn c;
	struct efi_wc wc;
	bool srv = s->opts->server;
	const size_t half = 128 << 10;
	uint64_t *word;

	dp_setup(s, &c, 1, &cfg);
	word = (uint64_t *)c.buf;
	for (size_t k = 0; k < sizeof(op_sizes) / sizeof(op_sizes[0]); k++) {
		uint32_t len = op_sizes[k];
		uint64_t seed = 1000 + k;
		char what[64];

		/* SEND and SEND_WITH_IMM */
		for (int imm = 0; imm < 2; imm++) {
			uint64_t id = 0x100 + k * 2 + (uint64_t)imm;

			snprintf(what, sizeof(what), "%s of %u bytes", imm ? "SEND_WITH_IMM" : "SEND", len);
			if (srv) {
				memset(c.buf, 0xee, half);
				dp_post_recv(&c, 0, (uint32_t)half, id);
				dp_sync(s, what);
				dp_wait_ok(c.rcq, &wc, EFI_WC_RECV, what);
				DP_CHECK(wc.wr_id == id, "%s: wr_id %" PRIu64 ", expected %" PRIu64, what, wc.wr_id, id);
				check_recv(&c, &wc, EFI_WC_RECV, len, imm, (uint32_t)id, what);
				DP_CHECK_DATA(c.buf, len, seed + (uint64_t)imm, what);
				DP_CHECK(c.buf[len] == 0xee, "%s: wrote past the message", what);
			} else {
				dp_fill(c.buf + half, len, seed + (uint64_t)imm);
				dp_sync(s, what);
				dp_post_ok(&c, imm ? EFI_WR_SEND_WITH_IMM : EFI_WR_SEND, half, len, 0,
					   EFI_SEND_SIGNALED, id);
				dp_wait_ok(c.scq, &wc, EFI_WC_SEND, what);
				DP_CHECK(wc.wr_id == id, "%s: send wr_id %" PRIu64, what, wc.wr_id);
			}
			dp_sync(s, "checked");
		}

		/* RDMA_WRITE and RDMA_WRITE_WITH_IMM, into the server at 100 */
		for (int imm = 0; imm < 2; imm++) {
			uint64_t id = 0x200 + k * 2 + (uint64_t)imm;

			snprintf(what, sizeof(what), "%s of %u bytes", imm ? "RDMA_WRITE_WITH_IMM" : "RDMA_WRITE",
				 len);
			if (srv) {
				memset(c.buf, 0xee, half);
				if (imm)
					dp_post_recv(&c, 0, 0, id);
				dp_sync(s, what);
				if (imm) {
					dp_wait_ok(c.rcq, &wc, EFI_WC_RECV_RDMA_WITH_IMM, what);
					check_recv(&c, &wc, EFI_WC_RECV_RDMA_WITH_IMM, len, true, (uint32_t)id, what);
				}
				dp_sync(s, "written");
				DP_CHECK_DATA(c.buf + 100, len, seed + 10 + (uint64_t)imm, what);
				DP_CHECK(c.buf[99] == 0xee && c.buf[100 + len] == 0xee, "%s: wrote outside", what);
			} else {
				dp_fill(c.buf + half, len, seed + 10 + (uint64_t)imm);
				dp_sync(s, what);
				dp_post_ok(&c, imm ? EFI_WR_RDMA_WRITE_WITH_IMM : EFI_WR_RDMA_WRITE, half, len, 100,
					   EFI_SEND_SIGNALED, id);
				dp_wait_ok(c.scq, &wc, EFI_WC_RDMA_WRITE, what);
				dp_sync(s, "written");
			}
			dp_sync(s, "checked");
		}

		/* RDMA_READ of the server's bytes at 200 */
		snprintf(what, sizeof(what), "RDMA_READ of %u bytes", len);
		if (srv) {
			dp_fill(c.buf + 200, len, seed + 20);
			dp_sync(s, what);
		} else {
			memset(c.buf + half, 0xee, half);
			dp_sync(s, what);
			dp_post_ok(&c, EFI_WR_RDMA_READ, half + 8, len, 200, EFI_SEND_SIGNALED, 0x300 + k);
			dp_wait_ok(c.scq, &wc, EFI_WC_RDMA_READ, what);
			DP_CHECK_DATA(c.buf + half + 8, len, seed + 20, what);
			DP_CHECK(c.buf[half + 7] == 0xee && c.buf[half + 8 + len] == 0xee, "%s: read outside", what);
		}
		dp_sync(s, "checked");
	}

	/* Atomics on the server's first word */
	if (srv) {
		word[0] = 0x1111222233334444ull;
		word[1] = 0x5555666677778888ull;
	}
	dp_sync(s, "atomics");
	if (!srv) {
		uint64_t *res = (uint64_t *)(c.buf + half);

		DP_CHECK_RC(dp_post_atomic(&c, EFI_WR_ATOMIC_CMP_AND_SWP, half, 0, 0x1111222233334444ull,
					   0xaaaabbbbccccddddull, EFI_SEND_SIGNALED, 1));
		dp_wait_ok(c.scq, &wc, EFI_WC_COMP_SWAP, "CAS that matches");
		DP_CHECK(*res == 0x1111222233334444ull, "CAS returned 0x%" PRIx64, *res);
		DP_CHECK_RC(dp_post_atomic(&c, EFI_WR_ATOMIC_CMP_AND_SWP, half, 0, 0x1111222233334444ull,
					   0x9999ull, EFI_SEND_SIGNALED, 2));
		dp_wait_ok(c.scq, &wc, EFI_WC_COMP_SWAP, "CAS that does not match");
		DP_CHECK(*res == 0xaaaabbbbccccddddull, "failed CAS returned 0x%" PRIx64, *res);
		DP_CHECK_RC(dp_post_atomic(&c, EFI_WR_ATOMIC_FETCH_AND_ADD, half, 8, 5, 0, EFI_SEND_SIGNALED, 3));
		dp_wait_ok(c.scq, &wc, EFI_WC_FETCH_ADD, "FAA");
		DP_CHECK(*res == 0x5555666677778888ull, "FAA returned 0x%" PRIx64, *res);
		/* an atomic on an unaligned address is refused at post time */
		DP_CHECK(dp_post_atomic(&c, EFI_WR_ATOMIC_FETCH_AND_ADD, half, 4, 1, 0, EFI_SEND_SIGNALED, 4)
			 == EINVAL, "FAA on an unaligned remote address was not refused with EINVAL");
	}
	dp_sync(s, "atomics done");
	if (srv) {
		DP_CHECK(word[0] == 0xaaaabbbbccccddddull, "after CAS the word is 0x%" PRIx64, word[0]);
		DP_CHECK(word[1] == 0x5555666677778888ull + 5, "after FAA the word is 0x%" PRIx64, word[1]);
	}
	dp_conn_destroy(&c);
}

void dp_case_sizes(struct dp_side *s)
{
	struct dp_qp_cfg cfg = { .buf_size = 4096 };
	struct dp_conn c, big;
	struct efi_wc wc;
	bool srv = s->opts->server;
	uint64_t L = s->opts->large_bytes;
	double t0;

	dp_setup(s, &c, 1, &cfg);
	/* zero-byte messages of every kind that carries data */
	if (srv) {
		dp_post_recv(&c, 0, 64, 1);
		dp_post_recv(&c, 0, 64, 2);
		dp_post_recv(&c, 0, 64, 3);
	}
	dp_sync(s, "zero");
	if (srv) {
		dp_wait_ok(c.rcq, &wc, EFI_WC_RECV, "0-byte SEND");
		check_recv(&c, &wc, EFI_WC_RECV, 0, false, 0, "0-byte SEND");
		dp_wait_ok(c.rcq, &wc, EFI_WC_RECV, "0-byte SEND_WITH_IMM");
		check_recv(&c, &wc, EFI_WC_RECV, 0, true, 12, "0-byte SEND_WITH_IMM");
		dp_wait_ok(c.rcq, &wc, EFI_WC_RECV_RDMA_WITH_IMM, "0-byte RDMA_WRITE_WITH_IMM");
		check_recv(&c, &wc, EFI_WC_RECV_RDMA_WITH_IMM, 0, true, 14, "0-byte RDMA_WRITE_WITH_IMM");
	} else {
		dp_post_ok(&c, EFI_WR_SEND, 0, 0, 0, EFI_SEND_SIGNALED, 11);
		dp_wait_ok(c.scq, &wc, EFI_WC_SEND, "0-byte SEND");
		dp_post_ok(&c, EFI_WR_SEND_WITH_IMM, 0, 0, 0, EFI_SEND_SIGNALED, 12);
		dp_wait_ok(c.scq, &wc, EFI_WC_SEND, "0-byte SEND_WITH_IMM");
		dp_post_ok(&c, EFI_WR_RDMA_WRITE, 0, 0, 0, EFI_SEND_SIGNALED, 13);
		dp_wait_ok(c.scq, &wc, EFI_WC_RDMA_WRITE, "0-byte RDMA_WRITE");
		dp_post_ok(&c, EFI_WR_RDMA_WRITE_WITH_IMM, 0, 0, 0, EFI_SEND_SIGNALED, 14);
		dp_wait_ok(c.scq, &wc, EFI_WC_RDMA_WRITE, "0-byte RDMA_WRITE_WITH_IMM");
		dp_post_ok(&c, EFI_WR_RDMA_READ, 0, 0, 0, EFI_SEND_SIGNALED, 15);
		dp_wait_ok(c.scq, &wc, EFI_WC_RDMA_READ, "0-byte RDMA_READ");
	}
	dp_sync(s, "zero done");
	dp_conn_destroy(&c);

	/* one large message each way: Write, Read, Send */
	cfg.buf_size = L;
	dp_set_timeout(600);
	dp_setup(s, &big, 1, &cfg);
	if (srv) {
		dp_post_recv(&big, 0, (uint32_t)L, 7);
		dp_sync(s, "large write");
		dp_sync(s, "written");
		DP_CHECK_DATA(big.buf, L, 77, "large RDMA_WRITE");
		dp_fill(big.buf, L, 78);
		dp_sync(s, "large read");
		dp_sync(s, "read");
		/* the receive posted at the start takes the Send */
		dp_sync(s, "large send");
		dp_wait_ok(big.rcq, &wc, EFI_WC_RECV, "large SEND");
		check_recv(&big, &wc, EFI_WC_RECV, (uint32_t)L, false, 0, "large SEND");
		DP_CHECK_DATA(big.buf, L, 79, "large SEND");
	} else {
		dp_fill(big.buf, L, 77);
		dp_sync(s, "large write");
		t0 = dp_now();
		dp_post_ok(&big, EFI_WR_RDMA_WRITE, 0, (uint32_t)L, 0, EFI_SEND_SIGNALED, 1);
		dp_wait_ok(big.scq, &wc, EFI_WC_RDMA_WRITE, "large RDMA_WRITE");
		dp_log("RDMA_WRITE of %" PRIu64 " MiB: %.2f s", L >> 20, dp_now() - t0);
		dp_sync(s, "written");
		memset(big.buf, 0, L);
		dp_sync(s, "large read");
		t0 = dp_now();
		dp_post_ok(&big, EFI_WR_RDMA_READ, 0, (uint32_t)L, 0, EFI_SEND_SIGNALED, 2);
		dp_wait_ok(big.scq, &wc, EFI_WC_RDMA_READ, "large RDMA_READ");
		dp_log("RDMA_READ of %" PRIu64 " MiB: %.2f s", L >> 20, dp_now() - t0);
		DP_CHECK_DATA(big.buf, L, 78, "large RDMA_READ");
		dp_sync(s, "read");
		dp_fill(big.buf, L, 79);
		dp_sync(s, "large send");
		t0 = dp_now();
		dp_post_ok(&big, EFI_WR_SEND, 0, (uint32_t)L, 0, EFI_SEND_SIGNALED, 3);
		dp_wait_ok(big.scq, &wc, EFI_WC_SEND, "large SEND");
		dp_log("SEND of %" PRIu64 " MiB: %.2f s", L >> 20, dp_now() - t0);
	}
	dp_sync(s, "large done");
	dp_conn_destroy(&big);
}

/* 16 pieces of different lengths at scattered offsets: sum 20000 bytes. */
static void sge_layout(struct efi_sge *sg, const struct dp_conn *c, size_t base, unsigned variant)
{
	static const uint32_t lens[2][16] = {
		{ 1, 7, 100, 4096, 13, 2000, 3, 1500, 999, 4001, 64, 65, 1, 2222, 1111, 3817 },
		{ 5000, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14908 },
	};
	size_t off = base;

	for (int i = 0; i < 16; i++) {
		sg[i].addr = (uintptr_t)(c->buf + off);
		sg[i].length = lens[variant][i];
		sg[i].lkey = c->mr->lkey;
		off += lens[variant][i] + 37;	/* gaps that must stay untouched */
	}
}

static void sge_scatter(const struct efi_sge *sg, const uint8_t *msg)
{
	for (int i = 0; i < 16; i++) {
		memcpy((void *)(uintptr_t)sg[i].addr, msg, sg[i].length);
		msg += sg[i].length;
	}
}

static void sge_gather(const struct efi_sge *sg, uint8_t *msg)
{
	for (int i = 0; i < 16; i++) {
		memcpy(msg, (const void *)(uintptr_t)sg[i].addr, sg[i].length);
		msg += sg[i].length;
	}
}

static int post_sg(struct dp_conn *c, enum efi_wr_opcode op, struct efi_sge *sg, uint64_t roff)
{
	struct efi_send_wr wr = { .wr_id = op, .sg_list = sg, .num_sge = 16, .opcode = op,
				  .send_flags = EFI_SEND_SIGNALED }, *bad = NULL;

	wr.wr.rdma.remote_addr = c->remote.addr + roff;
	wr.wr.rdma.rkey = c->remote.rkey;
	return efi_post_send(c->qp, &wr, &bad);
}

void dp_case_sge16(struct dp_side *s)
{
	struct dp_qp_cfg cfg = { .buf_size = 256 << 10, .max_send_sge = 16, .max_recv_sge = 16 };
	struct dp_conn c;
	struct efi_sge sg[16];
	struct efi_wc wc;
	uint8_t *msg = malloc(20000);
	bool srv = s->opts->server;
	const size_t far = 128 << 10;

	DP_CHECK(msg, "out of memory");
	DP_CHECK(s->dev_attr.max_sge >= 16, "device max_sge %d < 16", s->dev_attr.max_sge);
	dp_setup(s, &c, 1, &cfg);

	/* Send: gathered from 16 pieces, scattered into 16 others */
	if (srv) {
		struct efi_recv_wr rwr = { .wr_id = 9, .sg_list = sg, .num_sge = 16 }, *bad;

		memset(c.buf, 0xee, c.size);
		sge_layout(sg, &c, 0, 1);
		DP_CHECK_RC(efi_post_recv(c.qp, &rwr, &bad));
		dp_sync(s, "send");
		dp_wait_ok(c.rcq, &wc, EFI_WC_RECV, "16-SGE SEND");
		DP_CHECK(wc.byte_len == 20000, "16-SGE SEND: byte_len %u, expected 20000", wc.byte_len);
		sge_gather(sg, msg);
		DP_CHECK_DATA(msg, 20000, 16, "16-SGE SEND");
		for (int i = 0; i < 16; i++)
			DP_CHECK(((uint8_t *)(uintptr_t)sg[i].addr)[sg[i].length] == 0xee,
				 "16-SGE SEND wrote into the gap after SGE %d", i);
	} else {
		sge_layout(sg, &c, far, 0);
		dp_fill(msg, 20000, 16);
		sge_scatter(sg, msg);
		dp_sync(s, "send");
		DP_CHECK_RC(post_sg(&c, EFI_WR_SEND, sg, 0));
		dp_wait_ok(c.scq, &wc, EFI_WC_SEND, "16-SGE SEND");
	}
	dp_sync(s, "send checked");

	/* Write gathered from 16 pieces into one range; Read scattered back */
	if (srv) {
		memset(c.buf, 0xee, c.size);
		dp_sync(s, "write");
		dp_sync(s, "written");
		DP_CHECK_DATA(c.buf + 64, 20000, 17, "16-SGE RDMA_WRITE");
		DP_CHECK(c.buf[63] == 0xee && c.buf[64 + 20000] == 0xee, "16-SGE RDMA_WRITE wrote outside");
		dp_fill(c.buf + 64, 20000, 18);
		dp_sync(s, "read");
	} else {
		sge_layout(sg, &c, far, 0);
		dp_fill(msg, 20000, 17);
		sge_scatter(sg, msg);
		dp_sync(s, "write");
		DP_CHECK_RC(post_sg(&c, EFI_WR_RDMA_WRITE, sg, 64));
		dp_wait_ok(c.scq, &wc, EFI_WC_RDMA_WRITE, "16-SGE RDMA_WRITE");
		dp_sync(s, "written");
		memset(c.buf, 0, c.size);
		sge_layout(sg, &c, 0, 1);
		dp_sync(s, "read");
		DP_CHECK_RC(post_sg(&c, EFI_WR_RDMA_READ, sg, 64));
		dp_wait_ok(c.scq, &wc, EFI_WC_RDMA_READ, "16-SGE RDMA_READ");
		sge_gather(sg, msg);
		DP_CHECK_DATA(msg, 20000, 18, "16-SGE RDMA_READ");
	}
	dp_sync(s, "sge done");
	free(msg);
	dp_conn_destroy(&c);
}

void dp_case_inline(struct dp_side *s)
{
	uint32_t max = s->dev_attr.max_inline_data;
	struct dp_qp_cfg cfg = { .buf_size = 64 << 10, .max_inline_data = max };
	struct dp_conn c;
	struct efi_wc wc;
	struct efi_qp_attr qa;
	struct efi_qp_init_attr ia;
	bool srv = s->opts->server;

	DP_CHECK(max > 0, "device max_inline_data is 0");
	dp_setup(s, &c, 1, &cfg);
	DP_CHECK_RC(efi_query_qp(c.qp, &qa, EFI_QP_CAP, &ia));
	DP_CHECK(ia.cap.max_inline_data >= max, "QP max_inline_data %u < requested %u",
		 ia.cap.max_inline_data, max);
	if (srv) {
		memset(c.buf, 0xee, c.size);
		dp_post_recv(&c, 0, 32 << 10, 1);
		dp_sync(s, "inline");
		dp_wait_ok(c.rcq, &wc, EFI_WC_RECV, "inline SEND");
		check_recv(&c, &wc, EFI_WC_RECV, max, false, 0, "inline SEND");
		DP_CHECK_DATA(c.buf, max, 31, "inline SEND");
		dp_sync(s, "written");
		DP_CHECK_DATA(c.buf + (32 << 10), max, 32, "inline RDMA_WRITE");
		DP_CHECK(c.buf[(32 << 10) + max] == 0xee, "inline RDMA_WRITE wrote past its end");
	} else {
		dp_sync(s, "inline");
		/* inline means copied at post time: the buffer is reused at once
		 * and its lkey is not even looked at */
		dp_fill(c.buf, max, 31);
		DP_CHECK_RC(dp_post(&c, EFI_WR_SEND, 0, max, 0, EFI_SEND_SIGNALED | EFI_SEND_INLINE, 1));
		memset(c.buf, 0, max);
		dp_fill(c.buf, max, 32);
		DP_CHECK_RC(dp_post(&c, EFI_WR_RDMA_WRITE, 0, max, 32 << 10, EFI_SEND_SIGNALED | EFI_SEND_INLINE, 2));
		memset(c.buf, 0, max);
		dp_wait_ok(c.scq, &wc, EFI_WC_SEND, "inline SEND");
		dp_wait_ok(c.scq, &wc, EFI_WC_RDMA_WRITE, "inline RDMA_WRITE");
		dp_sync(s, "written");
		DP_CHECK(dp_post(&c, EFI_WR_SEND, 0, max + 1, 0, EFI_SEND_SIGNALED | EFI_SEND_INLINE, 3) == EINVAL,
			 "an inline SEND of max_inline_data + 1 bytes was not refused with EINVAL");
		DP_CHECK(dp_post(&c, EFI_WR_RDMA_READ, 0, 8, 0, EFI_SEND_SIGNALED | EFI_SEND_INLINE, 4) == EINVAL,
			 "an inline RDMA_READ was not refused with EINVAL");
		DP_CHECK(dp_no_wc_for(c.scq, 50), "a refused post produced a completion");
	}
	dp_sync(s, "inline done");
	dp_conn_destroy(&c);
}

#define UNSIG_N		1000
#define UNSIG_EVERY	32
#define UNSIG_LEN	64

void dp_case_unsignaled(struct dp_side *s)
{
	struct dp_qp_cfg cfg = { .buf_size = UNSIG_N * UNSIG_LEN + 4096, .max_send_wr = 64,
				 .max_recv_wr = UNSIG_N };
	struct dp_conn c[2];
	struct efi_wc wc;
	bool srv = s->opts->server;

	dp_setup(s, &c[0], 1, &cfg);
	cfg.sq_sig_all = 1;
	cfg.max_recv_wr = 64;
	dp_setup(s, &c[1], 1, &cfg);
	if (srv) {
		for (uint64_t i = 0; i < UNSIG_N; i++)
			dp_post_recv(&c[0], i * UNSIG_LEN, UNSIG_LEN, i);
		for (uint64_t i = 0; i < 10; i++)
			dp_post_recv(&c[1], i * UNSIG_LEN, UNSIG_LEN, i);
		dp_sync(s, "posted");
		for (uint64_t i = 0; i < UNSIG_N; i++) {
			dp_wait_ok(c[0].rcq, &wc, EFI_WC_RECV, "unsignaled SENDs");
			DP_CHECK(wc.wr_id == i, "receive %" PRIu64 " completed as wr_id %" PRIu64 " (out of order)",
				 i, wc.wr_id);
			DP_CHECK(wc.byte_len == UNSIG_LEN, "receive %" PRIu64 ": byte_len %u", i, wc.byte_len);
			DP_CHECK_DATA(c[0].buf + i * UNSIG_LEN, UNSIG_LEN, 5000 + i, "unsignaled SEND");
		}
		for (uint64_t i = 0; i < 10; i++)
			dp_wait_ok(c[1].rcq, &wc, EFI_WC_RECV, "sq_sig_all SENDs");
	} else {
		uint64_t completions = 0, expect_next = UNSIG_EVERY - 1;

		for (uint64_t i = 0; i < UNSIG_N; i++)
			dp_fill(c[0].buf + i * UNSIG_LEN, UNSIG_LEN, 5000 + i);
		dp_sync(s, "posted");
		for (uint64_t i = 0; i < UNSIG_N; i++) {
			bool sig = i % UNSIG_EVERY == UNSIG_EVERY - 1 || i == UNSIG_N - 1;

			dp_post_ok(&c[0], EFI_WR_SEND, i * UNSIG_LEN, UNSIG_LEN, 0, sig ? EFI_SEND_SIGNALED : 0, i);
			/* 64 send slots: a signaled completion frees the slots
			 * of every unsignaled WR before it */
			if (sig && i >= 2 * UNSIG_EVERY - 1) {
				dp_wait_ok(c[0].scq, &wc, EFI_WC_SEND, "signaled SEND");
				DP_CHECK(wc.wr_id == expect_next, "signaled completion wr_id %" PRIu64 ", expected %"
					 PRIu64, wc.wr_id, expect_next);
				expect_next += UNSIG_EVERY;
				completions++;
			}
		}
		while (expect_next < UNSIG_N + UNSIG_EVERY - 1) {
			uint64_t want = expect_next < UNSIG_N ? expect_next : UNSIG_N - 1;

			dp_wait_ok(c[0].scq, &wc, EFI_WC_SEND, "signaled SEND");
			DP_CHECK(wc.wr_id == want, "signaled completion wr_id %" PRIu64 ", expected %" PRIu64,
				 wc.wr_id, want);
			expect_next += UNSIG_EVERY;
			completions++;
		}
		DP_CHECK(completions == (UNSIG_N + UNSIG_EVERY - 1) / UNSIG_EVERY,
			 "%" PRIu64 " send completions", completions);
		DP_CHECK(dp_no_wc_for(c[0].scq, 100), "an unsignaled SEND produced a completion");
		/* sq_sig_all: every WR completes, flag or not */
		for (uint64_t i = 0; i < 10; i++)
			dp_post_ok(&c[1], EFI_WR_SEND, 0, UNSIG_LEN, 0, 0, i);
		for (uint64_t i = 0; i < 10; i++) {
			dp_wait_ok(c[1].scq, &wc, EFI_WC_SEND, "sq_sig_all SEND");
			DP_CHECK(wc.wr_id == i, "sq_sig_all completion %" PRIu64 " has wr_id %" PRIu64, i, wc.wr_id);
		}
	}
	dp_sync(s, "unsignaled done");
	dp_conn_destroy(&c[1]);
	dp_conn_destroy(&c[0]);
}
