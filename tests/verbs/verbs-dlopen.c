/* SPDX-License-Identifier: MIT */
/*
 * verbs-dlopen: loads libibverbs as PyTorch's TensorPipe does, never linked
 * with it: dlopen("libibverbs.so.1", RTLD_LOCAL) and one dlsym per function
 * on that handle, a path LD_PRELOAD does not reach.  Under efi-run
 * (tests/verbs/t-verbs-dlopen.sh) every function found must be
 * libefi-verbs.so's, and the program moves data between two RC QPs of one
 * context looped through the instance's own GID: a Send and an RDMA Write,
 * each byte checked.
 *
 * Usage: verbs-dlopen DEVICE LIBRARY
 *   LIBRARY: the path of libefi-verbs.so the functions must come from.
 * Prints one line per check; exits 0 when all pass, 1 otherwise.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <infiniband/verbs.h>

#define VTEST_PROG "verbs-dlopen"
#include "vtest.h"

/* The table TensorPipe's IbvLib looks up (tensorpipe/common/ibv_lib.h). */
struct ibv_lib {
	struct ibv_device **(*get_device_list)(int *);
	void (*free_device_list)(struct ibv_device **);
	const char *(*get_device_name)(struct ibv_device *);
	struct ibv_context *(*open_device)(struct ibv_device *);
	int (*close_device)(struct ibv_context *);
	int (*query_port)(struct ibv_context *, uint8_t, struct ibv_port_attr *);
	int (*query_gid)(struct ibv_context *, uint8_t, int, union ibv_gid *);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *);
	int (*dealloc_pd)(struct ibv_pd *);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *, void *, size_t, int);
	int (*dereg_mr)(struct ibv_mr *);
	struct ibv_cq *(*create_cq)(struct ibv_context *, int, void *, struct ibv_comp_channel *, int);
	int (*destroy_cq)(struct ibv_cq *);
	struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *);
	int (*modify_qp)(struct ibv_qp *, struct ibv_qp_attr *, int);
	int (*destroy_qp)(struct ibv_qp *);
	struct ibv_srq *(*create_srq)(struct ibv_pd *, struct ibv_srq_init_attr *);
	int (*destroy_srq)(struct ibv_srq *);
	int (*get_async_event)(struct ibv_context *, struct ibv_async_event *);
	void (*ack_async_event)(struct ibv_async_event *);
	const char *(*event_type_str)(enum ibv_event_type);
	const char *(*wc_status_str)(enum ibv_wc_status);
};

/* dlsym NAME on the handle into *slot; checks that it is LIBRARY's */
static void lookup(void *h, const char *name, void *slot, const char *library)
{
	char real[PATH_MAX], want[PATH_MAX];
	void *fn = dlsym(h, name);
	Dl_info info;
	struct stat a, b;
	char what[160];
	int ours = 0;

	if (fn && dladdr(fn, &info) && info.dli_fname &&
	    realpath(info.dli_fname, real) && realpath(library, want) &&
	    stat(real, &a) == 0 && stat(want, &b) == 0)
		ours = a.st_dev == b.st_dev && a.st_ino == b.st_ino;
	snprintf(what, sizeof(what), "dlsym(%s) is libefi-verbs.so's (found in %s)", name,
		 fn && dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "nothing");
	check(ours, what);
	if (!fn)
		DIE("dlsym %s: %s", name, dlerror());
	memcpy(slot, &fn, sizeof(fn));
}

