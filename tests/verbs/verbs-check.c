/* SPDX-License-Identifier: MIT */
/*
 * verbs-check: a libibverbs program of our own, compiled against the
 * system's <infiniband/verbs.h> and linked with -libverbs, run under efi-run
 * inside an instance (tests/verbs/t-verbs-api.sh).  It proves what the
 * ibverbs-utils and perftest runs do not show by themselves:
 *
 *  - every ibv_* it calls binds to libefi-verbs.so (dladdr), not libibverbs;
 *  - the device: name, stable GUID, port (Ethernet, active, MTU), RoCEv2
 *    GIDs, P_Key;
 *  - ibv_query_device_ex answers itself (phys_port_cnt_ex, no timestamps),
 *    the vendor id is EFI's; extended verbs EFI lacks fail as libibverbs
 *    makes them for a provider without them (ibv_create_cq_ex,
 *    ibv_alloc_td … → EOPNOTSUPP);
 *  - send-only QPs, create flags 0, shared receive queues (issue 16): two
 *    QPs on one SRQ, ibv_post_srq_recv through the header, the limit event
 *    and the last-WQE event through ibv_get_async_event;
 *  - the header's inline data path over two RC QPs of one context, looped
 *    through the instance's own GID: Send, Write, Read, atomics, the
 *    ibv_wr_* API, completion events;
 *  - async events: a QP whose peer never answers completes with
 *    RETRY_EXC_ERR and ibv_get_async_event reports IBV_EVENT_QP_FATAL for it.
 *
 * Usage: verbs-check DEVICE EXPECTED_GID0 LIBRARY_SUBSTRING
 * Prints one line per check; exits 0 when all pass, 1 otherwise.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define VTEST_PROG "verbs-check"
#include "vtest.h"

/* Which shared object holds the function the program called. */
static const char *object_of(void *fn)
{
	Dl_info info;

	return dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "?";
}

struct side {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

static void connect_qp(struct ibv_qp *qp, uint32_t dest_qpn, const union ibv_gid *dgid,
		       enum ibv_mtu mtu, uint8_t timeout, uint8_t retry)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		DIE("modify to INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.sgid_index = 0;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		DIE("modify to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = retry;
	a.rnr_retry = 7;
	a.sq_psn = 1;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		DIE("modify to RTS");
}

static struct ibv_qp *make_qp(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq, int ex)
{
	struct ibv_qp_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.send_cq = cq;
	a.recv_cq = cq;
	a.cap.max_send_wr = 16;
	a.cap.max_recv_wr = 16;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.cap.max_inline_data = 64;
	a.qp_type = IBV_QPT_RC;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	if (ex) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE;
	}
	return ibv_create_qp_ex(ctx, &a);
}

static int send_one(struct ibv_qp *qp, enum ibv_wr_opcode op, struct ibv_mr *mr, void *buf,
		    uint32_t len, uint64_t raddr, uint32_t rkey, unsigned int flags)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED | flags;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 5;
	}
	return ibv_post_send(qp, &wr, &bad);
}

