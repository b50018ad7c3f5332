/* SPDX-License-Identifier: MIT */
/*
 * The UDP backend of the wire layer (libefi/wire_udp.c) over loopback
 * sockets: [::1], 127.0.0.1 and IPv4-mapped peers; batches of 1000
 * datagrams of many sizes, byte for byte; GSO runs (byte-exact, fewer
 * sends counted in a private network namespace, the fallback when the
 * kernel refuses a run); per-datagram errors; truncation; and a full
 * socket buffer (a slow qdisc on a private namespace's loopback) giving a
 * partial count, not an error.  test_wire_fault covers the fault injector.
 */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/wire_testutil.h"

/* ---- UDP backend ---- */

START_TEST(udp_batch_1000_sizes)
{
	enum { N = 1000, CHUNK = 100 };
	uint16_t pa, pb;
	struct efi_wire *a = udp_wire("::1", &pa), *b = udp_wire("::1", &pb);
	struct efi_wire_pkt *tx = alloc_pkts(CHUNK, BIG_CAP), *rx = alloc_pkts(CHUNK, BIG_CAP);
	struct sockaddr_in6 to_b = addr6("::1", pb), from_a = addr6("::1", pa);
	static bool seen[N];

	for (unsigned base = 0; base < N; base += CHUNK) {
		unsigned got;

		for (unsigned i = 0; i < CHUNK; i++) {
			uint32_t seq = base + i;

			/* 4 B .. 9 KB, every 97th near the 64 KiB limit */
			tx[i].len = seq % 97 == 96 ? 65000 : 4 + (seq * 7919u) % 9000;
			fill(tx[i].buf, tx[i].len, seq);
			tx[i].peer = to_b;
		}
		ck_assert_int_eq(efi_wire_send(a, tx, CHUNK), CHUNK);
		got = recv_all(b, rx, CHUNK);
		ck_assert_uint_eq(got, CHUNK);
		for (unsigned i = 0; i < got; i++) {
			uint32_t seq;

			ck_assert(check_fill(rx[i].buf, rx[i].len, &seq));
			ck_assert_uint_lt(seq, N);
			ck_assert_msg(!seen[seq], "datagram %u twice", seq);
			seen[seq] = true;
			ck_assert_uint_eq(rx[i].len, seq % 97 == 96 ? 65000 : 4 + (seq * 7919u) % 9000);
			ck_assert(same_peer(&rx[i].peer, &from_a));
		}
	}
	for (unsigned i = 0; i < N; i++)
		ck_assert(seen[i]);
	/* nothing left over, and an empty socket is 0, not an error */
	ck_assert_int_eq(wire_recv_copy(b, rx, CHUNK), 0);
	free_pkts(tx, CHUNK);
	free_pkts(rx, CHUNK);
	efi_wire_destroy(a);
	efi_wire_destroy(b);
}
END_TEST

/* Lanes: each datagram leaves from the socket of its lane (the peer sees
 * that lane's port), arrives tagged with the lane it came in on, a batch
 * mixing lanes goes out whole, the wire's descriptor polls readable for
 * any lane, and bad lane sets are refused. */
