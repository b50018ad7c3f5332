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
 * long); receiving reads lane 0 (where every path of a connection arrives)
 * and, every UDP_EPOLL_EVERY-th call or while another lane has had data,
 * asks an epoll set over the lanes which have data (one system call) and
 * reads those.  One lane is one socket, no epoll.
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
 * GRO on receive: each socket has UDP_GRO on, so a super-datagram (what a
 * peer's GSO run becomes, or what the kernel's GRO coalesced) arrives in one
 * piece with a UDP_GRO cmsg giving its segment size.  The backend receives
 * into its own 64 KiB buffers and hands out one efi_wire_pkt per original
 * datagram, pointing into them (wire.h: valid until the next recv_batch);
 * datagrams that do not fit the caller's batch wait for its next call.  The
 * receiver then traverses the stack once per run, as the sender does.
 * EFI_UDP_GRO=0 turns it off (for comparisons); a kernel without UDP_GRO
 * delivers datagrams one by one, which the same code handles.
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
/* Two datagrams shorter than this go as two, not as a GSO run (gso_run). */
#define UDP_GSO_MIN_SEG 512u

/* With several lanes, a receive asks epoll which lanes have data only
 * every UDP_EPOLL_EVERY-th call (or on every call for as long after another
 * lane had data); the calls between read lane 0 directly.  Every path of a
 * connection arrives on the peer's lane 0 (xport.c, address_pkt), so the
 * others hear only from peers with more lanes than ours, and an epoll_wait
 * before each recvmmsg was a second system call per arrival: 0.35 us of a
 * 4.4 us half round trip against EFI_LANES=1 (issue 15). */
#define UDP_EPOLL_EVERY 8u

/* A receive buffer holds the largest UDP datagram (or GRO super-datagram,
 * which the kernel also keeps below 64 KiB).  UDP_BATCH of them are 4 MiB
 * of address space per wire, touched only as far as datagrams fill them. */
#define UDP_RX_BUF 65536u

/* A received message (one datagram, or a GRO super-datagram) not yet fully
 * handed to the caller. */
struct udp_rx_msg {
	uint8_t *next;		/* its next datagram */
	uint32_t left;		/* bytes from there */
	uint32_t seg;		/* datagram size (the last may be shorter) */
	struct sockaddr_in6 peer;
	uint8_t lane;
};

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
	unsigned calls;		/* receive calls (lane 0 alone between epoll looks) */
	unsigned others_hot;	/* calls left that ask epoll: another lane had data */
	bool gro;		/* UDP_GRO on every lane */
	uint8_t *rxmem;		/* UDP_BATCH × UDP_RX_BUF */
	unsigned rx_used;	/* buffers filled since nothing was pending */
	unsigned pending;	/* messages received and not fully handed out */
	struct {		/* per lane, in arrival order */
		struct udp_rx_msg msg[UDP_BATCH];
		unsigned head, count;
	} pend[EFI_WIRE_MAX_LANES];
	/* Per message of one sendmmsg/recvmmsg call.  On send, message m
	 * carries run_len[m] datagrams whose iovecs start at iov[first]. */
	struct mmsghdr msgs[UDP_BATCH];
	struct iovec iov[2 * UDP_BATCH];	/* send: header part and payload */
	union {
		struct sockaddr_in6 in6;
		struct sockaddr_in in;
	} names[UDP_BATCH];
	unsigned run_len[UDP_BATCH];
	union {
		char buf[CMSG_SPACE(sizeof(int))];	/* UDP_SEGMENT: u16; UDP_GRO: int */
		struct cmsghdr align;
	} ctrl[UDP_BATCH];
	/* Receive's own messages, set up once (udp_rx_init): a call only
	 * points them at free buffers and resets what the kernel wrote. */
	struct mmsghdr rx_msgs[UDP_BATCH];
	struct iovec rx_iov[UDP_BATCH];
	union {
		struct sockaddr_in6 in6;
		struct sockaddr_in in;
	} rx_names[UDP_BATCH];
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} rx_ctrl[UDP_BATCH];
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

