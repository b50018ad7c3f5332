/* SPDX-License-Identifier: MIT */
/*
 * The page in which a libefi context publishes its transport counters for
 * efid (and so `efictl status`) to read.  libefi makes it a sealed memfd
 * (it can neither shrink nor grow, so efid's read-only mapping can never
 * fault), writes it from its progress thread about every 100 ms under a
 * sequence count, and passes it once over the lease connection
 * (EFI_CTL_PUBLISH_COUNTERS).  Readers retry while the count is odd or
 * changed under them.
 *
 * Version 2 adds, after the totals, a table of the context's remote peers
 * and the health of each path to them (RTT, window, retransmissions,
 * suspicion).  efid reads it only from a page that says version ≥ 2, and
 * bounds every count it reads (the page is written by an untrusted process).
 *
 * Version 3 grows the memfd to EFI_COUNTERSHM_V3_SIZE and adds, from
 * EFI_CSHM_EXT_OFFSET on (the first page is laid out as in version 2), the
 * context's drops by reason and a table of its QPs with their own counters
 * (struct efi_countershm_ext).  efid takes a page of either size: 4096
 * bytes for versions 1 and 2, the larger one only for version 3 and on.
 *
 * Version 4 (same size as 3) adds, after the QP table, the stall detector:
 * for each listed QP the send work it has outstanding and how long it has
 * gone without progress with that work outstanding, and how many of the
 * context's QPs (listed or not) are stalled.  A reader of version 3 never
 * looks there; efid reads it only from a page that says version ≥ 4.
 */
#ifndef EFI_COUNTERSHM_H
#define EFI_COUNTERSHM_H

#include <assert.h>
#include <stdint.h>

#define EFI_COUNTERSHM_MAGIC 0x43494645u /* "EFIC" */
#define EFI_COUNTERSHM_VERSION 4u
#define EFI_COUNTERSHM_SIZE 4096u         /* versions 1 and 2 */
#define EFI_COUNTERSHM_V3_SIZE 16384u     /* version 3: the v2 page + the extension */
#define EFI_CSHM_EXT_OFFSET 4096u

/* The published values, in this order (also the order of the 8-byte
 * little-endian words of EFI_A_COUNTERS in LIST replies). */
enum efi_countershm_index {
	EFI_CSHM_TX_PACKETS,
	EFI_CSHM_TX_BYTES,
	EFI_CSHM_RX_PACKETS,
	EFI_CSHM_RX_BYTES,
	EFI_CSHM_RETRANSMISSIONS,
	EFI_CSHM_TIMEOUTS,
	EFI_CSHM_DUPLICATES,
	EFI_CSHM_RNR_NAKS_SENT,
	EFI_CSHM_RNR_NAKS_RECEIVED,
	EFI_CSHM_SEQ_NAKS_SENT,
	EFI_CSHM_SEQ_NAKS_RECEIVED,
	EFI_CSHM_DROPS,
	EFI_CSHM_COUNT,
};

/* Version 2: the peer table.  Paths per peer: EFI_MAX_PATHS of libefi
 * (path ids are one byte on the wire, libefi uses at most 8).  Peers: as
 * many as fit in the page (see the assertion below). */
#define EFI_CSHM_MAX_PATHS 8u
#define EFI_CSHM_MAX_PEERS 14u

enum efi_cshm_path_state {
	EFI_CSHM_PATH_ACTIVE = 0,
	EFI_CSHM_PATH_SUSPECT = 1, /* silent too long: avoided and probed */
};

/* One path index of one peer, summed over the context's QPs to that peer
 * (libefi/peer_table.h says how each field is aggregated). */
struct efi_countershm_path {
	uint32_t state;           /* enum efi_cshm_path_state */
	uint32_t rtt_min_us;      /* smallest RTT of any QP (0: no sample yet) */
	uint32_t srtt_us;         /* mean of the QPs' smoothed RTTs (0: no sample yet) */
	uint32_t cwnd_milli;      /* sum of the QPs' windows, thousandths of a packet */
	uint64_t retransmissions; /* packets first sent on this path sent again */
	uint32_t suspected;       /* times it went silent and was avoided */
	uint32_t restored;        /* times it answered again and was re-admitted */
};

/* One remote peer (an address the context has connected QPs to). */
struct efi_countershm_peer {
	uint64_t addr[2];  /* the peer's IPv6 (or IPv4-mapped) address: its 16 bytes as in memory */
	uint32_t qps;      /* connected QPs (RTS or SQD) to it */
	uint32_t npaths;   /* entries of path[] in use (the most paths any of those QPs has) */
	struct efi_countershm_path path[EFI_CSHM_MAX_PATHS];
};

