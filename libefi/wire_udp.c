/* SPDX-License-Identifier: MIT */
/*
 * The UDP backend of the wire layer: datagrams over one bound socket that
 * efid created in the instance's namespace (AF_INET6, IPV6_V6ONLY=0, so
 * IPv4 peers appear as IPv4-mapped addresses), moved in batches with
 * sendmmsg/recvmmsg so that a burst costs one system call, not one per
 * packet.  Nothing here blocks, allocates or locks on the data path.
 *
 * Error model (what the transport can rely on):
 *   - A full socket buffer or device queue (EAGAIN, ENOBUFS) ends the batch
 *     early: send_batch returns how many it consumed so far, possibly 0.
 *     The transport keeps the rest and offers them again later.
 *   - An error that belongs to one datagram (no route to that peer,
 *     EMSGSIZE, a firewall's EPERM, an unsupported address) drops that
 *     datagram and goes on with the next one: for the transport it is a
 *     lost packet, which retransmission handles; refusing the whole batch
 *     would let one bad peer stall every other QP.  Such datagrams count as
 *     consumed in the return value and in wire->dropped_send.
 *   - Only an error of the socket itself (EBADF, ENOTSOCK, EFAULT ...) is
 *     returned as -errno, and only when nothing was consumed before it.
 *   - On receive, a datagram larger than its buffer (MSG_TRUNC) is dropped
 *     (no valid packet is longer than the path MTU the buffers are sized
 *     for), so every packet returned is complete.
 *
 * Lanes: a wire may own several sockets, one per lane (efid binds lane L
 * of a context to its own port): each datagram says which lane it leaves
 * on, and says on receive which it arrived on.  Sending splits a batch into
 * runs of one lane (the transport sends in per-path bursts, so runs are
 * long); receiving asks an epoll set over the lanes which have data (one
 * system call) and reads those.  One lane is one socket, no epoll.
 *
 * Ownership: efi_wire_udp_create* take the descriptors only when they
 * succeed; on failure the caller still owns them (and closes them).
 *
 * Not thread-safe by itself (wire.h): the transport serialises calls.
 *
 * GSO on send: a run of consecutive datagrams to the same peer with equal
 * sizes (only the last may be shorter) -- what segmenting one message to
 * the path MTU produces -- goes down as one super-datagram with a
 * UDP_SEGMENT cmsg, which the kernel (or the NIC) cuts into the same
 * datagrams: the peer sees no difference, the sender traverses the stack
 * once per run instead of once per datagram.  If the kernel refuses a run
 * (EIO: the device cannot checksum for us; EINVAL/EMSGSIZE: a segment larger
 * than the path MTU) the run goes again as plain datagrams, and after EIO
 * GSO stays off for the socket.  EFI_UDP_GSO=0 in the environment turns it
 * off (for comparisons).
 *
 * GRO on receive is not done yet: it would be setsockopt(UDP_GRO) plus
 * splitting each buffer by the UDP_GRO cmsg's segment size in
 * udp_recv_chunk; it needs receive buffers of 64 KiB, which changes what
 * the transport passes in, so it waits for the transport's buffer pool.
 */
#include "config.h"

#include <errno.h>
#include <netinet/udp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "libefi/wire.h"

/* How many datagrams one sendmmsg/recvmmsg call moves at most: UIO_MAXIOV
 * is the kernel's limit, 64 keeps the per-wire arrays small (about 12 KiB)
 * while still amortising the system call over a burst. */
#define UDP_BATCH 64

/* How many per-datagram errors in a row one call skips before it gives
 * up and lets the caller come back: bounds the time one call can spend on
 * a batch where every peer is unreachable. */
#define UDP_MAX_SOFT_ERRORS 256

/* GSO runs: at most this many datagrams (the kernel's UDP_MAX_SEGMENTS,
 * 64 on older kernels) and bytes (an IP datagram's 64 KiB less headers,
 * with room to spare) in one super-datagram. */
#define UDP_GSO_MAX_SEGS 64
#define UDP_GSO_MAX_BYTES 60000

