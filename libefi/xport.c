/* SPDX-License-Identifier: MIT */
/*
 * The transport loop: receive a batch of datagrams and dispatch each to its
 * QP (after the parser and the source/state checks of docs/wire-format.md,
 * "Receiving"), run the timers, and transmit what each QP has to send in
 * sendmmsg-sized batches.  Runs in whichever thread holds ctx->lock: an
 * application thread in post/poll, or the progress thread.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "efi_int.h"

/*
 * Whether from, the source of a packet for qp, is one of the UDP ports the
 * peer's lanes are bound to (docs/wire-format.md, "Addressing"): efid binds
 * those for the peer's context and hands them to it alone, so no other
 * process of the peer's address can send from them without raw sockets
 * (root).  What authenticates a QP that the connection manager did not key
 * (connected by hand: a QPN, PSN and rkey exchanged over the application's
 * own channel): a forged Write from another process of the peer's instance
 * failed the QP with a remote access error (issue 22).
 */
static bool from_peer_lane(const struct efi_qp_int *qp, const struct sockaddr_in6 *from)
{
	/* qp->peer is the peer's lane 0, set at RTR (qp.c) */
	uint32_t port = ntohs(from->sin6_port), lane0 = ntohs(qp->peer.sin6_port);

	if (!lane0 || port < lane0)
		return false;
	return (port - lane0) % EFI_LANE_STRIDE == 0 && (port - lane0) / EFI_LANE_STRIDE < EFI_WIRE_MAX_LANES;
}

static bool cq_lost(const struct efi_cq *cq)
{
	return cq && atomic_load_explicit(&((const struct efi_cq_int *)cq)->overflowed, memory_order_relaxed);
}

/* A CQ of qp lost a completion (ctx->lock held): the QP fails. */
static void fail_on_lost_cq(struct efi_qp_int *qp)
{
	if (qp->attr.qp_state != EFI_QPS_ERR && qp->attr.qp_state != EFI_QPS_RESET &&
	    (cq_lost(qp->pub.send_cq) || cq_lost(qp->pub.recv_cq)))
		efi_qp_to_error(qp);
}

/* The ACK a request carries (PACK), as the ACK packet it stands for. */
static void pack_as_ack(const struct efi_pkt *req, struct efi_pkt *ack)
{
	memset(ack, 0, sizeof(*ack));
	ack->version = req->version;
	ack->opcode = EFI_OP_ACK;
	ack->flags = EFI_PKT_F_FIRST | EFI_PKT_F_LAST;
	ack->dest_qpn = req->dest_qpn;
	ack->src_qpn = req->src_qpn;
	ack->psn = req->pack.psn;
	ack->path = req->pack.path;
	ack->tx_ts = req->tx_ts;
	ack->conn_key = req->conn_key;
	ack->hdrs = EFI_HDR_AETH;
	ack->aeth.syndrome = req->pack.syndrome;
	ack->aeth.msn = req->pack.msn;
	ack->ts_echo = req->pack.ts_echo;
}

/* The ACK a request carries (PACK).  A causal one (TSE 0) completes what
 * it covers (efi_req_causal_ack); a held one is a whole ACK. */
static void handle_pack(struct efi_qp_int *qp, const struct efi_pkt *pkt)
{
	enum efi_qp_state st = qp->attr.qp_state;
	struct efi_pkt ack;

	qp->peer_reads_pack = true;
	if (st != EFI_QPS_RTS && st != EFI_QPS_SQD)
		return;
	if (!pkt->pack.ts_echo) {
		efi_req_causal_ack(qp, pkt->pack.psn);
		return;
	}
	qp->peer_sends_pack = true;
	pack_as_ack(pkt, &ack);
	qp->peer_alive = true;
	efi_req_handle(qp, &ack);
}