START_TEST(udp_lanes)
{
	enum { LANES = 3, N = 60 };
	uint16_t port[LANES], pb;
	int fds[LANES];
	struct efi_wire *a, *b = udp_wire("::1", &pb);
	struct efi_wire_pkt *tx = alloc_pkts(N, BIG_CAP), *rx = alloc_pkts(N, BIG_CAP);
	unsigned per_lane[LANES] = { 0 };

	for (unsigned l = 0; l < LANES; l++)
		fds[l] = udp6_socket("::1", &port[l]);
	a = efi_wire_udp_create_lanes(fds, LANES);
	ck_assert_ptr_nonnull(a);
	/* to b from a's lanes, in runs of 1..4 of one lane */
	for (unsigned i = 0; i < N; i++) {
		tx[i].len = 100 + i;
		fill(tx[i].buf, tx[i].len, i);
		tx[i].peer = addr6("::1", pb);
		tx[i].lane = (uint8_t)((i / (1 + i % 4)) % LANES);
	}
	ck_assert_int_eq(efi_wire_send(a, tx, N), N);
	ck_assert_uint_eq(recv_all(b, rx, N), N);
	for (unsigned i = 0; i < N; i++) {
		uint32_t seq;
		ck_assert(check_fill(rx[i].buf, rx[i].len, &seq));
		ck_assert_uint_lt(seq, N);
		ck_assert_uint_eq(ntohs(rx[i].peer.sin6_port), port[tx[seq].lane]);
	}
	/* back from b to each of a's lanes: a says which lane */
	for (unsigned i = 0; i < N; i++) {
		tx[i].peer = addr6("::1", port[i % LANES]);
		tx[i].lane = 0;
		fill(tx[i].buf, tx[i].len, i);
	}
	ck_assert_int_eq(efi_wire_send(b, tx, N), N);
	ck_assert(wait_readable(a, 1000));
	ck_assert_uint_eq(recv_all(a, rx, N), N);
	for (unsigned i = 0; i < N; i++) {
		uint32_t seq;
		ck_assert(check_fill(rx[i].buf, rx[i].len, &seq));
		ck_assert_uint_eq(rx[i].lane, seq % LANES);
		per_lane[rx[i].lane]++;
	}
	for (unsigned l = 0; l < LANES; l++)
		ck_assert_uint_eq(per_lane[l], N / LANES);
	ck_assert_int_eq(wire_recv_copy(a, rx, N), 0);
	/* refused: no lanes, too many, one not a datagram socket */
	ck_assert_ptr_null(efi_wire_udp_create_lanes(fds, 0));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(efi_wire_udp_create_lanes(fds, EFI_WIRE_MAX_LANES + 1));
	int bad[2] = { fds[0], socket(AF_INET6, SOCK_STREAM, 0) };
	ck_assert_ptr_null(efi_wire_udp_create_lanes(bad, 2));
	ck_assert_int_eq(errno, EINVAL);
	close(bad[1]);
	free_pkts(tx, N);
	free_pkts(rx, N);
	efi_wire_destroy(a);
	efi_wire_destroy(b);
}
END_TEST

/* Lanes are read fairly: a lane with a backlog does not take every batch
 * while another waits (its packets would wait for the backlog, and its
 * path's RTT with them). */
START_TEST(udp_lanes_fair)
{
	enum { BUSY = 96, QUIET = 4 };
	uint16_t port[2], pb;
	int fds[2];
	struct efi_wire *a, *b = udp_wire("::1", &pb);
	struct efi_wire_pkt *tx = alloc_pkts(BUSY + QUIET, BIG_CAP), *rx = alloc_pkts(32, BIG_CAP);
	unsigned quiet = 0, total = 0;

	for (unsigned l = 0; l < 2; l++)
		fds[l] = udp6_socket("::1", &port[l]);
	a = efi_wire_udp_create_lanes(fds, 2);
	ck_assert_ptr_nonnull(a);
	/* lane 0's backlog first, then a few for lane 1 */
	for (unsigned i = 0; i < BUSY + QUIET; i++) {
		tx[i].len = 200;
		fill(tx[i].buf, tx[i].len, i);
		tx[i].peer = addr6("::1", port[i < BUSY ? 0 : 1]);
		tx[i].lane = 0;
	}
	ck_assert_int_eq(efi_wire_send(b, tx, BUSY + QUIET), BUSY + QUIET);
	ck_assert(wait_readable(a, 1000));
	/* let every datagram land before the first read */
	for (int t = 0; t < 100; t++) {
		struct pollfd p = { .fd = fds[1], .events = POLLIN };
		if (poll(&p, 1, 10) == 1)
			break;
	}
	int n = wire_recv_copy(a, rx, 32);
	ck_assert_int_eq(n, 32);
	for (int i = 0; i < n; i++)
		quiet += rx[i].lane == 1;
	ck_assert_uint_eq(quiet, QUIET);	/* in the first batch, all of them */
	total = (unsigned)n;
	while ((n = wire_recv_copy(a, rx, 32)) > 0)
		total += (unsigned)n;
	ck_assert_uint_eq(total, BUSY + QUIET);
	free_pkts(tx, BUSY + QUIET);
	free_pkts(rx, 32);
	efi_wire_destroy(a);
	efi_wire_destroy(b);
}
END_TEST

/* GRO on receive: a GSO run arrives as one super-datagram and is handed
 * out as the datagrams it was made of, in order, byte for byte, across
 * batches smaller than the run; the rest waits for the next call, and a
 * second run that arrives meanwhile does not overwrite it (the call that
 * hands out the first run's last datagrams also reads the second). */
