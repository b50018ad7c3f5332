/* SPDX-License-Identifier: MIT */
/*
 * Cases: completion events through a channel and epoll, solicited-only
 * events, remote access violations, RNR with and without retry, and a peer
 * that dies in the middle of a transfer.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "tests/data/dp.h"

struct waiter {
	struct efi_comp_channel *ch;
	int ep;
};

static void waiter_init(struct dp_side *s, struct waiter *w)
{
	struct epoll_event ev = { .events = EPOLLIN };

	w->ch = efi_create_comp_channel(s->ctx);
	DP_CHECK(w->ch, "efi_create_comp_channel: %s", strerror(errno));
	DP_CHECK(w->ch->fd >= 0, "channel fd %d", w->ch->fd);
	DP_CHECK(fcntl(w->ch->fd, F_SETFL, fcntl(w->ch->fd, F_GETFL) | O_NONBLOCK) == 0, "fcntl: %s",
		 strerror(errno));
	w->ep = epoll_create1(EPOLL_CLOEXEC);
	DP_CHECK(w->ep >= 0, "epoll_create1: %s", strerror(errno));
	DP_CHECK(epoll_ctl(w->ep, EPOLL_CTL_ADD, w->ch->fd, &ev) == 0, "epoll_ctl: %s", strerror(errno));
}

/* epoll_wait on the channel: true when it became readable within ms. */
static bool waiter_epoll(struct waiter *w, int ms)
{
	struct epoll_event ev;
	int n;

	do
		n = epoll_wait(w->ep, &ev, 1, ms);
	while (n < 0 && errno == EINTR);
	DP_CHECK(n >= 0, "epoll_wait: %s", strerror(errno));
	return n == 1;
}

/* Takes one event, which must be for cq, and acknowledges it. */
static void waiter_take(struct waiter *w, struct efi_cq *cq, void *cq_context, const char *what)
{
	struct efi_cq *ev_cq = NULL;
	void *ev_ctx = NULL;

	DP_CHECK(efi_get_cq_event(w->ch, &ev_cq, &ev_ctx) == 0, "%s: efi_get_cq_event: %s", what,
		 strerror(errno));
	DP_CHECK(ev_cq == cq, "%s: the event names another CQ", what);
	DP_CHECK(ev_ctx == cq_context, "%s: the event carries another cq_context", what);
	efi_ack_cq_events(ev_cq, 1);
}

static void waiter_none(struct waiter *w, const char *what)
{
	struct efi_cq *ev_cq;
	void *ev_ctx;

	DP_CHECK(efi_get_cq_event(w->ch, &ev_cq, &ev_ctx) == -1 && errno == EAGAIN,
		 "%s: an event was pending (or the non-blocking channel did not say EAGAIN)", what);
}

static void waiter_fini(struct waiter *w)
{
	close(w->ep);
	DP_CHECK_RC(efi_destroy_comp_channel(w->ch));
}