static void dispatch(struct efi_context_int *ctx, const struct efi_wire_pkt *wp)
{
	struct efi_pkt pkt;
	struct efi_qp_int *qp;
	enum efi_qp_state st;
	int r = efi_pkt_parse(wp->buf, wp->len, &pkt);

	if (r < 0) {
		efi_count_drop(&ctx->dead, r == -EPROTONOSUPPORT ? EFI_DROP_BAD_VERSION : EFI_DROP_MALFORMED);
		return;
	}
	/* the QPN's block, then its QP: two array reads however many blocks */
	int b = efi_qpn_block(ctx, pkt.dest_qpn);
	if (b < 0 || !(qp = ctx->qps[b][pkt.dest_qpn & (EFI_QPN_PER_BLOCK - 1)])) {
		efi_count_drop(&ctx->dead, EFI_DROP_UNKNOWN_QP);
		return;
	}
	/* a datagram for a UD QP, and nothing else for either */
	if (__builtin_expect(efi_pkt_is_datagram(pkt.opcode) || qp->pub.qp_type == EFI_QPT_UD, 0)) {
		if (efi_pkt_is_datagram(pkt.opcode) && qp->pub.qp_type == EFI_QPT_UD)
			efi_ud_receive(ctx, qp, &pkt, wp);
		else
			efi_count_drop(&qp->cnt, EFI_DROP_QP_TYPE);
		return;
	}
	st = qp->attr.qp_state;
	if (st == EFI_QPS_RESET || st == EFI_QPS_INIT) {
		efi_count_drop(&qp->cnt, EFI_DROP_QP_STATE);
		return;
	}
	if (pkt.src_qpn != qp->attr.dest_qp_num ||
	    memcmp(&wp->peer.sin6_addr, &qp->peer.sin6_addr, sizeof(struct in6_addr)) != 0) {
		efi_count_drop(&qp->cnt, EFI_DROP_BAD_SOURCE);
		return;
	}
	/* A connection the connection manager keyed accepts only its key:
	 * a stale peer of a reused QPN is not mistaken for the new one.  One
	 * without a key, only what comes from the peer's own lanes. */
	if (qp->conn_key && pkt.conn_key != qp->conn_key) {
		efi_count_drop(&qp->cnt, EFI_DROP_BAD_KEY);
		return;
	}
	if (!qp->conn_key && ctx->wire->source_ports && !from_peer_lane(qp, &wp->peer)) {
		efi_count_drop(&qp->cnt, EFI_DROP_BAD_SOURCE);
		return;
	}
	qp->cnt.rx_packets++;
	qp->cnt.rx_bytes += wp->len;
	efi_qp_activate(ctx, qp);	/* this run visits it (active.c) */
	if (efi_pkt_is_request(pkt.opcode)) {
		if (st == EFI_QPS_ERR) {
			efi_count_drop(&qp->cnt, EFI_DROP_QP_STATE);
			return;
		}
		/* The ACK it carries goes first when the request completes a
		 * receive: what the peer had taken of ours completes before
		 * its message does, which ofi_rxm's Write rendezvous needs
		 * (efi_req_causal_ack).  Otherwise after it, as if it had come
		 * right behind: the request's completion, which the
		 * application waits for, does not wait for the ACK's work (1.5
		 * µs of a 6.5 µs half round trip when the ACK went first). */
		bool pack_first = (pkt.hdrs & EFI_HDR_PACK) && efi_pkt_completes_receive(pkt.opcode);

		if (pack_first)
			handle_pack(qp, &pkt);
		efi_resp_handle(qp, &pkt);
		if ((pkt.hdrs & EFI_HDR_PACK) && !pack_first)
			handle_pack(qp, &pkt);
	} else {
		if ((pkt.hdrs & EFI_HDR_AETH) && (pkt.aeth.syndrome & EFI_AETH_KIND_MASK) == EFI_AETH_ACK) {
			uint8_t v = pkt.aeth.syndrome & EFI_AETH_VALUE_MASK;
			if (v == EFI_AETH_CREDITS_PACK || v == EFI_AETH_CREDITS_WIDE_PACK)
				qp->peer_reads_pack = true;
			if (v == EFI_AETH_CREDITS_WIDE || v == EFI_AETH_CREDITS_WIDE_PACK)
				qp->peer_wide = true;
		}
		if (st != EFI_QPS_RTS && st != EFI_QPS_SQD) {
			efi_count_drop(&qp->cnt, EFI_DROP_QP_STATE);
			return;
		}
		qp->peer_alive = true;
		efi_req_handle(qp, &pkt);
	}
}

