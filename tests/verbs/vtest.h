/* SPDX-License-Identifier: MIT */
/* What the verbs test programs share: a check that counts failures, a fatal
 * error, and polling one completion with a deadline.  Define VTEST_PROG (the
 * program's name, for DIE) before including it; one program per binary. */
#ifndef EFI_TESTS_VERBS_VTEST_H
#define EFI_TESTS_VERBS_VTEST_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <infiniband/verbs.h>

static int failures;

static void check(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAILED", what);
	if (!ok)
		failures++;
}

#define DIE(...) do { fprintf(stderr, VTEST_PROG ": " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Polls until one completion arrives (5 s at most): 1 when one did. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	double end = now() + 5;
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0)
		if (now() > end)
			return 0;
	return n == 1;
}

/* poll_one, and the completion succeeded. */
static inline int poll_ok(struct ibv_cq *cq, struct ibv_wc *wc)
{
	return poll_one(cq, wc) && wc->status == IBV_WC_SUCCESS;
}

#endif
