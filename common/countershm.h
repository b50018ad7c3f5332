/* SPDX-License-Identifier: MIT */
/*
 * The page in which a libefi context publishes its transport counters for
 * efid (and so `efictl status`) to read.  libefi makes it a sealed memfd
 * (it can neither shrink nor grow, so efid's read-only mapping can never
 * fault), writes it from its progress thread about every 100 ms under a
 * sequence count, and passes it once over the lease connection
 * (EFI_CTL_PUBLISH_COUNTERS).  Readers retry while the count is odd or
 * changed under them.
 */
#ifndef EFI_COUNTERSHM_H
#define EFI_COUNTERSHM_H

#include <stdint.h>

#define EFI_COUNTERSHM_MAGIC 0x43494645u /* "EFIC" */
#define EFI_COUNTERSHM_VERSION 1u
#define EFI_COUNTERSHM_SIZE 4096u

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

struct efi_countershm {
	uint32_t magic;
	uint32_t version;
	uint32_t seq;     /* odd while being written; use __atomic builtins */
	uint32_t pid;     /* the publishing process, as it sees itself */
	uint64_t value[EFI_CSHM_COUNT];
};

/* JSON/human names, indexed by enum efi_countershm_index. */
#define EFI_COUNTERSHM_NAMES                                                             \
	{ "tx_packets", "tx_bytes", "rx_packets", "rx_bytes", "retransmissions", "timeouts", \
	  "duplicates", "rnr_naks_sent", "rnr_naks_received", "seq_naks_sent",             \
	  "seq_naks_received", "drops" }

#endif
