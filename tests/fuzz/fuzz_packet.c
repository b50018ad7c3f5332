/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the wire-format parser (libefi/packet.c): the code
 * libefi runs on every datagram that reaches one of its sockets, from anyone.
 *
 * Each input is one datagram.  Beyond memory safety the target checks the
 * parser's promises, aborting when one is broken: the result is 0, -EBADMSG
 * or -EPROTONOSUPPORT; an accepted packet's payload lies inside the input
 * right after its headers; every 24-bit field is within 24 bits; and an
 * accepted header is canonical — building it again from the decoded form
 * gives the very same bytes (so no two byte strings mean the same packet,
 * and the builder can write everything the parser accepts).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libefi/packet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t again[EFI_BASE_HDR_LEN + EFI_RETH_LEN + EFI_ATOMIC_ETH_LEN + EFI_IMMDT_LEN +
		      EFI_AETH_LEN + EFI_TSE_LEN + EFI_SACK_LEN + EFI_ATOMIC_ACK_ETH_LEN];
	struct efi_pkt pkt;
	size_t n;
	int rc;

	/* A copy of exactly size bytes, so that ASan sees any read past the end
	 * even when libFuzzer's own buffer is larger. */
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	rc = efi_pkt_parse(buf, size, &pkt);
	if (rc != 0 && rc != -EBADMSG && rc != -EPROTONOSUPPORT)
		abort();
	if (rc == 0) {
		if (pkt.payload != buf + pkt.hdr_len || pkt.hdr_len + pkt.payload_len != size)
			abort();
		if (pkt.hdr_len != efi_pkt_hdr_len(pkt.opcode, pkt.flags))
			abort();
		if (pkt.dest_qpn > EFI_QPN_MASK || pkt.src_qpn > EFI_QPN_MASK ||
		    pkt.psn > EFI_PSN_MASK || pkt.aeth.msn > EFI_MSN_MASK)
			abort();
		n = efi_pkt_build_hdr(again, sizeof(again), &pkt);
		if (n != pkt.hdr_len || memcmp(again, buf, n) != 0)
			abort();
	}
	free(buf);

	/* The PSN helpers on whatever the input offers: a diff always lies in
	 * −(2^23 − 1) … 2^23 and adding it back gives the PSN again. */
	if (size >= 8) {
		uint32_t a = (uint32_t)data[0] << 16 | (uint32_t)data[1] << 8 | data[2];
		uint32_t b = (uint32_t)data[4] << 16 | (uint32_t)data[5] << 8 | data[6];
		int32_t d = efi_psn_diff(a, b);
		if (d <= -(1 << 23) || d > (1 << 23))
			abort();
		if (efi_psn_add(b, (uint32_t)d) != a)
			abort();
		if (efi_psn_before(a, b) != (d < 0))
			abort();
	}
	return 0;
}
