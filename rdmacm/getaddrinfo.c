/* SPDX-License-Identifier: MIT */
/*
 * rdma_getaddrinfo / rdma_freeaddrinfo over getaddrinfo(3): EFI addresses
 * are IP addresses, there is no IB service resolution (ACM) to ask, and the
 * answer is always an RC endpoint in the TCP port space.  Like librdmacm,
 * one result: the first address getaddrinfo gives.  Returns 0, or an EAI_*
 * code (gai_strerror explains it), or -1 with errno.
 */
#include "config.h"

#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm/rdmacm_int.h"

RCM_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *next;

	for (; res; res = next) {
		next = res->ai_next;
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
	}
}

static struct sockaddr *dup_addr(const struct sockaddr *a, socklen_t len)
{
	struct sockaddr *c = malloc(len);

	if (c)
		memcpy(c, a, len);
	return c;
}

RCM_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	struct addrinfo ai_hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	struct rdma_addrinfo *r;
	int passive = 0, ret;

	if (!res || (!node && !service))
		return rcm_err(EINVAL);
	if (hints) {
		if (hints->ai_qp_type && hints->ai_qp_type != IBV_QPT_RC)
			return rcm_err(EOPNOTSUPP);
		if (hints->ai_port_space && hints->ai_port_space != RDMA_PS_TCP)
			return rcm_err(EOPNOTSUPP);
		if (hints->ai_family && hints->ai_family != AF_INET && hints->ai_family != AF_INET6)
			return rcm_err(EAFNOSUPPORT);	/* AF_IB: no InfiniBand here */
		passive = !!(hints->ai_flags & RAI_PASSIVE);
		ai_hints.ai_family = hints->ai_family;
		if (hints->ai_flags & RAI_PASSIVE)
			ai_hints.ai_flags |= AI_PASSIVE;
		if (hints->ai_flags & RAI_NUMERICHOST)
			ai_hints.ai_flags |= AI_NUMERICHOST;
	}
	if (node || service) {
		ret = getaddrinfo(node, service, &ai_hints, &ai);
		if (ret)
			return ret;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		goto err;
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_family = ai->ai_family;
	r->ai_qp_type = IBV_QPT_RC;
	r->ai_port_space = RDMA_PS_TCP;
	if (passive) {
		r->ai_src_addr = dup_addr(ai->ai_addr, ai->ai_addrlen);
		if (!r->ai_src_addr)
			goto err;
		r->ai_src_len = ai->ai_addrlen;
	} else {
		r->ai_dst_addr = dup_addr(ai->ai_addr, ai->ai_addrlen);
		if (!r->ai_dst_addr)
			goto err;
		r->ai_dst_len = ai->ai_addrlen;
		/* a source the caller asked for */
		if (hints && hints->ai_src_addr && hints->ai_src_len) {
			r->ai_src_addr = dup_addr(hints->ai_src_addr, hints->ai_src_len);
			if (!r->ai_src_addr)
				goto err;
			r->ai_src_len = hints->ai_src_len;
		}
	}
	freeaddrinfo(ai);
	*res = r;
	return 0;
err:
	rdma_freeaddrinfo(r);
	freeaddrinfo(ai);
	errno = ENOMEM;
	return -1;
}