/*
 * Where a packet of qp on path leaves from and goes to: from our lane
 * `path` to the peer's lane 0 (docs/wire-format.md, "Multipath").  The
 * source port alone tells the lanes apart to an ECMP hash and to efid's
 * per-lane uplink rules, and every path of a connection arrives on one
 * socket of the peer, in the order the fabric delivered it: over one
 * socket per lane the receiver interleaved its sockets' backlogs, so
 * in-order traffic of one link arrived hundreds of packets out of order
 * (4 lanes on one bridge: write_bw 13.5 against 18 Gb/s over one lane,
 * Reads 9.6 against 15, with 14,000 responses dropped as too early).
 * A path beyond our lanes (a peer with more) leaves from one of ours to
 * its own lane, so that its four-tuple stays distinct.
 */
static inline void address_pkt(const struct efi_context_int *ctx, const struct efi_qp_int *qp,
			       struct efi_wire_pkt *wp, unsigned path)
{
	unsigned nlanes = ctx->p.nlanes ? ctx->p.nlanes : 1;
	uint32_t port;

	/* our lanes are those of the QP's QPN block (lane_base): the peer
	 * takes a QP without a key only from its own block's ports */
	wp->peer = qp->peer;	/* lane 0's address */
	if (path < nlanes) {
		wp->lane = (uint8_t)(qp->lane_base + path);
		return;
	}
	port = efi_lane_port(ctx->p.port_base, path, qp->attr.dest_qp_num);
	if (port) {
		wp->peer.sin6_port = htons((uint16_t)port);
		wp->lane = (uint8_t)(qp->lane_base + path % nlanes);
	} else {
		wp->lane = qp->lane_base;	/* a path no fabric-wide PortBase/Lanes allows */
	}
}

/* Where a request of qp on path leaves from and goes to: address_pkt, but
 * to the peer's lane the path was moved to after its probes went
 * unanswered (req_timers.c, rehash_probe_path), when the peer's lane 0 is
 * at the fabric-wide port the lanes are counted from. */
static inline void address_req(const struct efi_context_int *ctx, const struct efi_qp_int *qp,
			       struct efi_wire_pkt *wp, unsigned path)
{
	unsigned dst = path < EFI_MAX_PATHS ? qp->paths[path].dst_lane : 0;
	uint32_t port;

	address_pkt(ctx, qp, wp, path);
	if (!dst || !ctx->p.port_base ||
	    efi_lane_port(ctx->p.port_base, 0, qp->attr.dest_qp_num) != ntohs(qp->peer.sin6_port))
		return;
	port = efi_lane_port(ctx->p.port_base, dst, qp->attr.dest_qp_num);
	if (port)
		wp->peer.sin6_port = htons((uint16_t)port);
}

/* Sends n packets; returns how many left (the rest stayed unsent). */
static unsigned send_all(struct efi_context_int *ctx, struct efi_qp_int *qp, unsigned n)
{
	unsigned sent = 0;

	while (sent < n) {
		int r = efi_wire_send(ctx->wire, ctx->txpkts + sent, n - sent);
		if (r <= 0)
			break;
		sent += (unsigned)r;
	}
	for (unsigned i = 0; i < sent; i++) {
		qp->cnt.tx_packets++;
		qp->cnt.tx_bytes += efi_wire_pkt_size(&ctx->txpkts[i]);
	}
	return sent;
}

/* Builds the response at the head of the QP's response queue into wp
 * (whose buf is the caller's) and addresses it; returns 1 if a packet was
 * built, 0 if the entry had nothing (more) to send.  ctx->lock held. */
static unsigned build_resp_into(struct efi_context_int *ctx, struct efi_qp_int *qp, struct efi_wire_pkt *wp)
{
	struct efi_respq_ent *e = &qp->respq[qp->respq_head];
	bool done;
	uint8_t path = e->path;
	size_t len;

	len = efi_resp_build(qp, e, wp, &done);
	if (done) {
		qp->respq_head = (qp->respq_head + 1) % EFI_RESPQ_SLOTS;
		qp->respq_count--;
	}
	if (!len)
		return 0;
	/* an ACK on a lane whose uplink is down would be lost: another lane
	 * carries it (path_table.h) */
	address_pkt(ctx, qp, wp,
		    path < EFI_MAX_PATHS && path < ctx->p.nlanes
			    ? efi_pt_response_lane(&ctx->pt, path, ctx->p.nlanes)
			    : (path < EFI_MAX_PATHS ? path : 0));
	return 1;
}