static int post_recv(struct ibv_qp *qp, struct ibv_mr *mr, void *buf, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 77, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_device_attr_ex dx;
	struct ibv_port_attr port;
	struct ibv_gid_entry ge;
	union ibv_gid gid, want;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq, *cq2;
	struct ibv_qp *a, *b, *x, *y, *dead;
	struct ibv_wc wc;
	struct ibv_async_event ev;
	char want_text[64];
	__be16 pkey;
	uint64_t guid;
	int n, access, found = -1;
	char *buf;

	if (argc != 4)
		DIE("usage: verbs-check DEVICE EXPECTED_GID0 LIBRARY_SUBSTRING");
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (inet_pton(AF_INET6, argv[2], &want) != 1)
		DIE("bad GID %s", argv[2]);

	/* every entry point we use is EFI's */
	{
		void *fns[] = { (void *)ibv_get_device_list, (void *)ibv_open_device,
				(void *)ibv_create_qp, (void *)ibv_modify_qp, (void *)ibv_reg_mr,
				(void *)ibv_reg_mr_iova2, (void *)ibv_get_cq_event,
				(void *)ibv_get_async_event, (void *)ibv_wc_status_str,
				(void *)_ibv_query_gid_ex };
		int all = 1;

		for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
			if (!strstr(object_of(fns[i]), argv[3])) {
				printf("  bound to %s\n", object_of(fns[i]));
				all = 0;
			}
		check(all, "ibv_* entry points bind to libefi-verbs");
	}

	list = ibv_get_device_list(&n);
	if (!list)
		DIE("ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			found = i;
	check(found >= 0, "the instance's interface is a device");
	if (found < 0)
		return 1;
	guid = ibv_get_device_guid(list[found]);
	check(guid != 0, "non-zero node GUID");
	check(ibv_get_device_index(list[found]) == found, "ibv_get_device_index");
	/* the node systemd/efi-verbs.conf makes, which UCX stats */
	check(!strcmp(list[found]->dev_name, "efi"), "dev_name is \"efi\" (/dev/infiniband/efi)");
	ctx = ibv_open_device(list[found]);
	if (!ctx)
		DIE("ibv_open_device: %s", strerror(errno));
	ibv_free_device_list(list);	/* the open context keeps its device */

	memset(&dx, 0xa5, sizeof(dx));
	check(ibv_query_device_ex(ctx, NULL, &dx) == 0 && dx.orig_attr.phys_port_cnt == 1 &&
	      dx.orig_attr.node_guid == guid && dx.orig_attr.atomic_cap != IBV_ATOMIC_NONE &&
	      dx.phys_port_cnt_ex == 1 && dx.completion_timestamp_mask == 0 &&
	      dx.hca_core_clock == 0 && dx.odp_caps.general_caps == 0 && dx.comp_mask == 0 &&
	      dx.orig_attr.max_srq > 0 && dx.orig_attr.max_srq_wr > 0 &&
	      (dx.device_cap_flags_ex & IBV_DEVICE_SRQ_RESIZE),
	      "ibv_query_device_ex: phys_port_cnt_ex 1, no timestamps, SRQ limits, GUID matches");
	printf("  vendor_id 0x%x\n", dx.orig_attr.vendor_id);
	check(dx.orig_attr.vendor_id == 0x454649, "vendor_id is EFI's (0x454649, \"EFI\")");
	check(ibv_query_port(ctx, 1, &port) == 0 && port.state == IBV_PORT_ACTIVE &&
	      port.link_layer == IBV_LINK_LAYER_ETHERNET && port.active_mtu >= IBV_MTU_1024 &&
	      port.gid_tbl_len >= 1, "port 1: active, Ethernet, MTU, GIDs");
	check((port.port_cap_flags & (IBV_PORT_IP_BASED_GIDS | IBV_PORT_CM_SUP)) ==
	      (IBV_PORT_IP_BASED_GIDS | IBV_PORT_CM_SUP), "port 1: IP-based GIDs, CM supported (as RoCE)");
	check(ibv_query_port(ctx, 2, &port) != 0, "port 2 does not exist");
	check(ibv_query_gid(ctx, 1, 0, &gid) == 0 && !memcmp(&gid, &want, sizeof(gid)),
	      "GID 0 is the interface's address (IPv4-mapped)");
	inet_ntop(AF_INET6, &gid, want_text, sizeof(want_text));
	printf("  GID 0: %s\n", want_text);
	check(ibv_query_gid_ex(ctx, 1, 0, &ge, 0) == 0 && ge.gid_type == IBV_GID_TYPE_ROCE_V2 &&
	      ge.ndev_ifindex > 0, "ibv_query_gid_ex: RoCE v2 on the interface's netdev");
	check(ibv_query_gid_ex(ctx, 1, 4096, &ge, 0) != 0, "ibv_query_gid_ex beyond the table fails");
	check(ibv_query_pkey(ctx, 1, 0, &pkey) == 0 && pkey == htons(0xffff), "P_Key 0 is 0xffff");

	/* extended verbs a provider may lack */
	{
		struct ibv_cq_init_attr_ex ca = { .cqe = 4 };
		struct ibv_td_init_attr ta = { 0 };
		struct ibv_values_ex vals = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };

		errno = 0;
		check(!ibv_create_cq_ex(ctx, &ca) && errno == EOPNOTSUPP, "ibv_create_cq_ex: EOPNOTSUPP");
		errno = 0;
		check(!ibv_alloc_td(ctx, &ta) && errno == EOPNOTSUPP, "ibv_alloc_td: EOPNOTSUPP");
		check(ibv_query_rt_values_ex(ctx, &vals) == EOPNOTSUPP, "ibv_query_rt_values_ex: EOPNOTSUPP");
		pd = ibv_alloc_pd(ctx);
		if (!pd)
			DIE("ibv_alloc_pd");
		errno = 0;
		check(!ibv_alloc_mw(pd, IBV_MW_TYPE_1) && errno == EOPNOTSUPP, "ibv_alloc_mw: EOPNOTSUPP");
	}

	buf = aligned_alloc(4096, 65536);
	if (!buf)
		DIE("out of memory");
	memset(buf, 0, 65536);
	/* access not known at compile time: the header routes this through
	 * ibv_reg_mr_iova2; the optional relaxed-ordering bit is accepted */
	access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		 IBV_ACCESS_REMOTE_ATOMIC | (argc > 100 ? 0 : IBV_ACCESS_RELAXED_ORDERING);
	mr = ibv_reg_mr(pd, buf, 65536, access);
	check(mr && mr->lkey && mr->addr == buf, "ibv_reg_mr (via ibv_reg_mr_iova2, relaxed ordering)");
	if (!mr)
		return 1;

	ch = ibv_create_comp_channel(ctx);
	cq = ibv_create_cq(ctx, 64, (void *)0x1234, ch, 0);
	cq2 = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!ch || !cq || !cq2)
		DIE("channel/CQ");
	a = make_qp(ctx, pd, cq, 0);
	b = make_qp(ctx, pd, cq, 0);
	x = make_qp(ctx, pd, cq, 1);
	y = make_qp(ctx, pd, cq, 0);
	dead = make_qp(ctx, pd, cq2, 0);
	if (!a || !b || !x || !y || !dead)
		DIE("create QPs: %s", strerror(errno));
	check(ibv_qp_to_qp_ex(a) == NULL && ibv_qp_to_qp_ex(x) != NULL,
	      "ibv_qp_to_qp_ex only for QPs created with send_ops_flags");
	connect_qp(a, b->qp_num, &gid, IBV_MTU_1024, 14, 7);
	connect_qp(b, a->qp_num, &gid, IBV_MTU_1024, 14, 7);
	/* x (the ibv_wr_* API) and y: a second pair (a QP takes packets only
	 * from its own peer) */
	connect_qp(x, y->qp_num, &gid, IBV_MTU_1024, 14, 7);
	connect_qp(y, x->qp_num, &gid, IBV_MTU_1024, 14, 7);
	{
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;

		check(ibv_query_qp(a, &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_RTS &&
		      qa.dest_qp_num == b->qp_num && qi.cap.max_send_wr >= 16 && a->state == IBV_QPS_RTS,
		      "ibv_query_qp: RTS, peer, caps");
	}

	/* Send with completion events */
	strcpy(buf + 4096, "hello over EFI");
	check(post_recv(b, mr, buf, 64) == 0, "ibv_post_recv (inline header → EFI)");
	check(ibv_req_notify_cq(cq, 0) == 0, "ibv_req_notify_cq");
	check(send_one(a, IBV_WR_SEND, mr, buf + 4096, 15, 0, 0, IBV_SEND_INLINE) == 0,
	      "ibv_post_send (inline data)");
	{
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
		struct ibv_cq *ecq;
		void *ectx;
		int got_send = 0, got_recv = 0;

		check(poll(&pfd, 1, 5000) == 1, "completion channel fd becomes readable");
		check(ibv_get_cq_event(ch, &ecq, &ectx) == 0 && ecq == cq && ectx == (void *)0x1234,
		      "ibv_get_cq_event returns the CQ and its context");
		ibv_ack_cq_events(cq, 1);
		for (int i = 0; i < 2 && poll_one(cq, &wc); i++) {
			if (wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND && wc.qp_num == a->qp_num)
				got_send = 1;
			if (wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.byte_len == 15 &&
			    wc.qp_num == b->qp_num && wc.src_qp == a->qp_num)
				got_recv = 1;
		}
		check(got_send && got_recv && !strcmp(buf, "hello over EFI"),
		      "Send: both completions, data arrived");
	}

	/* RDMA Write, Read, fetch-and-add from a to b's memory (same MR) */
	memset(buf + 8192, 'w', 1000);
	check(send_one(a, IBV_WR_RDMA_WRITE, mr, buf + 8192, 1000, (uintptr_t)(buf + 16384), mr->rkey, 0) == 0 &&
	      poll_one(cq, &wc) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE &&
	      buf[16384] == 'w' && buf[16384 + 999] == 'w', "RDMA Write");
	memset(buf + 20480, 'r', 3000);
	check(send_one(a, IBV_WR_RDMA_READ, mr, buf + 24576, 3000, (uintptr_t)(buf + 20480), mr->rkey, 0) == 0 &&
	      poll_one(cq, &wc) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ &&
	      buf[24576 + 2999] == 'r', "RDMA Read");
	*(uint64_t *)(buf + 32768) = 37;
	check(send_one(a, IBV_WR_ATOMIC_FETCH_AND_ADD, mr, buf + 32776, 8, (uintptr_t)(buf + 32768), mr->rkey, 0) == 0 &&
	      poll_one(cq, &wc) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_FETCH_ADD &&
	      *(uint64_t *)(buf + 32776) == 37 && *(uint64_t *)(buf + 32768) == 42, "fetch-and-add");
	check(send_one(a, IBV_WR_RDMA_WRITE, mr, buf, 8, (uintptr_t)buf, mr->rkey + 1, 0) == 0 &&
	      poll_one(cq, &wc) && wc.status == IBV_WC_REM_ACCESS_ERR &&
	      !strcmp(ibv_wc_status_str(wc.status), "remote access error"),
	      "a wrong rkey: remote access error");

	/* the ibv_wr_* API */
	{
		struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(x);
		char inl[] = "inline via wr api";

		memset(buf + 40960, 'x', 2000);
		ibv_wr_start(qx);
		qx->wr_id = 501;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(qx, mr->rkey, (uintptr_t)(buf + 45056));
		ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)(buf + 40960), 2000);
		qx->wr_id = 502;
		ibv_wr_rdma_write(qx, mr->rkey, (uintptr_t)(buf + 49152));
		ibv_wr_set_inline_data(qx, inl, sizeof(inl));
		memset(inl, 0, sizeof(inl));	/* copied already, as verbs promises */
		check(ibv_wr_complete(qx) == 0, "ibv_wr_complete");
		check(poll_one(cq, &wc) && wc.wr_id == 501 && wc.status == IBV_WC_SUCCESS &&
		      poll_one(cq, &wc) && wc.wr_id == 502 && wc.status == IBV_WC_SUCCESS &&
		      buf[45056 + 1999] == 'x' && !strcmp(buf + 49152, "inline via wr api"),
		      "ibv_wr_rdma_write with an SGE and with inline data");
		ibv_wr_start(qx);
		ibv_wr_send_inv(qx, 1);
		check(ibv_wr_complete(qx) == EOPNOTSUPP, "ibv_wr_send_inv: EOPNOTSUPP at ibv_wr_complete");
	}

	/* send-only QPs, create flags, SRQs (issue 16) */
	{
		struct ibv_qp_init_attr_ex qa;
		struct ibv_srq_init_attr sa = { .srq_context = (void *)0x5151,
						.attr = { .max_wr = 6, .max_sge = 1 } };
		struct ibv_srq_init_attr_ex sx;
		struct ibv_srq_attr sq;
		struct ibv_qp *s1, *s2, *r1, *r2, *so;
		struct ibv_srq *srq, *srq2;
		struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
		int got[2] = { 0, 0 }, limit = 0;

		memset(&qa, 0, sizeof(qa));
		qa.send_cq = qa.recv_cq = cq;
		qa.cap.max_send_wr = 4;
		qa.cap.max_send_sge = 1;
		qa.qp_type = IBV_QPT_RC;
		qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
		qa.pd = pd;
		qa.create_flags = 0;
		so = ibv_create_qp_ex(ctx, &qa);
		check(so && qa.cap.max_recv_wr == 0, "ibv_create_qp_ex: create flags 0, max_recv_wr 0");
		check(so && post_recv(so, mr, buf, 8) != 0, "posting a receive to a send-only QP fails");
		qa.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
		errno = 0;
		check(!ibv_create_qp_ex(ctx, &qa) && errno == EOPNOTSUPP, "create flags other than 0: EOPNOTSUPP");
		if (so)
			ibv_destroy_qp(so);

		srq = ibv_create_srq(pd, &sa);
		check(srq && sa.attr.max_wr >= 6 && srq->srq_context == (void *)0x5151 && srq->pd == pd,
		      "ibv_create_srq");
		if (!srq)
			DIE("ibv_create_srq: %s", strerror(errno));
		memset(&sx, 0, sizeof(sx));
		sx.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_CQ;
		sx.srq_type = IBV_SRQT_BASIC;
		sx.pd = pd;
		sx.cq = cq;
		sx.attr.max_wr = 4;
		srq2 = ibv_create_srq_ex(ctx, &sx);
		check(srq2 != NULL, "ibv_create_srq_ex: basic type (with a CQ)");
		check(ibv_destroy_srq(srq2) == 0, "ibv_destroy_srq");
		sx.srq_type = IBV_SRQT_XRC;
		errno = 0;
		check(!ibv_create_srq_ex(ctx, &sx) && errno == EOPNOTSUPP, "ibv_create_srq_ex: XRC EOPNOTSUPP");

		qa.comp_mask = IBV_QP_INIT_ATTR_PD;
		qa.cap.max_recv_wr = 4;
		s1 = ibv_create_qp_ex(ctx, &qa);
		s2 = ibv_create_qp_ex(ctx, &qa);
		qa.cap.max_send_wr = 0;
		qa.srq = srq;
		r1 = ibv_create_qp_ex(ctx, &qa);
		r2 = ibv_create_qp_ex(ctx, &qa);
		if (!s1 || !s2 || !r1 || !r2)
			DIE("create SRQ QPs: %s", strerror(errno));
		check(r1->srq == srq && qa.cap.max_recv_wr == 0, "a QP with an SRQ: no receive queue of its own");
		connect_qp(s1, r1->qp_num, &gid, IBV_MTU_1024, 14, 7);
		connect_qp(r1, s1->qp_num, &gid, IBV_MTU_1024, 14, 7);
		connect_qp(s2, r2->qp_num, &gid, IBV_MTU_1024, 14, 7);
		connect_qp(r2, s2->qp_num, &gid, IBV_MTU_1024, 14, 7);
		check(post_recv(r1, mr, buf, 8) == EINVAL, "ibv_post_recv on a QP with an SRQ: EINVAL");
		for (int i = 0; i < 4; i++) {
			struct ibv_sge sge = { .addr = (uintptr_t)(buf + 57344 + i * 256), .length = 256,
					       .lkey = mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = 900 + i, .sg_list = &sge, .num_sge = 1 }, *bad;

			if (ibv_post_srq_recv(srq, &wr, &bad))
				DIE("ibv_post_srq_recv");
		}
		sq.srq_limit = 3;
		check(ibv_modify_srq(srq, &sq, IBV_SRQ_LIMIT) == 0 && ibv_query_srq(srq, &sq) == 0 &&
		      sq.srq_limit == 3, "ibv_modify_srq arms the limit, ibv_query_srq shows it");
		strcpy(buf + 56000, "srq one");
		strcpy(buf + 56100, "srq two");
		check(send_one(s1, IBV_WR_SEND, mr, buf + 56000, 8, 0, 0, 0) == 0 &&
		      send_one(s2, IBV_WR_SEND, mr, buf + 56100, 8, 0, 0, 0) == 0, "Sends to two QPs of one SRQ");
		for (int i = 0; i < 4 && poll_one(cq, &wc); i++) {
			if (wc.opcode != IBV_WC_RECV || wc.status != IBV_WC_SUCCESS)
				continue;
			if (wc.qp_num == r1->qp_num && !strcmp(buf + 57344 + (wc.wr_id - 900) * 256, "srq one"))
				got[0] = 1;
			if (wc.qp_num == r2->qp_num && !strcmp(buf + 57344 + (wc.wr_id - 900) * 256, "srq two"))
				got[1] = 1;
		}
		check(got[0] && got[1], "both arrived through the SRQ, each on its QP");
		check(poll(&pfd, 1, 5000) == 1, "async_fd readable after the SRQ drops below its limit");
		/* after the QP_FATAL of the rkey check above */
		while (!limit && ibv_get_async_event(ctx, &ev) == 0) {
			limit = ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == srq;
			printf("  async event: %s\n", ibv_event_type_str(ev.event_type));
			ibv_ack_async_event(&ev);
		}
		check(limit, "ibv_get_async_event: IBV_EVENT_SRQ_LIMIT_REACHED for the SRQ");
		check(ibv_query_srq(srq, &sq) == 0 && sq.srq_limit == 0, "the event disarmed the SRQ");
		{
			struct ibv_qp_attr ea = { .qp_state = IBV_QPS_ERR };
			int last = 0;

			check(ibv_modify_qp(r1, &ea, IBV_QP_STATE) == 0, "a QP of the SRQ to ERR");
			check(poll(&pfd, 1, 5000) == 1, "async_fd readable");
			while (!last && ibv_get_async_event(ctx, &ev) == 0) {
				last = ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED && ev.element.qp == r1;
				printf("  async event: %s\n", ibv_event_type_str(ev.event_type));
				ibv_ack_async_event(&ev);
			}
			check(last, "IBV_EVENT_QP_LAST_WQE_REACHED for it");
		}
		check(ibv_destroy_srq(srq) == EBUSY, "ibv_destroy_srq while QPs use it: EBUSY");
		check(ibv_destroy_qp(s1) == 0 && ibv_destroy_qp(s2) == 0 && ibv_destroy_qp(r1) == 0 &&
		      ibv_destroy_qp(r2) == 0 && ibv_destroy_srq(srq) == 0, "destroy the SRQ's QPs, then the SRQ");
	}

	/* async: a QP whose peer QP does not exist gives up after its retries */
	{
		struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
		int fatal = 0;

		connect_qp(dead, 0xabcde, &gid, IBV_MTU_1024, 1, 1);
		check(send_one(dead, IBV_WR_RDMA_WRITE, mr, buf, 8, (uintptr_t)buf, mr->rkey, 0) == 0,
		      "post to a QP without a peer");
		{
			double end = now() + 30; /* the 10 s floor of silence, and a loaded host */

			while ((n = ibv_poll_cq(cq2, 1, &wc)) == 0 && now() < end)
				usleep(1000);
		}
		check(n == 1 && wc.status == IBV_WC_RETRY_EXC_ERR, "it completes with RETRY_EXC_ERR");
		check(poll(&pfd, 1, 5000) == 1, "async_fd becomes readable");
		/* every event taken must be acknowledged, or destroying its
		 * QP waits forever (verbs semantics) */
		while (!fatal && ibv_get_async_event(ctx, &ev) == 0) {
			fatal = ev.event_type == IBV_EVENT_QP_FATAL && ev.element.qp == dead;
			printf("  async event: %s (QP 0x%x)\n", ibv_event_type_str(ev.event_type),
			       ev.element.qp ? ev.element.qp->qp_num : 0);
			ibv_ack_async_event(&ev);
		}
		check(fatal, "ibv_get_async_event: IBV_EVENT_QP_FATAL for that QP");
		fcntl(ctx->async_fd, F_SETFL, O_NONBLOCK);
		check(ibv_get_async_event(ctx, &ev) == -1 && errno == EAGAIN,
		      "non-blocking async_fd: EAGAIN when empty");
	}

	check(ibv_destroy_qp(dead) == 0 && ibv_destroy_qp(x) == 0 && ibv_destroy_qp(y) == 0 &&
	      ibv_destroy_qp(b) == 0 &&
	      ibv_destroy_qp(a) == 0, "destroy QPs");
	check(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr");
	check(ibv_destroy_cq(cq) == 0 && ibv_destroy_cq(cq2) == 0 && ibv_destroy_comp_channel(ch) == 0,
	      "destroy CQs and channel");
	check(ibv_dealloc_pd(pd) == 0, "ibv_dealloc_pd");
	check(ibv_close_device(ctx) == 0, "ibv_close_device");
	free(buf);
	printf("%s\n", failures ? "verbs-check: FAILED" : "verbs-check: all passed");
	return failures ? 1 : 0;
}
