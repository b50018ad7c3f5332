/* SPDX-License-Identifier: MIT */
/*
 * The peer table of the counters page (common/countershm.h, version 2):
 * the context's connected QPs grouped by remote address, with the health
 * of each path index summed over the QPs to that peer.  This is what
 * `efictl status` shows as a peer's path health.
 *
 * How one path index i of a peer is aggregated over the peer's QPs that
 * have a path i:
 *  - retransmissions, suspected, restored: summed;
 *  - rtt_min_us: the smallest of the QPs' minimum RTTs;
 *  - srtt_us: the mean of the QPs' smoothed RTTs (of those with a sample);
 *    RTTs are rounded up to whole µs, so a measured RTT never shows as 0,
 *    which means "no sample yet";
 *  - cwnd_milli: the sum of the windows (what the peer may have in flight
 *    on that path), saturating;
 *  - state: suspect when the path is suspect on any QP with work
 *    outstanding; when none of the peer's QPs has work, suspect when it is
 *    suspect on any QP.  A busy QP's view is fresh (it keeps probing), an
 *    idle QP keeps its last verdict until it sends again, so it only
 *    speaks when nothing fresher exists.
 *
 * Peers beyond EFI_CSHM_MAX_PEERS are counted (distinct addresses) but not
 * described; the first ones met keep their place.
 *
 * Pure: no clock, no locks; the caller walks its QPs (under ctx->lock) and
 * feeds them one by one.  Unit-tested in tests/unit/test_peer_table.c.
 */
#ifndef EFI_LIBEFI_PEER_TABLE_H
#define EFI_LIBEFI_PEER_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "countershm.h"
#include "path.h"

/* Running sums of one path index of one peer. */
struct efi_peer_path_acc {
	uint64_t rtt_min_ns;  /* 0: no sample yet */
	uint64_t srtt_sum_ns;
	uint32_t srtt_n;
	uint64_t cwnd_milli;
	uint64_t retransmissions, suspected, restored;
	bool suspect_busy, suspect_any;
};

struct efi_peer_acc {
	uint8_t addr[16];
	uint32_t qps, busy_qps;
	unsigned npaths;
	struct efi_peer_path_acc path[EFI_CSHM_MAX_PATHS];
};

struct efi_peer_table {
	struct efi_peer_acc peer[EFI_CSHM_MAX_PEERS];
	unsigned npeers;
	/* Distinct addresses that did not fit: an open-addressing set made on
	 * the first overflow, sized for qp_hint QPs. */
	uint8_t (*omit_set)[16];
	size_t omit_cap, omit_used, qp_hint;
	uint32_t omitted;
};

/* Starts an empty table for at most about qp_hint QPs (the set of omitted
 * peers is sized from it; more QPs still work). */
void efi_peer_table_init(struct efi_peer_table *t, size_t qp_hint);

/* One connected QP to addr (16 bytes, IPv6 or IPv4-mapped) with its paths;
 * busy: it has work outstanding (unacknowledged or queued).  Paths past
 * EFI_CSHM_MAX_PATHS are not shown. */
void efi_peer_table_add(struct efi_peer_table *t, const uint8_t addr[16],
			const struct efi_path *paths, unsigned npaths, bool busy);

/* The page's entries: fills out[0..*npeers) and *omitted. */
void efi_peer_table_result(const struct efi_peer_table *t,
			   struct efi_countershm_peer out[EFI_CSHM_MAX_PEERS], uint32_t *npeers,
			   uint32_t *omitted);

/* Frees what init and add allocated. */
void efi_peer_table_fini(struct efi_peer_table *t);

#endif
