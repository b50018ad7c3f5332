/* SPDX-License-Identifier: MIT */
/*
 * Looking inside the pod's namespace: the interface's MAC for ADD's result,
 * and its presence, state and addresses for CHECK.  efi-cni is one thread,
 * so it may switch its network namespace for the time of a lookup; it
 * always switches back before doing anything else.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cni.h"

/* Runs fn(ud) inside the namespace at path.  Returns fn's result, or -1
 * with e when the namespace cannot be entered (or left: then the plugin
 * stops, rather than act in the wrong namespace). */
static int in_netns(const char *path, int (*fn)(void *ud), void *ud, struct cni_err *e)
{
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	int ns = open(path, O_RDONLY | O_CLOEXEC);
	int r;

	if (self < 0 || ns < 0) {
		int err = errno;
		if (self >= 0)
			close(self);
		if (ns >= 0)
			close(ns);
		return cni_fail(e, err == ENOENT ? CNI_E_UNKNOWN : CNI_E_IO, strerror(err),
				"cannot open the network namespace %s", path);
	}
	if (setns(ns, CLONE_NEWNET) < 0) {
		int err = errno;
		close(self);
		close(ns);
		return cni_fail(e, err == EINVAL ? CNI_E_UNKNOWN : CNI_E_IO, strerror(err),
				"cannot enter the network namespace %s", path);
	}
	close(ns);
	r = fn(ud);
	if (setns(self, CLONE_NEWNET) < 0)
		abort();
	close(self);
	return r;
}

struct mac_ctx {
	const char *ifname;
	char *mac;
	int err;
};

static int read_mac(void *ud)
{
	struct mac_ctx *m = ud;
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		m->err = errno;
		return -1;
	}
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", m->ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		m->err = errno;
		close(fd);
		return -1;
	}
	close(fd);
	const unsigned char *b = (const unsigned char *)ifr.ifr_hwaddr.sa_data;
	snprintf(m->mac, 18, "%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5]);
	return 0;
}

int cni_ns_mac(const char *netns, const char *ifname, char *mac, struct cni_err *e)
{
	struct mac_ctx m = { .ifname = ifname, .mac = mac };
	int r = in_netns(netns, read_mac, &m, e);

	if (r < 0 && !e->code)
		return cni_fail(e, CNI_E_IO, strerror(m.err), "cannot read the MAC of %s in %s",
				ifname, netns);
	return r;
}

struct check_ctx {
	const char *ifname;
	const struct cni_record *r;
	bool present, up;
	bool seen[EFI_MAX_ADDRS];
	int err;
};

static int read_addrs(void *ud)
{
	struct check_ctx *c = ud;
	struct ifaddrs *ifa, *i;

	if (getifaddrs(&ifa) < 0) {
		c->err = errno;
		return -1;
	}
	for (i = ifa; i; i = i->ifa_next) {
		if (strcmp(i->ifa_name, c->ifname) != 0)
			continue;
		c->present = true;
		c->up = c->up || (i->ifa_flags & IFF_UP);
		if (!i->ifa_addr)
			continue;
		for (size_t k = 0; k < c->r->naddrs; k++) {
			const struct efi_addr *w = &c->r->addrs[k];
			if (w->family == AF_INET && i->ifa_addr->sa_family == AF_INET &&
			    memcmp(&((struct sockaddr_in *)i->ifa_addr)->sin_addr, &w->a.v4, 4) == 0)
				c->seen[k] = true;
			if (w->family == AF_INET6 && i->ifa_addr->sa_family == AF_INET6 &&
			    memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, &w->a.v6, 16) == 0)
				c->seen[k] = true;
		}
	}
	freeifaddrs(ifa);
	return 0;
}

int cni_ns_check(const char *netns, const char *ifname, const struct cni_record *r,
		 struct cni_err *e)
{
	struct check_ctx c = { .ifname = ifname, .r = r };
	char t[INET6_ADDRSTRLEN + 8];

	if (in_netns(netns, read_addrs, &c, e) < 0)
		return e->code ? -1 : cni_fail(e, CNI_E_IO, strerror(c.err),
					       "cannot list the addresses in %s", netns);
	if (!c.present)
		return cni_fail(e, CNI_E_CHECK, NULL, "there is no interface %s in %s", ifname,
				netns);
	if (!c.up)
		return cni_fail(e, CNI_E_CHECK, NULL, "%s in %s is down", ifname, netns);
	for (size_t k = 0; k < r->naddrs; k++)
		if (!c.seen[k])
			return cni_fail(e, CNI_E_CHECK, NULL, "%s in %s lacks address %s", ifname,
					netns, efi_addr_format(&r->addrs[k], t, sizeof(t)));
	return 0;
}
