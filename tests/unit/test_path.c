/* SPDX-License-Identifier: MIT */
/*
 * Per-path state (libefi/path.c) as pure functions on a simulated clock:
 * a path whose packets stop being answered is suspected after a few RTTs
 * (and within the 5 ms bound whatever its RTT), avoided by the path choice,
 * probed at its interval, and re-admitted with its window as soon as it
 * answers; the connection window is the sum of the usable paths', so one
 * congested path does not throttle the others.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>

#include "libefi/path.h"

#define US 1000ull

static struct efi_cc_params params(void)
{
	struct efi_cc_params p;
	efi_cc_params_default(&p);
	p.suspect_rtts = 3;
	p.suspect_min_ns = 200 * US;
	p.suspect_max_ns = 4000 * US;
	p.probe_interval_ns = 1000 * US;
	p.init_cwnd = 16;
	return p;
}

START_TEST(suspect_after_missed_rtts)
{
	struct efi_cc_params cp = params();
	struct efi_path p;
	uint64_t now = 1000000 * US;

	efi_path_init(&p, &cp, now);
	for (int i = 0; i < 10; i++)
		efi_path_on_answer(&p, &cp, 100 * US, now);	/* srtt 100 µs */
	ck_assert_uint_eq(efi_path_suspect_after_ns(&p, &cp), 300 * US);
	/* Nothing in flight: silence is no symptom. */
	ck_assert(!efi_path_check(&p, &cp, now + 10000 * US));
	efi_path_on_send(&p, 4, now);
	ck_assert(!efi_path_check(&p, &cp, now + 299 * US));
	/* An answer restarts the wait. */
	efi_path_on_answer(&p, &cp, 100 * US, now + 250 * US);
	ck_assert(!efi_path_check(&p, &cp, now + 500 * US));
	ck_assert(efi_path_check(&p, &cp, now + 550 * US));
	ck_assert_int_eq(p.state, EFI_PATH_SUSPECT);
	ck_assert_uint_eq(p.suspected, 1);
	/* Once: a suspected path is not suspected again. */
	ck_assert(!efi_path_check(&p, &cp, now + 5000 * US));
	ck_assert_uint_eq(p.suspected, 1);
}
END_TEST

/* A path that lost packets and has not answered since keeps its silence
 * clock when new packets go on it: a dead path that gets one retransmission
 * after another (the only traffic of a ping-pong) is still suspected. */
START_TEST(dead_path_clock_survives_retransmissions)
{
	struct efi_cc_params cp = params();
	struct efi_path p;
	uint64_t now = 1000000 * US;

	efi_path_init(&p, &cp, now);
	for (int i = 0; i < 10; i++)
		efi_path_on_answer(&p, &cp, 100 * US, now);	/* suspected after 300 µs */
	efi_path_on_send(&p, 1, now);
	/* lost at 200 µs (a probe), sent again at once */
	efi_path_on_loss(&p);
	efi_path_on_leave(&p, 1);
	efi_path_on_send(&p, 1, now + 200 * US);
	ck_assert(efi_path_check(&p, &cp, now + 310 * US));
	/* An answer ends it: the next send starts a fresh clock. */
	efi_path_init(&p, &cp, now);
	efi_path_on_send(&p, 1, now);
	efi_path_on_loss(&p);
	efi_path_on_leave(&p, 1);
	efi_path_on_answer(&p, &cp, 100 * US, now + 100 * US);
	efi_path_on_send(&p, 1, now + 5000 * US);
	ck_assert(!efi_path_check(&p, &cp, now + 5200 * US));
}
END_TEST

/* A lost packet is sent again on another active path with room, the one
 * heard from last; with no other, the caller falls back. */
START_TEST(retransmission_avoids_the_losing_path)
{
	struct efi_cc_params cp = params();
	struct efi_path ps[3];
	uint64_t now = 1000 * US;

	for (int i = 0; i < 3; i++)
		efi_path_init(&ps[i], &cp, 0);
	ps[0].last_ack_ns = 900 * US;	/* heard from last, but it lost the packet */
	ps[1].last_ack_ns = 500 * US;
	ps[2].last_ack_ns = 800 * US;
	ck_assert_int_eq(efi_paths_pick_retx(ps, 3, now, 0), 2);
	ck_assert_int_eq(efi_paths_pick_retx(ps, 3, now, 1), 0);
	ps[2].state = EFI_PATH_SUSPECT;
	ck_assert_int_eq(efi_paths_pick_retx(ps, 3, now, 0), 1);
	ps[1].inflight = 16;	/* full */
	ck_assert_int_eq(efi_paths_pick_retx(ps, 3, now, 0), -1);
	ck_assert_int_eq(efi_paths_pick_retx(ps, 1, now, 0), -1);
}
END_TEST

START_TEST(suspicion_bounds)
{
	struct efi_cc_params cp = params();
	struct efi_path p;

	efi_path_init(&p, &cp, 0);
	/* No RTT yet, or a tiny one: the floor. */
	ck_assert_uint_eq(efi_path_suspect_after_ns(&p, &cp), 600 * US);	/* 3 × the floor as fallback, under the cap */
	efi_path_on_answer(&p, &cp, 10 * US, 0);
	ck_assert_uint_eq(efi_path_suspect_after_ns(&p, &cp), 200 * US);
	/* A huge RTT: never later than suspect_max (the ≤ 5 ms bound). */
	efi_path_init(&p, &cp, 0);
	efi_path_on_answer(&p, &cp, 50000 * US, 0);
	ck_assert_uint_eq(efi_path_suspect_after_ns(&p, &cp), 4000 * US);
}
END_TEST

