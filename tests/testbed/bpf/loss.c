/* SPDX-License-Identifier: MIT */
/*
 * The testbed's packet dropper and duplicator (tests/testbed/testbed.sh
 * `loss`, `dup`): a tc cls_bpf direct-action program for the ingress of one
 * end of a veth (it also works on an egress).  This kernel has no netem, so
 * random loss is made here.
 *
 * Each attachment has its own two maps, pinned by testbed.sh so that the
 * rates change while traffic runs (bpftool map update):
 *   thresholds  [TH_LOSS] = p * 2^32: a packet is dropped when a 32-bit
 *               random number is below it; 0 passes everything, 2^32
 *               (p = 1) drops everything (a black hole, carrier up).
 *               [TH_DUP], the same for sending a packet twice.
 *               [TH_HOLE_PORT]: a UDP destination port (0: none) whose
 *               IPv4 datagrams are all dropped: a black hole for some
 *               four-tuples only, as an ECMP fabric makes of a dead link
 *               that it hashed those flows onto.
 *   loss_stats  per-CPU counters (enum loss_stat); testbed.sh sums them to
 *               print the loss rate that was really applied.
 *
 * Only IPv4 and IPv6 packets are dropped or duplicated (and counted): ARP
 * passes, because a lost ARP request stalls a neighbour's resolution for a
 * second while the kernel drops all but three queued packets, which turns
 * "20% loss" into a burst lost whole (t-testbed saw 96%).  The loss the
 * tests ask for is data loss, which the counters then measure exactly.
 *
 * A GSO super-packet would be dropped whole (tc egress sees it before it
 * is segmented), so the testbed drops where packets are wire-sized: on the
 * ingress of the receiving end of a port whose sending end segments
 * (gso_max_segs 1 on the routers' uplinks), while the instances' own
 * offloads stay as the kernel sets them.  The segment counters show when a
 * super-packet got through all the same.
 *
 * Build: clang -O2 -g -target bpf -I/usr/include/$(gcc -print-multiarch) \
 *            -c loss.c -o loss.o
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

enum threshold { TH_LOSS, TH_DUP, TH_HOLE_PORT, TH_COUNT };

enum loss_stat {
	ST_PACKETS,           /* skbs seen (duplicates not included) */
	ST_PACKETS_DROPPED,
	ST_SEGMENTS,          /* wire packets seen: a GSO skb counts gso_segs */
	ST_SEGMENTS_DROPPED,
	ST_DUPLICATED,        /* skbs sent twice */
	ST_COUNT
};

/* Marks our own copy while it passes this hook a second time, so that it
 * is neither dropped nor copied again.  Nothing else in the testbed's
 * namespaces uses marks, and crossing the veth into the next namespace
 * clears it. */
#define DUPLICATE_MARK 0xef1d0b1eu

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TH_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} thresholds SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ST_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} loss_stats SEC(".maps");

static __always_inline void count(__u32 stat, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&loss_stats, &stat);

	if (v)
		*v += n; /* per-CPU: no other writer */
}

static __always_inline int chance(__u32 which)
{
	__u64 *threshold = bpf_map_lookup_elem(&thresholds, &which);

	return threshold && *threshold && (__u64)bpf_get_prandom_u32() < *threshold;
}

/* Whether skb is an IPv4 UDP datagram to the black-holed port. */
static __always_inline int to_hole(struct __sk_buff *skb)
{
	__u32 which = TH_HOLE_PORT;
	__u64 *port = bpf_map_lookup_elem(&thresholds, &which);
	__u8 vihl, proto;
	__u16 dport;

	if (!port || !*port || skb->protocol != bpf_htons(ETH_P_IP))
		return 0;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, &vihl, 1) || bpf_skb_load_bytes(skb, ETH_HLEN + 9, &proto, 1) ||
	    proto != 17 /* UDP */)
		return 0;
	if (bpf_skb_load_bytes(skb, ETH_HLEN + (vihl & 0xf) * 4 + 2, &dport, 2))
		return 0;
	return bpf_ntohs(dport) == *port;
}

SEC("tc")
int loss(struct __sk_buff *skb)
{
	__u64 segs = skb->gso_segs ? skb->gso_segs : 1;

	if (skb->protocol != bpf_htons(ETH_P_IP) && skb->protocol != bpf_htons(ETH_P_IPV6))
		return TC_ACT_OK;
	if (skb->mark == DUPLICATE_MARK) {
		skb->mark = 0;
		return TC_ACT_OK;
	}
	count(ST_PACKETS, 1);
	count(ST_SEGMENTS, segs);
	if (to_hole(skb) || chance(TH_LOSS)) {
		count(ST_PACKETS_DROPPED, 1);
		count(ST_SEGMENTS_DROPPED, segs);
		return TC_ACT_SHOT;
	}
	if (chance(TH_DUP)) {
		/* the copy goes the way the original goes: into this device's
		 * receive path at ingress (where a packet's ingress_ifindex is
		 * the device it is on; our ports never send a packet back out
		 * of the device it came in on), out of it at egress */
		__u64 flags = skb->ingress_ifindex == skb->ifindex ? BPF_F_INGRESS : 0;

		skb->mark = DUPLICATE_MARK;
		if (bpf_clone_redirect(skb, skb->ifindex, flags) == 0)
			count(ST_DUPLICATED, 1);
		skb->mark = 0;
	}
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
