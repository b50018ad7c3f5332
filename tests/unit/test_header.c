/* SPDX-License-Identifier: MIT */
/*
 * <efi/efi.h> on its own: it compiles as the first and only include, has the
 * fields a ported verbs program uses, and its enum values are the verbs
 * values (checked against <infiniband/verbs.h> itself when that is
 * installed, and against the numbers written down here otherwise).
 */
#include <efi/efi.h>
#include <efi/efi.h>	/* twice: the guard works */

#include <check.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<infiniband/verbs.h>)
#include <infiniband/verbs.h>
#define HAVE_VERBS_H 1
#endif
#endif

START_TEST(enum_values_are_the_verbs_values)
{
	ck_assert_int_eq(EFI_ACCESS_LOCAL_WRITE, 1);
	ck_assert_int_eq(EFI_ACCESS_REMOTE_WRITE, 2);
	ck_assert_int_eq(EFI_ACCESS_REMOTE_READ, 4);
	ck_assert_int_eq(EFI_ACCESS_REMOTE_ATOMIC, 8);
	ck_assert_int_eq(EFI_WR_RDMA_WRITE, 0);
	ck_assert_int_eq(EFI_WR_SEND, 2);
	ck_assert_int_eq(EFI_WR_ATOMIC_FETCH_AND_ADD, 6);
	ck_assert_int_eq(EFI_SEND_FENCE, 1);
	ck_assert_int_eq(EFI_SEND_INLINE, 8);
	ck_assert_int_eq(EFI_WC_SUCCESS, 0);
	ck_assert_int_eq(EFI_WC_RNR_RETRY_EXC_ERR, 13);
	ck_assert_int_eq(EFI_WC_GENERAL_ERR, 21);
	ck_assert_int_eq(EFI_WC_RECV, 128);
	ck_assert_int_eq(EFI_WC_RECV_RDMA_WITH_IMM, 129);
	ck_assert_int_eq(EFI_WC_WITH_IMM, 2);
	ck_assert_int_eq(EFI_QPS_ERR, 6);
	ck_assert_int_eq(EFI_QPT_RC, 2);
	ck_assert_int_eq(EFI_QP_DEST_QPN, 1 << 20);
	ck_assert_int_eq(EFI_MTU_1024, 3);
	ck_assert_int_eq(EFI_PORT_ACTIVE, 4);
#ifdef HAVE_VERBS_H
	ck_assert_int_eq(EFI_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_ATOMIC);
	ck_assert_int_eq(EFI_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM);
	ck_assert_int_eq(EFI_WR_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM);
	ck_assert_int_eq(EFI_WR_RDMA_READ, IBV_WR_RDMA_READ);
	ck_assert_int_eq(EFI_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP);
	ck_assert_int_eq(EFI_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD);
	ck_assert_int_eq(EFI_SEND_SIGNALED, IBV_SEND_SIGNALED);
	ck_assert_int_eq(EFI_SEND_SOLICITED, IBV_SEND_SOLICITED);
	ck_assert_int_eq(EFI_SEND_INLINE, IBV_SEND_INLINE);
	ck_assert_int_eq(EFI_WC_LOC_LEN_ERR, IBV_WC_LOC_LEN_ERR);
	ck_assert_int_eq(EFI_WC_LOC_PROT_ERR, IBV_WC_LOC_PROT_ERR);
	ck_assert_int_eq(EFI_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(EFI_WC_REM_INV_REQ_ERR, IBV_WC_REM_INV_REQ_ERR);
	ck_assert_int_eq(EFI_WC_REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR);
	ck_assert_int_eq(EFI_WC_REM_OP_ERR, IBV_WC_REM_OP_ERR);
	ck_assert_int_eq(EFI_WC_RETRY_EXC_ERR, IBV_WC_RETRY_EXC_ERR);
	ck_assert_int_eq(EFI_WC_RNR_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR);
	ck_assert_int_eq(EFI_WC_GENERAL_ERR, IBV_WC_GENERAL_ERR);
	ck_assert_int_eq(EFI_WC_COMP_SWAP, IBV_WC_COMP_SWAP);
	ck_assert_int_eq(EFI_WC_FETCH_ADD, IBV_WC_FETCH_ADD);
	ck_assert_int_eq(EFI_WC_RECV, IBV_WC_RECV);
	ck_assert_int_eq(EFI_WC_RECV_RDMA_WITH_IMM, IBV_WC_RECV_RDMA_WITH_IMM);
	ck_assert_int_eq(EFI_QPS_RTS, IBV_QPS_RTS);
	ck_assert_int_eq(EFI_QPT_RC, IBV_QPT_RC);
	ck_assert_int_eq(EFI_MTU_4096, IBV_MTU_4096);
	ck_assert_int_eq(EFI_QP_ACCESS_FLAGS, IBV_QP_ACCESS_FLAGS);
	ck_assert_int_eq(EFI_QP_AV, IBV_QP_AV);
	ck_assert_int_eq(EFI_QP_PATH_MTU, IBV_QP_PATH_MTU);
	ck_assert_int_eq(EFI_QP_TIMEOUT, IBV_QP_TIMEOUT);
	ck_assert_int_eq(EFI_QP_RETRY_CNT, IBV_QP_RETRY_CNT);
	ck_assert_int_eq(EFI_QP_RNR_RETRY, IBV_QP_RNR_RETRY);
	ck_assert_int_eq(EFI_QP_RQ_PSN, IBV_QP_RQ_PSN);
	ck_assert_int_eq(EFI_QP_MAX_QP_RD_ATOMIC, IBV_QP_MAX_QP_RD_ATOMIC);
	ck_assert_int_eq(EFI_QP_MIN_RNR_TIMER, IBV_QP_MIN_RNR_TIMER);
	ck_assert_int_eq(EFI_QP_SQ_PSN, IBV_QP_SQ_PSN);
	ck_assert_int_eq(EFI_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC);
	ck_assert_int_eq(EFI_QP_DEST_QPN, IBV_QP_DEST_QPN);
	ck_assert_int_eq(EFI_PORT_ACTIVE, IBV_PORT_ACTIVE);
	ck_assert_int_eq(EFI_LINK_LAYER_ETHERNET, IBV_LINK_LAYER_ETHERNET);
#endif
}
END_TEST

/* The structs a verbs program fills in or reads have the verbs layout, so
 * that code doing arithmetic on them or sharing them across a wire (perftest
 * exchanges GIDs raw) keeps working. */
START_TEST(struct_layouts)
{
	ck_assert_uint_eq(sizeof(union efi_gid), 16);
	ck_assert_uint_eq(offsetof(union efi_gid, global.interface_id), 8);
	ck_assert_uint_eq(sizeof(struct efi_sge), 16);
	ck_assert_uint_eq(offsetof(struct efi_sge, lkey), 12);
	ck_assert_uint_eq(offsetof(struct efi_wc, status), 8);
	ck_assert_uint_eq(offsetof(struct efi_wc, imm_data), 24);
#ifdef HAVE_VERBS_H
	ck_assert_uint_eq(sizeof(struct efi_wc), sizeof(struct ibv_wc));
	ck_assert_uint_eq(offsetof(struct efi_wc, byte_len), offsetof(struct ibv_wc, byte_len));
	ck_assert_uint_eq(offsetof(struct efi_wc, src_qp), offsetof(struct ibv_wc, src_qp));
	ck_assert_uint_eq(offsetof(struct efi_wc, wc_flags), offsetof(struct ibv_wc, wc_flags));
	ck_assert_uint_eq(sizeof(struct efi_qp_cap), sizeof(struct ibv_qp_cap));
	ck_assert_uint_eq(sizeof(struct efi_ah_attr), sizeof(struct ibv_ah_attr));
	ck_assert_uint_eq(sizeof(struct efi_qp_attr), sizeof(struct ibv_qp_attr));
	ck_assert_uint_eq(offsetof(struct efi_qp_attr, dest_qp_num),
			  offsetof(struct ibv_qp_attr, dest_qp_num));
	ck_assert_uint_eq(offsetof(struct efi_qp_attr, rnr_retry),
			  offsetof(struct ibv_qp_attr, rnr_retry));
	ck_assert_uint_eq(offsetof(struct efi_qp_attr, ah_attr.grh.dgid),
			  offsetof(struct ibv_qp_attr, ah_attr.grh.dgid));
	ck_assert_uint_eq(sizeof(struct efi_recv_wr), sizeof(struct ibv_recv_wr));
#endif
}
END_TEST

/* A verbs-style program's use of the API, field by field: if a name is
 * missing or misspelt, this does not compile. */
START_TEST(fields_a_ported_program_uses)
{
	struct efi_qp_init_attr init;
	struct efi_qp_attr attr;
	struct efi_send_wr swr, *bad_swr = NULL;
	struct efi_recv_wr rwr;
	struct efi_sge sge = { .addr = 0x1000, .length = 8, .lkey = 7 };
	struct efi_wc wc;
	struct efi_counters c;

	memset(&init, 0, sizeof(init));
	init.send_cq = init.recv_cq = NULL;
	init.cap.max_send_wr = init.cap.max_recv_wr = 16;
	init.cap.max_send_sge = init.cap.max_recv_sge = 1;
	init.cap.max_inline_data = 64;
	init.qp_type = EFI_QPT_RC;
	init.sq_sig_all = 0;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = EFI_QPS_RTR;
	attr.path_mtu = EFI_MTU_1024;
	attr.dest_qp_num = 0x1001;
	attr.rq_psn = 0xabcdef;
	attr.sq_psn = 0x123456;
	attr.max_dest_rd_atomic = attr.max_rd_atomic = 16;
	attr.min_rnr_timer = 12;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.qp_access_flags = EFI_ACCESS_REMOTE_WRITE | EFI_ACCESS_REMOTE_READ;
	attr.ah_attr.is_global = 1;
	attr.ah_attr.port_num = 1;
	attr.ah_attr.grh.sgid_index = 0;
	attr.ah_attr.grh.dgid.raw[15] = 5;
	ck_assert_uint_eq(attr.ah_attr.grh.dgid.raw[15], 5);

	memset(&swr, 0, sizeof(swr));
	swr.wr_id = 42;
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.opcode = EFI_WR_ATOMIC_CMP_AND_SWP;
	swr.send_flags = EFI_SEND_SIGNALED | EFI_SEND_FENCE;
	swr.wr.atomic.remote_addr = 0x2000;
	swr.wr.atomic.compare_add = 1;
	swr.wr.atomic.swap = 2;
	swr.wr.atomic.rkey = 0x55;
	ck_assert_uint_eq(swr.wr.atomic.rkey, 0x55);
	swr.opcode = EFI_WR_RDMA_WRITE_WITH_IMM;
	swr.imm_data = 0x01020304;
	swr.wr.rdma.remote_addr = 0x3000;
	swr.wr.rdma.rkey = 0x66;
	swr.next = NULL;
	ck_assert_ptr_null(bad_swr);

	memset(&rwr, 0, sizeof(rwr));
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	rwr.next = NULL;

	memset(&wc, 0, sizeof(wc));
	wc.status = EFI_WC_SUCCESS;
	wc.opcode = EFI_WC_RECV_RDMA_WITH_IMM;
	ck_assert(wc.opcode & EFI_WC_RECV);
	wc.wc_flags = EFI_WC_WITH_IMM;
	ck_assert_uint_eq(wc.byte_len + wc.imm_data + wc.qp_num + wc.src_qp, 0);

	memset(&c, 0, sizeof(c));
	ck_assert_uint_eq(c.tx_packets + c.tx_bytes + c.rx_packets + c.rx_bytes +
			  c.retransmissions + c.duplicates + c.rnr_naks_received +
			  c.drops + c.drop_reasons[EFI_DROP_BAD_SOURCE], 0);
	ck_assert_int_le(EFI_DROP_REASON_COUNT, EFI_DROP_REASON_MAX);
}
END_TEST

START_TEST(mtu_to_num)
{
	ck_assert_int_eq(efi_mtu_to_num(EFI_MTU_256), 256);
	ck_assert_int_eq(efi_mtu_to_num(EFI_MTU_512), 512);
	ck_assert_int_eq(efi_mtu_to_num(EFI_MTU_1024), 1024);
	ck_assert_int_eq(efi_mtu_to_num(EFI_MTU_2048), 2048);
	ck_assert_int_eq(efi_mtu_to_num(EFI_MTU_4096), 4096);
	ck_assert_int_eq(efi_mtu_to_num((enum efi_mtu)0), -1);
	ck_assert_int_eq(efi_mtu_to_num((enum efi_mtu)6), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("header");
	TCase *tc = tcase_create("efi.h");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, enum_values_are_the_verbs_values);
	tcase_add_test(tc, struct_layouts);
	tcase_add_test(tc, fields_a_ported_program_uses);
	tcase_add_test(tc, mtu_to_num);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
