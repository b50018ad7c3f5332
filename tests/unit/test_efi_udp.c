/* SPDX-License-Identifier: MIT */
/*
 * libefi over real UDP sockets on 127.0.0.1 (the wire_udp backend), and the
 * data-path promise: efi_post_send, efi_post_recv and efi_poll_cq make no
 * system call but datagram I/O (and futex when contended).  A seccomp filter
 * on the test thread traps anything else while it runs a loop of posts and
 * polls; the progress threads started before it are not filtered.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "efi_testutil.h"
#include "libefi/efi_int.h"

/* Two contexts with UDP sockets on 127.0.0.1, ports base+1 and base+2. */
static void open_udp_pair(struct tpair *t)
{
	struct efi_ctx_params p[2];
	uint32_t base = 0;
	int fds[2];

	memset(t, 0, sizeof(*t));
	memset(p, 0, sizeof(p));
	/* find two free consecutive ports */
	for (int attempt = 0; attempt < 200; attempt++) {
		base = 20000 + (uint32_t)((getpid() * 7 + attempt * 131) % 40000);
		int ok = 1;
		for (int i = 0; i < 2; i++) {
			struct sockaddr_in6 sa = { .sin6_family = AF_INET6,
						   .sin6_port = htons((uint16_t)(base + 1 + (uint32_t)i)) };
			int one = 0;
			inet_pton(AF_INET6, "::ffff:127.0.0.1", &sa.sin6_addr);
			fds[i] = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			ck_assert_int_ge(fds[i], 0);
			setsockopt(fds[i], IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
			if (bind(fds[i], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
				close(fds[i]);
				if (i == 1)
					close(fds[0]);
				ok = 0;
				break;
			}
		}
		if (ok)
			break;
		base = 0;
	}
	ck_assert_uint_ne(base, 0);
	for (int i = 0; i < 2; i++) {
		struct efi_wire *w;
		int big = 4 << 20;
		setsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
		setsockopt(fds[i], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
		snprintf(p[i].ifname, sizeof(p[i].ifname), "lo");
		p[i].link_mtu = 1500;
		p[i].port_base = base;
		p[i].qpn_base = (uint32_t)(i + 1) << 12;
		p[i].ngids = 1;
		tgid_v4(&p[i].gids[0], 127, 0, 0, 1);
		w = efi_wire_udp_create(fds[i]);
		ck_assert_ptr_nonnull(w);
		t->ctx[i] = efi_context_create(w, &p[i], NULL);
		ck_assert_ptr_nonnull(t->ctx[i]);
		t->pd[i] = efi_alloc_pd(t->ctx[i]);
		t->cq[i] = efi_create_cq(t->ctx[i], 1024, NULL, NULL, 0);
		ck_assert_ptr_nonnull(t->cq[i]);
	}
}

static const struct efi_qp_cap cap = {
	.max_send_wr = 128, .max_recv_wr = 128, .max_send_sge = 2, .max_recv_sge = 2,
	.max_inline_data = 64,
};

/* Allows the syscalls of datagram I/O and futex; traps the rest.  (Unused
 * under the sanitizers, whose runtime makes system calls of its own.) */
static void __attribute__((unused)) install_filter(void)
{
	static const int allowed[] = {
		__NR_sendmmsg, __NR_recvmmsg, __NR_sendmsg, __NR_recvmsg, __NR_sendto,
		__NR_recvfrom, __NR_futex,
		/* what a thread needs to end (not the data path) */
		__NR_exit, __NR_madvise, __NR_munmap, __NR_rt_sigprocmask,
	};
	struct sock_filter f[32];
	unsigned n = 0;

	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	for (unsigned i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)allowed[i], 0, 1);
		f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP);
	struct sock_fprog prog = { .len = (unsigned short)n, .filter = f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		abort();
	/* this thread only (no SECCOMP_FILTER_FLAG_TSYNC) */
	if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
		abort();
}

struct loop_args {
	struct tpair *t;
	struct efi_mr *ms, *md;
	uint8_t *src, *dst;
	int sent, recvd, errors;
};

/* The filtered thread: no check assertions here (they write to a pipe). */
static void *post_poll_loop(void *arg)
{
	struct loop_args *a = arg;
	struct tpair *t = a->t;
	struct efi_wc wc[16];

#ifndef __SANITIZE_ADDRESS__
	/* (the sanitizers' runtime maps memory behind our back: no filter then) */
	install_filter();
#endif
	for (long spins = 0; a->recvd < 1000 && spins < 100000000; spins++) {
		struct efi_sge s = { (uintptr_t)a->src, 4000, a->ms->lkey }, d = { (uintptr_t)a->dst, 8192, a->md->lkey };
		struct efi_recv_wr r = { .wr_id = 1, .sg_list = &d, .num_sge = 1 }, *rb;
		struct efi_send_wr w = { .wr_id = 2, .sg_list = &s, .num_sge = 1, .opcode = EFI_WR_SEND }, *wb;
		int n;

		if (a->sent < 1000 && a->sent - a->recvd < 32) {
			if (efi_post_recv(t->qp[1], &r, &rb) || efi_post_send(t->qp[0], &w, &wb))
				a->errors++;
			a->sent++;
		}
		n = efi_poll_cq(t->cq[1], 16, wc);
		if (n < 0)
			a->errors++;
		for (int k = 0; k < n; k++)
			if (wc[k].status != EFI_WC_SUCCESS || wc[k].byte_len != 4000)
				a->errors++;
		a->recvd += n > 0 ? n : 0;
		n = efi_poll_cq(t->cq[0], 16, wc);
		for (int k = 0; k < n; k++)
			if (wc[k].status != EFI_WC_SUCCESS)
				a->errors++;
	}
	return NULL;
}

START_TEST(test_udp_no_syscalls)
{
	struct tpair t;
	static uint8_t src[8192], dst[8192];
	struct loop_args a;
	pthread_t th;

	open_udp_pair(&t);
	tpair_connect(&t, &cap, 1, 7, 1, 14, 7);
	memset(&a, 0, sizeof(a));
	a.t = &t;
	a.src = src;
	a.dst = dst;
	a.ms = efi_reg_mr(t.pd[0], src, sizeof(src), EFI_ACCESS_LOCAL_WRITE);
	a.md = efi_reg_mr(t.pd[1], dst, sizeof(dst), EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_WRITE);
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 31);
	/* A forbidden system call kills the process with SIGSYS: the test fails. */
	ck_assert_int_eq(pthread_create(&th, NULL, post_poll_loop, &a), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(a.errors, 0);
	ck_assert_int_eq(a.sent, 1000);
	ck_assert_int_eq(a.recvd, 1000);
	ck_assert(memcmp(src, dst, 4000) == 0);
	efi_dereg_mr(a.ms);
	efi_dereg_mr(a.md);
	tpair_close(&t);
}
END_TEST

START_TEST(test_udp_rdma)
{
	struct tpair t;
	size_t n = 6u << 20;
	uint8_t *src = malloc(n), *dst = calloc(1, n), *back = calloc(1, n);
	struct efi_wc wc;

	open_udp_pair(&t);
	tpair_connect(&t, &cap, 1, 7, 1, 14, 7);
	for (size_t i = 0; i < n; i++)
		src[i] = (uint8_t)(i * 7 + (i >> 12));
	struct efi_mr *ms = efi_reg_mr(t.pd[0], src, n, EFI_ACCESS_LOCAL_WRITE);
	struct efi_mr *mb = efi_reg_mr(t.pd[0], back, n, EFI_ACCESS_LOCAL_WRITE);
	struct efi_mr *md = efi_reg_mr(t.pd[1], dst, n, EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_WRITE |
				       EFI_ACCESS_REMOTE_READ);
	struct efi_sge s = { (uintptr_t)src, (uint32_t)n, ms->lkey }, b = { (uintptr_t)back, (uint32_t)n, mb->lkey };
	struct efi_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = EFI_WR_RDMA_WRITE,
				 .wr.rdma = { (uintptr_t)dst, md->rkey } }, *wb;
	ck_assert_int_eq(efi_post_send(t.qp[0], &w, &wb), 0);
	ck_assert_int_eq(tpoll(t.cq[0], &wc, 1, 20000), 1);
	ck_assert_int_eq(wc.status, EFI_WC_SUCCESS);
	ck_assert(memcmp(src, dst, n) == 0);
	w.wr_id = 2;
	w.opcode = EFI_WR_RDMA_READ;
	w.sg_list = &b;
	ck_assert_int_eq(efi_post_send(t.qp[0], &w, &wb), 0);
	ck_assert_int_eq(tpoll(t.cq[0], &wc, 1, 20000), 1);
	ck_assert_int_eq(wc.status, EFI_WC_SUCCESS);
	ck_assert(memcmp(src, back, n) == 0);
	efi_dereg_mr(ms);
	efi_dereg_mr(mb);
	efi_dereg_mr(md);
	tpair_close(&t);
	free(src);
	free(dst);
	free(back);
}
END_TEST

/*
 * A QP connected by hand (no connection key, as perftest or efi-perf
 * --tcp-exchange connect) takes packets only from its peer's lane ports:
 * another process of the peer's address (here: a socket of our own on
 * 127.0.0.1) forging a Write with a wrong rkey, at the very PSN the
 * responder expects, would otherwise fail the QP with a remote access
 * error (issue 22).  The forgery is counted as a bad source and the QP
 * goes on serving its real peer.
 */
START_TEST(test_udp_forged_write_dropped)
{
	struct tpair t;
	struct efi_counters c;
	uint8_t src[64], dst[64], buf[256];
	struct efi_wc wc;
	struct efi_pkt h;
	size_t hl;

	open_udp_pair(&t);
	tpair_connect(&t, &cap, 1, 7, 1, 14, 7);
	memset(src, 0x5a, sizeof(src));
	memset(dst, 0, sizeof(dst));
	struct efi_mr *ms = efi_reg_mr(t.pd[0], src, sizeof(src), EFI_ACCESS_LOCAL_WRITE);
	struct efi_mr *md = efi_reg_mr(t.pd[1], dst, sizeof(dst), EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_WRITE);
	ck_assert_ptr_nonnull(ms);
	ck_assert_ptr_nonnull(md);

	/* The forgery: QP 0's QPN as the source, the PSN QP 1 expects next,
	 * an rkey that does not exist, from a port that is no lane of QP 0's
	 * context. */
	const struct efi_qp_int *victim = (const struct efi_qp_int *)t.qp[1];
	memset(&h, 0, sizeof(h));
	h.version = EFI_WIRE_VERSION;
	h.opcode = EFI_OP_WRITE_ONLY;
	h.flags = EFI_PKT_F_ACKREQ;
	h.dest_qpn = t.qp[1]->qp_num;
	h.src_qpn = t.qp[0]->qp_num;
	h.psn = victim->rcv_psn;
	h.reth.va = (uintptr_t)dst;
	h.reth.rkey = md->rkey ^ 0x5a5a5a5au;
	h.reth.dma_len = 8;
	hl = efi_pkt_build_hdr(buf, sizeof(buf) - 8, &h);
	ck_assert_uint_gt(hl, 0);
	memset(buf + hl, 0xee, 8);
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_in6 to = { .sin6_family = AF_INET6,
				   .sin6_port = htons((uint16_t)efi_lane_port(victim->ctx->p.port_base, 0,
									       t.qp[1]->qp_num)) };
	inet_pton(AF_INET6, "::ffff:127.0.0.1", &to.sin6_addr);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(sendto(fd, buf, hl + 8, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)(hl + 8));
	close(fd);
	/* QP 1 sees them (its progress thread runs) and drops them */
	for (int i = 0; i < 2000; i++) {
		ck_assert_int_eq(efi_query_qp_counters(t.qp[1], &c), 0);
		if (c.drop_reasons[EFI_DROP_BAD_SOURCE] >= 3)
			break;
		usleep(1000);
	}
	ck_assert_uint_ge(c.drop_reasons[EFI_DROP_BAD_SOURCE], 3);

	/* The real peer is still served. */
	struct efi_sge sg = { (uintptr_t)src, sizeof(src), ms->lkey };
	struct efi_send_wr w = { .wr_id = 9, .sg_list = &sg, .num_sge = 1, .opcode = EFI_WR_RDMA_WRITE,
				 .wr.rdma = { (uintptr_t)dst, md->rkey } }, *wb;
	ck_assert_int_eq(efi_post_send(t.qp[0], &w, &wb), 0);
	ck_assert_int_eq(tpoll(t.cq[0], &wc, 1, 20000), 1);
	ck_assert_int_eq(wc.status, EFI_WC_SUCCESS);
	ck_assert(memcmp(src, dst, sizeof(src)) == 0);
	efi_dereg_mr(ms);
	efi_dereg_mr(md);
	tpair_close(&t);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("efi_udp");
	TCase *tc = tcase_create("udp");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_udp_rdma);
	tcase_add_test(tc, test_udp_no_syscalls);
	tcase_add_test(tc, test_udp_forged_write_dropped);
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
