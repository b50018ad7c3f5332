/* SPDX-License-Identifier: MIT */
/*
 * Connecting the QPs through the connection manager (the default): the
 * server listens on the service numbered like the TCP port, the client
 * connects each QP, and each side's buffer (rkey, address, size) travels as
 * private data.  libefi moves the QPs to RTS; efi-perf exchanges no QP
 * numbers.  The TCP channel stays for the parameters and the barriers.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <efi/efi_cm.h>

#include "perf.h"

#define CM_TIMEOUT_MS 10000

/* Private data: u32 QP index, u32 rkey, u64 address, u64 size, little-endian. */
#define CM_PRIV_LEN 24

static void put_priv(const struct perf_qp *pq, int idx, uint8_t *p)
{
	uint32_t i = htole32((uint32_t)idx), rkey = htole32(pq->mr->rkey);
	uint64_t addr = htole64((uint64_t)(uintptr_t)pq->buf), size = htole64(pq->half);
	memcpy(p, &i, 4);
	memcpy(p + 4, &rkey, 4);
	memcpy(p + 8, &addr, 8);
	memcpy(p + 16, &size, 8);
}

/* Reads the peer's buffer description; returns its QP index or -1. */
static int get_priv(const struct efi_cm_event *ev, struct perf_qp_info *ri)
{
	uint32_t i, rkey;
	uint64_t addr, size;
	if (ev->private_data_len != CM_PRIV_LEN)
		return -1;
	memcpy(&i, ev->private_data, 4);
	memcpy(&rkey, ev->private_data + 4, 4);
	memcpy(&addr, ev->private_data + 8, 8);
	memcpy(&size, ev->private_data + 16, 8);
	ri->rkey = le32toh(rkey);
	ri->addr = le64toh(addr);
	ri->size = le64toh(size);
	ri->qpn = ev->peer_qp_num;
	ri->gid = ev->peer_gid;
	return (int)le32toh(i);
}

static void get_event(struct efi_cm_id *id, struct efi_cm_event *ev, const char *what)
{
	int r = efi_cm_get_event(id, ev, CM_TIMEOUT_MS);
	if (r)
		perf_die("connection manager, %s: %s", what, r == EAGAIN ? "no answer in 10 s" : strerror(r));
}

/* The PSNs libefi chose, for the banner. */
static void note_psns(struct perf_qp *pq)
{
	struct efi_qp_attr qa;
	struct efi_qp_init_attr qi;
	if (efi_query_qp(pq->qp, &qa, 0, &qi) == 0) {
		pq->psn = qa.sq_psn;
		pq->remote.psn = qa.rq_psn;
	}
}

static void server(struct perf_ctx *pc, const char *service)
{
	struct efi_cm_event ev;
	pc->listener = efi_listen(pc->ctx, service, pc->num_qps);
	if (!pc->listener)
		perf_die("efi_listen(%s): %s", service, strerror(errno));
	oob_sync(pc, "cm-listening");
	for (int n = 0; n < pc->num_qps; n++) {
		get_event(pc->listener, &ev, "waiting for the client's QPs");
		if (ev.event != EFI_CM_EVENT_CONNECT_REQUEST)
			perf_die("connection manager: unexpected %s", efi_cm_event_str(ev.event));
		struct perf_qp_info ri = { 0 };
		int idx = get_priv(&ev, &ri);
		if (idx < 0 || idx >= pc->num_qps || pc->cm_ids[idx]) {
			efi_reject(ev.request, NULL, 0);
			efi_cm_destroy_id(ev.request);
			perf_die("the client sent a bad QP description (%u bytes of private data)",
				 ev.private_data_len);
		}
		struct perf_qp *pq = &pc->qps[idx];
		uint8_t priv[CM_PRIV_LEN];
		put_priv(pq, idx, priv);
		pq->remote = ri;
		int r = efi_accept(ev.request, pq->qp, priv, sizeof(priv));
		if (r)
			perf_die("efi_accept: %s", strerror(r));
		pc->cm_ids[idx] = ev.request;
	}
	for (int i = 0; i < pc->num_qps; i++) {
		get_event(pc->cm_ids[i], &ev, "waiting for the client's QPs to be ready");
		if (ev.event != EFI_CM_EVENT_ESTABLISHED)
			perf_die("connection manager: QP %d %s", i, efi_cm_event_str(ev.event));
		note_psns(&pc->qps[i]);
	}
}

static void client(struct perf_ctx *pc, const char *host, const char *service)
{
	struct efi_cm_event ev;
	oob_sync(pc, "cm-listening");
	for (int i = 0; i < pc->num_qps; i++) {
		struct perf_qp *pq = &pc->qps[i];
		uint8_t priv[CM_PRIV_LEN];
		put_priv(pq, i, priv);
		pc->cm_ids[i] = efi_connect(pq->qp, host, service, priv, sizeof(priv), CM_TIMEOUT_MS);
		if (!pc->cm_ids[i])
			perf_die("efi_connect(%s, %s): %s", host, service, strerror(errno));
		get_event(pc->cm_ids[i], &ev, "connecting");
		if (ev.event != EFI_CM_EVENT_ESTABLISHED)
			perf_die("connecting QP %d to %s: %s%s", i, host, efi_cm_event_str(ev.event),
				 ev.event == EFI_CM_EVENT_REJECTED ? " (is the server efi-perf with the same -p?)" : "");
		if (get_priv(&ev, &pq->remote) != i)
			perf_die("the server sent a bad buffer description for QP %d", i);
		note_psns(pq);
	}
}

void perf_cm_connect_qps(struct perf_ctx *pc)
{
	char service[8];
	snprintf(service, sizeof(service), "%u", (unsigned)pc->opts->port);
	if (pc->opts->host)
		client(pc, pc->opts->host, service);
	else
		server(pc, service);
}

void perf_cm_close(struct perf_ctx *pc)
{
	for (int i = 0; i < PERF_MAX_QPS; i++) {
		efi_cm_destroy_id(pc->cm_ids[i]);
		pc->cm_ids[i] = NULL;
	}
	efi_cm_destroy_id(pc->listener);
	pc->listener = NULL;
}
