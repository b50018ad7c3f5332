/* SPDX-License-Identifier: MIT */
/*
 * What the libfabric test programs (tests/fabric/fab-*.c) share, as
 * tests/verbs/vtest.h does for the verbs ones: failing loudly (MUST,
 * CHECK), hints for the efi provider's FI_EP_MSG endpoints, the objects of
 * one side of a connection (fabric, EQ, domain, CQ, endpoints) opened and
 * closed in one place, waits for CM events and completions that time out
 * instead of hanging, and the "server PORT | client IP PORT" command line
 * that tests/fabric/lib.sh's fab_pair runs.
 *
 * Every failure prints "FAIL: ..." on stdout and exits 1.
 */
#ifndef EFI_TESTS_FABTEST_H
#define EFI_TESTS_FABTEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

/* How long a wait for a CM event or a completion may take. */
#define FAB_TIMEOUT_MS 30000

/* The mr_mode every test asks for: what the efi provider requires. */
#define FAB_MR_MODE (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)

/* A libfabric call that must return 0 (or a count the test ignores: no,
 * any non-zero value fails). */
#define MUST(call) do { \
	int must_ret_ = (int)(call); \
	if (must_ret_) { \
		printf("FAIL: %s: %d (%s)\n", #call, must_ret_, fi_strerror(-must_ret_)); \
		exit(1); \
	} \
} while (0)

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		printf("FAIL: "); \
		printf(__VA_ARGS__); \
		printf("\n"); \
		exit(1); \
	} \
} while (0)

/* A CM event with room for its cm data. */
struct fab_cm_event {
	struct fi_eq_cm_entry e;
	uint8_t data[256];
};

/* One side's objects; whatever is not NULL is closed by fab_close. */
struct fab_side {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_eq *eq;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct fid_mr *mr;
};

/* Hints for the efi provider: FI_EP_MSG, caps, mode, FAB_MR_MODE. */
struct fi_info *fab_hints(uint64_t caps, uint64_t mode);

/* The command line "PROG server PORT ..." or "PROG client IP PORT ...":
 * true for the server; *ip (NULL for the server) and *port set.  Exits 2
 * after printing "usage: USAGE" when it is neither.  Line-buffers stdout
 * (the test scripts read it while the program runs). */
bool fab_args(int argc, char **argv, const char *usage, const char **ip, const char **port);

/* s->info from fi_getinfo: the server's with FI_SOURCE on port, the
 * client's towards ip:port. */
void fab_getinfo(struct fab_side *s, const struct fi_info *hints, bool server, const char *ip,
		 const char *port);

/* Opens s->fabric, an EQ and a CQ (fd wait objects, the CQ of format and
 * size given) and s->domain, from s->info. */
void fab_open(struct fab_side *s, enum fi_cq_format format, size_t cq_size);

/* s->ep on info, bound to s->eq and (both directions) s->cq, enabled. */
void fab_open_ep(struct fab_side *s, struct fi_info *info);

/* A passive endpoint on s->info, bound to s->eq, listening; prints
 * "listening" (what fab_pair waits for). */
void fab_listen(struct fab_side *s);

/* Waits for a CM event, which must be want; its entry (and data) in *ev
 * when ev is not NULL.  Returns fi_eq_sread's length. */
ssize_t fab_wait_event(struct fid_eq *eq, uint32_t want, struct fab_cm_event *ev,
		       const char *what);

/* Waits for FI_CONNREQ and opens s->ep on its info (fab_open_ep). */
void fab_take_connreq(struct fab_side *s);

/* Waits for one completion on cq, which must not be an error (it is
 * reported).  Any CQ format but tagged: the entry is read into a
 * fi_cq_data_entry. */
struct fi_cq_data_entry fab_wait_comp(struct fid_cq *cq, const char *what);

/* The next completion on cq by fi_cq_read (a CQ without a wait object:
 * reading is what progresses ofi_rxm), which must not be an error;
 * FAB_TIMEOUT_MS at most. */
struct fi_cq_data_entry fab_poll_comp(struct fid_cq *cq, const char *what);

/* Closes every object of s that is open, in reverse order, and frees
 * s->info; each close must succeed. */
void fab_close(struct fab_side *s);

/* CLOCK_MONOTONIC in ms. */
double fab_now_ms(void);

#endif
