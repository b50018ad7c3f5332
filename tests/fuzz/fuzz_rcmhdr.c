/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for libefi-rdmacm's private-data header (rdmacm/hdr.c):
 * what the library parses from a peer's REQ or REP, which any program of
 * another instance can fill with efi_connect or efi_accept.  Each input is
 * one message's private data (efi_cm delivers at most
 * EFI_CM_PRIVATE_DATA_MAX bytes; longer inputs check that the parser
 * refuses them and changes nothing).  Beyond memory safety it checks:
 * the consumer's data reported is what followed the header (or all of it),
 * never longer than what came; and a header that parses packs back to the
 * same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm/rdmacm_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rdma_conn_param c, before;
	uint8_t pdata[EFI_CM_PRIVATE_DATA_MAX], again[EFI_CM_PRIVATE_DATA_MAX];
	uint16_t port = 0xffff;
	size_t skip, n;
	int r;

	memset(&c, 0x5a, sizeof(c));
	before = c;
	r = rcm_hdr_unpack(data, size, &c, pdata, &port);
	if (size > EFI_CM_PRIVATE_DATA_MAX) {
		if (r != -1 || memcmp(&c, &before, sizeof(c)) != 0 || port != 0xffff)
			abort();	/* refused, and nothing changed */
		return 0;
	}
	if (r != 0 && r != 1)
		abort();
	skip = r == 1 ? sizeof(struct rcm_hdr) : 0;
	if (r == 0 && port != 0xffff)
		abort();	/* raw data names no port */
	if (c.private_data_len != size - skip)
		abort();
	if (c.private_data_len == 0) {
		if (c.private_data != NULL)
			abort();
	} else if (c.private_data != pdata ||
		   memcmp(pdata, data + skip, c.private_data_len) != 0) {
		abort();
	}
	if (r == 1) {
		/* what parsed packs back to the same bytes (the reserved
		 * byte aside: a peer may send anything there) */
		n = rcm_hdr_pack(again, port, &c);
		if (n != size || memcmp(again, data, 7) != 0 ||
		    memcmp(again + sizeof(struct rcm_hdr), data + skip, size - skip) != 0)
			abort();
	}
	return 0;
}
