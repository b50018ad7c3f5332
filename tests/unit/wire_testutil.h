/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the wire layer's unit tests: loopback UDP wires, datagram
 * contents that check themselves, and an in-memory backend under the fault
 * injector (exact and deterministic, no kernel drops).  They fail the
 * current check test (ck_assert) on anything unexpected.
 */
#ifndef EFI_TESTS_WIRE_TESTUTIL_H
#define EFI_TESTS_WIRE_TESTUTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "libefi/wire.h"

#define BIG_CAP 65536
#define MEM_MAX 40000

uint64_t mono_ns(void);
struct sockaddr_in6 addr6(const char *ip, uint16_t port);
/* A non-blocking dual-stack UDP socket bound to ip, port 0 (*port). */
int udp6_socket(const char *ip, uint16_t *port);
struct efi_wire *udp_wire(const char *ip, uint16_t *port);
/* Datagram contents: the sequence number, then bytes derived from it. */
void fill(uint8_t *buf, uint32_t len, uint32_t seq);
bool check_fill(const uint8_t *buf, uint32_t len, uint32_t *seq);
struct efi_wire_pkt *alloc_pkts(unsigned n, uint32_t cap);
void free_pkts(struct efi_wire_pkt *p, unsigned n);
bool wait_readable(struct efi_wire *w, int timeout_ms);
/* efi_wire_recv, with each datagram copied into the buffer p[i] had before
 * the call when the backend pointed p[i].buf at its own memory (wire.h):
 * what the tests hold stays theirs across further calls. */
int wire_recv_copy(struct efi_wire *w, struct efi_wire_pkt *p, unsigned n);
/* Receives until want datagrams came or a second passed without any. */
unsigned recv_all(struct efi_wire *w, struct efi_wire_pkt *p, unsigned want);
bool same_peer(const struct sockaddr_in6 *a, const struct sockaddr_in6 *b);

/* The in-memory backend: send appends copies (up to limit: then "full"),
 * recv takes them in order; efd is readable while it holds any. */
struct mem_wire {
	struct efi_wire base;
	int efd;
	unsigned limit;
	unsigned head, count;
	struct { uint8_t *data; uint32_t len; struct sockaddr_in6 peer; } q[MEM_MAX];
};
struct mem_wire *mem_create(unsigned limit);
int mem_send(struct efi_wire *w, struct efi_wire_pkt *p, unsigned n);
int mem_recv(struct efi_wire *w, struct efi_wire_pkt *p, unsigned n);
/* Sends datagrams first..first+n-1 through w, all of them, in batches. */
void send_seq(struct efi_wire *w, uint32_t first, unsigned n);
/* Takes every datagram out of m (bypassing any wrapper): their sequence
 * numbers in arrival order, checked byte for byte. */
unsigned drain_mem(struct mem_wire *m, uint32_t *seqs);

#endif
