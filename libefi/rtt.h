/* SPDX-License-Identifier: MIT */
/*
 * Round-trip time estimation for one path: the minimum, the smoothed RTT and
 * its variation (RFC 6298's estimator, on samples taken per packet from the
 * echoed transmit timestamp, so a retransmission is measured as itself and
 * Karn's ambiguity does not arise), and the retransmission timeout derived
 * from them.  Pure functions on a small struct: no clock, no locks.
 */
#ifndef EFI_LIBEFI_RTT_H
#define EFI_LIBEFI_RTT_H

#include <stdbool.h>
#include <stdint.h>

struct efi_rtt {
	uint64_t min_ns;	/* smallest sample seen (0: none yet) */
	uint64_t srtt_ns;	/* smoothed, gain 1/8 */
	uint64_t rttvar_ns;	/* mean deviation, gain 1/4 */
	uint64_t last_ns;	/* the latest sample */
	uint64_t samples;
};

/* Feeds one sample (ns).  A sample of 0 is ignored (no measurement). */
void efi_rtt_sample(struct efi_rtt *r, uint64_t sample_ns);

/* The retransmission timeout: srtt + 4 × rttvar, at least floor_ns and at
 * most cap_ns (cap_ns 0: no cap); before any sample, initial_ns (also capped
 * and floored). */
uint64_t efi_rtt_rto(const struct efi_rtt *r, uint64_t floor_ns, uint64_t cap_ns, uint64_t initial_ns);

/* The smoothed RTT, or fallback_ns before any sample. */
static inline uint64_t efi_rtt_srtt(const struct efi_rtt *r, uint64_t fallback_ns)
{
	return r->samples ? r->srtt_ns : fallback_ns;
}

/*
 * RTT estimates shared by the QPs of a context to one peer address, per
 * path index (issue 18).  A QP that has no sample of its own yet probes
 * for a tail loss after twice the default (the target delay, 4 ms), or
 * twice what the peer's other QPs measure when that is more (retx.c,
 * efi_retx_pto_ns): a burst over 10,000 new QPs made every QP whose answer
 * took longer than 4 ms, behind the others' in the peer's queue, send its
 * request again (10,888 duplicates for 10,000 messages).  Every sample of
 * every QP feeds its peer's entry, so the entry follows the queue as it
 * grows.
 *
 * Open addressing over EFI_RTT_PEER_SLOTS entries (43 KiB), allocated
 * with the context (never on the data path, which makes no system call:
 * tests/unit/test_efi_udp.c); the first peers met keep their place (an entry never moves or
 * goes while the context lives, so a QP may keep a pointer to its peer's,
 * checking the address); a peer that finds no room within
 * EFI_RTT_PEER_PROBES slots has no shared estimate and its QPs go by the
 * defaults, as before.  No clock, no lock: the caller holds the context's.
 */
#define EFI_RTT_PEER_SLOTS	128u	/* a power of two */
#define EFI_RTT_PEER_PROBES	8u
#define EFI_RTT_PEER_PATHS	8u

struct efi_rtt_peer {
	uint8_t addr[16];
	bool used;
	struct efi_rtt path[EFI_RTT_PEER_PATHS];
};

struct efi_rtt_peers {
	struct efi_rtt_peer *slot;	/* EFI_RTT_PEER_SLOTS, or NULL (no memory, or a test's context) */
};

/* Allocates the entries if not done yet (no memory: no sharing). */
void efi_rtt_peers_alloc(struct efi_rtt_peers *t);
/* addr's entry, or NULL; with create, made if there is room. */
struct efi_rtt_peer *efi_rtt_peer_find(struct efi_rtt_peers *t, const uint8_t addr[16], bool create);
void efi_rtt_peers_free(struct efi_rtt_peers *t);

#endif
