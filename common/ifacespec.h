/* SPDX-License-Identifier: MIT */
/*
 * What an EFI interface should look like: the fields of `efictl attach`, of
 * an ATTACH request and of an interface file under interfaces.d/.  One
 * validator for all three, so the CLI, the declarative files and efid agree.
 */
#ifndef EFI_IFACESPEC_H
#define EFI_IFACESPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <netinet/in.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EFI_INSTANCE_MAX 63   /* instance name length, without NUL */
#define EFI_IFNAME_MAX 15     /* IFNAMSIZ - 1 */
#define EFI_MAX_ADDRS 16      /* configured addresses per interface */
#define EFI_MTU_MIN 576
#define EFI_MTU_MAX 65535

struct efi_addr {
	int family;               /* AF_INET or AF_INET6 */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} a;
	uint8_t prefixlen;
};

struct efi_iface_spec {
	char instance[EFI_INSTANCE_MAX + 1];
	char name[EFI_IFNAME_MAX + 1];        /* "" → efid picks efiN */
	char kind[16];                        /* "veth" (default) or "macvlan" */
	char uplink[EFI_IFNAME_MAX + 1];      /* "" → efid.conf default, may stay "" for veth */
	uint32_t mtu;                         /* 0 → default */
	size_t naddrs;
	struct efi_addr addrs[EFI_MAX_ADDRS];
};

/* Instance names: 1..63 chars of [A-Za-z0-9_.-], not starting with '.' or '-'
 * (they name files under /run/netns).  Returns true when valid. */
bool efi_instance_name_valid(const char *s);
/* Interface names: 1..15 chars, no '/', ':', whitespace, not "." or "..". */
bool efi_ifname_valid(const char *s);

/* Parses "10.0.0.5/24" or "fd00::5/64" (prefix required, decimal digits
 * only).  Addresses that cannot be an interface's own (unspecified, loopback,
 * multicast, 255.255.255.255) are refused.  Returns 0 or -EINVAL, writing a
 * reason into err. */
int efi_addr_parse(const char *s, struct efi_addr *out, char *err, size_t errlen);
/* Formats as "10.0.0.5/24".  buf should hold INET6_ADDRSTRLEN + 4. */
const char *efi_addr_format(const struct efi_addr *a, char *buf, size_t len);
/* True when both name the same IP address (prefix ignored). */
bool efi_addr_same_ip(const struct efi_addr *a, const struct efi_addr *b);

/* Checks a whole spec (instance present and valid, name syntax, kind "" or
 * veth/macvlan, mtu range, 1..EFI_MAX_ADDRS usable addresses, no duplicate
 * address).  Returns 0 or -EINVAL with a message in err that says what to fix. */
int efi_iface_spec_validate(const struct efi_iface_spec *s, char *err, size_t errlen);

/* True when two specs ask for the same interface (order of addresses does
 * not matter; 0 and the default MTU are not normalised here). */
bool efi_iface_spec_equal(const struct efi_iface_spec *a, const struct efi_iface_spec *b);

/*
 * Parses one interface file (INI):
 *
 *   [Interface]
 *   Instance=vm1
 *   Name=efi0
 *   Address=10.0.0.5/24      (repeatable)
 *   Uplink=br0
 *   MTU=9000
 *   Kind=veth
 *
 * Section and key names match case-insensitively, values are case-sensitive.
 * A repeated key other than Address: the last one wins.  Empty Name= or
 * Uplink= mean "efid's default".  Instance= and one Address= are required.
 * Returns 0, or -EINVAL with "FILE:LINE: what is wrong" in err; -errno when
 * the file cannot be read.  *out is written only on success.
 */
int efi_iface_file_parse(const char *path, struct efi_iface_spec *out, char *err, size_t errlen);
/* The same from memory (name is used in messages). */
int efi_iface_text_parse(const char *name, const char *text, size_t len,
			 struct efi_iface_spec *out, char *err, size_t errlen);
/* Writes the spec back in the file format above.  Returns 0 or -errno. */
int efi_iface_spec_write(const struct efi_iface_spec *s, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
