/* SPDX-License-Identifier: MIT */
/*
 * cm-test: the connection manager end to end, one process per side.
 *
 *   cm-test server SERVICE [--reject] [--count N] [--expect-disconnect | --watch-cq]
 *                  [--echo-acked] [--no-recv [--recv-after MS]]
 *   cm-test client HOST SERVICE [--expect EVENT] [--timeout MS] [--count N]
 *                  [--hang | --hang-send]
 *   cm-test listen SERVICE [--hold]
 *
 * server accepts N connections (or rejects them with private data), checks
 * the client's private data, echoes one message over each connected QP and
 * waits for the client's disconnect (or death), then checks that its QP went
 * to ERR with the receive it had posted flushed.  client connects N times
 * and checks that the outcome is EVENT ("established", "rejected",
 * "unreachable", "timeout"); with --hang it stays connected until killed,
 * with --hang-send too, after posting one send (toward a server with
 * --no-recv, which posts no receive: the send waits on RNR for ever, or
 * until --recv-after MS: then the server posts its receive).
 * With --watch-cq the server, once established, looks only at its CQ: the
 * client's disconnect (or death) must flush its posted receive by itself.
 * With --echo-acked the echo must complete successfully: the client took it
 * before it disconnected, so its ACK must count even when it arrives after
 * the DISCONNECTED (run with EFI_FAULT delaying this side's datagrams).
 * With --count > 1 the client prints the median set-up time and the rate.
 * listen prints "listening" or exits 3 on EADDRINUSE.
 * Exit 0 pass, 1 fail (a FAIL line says why), 3 listen refused.  Every wait
 * has a deadline, and the process ends itself after 90 s whatever it does.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <efi/efi.h>
#include <efi/efi_cm.h>

#define MSG_SIZE 4096
#define WAIT_MS 10000
#define CLIENT_PRIV_LEN 64
#define SERVER_PRIV_LEN 100

static struct efi_context *ctx;
static struct efi_pd *pd;
static struct efi_cq *cq;
static struct efi_mr *mr;
static uint8_t *buf;

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void setup(void)
{
	int n = 0;
	struct efi_device **list = efi_get_device_list(&n);
	if (!list || n < 1)
		FAIL("no EFI device: %s", strerror(errno));
	ctx = efi_open_device(list[0]);
	efi_free_device_list(list);
	if (!ctx)
		FAIL("efi_open_device: %s", strerror(errno));
	pd = efi_alloc_pd(ctx);
	cq = efi_create_cq(ctx, 4096, NULL, NULL, 0);
	buf = calloc(1, 2 * MSG_SIZE);
	if (!pd || !cq || !buf)
		FAIL("resources: %s", strerror(errno));
	mr = efi_reg_mr(pd, buf, 2 * MSG_SIZE, EFI_ACCESS_LOCAL_WRITE);
	if (!mr)
		FAIL("efi_reg_mr: %s", strerror(errno));
}

static void teardown(void)
{
	efi_dereg_mr(mr);
	efi_destroy_cq(cq);
	efi_dealloc_pd(pd);
	efi_close_device(ctx);
	free(buf);
}

static struct efi_qp *new_qp(void)
{
	struct efi_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = EFI_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct efi_qp *qp = efi_create_qp(pd, &ia);
	if (!qp)
		FAIL("efi_create_qp: %s", strerror(errno));
	return qp;
}

static void post_recv(struct efi_qp *qp, uint64_t wr_id)
{
	struct efi_sge sge = { (uintptr_t)buf + MSG_SIZE, MSG_SIZE, mr->lkey };
	struct efi_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;
	if (efi_post_recv(qp, &wr, &bad))
		FAIL("efi_post_recv");
}

static void post_send(struct efi_qp *qp, uint64_t wr_id)
{
	struct efi_sge sge = { (uintptr_t)buf, MSG_SIZE, mr->lkey };
	struct efi_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .opcode = EFI_WR_SEND }, *bad;
	if (efi_post_send(qp, &wr, &bad))
		FAIL("efi_post_send");
}

/* Completions taken while waiting for another, by wr_id (all below 16). */
static bool have_wc[16];
static enum efi_wc_status seen_wc[16];

