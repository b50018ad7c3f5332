/* SPDX-License-Identifier: MIT */
/* Socket address helpers of libefi-rdmacm (IPv4 and IPv6). */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "rdmacm/rdmacm_int.h"

int rcm_addr_len(const struct sockaddr *a)
{
	if (!a)
		return 0;
	if (a->sa_family == AF_INET)
		return sizeof(struct sockaddr_in);
	if (a->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	return 0;
}

uint16_t rcm_addr_port(const struct sockaddr *a)
{
	if (a->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)a)->sin_port);
	if (a->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
	return 0;
}

void rcm_addr_set_port(struct sockaddr *a, uint16_t port)
{
	if (a->sa_family == AF_INET)
		((struct sockaddr_in *)a)->sin_port = htons(port);
	else if (a->sa_family == AF_INET6)
		((struct sockaddr_in6 *)a)->sin6_port = htons(port);
}

int rcm_addr_is_any(const struct sockaddr *a)
{
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

void rcm_addr_from_gid(struct sockaddr_storage *ss, const union efi_gid *gid, uint16_t port)
{
	struct in6_addr a6;

	memset(ss, 0, sizeof(*ss));
	memcpy(&a6, gid->raw, sizeof(a6));
	if (IN6_IS_ADDR_V4MAPPED(&a6)) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		memcpy(&s->sin_addr, &gid->raw[12], 4);
		s->sin_port = htons(port);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		s->sin6_family = AF_INET6;
		s->sin6_addr = a6;
		s->sin6_port = htons(port);
	}
}

/* A connected UDP socket sends nothing: connect() only asks the kernel's
 * routing for the source address it would use. */
int rcm_route_src(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	struct sockaddr_storage d;
	int fd, ret = 0;

	memcpy(&d, dst, rcm_addr_len(dst));
	rcm_addr_set_port((struct sockaddr *)&d, 9);	/* connect needs a port */
	fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&d, rcm_addr_len(dst)) != 0 ||
	    getsockname(fd, (struct sockaddr *)src, &len) != 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Linux's default ephemeral range (ip_local_port_range). */
uint16_t rcm_ephemeral_port(void)
{
	uint16_t r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (uint16_t)getpid();
	return (uint16_t)(32768 + r % (60999 - 32768 + 1));
}
