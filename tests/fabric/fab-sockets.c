/* SPDX-License-Identifier: MIT */
/*
 * fab-sockets: endpoints that keep the address they were bound to, as a
 * sockets programmer (and fabtests' msg_sockets) expects (issue 21):
 *   - server: a passive endpoint from fi_getinfo(IP, PORT, FI_SOURCE) is
 *     named IP:PORT before and after fi_listen; the endpoint it accepts is
 *     named the same;
 *   - client: a passive endpoint opened without an address and bound with
 *     fi_setname(SRCIP:SRCPORT); fi_getinfo toward the server with
 *     hints->handle = that passive endpoint answers with info->handle = it,
 *     and the active endpoint opened on that info, connected after the
 *     passive one is closed, is named SRCIP:SRCPORT throughout.
 *
 *   fab-sockets server PORT IP
 *   fab-sockets client IP PORT SRCIP SRCPORT
 *
 * Exit status 0 when every name was the bound one.
 */
#include <arpa/inet.h>
#include <string.h>

#include "fabtest.h"

#define USAGE "fab-sockets server PORT IP | client IP PORT SRCIP SRCPORT"

static struct sockaddr_in bound;	/* what every name must be */

static struct fi_info *hints(void)
{
	struct fi_info *h = fab_hints(FI_MSG, 0);

	h->addr_format = FI_SOCKADDR_IN;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED;	/* no RMA */
	return h;
}

static void bind_addr(const char *ip, const char *port)
{
	memset(&bound, 0, sizeof(bound));
	bound.sin_family = AF_INET;
	bound.sin_port = htons((uint16_t)atoi(port));
	if (inet_pton(AF_INET, ip, &bound.sin_addr) != 1) {
		printf("FAIL: %s is not an IPv4 address\n", ip);
		exit(1);
	}
}

/* fid's name must be the bound address. */
static void check_name(struct fid *fid, const char *when)
{
	struct sockaddr_in sin;
	size_t len = sizeof(sin);
	char got[INET_ADDRSTRLEN], want[INET_ADDRSTRLEN];

	memset(&sin, 0, sizeof(sin));
	MUST(fi_getname(fid, &sin, &len));
	inet_ntop(AF_INET, &sin.sin_addr, got, sizeof(got));
	inet_ntop(AF_INET, &bound.sin_addr, want, sizeof(want));
	if (len != sizeof(sin) || sin.sin_family != AF_INET ||
	    sin.sin_addr.s_addr != bound.sin_addr.s_addr || sin.sin_port != bound.sin_port) {
		printf("FAIL: name %s: %s:%u, expected %s:%u\n", when, got, ntohs(sin.sin_port),
		       want, ntohs(bound.sin_port));
		exit(1);
	}
	printf("name %s: %s:%u\n", when, got, ntohs(sin.sin_port));
}

int main(int argc, char **argv)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_FD };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE };
	struct fi_info *h = hints(), *info = NULL;
	struct fab_side f = { 0 };
	struct fab_cm_event ev;
	const char *ip, *port;
	bool is_server = fab_args(argc, argv, USAGE, &ip, &port);

	if (argc != (is_server ? 4 : 6)) {
		fprintf(stderr, "usage: %s\n", USAGE);
		return 2;
	}
	if (is_server) {
		bind_addr(argv[3], port);
		MUST(fi_getinfo(FI_VERSION(1, 17), argv[3], port, FI_SOURCE, h, &f.info));
	} else {
		bind_addr(argv[4], argv[5]);
		MUST(fi_getinfo(FI_VERSION(1, 17), argv[4], NULL, FI_SOURCE, h, &f.info));
	}
	/* the passive endpoint before the domain, as a sockets-style server
	 * binds before anything else */
	MUST(fi_fabric(f.info->fabric_attr, &f.fabric, NULL));
	MUST(fi_eq_open(f.fabric, &eq_attr, &f.eq, NULL));
	if (is_server) {
		MUST(fi_passive_ep(f.fabric, f.info, &f.pep, NULL));
		check_name(&f.pep->fid, "of the passive endpoint from FI_SOURCE IP PORT");
	} else {
		/* opened without an address, then bound as with bind(2) */
		void *saved = f.info->src_addr;
		size_t saved_len = f.info->src_addrlen;

		f.info->src_addr = NULL;
		f.info->src_addrlen = 0;
		MUST(fi_passive_ep(f.fabric, f.info, &f.pep, NULL));
		f.info->src_addr = saved;
		f.info->src_addrlen = saved_len;
		MUST(fi_setname(&f.pep->fid, &bound, sizeof(bound)));
		check_name(&f.pep->fid, "of the passive endpoint after fi_setname");
	}
	MUST(fi_domain(f.fabric, f.info, &f.domain, NULL));
	MUST(fi_cq_open(f.domain, &cq_attr, &f.cq, NULL));

	if (is_server) {
		MUST(fi_pep_bind(f.pep, &f.eq->fid, 0));
		MUST(fi_listen(f.pep));
		check_name(&f.pep->fid, "of the listening passive endpoint");
		printf("listening\n");
		fab_take_connreq(&f);
		MUST(fi_accept(f.ep, NULL, 0));
		fab_wait_event(f.eq, FI_CONNECTED, &ev, "FI_CONNECTED");
		check_name(&f.ep->fid, "of the accepted endpoint");
		fab_wait_event(f.eq, FI_SHUTDOWN, &ev, "the peer's fi_shutdown");
	} else {
		h->handle = &f.pep->fid;
		MUST(fi_getinfo(FI_VERSION(1, 17), ip, port, 0, h, &info));
		h->handle = NULL;
		CHECK(info->handle == &f.pep->fid,
		      "fi_getinfo with hints->handle = a PEP: info->handle %p, expected %p",
		      (void *)info->handle, (void *)&f.pep->fid);
		fab_open_ep(&f, info);
		MUST(fi_close(&f.pep->fid));	/* the address moved to the endpoint */
		f.pep = NULL;
		check_name(&f.ep->fid, "of the endpoint opened on the passive one");
		MUST(fi_connect(f.ep, info->dest_addr, NULL, 0));
		fab_wait_event(f.eq, FI_CONNECTED, &ev, "FI_CONNECTED");
		check_name(&f.ep->fid, "of the connected endpoint");
		MUST(fi_shutdown(f.ep, 0));
		fi_freeinfo(info);
	}
	fab_close(&f);
	fi_freeinfo(h);
	printf("%s: ok\n", argv[1]);
	return 0;
}