struct efi_countershm {
	uint32_t magic;
	uint32_t version;
	uint32_t seq;     /* odd while being written; use __atomic builtins */
	uint32_t pid;     /* the publishing process, as it sees itself */
	uint64_t value[EFI_CSHM_COUNT];
	/* version 2 */
	uint32_t npeers;        /* entries of peer[] in use */
	uint32_t peers_omitted; /* further peers that did not fit */
	struct efi_countershm_peer peer[EFI_CSHM_MAX_PEERS];
};

static_assert(sizeof(struct efi_countershm) <= EFI_COUNTERSHM_SIZE,
	      "the counters page is one page: fewer peers must go in it");
static_assert(sizeof(struct efi_countershm_path) == 32, "compact path entries");

/* ---- version 3 ------------------------------------------------------- */

/* Drop reasons: room for libefi's enum efi_drop_reason (EFI_DROP_REASON_MAX). */
#define EFI_CSHM_DROP_REASONS 16u
/* QPs described per context: a context with more counts the rest in
 * qps_omitted (its totals still include them). */
#define EFI_CSHM_MAX_QPS 64u

/* One QP's values, in this order (also the 8-byte little-endian words of
 * EFI_A_QP_VALUES in LIST replies). */
enum efi_cshm_qp_value {
	EFI_CSHM_QP_TX_PACKETS,
	EFI_CSHM_QP_TX_BYTES,
	EFI_CSHM_QP_RX_PACKETS,
	EFI_CSHM_QP_RX_BYTES,
	EFI_CSHM_QP_RETRANSMISSIONS,
	EFI_CSHM_QP_TIMEOUTS,
	EFI_CSHM_QP_DUPLICATES,
	EFI_CSHM_QP_DROPS,
	EFI_CSHM_QP_VALUES,
};

/* JSON names, indexed by enum efi_cshm_qp_value. */
#define EFI_CSHM_QP_VALUE_NAMES                                                          \
	{ "tx_packets", "tx_bytes", "rx_packets", "rx_bytes", "retransmissions", "timeouts", \
	  "duplicates", "drops" }

/* Names of the drop reasons, indexed by libefi's enum efi_drop_reason (as
 * efi_drop_reason_str says them); readers show others by number. */
#define EFI_CSHM_DROP_REASON_NAMES                                                       \
	{ "malformed", "bad_version", "unknown_qp", "bad_source", "qp_state",              \
	  "out_of_window", "injected", "bad_key", "no_receive", "qp_type" }
#define EFI_CSHM_DROP_REASONS_NAMED 10u

struct efi_countershm_qp {
	uint32_t qpn;       /* 24 bits */
	uint32_t state;     /* libefi's enum efi_qp_state */
	uint64_t peer[2];   /* the connected peer's address, 16 bytes as in memory (zero: none) */
	uint64_t value[EFI_CSHM_QP_VALUES];
};

/* Version 4: a QP counts as stalled once it has had send work outstanding
 * (WQEs posted and not completed) and made no progress (no WQE completed,
 * no request acknowledged) for this long.  A healthy QP, even a loaded one,
 * progresses within milliseconds; one waiting on a peer that took nothing
 * for seconds is what a hung job looks like. */
#define EFI_CSHM_STALL_MS 2000u

/* Version 4 work flags. */
#define EFI_CSHM_QPW_RNR 1u /* while stalled, the peer answered RNR: it has no receive posted */

/* Version 4: what the QP of the same index in qp[] is waiting for. */
struct efi_countershm_qp_work {
	uint32_t outstanding; /* send-queue WQEs posted and not completed */
	uint32_t stalled_ms;  /* without progress with work outstanding (0: none, or progressing) */
	uint32_t flags;       /* EFI_CSHM_QPW_* */
	uint32_t reserved;
};

struct efi_countershm_ext {
	uint64_t drop_reasons[EFI_CSHM_DROP_REASONS]; /* the context's, by enum efi_drop_reason */
	uint32_t nqps;        /* entries of qp[] in use */
	uint32_t qps_omitted; /* further QPs that did not fit */
	struct efi_countershm_qp qp[EFI_CSHM_MAX_QPS];
	/* version 4 */
	uint32_t stalled_qps; /* QPs of the context, listed or not, stalled ≥ EFI_CSHM_STALL_MS */
	uint32_t reserved4;
	struct efi_countershm_qp_work work[EFI_CSHM_MAX_QPS];
};

static_assert(sizeof(struct efi_countershm) <= EFI_CSHM_EXT_OFFSET, "v2 part in the first page");
static_assert(EFI_CSHM_EXT_OFFSET + sizeof(struct efi_countershm_ext) <= EFI_COUNTERSHM_V3_SIZE,
	      "the version 3 extension fits its pages");

