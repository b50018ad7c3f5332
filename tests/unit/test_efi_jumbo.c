/* SPDX-License-Identifier: MIT */
/*
 * Segments that fill the link (issue 14), end to end in one process over the
 * in-memory wire: a 9000-byte link's QP sends 8924-byte segments (counted in
 * packets, not only read from qp->seg), data stays byte-exact at that size
 * under loss, duplication and reordering (the reorder buffer holding jumbo
 * packets), and two links of different MTUs agree on one segment when each
 * side knows the other's link MTU, as the connection manager tells them
 * (efi_qp_set_peer_link_mtu), or keep to 4096 against a peer that did not
 * say (an older libefi).
 */
#include <arpa/inet.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efi_testutil.h"
#include "libefi/efi_int.h"	/* qp->seg, efi_qp_set_peer_link_mtu: not public */

#define MB (1024u * 1024u)

static const struct efi_qp_cap cap = {
	.max_send_wr = 256, .max_recv_wr = 256, .max_send_sge = 4, .max_recv_sge = 4,
};

static struct efi_mr *reg(struct efi_pd *pd, void *buf, size_t len)
{
	return treg(pd, buf, len, EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_WRITE | EFI_ACCESS_REMOTE_READ);
}

static void post1(struct efi_qp *qp, enum efi_wr_opcode op, uint64_t id, void *buf, uint32_t len,
		  struct efi_mr *mr, uint64_t raddr, uint32_t rkey)
{
	ck_assert_int_eq(tpost_send1(qp, op, id, buf, len, mr, raddr, rkey), 0);
}

static void expect_ok(struct efi_cq *cq, uint64_t id, uint32_t *byte_len)
{
	struct efi_wc wc;

	ck_assert_int_eq(tpoll(cq, &wc, 1, 20000), 1);
	ck_assert_msg(wc.status == EFI_WC_SUCCESS, "wr %llu: %s", (unsigned long long)wc.wr_id,
		      efi_wc_status_str(wc.status));
	ck_assert_uint_eq(wc.wr_id, id);
	if (byte_len)
		*byte_len = wc.byte_len;
}

/* One QP each side, connected with path_mtu mtu (both sides: what the two
 * agreed), each told the other's link MTU first when tell is set, as the
 * connection manager does. */