/* Waits for the completion wr_id (< 16); returns its status. */
static enum efi_wc_status wait_wc(uint64_t wr_id)
{
	double end = now_ms() + WAIT_MS;
	while (now_ms() < end) {
		if (have_wc[wr_id]) {
			have_wc[wr_id] = false;
			return seen_wc[wr_id];
		}
		struct efi_wc wc;
		int n = efi_poll_cq(cq, 1, &wc);
		if (n < 0)
			FAIL("efi_poll_cq: %d", n);
		if (n == 1 && wc.wr_id < 16) {
			have_wc[wc.wr_id] = true;
			seen_wc[wc.wr_id] = wc.status;
		}
		if (n == 0)
			usleep(50);
	}
	FAIL("no completion for wr %llu in %d ms", (unsigned long long)wr_id, WAIT_MS);
}

static void get_event(struct efi_cm_id *id, struct efi_cm_event *ev, int ms)
{
	int r = efi_cm_get_event(id, ev, ms);
	if (r)
		FAIL("efi_cm_get_event: %s", strerror(r));
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static int check(const uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(seed + i * 7))
			return 0;
	return 1;
}

/* ---- server --------------------------------------------------------- */

struct srv_conn {
	struct efi_cm_id *id;
	struct efi_qp *qp;
	int state; /* 0 accepted, 1 echoed, 2 done */
};