/* The extension of a version 3 page (mapped EFI_COUNTERSHM_V3_SIZE bytes). */
static inline struct efi_countershm_ext *efi_cshm_ext(const volatile void *page)
{
	return (struct efi_countershm_ext *)((uintptr_t)page + EFI_CSHM_EXT_OFFSET);
}

/* The 8-byte little-endian words of EFI_A_PATH_VALUES (LIST replies), in
 * this order. */
enum efi_cshm_path_value {
	EFI_CSHM_PATH_RTT_MIN_US,
	EFI_CSHM_PATH_SRTT_US,
	EFI_CSHM_PATH_CWND_MILLI,
	EFI_CSHM_PATH_RETRANSMISSIONS,
	EFI_CSHM_PATH_SUSPECTED,
	EFI_CSHM_PATH_RESTORED,
	EFI_CSHM_PATH_VALUES,
};

/* JSON names, indexed by enum efi_cshm_path_value. */
#define EFI_CSHM_PATH_VALUE_NAMES                                                       \
	{ "rtt_min_us", "srtt_us", "window_milli", "retransmissions", "suspected", "restored" }

/* Copying a peer entry into or out of the shared page while the other side
 * may access it: field by field with relaxed atomics (the sequence count
 * orders them), never a plain memcpy of shared memory. */
static inline void efi_cshm_peer_store(struct efi_countershm_peer *dst,
				       const struct efi_countershm_peer *src)
{
	__atomic_store_n(&dst->addr[0], src->addr[0], __ATOMIC_RELAXED);
	__atomic_store_n(&dst->addr[1], src->addr[1], __ATOMIC_RELAXED);
	__atomic_store_n(&dst->qps, src->qps, __ATOMIC_RELAXED);
	__atomic_store_n(&dst->npaths, src->npaths, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < EFI_CSHM_MAX_PATHS; i++) {
		struct efi_countershm_path *d = &dst->path[i];
		const struct efi_countershm_path *s = &src->path[i];
		__atomic_store_n(&d->state, s->state, __ATOMIC_RELAXED);
		__atomic_store_n(&d->rtt_min_us, s->rtt_min_us, __ATOMIC_RELAXED);
		__atomic_store_n(&d->srtt_us, s->srtt_us, __ATOMIC_RELAXED);
		__atomic_store_n(&d->cwnd_milli, s->cwnd_milli, __ATOMIC_RELAXED);
		__atomic_store_n(&d->retransmissions, s->retransmissions, __ATOMIC_RELAXED);
		__atomic_store_n(&d->suspected, s->suspected, __ATOMIC_RELAXED);
		__atomic_store_n(&d->restored, s->restored, __ATOMIC_RELAXED);
	}
}

static inline void efi_cshm_peer_load(struct efi_countershm_peer *dst,
				      const struct efi_countershm_peer *src)
{
	dst->addr[0] = __atomic_load_n(&src->addr[0], __ATOMIC_RELAXED);
	dst->addr[1] = __atomic_load_n(&src->addr[1], __ATOMIC_RELAXED);
	dst->qps = __atomic_load_n(&src->qps, __ATOMIC_RELAXED);
	dst->npaths = __atomic_load_n(&src->npaths, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < EFI_CSHM_MAX_PATHS; i++) {
		struct efi_countershm_path *d = &dst->path[i];
		const struct efi_countershm_path *s = &src->path[i];
		d->state = __atomic_load_n(&s->state, __ATOMIC_RELAXED);
		d->rtt_min_us = __atomic_load_n(&s->rtt_min_us, __ATOMIC_RELAXED);
		d->srtt_us = __atomic_load_n(&s->srtt_us, __ATOMIC_RELAXED);
		d->cwnd_milli = __atomic_load_n(&s->cwnd_milli, __ATOMIC_RELAXED);
		d->retransmissions = __atomic_load_n(&s->retransmissions, __ATOMIC_RELAXED);
		d->suspected = __atomic_load_n(&s->suspected, __ATOMIC_RELAXED);
		d->restored = __atomic_load_n(&s->restored, __ATOMIC_RELAXED);
	}
}

/* JSON/human names, indexed by enum efi_countershm_index. */
#define EFI_COUNTERSHM_NAMES                                                             \
	{ "tx_packets", "tx_bytes", "rx_packets", "rx_bytes", "retransmissions", "timeouts", \
	  "duplicates", "rnr_naks_sent", "rnr_naks_received", "seq_naks_sent",             \
	  "seq_naks_received", "drops" }

#endif