static unsigned build_resp(struct efi_context_int *ctx, struct efi_qp_int *qp, unsigned n)
{
	ctx->txpkts[n].buf = ctx->txbuf + (size_t)n * EFI_PKTBUF_SIZE;
	return build_resp_into(ctx, qp, &ctx->txpkts[n]);
}

/* Whether the QP's ACK waits (ack_hold_ns): it is all the response queue
 * holds, a plain ACK, its time has not come and the application still
 * polls.  An answer the
 * application posts meanwhile leaves first, the ACK right behind it in the
 * same batch, instead of the answer waiting behind the ACK's send.
 * ctx->lock held. */
static bool ack_held(const struct efi_context_int *ctx, const struct efi_qp_int *qp, uint64_t now)
{
	const struct efi_respq_ent *e = &qp->respq[qp->respq_head];

	/* an application about to sleep (efi_progress_kick zeroes its
	 * stamp) answers nothing soon: its ACKs go now */
	return qp->ack_hold_ns && now < qp->ack_hold_ns && qp->respq_count == 1 && !qp->reorder.count &&
	       atomic_load_explicit(&ctx->app_active_ns, memory_order_relaxed) != 0 &&
	       e->kind == RESPQ_ACK && e->syndrome == (EFI_AETH_ACK | EFI_AETH_CREDITS_NONE);
}

/* Whether the message just received crossed one of ours rather than
 * answered it: our requests still wait for their ACK although the peer
 * piggybacks ACKs (an answer would have carried it, and the PACK is handled
 * before this is asked).  Both sides of an exchange (MPI_Allreduce's
 * sendrecv) then wait for the other's ACK to complete their send before
 * they send again, so a held ACK stalled each round for the whole delay:
 * 8 B allreduce 13.8 us against 7.5 with EFI_ACK_DELAY_US=0 (issue 15).
 * Only with a peer that piggybacks held ACKs ($EFI_ACK_PIGGYBACK there):
 * with causal ACKs alone the held ACK still goes right behind our next
 * message, and not holding it cost the 8 B allreduce 7.37 against 6.83 us
 * (5 alternated runs, pinned). */
static bool exchange(const struct efi_qp_int *qp)
{
	return qp->peer_sends_pack && qp->snd_una != qp->snd_max;
}

/* The QP's held ACK is leaving: the progress thread need not wake for it.
 * Another QP's later deadline, if any, it learns at the next transport
 * run (efi_xport_run recomputes it); until then an application that
 * stopped polling leaves that ACK to the thread's usual round (at most
 * APP_ACTIVE_NS + APP_BACKOFF_NS).  Without this, the thread woke and took
 * the lock 20 µs after every message of a ping-pong: 40,000 context
 * switches a second on the application's CPU.  ctx->lock held. */
static void release_hold(struct efi_context_int *ctx, struct efi_qp_int *qp)
{
	uint64_t held = qp->ack_hold_ns;

	qp->ack_hold_ns = 0;
	atomic_compare_exchange_strong_explicit(&ctx->ack_deadline_ns, &held, 0, memory_order_relaxed,
						memory_order_relaxed);
}

void efi_xport_send_held_ack(struct efi_context_int *ctx, struct efi_qp_int *qp)
{
	/* its own buffer: the QP may fail in the middle of a batch being
	 * built in ctx->txpkts (efi_req_can_send → efi_qp_to_error); an
	 * ACK's headers only, not a packet buffer (EFI_PKTBUF_SIZE is 9 KiB
	 * and this runs on the application's stack) */
	uint8_t buf[EFI_MAX_HDR_LEN];
	struct efi_wire_pkt wp;
	const struct efi_respq_ent *e = &qp->respq[qp->respq_head];

	if (!qp->ack_hold_ns)
		return;
	release_hold(ctx, qp);
	if (qp->respq_count != 1 || e->kind != RESPQ_ACK)
		return;	/* not held after all: it leaves with the rest */
	memset(&wp, 0, sizeof(wp));
	wp.buf = buf;
	if (build_resp_into(ctx, qp, &wp) && efi_wire_send(ctx->wire, &wp, 1) == 1) {
		qp->cnt.tx_packets++;
		qp->cnt.tx_bytes += efi_wire_pkt_size(&wp);
	}
}

/* efi_xport_flush_qp with the time the caller read (ctx->lock held): one
 * clock read per transport run, not one per QP it visits (issue 15: three
 * reads were 18% of an empty poll's profile). */
