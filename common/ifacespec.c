/* SPDX-License-Identifier: MIT */
/* Interface specs: name and address validation, the interface-file format. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "ifacespec.h"
#include "ini.h"

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

bool efi_instance_name_valid(const char *s)
{
	if (!s || !*s || s[0] == '.' || s[0] == '-')
		return false;
	size_t n = 0;
	for (const char *p = s; *p; p++, n++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
		if (!ok || n >= EFI_INSTANCE_MAX)
			return false;
	}
	return true;
}

bool efi_ifname_valid(const char *s)
{
	if (!s || !*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	size_t n = 0;
	for (const char *p = s; *p; p++, n++) {
		unsigned char c = (unsigned char)*p;
		/* The kernel refuses '/', ':' and whitespace; control characters
		 * and non-ASCII bytes are refused too, since names end up in
		 * logs, terminals and JSON. */
		if (n >= EFI_IFNAME_MAX || c <= 0x20 || c >= 0x7f || c == '/' || c == ':')
			return false;
	}
	return true;
}

/* Addresses that cannot be an interface's own address (and so a GID). */
static const char *unusable_reason(const struct efi_addr *a)
{
	if (a->family == AF_INET) {
		uint32_t h = ntohl(a->a.v4.s_addr);
		if (h == 0)
			return "the unspecified address 0.0.0.0";
		if (h == 0xffffffffu)
			return "the broadcast address";
		if ((h >> 24) == 127)
			return "a loopback address";
		if ((h >> 28) == 0xe)
			return "a multicast address";
		return NULL;
	}
	if (IN6_IS_ADDR_UNSPECIFIED(&a->a.v6))
		return "the unspecified address ::";
	if (IN6_IS_ADDR_LOOPBACK(&a->a.v6))
		return "the loopback address";
	if (IN6_IS_ADDR_MULTICAST(&a->a.v6))
		return "a multicast address";
	return NULL;
}

int efi_addr_parse(const char *s, struct efi_addr *out, char *err, size_t errlen)
{
	char ip[INET6_ADDRSTRLEN + 1];
	struct efi_addr a;

	memset(&a, 0, sizeof(a));
	if (!s || !*s) {
		set_err(err, errlen, "empty address; expected ADDRESS/PREFIX such as 10.0.0.5/24");
		return -EINVAL;
	}
	const char *slash = strchr(s, '/');
	if (!slash) {
		set_err(err, errlen,
			"'%.64s' has no prefix length; write it as ADDRESS/PREFIX, e.g. 10.0.0.5/24",
			s);
		return -EINVAL;
	}
	size_t iplen = (size_t)(slash - s);
	if (iplen == 0 || iplen >= sizeof(ip)) {
		set_err(err, errlen, "'%.64s' is not an IPv4 or IPv6 address", s);
		return -EINVAL;
	}
	memcpy(ip, s, iplen);
	ip[iplen] = '\0';
	if (inet_pton(AF_INET, ip, &a.a.v4) == 1) {
		a.family = AF_INET;
	} else if (inet_pton(AF_INET6, ip, &a.a.v6) == 1) {
		a.family = AF_INET6;
	} else {
		set_err(err, errlen, "'%.64s' is not an IPv4 or IPv6 address", ip);
		return -EINVAL;
	}

	/* Digits only: strtoul would accept blanks, signs and "0x". */
	const char *p = slash + 1;
	unsigned prefix = 0;
	unsigned max = a.family == AF_INET ? 32 : 128;
	if (!*p) {
		set_err(err, errlen, "'%.64s': prefix length missing after '/'", s);
		return -EINVAL;
	}
	for (; *p; p++) {
		if (*p < '0' || *p > '9') {
			set_err(err, errlen, "'%.64s': prefix length must be a number 0..%u", s,
				max);
			return -EINVAL;
		}
		prefix = prefix * 10 + (unsigned)(*p - '0');
		if (prefix > max) {
			set_err(err, errlen, "'%.64s': prefix length too large (at most %u)", s,
				max);
			return -EINVAL;
		}
	}
	a.prefixlen = (uint8_t)prefix;
	const char *why = unusable_reason(&a);
	if (why) {
		set_err(err, errlen, "'%.64s' is %s, not usable as an interface address", s,
			why);
		return -EINVAL;
	}
	*out = a;
	return 0;
}

