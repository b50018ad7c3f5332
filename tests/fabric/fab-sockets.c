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
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#define TIMEOUT_MS 30000

#define MUST(call) do { \
	int must_ret_ = (int)(call); \
	if (must_ret_) { \
		printf("FAIL: %s: %d (%s)\n", #call, must_ret_, fi_strerror(-must_ret_)); \
		exit(1); \
	} \
} while (0)

struct cm_event {
	struct fi_eq_cm_entry e;
	uint8_t data[256];
};

static struct sockaddr_in bound;	/* what every name must be */

static struct fi_info *hints(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		exit(1);
	h->ep_attr->type = FI_EP_MSG;
	h->caps = FI_MSG;
	h->addr_format = FI_SOCKADDR_IN;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED;
	h->fabric_attr->prov_name = strdup("efi");
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

static void wait_event(struct fid_eq *eq, uint32_t want, struct cm_event *ev)
{
	uint32_t event = 0;
	ssize_t n = fi_eq_sread(eq, &event, ev, sizeof(*ev), TIMEOUT_MS, 0);

	if (n < (ssize_t)sizeof(ev->e) || event != want) {
		printf("FAIL: waiting for CM event %u: %zd (%s), event %u\n", want, n,
		       n < 0 ? fi_strerror((int)-n) : "-", event);
		exit(1);
	}
}

static struct fid_ep *open_ep(struct fid_domain *dom, struct fi_info *info, struct fid_eq *eq,
			      struct fid_cq *cq)
{
	struct fid_ep *ep;

	MUST(fi_endpoint(dom, info, &ep, NULL));
	MUST(fi_ep_bind(ep, &eq->fid, 0));
	MUST(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	MUST(fi_enable(ep));
	return ep;
}

int main(int argc, char **argv)
{
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_FD };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE };
	struct fi_info *h = hints(), *info = NULL, *pinfo = NULL;
	struct fid_fabric *fabric;
	struct fid_domain *dom;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct cm_event ev;
	bool is_server;

	if (argc < 4 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")) ||
	    (!strcmp(argv[1], "client") && argc < 6)) {
		fprintf(stderr, "usage: fab-sockets server PORT IP | "
			"client IP PORT SRCIP SRCPORT\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	is_server = !strcmp(argv[1], "server");
	if (is_server) {
		bind_addr(argv[3], argv[2]);
		MUST(fi_getinfo(FI_VERSION(1, 17), argv[3], argv[2], FI_SOURCE, h, &pinfo));
	} else {
		bind_addr(argv[4], argv[5]);
		MUST(fi_getinfo(FI_VERSION(1, 17), argv[4], NULL, FI_SOURCE, h, &pinfo));
	}
	MUST(fi_fabric(pinfo->fabric_attr, &fabric, NULL));
	MUST(fi_eq_open(fabric, &eq_attr, &eq, NULL));
	if (is_server) {
		MUST(fi_passive_ep(fabric, pinfo, &pep, NULL));
		check_name(&pep->fid, "of the passive endpoint from FI_SOURCE IP PORT");
	} else {
		/* opened without an address, then bound as with bind(2) */
		void *saved = pinfo->src_addr;
		size_t saved_len = pinfo->src_addrlen;

		pinfo->src_addr = NULL;
		pinfo->src_addrlen = 0;
		MUST(fi_passive_ep(fabric, pinfo, &pep, NULL));
		pinfo->src_addr = saved;
		pinfo->src_addrlen = saved_len;
		MUST(fi_setname(&pep->fid, &bound, sizeof(bound)));
		check_name(&pep->fid, "of the passive endpoint after fi_setname");
	}
	MUST(fi_domain(fabric, pinfo, &dom, NULL));
	MUST(fi_cq_open(dom, &cq_attr, &cq, NULL));

	if (is_server) {
		MUST(fi_pep_bind(pep, &eq->fid, 0));
		MUST(fi_listen(pep));
		check_name(&pep->fid, "of the listening passive endpoint");
		printf("listening\n");
		wait_event(eq, FI_CONNREQ, &ev);
		ep = open_ep(dom, ev.e.info, eq, cq);
		fi_freeinfo(ev.e.info);
		MUST(fi_accept(ep, NULL, 0));
		wait_event(eq, FI_CONNECTED, &ev);
		check_name(&ep->fid, "of the accepted endpoint");
		wait_event(eq, FI_SHUTDOWN, &ev);
		MUST(fi_close(&ep->fid));
		MUST(fi_close(&pep->fid));
	} else {
		h->handle = &pep->fid;
		MUST(fi_getinfo(FI_VERSION(1, 17), argv[2], argv[3], 0, h, &info));
		h->handle = NULL;
		if (info->handle != &pep->fid) {
			printf("FAIL: fi_getinfo with hints->handle = a PEP: info->handle %p, "
			       "expected %p\n", (void *)info->handle, (void *)&pep->fid);
			return 1;
		}
		ep = open_ep(dom, info, eq, cq);
		MUST(fi_close(&pep->fid));	/* the address moved to the endpoint */
		check_name(&ep->fid, "of the endpoint opened on the passive one");
		MUST(fi_connect(ep, info->dest_addr, NULL, 0));
		wait_event(eq, FI_CONNECTED, &ev);
		check_name(&ep->fid, "of the connected endpoint");
		MUST(fi_shutdown(ep, 0));
		MUST(fi_close(&ep->fid));
		fi_freeinfo(info);
	}
	MUST(fi_close(&cq->fid));
	MUST(fi_close(&dom->fid));
	MUST(fi_close(&eq->fid));
	MUST(fi_close(&fabric->fid));
	fi_freeinfo(pinfo);
	fi_freeinfo(h);
	printf("%s: ok\n", argv[1]);
	return 0;
}
