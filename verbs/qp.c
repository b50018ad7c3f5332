/* SPDX-License-Identifier: MIT */
/*
 * Queue pairs and the data path: create/modify/query/destroy, and the
 * ibv_context.ops entries the header's inline ibv_post_send, ibv_post_recv,
 * ibv_poll_cq and ibv_req_notify_cq call.
 *
 * libefi's work requests, SGEs, work completions and QP attributes are laid
 * out as verbs' (efi.h says so; the asserts below hold it to that), so the
 * data path passes the program's own structs through without copying.  A
 * verbs send WR is longer than libefi's, but only at its end (UD, XRC, MW
 * and TSO fields libefi never reads), and lists are walked through `next`.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_int.h"

#define SAME_FIELD(a, b, f) (offsetof(a, f) == offsetof(b, f) && \
			     sizeof(((a *)0)->f) == sizeof(((b *)0)->f))

_Static_assert(sizeof(struct ibv_wc) == sizeof(struct efi_wc) &&
	       SAME_FIELD(struct ibv_wc, struct efi_wc, wr_id) &&
	       SAME_FIELD(struct ibv_wc, struct efi_wc, status) &&
	       SAME_FIELD(struct ibv_wc, struct efi_wc, opcode) &&
	       SAME_FIELD(struct ibv_wc, struct efi_wc, vendor_err) &&
	       SAME_FIELD(struct ibv_wc, struct efi_wc, byte_len) &&
	       SAME_FIELD(struct ibv_wc, struct efi_wc, imm_data) &&
	       SAME_FIELD(struct ibv_wc, struct efi_wc, qp_num) &&
	       SAME_FIELD(struct ibv_wc, struct efi_wc, src_qp) &&
	       SAME_FIELD(struct ibv_wc, struct efi_wc, wc_flags) &&
	       SAME_FIELD(struct ibv_wc, struct efi_wc, pkey_index) &&
	       SAME_FIELD(struct ibv_wc, struct efi_wc, dlid_path_bits), "ibv_wc layout");
_Static_assert(IBV_WC_SUCCESS == (int)EFI_WC_SUCCESS &&
	       IBV_WC_WR_FLUSH_ERR == (int)EFI_WC_WR_FLUSH_ERR &&
	       IBV_WC_RETRY_EXC_ERR == (int)EFI_WC_RETRY_EXC_ERR &&
	       IBV_WC_GENERAL_ERR == (int)EFI_WC_GENERAL_ERR &&
	       IBV_WC_RECV == (int)EFI_WC_RECV &&
	       IBV_WC_RECV_RDMA_WITH_IMM == (int)EFI_WC_RECV_RDMA_WITH_IMM &&
	       IBV_WC_FETCH_ADD == (int)EFI_WC_FETCH_ADD &&
	       IBV_WC_WITH_IMM == (int)EFI_WC_WITH_IMM, "ibv_wc values");
_Static_assert(SAME_FIELD(struct ibv_send_wr, struct efi_send_wr, wr_id) &&
	       SAME_FIELD(struct ibv_send_wr, struct efi_send_wr, next) &&
	       SAME_FIELD(struct ibv_send_wr, struct efi_send_wr, sg_list) &&
	       SAME_FIELD(struct ibv_send_wr, struct efi_send_wr, num_sge) &&
	       SAME_FIELD(struct ibv_send_wr, struct efi_send_wr, opcode) &&
	       SAME_FIELD(struct ibv_send_wr, struct efi_send_wr, send_flags) &&
	       SAME_FIELD(struct ibv_send_wr, struct efi_send_wr, imm_data) &&
	       SAME_FIELD(struct ibv_send_wr, struct efi_send_wr, wr.rdma.remote_addr) &&
	       SAME_FIELD(struct ibv_send_wr, struct efi_send_wr, wr.rdma.rkey) &&
	       SAME_FIELD(struct ibv_send_wr, struct efi_send_wr, wr.atomic.remote_addr) &&
	       SAME_FIELD(struct ibv_send_wr, struct efi_send_wr, wr.atomic.compare_add) &&
	       SAME_FIELD(struct ibv_send_wr, struct efi_send_wr, wr.atomic.swap) &&
	       SAME_FIELD(struct ibv_send_wr, struct efi_send_wr, wr.atomic.rkey) &&
	       sizeof(struct ibv_send_wr) >= sizeof(struct efi_send_wr), "ibv_send_wr layout");
_Static_assert(IBV_WR_RDMA_WRITE == (int)EFI_WR_RDMA_WRITE &&
	       IBV_WR_RDMA_WRITE_WITH_IMM == (int)EFI_WR_RDMA_WRITE_WITH_IMM &&
	       IBV_WR_SEND == (int)EFI_WR_SEND &&
	       IBV_WR_SEND_WITH_IMM == (int)EFI_WR_SEND_WITH_IMM &&
	       IBV_WR_RDMA_READ == (int)EFI_WR_RDMA_READ &&
	       IBV_WR_ATOMIC_CMP_AND_SWP == (int)EFI_WR_ATOMIC_CMP_AND_SWP &&
	       IBV_WR_ATOMIC_FETCH_AND_ADD == (int)EFI_WR_ATOMIC_FETCH_AND_ADD &&
	       IBV_SEND_FENCE == (int)EFI_SEND_FENCE && IBV_SEND_SIGNALED == (int)EFI_SEND_SIGNALED &&
	       IBV_SEND_SOLICITED == (int)EFI_SEND_SOLICITED &&
	       IBV_SEND_INLINE == (int)EFI_SEND_INLINE, "ibv_send_wr values");
_Static_assert(sizeof(struct ibv_recv_wr) == sizeof(struct efi_recv_wr) &&
	       SAME_FIELD(struct ibv_recv_wr, struct efi_recv_wr, next) &&
	       SAME_FIELD(struct ibv_recv_wr, struct efi_recv_wr, sg_list) &&
	       SAME_FIELD(struct ibv_recv_wr, struct efi_recv_wr, num_sge) &&
	       sizeof(struct ibv_sge) == sizeof(struct efi_sge) &&
	       SAME_FIELD(struct ibv_sge, struct efi_sge, lkey), "ibv_recv_wr layout");
_Static_assert(sizeof(struct ibv_qp_attr) == sizeof(struct efi_qp_attr) &&
	       SAME_FIELD(struct ibv_qp_attr, struct efi_qp_attr, qkey) &&
	       SAME_FIELD(struct ibv_qp_attr, struct efi_qp_attr, dest_qp_num) &&
	       SAME_FIELD(struct ibv_qp_attr, struct efi_qp_attr, cap) &&
	       SAME_FIELD(struct ibv_qp_attr, struct efi_qp_attr, ah_attr.grh.dgid) &&
	       SAME_FIELD(struct ibv_qp_attr, struct efi_qp_attr, ah_attr.grh.sgid_index) &&
	       SAME_FIELD(struct ibv_qp_attr, struct efi_qp_attr, ah_attr.is_global) &&
	       SAME_FIELD(struct ibv_qp_attr, struct efi_qp_attr, alt_ah_attr) &&
	       SAME_FIELD(struct ibv_qp_attr, struct efi_qp_attr, max_dest_rd_atomic) &&
	       SAME_FIELD(struct ibv_qp_attr, struct efi_qp_attr, min_rnr_timer) &&
	       SAME_FIELD(struct ibv_qp_attr, struct efi_qp_attr, rnr_retry) &&
	       SAME_FIELD(struct ibv_qp_attr, struct efi_qp_attr, rate_limit), "ibv_qp_attr layout");

/* ------------------------------------------------------------ data path */