/* The received source address (name, len) as the IPv6 form wire.h promises. */
static void udp_read_name(const void *name, socklen_t len, struct sockaddr_in6 *peer)
{
	const struct sockaddr_in6 *in6 = name;
	const struct sockaddr_in *in = name;

	memset(peer, 0, sizeof(*peer));
	peer->sin6_family = AF_INET6;
	if (in6->sin6_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		*peer = *in6;
	} else if (in->sin_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		peer->sin6_port = in->sin_port;
		peer->sin6_addr.s6_addr[10] = 0xff;
		peer->sin6_addr.s6_addr[11] = 0xff;
		memcpy(&peer->sin6_addr.s6_addr[12], &in->sin_addr, 4);
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
	uint32_t seg = efi_wire_pkt_size(&pkts[0]);
	size_t total = seg;
	unsigned j = 1;

	if (seg == 0)
		return 1;
	while (j < n && j < UDP_GSO_MAX_SEGS && efi_wire_pkt_size(&pkts[j - 1]) == seg &&
	       efi_wire_pkt_size(&pkts[j]) > 0 && efi_wire_pkt_size(&pkts[j]) <= seg &&
	       total + efi_wire_pkt_size(&pkts[j]) <= UDP_GSO_MAX_BYTES &&
	       same_peer(&pkts[j].peer, &pkts[0].peer)) {
		total += efi_wire_pkt_size(&pkts[j]);
		j++;
	}
	/* A pair of small datagrams -- a one-packet request and the ACK
	 * right behind it, the ping-pong's batch -- went slower as one
	 * super-datagram than as two: write_lat 8 B 6.2 against 4.0 us half
	 * round trip with EFI_UDP_GSO=0 (issue 15).  Two full segments still
	 * gain (a 2 KiB send_lat: 7.3 against 8.2 us), as do longer runs. */
	if (j == 2 && seg < UDP_GSO_MIN_SEG)
		return 1;
	return j;
}

/* Builds the messages for pkts[0..n): one per datagram, or one per GSO run
 * when use_gso.  Returns how many messages. */
static unsigned udp_build_send(struct udp_wire *u, struct efi_wire_pkt *pkts, unsigned n,
			       bool use_gso)
{
	unsigned m = 0, v = 0;

	for (unsigned i = 0; i < n; m++) {
		struct msghdr *h = &u->msgs[m].msg_hdr;
		unsigned run = use_gso ? gso_run(pkts + i, n - i) : 1, first = v;

		memset(h, 0, sizeof(*h));
		for (unsigned k = i; k < i + run; k++) {
			/* the kernel cuts a GSO run by bytes, whatever the
			 * iovecs: a datagram may be two of them */
			if (pkts[k].len) {
				u->iov[v].iov_base = pkts[k].buf;
				u->iov[v++].iov_len = pkts[k].len;
			}
			if (pkts[k].payload_len) {
				u->iov[v].iov_base = (void *)(uintptr_t)pkts[k].payload;
				u->iov[v++].iov_len = pkts[k].payload_len;
			}
		}
		h->msg_name = &u->names[m];
		h->msg_namelen = udp_fill_name(u, m, &pkts[i].peer);
		h->msg_iov = &u->iov[first];
		h->msg_iovlen = v - first;
		if (run > 1) {
			struct cmsghdr *c;
			uint16_t seg = (uint16_t)efi_wire_pkt_size(&pkts[i]);

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

/* The segment size a UDP_GRO cmsg gives, or 0 when there is none. */
static uint32_t gro_segment(const struct msghdr *h)
{
	for (const struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR((struct msghdr *)h, (struct cmsghdr *)c)) {
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO &&
		    c->cmsg_len >= CMSG_LEN(sizeof(int))) {
			int seg;
			memcpy(&seg, CMSG_DATA(c), sizeof(seg));
			return seg > 0 ? (uint32_t)seg : 0;
		}
	}
	return 0;
}

/*
 * Receives up to n messages (n <= UDP_BATCH - u->rx_used) from lane's
 * socket into the next free buffers and appends them to the pending list.
 * Returns how many messages arrived; sets *more when the socket may hold
 * further ones (the kernel filled every slot), and *err for an error that
 * ended the call.
 */
static unsigned udp_recv_chunk(struct udp_wire *u, unsigned lane, unsigned n, bool *more, int *err)
{
	int fd = u->lane_fd[lane];
	int r;

	for (unsigned i = 0; i < n; i++) {
		struct msghdr *h = &u->rx_msgs[i].msg_hdr;

		u->rx_iov[i].iov_base = u->rxmem + (size_t)(u->rx_used + i) * UDP_RX_BUF;
		h->msg_namelen = sizeof(u->rx_names[i]);
		h->msg_controllen = u->gro ? sizeof(u->rx_ctrl[i].buf) : 0;
		h->msg_flags = 0;
	}
	r = recvmmsg(fd, u->rx_msgs, n, MSG_DONTWAIT, NULL);
	if (r < 0) {
		*err = errno;
		return 0;
	}
	*more = (unsigned)r == n;
	for (unsigned i = 0; i < (unsigned)r; i++) {
		const struct msghdr *h = &u->rx_msgs[i].msg_hdr;
		uint32_t len = u->rx_msgs[i].msg_len, seg;
		struct udp_rx_msg *m;

		if (h->msg_flags & MSG_TRUNC) {
			u->dropped_recv++;
			continue;
		}
		seg = u->gro ? gro_segment(h) : 0;
		m = &u->pend[lane].msg[(u->pend[lane].head + u->pend[lane].count++) % UDP_BATCH];
		/* one writer (under the transport's lock), racy readers */
		__atomic_store_n(&u->pending, u->pending + 1, __ATOMIC_RELAXED);
		m->next = u->rx_iov[i].iov_base;
		m->left = len;
		m->seg = seg && seg < len ? seg : len;
		m->lane = (uint8_t)lane;
		udp_read_name(&u->rx_names[i], h->msg_namelen, &m->peer);
	}
	u->rx_used += (unsigned)r;
	return (unsigned)r;
}

/* Hands up to n pending datagrams of lane to pkts[0..n); returns how many.
 * A datagram longer than its slot's cap is dropped (wire.h: only complete
 * datagrams are returned). */
static unsigned udp_hand_out_lane(struct udp_wire *u, unsigned lane, struct efi_wire_pkt *pkts,
				  unsigned n)
{
	unsigned out = 0;

	while (out < n && u->pend[lane].count) {
		struct udp_rx_msg *m = &u->pend[lane].msg[u->pend[lane].head];
		uint32_t len = m->left < m->seg ? m->left : m->seg;

		if (len <= pkts[out].cap) {
			pkts[out].buf = m->next;
			pkts[out].len = len;
			pkts[out].peer = m->peer;
			pkts[out].lane = m->lane;
			out++;
		} else {
			u->dropped_recv++;
		}
		m->next += len;
		m->left -= len;
		if (m->left == 0) {
			u->pend[lane].head = (u->pend[lane].head + 1) % UDP_BATCH;
			u->pend[lane].count--;
			__atomic_store_n(&u->pending, u->pending - 1, __ATOMIC_RELAXED);
		}
	}
	return out;
}

/*
 * Hands pending datagrams to pkts[0..n); returns how many.  Fairly across
 * lanes: each lane with datagrams gets its share of n first, starting from
 * a rotating one, then what is left goes to those with more.  Reading each
 * lane to the end in turn let a lane with a backlog fill every batch: the
 * others' packets waited milliseconds, their paths' RTT grew tenfold, and
 * the oldest packet held the whole send window (EFI_SEND_WINDOW spans all
 * paths) — 4 lanes ran slower than 1.
 */
static unsigned udp_hand_out(struct udp_wire *u, struct efi_wire_pkt *pkts, unsigned n)
{
	unsigned out = 0, with = 0, share, start = u->rr++;

	for (unsigned l = 0; l < u->nlanes; l++)
		with += u->pend[l].count > 0;
	if (with) {
		share = (n + with - 1) / with;
		for (int pass = 0; pass < 2 && out < n; pass++) {
			for (unsigned k = 0; k < u->nlanes && out < n; k++) {
				unsigned l = (start + k) % u->nlanes, want = n - out;
				if (!pass && share < want)
					want = share;
				out += udp_hand_out_lane(u, l, pkts + out, want);
			}
		}
	}
	return out;
}

/* Reads up to want messages from lane's socket into the pending list.
 * Returns how many arrived or -errno for an error of the socket itself. */
static int udp_recv_lane(struct udp_wire *u, unsigned lane, unsigned want)
{
	unsigned got = 0, soft_errors = 0;

	if (want > UDP_BATCH - u->rx_used)
		want = UDP_BATCH - u->rx_used;
	while (got < want) {
		bool more = false;
		int err = 0;

		got += udp_recv_chunk(u, lane, want - got, &more, &err);
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
	return (int)got;
}

static int udp_recv_batch(struct efi_wire *w, struct efi_wire_pkt *pkts, unsigned n)
{
	struct udp_wire *u = to_udp(w);
	struct epoll_event ev[EFI_WIRE_MAX_LANES];
	unsigned got, msgs = 0, room;
	int ready, r;

	/* The caller is done with what the last call handed out (wire.h):
	 * with nothing pending, every buffer is free again.  What the last
	 * call received beyond its batch goes first, and its buffers stay
	 * untouched until a later call (new datagrams go to free ones). */
	if (!u->pending)
		u->rx_used = 0;
	got = udp_hand_out(u, pkts, n);
	if (got == n || n == 0)
		return (int)got;
	room = n - got;
	if (u->nlanes == 1) {
		r = udp_recv_lane(u, 0, room);
		if (r < 0)
			return got ? (int)got : r;
		return (int)(got + udp_hand_out(u, pkts + got, room));
	}
	if (!u->others_hot && u->calls++ % UDP_EPOLL_EVERY) {
		r = udp_recv_lane(u, 0, room);
		if (r < 0)
			return got ? (int)got : r;
		return (int)(got + udp_hand_out(u, pkts + got, room));
	}
	if (u->others_hot)
		u->others_hot--;
	/* Which lanes have data: one call, whatever the lane count. */
	ready = epoll_wait(u->epoll_fd, ev, (int)u->nlanes, 0);
	if (ready < 0)
		return got ? (int)got : (errno == EINTR ? 0 : -errno);
	for (int i = 0; i < ready; i++)
		if (ev[i].data.u32 != 0)
			u->others_hot = UDP_EPOLL_EVERY;
	/* Each ready lane may fill its share of the batch's messages, then
	 * those that filled theirs the rest; udp_hand_out then shares the
	 * datagrams fairly. */
	unsigned share = ready ? (room + (unsigned)ready - 1) / (unsigned)ready : 0;
	bool full[EFI_WIRE_MAX_LANES] = { false };
	for (int pass = 0; pass < 2 && msgs < room && ready > 0; pass++) {
		for (unsigned i = 0; i < (unsigned)ready && msgs < room; i++) {
			unsigned lane = ev[i].data.u32, want;
			if (lane >= u->nlanes || (pass && !full[i]))
				continue;
			want = pass ? room - msgs : (share < room - msgs ? share : room - msgs);
			r = udp_recv_lane(u, lane, want);
			if (r < 0) {
				if (!msgs && !got)
					return r;
				pass = 2;
				break;
			}
			msgs += (unsigned)r;
			full[i] = (unsigned)r == want;
		}
	}
	return (int)(got + udp_hand_out(u, pkts + got, room));
}

static int udp_poll_fd(const struct efi_wire *w)
{
	const struct udp_wire *u = (const struct udp_wire *)w;
	return u->nlanes > 1 ? u->epoll_fd : u->lane_fd[0];
}

/* Sets up the receive messages: each its own name, control and iovec. */
static void udp_rx_init(struct udp_wire *u)
{
	for (unsigned i = 0; i < UDP_BATCH; i++) {
		struct msghdr *h = &u->rx_msgs[i].msg_hdr;

		u->rx_iov[i].iov_len = UDP_RX_BUF;
		h->msg_name = &u->rx_names[i];
		h->msg_iov = &u->rx_iov[i];
		h->msg_iovlen = 1;
		h->msg_control = u->rx_ctrl[i].buf;
	}
}

static bool udp_pending(const struct efi_wire *w)
{
	const struct udp_wire *u = (const struct udp_wire *)w;
	return __atomic_load_n(&u->pending, __ATOMIC_RELAXED) != 0;
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
	free(u->rxmem);
	free(u);
}

static const struct efi_wire_ops udp_ops = {
	.send_batch = udp_send_batch,
	.recv_batch = udp_recv_batch,
	.poll_fd = udp_poll_fd,
	.pending = udp_pending,
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
	const char *gso_env, *gro_env;
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
	/* malloc, not calloc: pages are touched only as datagrams fill them */
	u->rxmem = malloc((size_t)UDP_BATCH * UDP_RX_BUF);
	if (!u->rxmem) {
		free(u);
		errno = ENOMEM;
		return NULL;
	}
	u->base.ops = &udp_ops;
	u->base.source_ports = true;
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
			free(u->rxmem);
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
	gro_env = getenv("EFI_UDP_GRO");
	u->gro = !(gro_env && strcmp(gro_env, "0") == 0);
	for (unsigned i = 0; u->gro && i < n; i++) {
		int on = 1;
		/* a kernel without UDP_GRO: datagrams come one by one */
		if (setsockopt(fds[i], SOL_UDP, UDP_GRO, &on, sizeof(on)) < 0)
			u->gro = false;
	}
	if (!u->gro) {
		for (unsigned i = 0; i < n; i++) {
			int off = 0;
			setsockopt(fds[i], SOL_UDP, UDP_GRO, &off, sizeof(off));
		}
	}
	udp_rx_init(u);
	/* The socket buffers stay as efid sized them (SO_*BUFFORCE). */
	return &u->base;
}

struct efi_wire *efi_wire_udp_create(int fd)
{
	return efi_wire_udp_create_lanes(&fd, 1);
}