void dp_case_events(struct dp_side *s)
{
	struct waiter w;
	struct dp_qp_cfg cfg = { .buf_size = 65536 };
	struct dp_conn c;
	struct efi_wc wc;
	bool srv = s->opts->server;

	waiter_init(s, &w);
	cfg.channel = w.ch;
	dp_setup(s, &c, 1, &cfg);
	if (srv) {
		for (int i = 0; i < 8; i++)
			dp_post_recv(&c, 4096 * (size_t)i, 4096, (uint64_t)i);
		/* 1: armed, asleep in epoll while the message arrives */
		DP_CHECK_RC(efi_req_notify_cq(c.rcq, 0));
		dp_sync(s, "armed");
		DP_CHECK(waiter_epoll(&w, 10000), "armed CQ: no event within 10 s of the client's Send");
		waiter_take(&w, c.rcq, &c, "armed CQ");
		dp_wait_ok(c.rcq, &wc, EFI_WC_RECV, "the message behind the event");
		DP_CHECK_DATA(c.buf, 100, 41, "evented SEND");
		waiter_none(&w, "after the only event");
		/* 2: not armed: the completion arrives, no event */
		dp_sync(s, "unarmed");
		dp_sync(s, "unarmed sent");
		DP_CHECK(!waiter_epoll(&w, 300), "an event arrived on a CQ that was not armed");
		dp_wait_ok(c.rcq, &wc, EFI_WC_RECV, "the message without an event");
		/* 3: one event per arming, however many completions */
		DP_CHECK_RC(efi_req_notify_cq(c.rcq, 0));
		dp_sync(s, "three");
		dp_sync(s, "three sent");
		DP_CHECK(waiter_epoll(&w, 10000), "armed CQ: no event for three Sends");
		waiter_take(&w, c.rcq, &c, "three Sends");
		for (int i = 0; i < 3; i++)
			dp_wait_ok(c.rcq, &wc, EFI_WC_RECV, "three Sends");
		usleep(50 * 1000);
		waiter_none(&w, "three Sends, one arming");
	} else {
		dp_sync(s, "armed");
		/* the client sleeps in epoll for its own send completion too */
		usleep(100 * 1000);
		DP_CHECK_RC(efi_req_notify_cq(c.scq, 0));
		dp_fill(c.buf, 100, 41);
		dp_post_ok(&c, EFI_WR_SEND, 0, 100, 0, EFI_SEND_SIGNALED, 1);
		DP_CHECK(waiter_epoll(&w, 10000), "client: no event for the send completion");
		waiter_take(&w, c.scq, &c, "send completion");
		dp_wait_ok(c.scq, &wc, EFI_WC_SEND, "evented SEND");
		dp_sync(s, "unarmed");
		dp_post_ok(&c, EFI_WR_SEND, 0, 100, 0, EFI_SEND_SIGNALED, 2);
		dp_wait_ok(c.scq, &wc, EFI_WC_SEND, "unarmed SEND");
		dp_sync(s, "unarmed sent");
		dp_sync(s, "three");
		for (int i = 0; i < 3; i++)
			dp_post_ok(&c, EFI_WR_SEND, 0, 100, 0, EFI_SEND_SIGNALED, 3 + (uint64_t)i);
		for (int i = 0; i < 3; i++)
			dp_wait_ok(c.scq, &wc, EFI_WC_SEND, "three SENDs");
		dp_sync(s, "three sent");
	}
	dp_sync(s, "events done");
	dp_conn_destroy(&c);
	waiter_fini(&w);
}

void dp_case_solicited(struct dp_side *s)
{
	struct waiter w;
	struct dp_qp_cfg cfg = { .buf_size = 65536 };
	struct dp_conn c;
	struct efi_wc wc;
	bool srv = s->opts->server;

	waiter_init(s, &w);
	cfg.channel = w.ch;
	dp_setup(s, &c, 1, &cfg);
	if (srv) {
		for (int i = 0; i < 4; i++)
			dp_post_recv(&c, 4096 * (size_t)i, 4096, (uint64_t)i);
		DP_CHECK_RC(efi_req_notify_cq(c.rcq, 1));
		dp_sync(s, "armed");
		dp_sync(s, "unsolicited sent");
		DP_CHECK(!waiter_epoll(&w, 300), "an unsolicited Send woke a solicited-only CQ");
		dp_sync(s, "send solicited");
		DP_CHECK(waiter_epoll(&w, 10000), "no event for a solicited Send");
		waiter_take(&w, c.rcq, &c, "solicited Send");
		dp_wait_ok(c.rcq, &wc, EFI_WC_RECV, "the unsolicited Send");
		DP_CHECK(wc.wr_id == 0, "first receive wr_id %" PRIu64, wc.wr_id);
		dp_wait_ok(c.rcq, &wc, EFI_WC_RECV, "the solicited Send");
		DP_CHECK(wc.wr_id == 1, "second receive wr_id %" PRIu64, wc.wr_id);
		DP_CHECK_DATA(c.buf + 4096, 64, 52, "solicited SEND");
	} else {
		dp_sync(s, "armed");
		dp_fill(c.buf, 64, 51);
		dp_post_ok(&c, EFI_WR_SEND, 0, 64, 0, EFI_SEND_SIGNALED, 1);
		dp_wait_ok(c.scq, &wc, EFI_WC_SEND, "unsolicited SEND");
		dp_sync(s, "unsolicited sent");
		dp_sync(s, "send solicited");
		dp_fill(c.buf, 64, 52);
		dp_post_ok(&c, EFI_WR_SEND, 0, 64, 0, EFI_SEND_SIGNALED | EFI_SEND_SOLICITED, 2);
		dp_wait_ok(c.scq, &wc, EFI_WC_SEND, "solicited SEND");
	}
	dp_sync(s, "solicited done");
	dp_conn_destroy(&c);
	waiter_fini(&w);
}