static void flush_qp_at(struct efi_context_int *ctx, struct efi_qp_int *qp, uint64_t now)
{
	/* what it cannot send now, the next runs send (active.c) */
	efi_qp_activate(ctx, qp);
	for (int round = 0; round < 64; round++) {
		uint32_t psns[EFI_BATCH], psn;
		unsigned n = 0, nresp, nreq_end, sent;
		enum efi_qp_state st = qp->attr.qp_state;
		bool hold;

		if (st == EFI_QPS_RESET || st == EFI_QPS_INIT)
			return;
		/* efid's word on the local uplinks, before paths are chosen */
		efi_pt_check(ctx, qp, now);
		/* Held requests waiting for room in the response queue. */
		if (qp->reorder.count)
			efi_resp_drain(qp);
		hold = ack_held(ctx, qp, now);
		if (!hold && qp->ack_hold_ns)
			release_hold(ctx, qp);
		/* a peer that reads them takes the held ACK inside the first
		 * request that has room for it (efi_req_build) */
		if (hold && ctx->pack && qp->peer_reads_pack)
			qp->pack_offer = &qp->respq[qp->respq_head];
		if (!hold) {
			while (qp->respq_count && n < EFI_BATCH)
				n += build_resp(ctx, qp, n);
		}
		nresp = n;
		/* read before efi_req_next: starting a WQE moves snd_max, and
		 * an idle QP's clock then stayed at its last answer (or RTS):
		 * with more than 2 s since, the first timeout of new work
		 * failed it as a dead peer (issue 18, 10,000 QPs) */
		bool idle = qp->snd_una == qp->snd_max;
		while (n < EFI_BATCH && (qp->attr.qp_state == EFI_QPS_RTS || qp->attr.qp_state == EFI_QPS_SQD) &&
		       efi_req_next(qp, now, &psn)) {
			uint32_t next;
			size_t len;

			if (qp->snd_nxt == qp->snd_una)
				qp->timer_start_ns = now;
			if (idle)
				qp->silent_since_ns = now;	/* work starts: the dead-peer clock too */
			idle = false;
			/* distinct send times within a batch keep RACK's
			 * "sent after" exact */
			ctx->txpkts[n].buf = ctx->txbuf + (size_t)n * EFI_PKTBUF_SIZE;
			len = efi_req_build(qp, psn, &ctx->txpkts[n], &next, now + n);
			if (!len)
				break;
			psns[n] = psn;
			if (psn == qp->snd_nxt)
				qp->snd_nxt = next;
			address_req(ctx, qp, &ctx->txpkts[n], qp->cur_path);
			n++;
		}
		nreq_end = n;
		qp->pack_offer = NULL;
		if (qp->pack_taken) {
			qp->pack_taken = false;
			qp->respq_head = (qp->respq_head + 1) % EFI_RESPQ_SLOTS;
			qp->respq_count--;
			release_hold(ctx, qp);
			hold = false;
		}
		/* requests leave: the held ACK goes right behind them */
		if (hold && n > nresp && n < EFI_BATCH) {
			release_hold(ctx, qp);
			n += build_resp(ctx, qp, n);
		}
		if (!n)
			return;
		sent = send_all(ctx, qp, n);
		if (sent > nresp)
			qp->last_tx_ns = efi_now_ns();
		if (sent < n) {
			/* The socket is full: requests not sent go again (as
			 * lost ones, first when there is room); responses not
			 * sent count as lost. */
			if (sent < nresp)
				sent = nresp;
			for (unsigned i = sent; i < nreq_end; i++)
				efi_retx_unsent(qp, psns[i]);
			return;
		}
		if (n < EFI_BATCH)
			return;
		now = efi_now_ns();	/* a full batch left: the next one later */
	}
}

void efi_xport_flush_qp(struct efi_context_int *ctx, struct efi_qp_int *qp)
{
	flush_qp_at(ctx, qp, efi_now_ns());
}

int efi_xport_run(struct efi_context_int *ctx)
{
	return efi_xport_run_clock(ctx, NULL);
}

