/* SPDX-License-Identifier: MIT */
/*
 * SACK bookkeeping on both sides, without a wire:
 *  - the responder's reorder buffer (libefi/reorder.c): what it holds, the
 *    window it accepts (across the 24-bit wrap), duplicates, the SACK block
 *    it writes, forgetting the PSNs a Read jumps over;
 *  - the requester's scoreboard (libefi/retx.c) over a bare QP: SACKed
 *    packets leave the pipe and are never marked for retransmission, a
 *    hole is declared lost only once a packet sent after it on the same
 *    path has arrived and the reordering window has passed (reordering is
 *    not loss), only the hole is retransmitted, a tail loss is probed
 *    after two RTTs of silence counted from the last transmission, a
 *    ping-pong's dead path is suspected, an ACK overtaken by a later one
 *    is no drop, and going back skips nothing it should not;
 *  - the dead-peer rule (libefi/req_timers.c): silence on every path for
 *    max(timeout × (retry_cnt + 1), EFI_MIN_DEAD_NS) fails a QP, counted
 *    only while this process runs — a flapping path, a stalled peer or our
 *    own process descheduled never do.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libefi/efi_int.h"
#include "bare_qp.h"

#define US 1000ull

/* ---- reorder buffer ---- */

START_TEST(reorder_window_and_duplicates)
{
	struct efi_reorder r;
	uint8_t pkt[64], big[EFI_REORDER_PKT_MAX + 1];
	size_t len;
	const uint8_t *got;

	memset(&r, 0, sizeof(r));
	memset(pkt, 0x5a, sizeof(pkt));
	memset(big, 0, sizeof(big));
	/* base is the expected PSN: it and what is before are not "early". */
	ck_assert_int_eq(efi_reorder_store(&r, 100, 100, pkt, 10), ERANGE);
	ck_assert_int_eq(efi_reorder_store(&r, 100, 99, pkt, 10), ERANGE);
	ck_assert_int_eq(efi_reorder_store(&r, 100, 100 + EFI_REORDER_SLOTS, pkt, 10), ERANGE);
	ck_assert_int_eq(efi_reorder_store(&r, 100, 101, big, sizeof(big)), EMSGSIZE);
	ck_assert_ptr_null(r.m);	/* nothing held, nothing allocated */
	ck_assert_int_eq(efi_reorder_store(&r, 100, 101, pkt, 10), 0);
	ck_assert_int_eq(efi_reorder_store(&r, 100, 100 + EFI_REORDER_SLOTS - 1, pkt, 64), 0);
	ck_assert_int_eq(efi_reorder_store(&r, 100, 101, pkt, 10), EEXIST);
	ck_assert_uint_eq(r.count, 2);
	ck_assert(efi_reorder_has(&r, 101));
	ck_assert(!efi_reorder_has(&r, 102));
	got = efi_reorder_get(&r, 100 + EFI_REORDER_SLOTS - 1, &len);
	ck_assert_ptr_nonnull(got);
	ck_assert_uint_eq(len, 64);
	ck_assert_int_eq(memcmp(got, pkt, 64), 0);
	ck_assert_ptr_null(efi_reorder_get(&r, 102, &len));
	efi_reorder_remove(&r, 101);
	efi_reorder_remove(&r, 101);	/* twice: no underflow */
	ck_assert_uint_eq(r.count, 1);
	efi_reorder_clear(&r);
	ck_assert_uint_eq(r.count, 0);
	ck_assert(!efi_reorder_has(&r, 100 + EFI_REORDER_SLOTS - 1));
	efi_reorder_free(&r);
	ck_assert_ptr_null(r.m);
}
END_TEST

/* A copy left in a slot (its PSN was taken in order from another arrival,
 * e.g. a retransmission on another path) never passes for the PSN that
 * reuses the slot EFI_REORDER_SLOTS later: not "held", not in a SACK, not
 * a duplicate of the real packet, which overwrites it. */