/* The next WR on a QP in ERR completes with WR_FLUSH_ERR. */
static void expect_flush(struct dp_conn *c, const char *what)
{
	struct efi_qp_attr qa;
	struct efi_qp_init_attr ia;
	struct efi_wc wc;

	DP_CHECK_RC(efi_query_qp(c->qp, &qa, EFI_QP_STATE, &ia));
	DP_CHECK(qa.qp_state == EFI_QPS_ERR, "%s: QP state %d after the error, expected ERR", what,
		 qa.qp_state);
	dp_post_ok(c, EFI_WR_RDMA_WRITE, 0, 8, 0, EFI_SEND_SIGNALED, 99);
	dp_wait_wc(c->scq, &wc, what);
	DP_CHECK(wc.status == EFI_WC_WR_FLUSH_ERR && wc.wr_id == 99,
		 "%s: the next WR completed with %s, expected WR_FLUSH_ERR", what, efi_wc_status_str(wc.status));
}

void dp_case_rkey(struct dp_side *s)
{
	struct dp_qp_cfg cfg = { .buf_size = 65536 };
	struct dp_conn c[5];
	struct efi_wc wc;
	bool srv = s->opts->server;
	uint8_t *ro = NULL, *wo = NULL;
	struct efi_mr *ro_mr = NULL, *wo_mr = NULL;

	dp_setup(s, c, 5, &cfg);
	if (srv) {
		ro = aligned_alloc(4096, 4096);
		wo = aligned_alloc(4096, 4096);
		DP_CHECK(ro && wo, "out of memory");
		ro_mr = efi_reg_mr(s->pd, ro, 4096, EFI_ACCESS_REMOTE_READ);
		wo_mr = efi_reg_mr(s->pd, wo, 4096, EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_WRITE);
		DP_CHECK(ro_mr && wo_mr, "efi_reg_mr: %s", strerror(errno));
		for (int i = 0; i < 5; i++)
			dp_fill(c[i].buf, c[i].size, 60 + (uint64_t)i);
		dp_fill(ro, 4096, 70);
		dp_fill(wo, 4096, 71);
		dp_send_u64(s, "ro_addr", (uintptr_t)ro);
		dp_send_u64(s, "ro_rkey", ro_mr->rkey);
		dp_send_u64(s, "wo_addr", (uintptr_t)wo);
		dp_send_u64(s, "wo_rkey", wo_mr->rkey);
		dp_sync(s, "violations done");
		for (int i = 0; i < 5; i++)
			DP_CHECK_DATA(c[i].buf, c[i].size, 60 + (uint64_t)i, "target memory after a violation");
		DP_CHECK_DATA(ro, 4096, 70, "read-only MR after a Write to it");
		DP_CHECK_DATA(wo, 4096, 71, "write-only MR after a Read of it");
		DP_CHECK_RC(efi_dereg_mr(ro_mr));
		DP_CHECK_RC(efi_dereg_mr(wo_mr));
		free(ro);
		free(wo);
	} else {
		uint64_t ro_addr = dp_recv_u64(s, "ro_addr"), ro_rkey = dp_recv_u64(s, "ro_rkey");
		uint64_t wo_addr = dp_recv_u64(s, "wo_addr"), wo_rkey = dp_recv_u64(s, "wo_rkey");
		static const char *const what[] = {
			"Write with a wrong rkey", "Write past the end of the MR", "Write to a read-only MR",
			"Read of a write-only MR", "atomic on an MR without REMOTE_ATOMIC",
		};

		dp_fill(c[0].buf, 4096, 1);
		c[0].remote.rkey ^= 0x00ff00ffu;
		dp_post_ok(&c[0], EFI_WR_RDMA_WRITE, 0, 4096, 0, EFI_SEND_SIGNALED, 1);
		dp_post_ok(&c[1], EFI_WR_RDMA_WRITE, 0, 100, c[1].remote.size - 10, EFI_SEND_SIGNALED, 1);
		c[2].remote.addr = ro_addr;
		c[2].remote.rkey = (uint32_t)ro_rkey;
		dp_post_ok(&c[2], EFI_WR_RDMA_WRITE, 0, 64, 0, EFI_SEND_SIGNALED, 1);
		c[3].remote.addr = wo_addr;
		c[3].remote.rkey = (uint32_t)wo_rkey;
		dp_post_ok(&c[3], EFI_WR_RDMA_READ, 0, 64, 0, EFI_SEND_SIGNALED, 1);
		c[4].remote.addr = wo_addr;
		c[4].remote.rkey = (uint32_t)wo_rkey;
		DP_CHECK_RC(dp_post_atomic(&c[4], EFI_WR_ATOMIC_FETCH_AND_ADD, 0, 0, 1, 0, EFI_SEND_SIGNALED, 1));
		for (int i = 0; i < 5; i++) {
			dp_wait_wc(c[i].scq, &wc, what[i]);
			DP_CHECK(wc.status == EFI_WC_REM_ACCESS_ERR, "%s: completed with %s, expected %s", what[i],
				 efi_wc_status_str(wc.status), efi_wc_status_str(EFI_WC_REM_ACCESS_ERR));
			expect_flush(&c[i], what[i]);
		}
		dp_sync(s, "violations done");
	}
	dp_sync(s, "rkey done");
	for (int i = 4; i >= 0; i--)
		dp_conn_destroy(&c[i]);
}