struct udp_wire {
	struct efi_wire base;
	int lane_fd[EFI_WIRE_MAX_LANES];
	unsigned nlanes;
	int epoll_fd;	/* over every lane (nlanes > 1), else -1 */
	int family;	/* AF_INET6 normally; AF_INET is translated */
	uint64_t dropped_send;	/* datagrams dropped for their own error */
	uint64_t dropped_recv;	/* truncated datagrams dropped */
	bool gso;		/* UDP_SEGMENT runs on send */
	uint64_t gso_runs;	/* super-datagrams sent (for debugging) */
	unsigned rr;		/* receive: the ready lane read first (rotates) */
	/* Per message of one sendmmsg/recvmmsg call.  On send, message m
	 * carries run_len[m] datagrams whose iovecs start at iov[first]. */
	struct mmsghdr msgs[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
	union {
		struct sockaddr_in6 in6;
		struct sockaddr_in in;
	} names[UDP_BATCH];
	unsigned run_len[UDP_BATCH];
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} ctrl[UDP_BATCH];
};

static inline struct udp_wire *to_udp(struct efi_wire *w)
{
	return (struct udp_wire *)w;
}

/* Errors that mean "the socket or the queue below it is full": stop here,
 * the caller offers the rest again later. */
static bool is_backpressure(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS ||
	       err == ENOMEM || err == EINTR;
}

/* Errors of the socket itself, which no retry of another datagram fixes. */
static bool is_fatal(int err)
{
	return err == EBADF || err == ENOTSOCK || err == EFAULT ||
	       err == EOPNOTSUPP || err == EDESTADDRREQ || err == ENOTCONN;
}

/* Fills names[i] with the kernel form of peer for this socket's family.
 * Returns the address length, or 0 if an AF_INET socket is asked to reach
 * a real IPv6 address (which it cannot). */
static socklen_t udp_fill_name(struct udp_wire *u, unsigned i, const struct sockaddr_in6 *peer)
{
	if (u->family == AF_INET6) {
		u->names[i].in6 = *peer;
		u->names[i].in6.sin6_family = AF_INET6;
		return sizeof(struct sockaddr_in6);
	}
	if (!IN6_IS_ADDR_V4MAPPED(&peer->sin6_addr))
		return 0;
	memset(&u->names[i].in, 0, sizeof(u->names[i].in));
	u->names[i].in.sin_family = AF_INET;
	u->names[i].in.sin_port = peer->sin6_port;
	memcpy(&u->names[i].in.sin_addr, &peer->sin6_addr.s6_addr[12], 4);
	return sizeof(struct sockaddr_in);
}

/* The received source address as the IPv6 form wire.h promises. */
static void udp_read_name(const struct udp_wire *u, unsigned i, socklen_t len,
			  struct sockaddr_in6 *peer)
{
	memset(peer, 0, sizeof(*peer));
	peer->sin6_family = AF_INET6;
	if (u->names[i].in6.sin6_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		*peer = u->names[i].in6;
	} else if (u->names[i].in.sin_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		peer->sin6_port = u->names[i].in.sin_port;
		peer->sin6_addr.s6_addr[10] = 0xff;
		peer->sin6_addr.s6_addr[11] = 0xff;
		memcpy(&peer->sin6_addr.s6_addr[12], &u->names[i].in.sin_addr, 4);
	}
}

static bool same_peer(const struct sockaddr_in6 *a, const struct sockaddr_in6 *b)
{
	return a->sin6_port == b->sin6_port && a->sin6_scope_id == b->sin6_scope_id &&
	       memcmp(&a->sin6_addr, &b->sin6_addr, sizeof(a->sin6_addr)) == 0;
}

/* How many of pkts[0..n) form one GSO run: equal lengths to one peer, the
 * last possibly shorter, none empty. */
static unsigned gso_run(const struct efi_wire_pkt *pkts, unsigned n)
{
	uint32_t seg = pkts[0].len;
	size_t total = seg;
	unsigned j = 1;

	if (seg == 0)
		return 1;
	while (j < n && j < UDP_GSO_MAX_SEGS && pkts[j - 1].len == seg &&
	       pkts[j].len > 0 && pkts[j].len <= seg &&
	       total + pkts[j].len <= UDP_GSO_MAX_BYTES &&
	       same_peer(&pkts[j].peer, &pkts[0].peer)) {
		total += pkts[j].len;
		j++;
	}
	return j;
}

/* Builds the messages for pkts[0..n): one per datagram, or one per GSO run
 * when use_gso.  Returns how many messages. */