START_TEST(reorder_stale_copy_is_not_a_later_psn)
{
	struct efi_reorder r;
	struct efi_pkt ack;
	uint8_t old[16], now[16];
	size_t len;
	const uint32_t later = 101 + EFI_REORDER_SLOTS;

	memset(&r, 0, sizeof(r));
	memset(old, 0x11, sizeof(old));
	memset(now, 0x22, sizeof(now));
	ck_assert_int_eq(efi_reorder_store(&r, 100, 101, old, sizeof(old)), 0);
	/* 101 is processed from another copy; the expected PSN moves on a
	 * whole buffer's span without touching the held copy */
	ck_assert(!efi_reorder_has(&r, later));
	ck_assert_ptr_null(efi_reorder_get(&r, later, &len));
	memset(&ack, 0, sizeof(ack));
	ck_assert(!efi_reorder_sack(&r, later - 1, &ack) || !(ack.sack.bitmap[0] & 2));
	ck_assert_int_eq(efi_reorder_store(&r, later - 1, later, now, sizeof(now)), 0);
	ck_assert_uint_eq(r.count, 1);
	ck_assert_int_eq(memcmp(efi_reorder_get(&r, later, &len), now, sizeof(now)), 0);
	/* removing an older PSN's copy clears the slot; a later one stays */
	efi_reorder_remove(&r, 101);
	ck_assert(efi_reorder_has(&r, later));
	efi_reorder_remove(&r, later + EFI_REORDER_SLOTS);
	ck_assert(!efi_reorder_has(&r, later));
	ck_assert_uint_eq(r.count, 0);
	efi_reorder_free(&r);
}
END_TEST

START_TEST(reorder_sack_block_across_wrap)
{
	struct efi_reorder r;
	struct efi_pkt ack, parsed;
	uint8_t buf[256], pkt[8] = { 0 };
	uint32_t base = 0xfffffe;	/* the window wraps past 0xffffff */

	memset(&r, 0, sizeof(r));
	memset(&ack, 0, sizeof(ack));
	ck_assert(!efi_reorder_sack(&r, base, &ack));	/* nothing held: no block */
	ck_assert_int_eq(efi_reorder_store(&r, base, 0xffffff, pkt, 8), 0);	/* bit 1 */
	ck_assert_int_eq(efi_reorder_store(&r, base, 0x000002, pkt, 8), 0);	/* bit 4 */
	ck_assert_int_eq(efi_reorder_store(&r, base, 0x000008, pkt, 8), 0);	/* bit 10 */
	ck_assert(efi_reorder_sack(&r, base, &ack));
	ck_assert_uint_eq(ack.sack.base_psn, base);
	ck_assert_uint_eq(ack.sack.nbits, 11);
	ck_assert_uint_eq(ack.sack.bitmap[0], 0x12);
	ck_assert_uint_eq(ack.sack.bitmap[1], 0x04);
	/* It is a block the wire format accepts, byte for byte. */
	ack.opcode = EFI_OP_ACK;
	ack.psn = efi_psn_add(base, EFI_PSN_MASK);
	ack.aeth.syndrome = EFI_AETH_ACK | EFI_AETH_CREDITS_NONE;
	size_t n = efi_pkt_build_hdr(buf, sizeof(buf), &ack);
	ck_assert_uint_eq(n, EFI_BASE_HDR_LEN + EFI_AETH_LEN + EFI_TSE_LEN + EFI_SACK_LEN);
	ck_assert_int_eq(efi_pkt_parse(buf, n, &parsed), 0);
	ck_assert_int_eq(memcmp(parsed.sack.bitmap, ack.sack.bitmap, sizeof(ack.sack.bitmap)), 0);
	/* A Read at base took 5 PSNs: anything held in them is forgotten. */
	efi_reorder_remove_range(&r, base, efi_psn_add(base, 5));
	ck_assert_uint_eq(r.count, 1);
	ck_assert(efi_reorder_has(&r, 0x000008));
	efi_reorder_free(&r);
}
END_TEST

/* ---- requester scoreboard over a bare QP (bare_qp.h) ---- */