void dp_case_rnr(struct dp_side *s)
{
	/* 0: retry forever, the receive comes late; 1: rnr_retry 0;
	 * 2: rnr_retry 2 and never a receive */
	struct dp_qp_cfg cfgs[3] = {
		{ .buf_size = 65536, .rnr_retry = 7, .rnr_retry_set = true, .min_rnr_timer = 1 },
		{ .buf_size = 65536, .rnr_retry = 0, .rnr_retry_set = true, .min_rnr_timer = 1 },
		{ .buf_size = 65536, .rnr_retry = 2, .rnr_retry_set = true, .min_rnr_timer = 1 },
	};
	struct dp_conn c[3];
	struct efi_wc wc;
	struct efi_counters cnt;
	bool srv = s->opts->server;

	for (int i = 0; i < 3; i++)
		dp_conn_create(s, &c[i], &cfgs[i]);
	dp_exchange(s, c, 3);
	for (int i = 0; i < 3; i++)
		dp_conn_connect(&c[i]);
	dp_sync(s, "connected");
	if (srv) {
		dp_sync(s, "go");
		usleep(300 * 1000);	/* the client's Send meets no receive meanwhile */
		dp_post_recv(&c[0], 0, 4096, 5);
		dp_wait_ok(c[0].rcq, &wc, EFI_WC_RECV, "Send after RNR retries");
		DP_CHECK_DATA(c[0].buf, 1000, 81, "Send after RNR retries");
		DP_CHECK_RC(efi_query_qp_counters(c[0].qp, &cnt));
		DP_CHECK(cnt.rnr_naks_sent > 0, "the late receive caused no RNR NAK (rnr_naks_sent 0)");
		dp_log("rnr_naks_sent %" PRIu64, cnt.rnr_naks_sent);
		dp_sync(s, "retried");
		dp_sync(s, "exceeded");
		DP_CHECK(dp_no_wc_for(c[1].rcq, 20) && dp_no_wc_for(c[2].rcq, 20),
			 "a receive completed on a QP that never posted one");
	} else {
		double t0;

		dp_fill(c[0].buf, 1000, 81);
		dp_sync(s, "go");
		t0 = dp_now();
		dp_post_ok(&c[0], EFI_WR_SEND, 0, 1000, 0, EFI_SEND_SIGNALED, 1);
		dp_wait_ok(c[0].scq, &wc, EFI_WC_SEND, "Send with rnr_retry 7 and a late receive");
		DP_CHECK(dp_now() - t0 > 0.2, "the Send completed after %.3f s, before the receive was posted",
			 dp_now() - t0);
		DP_CHECK_RC(efi_query_qp_counters(c[0].qp, &cnt));
		DP_CHECK(cnt.rnr_naks_received > 0, "rnr_naks_received 0 after a late receive");
		dp_sync(s, "retried");
		for (int i = 1; i < 3; i++) {
			const char *what = i == 1 ? "Send with rnr_retry 0" : "Send with rnr_retry 2";

			dp_post_ok(&c[i], EFI_WR_SEND, 0, 100, 0, EFI_SEND_SIGNALED, 1);
			dp_wait_wc(c[i].scq, &wc, what);
			DP_CHECK(wc.status == EFI_WC_RNR_RETRY_EXC_ERR, "%s: completed with %s, expected %s", what,
				 efi_wc_status_str(wc.status), efi_wc_status_str(EFI_WC_RNR_RETRY_EXC_ERR));
			expect_flush(&c[i], what);
			DP_CHECK_RC(efi_query_qp_counters(c[i].qp, &cnt));
			DP_CHECK(cnt.rnr_naks_received == (uint64_t)cfgs[i].rnr_retry + 1,
				 "%s: %" PRIu64 " RNR NAKs received, expected %u (rnr_retry + 1)", what,
				 cnt.rnr_naks_received, cfgs[i].rnr_retry + 1);
		}
		dp_sync(s, "exceeded");
	}
	dp_sync(s, "rnr done");
	for (int i = 2; i >= 0; i--)
		dp_conn_destroy(&c[i]);
}

