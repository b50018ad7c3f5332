/* SPDX-License-Identifier: MIT */
/*
 * lossy-test: EFI's transport on a lossy network (issue 4), written against
 * <efi/efi.h> only.  One process per side, as dp-test (whose plumbing it
 * links: tests/data/dp-common.c): the server (the target) in one instance,
 * the client (the requester) in another, exchanging QP descriptions over TCP:
 *
 *     lossy-test server MODE [options]
 *     lossy-test client MODE SERVER-ADDRESS [options]
 *
 * Modes:
 *   integrity  --messages N of every opcode and random sizes; the target
 *              checks order, duplicates and checksums, the requester checks
 *              Reads and atomics
 *   bulk       --qps N QPs of RDMA Writes for --seconds: longest gap between
 *              completions, throughput per QP and Jain's fairness index
 *   pingpong   --size bytes Send ping-pong for --seconds: latency percentiles
 *              and the longest round trip
 *   retry      Writes until the QP fails: expects EFI_WC_RETRY_EXC_ERR (the
 *              test takes every path away), then flushes, within --seconds
 *
 * The client prints "STARTED epoch=SECONDS" (the wall clock; its times are
 * counted from there) once traffic runs: scripts wait for it before they
 * break the network and "RESULT key=value ..." lines for the scripts.
 * Exit 0: passed; 1: a "FAIL" line says what went wrong; 77: cannot run.
 */
#ifndef LOSSY_H
#define LOSSY_H

#include <stdbool.h>
#include <stdint.h>

#include "tests/data/dp.h"

#define LOSSY_DEFAULT_PORT	18700

struct lossy_opts {
	struct dp_opts dp;
	const char *mode;
	uint64_t messages;	/* integrity */
	uint64_t seed;
	uint32_t window;	/* WRs outstanding per QP */
	uint32_t max_size;	/* integrity: largest message */
	uint32_t size;		/* bulk, pingpong: message size */
	int qps;		/* bulk */
	double seconds;		/* bulk, pingpong: duration; retry: deadline */
	double warmup;		/* bulk: seconds not counted in the shares */
	uint8_t qp_timeout;	/* verbs exponent: 4.096 µs × 2^t */
	uint8_t retry_cnt;
	double gap_limit_ms;	/* > 0: fail when a completion gap exceeds it */
};

typedef void lossy_mode_fn(struct dp_side *s, const struct lossy_opts *o);
lossy_mode_fn lossy_integrity, lossy_bulk, lossy_pingpong, lossy_retry;

/* A QP configuration for n outstanding WRs each way and a buffer. */
struct dp_qp_cfg lossy_qp_cfg(const struct lossy_opts *o, uint32_t wrs, size_t buf_size);

/* Prints the QP's transport counters on one line (what recovery cost). */
void lossy_print_counters(const char *who, struct efi_qp *qp);
/* The context's counters, drops by reason included, on one line. */
void lossy_print_context_counters(const char *who, struct efi_context *ctx);

/* splitmix64, for schedules both sides derive from the seed alone. */
uint64_t lossy_mix(uint64_t x);

/* Sorts v[0 … n) and returns the q-quantile (0 … 1). */
double lossy_quantile(double *v, size_t n, double q);

/* The client's "traffic is running" line, with the wall clock: its
 * "..._at_s" figures count from then. */
void lossy_started(void);

#endif
