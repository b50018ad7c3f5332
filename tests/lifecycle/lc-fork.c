/* SPDX-License-Identifier: MIT */
/*
 * lc-fork N BATCH: makes N processes, BATCH at a time, that each take what
 * efid hands out — a libefi context (a lease) plus a QP (odd ones) or a CM
 * listener (even ones) — and kills each with SIGKILL once it holds it all.
 * Children are forked, not executed, so that a thousand of them cost
 * little even in a sanitizer build (t-lc-kill1000.sh checks efid after).
 * Run inside an instance (ip netns exec) with $EFI_SOCKET set.
 * Exit 0, or 1 with a message when a child could not get its resources.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <efi/efi.h>
#include <efi/efi_cm.h>

#define READY_TIMEOUT_MS 20000
#define MAX_BATCH 64

/* The child: takes its resources, says so on fd, waits for the signal. */
static void child(int index, int fd)
{
	char ok = 'R', bad = 'F';
	int n = 0;
	struct efi_device **list = efi_get_device_list(&n);
	struct efi_context *ctx = list && n > 0 ? efi_open_device(list[0]) : NULL;
	if (!ctx)
		goto fail;
	if (index % 2) {
		struct efi_pd *pd = efi_alloc_pd(ctx);
		struct efi_cq *cq = efi_create_cq(ctx, 16, NULL, NULL, 0);
		struct efi_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = EFI_QPT_RC,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};
		if (!pd || !cq || !efi_create_qp(pd, &ia))
			goto fail;
	} else {
		char service[16];
		snprintf(service, sizeof(service), "%d", 9000 + index % MAX_BATCH);
		if (!efi_listen(ctx, service, 8))
			goto fail;
	}
	if (write(fd, &ok, 1) != 1)
		_exit(1);
	for (;;)
		pause();
fail:
	fprintf(stderr, "lc-fork: process %d: %s\n", index, strerror(errno));
	if (write(fd, &bad, 1) != 1)
		_exit(1);
	_exit(1);
}

int main(int argc, char **argv)
{
	int total = argc > 1 ? atoi(argv[1]) : 0, batch = argc > 2 ? atoi(argv[2]) : 0;
	if (argc != 3 || total < 1 || batch < 1 || batch > MAX_BATCH) {
		fprintf(stderr, "usage: lc-fork N BATCH (BATCH 1..%d)\n", MAX_BATCH);
		return 2;
	}
	for (int base = 0; base < total; base += batch) {
		int p[2], k, got = 0, failed = 0;
		pid_t pids[MAX_BATCH];
		if (pipe(p) < 0) {
			perror("lc-fork: pipe");
			return 1;
		}
		for (k = 0; k < batch && base + k < total; k++) {
			pids[k] = fork();
			if (pids[k] < 0) {
				perror("lc-fork: fork");
				return 1;
			}
			if (pids[k] == 0) {
				close(p[0]);
				child(base + k, p[1]);
			}
		}
		close(p[1]);
		while (got < k) {
			struct pollfd pf = { .fd = p[0], .events = POLLIN };
			char c;
			if (poll(&pf, 1, READY_TIMEOUT_MS) <= 0 || read(p[0], &c, 1) != 1)
				break;
			got++;
			failed += c != 'R';
		}
		close(p[0]);
		for (int i = 0; i < k; i++)
			kill(pids[i], SIGKILL);
		for (int i = 0; i < k; i++)
			waitpid(pids[i], NULL, 0);
		if (got < k || failed) {
			fprintf(stderr, "lc-fork: batch at %d: %d of %d ready, %d failed\n", base,
				got - failed, k, failed);
			return 1;
		}
	}
	printf("lc-fork: %d processes killed\n", total);
	return 0;
}