static unsigned udp_build_send(struct udp_wire *u, struct efi_wire_pkt *pkts, unsigned n,
			       bool use_gso)
{
	unsigned m = 0;

	for (unsigned i = 0; i < n; m++) {
		struct msghdr *h = &u->msgs[m].msg_hdr;
		unsigned run = use_gso ? gso_run(pkts + i, n - i) : 1;

		memset(h, 0, sizeof(*h));
		for (unsigned k = i; k < i + run; k++) {
			u->iov[k].iov_base = pkts[k].buf;
			u->iov[k].iov_len = pkts[k].len;
		}
		h->msg_name = &u->names[m];
		h->msg_namelen = udp_fill_name(u, m, &pkts[i].peer);
		h->msg_iov = &u->iov[i];
		h->msg_iovlen = run;
		if (run > 1) {
			struct cmsghdr *c;
			uint16_t seg = (uint16_t)pkts[i].len;

			h->msg_control = u->ctrl[m].buf;
			h->msg_controllen = sizeof(u->ctrl[m].buf);
			c = CMSG_FIRSTHDR(h);
			c->cmsg_level = SOL_UDP;
			c->cmsg_type = UDP_SEGMENT;
			c->cmsg_len = CMSG_LEN(sizeof(seg));
			memcpy(CMSG_DATA(c), &seg, sizeof(seg));
		}
		u->run_len[m] = run;
		i += run;
	}
	return m;
}

/*
 * Sends pkts[0..n) (n <= UDP_BATCH) on socket fd with as few sendmmsg calls as the
 * kernel allows.  Returns how many datagrams were consumed (sent or dropped
 * for their own error), and sets *stop when the caller must not go on with
 * a further chunk now (backpressure), *fatal_err for a socket error, or
 * *gso_refused when the kernel refused a GSO run (the caller sends the rest
 * again without GSO).
 */