START_TEST(udp_gro_split_across_batches)
{
	enum { N = 40, SEG = 1000, LAST = 123, BATCH = 7 };
	uint16_t pa, pb;
	struct efi_wire *a = udp_wire("::1", &pa), *b = udp_wire("::1", &pb);
	struct efi_wire_pkt *tx = alloc_pkts(N, BIG_CAP), *rx = alloc_pkts(BATCH, BIG_CAP);
	void *own[BATCH];
	unsigned got = 0;

	for (unsigned i = 0; i < BATCH; i++)
		own[i] = rx[i].buf;	/* efi_wire_recv points rx at the wire's buffers */
	for (unsigned run = 0; run < 2; run++) {
		for (unsigned i = 0; i < N; i++) {
			tx[i].len = i == N - 1 ? LAST : SEG;
			fill(tx[i].buf, tx[i].len, run * N + i);
			tx[i].peer = addr6("::1", pb);
		}
		ck_assert_int_eq(efi_wire_send(a, tx, N), N);
		ck_assert(wait_readable(b, 1000));
		if (run == 0) {
			/* the first batch: the rest of run 0 stays pending */
			int r = efi_wire_recv(b, rx, BATCH);
			ck_assert_int_eq(r, BATCH);
			for (int i = 0; i < r; i++) {
				uint32_t seq;
				ck_assert(check_fill(rx[i].buf, rx[i].len, &seq));
				ck_assert_uint_eq(seq, got++);
			}
			/* held beyond the batch, where poll_fd cannot show it */
			ck_assert(efi_wire_pending(b));
		}
	}
	while (got < 2 * N) {
		int r = efi_wire_recv(b, rx, BATCH);
		ck_assert_int_ge(r, 0);
		if (r == 0) {
			ck_assert(wait_readable(b, 1000));
			continue;
		}
		for (int i = 0; i < r; i++) {
			uint32_t seq;
			ck_assert_msg(check_fill(rx[i].buf, rx[i].len, &seq), "datagram %u overwritten", got);
			ck_assert_uint_eq(seq, got);	/* in order */
			ck_assert_uint_eq(rx[i].len, got % N == N - 1 ? LAST : SEG);
			ck_assert_uint_eq(rx[i].lane, 0);
			got++;
		}
	}
	ck_assert_int_eq(efi_wire_recv(b, rx, BATCH), 0);
	ck_assert(!efi_wire_pending(b));
	for (unsigned i = 0; i < BATCH; i++)
		rx[i].buf = own[i];
	/* a datagram longer than the caller's cap is dropped, not truncated,
	 * and those after it still come */
	for (unsigned i = 0; i < 3; i++) {
		tx[i].len = i == 1 ? 1500 : 100;
		fill(tx[i].buf, tx[i].len, i);
	}
	for (unsigned i = 0; i < 3; i++)
		ck_assert_int_eq(efi_wire_send(a, tx + i, 1), 1);
	for (unsigned i = 0; i < BATCH; i++)
		rx[i].cap = 1000;
	ck_assert_uint_eq(recv_all(b, rx, 2), 2);
	ck_assert_uint_eq(rx[0].len, 100);
	ck_assert_uint_eq(rx[1].len, 100);
	for (unsigned i = 0; i < BATCH; i++)
		rx[i].cap = BIG_CAP;
	free_pkts(tx, N);
	free_pkts(rx, BATCH);
	efi_wire_destroy(a);
	efi_wire_destroy(b);
}
END_TEST