START_TEST(sack_then_only_the_hole_is_lost)
{
	uint64_t t = 1000000 * US;
	struct bare *b = bare_new(t);
	struct efi_qp_int *qp = &b->qp;
	uint32_t psn, lost;

	/* Warm the RTT estimate: 50 µs. */
	for (int i = 0; i < 20; i++) {
		send_one(qp, qp->snd_nxt, t);
		ack(qp, qp->snd_nxt, NULL, 0, t, t + 50 * US);
		t += 100 * US;
	}
	ck_assert_uint_eq(qp->pipe, 0);
	/* 10 packets, 1 µs apart; the third is lost. */
	uint32_t first = qp->snd_nxt;
	for (int i = 0; i < 10; i++)
		send_one(qp, efi_psn_add(first, (uint32_t)i), t + (uint64_t)i * US);
	ck_assert_uint_eq(qp->pipe, 10);
	/* ACK of the first two, SACK of 4 … 10, caused by the last one. */
	uint32_t sacked[7];
	for (int i = 0; i < 7; i++)
		sacked[i] = efi_psn_add(first, 3 + (uint32_t)i);
	ack(qp, efi_psn_add(first, 2), sacked, 7, t + 9 * US, t + 60 * US);
	ck_assert_uint_eq(state(qp, efi_psn_add(first, 5)), EFI_TX_SACKED);
	ck_assert_uint_eq(state(qp, first), EFI_TX_NONE);	/* acknowledged */
	/* Within the reordering window: still in flight (reordering is not
	 * loss), with a timer for when it would be. */
	ck_assert_uint_eq(state(qp, efi_psn_add(first, 2)), EFI_TX_INFLIGHT);
	ck_assert_uint_eq(qp->pipe, 1);
	ck_assert(!efi_retx_next_lost(qp, &lost));
	ck_assert_uint_ne(qp->rack_deadline_ns, 0);
	/* The reordering timer fires: only the hole is lost. */
	efi_retx_timers(qp, qp->rack_deadline_ns);
	ck_assert_uint_eq(state(qp, efi_psn_add(first, 2)), EFI_TX_LOST);
	ck_assert_uint_eq(qp->cnt.fast_retransmits, 1);
	ck_assert_uint_eq(qp->pipe, 0);
	ck_assert(efi_retx_next_lost(qp, &lost));
	ck_assert_uint_eq(lost, efi_psn_add(first, 2));
	/* Retransmitted: counted once, in flight again, and no other packet
	 * is lost. */
	psn = lost;
	send_one(qp, psn, t + 200 * US);
	ck_assert_uint_eq(qp->cnt.retransmissions, 1);
	ck_assert_uint_eq(qp->paths[0].retransmissions, 1);
	ck_assert_uint_eq(state(qp, psn), EFI_TX_INFLIGHT);
	ck_assert(!efi_retx_next_lost(qp, &lost));
	/* Its ACK covers all ten. */
	ack(qp, efi_psn_add(first, 10), NULL, 0, t + 200 * US, t + 250 * US);
	ck_assert_uint_eq(qp->pipe, 0);
	ck_assert_uint_eq(qp->paths[0].inflight, 0);
	bare_free(b);
}
END_TEST

START_TEST(sack_outside_window_ignored)
{
	uint64_t t = 1000 * US;
	struct bare *b = bare_new(t);
	struct efi_qp_int *qp = &b->qp;
	struct efi_pkt p;

	for (int i = 0; i < 4; i++)
		send_one(qp, qp->snd_nxt, t);
	memset(&p, 0, sizeof(p));
	p.hdrs = EFI_HDR_SACK;
	p.sack.base_psn = efi_psn_add(qp->snd_nxt, 0);	/* nothing sent there yet */
	p.sack.nbits = 256;
	memset(p.sack.bitmap, 0xff, sizeof(p.sack.bitmap));
	efi_retx_sack(qp, &p);
	ck_assert_uint_eq(qp->pipe, 4);
	p.sack.base_psn = efi_psn_add(qp->snd_una, EFI_PSN_MASK - 255);	/* all before snd_una */
	efi_retx_sack(qp, &p);
	ck_assert_uint_eq(qp->pipe, 4);
	bare_free(b);
}
END_TEST

START_TEST(tail_loss_probe)
{
	uint64_t t = 1000000 * US;
	struct bare *b = bare_new(t);
	struct efi_qp_int *qp = &b->qp;
	uint32_t lost, first;

	for (int i = 0; i < 20; i++) {
		send_one(qp, qp->snd_nxt, t);
		ack(qp, qp->snd_nxt, NULL, 0, t, t + 50 * US);
		t += 100 * US;
	}
	/* The last three packets of a burst are lost: no later packet can
	 * reveal them. */
	first = qp->snd_nxt;
	qp->silent_since_ns = t;	/* as the transmit path does when work starts from idle */
	for (int i = 0; i < 3; i++)
		send_one(qp, efi_psn_add(first, (uint32_t)i), t);
	uint64_t pto = 2 * qp->paths[0].rtt.srtt_ns;
	if (pto < b->ctx.ccp.tlp_min_ns)
		pto = b->ctx.ccp.tlp_min_ns;
	efi_retx_timers(qp, t + pto - 1);
	ck_assert(!efi_retx_next_lost(qp, &lost));
	efi_retx_timers(qp, t + pto);
	ck_assert_uint_eq(qp->cnt.tail_probes, 1);
	ck_assert(qp->tlp_pending);
	ck_assert(efi_retx_next_lost(qp, &lost));
	ck_assert_uint_eq(lost, first);	/* the oldest goes first */
	send_one(qp, lost, t + pto);
	ck_assert(!qp->tlp_pending);
	/* The probe's ACK (SACKless: the others are lost) says the probe
	 * arrived after the other two were sent: they are lost too. */
	ack(qp, efi_psn_add(first, 1), NULL, 0, t + pto, t + pto + 50 * US);
	efi_retx_timers(qp, t + pto + 200 * US);
	ck_assert_uint_eq(state(qp, efi_psn_add(first, 1)), EFI_TX_LOST);
	ck_assert_uint_eq(state(qp, efi_psn_add(first, 2)), EFI_TX_LOST);
	bare_free(b);
}
END_TEST

