/* SPDX-License-Identifier: MIT */
/*
 * The latency tests, as perftest measures them:
 *  - send_lat: ping-pong of Sends, both sides with receives posted; one-way
 *    latency = round trip / 2;
 *  - write_lat: ping-pong of RDMA Writes, each side polling the last byte of
 *    its buffer for the peer's write; round trip / 2;
 *  - read_lat, atomic_lat: the client issues, the server only serves (its
 *    transport runs in libefi's progress thread); the full round trip.
 * The client keeps one sample per iteration; -D runs until the time is up.
 */
#include "config.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/efi-perf/perf.h"

#define LAT_RECV_DEPTH	16

struct samples {
	double *v;
	size_t n, cap;
};

static void sample_add(struct samples *s, double us)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 4096;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		if (!s->v)
			perf_die("out of memory for %zu latency samples", s->cap);
	}
	s->v[s->n++] = us;
}

/* Iteration i of the run goes on while this says so. */
static bool more(const struct perf_opts *o, uint64_t i, double deadline)
{
	if (o->iters)
		return i < o->iters;
	/* -D: clock_gettime is a vDSO call, cheap enough every iteration */
	return perf_now() < deadline;
}

/* The marker of iteration i in the last byte: never 0, never the previous. */
static uint8_t marker(uint64_t i)
{
	return (uint8_t)(i % 255 + 1);
}

/* Takes what the CQ holds (waiting for something if wait): send and receive
 * completions share it, so receives are counted in recv_ready for whoever
 * waits for them, never dropped with the sends. */
static void poll_once(struct perf_ctx *pc, struct perf_qp *pq, bool wait)
{
	struct efi_wc wc[16];
	int k = perf_poll(pc, pq, wc, 16, wait);

	for (int i = 0; i < k; i++) {
		if (wc[i].opcode & EFI_WC_RECV) {
			perf_recv_taken(pc, pq);
			pq->recv_ready++;
		}
	}
}

/* Waits for the next received message. */
static void wait_recv(struct perf_ctx *pc, struct perf_qp *pq)
{
	while (!pq->recv_ready)
		poll_once(pc, pq, true);
	pq->recv_ready--;
}

static void reap_sends(struct perf_ctx *pc, struct perf_qp *pq)
{
	poll_once(pc, pq, false);
}

/* Waits until the last byte of the receive half holds m, driving the
 * transport (and reaping send completions) meanwhile. */
static void wait_byte(struct perf_ctx *pc, struct perf_qp *pq, uint32_t size, uint8_t m)
{
	_Atomic uint8_t *last = (_Atomic uint8_t *)(pq->buf + size - 1);
	struct efi_wc wc[16];

	while (atomic_load_explicit(last, memory_order_acquire) != m)
		perf_poll(pc, pq, wc, 16, false);
}

/* The server waits for the client's "done N"; with -n it knows N already. */
static uint64_t recv_done(struct perf_ctx *pc)
{
	char line[128];
	unsigned long long n;

	oob_recv_line(pc->oob_fd, line, sizeof(line));
	if (sscanf(line, "done %llu", &n) != 1)
		perf_die("out of step with the peer: expected 'done N', got '%.80s'", line);
	return n;
}

/* send_lat, server side: echo every message until the client is done. */
static void serve_send(struct perf_ctx *pc, struct perf_qp *pq, uint32_t size)
{
	const struct perf_opts *o = pc->opts;
	uint64_t i, target = o->iters ? o->iters : UINT64_MAX;
	double next_check = 0;
	char line[128];

	for (i = 0; i < target; i++) {
		/* -D: the client's count arrives over TCP; look for it now and
		 * then while waiting, never on every spin */
		while (!o->iters && !pq->recv_ready) {
			poll_once(pc, pq, false);
			if (pq->recv_ready)
				break;
			if (perf_now() >= next_check) {
				unsigned long long n;

				next_check = perf_now() + 0.001;
				if (oob_try_recv_line(pc->oob_fd, line, sizeof(line))) {
					if (sscanf(line, "done %llu", &n) != 1)
						perf_die("out of step with the peer: got '%.80s'", line);
					if (n != i)
						perf_die("the client sent %llu messages, %" PRIu64 " arrived", n, i);
					return;
				}
			}
		}
		wait_recv(pc, pq);
		perf_fill_recvs(pc, pq, LAT_RECV_DEPTH);
		perf_post_one(pc, pq, EFI_WR_SEND, size, (i % PERF_CQ_MOD) == PERF_CQ_MOD - 1, i);
		reap_sends(pc, pq);
	}
	recv_done(pc);
}

