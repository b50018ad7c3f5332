/* SPDX-License-Identifier: MIT */
/*
 * Delay-based congestion control in the spirit of Swift (Kumar et al.,
 * SIGCOMM 2020), for one path: the RTT of each acknowledged packet (from its
 * echoed transmit timestamp) is compared with a target delay; below it the
 * window grows additively, above it the window shrinks multiplicatively in
 * proportion to the excess, at most once per RTT.  The decrease looks at
 * the smallest delay of the last RTT, so only a queue that lasts a whole
 * RTT counts, not one late sample (a software endpoint's scheduling jitter
 * would otherwise keep the window small on an idle network).  The window is in packets
 * and may fall below one when min_cwnd allows it: the sender then paces,
 * one packet every RTT / cwnd.  Loss is a backstop, not the signal: random loss (a lossy
 * Ethernet) must not collapse the window, so the window shrinks for loss
 * only when more than loss_thresh of an RTT's packets were lost, and on a
 * retransmission timeout.
 *
 * Pure functions: the caller passes the clock and the RTT.  Parameters come
 * from efid.conf ([CongestionControl], via OPEN_DEVICE) or EFI_CC for
 * experiments.
 */
#ifndef EFI_LIBEFI_CC_H
#define EFI_LIBEFI_CC_H

#include <stdint.h>

struct efi_cc_params {
	uint64_t target_delay_ns;	/* base target RTT */
	double ai;			/* additive increase, packets per RTT */
	double beta;			/* multiplicative decrease factor on the excess delay */
	double max_mdf;			/* largest decrease at once (fraction) */
	double loss_mdf;		/* decrease when an RTT's loss exceeds loss_thresh */
	double loss_thresh;		/* fraction of an RTT's packets lost that counts as congestion */
	double min_cwnd;		/* packets; below 1 the sender paces (default 1: off) */
	double max_cwnd;		/* packets */
	double init_cwnd;		/* packets */
	uint64_t min_rto_ns;		/* floor of the adaptive retransmission timeout */
	uint64_t tlp_min_ns;		/* floor of the tail-loss probe timeout (2 × srtt) */
	uint64_t reo_min_ns;		/* floor of the reordering window (min RTT / 4) */
	unsigned suspect_rtts;		/* a silent path is suspected after this many RTTs … */
	uint64_t suspect_min_ns;	/* … but not before this … */
	uint64_t suspect_max_ns;	/* … and at the latest after this */
	uint64_t probe_interval_ns;	/* a suspected path gets a probe this often */
};

/* The documented defaults (libefi/README.md, "Congestion control"). */
void efi_cc_params_default(struct efi_cc_params *p);

/* Overrides fields from a spec "key=value,key=value" (keys as in the
 * struct, times in µs with an _us suffix: target_us, min_rto_us, tlp_min_us,
 * reo_min_us, suspect_min_us, suspect_max_us, probe_interval_us).  Returns 0,
 * or EINVAL (unknown key, bad number, inconsistent values) leaving *p
 * unchanged. */
int efi_cc_params_parse(struct efi_cc_params *p, const char *spec);

/* Sets one field by its spec key without checking it against the others
 * (efid checks efid.conf key by key, then the whole with
 * efi_cc_params_parse).  Returns 0, or EINVAL (unknown key, bad number). */
int efi_cc_param_set(struct efi_cc_params *p, const char *key, const char *value);

struct efi_cc {
	double cwnd;			/* packets */
	uint64_t last_decrease_ns;
	uint64_t win_start_ns;		/* the RTT-long window of delay samples */
	uint64_t win_min_ns;		/* its smallest sample (0: none yet) */
	/* loss accounting over the current RTT-long epoch */
	uint64_t epoch_start_ns;
	uint32_t epoch_acked, epoch_lost;
	uint64_t decreases;		/* for counters and tests */
};

void efi_cc_init(struct efi_cc *cc, const struct efi_cc_params *p);

/* acked packets were acknowledged with an RTT sample of delay_ns (0: no
 * sample, only the loss epoch advances); srtt_ns paces the decreases. */
void efi_cc_on_ack(struct efi_cc *cc, const struct efi_cc_params *p, uint64_t delay_ns, uint32_t acked,
		   uint64_t srtt_ns, uint64_t now);

/* lost packets were declared lost (not a timeout). */
void efi_cc_on_loss(struct efi_cc *cc, const struct efi_cc_params *p, uint32_t lost, uint64_t srtt_ns,
		    uint64_t now);

/* The retransmission timer fired: the largest decrease. */
void efi_cc_on_timeout(struct efi_cc *cc, const struct efi_cc_params *p, uint64_t now);

/* Time between two packets when the window is below one packet (0 at or
 * above one: the window alone limits). */
uint64_t efi_cc_pacing_gap_ns(const struct efi_cc *cc, uint64_t srtt_ns);

#endif
