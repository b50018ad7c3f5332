/* SPDX-License-Identifier: MIT */
/*
 * Device, PD, buffers, CQs and QPs of an efi-perf run, and the RC connection
 * from the peer's QP description: RESET → INIT → RTR → RTS as perftest.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "tools/efi-perf/perf.h"

static bool gid_is_v4_mapped(const union efi_gid *g)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g->raw, prefix, sizeof(prefix));
}

static bool gid_is_link_local(const union efi_gid *g)
{
	return g->raw[0] == 0xfe && (g->raw[1] & 0xc0) == 0x80;
}

/* -x, or the first IPv4-mapped GID, else the first that is not link-local:
 * the address the peer can reach without a scope. */
static void pick_gid(struct perf_ctx *pc, const struct perf_opts *opts)
{
	union efi_gid g;
	int i, fallback = -1;

	if (pc->port_attr.gid_tbl_len <= 0)
		perf_die("device %s has no GID: its interface has no address", pc->dev_name);
	if (opts->gid_index >= 0) {
		if (opts->gid_index >= pc->port_attr.gid_tbl_len ||
		    efi_query_gid(pc->ctx, 1, opts->gid_index, &pc->gid))
			perf_die("-x: device %s has no GID index %d (it has %d GIDs, 0 … %d)", pc->dev_name,
				 opts->gid_index, pc->port_attr.gid_tbl_len, pc->port_attr.gid_tbl_len - 1);
		pc->gid_index = opts->gid_index;
		return;
	}
	for (i = 0; i < pc->port_attr.gid_tbl_len; i++) {
		if (efi_query_gid(pc->ctx, 1, i, &g))
			continue;
		if (gid_is_v4_mapped(&g)) {
			pc->gid_index = i;
			pc->gid = g;
			return;
		}
		if (fallback < 0 && !gid_is_link_local(&g))
			fallback = i;
	}
	pc->gid_index = fallback >= 0 ? fallback : 0;
	if (efi_query_gid(pc->ctx, 1, pc->gid_index, &pc->gid))
		perf_die("cannot read GID %d of %s", pc->gid_index, pc->dev_name);
}

void perf_open(struct perf_ctx *pc, const struct perf_opts *opts)
{
	struct efi_device **list, *dev = NULL;
	int n = 0, rc;

	pc->opts = opts;
	list = efi_get_device_list(&n);
	if (!list)
		perf_die("cannot list EFI devices: %s (is efid running? is $EFI_SOCKET right?)",
			 strerror(errno));
	if (n == 0)
		perf_die("no EFI device: this process sees no EFI interface (run it inside an "
			 "instance, e.g. ip netns exec INSTANCE efi-perf …, after efictl attach)");
	for (int i = 0; i < n; i++) {
		if (!opts->dev_name || !strcmp(efi_get_device_name(list[i]), opts->dev_name)) {
			dev = list[i];
			break;
		}
	}
	if (!dev) {
		char names[256] = "";

		for (int i = 0; i < n; i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "",
				 efi_get_device_name(list[i]));
		perf_die("no EFI device named '%s' here (devices: %s)", opts->dev_name, names);
	}
	snprintf(pc->dev_name, sizeof(pc->dev_name), "%s", efi_get_device_name(dev));
	pc->ctx = efi_open_device(dev);
	if (!pc->ctx)
		perf_die("cannot open device %s: %s", pc->dev_name, strerror(errno));
	efi_free_device_list(list);

	if ((rc = efi_query_device(pc->ctx, &pc->dev_attr)))
		perf_die("efi_query_device: %s", strerror(rc));
	if ((rc = efi_query_port(pc->ctx, 1, &pc->port_attr)))
		perf_die("efi_query_port: %s", strerror(rc));
	if (pc->port_attr.state != EFI_PORT_ACTIVE)
		perf_die("device %s is not active (port state %s): is its interface up with an address?",
			 pc->dev_name, efi_port_state_str(pc->port_attr.state));
	pick_gid(pc, opts);

	if (opts->inline_size >= 0) {
		if ((uint32_t)opts->inline_size > pc->dev_attr.max_inline_data)
			perf_die("-I %d: device %s sends at most %u bytes inline", opts->inline_size,
				 pc->dev_name, pc->dev_attr.max_inline_data);
		pc->inline_size = opts->inline_size;
	} else if (opts->kind == PERF_LAT && (opts->verb == PERF_SEND || opts->verb == PERF_WRITE)) {
		pc->inline_size = pc->dev_attr.max_inline_data < 128 ? (int)pc->dev_attr.max_inline_data : 128;
	}

	pc->pd = efi_alloc_pd(pc->ctx);
	if (!pc->pd)
		perf_die("efi_alloc_pd: %s", strerror(errno));
	if (opts->events) {
		pc->channel = efi_create_comp_channel(pc->ctx);
		if (!pc->channel)
			perf_die("efi_create_comp_channel: %s", strerror(errno));
	}
}