/* The tail-loss probe's clock starts at the newest transmission: a burst
 * that takes longer than the probe timeout to leave (a 64 KiB message on
 * a veth) must not have its first packet sent again before its ACK could
 * come back (that probe was a duplicate at the responder and a stale ACK
 * at the requester, on every such message). */
START_TEST(tlp_clock_starts_at_last_send)
{
	uint64_t t = 1000000 * US;
	struct bare *b = bare_new(t);
	struct efi_qp_int *qp = &b->qp;
	uint32_t first;

	for (int i = 0; i < 20; i++) {
		send_one(qp, qp->snd_nxt, t);
		ack(qp, qp->snd_nxt, NULL, 0, t, t + 50 * US);
		t += 100 * US;
	}
	uint64_t pto = 2 * qp->paths[0].rtt.srtt_ns;
	if (pto < b->ctx.ccp.tlp_min_ns)
		pto = b->ctx.ccp.tlp_min_ns;
	first = qp->snd_nxt;
	qp->silent_since_ns = t;	/* work starts from idle */
	/* 64 packets leave over 315 µs, more than the probe timeout. */
	for (uint32_t i = 0; i < 64; i++)
		send_one(qp, efi_psn_add(first, i), t + i * 5 * US);
	uint64_t last = t + 63 * 5 * US;
	ck_assert_uint_gt(last - t, pto);
	efi_retx_timers(qp, t + pto);
	efi_retx_timers(qp, last);
	efi_retx_timers(qp, last + pto - 1);
	ck_assert_uint_eq(qp->cnt.tail_probes, 0);
	ck_assert(!qp->tlp_pending);
	/* Silence after the last one: the probe goes. */
	efi_retx_timers(qp, last + pto);
	ck_assert_uint_eq(qp->cnt.tail_probes, 1);
	bare_free(b);
}
END_TEST

static struct bare *bare_new_paths(uint64_t now, unsigned npaths)
{
	struct bare *b = bare_new(now);
	b->ctx.p.nlanes = npaths;
	efi_retx_init(&b->qp, now);
	return b;
}

/* Sends n packets on path at time t. */
static void send_on(struct efi_qp_int *qp, unsigned path, unsigned n, uint64_t t)
{
	qp->cur_path = (uint8_t)path;
	for (unsigned i = 0; i < n; i++)
		send_one(qp, qp->snd_nxt, t + i);
}

/* A ping-pong whose ping went on a dead path: the tail probe's answer on
 * another path shows the peer alive, so the silence is the path's (any
 * rule that tells a stalled peer from a dead path must keep this: the
 * flap test fails without it). */
START_TEST(pingpong_dead_path_suspected)
{
	uint64_t t = 1000000 * US;
	struct bare *b = bare_new_paths(t, 2);
	struct efi_qp_int *qp = &b->qp;
	struct efi_pkt p;
	uint32_t lost;

	for (int i = 0; i < 20; i++) {
		send_on(qp, (unsigned)i % 2, 1, t);
		ack(qp, qp->snd_nxt, NULL, 0, t, t + 100 * US);
		t += 200 * US;
	}
	uint64_t after = efi_path_suspect_after_ns(&qp->paths[0], &b->ctx.ccp);
	ck_assert_uint_eq(after, 500 * US);
	t += 1000 * US;	/* the last pong was a while ago */
	uint32_t ping = qp->snd_nxt;
	send_on(qp, 0, 1, t);
	/* path 0 is dead: the tail probe sends the ping again on path 1 at
	 * 200 µs, answered there at 240 µs */
	efi_retx_timers(qp, t + 200 * US);
	ck_assert(efi_retx_next_lost(qp, &lost));
	ck_assert_uint_eq(lost, ping);
	qp->cur_path = 1;
	send_one(qp, ping, t + 200 * US);
	qp->snd_una = qp->snd_nxt;
	efi_retx_acked(qp, ping, qp->snd_una);
	memset(&p, 0, sizeof(p));
	p.opcode = EFI_OP_ACK;
	p.hdrs = EFI_HDR_AETH;
	p.path = 1;
	p.psn = ping;
	p.ts_echo = t + 200 * US;
	efi_retx_after_response(qp, &p, t + 240 * US);
	/* the next ping goes on path 0 again and goes unanswered: path 0
	 * (its silence clock kept since its loss) is suspected */
	send_on(qp, 0, 1, t + 450 * US);
	efi_retx_timers(qp, t + 499 * US);
	ck_assert_uint_eq(qp->paths[0].suspected, 0);
	efi_retx_timers(qp, t + 520 * US);
	ck_assert_uint_eq(qp->paths[0].suspected, 1);
	bare_free(b);
}
END_TEST