const char *efi_addr_format(const struct efi_addr *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];
	if (!buf || len == 0)
		return buf;
	if ((a->family != AF_INET && a->family != AF_INET6) ||
	    !inet_ntop(a->family, &a->a, ip, sizeof(ip))) {
		snprintf(buf, len, "?");
		return buf;
	}
	snprintf(buf, len, "%s/%u", ip, a->prefixlen);
	return buf;
}

bool efi_addr_same_ip(const struct efi_addr *a, const struct efi_addr *b)
{
	if (a->family != b->family)
		return false;
	if (a->family == AF_INET)
		return a->a.v4.s_addr == b->a.v4.s_addr;
	return memcmp(&a->a.v6, &b->a.v6, sizeof(a->a.v6)) == 0;
}

static bool kind_valid(const char *k)
{
	return strcmp(k, "veth") == 0 || strcmp(k, "macvlan") == 0;
}

/* True when a string field holds a NUL within its array (a spec that came
 * from memcpy must not make us read past it). */
static bool terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

int efi_iface_spec_validate(const struct efi_iface_spec *s, char *err, size_t errlen)
{
	char buf[INET6_ADDRSTRLEN + 8];

	if (!terminated(s->instance, sizeof(s->instance)) ||
	    !terminated(s->name, sizeof(s->name)) || !terminated(s->kind, sizeof(s->kind)) ||
	    !terminated(s->uplink, sizeof(s->uplink))) {
		set_err(err, errlen, "a name field is not terminated");
		return -EINVAL;
	}
	if (!s->instance[0]) {
		set_err(err, errlen, "no instance given");
		return -EINVAL;
	}
	if (!efi_instance_name_valid(s->instance)) {
		set_err(err, errlen,
			"invalid instance name '%s': use 1-%d characters of A-Z a-z 0-9 _ . -, "
			"not starting with '.' or '-'",
			s->instance, EFI_INSTANCE_MAX);
		return -EINVAL;
	}
	if (s->name[0] && !efi_ifname_valid(s->name)) {
		set_err(err, errlen,
			"invalid interface name '%s': use 1-%d printable characters without "
			"'/', ':' or spaces",
			s->name, EFI_IFNAME_MAX);
		return -EINVAL;
	}
	if (s->kind[0] && !kind_valid(s->kind)) {
		set_err(err, errlen, "invalid kind '%s': use veth or macvlan", s->kind);
		return -EINVAL;
	}
	if (s->uplink[0] && !efi_ifname_valid(s->uplink)) {
		set_err(err, errlen, "invalid uplink device name '%s'", s->uplink);
		return -EINVAL;
	}
	if (s->mtu != 0 && (s->mtu < EFI_MTU_MIN || s->mtu > EFI_MTU_MAX)) {
		set_err(err, errlen, "MTU %u out of range: use %d..%d, or 0 for the default",
			s->mtu, EFI_MTU_MIN, EFI_MTU_MAX);
		return -EINVAL;
	}
	if (s->naddrs == 0) {
		set_err(err, errlen, "no address given: an interface needs at least one "
				     "ADDRESS/PREFIX");
		return -EINVAL;
	}
	if (s->naddrs > EFI_MAX_ADDRS) {
		set_err(err, errlen, "too many addresses (%zu): at most %d per interface",
			s->naddrs, EFI_MAX_ADDRS);
		return -EINVAL;
	}
	for (size_t i = 0; i < s->naddrs; i++) {
		const struct efi_addr *a = &s->addrs[i];
		unsigned max = a->family == AF_INET ? 32 : 128;
		if ((a->family != AF_INET && a->family != AF_INET6) || a->prefixlen > max) {
			set_err(err, errlen, "address %zu is malformed", i + 1);
			return -EINVAL;
		}
		const char *why = unusable_reason(a);
		if (why) {
			set_err(err, errlen, "address %s is %s",
				efi_addr_format(a, buf, sizeof(buf)), why);
			return -EINVAL;
		}
		for (size_t j = 0; j < i; j++) {
			if (efi_addr_same_ip(a, &s->addrs[j])) {
				set_err(err, errlen, "address %s is given twice",
					efi_addr_format(a, buf, sizeof(buf)));
				return -EINVAL;
			}
		}
	}
	return 0;
}