static int clamp(int want, int max)
{
	return max > 0 && want > max ? max : want;
}

/* --use-srq: one SRQ with room for every QP's receives (perftest's
 * --use-srq gives its QPs one too), as far as the device allows. */
static void create_srq(struct perf_ctx *pc)
{
	const struct efi_device_attr *da = &pc->dev_attr;
	struct efi_srq_init_attr sa = { 0 };

	/* an SRQ holds as many receives as a QP's receive queue may */
	sa.attr.max_wr = (uint32_t)clamp(PERF_RX_DEPTH * pc->num_qps, da->max_qp_wr);
	sa.attr.max_sge = 1;
	pc->srq = efi_create_srq(pc->pd, &sa);
	if (!pc->srq)
		perf_die("efi_create_srq(%u receives): %s", sa.attr.max_wr, strerror(errno));
	pc->srq_size = (int)sa.attr.max_wr;
}

void perf_create_qps(struct perf_ctx *pc, size_t half)
{
	const struct efi_device_attr *da = &pc->dev_attr;
	int access = EFI_ACCESS_LOCAL_WRITE | EFI_ACCESS_REMOTE_WRITE | EFI_ACCESS_REMOTE_READ |
		     EFI_ACCESS_REMOTE_ATOMIC;

	pc->num_qps = pc->opts->num_qps;
	if (pc->opts->use_srq)
		create_srq(pc);
	for (int i = 0; i < pc->num_qps; i++) {
		struct perf_qp *pq = &pc->qps[i];
		struct efi_qp_init_attr ia = { 0 };
		struct efi_qp_attr qa = { 0 };
		size_t buf_size = 2 * half, alloc = (buf_size + 4095) & ~(size_t)4095;
		int rc;

		pq->buf = aligned_alloc(4096, alloc);
		if (!pq->buf)
			perf_die("cannot allocate %zu bytes of buffer", alloc);
		memset(pq->buf, 0, alloc);
		pq->buf_size = buf_size;
		pq->half = half;
		pq->mr = efi_reg_mr(pc->pd, pq->buf, buf_size, access);
		if (!pq->mr)
			perf_die("efi_reg_mr(%zu bytes): %s", buf_size, strerror(errno));
		pq->cq = efi_create_cq(pc->ctx, clamp(PERF_TX_DEPTH + PERF_RX_DEPTH + 16, da->max_cqe), pq,
				       pc->channel, 0);
		if (!pq->cq)
			perf_die("efi_create_cq: %s", strerror(errno));
		ia.send_cq = pq->cq;
		ia.recv_cq = pq->cq;
		ia.srq = pc->srq;
		ia.qp_type = EFI_QPT_RC;
		ia.cap.max_send_wr = (uint32_t)clamp(PERF_TX_DEPTH, da->max_qp_wr);
		/* with an SRQ the QP has no receive queue of its own */
		ia.cap.max_recv_wr = pc->srq ? 0 : (uint32_t)clamp(PERF_RX_DEPTH, da->max_qp_wr);
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		ia.cap.max_inline_data = (uint32_t)pc->inline_size;
		pq->qp = efi_create_qp(pc->pd, &ia);
		if (!pq->qp)
			perf_die("efi_create_qp: %s", strerror(errno));
		if (getrandom(&pq->psn, sizeof(pq->psn), 0) != sizeof(pq->psn))
			pq->psn = (uint32_t)getpid() * 2654435761u;
		pq->psn &= 0xffffff;

		qa.qp_state = EFI_QPS_INIT;
		qa.port_num = 1;
		qa.pkey_index = 0;
		qa.qp_access_flags = EFI_ACCESS_REMOTE_WRITE | EFI_ACCESS_REMOTE_READ | EFI_ACCESS_REMOTE_ATOMIC;
		rc = efi_modify_qp(pq->qp, &qa, EFI_QP_STATE | EFI_QP_ACCESS_FLAGS | EFI_QP_PKEY_INDEX | EFI_QP_PORT);
		if (rc)
			perf_die("efi_modify_qp(INIT): %s", strerror(rc));
	}
}

