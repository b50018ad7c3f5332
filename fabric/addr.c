/* SPDX-License-Identifier: MIT */
/*
 * Local addresses of endpoints: which socket address a passive endpoint
 * may take (fi_setname, or none given at fi_passive_ep) and what an
 * active endpoint opened with hints->handle = a passive endpoint inherits.
 * An address is local when its IP is one of the device's GIDs, as bind(2)
 * wants an address of the host.
 */
#include "config.h"

#include <string.h>

#include "efi_fi.h"

static bool ip_any(const struct sockaddr *sa)
{
	static const struct in6_addr any6 = IN6ADDR_ANY_INIT;

	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, &any6, sizeof(any6));
}

static bool ip_equal(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
}

uint16_t efi_fi_sockaddr_port(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port
					 : ((const struct sockaddr_in *)sa)->sin_port;
}

int efi_fi_local_addr(struct efi_context *ctx, const struct sockaddr *want,
		      struct sockaddr_storage *out)
{
	struct efi_port_attr pa;
	uint16_t port = want ? efi_fi_sockaddr_port(want) : 0;

	if (want && want->sa_family != AF_INET && want->sa_family != AF_INET6)
		return -FI_EINVAL;
	if (efi_query_port(ctx, 1, &pa))
		return -FI_EADDRNOTAVAIL;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct sockaddr_storage ss;
		union efi_gid gid;

		if (efi_query_gid(ctx, 1, i, &gid) || !efi_fi_gid_usable(&gid))
			continue;
		efi_fi_gid_sockaddr(&gid, port, &ss);
		if (want && (ss.ss_family != want->sa_family ||
			     (!ip_any(want) && !ip_equal((struct sockaddr *)&ss, want))))
			continue;
		*out = ss;
		return 0;
	}
	return -FI_EADDRNOTAVAIL;	/* not an address of this interface */
}