START_TEST(udp_ipv4_mapped)
{
	uint16_t pa, pb, pc;
	struct efi_wire *a = udp_wire("::", &pa), *b = udp_wire("::", &pb), *c;
	struct efi_wire_pkt *p = alloc_pkts(2, 2048);
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int fd;

	/* dual-stack to dual-stack through ::ffff:127.0.0.1 */
	p[0].len = 100;
	fill(p[0].buf, 100, 1);
	p[0].peer = addr6("::ffff:127.0.0.1", pb);
	ck_assert_int_eq(efi_wire_send(a, p, 1), 1);
	ck_assert_uint_eq(recv_all(b, p + 1, 1), 1);
	ck_assert_uint_eq(p[1].len, 100);
	ck_assert_mem_eq(p[1].buf, p[0].buf, 100);
	struct sockaddr_in6 want = addr6("::ffff:127.0.0.1", pa);
	ck_assert(same_peer(&p[1].peer, &want));
	/* the reply goes to the address as received */
	p[1].peer = want;
	ck_assert_int_eq(efi_wire_send(b, p + 1, 1), 1);
	ck_assert_uint_eq(recv_all(a, p, 1), 1);
	want = addr6("::ffff:127.0.0.1", pb);
	ck_assert(same_peer(&p[0].peer, &want));

	/* a plain AF_INET socket: mapped addresses are translated both ways */
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	pc = ntohs(sin.sin_port);
	c = efi_wire_udp_create(fd);
	ck_assert_ptr_nonnull(c);
	p[0].len = 33;
	fill(p[0].buf, 33, 2);
	p[0].peer = addr6("::ffff:127.0.0.1", pb);
	ck_assert_int_eq(efi_wire_send(c, p, 1), 1);
	ck_assert_uint_eq(recv_all(b, p + 1, 1), 1);
	want = addr6("::ffff:127.0.0.1", pc);
	ck_assert(same_peer(&p[1].peer, &want));
	p[1].peer = want;
	ck_assert_int_eq(efi_wire_send(b, p + 1, 1), 1);
	ck_assert_uint_eq(recv_all(c, p, 1), 1);
	ck_assert_uint_eq(p[0].len, 33);
	want = addr6("::ffff:127.0.0.1", pb);
	ck_assert(same_peer(&p[0].peer, &want));
	/* a real IPv6 peer cannot be reached from it: dropped, not fatal */
	p[0].peer = addr6("::1", pb);
	ck_assert_int_eq(efi_wire_send(c, p, 1), 1);
	ck_assert_int_eq(wire_recv_copy(b, p + 1, 1), 0);

	free_pkts(p, 2);
	efi_wire_destroy(a);
	efi_wire_destroy(b);
	efi_wire_destroy(c);
}
END_TEST

START_TEST(udp_per_datagram_errors_and_truncation)
{
	uint16_t pa, pb;
	struct efi_wire *a = udp_wire("::1", &pa), *b = udp_wire("::1", &pb);
	struct efi_wire_pkt *tx = alloc_pkts(4, 70000), *rx = alloc_pkts(4, 100);
	const uint32_t lens[4] = { 50, 70000, 200, 60 };
	uint32_t seq;

	/* 70000 B cannot be a UDP datagram (EMSGSIZE): that one is dropped
	 * and the others still go; 200 B does not fit the receiver's
	 * 100 B buffers: dropped on receive, the rest close up. */
	for (unsigned i = 0; i < 4; i++) {
		tx[i].len = lens[i];
		fill(tx[i].buf, lens[i], i);
		tx[i].peer = addr6("::1", pb);
	}
	ck_assert_int_eq(efi_wire_send(a, tx, 4), 4);
	/* all three are queued by now (loopback delivers within sendmmsg):
	 * one call sees them together and must close the gap */
	ck_assert(wait_readable(b, 1000));
	ck_assert_int_eq(wire_recv_copy(b, rx, 4), 2);
	ck_assert(check_fill(rx[0].buf, rx[0].len, &seq));
	ck_assert_uint_eq(seq, 0);
	ck_assert_uint_eq(rx[0].len, 50);
	ck_assert(check_fill(rx[1].buf, rx[1].len, &seq));
	ck_assert_uint_eq(seq, 3);
	ck_assert_uint_eq(rx[1].len, 60);
	ck_assert_int_eq(wire_recv_copy(b, rx, 4), 0);
	free_pkts(tx, 4);
	free_pkts(rx, 4);
	efi_wire_destroy(a);
	efi_wire_destroy(b);
}
END_TEST

