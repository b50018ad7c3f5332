/* SPDX-License-Identifier: MIT */
/*
 * The wide window (issue 14): a responder keeps requests up to
 * EFI_REORDER_SLOTS (1024) PSNs ahead and says so in its ACKs; a requester
 * keeps that many outstanding only once told.  A SACK block still covers
 * 256 PSNs, so what is held further ahead is neither reported nor dropped,
 * and the requester judges loss only within the block's reach.  The
 * scoreboard helpers are bare_qp.h's, shared with test_sack.c.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "libefi/efi_int.h"
#include "bare_qp.h"

#define US 1000ull

/* A packet held beyond a SACK block's reach (the wide window) is not
 * reported, and not dropped either: an ACK whose block would be empty
 * must not take the buffer for one holding only stale copies. */
START_TEST(reorder_held_beyond_sack_reach_kept)
{
	struct efi_reorder r;
	struct efi_pkt ack;
	uint8_t pkt[64] = { 7 };
	const uint32_t base = 0xffff00;	/* across the 24-bit wrap */
	const uint32_t far = efi_psn_add(base, EFI_SACK_MAX_BITS + 44);

	memset(&r, 0, sizeof(r));
	ck_assert_int_eq(efi_reorder_store(&r, base, far, pkt, sizeof(pkt)), 0);
	memset(&ack, 0, sizeof(ack));
	ck_assert(!efi_reorder_sack(&r, base, &ack));
	ck_assert(!(ack.hdrs & EFI_HDR_SACK));
	ck_assert(efi_reorder_has(&r, far));
	ck_assert_uint_eq(r.count, 1);
	/* once the expected PSN comes within reach, it is reported */
	ck_assert(efi_reorder_sack(&r, efi_psn_add(base, 100), &ack));
	ck_assert_uint_eq(ack.sack.nbits, EFI_SACK_MAX_BITS + 44 - 100 + 1);
	efi_reorder_free(&r);
}
END_TEST

/* ---- requester scoreboard over a bare QP (bare_qp.h) ---- */


/* A wide window (the responder holds EFI_SEND_WINDOW_WIDE PSNs ahead)
 * reaches past what one SACK block can describe.  A later packet's
 * arrival says nothing about the packets beyond the block's reach: the
 * responder may hold them without being able to say so.  Only the hole
 * is lost; the packets 256 and more past snd_una stay in flight. */
START_TEST(wide_window_beyond_sack_reach_not_lost)
{
	uint64_t t = 1000000 * US;
	struct bare *b = bare_new(t);
	struct efi_qp_int *qp = &b->qp;
	uint32_t lost, sacked[EFI_SACK_MAX_BITS - 1];
	const unsigned n = 600;

	for (int i = 0; i < 20; i++) {
		send_one(qp, qp->snd_nxt, t);
		ack(qp, qp->snd_nxt, NULL, 0, t, t + 50 * US);
		t += 100 * US;
	}
	uint32_t first = qp->snd_nxt;
	for (unsigned i = 0; i < n; i++)
		send_one(qp, efi_psn_add(first, i), t + i);
	/* The first is lost; the ACK caused by packet 500 (held, beyond
	 * the block) SACKs all it can: 1 … 255. */
	for (unsigned i = 0; i < EFI_SACK_MAX_BITS - 1; i++)
		sacked[i] = efi_psn_add(first, 1 + i);
	ack(qp, first, sacked, EFI_SACK_MAX_BITS - 1, t + 500, t + 60 * US);
	ck_assert_uint_eq(qp->pipe, n - (EFI_SACK_MAX_BITS - 1));
	ck_assert_uint_ne(qp->rack_deadline_ns, 0);
	/* a microsecond later: every packet sent before packet 500 is past
	 * its reordering window */
	efi_retx_timers(qp, qp->rack_deadline_ns + US);
	ck_assert_uint_eq(state(qp, first), EFI_TX_LOST);
	ck_assert_uint_eq(qp->cnt.fast_retransmits, 1);
	for (unsigned i = EFI_SACK_MAX_BITS; i < n; i++)
		ck_assert_uint_eq(state(qp, efi_psn_add(first, i)), EFI_TX_INFLIGHT);
	ck_assert(efi_retx_next_lost(qp, &lost));
	ck_assert_uint_eq(lost, first);
	/* The hole filled: what was held beyond is acknowledged with it. */
	send_one(qp, first, t + 200 * US);
	ack(qp, efi_psn_add(first, n), NULL, 0, t + 200 * US, t + 250 * US);
	ck_assert_uint_eq(qp->pipe, 0);
	bare_free(b);
}
END_TEST

/* A requester keeps EFI_SEND_WINDOW PSNs outstanding until the responder
 * has said it holds more (EFI_AETH_CREDITS_WIDE): an older responder drops
 * what is 256 or more ahead. */
START_TEST(wide_window_only_when_the_peer_holds_it)
{
	struct bare *b = bare_new(1000 * US);
	struct efi_qp_int *qp = &b->qp;

	qp->attr.qp_state = EFI_QPS_RTS;
	qp->snd_nxt = efi_psn_add(qp->snd_una, EFI_SEND_WINDOW);
	qp->snd_max = efi_psn_add(qp->snd_nxt, 10);
	ck_assert(!efi_req_can_send(qp, 0));
	qp->peer_wide = true;
	ck_assert(efi_req_can_send(qp, 0));
	qp->snd_nxt = efi_psn_add(qp->snd_una, EFI_SEND_WINDOW_WIDE - 1);
	qp->snd_max = efi_psn_add(qp->snd_nxt, 10);
	ck_assert(efi_req_can_send(qp, 0));
	qp->snd_nxt = efi_psn_add(qp->snd_una, EFI_SEND_WINDOW_WIDE);
	ck_assert(!efi_req_can_send(qp, 0));
	bare_free(b);
}
END_TEST

static Suite *wide_suite(void)
{
	Suite *s = suite_create("wide_window");
	TCase *t = tcase_create("wide");

	tcase_add_test(t, reorder_held_beyond_sack_reach_kept);
	tcase_add_test(t, wide_window_beyond_sack_reach_not_lost);
	tcase_add_test(t, wide_window_only_when_the_peer_holds_it);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(wide_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