START_TEST(probe_and_readmit)
{
	struct efi_cc_params cp = params();
	struct efi_path p;
	uint64_t now = 0;

	efi_path_init(&p, &cp, now);
	efi_path_on_answer(&p, &cp, 100 * US, now);
	efi_path_on_send(&p, 1, now);
	ck_assert(efi_path_check(&p, &cp, now += 1000 * US));
	/* Due for a probe at once, then every probe_interval. */
	ck_assert(efi_path_probe_due(&p, now));
	efi_path_on_probe(&p, &cp, now);
	ck_assert(!efi_path_probe_due(&p, now + 999 * US));
	ck_assert(efi_path_probe_due(&p, now + 1000 * US));
	/* It answers: re-admitted, with the window it had (silence is not
	 * congestion). */
	ck_assert(efi_path_on_answer(&p, &cp, 120 * US, now + 1200 * US));
	ck_assert_int_eq(p.state, EFI_PATH_ACTIVE);
	ck_assert_uint_eq(p.restored, 1);
	ck_assert_double_eq(p.cc.cwnd, 16);
	ck_assert(!efi_path_probe_due(&p, now + 5000 * US));
	/* An answer on an active path re-admits nothing. */
	ck_assert(!efi_path_on_answer(&p, &cp, 120 * US, now + 1300 * US));
	ck_assert_uint_eq(p.restored, 1);
}
END_TEST

START_TEST(window_is_sum_of_usable_paths)
{
	struct efi_cc_params cp = params();
	struct efi_path ps[3];

	for (int i = 0; i < 3; i++)
		efi_path_init(&ps[i], &cp, 0);
	ps[0].cc.cwnd = 10;
	ps[1].cc.cwnd = 0.5;	/* congested: only its own share shrinks */
	ps[2].cc.cwnd = 20;
	ck_assert_double_eq(efi_paths_window(ps, 3), 30.5);
	ps[2].state = EFI_PATH_SUSPECT;
	ck_assert_double_eq(efi_paths_window(ps, 3), 10.5);
	/* Every path suspected: the largest window, not zero. */
	ps[0].state = ps[1].state = EFI_PATH_SUSPECT;
	ck_assert_double_eq(efi_paths_window(ps, 3), 20);
}
END_TEST

START_TEST(pick_avoids_suspected_and_full)
{
	struct efi_cc_params cp = params();
	struct efi_path ps[3];
	uint64_t now = 5000 * US;

	for (int i = 0; i < 3; i++)
		efi_path_init(&ps[i], &cp, 0);
	ps[0].cc.cwnd = 8;
	ps[1].cc.cwnd = 8;
	ps[2].cc.cwnd = 8;
	efi_path_on_send(&ps[0], 6, now);
	efi_path_on_send(&ps[1], 2, now);
	efi_path_on_send(&ps[2], 1, now);
	ck_assert_int_eq(efi_paths_pick(ps, 3, now), 2);	/* most room */
	ps[2].state = EFI_PATH_SUSPECT;
	ck_assert_int_eq(efi_paths_pick(ps, 3, now), 1);	/* the suspected one is avoided */
	efi_path_on_send(&ps[1], 6, now);
	efi_path_on_send(&ps[0], 2, now);
	ck_assert_int_eq(efi_paths_pick(ps, 3, now), -1);	/* active paths full: wait */
	efi_path_on_leave(&ps[0], 1);
	ck_assert_int_eq(efi_paths_pick(ps, 3, now), 0);
	/* Pacing: a path whose next send is later is skipped. */
	ps[0].next_send_ns = now + 1;
	ck_assert_int_eq(efi_paths_pick(ps, 3, now), -1);
	ck_assert_int_eq(efi_paths_pick(ps, 3, now + 1), 0);
	/* All suspected: keep sending on the one heard from last. */
	ps[0].state = ps[1].state = EFI_PATH_SUSPECT;
	ps[0].next_send_ns = 0;
	ps[0].last_ack_ns = 10;
	ps[1].last_ack_ns = 20;
	ps[2].last_ack_ns = 30;
	efi_path_on_leave(&ps[1], 8);	/* room on 1, 2 has room too */
	ck_assert_int_eq(efi_paths_pick(ps, 3, now), 2);
	/* A path with nothing in flight may send one packet even with a
	 * window below one (pacing does the rest). */
	struct efi_path one;
	efi_path_init(&one, &cp, 0);
	one.cc.cwnd = 0.1;
	ck_assert_int_eq(efi_paths_pick(&one, 1, now), 0);
	efi_path_on_send(&one, 1, now);
	ck_assert_int_eq(efi_paths_pick(&one, 1, now), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("path");
	TCase *t = tcase_create("path");
	SRunner *sr;
	int failed;

	tcase_add_test(t, suspect_after_missed_rtts);
	tcase_add_test(t, suspicion_bounds);
	tcase_add_test(t, probe_and_readmit);
	tcase_add_test(t, window_is_sum_of_usable_paths);
	tcase_add_test(t, pick_avoids_suspected_and_full);
	tcase_add_test(t, dead_path_clock_survives_retransmissions);
	tcase_add_test(t, retransmission_avoids_the_losing_path);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
