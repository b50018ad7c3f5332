/* SPDX-License-Identifier: MIT */
/*
 * libefi's limits and the transport's tunable constants, each with the
 * reason for its value (the objects that use them are in efi_int.h).
 * Not installed.
 */
#ifndef EFI_LIBEFI_LIMITS_H
#define EFI_LIBEFI_LIMITS_H

#include <stdint.h>

#include "packet.h"

#define EFI_QPN_PER_BLOCK	4096u
/* QPN blocks one context may hold (efid's LEASE_MAX_PER_CLIENT slots):
 * 65,536 QPs.  Block 0 comes with the context; qpn_blocks.c asks efid for
 * the others when the ones held are full. */
#define EFI_MAX_BLOCKS		16u
/* $EFI_ACK_DELAY_US: default and largest (below the 0.5 ms RTO floor). */
#define EFI_ACK_DELAY_DEFAULT_US	20u
#define EFI_ACK_DELAY_MAX_US		200u
/* Lane L of the context holding QPN block S is bound to UDP port
 * port_base + L * EFI_LANE_STRIDE + S (efid's [Transport] Lanes). */
#define EFI_LANE_STRIDE		4096u
/* Packets a request stream sends on one path before it picks again: long
 * enough for GSO runs and one sendmmsg per burst, short enough to spread a
 * window over the paths. */
#define EFI_PATH_BURST		40u

/* The UDP port of lane `lane` of the context holding qpn (0 when the
 * fabric-wide PortBase and lane leave no such port). */
static inline uint32_t efi_lane_port(uint32_t port_base, unsigned lane, uint32_t qpn)
{
	uint32_t port = port_base + lane * EFI_LANE_STRIDE + (qpn >> 12);
	return port <= 65535 ? port : 0;
}
#define EFI_MAX_QP_WR		16384u
#define EFI_MAX_SGE		32u
#define EFI_MAX_INLINE		1024u
#define EFI_MAX_CQE		(1u << 20)
#define EFI_MAX_RD_ATOMIC	16u
#define EFI_MAX_MR_SIZE		(UINT64_C(1) << 40)
/* PSNs between snd_una and snd_nxt at most: the span a responder's reorder
 * buffer covers, EFI_SEND_WINDOW_WIDE once its ACKs said it holds that many
 * (EFI_AETH_CREDITS_WIDE), else what a SACK block describes (an older
 * responder's whole buffer).  The congestion window limits the packets
 * actually in flight within it.  256 held the send rate of one QP to
 * 256 × 1424 B per round trip: with four lanes' windows summing to over
 * 600 packets, this was the limit write_bw ran into. */
#define EFI_SEND_WINDOW		EFI_SACK_MAX_BITS
#define EFI_SEND_WINDOW_WIDE	EFI_REORDER_WIDE
/* Response packets one Read request asks for at most (a longer Read is
 * split into several requests). */
#define EFI_READ_CHUNK		64u
/* Read responses placed ahead of the one expected: a bitmap of this many
 * PSNs from snd_una (read_resp.c), the whole send window and a chunk
 * beyond it, so any response asked for can be placed. */
#define EFI_RD_EARLY		2048u
/* A Read response this far ahead of the one expected says that one was
 * lost: it is asked for again. */
#define EFI_RD_GAP_RESEND	16u
/* The same from a response on another path than the gap's request: lanes
 * reorder by a receive batch or so, this is four of them. */
#define EFI_RD_GAP_OTHER_PATH	256u
/* Per-PSN send records kept (a power of two ≥ EFI_SEND_WINDOW_WIDE). */
#define EFI_TXREC_SLOTS		2048u
/* Entries of a responder's output queue (ACKs, NAKs, Read responses, atomic
 * ACKs waiting to be sent, in PSN order). */
#define EFI_RESPQ_SLOTS		64u
#define EFI_ATOMIC_CACHE	EFI_MAX_RD_ATOMIC
/* Datagrams per sendmmsg/recvmmsg batch. */
#define EFI_BATCH		64u
/* A send buffer holds one request packet: headers and, for a packet that
 * spans SGEs, its payload of up to EFI_MAX_SEG bytes (EFI_BATCH of them per
 * context, none per QP). */
#define EFI_PKTBUF_SIZE		(EFI_MAX_SEG + 256u)
/* A receive buffer holds the largest datagram a peer sends (its segment is
 * at most EFI_MAX_SEG as well). */
#define EFI_RXBUF_SIZE		9216u
_Static_assert(EFI_RXBUF_SIZE >= EFI_PKTBUF_SIZE, "a peer's largest packet must fit a receive buffer");
/* The requester asks for an ACK at least every this many packets. */
#define EFI_ACKREQ_EVERY	16u
/* Floor of the verbs timeout (verbs' timeout can be 4 µs). */
#define EFI_MIN_RTO_NS		(500ull * 1000)
/* Retransmission timeout without a verbs timeout (timeout 0 = infinite),
 * and the most doublings of the adaptive one. */
#define EFI_MAX_RTO_NS		(100ull * 1000 * 1000)
#define EFI_MAX_BACKOFF		10u
/* Timeouts without progress while the peer keeps answering, before the QP
 * gives up anyway (RETRY_EXC_ERR). */
#define EFI_MAX_STALLS		1000u
/* The least silence that fails a QP, whatever its timeout × (retry_cnt + 1).
 * On hardware the responder is a NIC; here it is the peer's process, which a
 * loaded host deschedules: 805 ms seen on these 2-core machines, and 1–9 s
 * in the issue 20 training soak at load 10–20, where a 2 s floor failed 4
 * of 11 runs with both ranks alive.  A VM's live migration pauses it for
 * seconds too.  10 s is of the order training stacks choose on real RDMA
 * (NCCL's IB timeout 18 × retry 7: 8.6 s).  It costs little: a peer whose
 * process died is reported by the connection manager within milliseconds
 * (its lease), not by this clock, which is left for a network or host that
 * stopped. */
#define EFI_MIN_DEAD_NS		(10000ull * 1000 * 1000)
/* $EFI_MIN_DEAD_MS, which replaces it for a context, lies within these. */
#define EFI_MIN_DEAD_MS_MIN	100u
#define EFI_MIN_DEAD_MS_MAX	600000u
/* A gap this long between two runs of a busy QP's timers is this process not
 * running (descheduled, stopped): nobody listened, so it is not the peer's
 * silence.  The transport runs far more often than this while work is
 * outstanding: the progress thread's longest nap is 50 ms (progress.c). */
#define EFI_LOCAL_STALL_NS	(100ull * 1000 * 1000)

#endif
