/* SPDX-License-Identifier: MIT */
/*
 * The bandwidth tests: the client keeps up to PERF_TX_DEPTH requests in
 * flight on every QP, posted in chains of PERF_CQ_MOD with the last one
 * signaled (a signaled completion retires its whole chain, as perftest's
 * cq_mod).  The server serves Writes, Reads and atomics with the transport
 * alone and keeps receives posted for send_bw.  Average bandwidth is bytes
 * over the whole run; the peak is the best tenth of the run.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/efi-perf/perf.h"

struct stamps {
	double *t;		/* time of each retired chain */
	uint64_t *done;		/* messages retired by then */
	size_t n, cap;
};

static void stamp_add(struct stamps *s, double t, uint64_t done)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1024;
		s->t = realloc(s->t, s->cap * sizeof(*s->t));
		s->done = realloc(s->done, s->cap * sizeof(*s->done));
		if (!s->t || !s->done)
			perf_die("out of memory for %zu time stamps", s->cap);
	}
	s->t[s->n] = t;
	s->done[s->n++] = done;
}

static enum efi_wr_opcode opcode_of(enum perf_verb verb)
{
	switch (verb) {
	case PERF_SEND: return EFI_WR_SEND;
	case PERF_WRITE: return EFI_WR_RDMA_WRITE;
	case PERF_READ: return EFI_WR_RDMA_READ;
	default: return EFI_WR_ATOMIC_FETCH_AND_ADD;
	}
}

/* Posts one chain of n WRs, the last signaled; wr_id carries n. */
static void post_chain(struct perf_ctx *pc, struct perf_qp *pq, uint32_t size, unsigned n)
{
	struct efi_sge sges[PERF_CQ_MOD];
	struct efi_send_wr wrs[PERF_CQ_MOD], *bad;
	enum efi_wr_opcode op = opcode_of(pc->opts->verb);
	bool atomic = op == EFI_WR_ATOMIC_FETCH_AND_ADD;
	int rc;

	for (unsigned i = 0; i < n; i++) {
		sges[i] = (struct efi_sge){ .addr = (uintptr_t)(pq->buf + pq->half),
					    .length = atomic ? 8 : size, .lkey = pq->mr->lkey };
		wrs[i] = (struct efi_send_wr){ .wr_id = n, .next = i + 1 < n ? &wrs[i + 1] : NULL,
					       .sg_list = &sges[i], .num_sge = atomic || size ? 1 : 0,
					       .opcode = op };
		if (i + 1 == n)
			wrs[i].send_flags |= EFI_SEND_SIGNALED;
		if (!atomic && size && (int)size <= pc->inline_size && op != EFI_WR_RDMA_READ)
			wrs[i].send_flags |= EFI_SEND_INLINE;
		if (atomic) {
			wrs[i].wr.atomic.remote_addr = pq->remote.addr;
			wrs[i].wr.atomic.rkey = pq->remote.rkey;
			wrs[i].wr.atomic.compare_add = 1;
		} else {
			wrs[i].wr.rdma.remote_addr = pq->remote.addr;
			wrs[i].wr.rdma.rkey = pq->remote.rkey;
		}
	}
	rc = efi_post_send(pq->qp, wrs, &bad);
	if (rc)
		perf_die("efi_post_send: %s", strerror(rc));
	pq->posted += n;
}

/* -e: the first idle round arms every CQ, the next (still idle, so no
 * completion slipped in between) sleeps on the channel — and, on the
 * server, on the exchange socket too, where "done" arrives.  Returns the
 * new armed state. */
static bool idle_wait(struct perf_ctx *pc, bool armed, bool watch_oob)
{
	struct pollfd pfd[2] = { { .fd = pc->channel->fd, .events = POLLIN },
				 { .fd = pc->oob_fd, .events = POLLIN } };

	if (!armed) {
		for (int q = 0; q < pc->num_qps; q++) {
			int rc = efi_req_notify_cq(pc->qps[q].cq, 0);

			if (rc)
				perf_die("efi_req_notify_cq: %s", strerror(rc));
		}
		return true;
	}
	if (poll(pfd, watch_oob ? 2 : 1, -1) < 0 && errno != EINTR)
		perf_die("poll: %s", strerror(errno));
	if (pfd[0].revents)
		perf_wait_channel(pc);
	return false;
}

