/* SPDX-License-Identifier: MIT */
/*
 * fab-rdm: remote CQ data through ofi_rxm on efi ("efi;ofi_rxm",
 * FI_EP_RDM, what MPI uses): fi_getinfo for FI_MSG|FI_TAGGED without any
 * mode offers cq_data_size > 0, and fi_senddata/fi_tsenddata with data 0
 * and 0x1234abcd reach the server with FI_REMOTE_CQ_DATA and their data
 * (issue 21: data 0 arrived without the flag over rdm, as over msg).
 *
 *   fab-rdm server PORT
 *   fab-rdm client IP PORT
 *
 * Exit status 0 when every message carried its data.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#define TIMEOUT_MS 30000
#define DATA_X 0x1234abcdu
#define NMSG 4

#define MUST(call) do { \
	int must_ret_ = (int)(call); \
	if (must_ret_) { \
		printf("FAIL: %s: %d (%s)\n", #call, must_ret_, fi_strerror(-must_ret_)); \
		exit(1); \
	} \
} while (0)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The next completion (progressing rxm by reading), or exit. */
static struct fi_cq_data_entry next_comp(struct fid_cq *cq, const char *what)
{
	struct fi_cq_data_entry e;
	double end = now_ms() + TIMEOUT_MS;

	while (now_ms() < end) {
		ssize_t n = fi_cq_read(cq, &e, 1);

		if (n == 1)
			return e;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(cq, &err, 0);
			printf("FAIL: %s: error completion %d (%s)\n", what, err.err,
			       fi_strerror(err.err));
			exit(1);
		}
		if (n != -FI_EAGAIN) {
			printf("FAIL: %s: fi_cq_read %zd\n", what, n);
			exit(1);
		}
	}
	printf("FAIL: %s: nothing in %d ms\n", what, TIMEOUT_MS);
	exit(1);
}

int main(int argc, char **argv)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	struct fi_info *h = fi_allocinfo(), *info;
	struct fid_fabric *fabric;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fid_mr *mr;
	static const uint64_t datas[NMSG] = { 0, DATA_X, 0, DATA_X };
	char buf[NMSG][64];
	struct fi_context ctx[NMSG];
	bool is_server;

	if (!h || argc < 3 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")) ||
	    (!strcmp(argv[1], "client") && argc < 4)) {
		fprintf(stderr, "usage: fab-rdm server PORT | client IP PORT\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	is_server = !strcmp(argv[1], "server");
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_TAGGED;
	h->mode = 0;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY;
	h->fabric_attr->prov_name = strdup("efi;ofi_rxm");
	if (is_server)
		MUST(fi_getinfo(FI_VERSION(1, 17), NULL, argv[2], FI_SOURCE, h, &info));
	else
		MUST(fi_getinfo(FI_VERSION(1, 17), argv[2], argv[3], 0, h, &info));
	fi_freeinfo(h);
	if (!info->domain_attr->cq_data_size) {
		printf("FAIL: efi;ofi_rxm offers no remote CQ data (cq_data_size 0)\n");
		return 1;
	}
	printf("efi;ofi_rxm: cq_data_size %zu\n", info->domain_attr->cq_data_size);
	MUST(fi_fabric(info->fabric_attr, &fabric, NULL));
	MUST(fi_domain(fabric, info, &dom, NULL));
	MUST(fi_av_open(dom, &av_attr, &av, NULL));
	MUST(fi_cq_open(dom, &cq_attr, &cq, NULL));
	MUST(fi_endpoint(dom, info, &ep, NULL));
	MUST(fi_ep_bind(ep, &av->fid, 0));
	MUST(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	MUST(fi_enable(ep));
	MUST(fi_mr_reg(dom, buf, sizeof(buf), FI_SEND | FI_RECV, 0, 0, 0, &mr, NULL));

	if (is_server) {
		bool seen[NMSG] = { false };

		for (int i = 0; i < NMSG / 2; i++)
			MUST(fi_recv(ep, buf[i], sizeof(buf[i]), fi_mr_desc(mr), FI_ADDR_UNSPEC,
				     &ctx[i]));
		for (int i = NMSG / 2; i < NMSG; i++)
			MUST(fi_trecv(ep, buf[i], sizeof(buf[i]), fi_mr_desc(mr), FI_ADDR_UNSPEC,
				      7, 0, &ctx[i]));
		printf("listening\n");
		for (int n = 0; n < NMSG; n++) {
			struct fi_cq_data_entry e = next_comp(cq, "a message with data");
			int i = (int)((struct fi_context *)e.op_context - ctx);

			if (i < 0 || i >= NMSG || seen[i]) {
				printf("FAIL: a completion with context %p\n", e.op_context);
				return 1;
			}
			seen[i] = true;
			printf("message %d: flags 0x%llx data 0x%llx\n", i,
			       (unsigned long long)e.flags, (unsigned long long)e.data);
			if (!(e.flags & FI_REMOTE_CQ_DATA) || e.data != datas[i]) {
				printf("FAIL: message %d (data 0x%llx sent) arrived %s "
				       "FI_REMOTE_CQ_DATA, data 0x%llx\n", i,
				       (unsigned long long)datas[i],
				       (e.flags & FI_REMOTE_CQ_DATA) ? "with" : "without",
				       (unsigned long long)e.data);
				return 1;
			}
		}
	} else {
		fi_addr_t srv;

		if (fi_av_insert(av, info->dest_addr, 1, &srv, 0, NULL) != 1) {
			printf("FAIL: fi_av_insert of the server's address\n");
			return 1;
		}
		int done = 0;

		for (int i = 0; i < NMSG; i++) {
			double end = now_ms() + TIMEOUT_MS;
			ssize_t ret;

			snprintf(buf[i], sizeof(buf[i]), "message %d", i);
			/* -FI_EAGAIN while rxm connects: progress it and retry */
			do {
				struct fi_cq_data_entry e;

				if (i < NMSG / 2)
					ret = fi_senddata(ep, buf[i], 16, fi_mr_desc(mr), datas[i],
							  srv, &ctx[i]);
				else
					ret = fi_tsenddata(ep, buf[i], 16, fi_mr_desc(mr), datas[i],
							   srv, 7, &ctx[i]);
				if (ret == -FI_EAGAIN && fi_cq_read(cq, &e, 1) == 1)
					done++;
			} while (ret == -FI_EAGAIN && now_ms() < end);
			MUST(ret);
		}
		for (; done < NMSG; done++)
			next_comp(cq, "a send's completion");
		printf("%d messages sent\n", NMSG);
	}
	/* let the other side finish before the connection goes */
	{
		double end = now_ms() + 500;
		struct fi_cq_data_entry e;

		while (now_ms() < end)
			(void)fi_cq_read(cq, &e, 1);
	}
	MUST(fi_close(&ep->fid));
	MUST(fi_close(&mr->fid));
	MUST(fi_close(&cq->fid));
	MUST(fi_close(&av->fid));
	MUST(fi_close(&dom->fid));
	MUST(fi_close(&fabric->fid));
	fi_freeinfo(info);
	printf("%s: ok\n", argv[1]);
	return 0;
}