static void connect_pair(struct tpair *t, enum efi_mtu mtu, bool tell, uint32_t mtu0, uint32_t mtu1)
{
	union efi_gid g[2];
	uint32_t psn[2] = { 0xfffff0, 0x777 };

	for (int i = 0; i < 2; i++) {
		struct efi_qp_init_attr ia;

		memset(&ia, 0, sizeof(ia));
		ia.send_cq = ia.recv_cq = t->cq[i];
		ia.cap = cap;
		ia.qp_type = EFI_QPT_RC;
		t->qp[i] = efi_create_qp(t->pd[i], &ia);
		ck_assert_ptr_nonnull(t->qp[i]);
		ck_assert_int_eq(efi_query_gid(t->ctx[i], 1, 0, &g[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		if (tell)
			efi_qp_set_peer_link_mtu(t->qp[i], i ? mtu0 : mtu1);
		ck_assert_int_eq(tqp_to_rts(t->qp[i], t->qp[!i]->qp_num, &g[!i], psn[i], psn[!i], 7, 1, 12, 7, mtu),
				 0);
	}
}

static uint32_t seg_of(const struct efi_qp *qp)
{
	return ((const struct efi_qp_int *)qp)->seg;
}

/* Writes len bytes from qp 0 to qp 1 and reads them back, byte-exact, then
 * Sends them; returns the request packets qp 0 sent for the Write (first
 * transmissions). */
static uint64_t write_read_send(struct tpair *t, size_t len, unsigned seed)
{
	uint8_t *src = tpattern(len, seed), *dst = calloc(1, len), *back = calloc(1, len);
	uint8_t *rbuf = calloc(1, len);
	struct efi_mr *ms = reg(t->pd[0], src, len), *mb = reg(t->pd[0], back, len);
	struct efi_mr *md = reg(t->pd[1], dst, len), *mr = reg(t->pd[1], rbuf, len);
	struct efi_counters c0, c1;
	uint32_t n = 0;

	ck_assert_ptr_nonnull(dst);
	ck_assert_ptr_nonnull(back);
	ck_assert_ptr_nonnull(rbuf);
	ck_assert_int_eq(efi_query_qp_counters(t->qp[0], &c0), 0);
	post1(t->qp[0], EFI_WR_RDMA_WRITE, 1, src, (uint32_t)len, ms, (uintptr_t)dst, md->rkey);
	expect_ok(t->cq[0], 1, NULL);
	ck_assert_int_eq(efi_query_qp_counters(t->qp[0], &c1), 0);
	ck_assert_msg(memcmp(src, dst, len) == 0, "a Write of %zu bytes arrived corrupted", len);
	/* a Read is segmented by the responder and counted by the requester:
	 * both must have the same segment */
	post1(t->qp[0], EFI_WR_RDMA_READ, 2, back, (uint32_t)len, mb, (uintptr_t)dst, md->rkey);
	expect_ok(t->cq[0], 2, &n);
	ck_assert_uint_eq(n, len);
	ck_assert_msg(memcmp(src, back, len) == 0, "a Read of %zu bytes came back corrupted", len);
	/* and the other way: qp 1 reads from qp 0 */
	memset(back, 0, len);
	post1(t->qp[1], EFI_WR_RDMA_READ, 3, dst, (uint32_t)len, md, (uintptr_t)back, mb->rkey);
	expect_ok(t->cq[1], 3, NULL);
	tpost_recv1(t->qp[1], 4, rbuf, (uint32_t)len, mr);
	post1(t->qp[0], EFI_WR_SEND, 5, src, (uint32_t)len, ms, 0, 0);
	expect_ok(t->cq[0], 5, NULL);
	expect_ok(t->cq[1], 4, &n);
	ck_assert_uint_eq(n, len);
	ck_assert_msg(memcmp(src, rbuf, len) == 0, "a Send of %zu bytes arrived corrupted", len);
	efi_dereg_mr(ms);
	efi_dereg_mr(mb);
	efi_dereg_mr(md);
	efi_dereg_mr(mr);
	free(src);
	free(dst);
	free(back);
	free(rbuf);
	/* the Write's packets, each counted once: a loaded machine may have a
	 * tail probe or a timeout send one again on the in-memory wire (a
	 * probe is a retransmission, and counted as one when it leaves) */
	return (c1.tx_packets - c1.retransmissions) - (c0.tx_packets - c0.retransmissions);
}

/* A 9000-byte link's QP fills it: 1 MiB in ceil(2^20 / 8924) = 118 packets,
 * where 4096-byte segments took 256; a 1500-byte link's in 737 of 1424. */
START_TEST(jumbo_link_uses_large_segments)
{
	static const struct {
		uint32_t link;
		uint32_t seg;
	} cases[] = { { 9000, 8924 }, { 1500, 1424 }, { 4088, 4012 } };
	struct tpair t;

	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		uint64_t pkts;

		tpair_open(&t, cases[k].link, NULL);
		tpair_connect(&t, &cap, 0, 7, 1, 14, 7);
		ck_assert_uint_eq(seg_of(t.qp[0]), cases[k].seg);
		ck_assert_uint_eq(seg_of(t.qp[1]), cases[k].seg);
		pkts = write_read_send(&t, MB, k + 1);
		printf("link %u: 1 MiB Write in %llu packets (segment %u)\n", cases[k].link,
		       (unsigned long long)pkts, cases[k].seg);
		ck_assert_uint_eq(pkts, (MB + cases[k].seg - 1) / cases[k].seg);
		tpair_close(&t);
	}
}
END_TEST

/* Jumbo segments under 1% loss, duplication and reordering: byte-exact,
 * with early packets held (and given back) by the reorder buffer. */
START_TEST(jumbo_lossy)
{
	struct tpair t;
	struct tw_fault f = { .loss = 0.01, .dup = 0.01, .reorder = 0.02, .seed = 9000 + (uint64_t)_i * 131 };
	struct efi_counters c;
	static const size_t sizes[] = { 1, 8924, 8925, 3 * 8924 - 1, 300000, 4 * MB + 17 };

	tpair_open(&t, 9000, &f);
	tpair_connect(&t, &cap, 0, 7, 1, 12 /* 16 ms */, 7);
	ck_assert_uint_eq(seg_of(t.qp[0]), 8924);
	for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		write_read_send(&t, sizes[k], 40 + k);
	ck_assert_int_eq(efi_query_qp_counters(t.qp[0], &c), 0);
	ck_assert_uint_gt(c.retransmissions, 0);
	ck_assert_int_eq(efi_query_qp_counters(t.qp[1], &c), 0);
	ck_assert_uint_gt(c.duplicates, 0);
	tpair_close(&t);
}
END_TEST

/* A 9000-byte and a 1500-byte link.  Told each other's link MTU (what the
 * connection manager now carries), both take the smaller link's segment,
 * 1424, and Reads either way are exact.  path_mtu is the smaller active
 * MTU, 1024, as the connection manager negotiates it. */
START_TEST(mixed_links_agree)
{
	struct tpair t;

	tpair_open_mtus(&t, 9000, 1500, NULL);
	connect_pair(&t, EFI_MTU_1024, true, 9000, 1500);
	ck_assert_uint_eq(seg_of(t.qp[0]), 1424);
	ck_assert_uint_eq(seg_of(t.qp[1]), 1424);
	ck_assert_uint_eq(write_read_send(&t, MB, 7), (MB + 1423) / 1424);
	write_read_send(&t, 5000, 8);
	tpair_close(&t);

	/* the other way round: the 1500-byte side is context 0 */
	tpair_open_mtus(&t, 1500, 9000, NULL);
	connect_pair(&t, EFI_MTU_1024, true, 1500, 9000);
	ck_assert_uint_eq(seg_of(t.qp[0]), 1424);
	ck_assert_uint_eq(seg_of(t.qp[1]), 1424);
	write_read_send(&t, MB + 3, 9);
	tpair_close(&t);
}
END_TEST

/* A peer that said no link MTU through the connection manager (an older
 * libefi, whose segments stop at 4096): on 9000-byte links this side keeps
 * to 4096 as well.  Both sides told 0 here, so both run the rule. */
START_TEST(older_peer_keeps_4096)
{
	struct tpair t;

	tpair_open(&t, 9000, NULL);
	connect_pair(&t, EFI_MTU_4096, true, 0, 0);
	ck_assert_uint_eq(seg_of(t.qp[0]), 4096);
	ck_assert_uint_eq(seg_of(t.qp[1]), 4096);
	ck_assert_uint_eq(write_read_send(&t, MB, 10), MB / 4096);
	tpair_close(&t);
	/* on a 1500-byte link nothing changes: 1424 was below 4096 */
	tpair_open(&t, 1500, NULL);
	connect_pair(&t, EFI_MTU_1024, true, 0, 0);
	ck_assert_uint_eq(seg_of(t.qp[0]), 1424);
	tpair_close(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("efi_jumbo");
	TCase *tc = tcase_create("jumbo");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, jumbo_link_uses_large_segments);
	tcase_add_loop_test(tc, jumbo_lossy, 0, 3);
	tcase_add_test(tc, mixed_links_agree);
	tcase_add_test(tc, older_peer_keeps_4096);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
