/* SPDX-License-Identifier: MIT */
/*
 * The connection manager's UDP sockets, one per instance namespace, bound to
 * [::]:Port there (both families).  A connect request is sent from the
 * requesting instance's socket, so it takes the instance's own network to
 * the address connected to, where the efid serving that instance receives
 * it on its socket in that namespace: no route from the host's namespace
 * to instance addresses is needed, and two efids on one machine (or two
 * machines) find each other the same way.  ICMP errors are read too
 * (IP_RECVERR): "nobody on that port" means no efid serves the address.
 *
 * An instance may have several addresses (interfaces), on one segment even:
 * every answer leaves from the address its transaction was addressed to
 * (the destination of the datagrams received for that tid, IP_PKTINFO),
 * since the peer matches answers by the address it sent to.  Left to the
 * routing table, an answer for efi1's address left from efi0's, and the
 * requester, never hearing from the address it asked, gave up as
 * "unreachable" (issue 22).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <time.h> /* before linux/errqueue.h, which needs struct timespec */
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "cm.h"
#include "efid.h"
#include "kernel.h"
#include "log.h"
#include "netns.h"
#include "store.h"

#define CM_LEARNED_SLOTS 1024u

struct cm_sock {
	struct cm_sock *next;
	struct efid *d;
	char instance[EFI_INSTANCE_MAX + 1];
	ino_t netns_ino;
	int fd;
	sd_event_source *src;
	bool seen;       /* cm_sync: still recorded */
	bool warned;     /* bind failure logged once */
	/* The local address each recent transaction was addressed to, by
	 * tid (direct-mapped: a collision forgets one, whose answers then
	 * leave from the routing table's choice, as they did before). */
	struct {
		uint64_t tid;
		struct in6_addr local;
		bool valid;
	} learned[CM_LEARNED_SLOTS];
};

static void sock_free(struct cm_sock *s)
{
	sd_event_source_disable_unref(s->src);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}

/* Bytes of datagrams a CM socket may hold unread (the kernel doubles it
 * for its bookkeeping): some 8,000 CM messages. */
#define CM_SOCK_RCVBUF (8 * 1024 * 1024)

struct make_cm_socket {
	unsigned port;
	int fd;
	const char *step;
};

static int make_cm_socket_in_netns(void *ud)
{
	struct make_cm_socket *m = ud;
	int off = 0, on = 1;
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)m->port),
				     .sin6_addr = IN6ADDR_ANY_INIT };

	m->step = "socket";
	m->fd = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->fd < 0)
		return -errno;
	m->step = "IPV6_V6ONLY";
	if (setsockopt(m->fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) < 0)
		goto fail;
	m->step = "IP_RECVERR";
	if (setsockopt(m->fd, IPPROTO_IPV6, IPV6_RECVERR, &on, sizeof(on)) < 0 ||
	    setsockopt(m->fd, IPPROTO_IP, IP_RECVERR, &on, sizeof(on)) < 0)
		goto fail;
	m->step = "IPV6_RECVPKTINFO";
	if (setsockopt(m->fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof(on)) < 0 ||
	    setsockopt(m->fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof(on)) < 0)
		goto fail;
	/* Room for bursts: a process with 1,000 connections dies and its
	 * peers' efid gets 1,000 DREQs at once (and this one their DREPs);
	 * the default 208 KiB held about 200 of them, the rest were dropped
	 * and waited for a resend 50-150 ms later (issue 18).  FORCE goes
	 * past net.core.rmem_max with CAP_NET_ADMIN; without it the plain
	 * option gets what the sysctl allows, and less is no error. */
	int rcvbuf = CM_SOCK_RCVBUF;
	if (setsockopt(m->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		(void)setsockopt(m->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	m->step = "bind";
	if (bind(m->fd, (struct sockaddr *)&sin6, sizeof(sin6)) < 0)
		goto fail;
	return 0;
fail:;
	int e = -errno;
	close(m->fd);
	m->fd = -1;
	return e;
}

/* Reads ICMP errors: each names the destination that refused. */
static void read_errors(struct cm_sock *s)
{
	for (int burst = 0; burst < 64; burst++) {
		struct sockaddr_in6 to;
		uint8_t data[64];
		union {
			char buf[512];
			struct cmsghdr align;
		} u;
		struct iovec iov = { .iov_base = data, .iov_len = sizeof(data) };
		struct msghdr msg = { .msg_name = &to, .msg_namelen = sizeof(to), .msg_iov = &iov,
				      .msg_iovlen = 1, .msg_control = u.buf,
				      .msg_controllen = sizeof(u.buf) };
		if (recvmsg(s->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			return;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			if (!((cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_RECVERR) ||
			      (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_RECVERR)))
				continue;
			struct sock_extended_err ee;
			memcpy(&ee, CMSG_DATA(cm), sizeof(ee));
			if ((ee.ee_origin == SO_EE_ORIGIN_ICMP || ee.ee_origin == SO_EE_ORIGIN_ICMP6) &&
			    (ee.ee_errno == ECONNREFUSED || ee.ee_errno == EHOSTUNREACH ||
			     ee.ee_errno == ENETUNREACH) &&
			    msg.msg_namelen >= sizeof(struct sockaddr_in6) && to.sin6_family == AF_INET6)
				cm_unreachable(s->d, s->instance, &to);
		}
	}
}

/* The destination address of a received datagram (its IP_PKTINFO or
 * IPV6_PKTINFO), as an IPv6 or IPv4-mapped address. */
static bool local_address(struct msghdr *msg, struct in6_addr *out)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		if (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;
			memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
			*out = pi.ipi6_addr;
			return true;
		}
		if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;
			memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
			memset(out, 0, sizeof(*out));
			out->s6_addr[10] = 0xff;
			out->s6_addr[11] = 0xff;
			memcpy(&out->s6_addr[12], &pi.ipi_addr, 4);
			return true;
		}
	}
	return false;
}

