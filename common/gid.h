/* SPDX-License-Identifier: MIT */
/*
 * GIDs, as in RoCEv2: 128-bit interface addresses; an IPv6 address as is, an
 * IPv4 address as IPv4-mapped IPv6 (::ffff:a.b.c.d).
 */
#ifndef EFI_GID_H
#define EFI_GID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The same definition as <efi/efi.h>'s, under the same guard, so that code
 * including both compiles in either order. */
#ifndef EFI_GID_DEFINED
#define EFI_GID_DEFINED
union efi_gid {
	uint8_t raw[16];
	uint64_t u64[2];
	struct {
		uint64_t subnet_prefix; /* network byte order */
		uint64_t interface_id;  /* network byte order */
	} global;
};
#endif

/* Builds a GID from an address of family AF_INET (4 bytes) or AF_INET6 (16).
 * Returns 0 or -EAFNOSUPPORT. */
int efi_gid_from_addr(int family, const void *addr, union efi_gid *gid);
/* Text form: "::ffff:10.0.0.5" for mapped IPv4, RFC 5952 for IPv6.
 * buf needs 46 bytes (INET6_ADDRSTRLEN). */
const char *efi_gid_format(const union efi_gid *gid, char *buf, size_t len);
/* Parses either an IPv4 address (mapped) or IPv6 text.  Returns 0 or -EINVAL. */
int efi_gid_parse(const char *s, union efi_gid *gid);
/* True for ::ffff:0:0/96. */
bool efi_gid_is_v4mapped(const union efi_gid *gid);

#ifdef __cplusplus
}
#endif
#endif