static void note_enodev(struct ibv_context *context, int err)
{
	if (err == ENODEV)
		efiv_async_port_error(efiv_ctx(context));
}

int efiv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	int err = __builtin_expect(qp->qp_type == IBV_QPT_UD, 0)
		  ? efiv_post_send_ud(qp, wr, bad_wr)
		  : efi_post_send(efiv_qp(qp)->eqp, (struct efi_send_wr *)wr, (struct efi_send_wr **)bad_wr);

	if (__builtin_expect(err == ENODEV, 0))
		note_enodev(qp->context, err);
	return err;
}

int efiv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	int err;

	/* a QP of an SRQ has no receive queue: EINVAL as rxe and mlx5 say */
	if (__builtin_expect(qp->srq != NULL, 0)) {
		*bad_wr = wr;
		return EINVAL;
	}
	err = efi_post_recv(efiv_qp(qp)->eqp, (struct efi_recv_wr *)wr,
				(struct efi_recv_wr **)bad_wr);

	if (__builtin_expect(err == ENODEV, 0))
		note_enodev(qp->context, err);
	return err;
}

/* An error completion other than a flush means the transport gave up on
 * the QP (it is in ERR now): report it as IBV_EVENT_QP_FATAL. */
static void note_fatal(struct ibv_cq *cq, uint32_t qp_num)
{
	struct efiv_context *c = efiv_ctx(cq->context);
	struct efiv_qp *qp;

	pthread_mutex_lock(&c->async.lock);
	for (qp = c->async.qps; qp; qp = qp->next)
		if (qp->ibqp.qp_num == qp_num)
			break;
	pthread_mutex_unlock(&c->async.lock);
	if (qp)
		efiv_async_qp_fatal(qp);
}