static void serve_write(struct perf_ctx *pc, struct perf_qp *pq, uint32_t size)
{
	const struct perf_opts *o = pc->opts;
	_Atomic uint8_t *last = (_Atomic uint8_t *)(pq->buf + size - 1);
	uint8_t *out_last = pq->buf + pq->half + size - 1;
	double next_check = 0;
	char line[128];
	struct efi_wc wc[16];

	for (uint64_t i = 0;; i++) {
		if (o->iters) {
			if (i == o->iters)
				break;
			wait_byte(pc, pq, size, marker(i));
		} else {
			while (atomic_load_explicit(last, memory_order_acquire) != marker(i)) {
				perf_poll(pc, pq, wc, 16, false);
				if (perf_now() >= next_check) {
					next_check = perf_now() + 0.001;
					if (oob_try_recv_line(pc->oob_fd, line, sizeof(line)))
						return;	/* "done N": the client stopped */
				}
			}
		}
		*out_last = marker(i);
		perf_post_one(pc, pq, EFI_WR_RDMA_WRITE, size, (i % PERF_CQ_MOD) == PERF_CQ_MOD - 1, i);
	}
	recv_done(pc);
}

void perf_run_lat(struct perf_ctx *pc, uint32_t size, struct perf_result *res)
{
	const struct perf_opts *o = pc->opts;
	struct perf_qp *pq = &pc->qps[0];
	struct samples s = { 0 };
	double deadline, t0, t1;
	uint64_t i;
	struct efi_wc wc;

	memset(pq->buf, 0, pq->buf_size);
	if (o->verb == PERF_SEND)
		perf_fill_recvs(pc, pq, LAT_RECV_DEPTH);
	oob_sync(pc, "ready");

	if (!o->host) {
		switch (o->verb) {
		case PERF_SEND: serve_send(pc, pq, size); break;
		case PERF_WRITE: serve_write(pc, pq, size); break;
		/* Reads and atomics: served by the transport alone */
		default: recv_done(pc); break;
		}
		res->iters = 0;
		return;
	}

	deadline = perf_now() + o->duration;
	for (i = 0; more(o, i, deadline); i++) {
		bool sig = (i % PERF_CQ_MOD) == PERF_CQ_MOD - 1;

		t0 = perf_now();
		switch (o->verb) {
		case PERF_SEND:
			perf_post_one(pc, pq, EFI_WR_SEND, size, sig, i);
			wait_recv(pc, pq);
			t1 = perf_now();
			perf_fill_recvs(pc, pq, LAT_RECV_DEPTH);
			sample_add(&s, (t1 - t0) * 1e6 / 2);
			break;
		case PERF_WRITE:
			pq->buf[pq->half + size - 1] = marker(i);
			perf_post_one(pc, pq, EFI_WR_RDMA_WRITE, size, sig, i);
			wait_byte(pc, pq, size, marker(i));
			t1 = perf_now();
			sample_add(&s, (t1 - t0) * 1e6 / 2);
			break;
		case PERF_READ:
			perf_post_one(pc, pq, EFI_WR_RDMA_READ, size, true, i);
			perf_poll(pc, pq, &wc, 1, true);
			sample_add(&s, (perf_now() - t0) * 1e6);
			break;
		case PERF_ATOMIC:
			perf_post_one(pc, pq, EFI_WR_ATOMIC_FETCH_AND_ADD, 8, true, i);
			perf_poll(pc, pq, &wc, 1, true);
			sample_add(&s, (perf_now() - t0) * 1e6);
			break;
		}
	}
	/* the unsignaled tail completes silently; reap what did signal */
	reap_sends(pc, pq);
	oob_send_line(pc->oob_fd, "done %" PRIu64, i);
	res->iters = i;
	report_lat_stats(s.v, s.n, res);
	free(s.v);
}
