/* SPDX-License-Identifier: MIT */
/*
 * notify-listen: plays systemd's side of sd_notify for tests.
 *
 *   notify-listen SOCKET [--check-connect PATH] [--timeout SEC]
 *
 * Binds a datagram Unix socket at SOCKET (what $NOTIFY_SOCKET names) and
 * prints every assignment it receives ("READY=1", "STATUS=...",
 * "WATCHDOG=1", ...) on its own line of stdout, prefixed with milliseconds
 * since start and flushed at once, so a shell test can wait for lines.
 *
 * With --check-connect, on READY=1 it immediately tries to connect a stream
 * socket to PATH (the daemon's control socket) and prints "CONNECT=ok" or
 * "CONNECT=ERRNO-NAME": READY=1 promises clients can connect, and this checks
 * the promise at the moment it is made, not some time later.
 *
 * Exits 0 on SIGTERM or SIGINT, 2 on usage errors, 1 on other errors, and
 * 3 when --timeout seconds (default 60) pass, so a broken test cannot hang.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static long now_ms(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000L + (t.tv_nsec - t0->tv_nsec) / 1000000L;
}

static int fill_addr(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path)) {
		fprintf(stderr, "notify-listen: socket path too long (max %zu): %s\n",
			sizeof(sa->sun_path) - 1, path);
		return -1;
	}
	memcpy(sa->sun_path, path, strlen(path) + 1);
	return 0;
}

/* Tries a stream connection to path; returns 0 or the errno. */
static int try_connect(const char *path)
{
	struct sockaddr_un sa;
	int fd, r = 0;

	if (fill_addr(&sa, path) < 0)
		return ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		r = errno;
	close(fd);
	return r;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: notify-listen SOCKET [--check-connect PATH] [--timeout SEC]\n");
}

int main(int argc, char **argv)
{
	const char *sock_path = NULL, *connect_path = NULL;
	long timeout_s = 60;
	struct sockaddr_un sa;
	struct timespec t0;
	int fd, rc = 1;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--check-connect") == 0 && i + 1 < argc) {
			connect_path = argv[++i];
		} else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
			char *end;
			timeout_s = strtol(argv[++i], &end, 10);
			if (*end || timeout_s <= 0) {
				fprintf(stderr, "notify-listen: --timeout wants a positive number of seconds\n");
				return 2;
			}
		} else if (strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (!sock_path && argv[i][0] != '-') {
			sock_path = argv[i];
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!sock_path) {
		usage(stderr);
		return 2;
	}

	struct sigaction act = { .sa_handler = on_signal };
	sigemptyset(&act.sa_mask);
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);

	if (fill_addr(&sa, sock_path) < 0)
		return 2;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("notify-listen: socket");
		return 1;
	}
	unlink(sock_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "notify-listen: bind %s: %s\n", sock_path, strerror(errno));
		goto out;
	}
	printf("LISTENING=%s\n", sock_path);
	fflush(stdout);

	while (!stop_requested) {
		long left_ms = timeout_s * 1000L - now_ms(&t0);
		if (left_ms <= 0) {
			fprintf(stderr, "notify-listen: timed out after %lds\n", timeout_s);
			rc = 3;
			goto out;
		}
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int n = poll(&pfd, 1, left_ms > 200 ? 200 : (int)left_ms);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("notify-listen: poll");
			goto out;
		}
		if (n == 0)
			continue;

		/* sd_notify messages are small; anything longer is cut, which
		 * is fine for a test tool and shows up as a truncated line. */
		char buf[4097];
		ssize_t len = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
		if (len < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			perror("notify-listen: recv");
			goto out;
		}
		buf[len] = '\0';
		long ms = now_ms(&t0);
		for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			printf("%ld %s\n", ms, line);
			if (connect_path && strcmp(line, "READY=1") == 0) {
				int e = try_connect(connect_path);
				printf("%ld CONNECT=%s\n", now_ms(&t0), e ? strerrorname_np(e) : "ok");
			}
		}
		fflush(stdout);
	}
	rc = 0;
out:
	close(fd);
	unlink(sock_path);
	return rc;
}