static void to_rts(struct ibv_lib *v, struct ibv_qp *qp, uint32_t dest, const union ibv_gid *gid)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (v->modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		DIE("modify to INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (v->modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		DIE("modify to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 1;
	if (v->modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		DIE("modify to RTS");
}

static int post(struct ibv_qp *qp, enum ibv_wr_opcode op, struct ibv_mr *mr, void *buf,
		uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

enum { LEN = 64 * 1024 };

int main(int argc, char **argv)
{
	struct ibv_lib v;
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_port_attr port;
	struct ibv_qp_init_attr qa;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge rsge;
	struct ibv_wc wc;
	union ibv_gid gid;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	unsigned char *buf, *src, *dst;
	void *h;
	int i, n, found = -1;

	if (argc != 3)
		DIE("usage: verbs-dlopen DEVICE LIBRARY");
	setvbuf(stdout, NULL, _IOLBF, 0);

	h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		DIE("dlopen libibverbs.so.1: %s", dlerror());
#define LOOK(f) lookup(h, "ibv_" #f, &v.f, argv[2])
	LOOK(get_device_list);
	LOOK(free_device_list);
	LOOK(get_device_name);
	LOOK(open_device);
	LOOK(close_device);
	LOOK(query_port);
	LOOK(query_gid);
	LOOK(alloc_pd);
	LOOK(dealloc_pd);
	LOOK(reg_mr);
	LOOK(dereg_mr);
	LOOK(create_cq);
	LOOK(destroy_cq);
	LOOK(create_qp);
	LOOK(modify_qp);
	LOOK(destroy_qp);
	LOOK(create_srq);
	LOOK(destroy_srq);
	LOOK(get_async_event);
	LOOK(ack_async_event);
	LOOK(event_type_str);
	LOOK(wc_status_str);
#undef LOOK
	if (failures)
		DIE("%d function(s) are not EFI's: libibverbs.so.1 is the system's", failures);

	list = v.get_device_list(&n);
	if (!list)
		DIE("ibv_get_device_list: %s", strerror(errno));
	for (i = 0; i < n; i++)
		if (strcmp(v.get_device_name(list[i]), argv[1]) == 0)
			found = i;
	check(found >= 0, "the instance's EFI device is listed");
	if (found < 0)
		DIE("no device %s among %d", argv[1], n);
	ctx = v.open_device(list[found]);
	if (!ctx)
		DIE("ibv_open_device: %s", strerror(errno));
	v.free_device_list(list);
	memset(&port, 0, sizeof(port));
	check(v.query_port(ctx, 1, &port) == 0 && port.state == IBV_PORT_ACTIVE &&
	      port.link_layer == IBV_LINK_LAYER_ETHERNET, "ibv_query_port: an active Ethernet port");
	if (v.query_gid(ctx, 1, 0, &gid))
		DIE("ibv_query_gid: %s", strerror(errno));

	pd = v.alloc_pd(ctx);
	buf = calloc(1, 2 * LEN);
	if (!pd || !buf)
		DIE("ibv_alloc_pd: %s", strerror(errno));
	src = buf;
	dst = buf + LEN;
	mr = v.reg_mr(pd, buf, 2 * LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	cq = v.create_cq(ctx, 64, NULL, NULL, 0);
	if (!mr || !cq)
		DIE("ibv_reg_mr/ibv_create_cq: %s", strerror(errno));
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_RC;
	a = v.create_qp(pd, &qa);
	b = v.create_qp(pd, &qa);
	if (!a || !b)
		DIE("ibv_create_qp: %s", strerror(errno));
	to_rts(&v, a, b->qp_num, &gid);
	to_rts(&v, b, a->qp_num, &gid);

	for (i = 0; i < LEN; i++)
		src[i] = (unsigned char)(i * 7 + 3);
	rsge = (struct ibv_sge){ .addr = (uintptr_t)dst, .length = LEN, .lkey = mr->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = &rsge, .num_sge = 1 };
	if (ibv_post_recv(b, &rwr, &rbad) || post(a, IBV_WR_SEND, mr, src, LEN, 0, 0))
		DIE("post Send");
	n = poll_ok(cq, &wc) && poll_ok(cq, &wc);
	check(n && memcmp(src, dst, LEN) == 0, "a 64 KiB Send arrives intact");

	memset(dst, 0, LEN);
	for (i = 0; i < LEN; i++)
		src[i] = (unsigned char)(i * 13 + 1);
	if (post(a, IBV_WR_RDMA_WRITE, mr, src, LEN, (uintptr_t)dst, mr->rkey))
		DIE("post Write");
	check(poll_ok(cq, &wc) && memcmp(src, dst, LEN) == 0, "a 64 KiB RDMA Write lands intact");

	check(v.destroy_qp(a) == 0 && v.destroy_qp(b) == 0 && v.destroy_cq(cq) == 0 &&
	      v.dereg_mr(mr) == 0 && v.dealloc_pd(pd) == 0 && v.close_device(ctx) == 0,
	      "everything is destroyed");
	free(buf);
	dlclose(h);
	if (failures)
		DIE("%d check(s) failed", failures);
	printf("verbs-dlopen: all passed\n");
	return 0;
}