int efiv_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	int n = efi_poll_cq(efiv_cq(cq)->ecq, num_entries, (struct efi_wc *)wc);

	for (int i = 0; i < n; i++)
		if (__builtin_expect(wc[i].status != IBV_WC_SUCCESS &&
				     wc[i].status != IBV_WC_WR_FLUSH_ERR, 0))
			note_fatal(cq, wc[i].qp_num);
	return n;
}

int efiv_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return efi_req_notify_cq(efiv_cq(cq)->ecq, solicited_only);
}

/* ----------------------------------------------------------------- QPs */

struct ibv_qp *efiv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS;
	const uint64_t ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			     IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	struct efi_qp_init_attr e;
	struct efiv_qp *qp;
	struct ibv_pd *pd;
	int err;

	if (!context || !attr || !(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd ||
	    !attr->send_cq || !attr->recv_cq) {
		errno = EINVAL;
		return NULL;
	}
	/* what a provider without XRC, RSS, TSO or create flags says; create
	 * flags 0 ask for nothing and are accepted, as rxe and mlx5 do */
	/* UD QPs only through ibv_post_send: no ibv_wr_* for them (yet) */
	if ((attr->comp_mask & ~known) || (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UD) ||
	    (attr->qp_type == IBV_QPT_UD && (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && (attr->send_ops_flags & ~ops))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	pd = attr->pd;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	memset(&e, 0, sizeof(e));
	e.qp_context = qp;
	e.send_cq = efiv_cq(attr->send_cq)->ecq;
	e.recv_cq = efiv_cq(attr->recv_cq)->ecq;
	e.srq = attr->srq ? efiv_srq(attr->srq)->esrq : NULL;
	e.cap.max_send_wr = attr->cap.max_send_wr;
	e.cap.max_recv_wr = attr->cap.max_recv_wr;
	e.cap.max_send_sge = attr->cap.max_send_sge;
	e.cap.max_recv_sge = attr->cap.max_recv_sge;
	e.cap.max_inline_data = attr->cap.max_inline_data;
	e.qp_type = attr->qp_type == IBV_QPT_UD ? EFI_QPT_UD : EFI_QPT_RC;
	e.sq_sig_all = attr->sq_sig_all;
	qp->eqp = efi_create_qp(efiv_pd(pd)->epd, &e);
	if (!qp->eqp) {
		err = errno;
		free(qp);
		errno = err;
		return NULL;
	}
	/* the caps as allocated go back to the caller, as verbs does */
	attr->cap.max_send_wr = e.cap.max_send_wr;
	attr->cap.max_recv_wr = e.cap.max_recv_wr;
	attr->cap.max_send_sge = e.cap.max_send_sge;
	attr->cap.max_recv_sge = e.cap.max_recv_sge;
	attr->cap.max_inline_data = e.cap.max_inline_data;
	qp->max_send_sge = e.cap.max_send_sge;
	qp->max_inline = e.cap.max_inline_data;
	qp->ibqp.context = context;
	qp->ibqp.qp_context = attr->qp_context;
	qp->ibqp.pd = pd;
	qp->ibqp.send_cq = attr->send_cq;
	qp->ibqp.recv_cq = attr->recv_cq;
	qp->ibqp.srq = attr->srq;
	qp->ibqp.handle = qp->eqp->handle;
	qp->ibqp.qp_num = qp->eqp->qp_num;
	qp->ibqp.state = IBV_QPS_RESET;
	qp->ibqp.qp_type = attr->qp_type;
	pthread_mutex_init(&qp->ibqp.mutex, NULL);
	pthread_cond_init(&qp->ibqp.cond, NULL);
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		qp->is_ex = 1;
		qp->qpx.comp_mask = 0;
		efiv_qp_ex_init(qp);
	}
	efiv_async_add_qp(efiv_ctx(context), qp);
	efiv_track(efiv_ctx(context), EFIV_QP, &qp->link);
	return &qp->ibqp;
}

EFIV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex;
	struct ibv_qp *qp;

	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, attr, sizeof(*attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	qp = efiv_create_qp_ex(pd->context, &ex);
	if (qp)
		attr->cap = ex.cap;
	return qp;
}

EFIV_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct efi_qp_attr e;
	int err;

	if (!qp || !attr)
		return EINVAL;
	memcpy(&e, attr, sizeof(e));
	err = efi_modify_qp(efiv_qp(qp)->eqp, &e, attr_mask);
	note_enodev(qp->context, err);
	if (err)
		return err;
	if (attr_mask & IBV_QP_STATE) {
		qp->state = attr->qp_state;
		/* once per QP, as IBV_EVENT_QP_FATAL: a QP reused after
		 * RESET does not report it again */
		if (attr->qp_state == IBV_QPS_ERR)
			efiv_async_last_wqe(efiv_qp(qp));
	}
	return 0;
}