void perf_connect_qps(struct perf_ctx *pc)
{
	const struct efi_device_attr *da = &pc->dev_attr;
	int rd_atom = clamp(clamp(16, da->max_qp_rd_atom), da->max_qp_init_rd_atom);

	for (int i = 0; i < pc->num_qps; i++) {
		struct perf_qp *pq = &pc->qps[i];
		struct efi_qp_attr qa = { 0 };
		int rc;

		qa.qp_state = EFI_QPS_RTR;
		qa.path_mtu = pc->port_attr.active_mtu;
		qa.dest_qp_num = pq->remote.qpn;
		qa.rq_psn = pq->remote.psn;
		qa.max_dest_rd_atomic = (uint8_t)rd_atom;
		qa.min_rnr_timer = 12;		/* 0.64 ms, perftest's value */
		qa.ah_attr.is_global = 1;
		qa.ah_attr.port_num = 1;
		qa.ah_attr.grh.dgid = pq->remote.gid;
		qa.ah_attr.grh.sgid_index = (uint8_t)pc->gid_index;
		qa.ah_attr.grh.hop_limit = 64;
		rc = efi_modify_qp(pq->qp, &qa, EFI_QP_STATE | EFI_QP_AV | EFI_QP_PATH_MTU | EFI_QP_DEST_QPN |
				   EFI_QP_RQ_PSN | EFI_QP_MAX_DEST_RD_ATOMIC | EFI_QP_MIN_RNR_TIMER);
		if (rc)
			perf_die("efi_modify_qp(RTR): %s (does the peer's GID family match the local one? "
				 "see -x)", strerror(rc));

		qa.qp_state = EFI_QPS_RTS;
		qa.timeout = 14;		/* 4.096 µs × 2^14 = 67 ms */
		qa.retry_cnt = 7;
		qa.rnr_retry = 7;		/* forever: send_bw outruns the receiver */
		qa.sq_psn = pq->psn;
		qa.max_rd_atomic = (uint8_t)rd_atom;
		rc = efi_modify_qp(pq->qp, &qa, EFI_QP_STATE | EFI_QP_TIMEOUT | EFI_QP_RETRY_CNT |
				   EFI_QP_RNR_RETRY | EFI_QP_SQ_PSN | EFI_QP_MAX_QP_RD_ATOMIC);
		if (rc)
			perf_die("efi_modify_qp(RTS): %s", strerror(rc));
	}
}

void perf_close(struct perf_ctx *pc)
{
	perf_cm_close(pc);
	for (int i = pc->num_qps - 1; i >= 0; i--) {
		struct perf_qp *pq = &pc->qps[i];

		efi_destroy_qp(pq->qp);
		efi_destroy_cq(pq->cq);
		efi_dereg_mr(pq->mr);
		free(pq->buf);
	}
	/* after its QPs: an SRQ in use cannot be destroyed (EBUSY) */
	if (pc->srq) {
		int rc = efi_destroy_srq(pc->srq);

		if (rc)
			perf_die("efi_destroy_srq: %s", strerror(rc));
	}
	efi_destroy_comp_channel(pc->channel);
	efi_dealloc_pd(pc->pd);
	efi_close_device(pc->ctx);
	if (pc->oob_fd >= 0)
		close(pc->oob_fd);
}

static void check_wc(const struct efi_wc *wc)
{
	if (wc->status != EFI_WC_SUCCESS)
		perf_die("completion error on QP %u (wr_id %llu): %s (status %d, vendor_err %u)", wc->qp_num,
			 (unsigned long long)wc->wr_id, efi_wc_status_str(wc->status), wc->status,
			 wc->vendor_err);
}

