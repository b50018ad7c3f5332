/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "gid.h"

static const uint8_t v4mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

int efi_gid_from_addr(int family, const void *addr, union efi_gid *gid)
{
	switch (family) {
	case AF_INET:
		memcpy(gid->raw, v4mapped_prefix, 12);
		memcpy(gid->raw + 12, addr, 4);
		return 0;
	case AF_INET6:
		memcpy(gid->raw, addr, 16);
		return 0;
	default:
		return -EAFNOSUPPORT;
	}
}

bool efi_gid_is_v4mapped(const union efi_gid *gid)
{
	return memcmp(gid->raw, v4mapped_prefix, 12) == 0;
}

const char *efi_gid_format(const union efi_gid *gid, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid->raw, buf, (socklen_t)len)) {
		if (len)
			buf[0] = '\0';
	}
	return buf;
}

int efi_gid_parse(const char *s, union efi_gid *gid)
{
	struct in_addr v4;
	if (inet_pton(AF_INET, s, &v4) == 1)
		return efi_gid_from_addr(AF_INET, &v4, gid);
	if (inet_pton(AF_INET6, s, gid->raw) == 1)
		return 0;
	return -EINVAL;
}