static int server(const char *service, int argc, char **argv)
{
	int count = 1, reject = 0, expect_disc = 0, watch_cq = 0, echo_acked = 0, no_recv = 0;
	int recv_after = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--reject"))
			reject = 1;
		else if (!strcmp(argv[i], "--echo-acked"))
			echo_acked = 1;
		else if (!strcmp(argv[i], "--no-recv"))
			no_recv = 1;
		else if (!strcmp(argv[i], "--recv-after") && i + 1 < argc)
			recv_after = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			count = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--expect-disconnect"))
			expect_disc = 1;
		else if (!strcmp(argv[i], "--watch-cq"))
			expect_disc = watch_cq = 1;
	}
	setup();
	struct efi_cm_id *l = efi_listen(ctx, service, 64);
	if (!l)
		FAIL("efi_listen %s: %s", service, strerror(errno));
	printf("listening\n");
	fflush(stdout);
	struct srv_conn *conns = calloc((size_t)count, sizeof(*conns));
	int accepted = 0, done = 0;
	while (done < count) {
		struct pollfd pfd[65];
		int n = 0;
		pfd[n++] = (struct pollfd){ .fd = efi_cm_get_fd(l), .events = POLLIN };
		int first = done; /* conns[first..accepted) are live */
		for (int i = first; i < accepted && n < 65; i++)
			pfd[n++] = (struct pollfd){ .fd = efi_cm_get_fd(conns[i].id), .events = POLLIN };
		if (poll(pfd, (nfds_t)n, 30000) <= 0)
			FAIL("server: nothing happened for 30 s (%d of %d done)", done, count);
		struct efi_cm_event ev;
		if ((pfd[0].revents & POLLIN) && accepted < count) {
			get_event(l, &ev, WAIT_MS);
			if (ev.event != EFI_CM_EVENT_CONNECT_REQUEST)
				FAIL("listener: %s", efi_cm_event_str(ev.event));
			if (ev.private_data_len != CLIENT_PRIV_LEN ||
			    !check(ev.private_data, CLIENT_PRIV_LEN, 1))
				FAIL("the request's private data is wrong (%u bytes)", ev.private_data_len);
			uint8_t priv[SERVER_PRIV_LEN];
			fill(priv, sizeof(priv), 2);
			if (reject) {
				int r = efi_reject(ev.request, priv, sizeof(priv));
				if (r)
					FAIL("efi_reject: %s", strerror(r));
				efi_cm_destroy_id(ev.request);
				done++;
				continue;
			}
			struct efi_qp *qp = new_qp();
			int r = efi_accept(ev.request, qp, priv, sizeof(priv));
			if (r)
				FAIL("efi_accept: %s", strerror(r));
			/* With several connections the client disconnects each at
			 * once, so the QP may be in ERR already. */
			if (qp->state != EFI_QPS_RTS && (count == 1 || qp->state != EFI_QPS_ERR))
				FAIL("after efi_accept the QP is in state %d, not RTS", qp->state);
			if (count == 1 && !no_recv)
				post_recv(qp, 1);
			conns[accepted].id = ev.request;
			conns[accepted].qp = qp;
			accepted++;
		}
		for (int k = 1; k < n; k++) {
			if (!(pfd[k].revents & (POLLIN | POLLHUP)))
				continue;
			struct srv_conn *c = &conns[first + k - 1];
			get_event(c->id, &ev, WAIT_MS);
			if (ev.event == EFI_CM_EVENT_ESTABLISHED && count == 1 && !expect_disc) {
				if (wait_wc(1) != EFI_WC_SUCCESS || !check(buf + MSG_SIZE, MSG_SIZE, 3))
					FAIL("the client's message did not arrive intact");
				memcpy(buf, buf + MSG_SIZE, MSG_SIZE);
				post_recv(c->qp, 3);
				post_send(c->qp, 2);
				/* The client disconnects once it has the echo, and
				 * acknowledges it first; libefi waits a little for
				 * that ACK when DISCONNECTED comes ahead of it, but a
				 * loaded machine may make it later still: a flush is
				 * fine unless --echo-acked (the client checks the
				 * data). */
				enum efi_wc_status st = wait_wc(2);
				if (st != EFI_WC_SUCCESS && (echo_acked || st != EFI_WC_WR_FLUSH_ERR))
					FAIL("the echo failed: %s", efi_wc_status_str(st));
				printf("echoed\n");
				fflush(stdout);
			} else if (ev.event == EFI_CM_EVENT_ESTABLISHED && watch_cq) {
				/* From here on only the CQ: the peer's death must
				 * reach the QP without this process taking a CM
				 * event. */
				printf("established\n");
				enum efi_wc_status st = wait_wc(1);
				double at = wall_ms();
				struct efi_qp_attr qa;
				struct efi_qp_init_attr qi;
				efi_query_qp(c->qp, &qa, 0, &qi);
				if (st != EFI_WC_WR_FLUSH_ERR || qa.qp_state != EFI_QPS_ERR)
					FAIL("the posted receive completed with %s, QP state %d: not flushed to ERR",
					     efi_wc_status_str(st), qa.qp_state);
				printf("flushed at %.3f\n", at);
				efi_cm_destroy_id(c->id);
				efi_destroy_qp(c->qp);
				done++;
			} else if (ev.event == EFI_CM_EVENT_ESTABLISHED) {
				if (expect_disc)
					printf("established\n");
				if (no_recv && recv_after > 0) {
					/* the client's send has been waiting on RNR */
					fflush(stdout);
					usleep((useconds_t)recv_after * 1000);
					post_recv(c->qp, 1);
					printf("receive posted\n");
				}
			} else if (ev.event == EFI_CM_EVENT_DISCONNECTED) {
				printf("disconnected at %.3f\n", wall_ms());
				fflush(stdout);
				struct efi_qp_attr qa;
				struct efi_qp_init_attr qi;
				efi_query_qp(c->qp, &qa, 0, &qi);
				if (qa.qp_state != EFI_QPS_ERR)
					FAIL("after DISCONNECTED the QP is in state %d, not ERR", qa.qp_state);
				if (count == 1 && !no_recv) {
					enum efi_wc_status st = wait_wc(expect_disc ? 1 : 3);
					if (st != EFI_WC_WR_FLUSH_ERR)
						FAIL("the posted receive completed with %s, not a flush",
						     efi_wc_status_str(st));
				}
				efi_cm_destroy_id(c->id);
				efi_destroy_qp(c->qp);
				/* keep the live ones contiguous after `done` */
				struct srv_conn t = conns[done];
				conns[done] = *c;
				*c = t;
				done++;
				break; /* indexes moved: poll again */
			} else {
				FAIL("connection: unexpected %s", efi_cm_event_str(ev.event));
			}
		}
	}
	efi_cm_destroy_id(l);
	free(conns);
	teardown();
	printf("server done: %d\n", count);
	return 0;
}