int efi_xport_run_clock(struct efi_context_int *ctx, uint64_t *clock_ns)
{
	int handled = 0;
	uint64_t now;
	bool busy = false;

#ifdef EFI_TRACE_ON
	{
		/* Neither the application nor the progress thread (which runs
		 * it at least every IDLE_TICK_NS) ran the transport: this
		 * process was descheduled or blocked, and its peers heard
		 * nothing from it meanwhile. */
		uint64_t t = efi_now_ns();
		if (ctx->trace_last_run_ns && t - ctx->trace_last_run_ns > 300ull * 1000 * 1000)
			EFI_TRACE("ctx pid %d: no transport run for %llu ms (until %llu us)\n", (int)getpid(),
				  (unsigned long long)((t - ctx->trace_last_run_ns) / 1000000),
				  (unsigned long long)(t / 1000));
		ctx->trace_last_run_ns = t;
	}
#endif
	for (int round = 0; round < 8; round++) {
		int n;
		for (unsigned i = 0; i < EFI_BATCH; i++) {
			ctx->rxpkts[i].buf = ctx->rxbuf + (size_t)i * EFI_RXBUF_SIZE;
			ctx->rxpkts[i].cap = EFI_RXBUF_SIZE;
			ctx->rxpkts[i].len = 0;
		}
		n = efi_wire_recv(ctx->wire, ctx->rxpkts, EFI_BATCH);
		if (n <= 0)
			break;
		for (int i = 0; i < n; i++)
			dispatch(ctx, &ctx->rxpkts[i]);
		handled += n;
		if ((unsigned)n < EFI_BATCH)
			break;
	}
	uint64_t deadline = 0;
	/* A CQ of the context lost a completion: every QP of that CQ fails,
	 * idle or not, loudly (its peer sees it too), rather than leave
	 * someone waiting for what never comes.  One sweep over them all;
	 * from then on each visit looks (a QP brought back to RTS later). */
	if (atomic_exchange_explicit(&ctx->cq_lost_any, false, memory_order_relaxed)) {
		ctx->cq_lost_seen = true;
		for (struct efi_qp_int *qp = ctx->qp_list; qp; qp = qp->next_active)
			fail_on_lost_cq(qp);
	}
	/* nothing to visit: no clock read either (an empty poll's cost) */
	if (clock_ns)
		*clock_ns = 0;
	if (!ctx->nactive) {
		atomic_store_explicit(&ctx->ack_deadline_ns, 0, memory_order_relaxed);
		__atomic_store_n(&ctx->busy, false, __ATOMIC_RELAXED);
		return handled;
	}
	now = efi_now_ns();
	if (clock_ns)
		*clock_ns = now;
	/* Only the active QPs (active.c), from a different one each run,
	 * round the ring: the one going first sends its whole window before
	 * the others get a turn, and behind a shared bottleneck that is its
	 * advantage every time (4 QPs through one tbf: Jain 0.87 on a loaded
	 * machine).  A QP leaves the ring at the end of a visit that leaves
	 * it nothing to do; n bounds the walk to the QPs there at its start. */
	struct efi_qp_int *first = ctx->act_head, *qp = first;
	for (unsigned i = 0, n = ctx->nactive; i < n && ctx->nactive; i++) {
		struct efi_qp_int *next = qp->act_next;

		if (ctx->cq_lost_seen)
			fail_on_lost_cq(qp);
		efi_req_timers(qp, now);
		if (qp->ack_hold_pending) {
			/* only the application's own poll holds an
			 * ACK: it gets the completion next and may
			 * answer (efi_poll_cq) */
			qp->ack_hold_pending = false;
			if (ctx->in_app_poll && ctx->ack_delay_ns && !qp->ack_hold_ns && !exchange(qp))
				qp->ack_hold_ns = now + ctx->ack_delay_ns;
		}
		flush_qp_at(ctx, qp, now);
		if (qp->ack_hold_ns && (!deadline || qp->ack_hold_ns < deadline))
			deadline = qp->ack_hold_ns;
		if (qp->snd_una != qp->snd_max || qp->respq_count || qp->rnr_wait || qp->sq_started != qp->sq_tail)
			busy = true;
		if (!efi_qp_needs_run(qp))
			efi_qp_deactivate(ctx, qp);
		qp = next;
	}
	/* the next run starts one further (unless the first one left) */
	if (first && ctx->act_head == first)
		ctx->act_head = first->act_next;
	atomic_store_explicit(&ctx->ack_deadline_ns, deadline, memory_order_relaxed);
	__atomic_store_n(&ctx->busy, busy, __ATOMIC_RELAXED);
	return handled;
}