static void learn(struct cm_sock *s, uint64_t tid, const struct in6_addr *local)
{
	unsigned i = (unsigned)(tid % CM_LEARNED_SLOTS);

	s->learned[i].tid = tid;
	s->learned[i].local = *local;
	s->learned[i].valid = true;
}

static int on_datagram(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct cm_sock *s = userdata;
	struct efid *d = s->d;
	char instance[sizeof(s->instance)];

	/* cm_input may run cm_sync (never), but copy the name anyway: the
	 * handlers must not depend on s staying alive. */
	memcpy(instance, s->instance, sizeof(instance));
	if (revents & EPOLLERR)
		read_errors(s);
	for (int burst = 0; burst < 64 && (revents & EPOLLIN); burst++) {
		uint8_t buf[CM_WIRE_MAX + 1];
		struct sockaddr_in6 from;
		union {
			char buf[256];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
		struct msghdr msg = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov,
				      .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
		struct in6_addr local;
		bool have_local;
		ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);
		socklen_t fl = msg.msg_namelen;
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			/* an ICMP error reported through recv: read the queue */
			read_errors(s);
			continue;
		}
		if (fl < sizeof(from) || from.sin6_family != AF_INET6 ||
		    ntohs(from.sin6_port) != d->config.cm_port)
			continue; /* efids talk from the CM port only */
		struct cm_wire_msg m;
		int r = cm_wire_decode(buf, (size_t)n, &m);
		if (r < 0) {
			log_debug("cm: dropped a malformed datagram (%zd bytes) in %s: %s", n, instance,
				  strerror(-r));
			continue;
		}
		have_local = local_address(&msg, &local);
		if (have_local)
			learn(s, m.tid, &local);
		cm_input(d, instance, &from, &m);
	}
	return 0;
}

static int sock_open(struct efid *d, struct cm_sock *s)
{
	int ns = netns_open(s->instance);
	if (ns < 0)
		return ns;
	struct stat st;
	if (fstat(ns, &st) < 0) {
		int e = -errno;
		close(ns);
		return e;
	}
	struct make_cm_socket m = { .port = d->config.cm_port, .fd = -1 };
	int r = netns_run(d->kernel->self_netns_fd, ns, make_cm_socket_in_netns, &m);
	close(ns);
	if (r < 0) {
		if (!s->warned)
			log_warning("cm: cannot open port %u in instance %s (%s): %s; connections to and from it fail until it can",
				    d->config.cm_port, s->instance, m.step ? m.step : "setns",
				    strerror(-r));
		s->warned = true;
		return r;
	}
	r = sd_event_add_io(d->event, &s->src, m.fd, EPOLLIN, on_datagram, s);
	if (r < 0) {
		close(m.fd);
		return r;
	}
	s->fd = m.fd;
	s->netns_ino = st.st_ino;
	s->warned = false;
	log_debug("cm: listening on port %u in instance %s", d->config.cm_port, s->instance);
	return 0;
}