/* ---- client ---------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int client(const char *host, const char *service, int argc, char **argv)
{
	const char *expect = "established", *wait_for = NULL;
	int timeout = 3000, count = 1, hang = 0, hang_send = 0, qp_first = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--expect") && i + 1 < argc)
			expect = argv[++i];
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			timeout = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			count = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--hang"))
			hang = 1;
		else if (!strcmp(argv[i], "--hang-send"))
			hang = hang_send = 1;
		else if (!strcmp(argv[i], "--qp-first"))
			qp_first = 1;
		else if (!strcmp(argv[i], "--wait-for") && i + 1 < argc)
			wait_for = argv[++i];
	}
	setup();
	if (wait_for) {
		/* the device is open: the test may restart efid meanwhile */
		printf("opened\n");
		fflush(stdout);
		while (access(wait_for, F_OK) != 0)
			usleep(10000);
	}
	double *t = calloc((size_t)count, sizeof(double));
	double start_all = now_ms();
	for (int i = 0; i < count; i++) {
		uint8_t priv[CLIENT_PRIV_LEN];
		fill(priv, sizeof(priv), 1);
		struct efi_qp *qp = new_qp();
		double t0 = now_ms();
		struct efi_cm_id *id = efi_connect(qp, host, service, priv, sizeof(priv), timeout);
		if (!id)
			FAIL("efi_connect: %s", strerror(errno));
		struct efi_cm_event ev;
		get_event(id, &ev, timeout + 6000);
		double took = now_ms() - t0;
		t[i] = took;
		const char *got = ev.event == EFI_CM_EVENT_ESTABLISHED ? "established"
				  : ev.event == EFI_CM_EVENT_REJECTED ? "rejected"
				  : ev.event == EFI_CM_EVENT_UNREACHABLE ? "unreachable"
				  : ev.event == EFI_CM_EVENT_TIMEOUT ? "timeout" : "other";
		if (strcmp(got, expect))
			FAIL("connect %d: got %s (reason %d) after %.0f ms, expected %s", i, got,
			     ev.reject_reason, took, expect);
		/* A hang guard, not a speed test: efid answers at the
		 * deadline, and a loaded machine may run it late. */
		if (took > timeout + 5000)
			FAIL("the outcome took %.0f ms, far past the %d ms timeout", took, timeout);
		if (count == 1)
			printf("%s after %.1f ms\n", got, took);
		if (ev.event == EFI_CM_EVENT_REJECTED && ev.reject_reason == EFI_CM_REJECT_CONSUMER &&
		    (ev.private_data_len != SERVER_PRIV_LEN || !check(ev.private_data, SERVER_PRIV_LEN, 2)))
			FAIL("the rejection's private data is wrong (%u bytes)", ev.private_data_len);
		if (ev.event == EFI_CM_EVENT_REJECTED)
			printf("reason %d\n", ev.reject_reason);
		if (ev.event == EFI_CM_EVENT_ESTABLISHED) {
			if (qp->state != EFI_QPS_RTS)
				FAIL("ESTABLISHED but the QP is in state %d", qp->state);
			if (ev.private_data_len != SERVER_PRIV_LEN || !check(ev.private_data, SERVER_PRIV_LEN, 2))
				FAIL("the reply's private data is wrong (%u bytes)", ev.private_data_len);
			if (hang) {
				post_recv(qp, 9);
				if (hang_send)
					post_send(qp, 4);
				printf("established\n");
				fflush(stdout);
				for (;;)
					pause();
			}
			if (count == 1) {
				fill(buf, MSG_SIZE, 3);
				post_recv(qp, 5);
				post_send(qp, 4);
				if (wait_wc(4) != EFI_WC_SUCCESS)
					FAIL("the send failed");
				if (wait_wc(5) != EFI_WC_SUCCESS || !check(buf + MSG_SIZE, MSG_SIZE, 3))
					FAIL("the echo did not come back intact");
				printf("echo ok\n");
			}
			if (qp_first) {
				/* the order verbs programs use (ibv_destroy_qp,
				 * then rdma_destroy_id): the id must forget the QP,
				 * and disconnecting must not touch it (a sanitizer
				 * build reports a use after free otherwise) */
				efi_destroy_qp(qp);
				qp = NULL;
				if (efi_cm_get_qp(id) != NULL)
					FAIL("the id still names its destroyed QP");
				printf("qp destroyed first\n");
			}
			int r = efi_disconnect(id);
			if (r)
				FAIL("efi_disconnect: %s", strerror(r));
		}
		efi_cm_destroy_id(id);
		if (qp)
			efi_destroy_qp(qp);
		/* drain flushed completions */
		struct efi_wc wc[16];
		while (efi_poll_cq(cq, 16, wc) > 0)
			;
		memset(have_wc, 0, sizeof(have_wc));
	}
	if (count > 1) {
		double all = now_ms() - start_all;
		qsort(t, (size_t)count, sizeof(double), cmp_double);
		printf("connects: %d in %.0f ms: %.0f per second; set-up median %.3f ms, p99 %.3f ms\n",
		       count, all, count / (all / 1e3), t[count / 2], t[(count * 99) / 100]);
	}
	free(t);
	teardown();
	return 0;
}