/* True when every address of a is in b with the same prefix length. */
static bool addrs_subset(const struct efi_iface_spec *a, const struct efi_iface_spec *b)
{
	for (size_t i = 0; i < a->naddrs && i < EFI_MAX_ADDRS; i++) {
		bool found = false;
		for (size_t j = 0; j < b->naddrs && j < EFI_MAX_ADDRS && !found; j++)
			found = efi_addr_same_ip(&a->addrs[i], &b->addrs[j]) &&
				a->addrs[i].prefixlen == b->addrs[j].prefixlen;
		if (!found)
			return false;
	}
	return true;
}

bool efi_iface_spec_equal(const struct efi_iface_spec *a, const struct efi_iface_spec *b)
{
	return strncmp(a->instance, b->instance, sizeof(a->instance)) == 0 &&
	       strncmp(a->name, b->name, sizeof(a->name)) == 0 &&
	       strncmp(a->kind, b->kind, sizeof(a->kind)) == 0 &&
	       strncmp(a->uplink, b->uplink, sizeof(a->uplink)) == 0 && a->mtu == b->mtu &&
	       a->naddrs == b->naddrs && addrs_subset(a, b) && addrs_subset(b, a);
}

/* ---- interface files ------------------------------------------------- */

struct file_state {
	struct efi_iface_spec *spec;
	bool have_instance;
};

/* Copies value into a fixed field, refusing what does not fit. */
static int copy_field(char *dst, size_t size, const char *key, const char *value, char *err,
		      size_t errlen)
{
	size_t n = strlen(value);
	if (n >= size) {
		set_err(err, errlen, "%s= is too long (at most %zu characters)", key, size - 1);
		return -EINVAL;
	}
	memcpy(dst, value, n + 1);
	return 0;
}

/* Parses a decimal MTU: digits only, 0 or EFI_MTU_MIN..EFI_MTU_MAX. */
static int parse_mtu(const char *v, uint32_t *out, char *err, size_t errlen)
{
	uint32_t m = 0;
	if (!*v)
		goto bad;
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9')
			goto bad;
		m = m * 10 + (uint32_t)(*p - '0');
		if (m > EFI_MTU_MAX)
			goto bad;
	}
	if (m != 0 && m < EFI_MTU_MIN)
		goto bad;
	*out = m;
	return 0;
bad:
	set_err(err, errlen, "MTU '%.32s' is invalid: use a number %d..%d, or 0 for the default",
		v, EFI_MTU_MIN, EFI_MTU_MAX);
	return -EINVAL;
}

static int iface_file_cb(void *userdata, const char *section, const char *key,
			 const char *value, unsigned line, char *err, size_t errlen)
{
	struct file_state *st = userdata;
	struct efi_iface_spec *s = st->spec;
	char why[160];
	int r;

	if (strcasecmp(section, "Interface") != 0) {
		if (section[0])
			set_err(err, errlen, "unknown section [%.64s]; only [Interface] is allowed",
				section);
		else
			set_err(err, errlen, "%.64s= outside a section; put it under [Interface]",
				key);
		return -EINVAL;
	}

	if (strcasecmp(key, "Instance") == 0) {
		if (!efi_instance_name_valid(value)) {
			set_err(err, errlen,
				"Instance='%.64s' is invalid: use 1-%d characters of A-Z a-z 0-9 _ . -, "
				"not starting with '.' or '-'",
				value, EFI_INSTANCE_MAX);
			return -EINVAL;
		}
		st->have_instance = true;
		return copy_field(s->instance, sizeof(s->instance), "Instance", value, err,
				  errlen);
	}
	if (strcasecmp(key, "Name") == 0) {
		/* Empty: efid picks efiN. */
		if (*value && !efi_ifname_valid(value)) {
			set_err(err, errlen,
				"Name='%.64s' is invalid: use 1-%d printable characters without "
				"'/', ':' or spaces",
				value, EFI_IFNAME_MAX);
			return -EINVAL;
		}
		return copy_field(s->name, sizeof(s->name), "Name", value, err, errlen);
	}
	if (strcasecmp(key, "Uplink") == 0) {
		/* Empty: efid.conf's DefaultUplink. */
		if (*value && !efi_ifname_valid(value)) {
			set_err(err, errlen, "Uplink='%.64s' is not a valid device name", value);
			return -EINVAL;
		}
		return copy_field(s->uplink, sizeof(s->uplink), "Uplink", value, err, errlen);
	}
	if (strcasecmp(key, "Kind") == 0) {
		if (!kind_valid(value)) {
			set_err(err, errlen, "Kind='%.32s' is invalid: use veth or macvlan", value);
			return -EINVAL;
		}
		return copy_field(s->kind, sizeof(s->kind), "Kind", value, err, errlen);
	}
	if (strcasecmp(key, "MTU") == 0)
		return parse_mtu(value, &s->mtu, err, errlen);
	if (strcasecmp(key, "Address") == 0) {
		struct efi_addr a;
		r = efi_addr_parse(value, &a, why, sizeof(why));
		if (r) {
			set_err(err, errlen, "Address=: %s", why);
			return r;
		}
		for (size_t i = 0; i < s->naddrs; i++) {
			if (efi_addr_same_ip(&a, &s->addrs[i])) {
				set_err(err, errlen, "Address=%.64s is given twice", value);
				return -EINVAL;
			}
		}
		if (s->naddrs >= EFI_MAX_ADDRS) {
			set_err(err, errlen, "too many Address= lines: at most %d per interface",
				EFI_MAX_ADDRS);
			return -EINVAL;
		}
		s->addrs[s->naddrs++] = a;
		return 0;
	}
	set_err(err, errlen,
		"unknown key %.64s= in [Interface]; known keys: Instance, Name, Address, "
		"Uplink, MTU, Kind",
		key);
	return -EINVAL;
}

