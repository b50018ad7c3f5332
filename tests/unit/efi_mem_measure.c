/* SPDX-License-Identifier: MIT */
/*
 * Bytes per QP beyond its rings, by the heap (mallinfo2: heap and mmap'd
 * chunks), for issue 18's table: idle, after a burst, under loss, and in
 * order again.  Public API and the in-memory wire only, so that the same
 * program measures any libefi (link it against libeficore.la); built with
 * -DEFI_QP_MEM it adds what libefi maps outside the heap (the resident
 * pages of the send records, efi_qp_mem).  Not a test: prints, asserts
 * nothing.
 *
 *   efi_mem_measure [NQP]
 */
#include <check.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "efi_testutil.h"
#ifdef EFI_QP_MEM
#include "libefi/efi_int.h"
#endif

/* rings of the smallest QP: two send WQEs (112 B) with one SGE (16 B),
 * two receive WQEs (32 B) with one SGE; the same in every version measured */
#define RINGS (2u * (112u + 16u) + 2u * (32u + 16u))

static long heap(void)
{
	struct mallinfo2 mi = mallinfo2();
	return (long)(mi.uordblks + mi.hblkhd);
}

/* bytes outside the heap the QPs hold (0 for a libefi without efi_qp_mem) */
static long mapped(struct efi_qp **q[2], int nqp)
{
	long n = 0;
#ifdef EFI_QP_MEM
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < nqp; i++) {
			struct efi_qp_mem m;
			efi_qp_mem(q[s][i], &m);
			n += (long)m.txrec_resident;
		}
#else
	(void)q;
	(void)nqp;
#endif
	return n;
}

static void xfer(struct tpair *t, int from, int to, struct efi_qp *qs, struct efi_qp *qr, size_t len, unsigned n)
{
	uint8_t *src = malloc(len), *dst = malloc(len);
	struct efi_mr *ms = efi_reg_mr(t->pd[from], src, len, EFI_ACCESS_LOCAL_WRITE);
	struct efi_mr *md = efi_reg_mr(t->pd[to], dst, len, EFI_ACCESS_LOCAL_WRITE);

	memset(src, 0x5a, len);
	for (unsigned k = 0; k < n; k++) {
		struct efi_sge ss = { (uintptr_t)src, (uint32_t)len, ms->lkey }, sd = { (uintptr_t)dst, (uint32_t)len, md->lkey };
		struct efi_recv_wr rw = { .wr_id = k, .sg_list = &sd, .num_sge = 1 }, *rb;
		struct efi_send_wr wr, *b;
		struct efi_wc wc;
		memset(&wr, 0, sizeof(wr));
		wr.sg_list = &ss;
		wr.num_sge = 1;
		wr.opcode = EFI_WR_SEND;
		wr.send_flags = EFI_SEND_SIGNALED;
		if (efi_post_recv(qr, &rw, &rb) || efi_post_send(qs, &wr, &b))
			abort();
		if (tpoll(t->cq[from], &wc, 1, 60000) != 1 || wc.status != EFI_WC_SUCCESS ||
		    tpoll(t->cq[to], &wc, 1, 60000) != 1 || wc.status != EFI_WC_SUCCESS)
			abort();
	}
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	free(src);
	free(dst);
}

static void measure(const char *title, const struct tw_fault *f, int nqp)
{
	static const struct efi_qp_cap cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 };
	struct efi_qp **q[2] = { calloc((size_t)nqp, sizeof(void *)), calloc((size_t)nqp, sizeof(void *)) };
	struct tpair t;
	long h0;

	tpair_open(&t, 4096, f);
	h0 = heap();
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < nqp; i++) {
			struct efi_qp_init_attr ia;
			memset(&ia, 0, sizeof(ia));
			ia.qp_type = EFI_QPT_RC;
			ia.send_cq = ia.recv_cq = t.cq[s];
			ia.cap = cap;
			if (!(q[s][i] = efi_create_qp(t.pd[s], &ia)))
				abort();
		}
	for (int i = 0; i < nqp; i++) {
		union efi_gid g[2];
		struct efi_port_attr pa;
		for (int s = 0; s < 2; s++)
			efi_query_gid(t.ctx[s], 1, 0, &g[s]);
		for (int s = 0; s < 2; s++) {
			efi_query_port(t.ctx[s], 1, &pa);
			if (tqp_to_rts(q[s][i], q[!s][i]->qp_num, &g[!s], 100, 100, 7, 1, 12, 7, pa.active_mtu))
				abort();
		}
	}
#define ROW(what) printf("%-12s %-22s %8ld B/QP  (heap %ld, mapped %ld)\n", title, what, \
			 (heap() - h0 + mapped(q, nqp)) / (2 * nqp) - (long)RINGS, \
			 (heap() - h0) / (2 * nqp) - (long)RINGS, mapped(q, nqp) / (2 * nqp))
	ROW("idle");
	/* a burst over every QP: 64 messages of 64 KiB one way, then idle */
	for (int i = 0; i < nqp; i++)
		xfer(&t, 0, 1, q[0][i], q[1][i], 65536, 64);
	ROW("after a burst");
	/* one message of one packet at a time: in order whatever the wire */
	for (int i = 0; i < nqp; i++)
		xfer(&t, 0, 1, q[0][i], q[1][i], 512, 1100);
	ROW("then in order again");
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < nqp; i++)
			efi_destroy_qp(q[s][i]);
	tpair_close(&t);
	free(q[0]);
	free(q[1]);
}

static int nqp_arg = 16;

/* inside a check test: the helpers' ck_assert calls need one */
START_TEST(run)
{
	struct tw_fault lossy = { .loss = 0.02, .dup = 0.01, .reorder = 0.05, .seed = 1812 };

	printf("%d QPs a side, rings (%u B) subtracted; per QP, both sides averaged\n", nqp_arg, RINGS);
	measure("no loss", NULL, nqp_arg);
	measure("under loss", &lossy, nqp_arg);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s = suite_create("efi_mem_measure");
	TCase *tc = tcase_create("measure");
	SRunner *sr;
	int failed;

	if (argc > 1)
		nqp_arg = atoi(argv[1]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	tcase_set_timeout(tc, 0);
	tcase_add_test(tc, run);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_SILENT);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
