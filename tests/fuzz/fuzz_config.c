/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the text parsers: the same bytes are fed to the
 * efid.conf parser and to the interface-file parser (both sit on ini.c).
 * A parse that succeeds must produce values the validators accept, and an
 * interface spec must survive a write/parse round trip unchanged.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efid_config.h"
#include "ifacespec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	struct efid_config c;
	struct efi_iface_spec s, back;

	efid_config_defaults(&c);
	if (efid_config_parse(&c, "fuzz.conf", (const char *)data, size, err, sizeof(err)) == 0) {
		if (memchr(c.group, '\0', sizeof(c.group)) == NULL ||
		    memchr(c.iface_dir, '\0', sizeof(c.iface_dir)) == NULL ||
		    memchr(c.default_uplink, '\0', sizeof(c.default_uplink)) == NULL ||
		    (c.default_mtu != 0 &&
		     (c.default_mtu < EFI_MTU_MIN || c.default_mtu > EFI_MTU_MAX)))
			abort();
	}

	if (efi_iface_text_parse("fuzz.iface", (const char *)data, size, &s, err, sizeof(err)) ==
	    0) {
		if (efi_iface_spec_validate(&s, err, sizeof(err)) != 0)
			abort();
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		if (!f)
			return 0;
		if (efi_iface_spec_write(&s, f) != 0)
			abort();
		fclose(f);
		if (efi_iface_text_parse("roundtrip", buf, len, &back, err, sizeof(err)) != 0 ||
		    !efi_iface_spec_equal(&s, &back))
			abort();
		free(buf);
	}
	return 0;
}