/* Checks what only the whole file can tell (a required key missing). */
static int iface_file_finish(const char *name, struct file_state *st, char *err, size_t errlen)
{
	char why[256];
	if (!st->have_instance) {
		set_err(err, errlen, "%s: Instance= is missing from [Interface]", name);
		return -EINVAL;
	}
	if (st->spec->naddrs == 0) {
		set_err(err, errlen, "%s: no Address= in [Interface]; at least one is needed",
			name);
		return -EINVAL;
	}
	int r = efi_iface_spec_validate(st->spec, why, sizeof(why));
	if (r)
		set_err(err, errlen, "%s: %s", name, why);
	return r;
}

int efi_iface_text_parse(const char *name, const char *text, size_t len,
			 struct efi_iface_spec *out, char *err, size_t errlen)
{
	struct efi_iface_spec spec;
	struct file_state st = { .spec = &spec };

	if (!name)
		name = "<input>";
	memset(&spec, 0, sizeof(spec));
	int r = ini_parse(name, text, len, iface_file_cb, &st, err, errlen);
	if (r == 0)
		r = iface_file_finish(name, &st, err, errlen);
	if (r == 0)
		*out = spec;
	return r;
}

int efi_iface_file_parse(const char *path, struct efi_iface_spec *out, char *err, size_t errlen)
{
	struct efi_iface_spec spec;
	struct file_state st = { .spec = &spec };

	memset(&spec, 0, sizeof(spec));
	int r = ini_parse_file(path, iface_file_cb, &st, err, errlen);
	if (r == 0)
		r = iface_file_finish(path, &st, err, errlen);
	if (r == 0)
		*out = spec;
	return r;
}

int efi_iface_spec_write(const struct efi_iface_spec *s, FILE *f)
{
	char buf[INET6_ADDRSTRLEN + 8];

	fprintf(f, "[Interface]\n");
	fprintf(f, "Instance=%s\n", s->instance);
	if (s->name[0])
		fprintf(f, "Name=%s\n", s->name);
	for (size_t i = 0; i < s->naddrs && i < EFI_MAX_ADDRS; i++)
		fprintf(f, "Address=%s\n", efi_addr_format(&s->addrs[i], buf, sizeof(buf)));
	if (s->uplink[0])
		fprintf(f, "Uplink=%s\n", s->uplink);
	if (s->mtu)
		fprintf(f, "MTU=%u\n", s->mtu);
	if (s->kind[0])
		fprintf(f, "Kind=%s\n", s->kind);
	if (fflush(f) == EOF || ferror(f))
		return -(errno ? errno : EIO);
	return 0;
}