static void run_client(struct perf_ctx *pc, uint32_t size, struct perf_result *res)
{
	const struct perf_opts *o = pc->opts;
	struct stamps st = { 0 };
	uint64_t done = 0, total_posted = 0;
	double t_start, deadline;
	bool stop = false, armed = false;
	struct efi_wc wc[32];

	for (int q = 0; q < pc->num_qps; q++)
		pc->qps[q].posted = pc->qps[q].completed = 0;
	t_start = perf_now();
	deadline = t_start + o->duration;
	for (;;) {
		bool progress = false;

		if (!o->iters && !stop && perf_now() >= deadline)
			stop = true;
		for (int q = 0; q < pc->num_qps; q++) {
			struct perf_qp *pq = &pc->qps[q];
			int k;

			while (!stop && pq->posted - pq->completed + PERF_CQ_MOD <= PERF_TX_DEPTH) {
				uint64_t left = o->iters ? o->iters - pq->posted : PERF_CQ_MOD;

				if (!left)
					break;
				post_chain(pc, pq, size, left < PERF_CQ_MOD ? (unsigned)left : PERF_CQ_MOD);
			}
			k = perf_poll(pc, pq, wc, 32, false);
			for (int i = 0; i < k; i++) {
				pq->completed += wc[i].wr_id;
				done += wc[i].wr_id;
				progress = true;
			}
			if (k > 0)
				stamp_add(&st, perf_now(), done);
		}
		total_posted = 0;
		bool idle = true;

		for (int q = 0; q < pc->num_qps; q++) {
			total_posted += pc->qps[q].posted;
			if (pc->qps[q].completed != pc->qps[q].posted ||
			    (o->iters && pc->qps[q].posted < o->iters))
				idle = false;
		}
		if (idle && (o->iters || stop))
			break;
		if (!progress && o->events)
			armed = idle_wait(pc, armed, false);
	}

	double secs = st.n ? st.t[st.n - 1] - t_start : 0;
	double peak = 0;
	size_t w = st.n / 10 ? st.n / 10 : 1;

	for (size_t i = w; i < st.n; i++) {
		double dt = st.t[i] - st.t[i - w];

		if (dt > 0) {
			double rate = (double)(st.done[i] - st.done[i - w]) / dt;

			if (rate > peak)
				peak = rate;
		}
	}
	if (st.n && secs > 0) {
		double rate = (double)done / secs;

		if (peak < rate)
			peak = rate;
		res->bw_avg_gbps = rate * (o->verb == PERF_ATOMIC ? 8 : size) * 8 / 1e9;
		res->bw_peak_gbps = peak * (o->verb == PERF_ATOMIC ? 8 : size) * 8 / 1e9;
		res->msg_rate_mpps = rate / 1e6;
	}
	res->iters = done;
	res->seconds = secs;
	free(st.t);
	free(st.done);
	/* per QP: the server's send_bw counts its receives against it */
	oob_send_line(pc->oob_fd, "done %" PRIu64, total_posted);
}

/* send_bw, server side: keep receives posted until every message the
 * client sent has arrived. */
static void serve_send(struct perf_ctx *pc, uint32_t size, struct perf_result *res)
{
	const struct perf_opts *o = pc->opts;
	uint64_t received = 0, target = UINT64_MAX;
	double t_first = 0, t_last = 0, next_check = 0;
	bool armed = false;
	char line[128];
	struct efi_wc wc[32];

	while (received < target) {
		bool progress = false;

		for (int q = 0; q < pc->num_qps; q++) {
			struct perf_qp *pq = &pc->qps[q];
			int k = perf_poll(pc, pq, wc, 32, false);

			for (int i = 0; i < k; i++) {
				if (!(wc[i].opcode & EFI_WC_RECV))
					continue;
				if (wc[i].byte_len != size)
					perf_die("a message of %u bytes arrived in a %u-byte test", wc[i].byte_len, size);
				perf_recv_taken(pc, pq);
				if (!received)
					t_first = perf_now();
				received++;
				progress = true;
			}
			if (k > 0)
				perf_fill_recvs(pc, pq, PERF_RX_DEPTH);
		}
		if (progress)
			t_last = perf_now();
		if (target == UINT64_MAX && perf_now() >= next_check) {
			unsigned long long n;

			next_check = perf_now() + 0.001;
			if (oob_try_recv_line(pc->oob_fd, line, sizeof(line))) {
				if (sscanf(line, "done %llu", &n) != 1)
					perf_die("out of step with the peer: got '%.80s'", line);
				target = n;
			}
		}
		if (!progress && o->events && target == UINT64_MAX)
			armed = idle_wait(pc, armed, true);
	}
	res->iters = received;
	res->seconds = t_last - t_first;
	if (res->seconds > 0) {
		res->msg_rate_mpps = (double)received / res->seconds / 1e6;
		res->bw_avg_gbps = (double)received * size * 8 / res->seconds / 1e9;
		res->bw_peak_gbps = res->bw_avg_gbps;
	}
}

void perf_run_bw(struct perf_ctx *pc, uint32_t size, struct perf_result *res)
{
	const struct perf_opts *o = pc->opts;

	for (int q = 0; q < pc->num_qps; q++) {
		memset(pc->qps[q].buf, 0, pc->qps[q].buf_size);
		if (o->verb == PERF_SEND && !o->host)
			perf_fill_recvs(pc, &pc->qps[q], PERF_RX_DEPTH);
	}
	oob_sync(pc, "ready");
	if (o->host) {
		run_client(pc, size, res);
		return;
	}
	if (o->verb == PERF_SEND) {
		serve_send(pc, size, res);
	} else {
		/* Writes, Reads, atomics: the transport serves them alone */
		char line[128];

		oob_recv_line(pc->oob_fd, line, sizeof(line));
		res->iters = 0;
	}
}
