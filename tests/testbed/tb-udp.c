/* SPDX-License-Identifier: MIT */
/*
 * tb-udp: sends and counts UDP datagrams for tests/testbed/t-testbed.sh.
 * iperf3 cannot serve there: its UDP test begins with a handshake of single
 * datagrams, and when the loss being measured takes one of them iperf3
 * stalls for 30 s and fails.
 *
 *   tb-udp recv ADDR PORT IDLE_MS
 *       counts datagrams until IDLE_MS pass without one (at most 60 s), then
 *       prints "received N sources S least L": N datagrams from S source
 *       addresses and ports, the one that sent fewest sent L.
 *   tb-udp send ADDR PORT COUNT SOCKETS
 *       sends COUNT datagrams round-robin from SOCKETS sockets (each with
 *       its own source port, 1..1024), about 20 000 a second, and prints
 *       "sent N errors E" (E: sends refused, e.g. no route).
 * Exit: 0, 1 on a system error, 2 on bad arguments.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SOURCES 1024
#define MAX_WAIT_MS 60000
#define BATCH 20 /* datagrams per millisecond */

struct source {
	struct sockaddr_in addr;
	unsigned long count;
};

static int usage(void)
{
	fprintf(stderr, "usage: tb-udp recv ADDR PORT IDLE_MS | tb-udp send ADDR PORT COUNT SOCKETS\n");
	return 2;
}

static int parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno == 0 && end != s && *end == '\0' && s[0] != '-' && *out >= min && *out <= max;
}

static int parse_addr(const char *addr, const char *port, struct sockaddr_in *sin)
{
	unsigned long p;

	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	if (inet_pton(AF_INET, addr, &sin->sin_addr) != 1 || !parse_ulong(port, 1, 65535, &p))
		return 0;
	sin->sin_port = htons((unsigned short)p);
	return 1;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int do_recv(const struct sockaddr_in *sin, unsigned long idle_ms)
{
	static struct source sources[MAX_SOURCES];
	size_t nsources = 0, i;
	unsigned long received = 0, least = 0;
	int fd, buf = 4 << 20;
	long start = now_ms(), last = 0;
	char data[2048];

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("tb-udp: socket");
		return 1;
	}
	/* a receiver that falls behind must not add losses of its own */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	if (bind(fd, (const struct sockaddr *)sin, sizeof(*sin)) < 0) {
		perror("tb-udp: bind");
		close(fd);
		return 1;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long t = now_ms(), wait = received ? last + (long)idle_ms - t : start + MAX_WAIT_MS - t;
		struct sockaddr_in from;
		socklen_t fromlen = sizeof(from);

		if (wait <= 0)
			break;
		if (poll(&p, 1, (int)wait) < 0) {
			if (errno == EINTR)
				continue;
			perror("tb-udp: poll");
			close(fd);
			return 1;
		}
		if (!(p.revents & POLLIN))
			continue;
		if (recvfrom(fd, data, sizeof(data), 0, (struct sockaddr *)&from, &fromlen) < 0)
			continue;
		received++;
		last = now_ms();
		for (i = 0; i < nsources; i++)
			if (sources[i].addr.sin_port == from.sin_port &&
			    sources[i].addr.sin_addr.s_addr == from.sin_addr.s_addr)
				break;
		if (i == nsources && nsources < MAX_SOURCES)
			sources[nsources++].addr = from;
		if (i < nsources)
			sources[i].count++;
	}
	close(fd);
	for (i = 0; i < nsources; i++)
		if (i == 0 || sources[i].count < least)
			least = sources[i].count;
	printf("received %lu sources %zu least %lu\n", received, nsources, least);
	return 0;
}

static int do_send(const struct sockaddr_in *sin, unsigned long count, unsigned long nsockets)
{
	int fds[1024];
	unsigned long i, sent = 0, errors = 0;
	char data[64];
	int rc = 0;

	for (i = 0; i < nsockets; i++) {
		fds[i] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		/* connect: the kernel picks each socket its own source port */
		if (fds[i] < 0 || connect(fds[i], (const struct sockaddr *)sin, sizeof(*sin)) < 0) {
			perror("tb-udp: socket");
			if (fds[i] >= 0)
				close(fds[i]);
			nsockets = i;
			rc = 1;
			goto out;
		}
	}
	memset(data, 0, sizeof(data));
	for (i = 0; i < count; i++) {
		memcpy(data, &i, sizeof(i));
		if (send(fds[i % nsockets], data, sizeof(data), 0) < 0)
			errors++;
		else
			sent++;
		if (i % BATCH == BATCH - 1) {
			struct timespec ms = { 0, 1000000 };

			nanosleep(&ms, NULL);
		}
	}
	printf("sent %lu errors %lu\n", sent, errors);
out:
	for (i = 0; i < nsockets; i++)
		close(fds[i]);
	return rc;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin;
	unsigned long a, b;

	if (argc == 5 && strcmp(argv[1], "recv") == 0) {
		if (!parse_addr(argv[2], argv[3], &sin) || !parse_ulong(argv[4], 1, MAX_WAIT_MS, &a))
			return usage();
		return do_recv(&sin, a);
	}
	if (argc == 6 && strcmp(argv[1], "send") == 0) {
		if (!parse_addr(argv[2], argv[3], &sin) || !parse_ulong(argv[4], 1, 100000000, &a) ||
		    !parse_ulong(argv[5], 1, 1024, &b))
			return usage();
		return do_send(&sin, a, b);
	}
	return usage();
}