/* An ACK overtaken by a later one (they come back on several lanes) is not
 * a dropped packet; a response beyond what was sent is. */
START_TEST(overtaken_ack_is_not_a_drop)
{
	uint64_t t = 1000000 * US;
	struct bare *b = bare_new(t);
	struct efi_qp_int *qp = &b->qp;
	struct efi_pkt p;
	uint32_t first = qp->snd_nxt;

	qp->attr.qp_state = EFI_QPS_RTS;
	for (uint32_t i = 0; i < 32; i++)
		send_one(qp, efi_psn_add(first, i), t + i);
	ack(qp, efi_psn_add(first, 32), NULL, 0, t + 31, t + 100 * US);	/* all 32 */
	ck_assert_uint_eq(qp->pipe, 0);
	/* the ACK of the first 16, arriving after it */
	memset(&p, 0, sizeof(p));
	p.opcode = EFI_OP_ACK;
	p.hdrs = EFI_HDR_AETH;
	p.aeth.syndrome = EFI_AETH_ACK | EFI_AETH_CREDITS_NONE;
	p.psn = efi_psn_add(first, 15);
	p.ts_echo = t + 15;
	efi_req_handle(qp, &p);
	ck_assert_uint_eq(qp->cnt.drops, 0);
	ck_assert_uint_eq(qp->snd_una, efi_psn_add(first, 32));
	/* an ACK of something never sent */
	p.psn = efi_psn_add(first, 40);
	efi_req_handle(qp, &p);
	ck_assert_uint_eq(qp->cnt.drops, 1);
	ck_assert_uint_eq(qp->cnt.drop_reasons[EFI_DROP_OUT_OF_WINDOW], 1);
	bare_free(b);
}
END_TEST

START_TEST(rewind_keeps_sacked)
{
	uint64_t t = 1000 * US;
	struct bare *b = bare_new(t);
	struct efi_qp_int *qp = &b->qp;
	uint32_t first = qp->snd_nxt, s = efi_psn_add(first, 2);

	for (int i = 0; i < 5; i++)
		send_one(qp, qp->snd_nxt, t);
	ack(qp, first, &s, 1, 0, t + 10 * US);
	ck_assert_uint_eq(qp->pipe, 4);
	/* Going back (a timeout, a NAK): everything from there is to be sent
	 * again in sequence, except what the responder holds. */
	efi_retx_rewind(qp, first);
	ck_assert_uint_eq(qp->snd_nxt, first);
	ck_assert_uint_eq(qp->pipe, 0);
	ck_assert_uint_eq(state(qp, s), EFI_TX_SACKED);
	ck_assert_uint_eq(state(qp, first), EFI_TX_NONE);
	/* Going back never moves snd_nxt forward. */
	efi_retx_rewind(qp, efi_psn_add(first, 3));
	ck_assert_uint_eq(qp->snd_nxt, first);
	bare_free(b);
}
END_TEST

START_TEST(unsent_is_not_a_retransmission)
{
	uint64_t t = 1000 * US;
	struct bare *b = bare_new(t);
	struct efi_qp_int *qp = &b->qp;
	uint32_t psn = qp->snd_nxt, lost;

	send_one(qp, psn, t);
	efi_retx_unsent(qp, psn);	/* the socket refused it */
	ck_assert_uint_eq(qp->pipe, 0);
	ck_assert(efi_retx_next_lost(qp, &lost));
	ck_assert_uint_eq(lost, psn);
	send_one(qp, psn, t + 1);
	ck_assert_uint_eq(qp->cnt.retransmissions, 0);	/* its first time on the wire */
	send_one(qp, psn, t + 2);
	ck_assert_uint_eq(qp->cnt.retransmissions, 1);
	bare_free(b);
}
END_TEST

