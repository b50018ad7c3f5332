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

#endif
