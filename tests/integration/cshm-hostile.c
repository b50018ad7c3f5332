/* SPDX-License-Identifier: MIT */
/*
 * cshm-hostile: publishes a hostile counters page to efid, for
 * t-status-paths.sh.  It leases an endpoint like libefi does (OPEN_DEVICE,
 * then PUBLISH_COUNTERS with a sealed memfd), but fills the page with what a
 * broken or malicious process could write: a peer count of 2^32 − 1, path
 * counts far past 8, a path state efid does not know, addresses of arbitrary
 * bytes.  Then it keeps the lease until its standard input closes; with
 * "stuck" as the second argument it first leaves the sequence count odd (a
 * writer that never finishes).
 *
 *   cshm-hostile IFNAME [stuck]      (run inside the instance, EFI_SOCKET set)
 *
 * With "v3" instead, the page is a version 3 one (EFI_COUNTERSHM_V3_SIZE)
 * whose extension is as hostile: a QP count of 2^32 − 1, QP numbers past 24
 * bits, an unknown QP state, every drop reason counted (also those past
 * libefi's); with "v3small", a page that says version 3 but is one page
 * long, so that efid must not look past it.
 *
 *   cshm-hostile IFNAME v3|v3small
 *
 * Prints "ready" once efid accepted the page.  Exit 0, or 1 with a message.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "countershm.h"
#include "ctlclient.h"

static int call(struct ctl_client *c, uint16_t type, const char *ifname, int fd)
{
	struct ctl_buf req;
	struct ctl_reply rep;
	int r;

	ctl_buf_init(&req);
	ctl_msg_begin(&req, type, 0);
	if (ifname)
		ctl_put_str(&req, EFI_A_IFNAME, ifname);
	r = ctl_msg_end(&req);
	if (r == 0)
		r = ctl_client_call(c, &req, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, &rep, 5000);
	ctl_buf_free(&req);
	if (r)
		return r;
	r = rep.status;
	if (r)
		fprintf(stderr, "cshm-hostile: efid refused: %s\n", rep.error ? rep.error : "?");
	ctl_reply_free(&rep); /* closes the wire sockets OPEN_DEVICE passed */
	return r;
}

static void fill(struct efi_countershm *p, bool stuck)
{
	p->magic = EFI_COUNTERSHM_MAGIC;
	p->version = 2;
	p->pid = (uint32_t)getpid();
	for (int i = 0; i < EFI_CSHM_COUNT; i++)
		p->value[i] = 1000 + (uint64_t)i;
	p->npeers = UINT32_MAX;
	p->peers_omitted = 7;
	for (unsigned k = 0; k < EFI_CSHM_MAX_PEERS; k++) {
		struct efi_countershm_peer *pe = &p->peer[k];
		uint8_t addr[16];
		memset(addr, 0x1b, sizeof(addr)); /* ESC bytes: must never reach a terminal as text */
		addr[15] = (uint8_t)k;
		memcpy(pe->addr, addr, 16);
		pe->qps = 3;
		pe->npaths = 0xfffffff0u;
		for (unsigned i = 0; i < EFI_CSHM_MAX_PATHS; i++) {
			pe->path[i].state = i == 2 ? 7 : i % 2;
			pe->path[i].rtt_min_us = 10;
			pe->path[i].srtt_us = UINT32_MAX;
			pe->path[i].cwnd_milli = UINT32_MAX;
			pe->path[i].retransmissions = UINT64_MAX;
			pe->path[i].suspected = UINT32_MAX;
			pe->path[i].restored = 1;
		}
	}
	p->seq = stuck ? 1 : 2;
}

static void fill_v3(struct efi_countershm *p)
{
	struct efi_countershm_ext *x = efi_cshm_ext(p);

	p->version = 3;
	for (unsigned i = 0; i < EFI_CSHM_DROP_REASONS; i++)
		x->drop_reasons[i] = 1 + (uint64_t)i;
	x->nqps = UINT32_MAX;
	x->qps_omitted = 9;
	for (unsigned k = 0; k < EFI_CSHM_MAX_QPS; k++) {
		struct efi_countershm_qp *q = &x->qp[k];
		q->qpn = 0xff000000u | k;
		q->state = 99;
		memset(q->peer, 0x1b, sizeof(q->peer));
		for (unsigned i = 0; i < EFI_CSHM_QP_VALUES; i++)
			q->value[i] = UINT64_MAX - i;
	}
}

int main(int argc, char **argv)
{
	struct ctl_client *c;
	struct efi_countershm *page;
	char buf[64];
	int fd, r;

	const char *mode = argc == 3 ? argv[2] : "";
	bool v3 = strcmp(mode, "v3") == 0, v3small = strcmp(mode, "v3small") == 0;
	if (argc < 2 || argc > 3 || (argc == 3 && !v3 && !v3small && strcmp(mode, "stuck") != 0)) {
		fprintf(stderr, "usage: cshm-hostile IFNAME [stuck|v3|v3small]\n");
		return 2;
	}
	size_t size = v3 ? EFI_COUNTERSHM_V3_SIZE : EFI_COUNTERSHM_SIZE;
	r = ctl_client_connect(NULL, &c);
	if (r) {
		fprintf(stderr, "cshm-hostile: cannot reach efid: %s\n", strerror(-r));
		return 1;
	}
	r = call(c, EFI_CTL_OPEN_DEVICE, argv[1], -1);
	if (r) {
		fprintf(stderr, "cshm-hostile: OPEN_DEVICE %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	fd = memfd_create("efi-counters", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		perror("cshm-hostile: memfd");
		return 1;
	}
	page = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (page == MAP_FAILED) {
		perror("cshm-hostile: mmap");
		return 1;
	}
	fill(page, strcmp(mode, "stuck") == 0);
	if (v3)
		fill_v3(page);
	if (v3small)
		page->version = 3;
	r = call(c, EFI_CTL_PUBLISH_COUNTERS, NULL, fd);
	close(fd);
	if (r) {
		fprintf(stderr, "cshm-hostile: PUBLISH_COUNTERS: %s\n", strerror(-r));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	ctl_client_close(c);
	return 0;
}