/* Quota tests: opens the device, creates nqps QPs and registers an MR of
 * mr_bytes (if any), says "held" and waits to be killed; a refusal prints
 * the call and its error and exits 3. */
static int hold(int nqps, unsigned long long mr_bytes)
{
	struct efi_qp_init_attr ia = {
		.send_cq = NULL, .qp_type = EFI_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct efi_qp *qps[16];
	int made = 0, refused = 0;
	void *big = NULL;

	if (nqps < 0 || nqps > 16)
		FAIL("hold: 0..16 QPs");
	setup();
	ia.send_cq = ia.recv_cq = cq;
	for (; made < nqps; made++) {
		qps[made] = efi_create_qp(pd, &ia);
		if (!qps[made]) {
			printf("efi_create_qp: %s\n", strerror(errno));
			refused = 1;
			break;
		}
	}
	if (mr_bytes && !refused) {
		big = malloc(mr_bytes);
		if (!big)
			FAIL("malloc: %s", strerror(errno));
		if (!efi_reg_mr(pd, big, mr_bytes, EFI_ACCESS_LOCAL_WRITE)) {
			printf("efi_reg_mr: %s\n", strerror(errno));
			refused = 1;
		}
	}
	if (refused) {
		/* tidy, so that a sanitizer build reports no leak */
		while (made > 0)
			efi_destroy_qp(qps[--made]);
		free(big);
		teardown();
		return 3;
	}
	printf("held\n");
	fflush(stdout);
	for (;;)
		pause();
}

static int listen_only(const char *service, int argc, char **argv)
{
	setup();
	struct efi_cm_id *l = efi_listen(ctx, service, 8);
	if (!l) {
		if (errno == EADDRINUSE) {
			printf("in use\n");
			teardown();
			return 3;
		}
		FAIL("efi_listen: %s", strerror(errno));
	}
	printf("listening\n");
	fflush(stdout);
	if (argc > 0 && !strcmp(argv[0], "--hold"))
		for (;;)
			pause();
	efi_cm_destroy_id(l);
	teardown();
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* The hang guard is in the process itself (SIGALRM ends it), so that
	 * the tests can SIGKILL the very process that holds the connection. */
	alarm(90);
	if (argc >= 3 && !strcmp(argv[1], "server"))
		return server(argv[2], argc - 3, argv + 3);
	if (argc >= 4 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], argc - 4, argv + 4);
	if (argc >= 3 && !strcmp(argv[1], "listen"))
		return listen_only(argv[2], argc - 3, argv + 3);
	if (argc >= 3 && !strcmp(argv[1], "hold"))
		return hold(atoi(argv[2]), argc > 3 ? strtoull(argv[3], NULL, 0) : 0);
	fprintf(stderr, "usage: cm-test server SERVICE [--reject] [--count N] [--expect-disconnect | --watch-cq]\n"
			"       cm-test client HOST SERVICE [--expect EVENT] [--timeout MS] [--count N] [--hang] [--wait-for FILE]\n"
			"       cm-test listen SERVICE [--hold]\n"
			"       cm-test hold NQPS [MR_BYTES]\n");
	return 2;
}