#define KILL_CHUNK	(4u << 20)

void dp_case_peerkill(struct dp_side *s)
{
	/* timeout 10: 4.2 ms × 2^0 per try, 3 retries: the error is due
	 * within tens of milliseconds; 10 s means it hangs */
	struct dp_qp_cfg cfg = { .buf_size = 64u << 20, .max_send_wr = 64, .timeout = 10, .retry_cnt = 3 };
	struct dp_conn c;
	struct efi_wc wc;
	double t0, deadline;
	uint64_t posted = 0, ok = 0;

	dp_setup(s, &c, 1, &cfg);
	if (s->opts->server) {
		dp_sync(s, "go");
		deadline = dp_now() + 10;
		/* die once the transfer is under way */
		while (!*(volatile uint8_t *)c.buf)
			DP_CHECK(dp_now() < deadline, "no Write arrived within 10 s");
		dp_log("killing myself mid-transfer");
		kill(getpid(), SIGKILL);
		for (;;)
			pause();
	}
	dp_fill(c.buf, c.size, 91);
	c.buf[0] = 0xab;
	dp_sync(s, "go");
	t0 = dp_now();
	deadline = t0 + 30;	/* the 10 s floor of silence (EFI_MIN_DEAD_NS), and a loaded host */
	for (;;) {
		int k;

		while (posted - ok < 8) {
			dp_post_ok(&c, EFI_WR_RDMA_WRITE, (posted % 16) * KILL_CHUNK, KILL_CHUNK, 0,
				   EFI_SEND_SIGNALED, posted);
			posted++;
		}
		k = efi_poll_cq(c.scq, 1, &wc);
		DP_CHECK(k >= 0, "efi_poll_cq: %d", k);
		if (k && wc.status == EFI_WC_SUCCESS) {
			ok++;
			continue;
		}
		if (k)
			break;
		DP_CHECK(dp_now() < deadline, "no error completion %.0f s after the peer was killed "
			 "(%" PRIu64 " Writes completed): a hang", dp_now() - t0, ok);
	}
	DP_CHECK(wc.status == EFI_WC_RETRY_EXC_ERR, "first error after the peer died: %s, expected %s",
		 efi_wc_status_str(wc.status), efi_wc_status_str(EFI_WC_RETRY_EXC_ERR));
	dp_log("RETRY_EXC_ERR %.3f s after the start, %" PRIu64 " Writes had completed", dp_now() - t0, ok);
	/* every other outstanding WR is flushed, none is lost */
	for (uint64_t i = ok + 1; i < posted; i++) {
		dp_wait_wc(c.scq, &wc, "flush after RETRY_EXC_ERR");
		DP_CHECK(wc.status == EFI_WC_WR_FLUSH_ERR, "outstanding Write completed with %s, expected "
			 "WR_FLUSH_ERR", efi_wc_status_str(wc.status));
	}
	dp_conn_destroy(&c);
	/* the peer is gone: no closing handshake */
	DP_CHECK_RC(efi_dealloc_pd(s->pd));
	DP_CHECK_RC(efi_close_device(s->ctx));
	printf("PASS peerkill (client)\n");
	exit(0);
}