START_TEST(udp_create_rejects)
{
	int fds[2], tcp;

	errno = 0;
	ck_assert_ptr_null(efi_wire_udp_create(-1));
	ck_assert_int_eq(errno, EBADF);
	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_ptr_null(efi_wire_udp_create(fds[0]));
	ck_assert_int_eq(errno, ENOTSOCK);
	tcp = socket(AF_INET6, SOCK_STREAM, 0);
	ck_assert_int_ge(tcp, 0);
	ck_assert_ptr_null(efi_wire_udp_create(tcp));
	ck_assert_int_eq(errno, EINVAL);
	/* a failed create leaves the descriptor to the caller */
	ck_assert_int_ne(fcntl(tcp, F_GETFD), -1);
	close(tcp);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

/* What GSO makes of runs of equal sizes must arrive as the same datagrams:
 * two receivers, blocks of 100 to each, runs of 1400 B broken by shorter
 * ones, and an empty datagram (never part of a run). */
START_TEST(udp_gso_runs_byte_exact)
{
	enum { N = 1000 };
	uint16_t pa, pb, pc;
	struct efi_wire *a = udp_wire("::", &pa), *b = udp_wire("::1", &pb);
	struct efi_wire *c = udp_wire("::ffff:127.0.0.1", &pc);
	struct efi_wire_pkt *tx = alloc_pkts(N, 1500), *rx = alloc_pkts(N, 1500);
	uint32_t last[2] = { 0, 0 }, seq;
	unsigned got[2] = { 0, 0 }, sent = 0;

	for (unsigned i = 0; i < N; i++) {
		tx[i].len = i == 500 ? 0 : i % 37 == 36 ? 1400 - i % 500 : 1400;
		fill(tx[i].buf, tx[i].len, i);
		tx[i].peer = (i / 100) % 2 ? addr6("::ffff:127.0.0.1", pc) : addr6("::1", pb);
	}
	while (sent < N) {
		int r = efi_wire_send(a, tx + sent, N - sent);

		ck_assert_int_ge(r, 0);
		sent += (unsigned)r;
		if (r == 0)
			usleep(1000);
	}
	for (unsigned k = 0; k < 2; k++) {
		struct efi_wire *w = k ? c : b;

		got[k] = recv_all(w, rx, N / 2);
		ck_assert_uint_eq(got[k], N / 2);
		for (unsigned i = 0; i < got[k]; i++) {
			if (rx[i].len == 0) {
				ck_assert_uint_eq(k, 1);	/* 500 went to c */
				seq = 500;
			} else {
				ck_assert(check_fill(rx[i].buf, rx[i].len, &seq));
				ck_assert_uint_eq(rx[i].len, tx[seq].len);
			}
			ck_assert_uint_eq((seq / 100) % 2, k);
			ck_assert(i == 0 || seq > last[k]);	/* in order per peer */
			last[k] = seq;
		}
	}
	free_pkts(tx, N);
	free_pkts(rx, N);
	efi_wire_destroy(a);
	efi_wire_destroy(b);
	efi_wire_destroy(c);
}
END_TEST

/* Udp6OutDatagrams of this network namespace. */
static long udp6_out_datagrams(void)
{
	FILE *f = fopen("/proc/self/net/snmp6", "r");
	char name[64];
	long v, found = -1;

	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", name, &v) == 2)
		if (strcmp(name, "Udp6OutDatagrams") == 0)
			found = v;
	fclose(f);
	return found;
}

/* Sends 640 datagrams of 1000 B from a fresh wire to port; returns how
 * many the kernel counted as sent datagrams (GSO runs count once). */
static long count_out(uint16_t port)
{
	uint16_t pa;
	struct efi_wire *a = udp_wire("::1", &pa);
	struct efi_wire_pkt *p = alloc_pkts(640, 1000);
	long before = udp6_out_datagrams(), after;

	for (unsigned i = 0; i < 640; i++) {
		p[i].len = 1000;
		fill(p[i].buf, 1000, i);
		p[i].peer = addr6("::1", port);
	}
	if (efi_wire_send(a, p, 640) != 640)
		return -1;
	after = udp6_out_datagrams();
	free_pkts(p, 640);
	efi_wire_destroy(a);
	return before < 0 || after < 0 ? -1 : after - before;
}

/* In a private network namespace (its own counters): 640 equal datagrams
 * leave as 20 GSO super-datagrams (10 batches of 64, each 64000 B, over
 * the 60000 B a run may carry: 60 + 4), or as 640 with EFI_UDP_GSO=0, and all
 * 1280 arrive intact.  Exit codes: 0 ok, others the failed step. */
static int gso_child(void)
{
	struct efi_wire_pkt *p = alloc_pkts(64, 2048);
	struct efi_wire *b;
	uint16_t pb;
	long with, without;
	unsigned got = 0;
	int r;

	if (unshare(CLONE_NEWNET) < 0 || system("ip link set lo up") != 0)
		return 2;
	b = udp_wire("::1", &pb);
	with = count_out(pb);
	setenv("EFI_UDP_GSO", "0", 1);
	without = count_out(pb);
	fprintf(stderr, "640 datagrams: %ld sends with GSO, %ld without\n", with, without);
	if (with != 20)
		return 3;
	if (without != 640)
		return 4;
	while ((r = wire_recv_copy(b, p, 64)) > 0) {
		for (int i = 0; i < r; i++) {
			uint32_t seq;

			if (p[i].len != 1000 || !check_fill(p[i].buf, 1000, &seq) ||
			    seq != got % 640)
				return 5;
			got++;
		}
	}
	if (got != 1280)
		return 6;

	/* A segment larger than the MTU makes the kernel refuse the run
	 * (EINVAL): it goes again as plain datagrams, which IPv6 fragments. */
	if (system("ip link set lo mtu 1280") != 0)
		return 7;
	unsetenv("EFI_UDP_GSO");
	{
		uint16_t pa;
		struct efi_wire *a = udp_wire("::1", &pa);
		struct efi_wire_pkt *big = alloc_pkts(64, 1400);

		for (unsigned i = 0; i < 64; i++) {
			big[i].len = 1400;
			fill(big[i].buf, 1400, i);
			big[i].peer = addr6("::1", pb);
		}
		if (efi_wire_send(a, big, 64) != 64)
			return 8;
		got = 0;
		while ((r = wire_recv_copy(b, p, 64)) > 0) {
			for (int i = 0; i < r; i++) {
				uint32_t seq;

				if (p[i].len != 1400 || !check_fill(p[i].buf, 1400, &seq) ||
				    seq != got)
					return 9;
				got++;
			}
		}
		if (got != 64)
			return 10;
		free_pkts(big, 64);
		efi_wire_destroy(a);
	}
	free_pkts(p, 64);
	efi_wire_destroy(b);
	return 0;
}

START_TEST(udp_gso_fewer_sends)
{
	pid_t pid;
	int status;

	if (geteuid() != 0) {
		fprintf(stderr, "udp_gso_fewer_sends: needs root, skipped\n");
		return;
	}
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(gso_child());
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_msg(WEXITSTATUS(status) == 0, "child failed at step %d", WEXITSTATUS(status));
}
END_TEST

/* In a private network namespace whose loopback has a token bucket of
 * 8 kbit/s, datagrams wait in the qdisc still charged to the sender's tiny
 * send buffer: the buffer fills and send_batch must say how many it took.
 * Runs in a child so the namespace dies with it. Exit codes: 0 ok, 77
 * not root, others the step that failed. */
static int full_buffer_child(void)
{
	struct efi_wire_pkt *p;
	struct efi_wire *a, *b;
	uint16_t pa, pb;
	int r1, r2, small = 4096, fd;

	if (unshare(CLONE_NEWNET) < 0)
		return 2;
	if (system("ip link set lo up && tc qdisc add dev lo root tbf rate 8kbit "
		   "burst 1600 limit 10000000") != 0)
		return 3;
	a = udp_wire("::1", &pa);
	b = udp_wire("::1", &pb);
	fd = efi_wire_fd(a);
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)) < 0)
		return 4;
	p = alloc_pkts(200, 1000);
	for (unsigned i = 0; i < 200; i++) {
		p[i].len = 1000;
		fill(p[i].buf, 1000, i);
		p[i].peer = addr6("::1", pb);
	}
	r1 = efi_wire_send(a, p, 200);
	r2 = efi_wire_send(a, p + (r1 > 0 ? r1 : 0), 200 - (r1 > 0 ? (unsigned)r1 : 0));
	fprintf(stderr, "full socket buffer: first batch took %d of 200, the next %d\n", r1, r2);
	if (r1 <= 0 || r1 >= 200)
		return 5;
	if (r2 < 0 || r2 >= 200 - r1)
		return 6;
	free_pkts(p, 200);
	efi_wire_destroy(a);
	efi_wire_destroy(b);
	return 0;
}

START_TEST(udp_full_buffer_partial_count)
{
	pid_t pid;
	int status;

	if (geteuid() != 0) {
		fprintf(stderr, "udp_full_buffer_partial_count: needs root, skipped\n");
		return;
	}
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(full_buffer_child());
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_msg(WEXITSTATUS(status) == 0, "child failed at step %d", WEXITSTATUS(status));
}
END_TEST

static Suite *wire_suite(void)
{
	Suite *s = suite_create("wire_udp");
	TCase *udp = tcase_create("udp");

	tcase_set_timeout(udp, 30);
	tcase_add_test(udp, udp_batch_1000_sizes);
	tcase_add_test(udp, udp_lanes);
	tcase_add_test(udp, udp_lanes_fair);
	tcase_add_test(udp, udp_gro_split_across_batches);
	tcase_add_test(udp, udp_ipv4_mapped);
	tcase_add_test(udp, udp_per_datagram_errors_and_truncation);
	tcase_add_test(udp, udp_create_rejects);
	tcase_add_test(udp, udp_full_buffer_partial_count);
	tcase_add_test(udp, udp_gso_runs_byte_exact);
	tcase_add_test(udp, udp_gso_fewer_sends);
	suite_add_tcase(s, udp);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(wire_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