EFIV_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		   struct ibv_qp_init_attr *init_attr)
{
	struct efi_qp_init_attr ei;
	struct efi_qp_attr e;
	int err;

	if (!qp || !attr || !init_attr)
		return EINVAL;
	err = efi_query_qp(efiv_qp(qp)->eqp, &e, attr_mask, &ei);
	if (err)
		return err;
	memcpy(attr, &e, sizeof(*attr));
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = qp->qp_context;
	init_attr->send_cq = qp->send_cq;
	init_attr->recv_cq = qp->recv_cq;
	init_attr->srq = qp->srq;
	init_attr->cap.max_send_wr = ei.cap.max_send_wr;
	init_attr->cap.max_recv_wr = ei.cap.max_recv_wr;
	init_attr->cap.max_send_sge = ei.cap.max_send_sge;
	init_attr->cap.max_recv_sge = ei.cap.max_recv_sge;
	init_attr->cap.max_inline_data = ei.cap.max_inline_data;
	init_attr->qp_type = qp->qp_type;
	init_attr->sq_sig_all = ei.sq_sig_all;
	qp->state = attr->qp_state;
	return 0;
}

int efiv_destroy_qp_now(struct efiv_qp *q, int wait_for_acks)
{
	struct efiv_context *c = efiv_ctx(q->ibqp.context);

	efiv_async_del_qp(c, q, wait_for_acks);
	efiv_untrack(c, &q->link);
	/* efid not answering is no reason to keep a QP the program gave up:
	 * libefi destroys it anyway */
	(void)efi_destroy_qp(q->eqp);
	if (q->is_ex)
		efiv_qp_ex_fini(q);
	pthread_cond_destroy(&q->ibqp.cond);
	pthread_mutex_destroy(&q->ibqp.mutex);
	free(q);
	return 0;
}

EFIV_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	if (!qp)
		return EINVAL;
	return efiv_destroy_qp_now(efiv_qp(qp), 1);
}

EFIV_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	return qp && efiv_qp(qp)->is_ex ? &efiv_qp(qp)->qpx : NULL;
}

/* libefi does place a message's packets in order, but it has no way to say
 * so per opcode, and 0 ("not guaranteed") is always a correct answer. */
EFIV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp;
	(void)op;
	(void)flags;
	return 0;
}
