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
#include <string.h>

#include <rdma/fi_tagged.h>

#include "fabtest.h"

#define DATA_X 0x1234abcdu
#define NMSG 4

int main(int argc, char **argv)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	struct fi_info *h, *info;
	struct fab_side f = { 0 };
	struct fid_fabric *fabric;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fid_mr *mr;
	static const uint64_t datas[NMSG] = { 0, DATA_X, 0, DATA_X };
	char buf[NMSG][64];
	struct fi_context ctx[NMSG];
	const char *ip, *port;
	bool is_server = fab_args(argc, argv, "fab-rdm server PORT | client IP PORT", &ip, &port);

	h = fab_hints(FI_MSG | FI_TAGGED, 0);
	h->ep_attr->type = FI_EP_RDM;
	free(h->fabric_attr->prov_name);
	h->fabric_attr->prov_name = strdup("efi;ofi_rxm");
	fab_getinfo(&f, h, is_server, ip, port);
	info = f.info;
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
			struct fi_cq_data_entry e = fab_poll_comp(cq, "a message with data");
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
			double end = fab_now_ms() + FAB_TIMEOUT_MS;
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
			} while (ret == -FI_EAGAIN && fab_now_ms() < end);
			MUST(ret);
		}
		for (; done < NMSG; done++)
			fab_poll_comp(cq, "a send's completion");
		printf("%d messages sent\n", NMSG);
	}
	/* let the other side finish before the connection goes */
	{
		double end = fab_now_ms() + 500;
		struct fi_cq_data_entry e;

		while (fab_now_ms() < end)
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
