/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for efictl's reply parsers (model.c): the input is a
 * reply payload (an attribute stream) as efid would send after the frame
 * header.  Whatever parses must also print, as JSON and for humans, without
 * reading outside the input.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efictl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	struct ctl_reply rep;
	struct ec_listing l;
	struct ec_iface iface;

	if (!sink)
		sink = fopen("/dev/null", "w");
	if (!sink)
		abort();

	/* A copy of exactly size bytes, so ASan sees any read past the end. */
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);

	memset(&rep, 0, sizeof(rep));
	rep.payload = copy;
	rep.payload_len = size;
	if (ec_listing_parse(&rep, &l) == 0) {
		if (ec_listing_print_json(sink, &l))
			abort();
		for (size_t i = 0; i < l.nifaces; i++)
			ec_iface_print(sink, &l.ifaces[i], 2);
		ec_listing_free(&l);
	}

	/* The same bytes as the inside of one EFI_A_IFACE nest (an ATTACH reply). */
	if (size <= UINT16_MAX) {
		struct ctl_attr nest = { .type = EFI_A_IFACE, .len = (uint16_t)size, .data = copy };
		if (ec_iface_parse(&nest, &iface) == 0) {
			struct json j;
			json_init(&j, sink);
			ec_iface_json(&j, &iface);
			if (json_finish(&j))
				abort();
			ec_iface_print(sink, &iface, 0);
			ec_iface_free(&iface);
		}
	}
	free(copy);
	return 0;
}