START_TEST(missing_response_resends_only_its_request)
{
	uint64_t t = 1000 * US;
	struct bare *b = bare_new(t);
	struct efi_qp_int *qp = &b->qp;
	uint32_t read = qp->snd_nxt, mid = efi_psn_add(read, 1), lost;

	/* A Read (one request), then four Writes, all in flight. */
	for (int i = 0; i < 5; i++)
		send_one(qp, qp->snd_nxt, t);
	ck_assert_uint_eq(qp->pipe, 5);
	/* An ACK passed the Read: the Writes after it reached the responder
	 * and are never sent again; only the Read request goes. */
	efi_retx_held(qp, mid, efi_psn_add(read, 4));
	ck_assert_uint_eq(qp->pipe, 1);
	for (uint32_t i = 1; i < 5; i++)
		ck_assert_uint_eq(state(qp, efi_psn_add(read, i)), EFI_TX_SACKED);
	efi_retx_resend(qp, read);
	ck_assert_uint_eq(qp->pipe, 0);
	ck_assert(efi_retx_next_lost(qp, &lost));
	ck_assert_uint_eq(lost, read);
	ck_assert_uint_eq(qp->snd_nxt, efi_psn_add(read, 5));	/* no going back */
	/* A later Read the same ACK passed (held) reaches the head: its
	 * request goes again, from the lost list. */
	send_one(qp, read, t + 1);
	qp->snd_una = mid;
	efi_retx_acked(qp, read, mid);
	efi_retx_resend(qp, mid);
	ck_assert(efi_retx_next_lost(qp, &lost));
	ck_assert_uint_eq(lost, mid);
	ck_assert_uint_eq(state(qp, mid), EFI_TX_LOST);
	/* Nothing not yet sent is "sent again". */
	efi_retx_resend(qp, qp->snd_nxt);
	ck_assert_uint_eq(state(qp, qp->snd_nxt), EFI_TX_NONE);
	bare_free(b);
}
END_TEST


/* ---- the dead-peer rule ---- */

/* An answer (an ACK of everything sent) arriving on path at now. */
static void answer_on(struct efi_qp_int *qp, unsigned path, uint64_t echo, uint64_t now)
{
	answer_sack_on(qp, path, qp->snd_nxt, NULL, 0, echo, now);
}

/* The transport's timer runs every step ns from *t for span ns, as the
 * progress thread does while work is outstanding: true if the QP would fail
 * at one of them (*t advances to the end). */
static bool run_timers(struct efi_qp_int *qp, uint64_t *t, uint64_t span, uint64_t step)
{
	for (uint64_t end = *t + span; *t < end; *t += step) {
		efi_req_skip_local_stall(qp, *t);
		if (efi_req_peer_dead(qp, *t))
			return true;
	}
	return false;
}

/* Two paths, timeout 14 (67 ms) and retry_cnt 7, as perftest and efi-perf
 * set them: 0.54 s of silence was what verbs would allow. */
static struct bare *bare_verbs_qp(uint64_t t)
{
	struct bare *b = bare_new_paths(t, 2);

	b->qp.attr.qp_state = EFI_QPS_RTS;
	b->qp.rto_ns = 4096ull << 14;
	b->qp.attr.retry_cnt = 7;
	b->qp.silent_since_ns = t;
	return b;
}

/* The sequence t-lossy-flap failed on under load: path 0 flaps, the last
 * packets before a pause went out on it while it was down, and the process
 * is descheduled for 800 ms.  When it runs again there has been no answer
 * for longer than timeout × (retry_cnt + 1) — but nobody was listening.  The
 * QP must resend on path 1 and live; only silence while it listens counts. */
START_TEST(stall_during_flap_is_not_a_dead_peer)
{
	uint64_t t = 1000000 * US;
	struct bare *b = bare_verbs_qp(t);
	struct efi_qp_int *qp = &b->qp;

	for (int round = 0; round < 50; round++) {
		bool down = (round / 5) % 2;	/* path 0: 5 rounds up, 5 down */
		uint32_t first = qp->snd_nxt, lost, sacked[4];

		send_on(qp, 0, 4, t);
		send_on(qp, 1, 4, t + 10);
		ck_assert(!run_timers(qp, &t, 1000 * US, 1000 * US));
		if (down) {
			/* path 1's four arrive, path 0's do not: the SACK (on
			 * path 1) shows the holes, RACK declares them lost and
			 * they go again on path 1 */
			for (uint32_t i = 0; i < 4; i++)
				sacked[i] = efi_psn_add(first, 4 + i);
			answer_sack_on(qp, 1, first, sacked, 4, t - 1000 * US + 10, t);
			ck_assert(!run_timers(qp, &t, 1000 * US, 1000 * US));
			efi_retx_timers(qp, t);
			qp->cur_path = 1;
			while (efi_retx_next_lost(qp, &lost))
				send_one(qp, lost, t);
			ck_assert(!run_timers(qp, &t, 1000 * US, 1000 * US));
		}
		answer_on(qp, 1, t - 1000 * US, t);
		ck_assert_uint_eq(qp->pipe, 0);
	}
	/* The last packets leave on path 0 while it is down ... */
	send_on(qp, 0, 4, t);
	ck_assert(!run_timers(qp, &t, 5000 * US, 1000 * US));
	/* ... and the process does not run for 800 ms. */
	t += 800000 * US;
	efi_req_skip_local_stall(qp, t);
	ck_assert_msg(!efi_req_peer_dead(qp, t), "the QP failed for its own process's absence");
	/* It listens again, resends on path 1, is answered. */
	ck_assert(!run_timers(qp, &t, 20000 * US, 1000 * US));
	answer_on(qp, 1, t - 100 * US, t);
	ck_assert(!run_timers(qp, &t, 10000 * US, 1000 * US));
	bare_free(b);
}
END_TEST