static unsigned udp_send_chunk(struct udp_wire *u, int fd, struct efi_wire_pkt *pkts, unsigned n,
			       bool use_gso, bool *stop, int *fatal_err, bool *gso_refused)
{
	unsigned nmsgs = udp_build_send(u, pkts, n, use_gso);
	unsigned done = 0, m = 0, soft_errors = 0;

	while (m < nmsgs) {
		int r;

		if (u->msgs[m].msg_hdr.msg_namelen == 0) {
			/* unreachable from this socket's family */
			u->dropped_send += u->run_len[m];
			done += u->run_len[m++];
			continue;
		}
		r = sendmmsg(fd, &u->msgs[m], nmsgs - m, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (r > 0) {
			/* sendmmsg stops at the first message that fails and
			 * forgets why; the next round finds out. */
			for (int k = 0; k < r; k++) {
				u->gso_runs += u->run_len[m] > 1;
				done += u->run_len[m++];
			}
			continue;
		}
		if (r == 0 || is_backpressure(errno)) {
			*stop = true;
			break;
		}
		if (u->run_len[m] > 1 && (errno == EIO || errno == EINVAL || errno == EMSGSIZE ||
					  errno == ENOPROTOOPT)) {
			if (errno == EIO || errno == ENOPROTOOPT)
				u->gso = false;	/* this device or kernel: for good */
			*gso_refused = true;
			break;
		}
		if (is_fatal(errno)) {
			*fatal_err = errno;
			*stop = true;
			break;
		}
		/* this message's own error: drop its datagrams, go on */
		u->dropped_send += u->run_len[m];
		done += u->run_len[m++];
		if (++soft_errors >= UDP_MAX_SOFT_ERRORS) {
			*stop = true;
			break;
		}
	}
	return done;
}

static inline unsigned lane_of(const struct udp_wire *u, const struct efi_wire_pkt *p)
{
	return p->lane < u->nlanes ? p->lane : 0;
}

static int udp_send_batch(struct efi_wire *w, struct efi_wire_pkt *pkts, unsigned n)
{
	struct udp_wire *u = to_udp(w);
	unsigned done = 0;
	int fatal_err = 0;
	bool gso_refused = false;

	while (done < n) {
		unsigned lane = lane_of(u, &pkts[done]), chunk = 1;
		bool stop = false;

		/* a run of one lane, at most one sendmmsg's worth */
		while (done + chunk < n && chunk < UDP_BATCH && lane_of(u, &pkts[done + chunk]) == lane)
			chunk++;
		done += udp_send_chunk(u, u->lane_fd[lane], pkts + done, chunk, u->gso && !gso_refused,
				       &stop, &fatal_err, &gso_refused);
		if (stop)
			break;
	}
	if (done == 0 && fatal_err)
		return -fatal_err;
	return (int)done;
}

/*
 * Receives into pkts[0..n) (n <= UDP_BATCH).  Returns how many complete
 * datagrams now sit at the front of pkts; sets *more when the socket may
 * hold further datagrams (the kernel filled every slot), and *err for an
 * error that ended the call.
 *
 * (GRO goes here: with UDP_GRO on, one buffer holds several datagrams of
 * the cmsg's segment size, to be split into consecutive pkts.)
 */
static unsigned udp_recv_chunk(struct udp_wire *u, int fd, struct efi_wire_pkt *pkts, unsigned n,
			       bool *more, int *err)
{
	unsigned kept = 0;
	int r;

	for (unsigned i = 0; i < n; i++) {
		struct msghdr *h = &u->msgs[i].msg_hdr;

		u->iov[i].iov_base = pkts[i].buf;
		u->iov[i].iov_len = pkts[i].cap;
		memset(h, 0, sizeof(*h));
		memset(&u->names[i], 0, sizeof(u->names[i]));
		h->msg_name = &u->names[i];
		h->msg_namelen = sizeof(u->names[i]);
		h->msg_iov = &u->iov[i];
		h->msg_iovlen = 1;
	}
	r = recvmmsg(fd, u->msgs, n, MSG_DONTWAIT, NULL);
	if (r < 0) {
		*err = errno;
		return 0;
	}
	*more = (unsigned)r == n;
	for (unsigned i = 0; i < (unsigned)r; i++) {
		const struct msghdr *h = &u->msgs[i].msg_hdr;
		uint32_t len = u->msgs[i].msg_len;

		if (h->msg_flags & MSG_TRUNC) {
			u->dropped_recv++;
			continue;
		}
		if (kept != i) {
			/* Close the gap a dropped datagram left.  Rare (only
			 * oversize datagrams get here), so a copy is fine and
			 * the caller's buffers stay where it put them. */
			if (len > pkts[kept].cap) {
				u->dropped_recv++;
				continue;
			}
			memcpy(pkts[kept].buf, pkts[i].buf, len);
		}
		pkts[kept].len = len;
		udp_read_name(u, i, h->msg_namelen, &pkts[kept].peer);
		kept++;
	}
	return kept;
}

/* Reads lane's socket into pkts[0..n).  Returns how many arrived
 * or -errno for an error of the socket itself. */
static int udp_recv_lane(struct udp_wire *u, unsigned lane, struct efi_wire_pkt *pkts, unsigned n)
{
	unsigned got = 0, soft_errors = 0;

	while (got < n) {
		unsigned chunk = n - got < UDP_BATCH ? n - got : UDP_BATCH;
		bool more = false;
		int err = 0;

		got += udp_recv_chunk(u, u->lane_fd[lane], pkts + got, chunk, &more, &err);
		if (err == 0) {
			if (!more)
				break;	/* the socket is empty: save a syscall */
			continue;
		}
		if (is_backpressure(err))
			break;
		if (is_fatal(err) || err == EINVAL) {
			if (!got)
				return -err;
			break;
		}
		/* An ICMP error reported on the socket (ECONNREFUSED,
		 * EHOSTUNREACH ...): reading it cleared it, go on. */
		if (++soft_errors >= UDP_MAX_SOFT_ERRORS)
			break;
	}
	for (unsigned i = 0; i < got; i++)
		pkts[i].lane = (uint8_t)lane;
	return (int)got;
}

static int udp_recv_batch(struct efi_wire *w, struct efi_wire_pkt *pkts, unsigned n)
{
	struct udp_wire *u = to_udp(w);
	struct epoll_event ev[EFI_WIRE_MAX_LANES];
	unsigned got = 0;
	int ready, r;

	if (u->nlanes == 1)
		return udp_recv_lane(u, 0, pkts, n);
	/* Which lanes have data: one call, whatever the lane count. */
	ready = epoll_wait(u->epoll_fd, ev, (int)u->nlanes, 0);
	if (ready < 0)
		return errno == EINTR ? 0 : -errno;
	if (ready <= 0)
		return 0;
	/* Each ready lane gets its share of the batch first, starting from a
	 * rotating one, then what is left goes to those that filled theirs.
	 * Reading each lane to the end in epoll's order (which stays the
	 * same while they all stay ready) let the first lanes fill every
	 * batch: the last one's packets waited milliseconds, its path's RTT
	 * grew tenfold, and its oldest packet held the whole send window
	 * (EFI_SEND_WINDOW spans all paths) — 4 lanes ran slower than 1. */
	unsigned share = (n + (unsigned)ready - 1) / (unsigned)ready;
	bool full[EFI_WIRE_MAX_LANES] = { false };
	unsigned start = u->rr++ % (unsigned)ready;
	for (int pass = 0; pass < 2 && got < n; pass++) {
		for (unsigned k = 0; k < (unsigned)ready && got < n; k++) {
			unsigned i = (start + k) % (unsigned)ready, lane = ev[i].data.u32, want;
			if (lane >= u->nlanes || (pass && !full[i]))
				continue;
			want = pass ? n - got : (share < n - got ? share : n - got);
			r = udp_recv_lane(u, lane, pkts + got, want);
			if (r < 0)
				return got ? (int)got : r;
			got += (unsigned)r;
			full[i] = (unsigned)r == want;
		}
	}
	return (int)got;
}

static int udp_poll_fd(const struct efi_wire *w)
{
	const struct udp_wire *u = (const struct udp_wire *)w;
	return u->nlanes > 1 ? u->epoll_fd : u->lane_fd[0];
}

static void udp_destroy(struct efi_wire *w)
{
	struct udp_wire *u;

	if (!w)
		return;
	u = to_udp(w);
	for (unsigned i = 0; i < u->nlanes; i++)
		close(u->lane_fd[i]);
	if (u->epoll_fd >= 0)
		close(u->epoll_fd);
	free(u);
}

static const struct efi_wire_ops udp_ops = {
	.send_batch = udp_send_batch,
	.recv_batch = udp_recv_batch,
	.poll_fd = udp_poll_fd,
	.destroy = udp_destroy,
};

/* The socket's family when it is a datagram socket we can use, else 0
 * with errno. */
static int usable_family(int fd)
{
	int type = 0, family = 0;
	socklen_t len;

	if (fd < 0) {
		errno = EBADF;
		return 0;
	}
	len = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
		return 0;	/* EBADF, ENOTSOCK */
	len = sizeof(family);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &len) < 0)
		return 0;
	if (type != SOCK_DGRAM || (family != AF_INET6 && family != AF_INET)) {
		errno = EINVAL;
		return 0;
	}
	return family;
}

