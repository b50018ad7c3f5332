/* SPDX-License-Identifier: MIT */
/*
 * The wire layer: how libefi's transport moves datagrams.  The transport
 * sees only this interface, so other backends (AF_XDP rings efid sets up,
 * shared memory between instances on one host) can be added without
 * touching it.  Backends are not thread-safe by themselves: the transport
 * serialises calls on one efi_wire (names the lock it holds at each call).
 */
#ifndef EFI_WIRE_H
#define EFI_WIRE_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct efi_wire;

/* One datagram.  For send: buf/len/peer/lane are inputs.  For recv: buf
 * and cap are inputs, len, peer and lane outputs, and buf may be changed
 * to point at the backend's own memory holding the datagram (the UDP
 * backend's GRO buffers): the caller's buffer is then left untouched, and
 * what buf points to stays valid only until the next recv_batch on the
 * same wire.  cap bounds len either way. */
struct efi_wire_pkt {
	void *buf;
	uint32_t len;
	uint32_t cap;
	/* Send only: payload_len bytes at payload follow buf[0..len) in the
	 * datagram (0: none), so that data leaves from where it lies (the
	 * application's registered memory) without a copy into buf first.
	 * Read during send_batch only. */
	const void *payload;
	uint32_t payload_len;
	struct sockaddr_in6 peer;   /* IPv4 peers as IPv4-mapped IPv6 */
	uint8_t lane;               /* the local endpoint (source port) it leaves or arrived on */
};

/* Lanes one wire may have (libefi's EFI_MAX_PATHS). */
#define EFI_WIRE_MAX_LANES 8u

struct efi_wire_ops {
	/* Sends up to n datagrams without blocking.  Returns how many were
	 * handed to the kernel (0 when the socket buffer is full), or -errno. */
	int (*send_batch)(struct efi_wire *w, struct efi_wire_pkt *pkts, unsigned n);
	/* Receives up to n datagrams without blocking.  Returns how many
	 * arrived (0 when none), or -errno. */
	int (*recv_batch)(struct efi_wire *w, struct efi_wire_pkt *pkts, unsigned n);
	/* A descriptor that polls readable when recv_batch has something
	 * new from the kernel. */
	int (*poll_fd)(const struct efi_wire *w);
	/* True when recv_batch holds datagrams it received and has not handed
	 * out yet (a GRO run longer than the caller's batch): poll_fd does not
	 * show those.  NULL: never.  May be called without the transport's
	 * lock (a racy hint: it only decides whether to sleep). */
	bool (*pending)(const struct efi_wire *w);
	/* Frees the backend and closes what it owns; accepts NULL. */
	void (*destroy)(struct efi_wire *w);
};

struct efi_wire {
	const struct efi_wire_ops *ops;
	/* recv_batch's peer is each datagram's real source address and port
	 * (a UDP backend): the transport then takes a QP without a connection
	 * key only from its peer's lane ports (xport.c, from_peer_lane).
	 * In-memory test backends leave it false. */
	bool source_ports;
};

static inline int efi_wire_send(struct efi_wire *w, struct efi_wire_pkt *p, unsigned n)
{
	return w->ops->send_batch(w, p, n);
}
static inline int efi_wire_recv(struct efi_wire *w, struct efi_wire_pkt *p, unsigned n)
{
	return w->ops->recv_batch(w, p, n);
}
static inline int efi_wire_fd(const struct efi_wire *w)
{
	return w->ops->poll_fd(w);
}
/* Bytes of the datagram p describes (send: header part and payload). */
static inline uint32_t efi_wire_pkt_size(const struct efi_wire_pkt *p)
{
	return p->len + p->payload_len;
}
/* Copies the datagram p describes to dst (efi_wire_pkt_size bytes), for
 * backends that keep datagrams. */
static inline void efi_wire_pkt_copy(const struct efi_wire_pkt *p, void *dst)
{
	if (p->len)
		memcpy(dst, p->buf, p->len);
	if (p->payload_len)
		memcpy((uint8_t *)dst + p->len, p->payload, p->payload_len);
}
static inline bool efi_wire_pending(const struct efi_wire *w)
{
	return w->ops->pending && w->ops->pending(w);
}
static inline void efi_wire_destroy(struct efi_wire *w)
{
	if (w)
		w->ops->destroy(w);
}

/* A UDP backend over bound datagram sockets (AF_INET6, dual-stack), using
 * sendmmsg/recvmmsg: fds[i] is lane i (one source port, i.e. one path
 * through an ECMP fabric).  Takes ownership of the descriptors when it
 * succeeds.  NULL + errno on failure (EINVAL: n is 0 or above
 * EFI_WIRE_MAX_LANES, or a descriptor is not a datagram socket of one
 * family). */
struct efi_wire *efi_wire_udp_create_lanes(const int *fds, unsigned n);
/* One lane: efi_wire_udp_create_lanes(&fd, 1). */
struct efi_wire *efi_wire_udp_create(int fd);

/*
 * Wraps a backend with a fault injector for tests, configured by a spec
 * such as "loss=0.01,dup=0.001,reorder=0.01,delay_us=0,seed=42" (the
 * transport reads it from $EFI_FAULT).  Applies to both directions.
 * Takes ownership of inner.  NULL + errno (EINVAL for a bad spec).
 */
struct efi_wire *efi_wire_fault_wrap(struct efi_wire *inner, const char *spec);

/* Counters of the fault injector (for tests); zero for other backends. */
struct efi_wire_fault_stats {
	uint64_t seen, dropped, duplicated, reordered;
};
void efi_wire_fault_stats(const struct efi_wire *w, struct efi_wire_fault_stats *out);

#endif