/* The peer's process is descheduled for a second (every path quiet at once,
 * our timers running): a QP with verbs' usual timeout × retry survives it. */
START_TEST(peer_stall_of_a_second_survived)
{
	uint64_t t = 1000000 * US;
	struct bare *b = bare_verbs_qp(t);
	struct efi_qp_int *qp = &b->qp;

	send_on(qp, 0, 8, t);
	send_on(qp, 1, 8, t);
	answer_on(qp, 0, t, t + 50 * US);
	send_on(qp, 0, 8, t);
	send_on(qp, 1, 8, t);
	ck_assert_msg(!run_timers(qp, &t, 1200000 * US, 1000 * US), "a 1.2 s peer stall failed the QP");
	answer_on(qp, 1, t - 1000 * US, t);
	ck_assert(!run_timers(qp, &t, 100000 * US, 1000 * US));
	bare_free(b);
}
END_TEST

/* The floor is the context's when $EFI_MIN_DEAD_MS set one: a 3 s floor
 * fails the QP after 3 s, sooner than the default; a 20 s one outlasts the
 * default's 10 s of silence and still fails the QP after 20 s. */
START_TEST(dead_floor_configurable)
{
	static const uint64_t floors_ms[] = { 3000, 20000 };

	ck_assert_uint_lt(3000 * 1000 * US, EFI_MIN_DEAD_NS);
	ck_assert_uint_gt(20000 * 1000 * US, EFI_MIN_DEAD_NS);
	for (unsigned i = 0; i < 2; i++) {
		uint64_t t0 = 1000000 * US, t = t0, floor = floors_ms[i] * 1000 * US;
		struct bare *b = bare_verbs_qp(t);
		struct efi_qp_int *qp = &b->qp;

		b->ctx.min_dead_ns = floor;
		ck_assert_uint_eq(efi_req_dead_after_ns(qp), floor);
		send_on(qp, 0, 8, t);
		ck_assert(!run_timers(qp, &t, floor - 10000 * US, 10000 * US));
		ck_assert(run_timers(qp, &t, 30000 * US, 10000 * US));
		ck_assert_uint_le(t - t0, floor + 10000 * US);
		bare_free(b);
	}
}
END_TEST

/* A dead network still fails the QP, after max(timeout × (retry_cnt + 1),
 * EFI_MIN_DEAD_NS) of silence heard by a running process — also when the
 * process naps up to just under the stall threshold between runs, and when
 * it was descheduled once in the middle (that gap does not count). */
START_TEST(dead_network_still_fails)
{
	uint64_t t0 = 1000000 * US, t = t0;
	struct bare *b = bare_verbs_qp(t);
	struct efi_qp_int *qp = &b->qp;

	ck_assert_uint_eq(efi_req_dead_after_ns(qp), EFI_MIN_DEAD_NS);
	send_on(qp, 0, 8, t);
	send_on(qp, 1, 8, t);
	ck_assert(!run_timers(qp, &t, EFI_MIN_DEAD_NS - 1000 * US, 1000 * US));
	ck_assert(run_timers(qp, &t, 2000 * US, 1000 * US));
	ck_assert_uint_le(t - t0, EFI_MIN_DEAD_NS + 1000 * US);
	/* naps of 90 ms: every one of them counts */
	qp->silent_since_ns = t0 = t;
	qp->timers_ns = 0;
	ck_assert(run_timers(qp, &t, EFI_MIN_DEAD_NS + 100000 * US, 90000 * US));
	ck_assert_uint_le(t - t0, EFI_MIN_DEAD_NS + 90000 * US);
	/* one 500 ms absence: failed 500 ms later than it would have been */
	qp->silent_since_ns = t0 = t;
	qp->timers_ns = 0;
	ck_assert(!run_timers(qp, &t, 1000000 * US, 1000 * US));
	t += 500000 * US;
	ck_assert(!run_timers(qp, &t, EFI_MIN_DEAD_NS - 1000000 * US - 2000 * US, 1000 * US));
	ck_assert(run_timers(qp, &t, 5000 * US, 1000 * US));
	ck_assert_uint_ge(t - t0, EFI_MIN_DEAD_NS + 500000 * US - 2000 * US);
	/* a longer verbs timeout is honoured: 4.3 s × 8 */
	qp->rto_ns = 4096ull << 20;
	ck_assert_uint_eq(efi_req_dead_after_ns(qp), (4096ull << 20) * 8);
	qp->rto_ns = 0;	/* timeout 0: retry for ever */
	ck_assert_uint_eq(efi_req_dead_after_ns(qp), 0);
	ck_assert(!efi_req_peer_dead(qp, t + 3600000000000ull));
	bare_free(b);
}
END_TEST

