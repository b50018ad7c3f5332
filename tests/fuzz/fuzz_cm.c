/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the connection manager's datagram decoder
 * (common/cmwire.c): what efid runs on every datagram reaching its CM port
 * from the network.  Each input is one datagram.  A datagram that decodes is
 * re-encoded; that encoding must decode again and encode to the same bytes
 * (abort otherwise), so the fuzzer checks the codec's consistency as well as
 * its memory safety.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmwire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cm_wire_msg m, m2;
	uint8_t a[CM_WIRE_MAX], b[CM_WIRE_MAX];

	if (cm_wire_decode(data, size, &m) != 0)
		return 0;
	int n = cm_wire_encode(&m, a, sizeof(a));
	if (n <= 0)
		abort(); /* what decodes must encode */
	if (cm_wire_decode(a, (size_t)n, &m2) != 0)
		abort();
	int n2 = cm_wire_encode(&m2, b, sizeof(b));
	if (n2 != n || memcmp(a, b, (size_t)n) != 0)
		abort();
	return 0;
}