void perf_wait_channel(struct perf_ctx *pc)
{
	struct efi_cq *ev_cq;
	void *ev_ctx;

	while (efi_get_cq_event(pc->channel, &ev_cq, &ev_ctx)) {
		if (errno != EINTR)
			perf_die("efi_get_cq_event: %s", strerror(errno));
	}
	efi_ack_cq_events(ev_cq, 1);
}

int perf_poll(struct perf_ctx *pc, struct perf_qp *pq, struct efi_wc *wc, int n, bool wait)
{
	for (;;) {
		int k = efi_poll_cq(pq->cq, n, wc);

		if (k < 0)
			perf_die("efi_poll_cq: %s", strerror(-k));
		for (int i = 0; i < k; i++)
			check_wc(&wc[i]);
		if (k > 0 || !wait)
			return k;
		if (pc->channel) {
			int rc = efi_req_notify_cq(pq->cq, 0);

			if (rc)
				perf_die("efi_req_notify_cq: %s", strerror(rc));
			k = efi_poll_cq(pq->cq, n, wc);
			if (k < 0)
				perf_die("efi_poll_cq: %s", strerror(-k));
			for (int i = 0; i < k; i++)
				check_wc(&wc[i]);
			if (k > 0)
				return k;
			perf_wait_channel(pc);
		}
	}
}

void perf_recv_taken(struct perf_ctx *pc, struct perf_qp *pq)
{
	if (pc->srq)
		pc->srq_posted--;
	else
		pq->recvs_posted--;
}

/* The SRQ's receives all go to qps[0]'s first half, which is as large as
 * every QP's (one buffer size per run). */
static void fill_srq(struct perf_ctx *pc, int depth)
{
	struct perf_qp *q0 = &pc->qps[0];
	struct efi_sge sge = { .addr = (uintptr_t)q0->buf, .length = (uint32_t)q0->half,
			       .lkey = q0->mr->lkey };
	struct efi_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	int want = clamp(depth * pc->num_qps, pc->srq_size);

	while (pc->srq_posted < want) {
		int rc = efi_post_srq_recv(pc->srq, &wr, &bad);

		if (rc)
			perf_die("efi_post_srq_recv: %s", strerror(rc));
		pc->srq_posted++;
	}
}

void perf_fill_recvs(struct perf_ctx *pc, struct perf_qp *pq, int depth)
{
	struct efi_sge sge = { .addr = (uintptr_t)pq->buf, .length = (uint32_t)pq->half,
			       .lkey = pq->mr->lkey };
	struct efi_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	if (pc->srq) {
		fill_srq(pc, depth);
		return;
	}
	while (pq->recvs_posted < depth) {
		int rc = efi_post_recv(pq->qp, &wr, &bad);

		if (rc)
			perf_die("efi_post_recv: %s", strerror(rc));
		pq->recvs_posted++;
	}
}

void perf_post_one(struct perf_ctx *pc, struct perf_qp *pq, enum efi_wr_opcode op, uint32_t size,
		   bool signaled, uint64_t wr_id)
{
	struct efi_sge sge = { .addr = (uintptr_t)(pq->buf + pq->half), .length = size,
			       .lkey = pq->mr->lkey };
	struct efi_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = size ? 1 : 0,
				  .opcode = op }, *bad;
	int rc;

	if (signaled)
		wr.send_flags |= EFI_SEND_SIGNALED;
	if (size && (int)size <= pc->inline_size && (op == EFI_WR_SEND || op == EFI_WR_RDMA_WRITE))
		wr.send_flags |= EFI_SEND_INLINE;
	if (op == EFI_WR_ATOMIC_FETCH_AND_ADD) {
		sge.length = 8;
		wr.num_sge = 1;
		wr.wr.atomic.remote_addr = pq->remote.addr;
		wr.wr.atomic.rkey = pq->remote.rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.wr.rdma.remote_addr = pq->remote.addr;
		wr.wr.rdma.rkey = pq->remote.rkey;
	}
	rc = efi_post_send(pq->qp, &wr, &bad);
	if (rc)
		perf_die("efi_post_send: %s", strerror(rc));
}