/* After a timeout, each probe goes on the next path round (skipping one
 * whose uplink is down): a path can fail one way alone, its probes
 * arriving and their answers lost, and probing it again and again failed
 * the QP in t-lossy-flap with three other paths working.  One packet is in
 * flight until something answers. */
START_TEST(timeout_probes_go_round_the_paths)
{
	uint64_t t = 1000000 * US;
	struct bare *b = bare_new_paths(t, 4);
	struct efi_qp_int *qp = &b->qp;
	unsigned seen = 0, order[8];
	uint32_t psn;

	qp->attr.qp_state = EFI_QPS_RTS;
	qp->pt_down = 1u << 2;	/* efid says path 2's uplink is down */
	send_on(qp, 1, 8, t);
	qp->timer_start_ns = t;
	for (unsigned k = 0; k < 6; k++) {
		/* the timers run every millisecond until the next timeout */
		for (unsigned ms = 0; ms < 5000 && qp->cnt.timeouts == k; ms++) {
			t += 1000 * US;
			efi_req_timers(qp, t);
		}
		ck_assert_uint_eq(qp->cnt.timeouts, k + 1);
		ck_assert(efi_req_next(qp, t, &psn));
		ck_assert_uint_eq(psn, qp->snd_una);
		order[k] = qp->cur_path;
		seen |= 1u << qp->cur_path;
		send_one(qp, psn, t);
		ck_assert_msg(!efi_req_next(qp, t, &psn), "a second packet in flight before an answer");
	}
	/* 1's window timed out: 3, 0, 1 (2 is down), round again */
	ck_assert_uint_eq(order[0], 3);
	ck_assert_uint_eq(order[1], 0);
	ck_assert_uint_eq(order[2], 1);
	ck_assert_uint_eq(order[3], 3);
	ck_assert_uint_eq(seen, (1u << 0) | (1u << 1) | (1u << 3));
	/* every path down: the probes still go round */
	qp->pt_down = 0xf;
	for (unsigned ms = 0; ms < 5000 && qp->cnt.timeouts == 6; ms++) {
		t += 1000 * US;
		efi_req_timers(qp, t);
	}
	ck_assert_uint_eq(qp->cnt.timeouts, 7);
	ck_assert(efi_req_next(qp, t, &psn));
	ck_assert_uint_eq(qp->cur_path, (order[5] + 1) % 4);
	bare_free(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sack");
	TCase *t = tcase_create("reorder");
	SRunner *sr;
	int failed;

	tcase_add_test(t, reorder_window_and_duplicates);
	tcase_add_test(t, reorder_stale_copy_is_not_a_later_psn);
	tcase_add_test(t, reorder_sack_block_across_wrap);
	suite_add_tcase(s, t);
	t = tcase_create("scoreboard");
	tcase_add_test(t, sack_then_only_the_hole_is_lost);
	tcase_add_test(t, sack_outside_window_ignored);
	tcase_add_test(t, tail_loss_probe);
	tcase_add_test(t, tlp_clock_starts_at_last_send);
	tcase_add_test(t, pingpong_dead_path_suspected);
	tcase_add_test(t, stall_during_flap_is_not_a_dead_peer);
	tcase_add_test(t, peer_stall_of_a_second_survived);
	tcase_add_test(t, dead_network_still_fails);
	tcase_add_test(t, dead_floor_configurable);
	tcase_add_test(t, timeout_probes_go_round_the_paths);
	tcase_add_test(t, overtaken_ack_is_not_a_drop);
	tcase_add_test(t, rewind_keeps_sacked);
	tcase_add_test(t, unsent_is_not_a_retransmission);
	tcase_add_test(t, missing_response_resends_only_its_request);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