static struct cm_sock *sock_find(struct efid *d, const char *instance)
{
	for (struct cm_sock *s = *cm_socks(d); s; s = s->next)
		if (strcmp(s->instance, instance) == 0)
			return s;
	return NULL;
}

static int count_attached(const struct store_iface *it, void *ud)
{
	unsigned *n = ud;
	*n += strcmp(it->state, "attached") == 0;
	return 0;
}

static int sync_instance(const char *instance, void *ud)
{
	struct efid *d = ud;
	struct cm_sock *s = sock_find(d, instance);
	struct stat st;
	unsigned attached = 0;

	/* Only where an interface is: the socket keeps the namespace alive. */
	store_iface_foreach(d->store, instance, count_attached, &attached);
	if (!attached)
		return 0;
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return 0;
		s->d = d;
		s->fd = -1;
		snprintf(s->instance, sizeof(s->instance), "%s", instance);
		s->next = *cm_socks(d);
		*cm_socks(d) = s;
	}
	s->seen = true;
	/* /run/netns/NAME, or a CNI pod's namespace named by its path */
	bool present = netns_stat(instance, &st) == 0;
	if (s->fd >= 0 && (!present || st.st_ino != s->netns_ino)) {
		/* the namespace went away or was made anew: the socket is in
		 * the old one */
		sd_event_source_disable_unref(s->src);
		s->src = NULL;
		close(s->fd);
		s->fd = -1;
	}
	if (s->fd < 0 && present)
		sock_open(d, s);
	return 0;
}

void cm_sync(struct efid *d)
{
	if (!d->cm || !d->store)
		return;
	for (struct cm_sock *s = *cm_socks(d); s; s = s->next)
		s->seen = false;
	store_instance_foreach(d->store, sync_instance, d);
	for (struct cm_sock **pp = cm_socks(d); *pp;) {
		struct cm_sock *s = *pp;
		if (!s->seen) {
			*pp = s->next;
			log_debug("cm: closing port %u in instance %s (no interfaces left)",
				  d->config.cm_port, s->instance);
			sock_free(s);
		} else {
			pp = &s->next;
		}
	}
}

int cm_sock_send(struct efid *d, const char *instance, const struct sockaddr_in6 *to,
		 const struct cm_wire_msg *msg)
{
	uint8_t buf[CM_WIRE_MAX];
	struct cm_sock *s = sock_find(d, instance);
	if (!s || s->fd < 0)
		return -ENOENT;
	int n = cm_wire_encode(msg, buf, sizeof(buf));
	if (n < 0)
		return n;
	struct sockaddr_in6 dst = *to;
	dst.sin6_port = htons((uint16_t)d->config.cm_port);
	struct iovec iov = { .iov_base = buf, .iov_len = (size_t)n };
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} ctl;
	struct msghdr mh = { .msg_name = &dst, .msg_namelen = sizeof(dst), .msg_iov = &iov, .msg_iovlen = 1 };
	unsigned i = (unsigned)(msg->tid % CM_LEARNED_SLOTS);
	if (s->learned[i].valid && s->learned[i].tid == msg->tid) {
		/* from the address this transaction was addressed to (IPV6_PKTINFO
		 * serves IPv4-mapped destinations too) */
		struct in6_pktinfo pi = { .ipi6_addr = s->learned[i].local };
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = IPPROTO_IPV6;
		cm->cmsg_type = IPV6_PKTINFO;
		cm->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
	}
	/* Errors reported here (an earlier ICMP error, no route) are the
	 * caller's to act on: this never calls back into cm.c. */
	for (int tries = 0;; tries++) {
		if (sendmsg(s->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
			return 0;
		/* A pending ICMP error of an earlier datagram (to anyone) is
		 * reported by the next call and then cleared; its details wait
		 * in the error queue.  Send again. */
		if (tries > 0 || (errno != ECONNREFUSED && errno != EHOSTUNREACH &&
				  errno != ENETUNREACH))
			return -errno;
	}
}

void cm_sock_close_all(struct efid *d)
{
	struct cm_sock **pp = cm_socks(d);
	while (*pp) {
		struct cm_sock *s = *pp;
		*pp = s->next;
		sock_free(s);
	}
}