struct efi_wire *efi_wire_udp_create_lanes(const int *fds, unsigned n)
{
	struct udp_wire *u;
	const char *gso_env;
	int family = 0;

	if (!fds || n == 0 || n > EFI_WIRE_MAX_LANES) {
		errno = EINVAL;
		return NULL;
	}
	/* Refuse what would fail on every packet later: better one clear
	 * error at open time. */
	for (unsigned i = 0; i < n; i++) {
		int f = usable_family(fds[i]);
		if (!f)
			return NULL;
		if (family && f != family) {
			errno = EINVAL;
			return NULL;
		}
		family = f;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->base.ops = &udp_ops;
	u->epoll_fd = -1;
	if (n > 1) {
		u->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
		for (unsigned i = 0; u->epoll_fd >= 0 && i < n; i++) {
			struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };
			if (epoll_ctl(u->epoll_fd, EPOLL_CTL_ADD, fds[i], &ev) < 0) {
				int e = errno;
				close(u->epoll_fd);
				errno = e;
				u->epoll_fd = -1;
			}
		}
		if (u->epoll_fd < 0) {
			int e = errno;
			free(u);
			errno = e;
			return NULL;
		}
	}
	for (unsigned i = 0; i < n; i++)
		u->lane_fd[i] = fds[i];
	u->nlanes = n;
	u->family = family;
	gso_env = getenv("EFI_UDP_GSO");
	u->gso = !(gso_env && strcmp(gso_env, "0") == 0);
	/* The socket buffers stay as efid sized them (SO_*BUFFORCE). */
	return &u->base;
}

struct efi_wire *efi_wire_udp_create(int fd)
{
	return efi_wire_udp_create_lanes(&fd, 1);
}
