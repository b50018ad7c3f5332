/* SPDX-License-Identifier: MIT */
/*
 * A libefi context's drops by reason and its QPs' own counters in LIST
 * replies (DROP_REASONS, QP and QPS_OMITTED inside EFI_A_CONTEXT, from a
 * version 3 counters page), parsed as strictly as the rest of the reply
 * (model.c), in JSON and for people.  An older libefi publishes neither:
 * has_drops and has_qps stay false and the JSON says null.  From a version
 * 4 page also the stall detector: each QP's outstanding send work and how
 * long it went without progress, and the context's count of stalled QPs
 * (null in JSON from an older libefi).
 */
#include "config.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "efictl.h"

static const struct ctl_policy qp_policy[EFI_A_MAX] = {
	[EFI_A_QP_NUM] = { .kind = CTL_U32 },
	[EFI_A_QP_STATE] = { .kind = CTL_U32 },
	[EFI_A_PEER_ADDR] = { .kind = CTL_BIN, .minlen = 16, .maxlen = 16 },
	[EFI_A_QP_VALUES] = { .kind = CTL_BIN, .minlen = 8 * EFI_CSHM_QP_VALUES,
			      .maxlen = 8 * EFI_CSHM_QP_VALUES },
	[EFI_A_QP_OUTSTANDING] = { .kind = CTL_U32 },
	[EFI_A_QP_STALLED_MS] = { .kind = CTL_U32 },
	[EFI_A_QP_WORK_FLAGS] = { .kind = CTL_U32 },
};

static uint64_t le_word(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return le64toh(v);
}

int ec_qp_parse_attr(const struct ctl_attr *a, struct ec_context *x)
{
	if (a->type == EFI_A_DROP_REASONS) {
		if (a->len != 8 * EFI_CSHM_DROP_REASONS)
			return -EBADMSG;
		for (unsigned i = 0; i < EFI_CSHM_DROP_REASONS; i++)
			x->drop_reasons[i] = le_word(a->data + 8 * i);
		x->has_drops = true;
		return 1;
	}
	if (a->type == EFI_A_QPS_STALLED) {
		if (ctl_attr_u32(a, &x->stalled_qps))
			return -EBADMSG;
		x->has_stalled = true;
		return 1;
	}
	if (a->type == EFI_A_QPS_OMITTED) {
		if (ctl_attr_u32(a, &x->qps_omitted))
			return -EBADMSG;
		x->has_qps = true;
		return 1;
	}
	if (a->type != EFI_A_QP)
		return 0;
	struct ctl_attr tb[EFI_A_MAX];
	if (ctl_parse(a->data, a->len, qp_policy, EFI_A_MAX, tb, NULL) ||
	    !ctl_has(tb, EFI_A_QP_NUM) || !ctl_has(tb, EFI_A_QP_VALUES))
		return -EBADMSG;
	struct ec_qp *q = ec_grow_one(&x->qps, &x->nqps, sizeof(*x->qps));
	if (!q)
		return -ENOMEM;
	ctl_attr_u32(&tb[EFI_A_QP_NUM], &q->qpn);
	if (ctl_has(tb, EFI_A_QP_STATE))
		ctl_attr_u32(&tb[EFI_A_QP_STATE], &q->state);
	if (ctl_has(tb, EFI_A_PEER_ADDR)) {
		memcpy(q->peer.raw, tb[EFI_A_PEER_ADDR].data, 16);
		static const uint8_t zero[16];
		q->has_peer = memcmp(q->peer.raw, zero, 16) != 0;
	}
	for (unsigned i = 0; i < EFI_CSHM_QP_VALUES; i++)
		q->v[i] = le_word(tb[EFI_A_QP_VALUES].data + 8 * i);
	/* the stall detector comes whole or not at all */
	q->has_work = ctl_has(tb, EFI_A_QP_OUTSTANDING) && ctl_has(tb, EFI_A_QP_STALLED_MS) &&
		      ctl_has(tb, EFI_A_QP_WORK_FLAGS);
	if (q->has_work) {
		ctl_attr_u32(&tb[EFI_A_QP_OUTSTANDING], &q->outstanding);
		ctl_attr_u32(&tb[EFI_A_QP_STALLED_MS], &q->stalled_ms);
		ctl_attr_u32(&tb[EFI_A_QP_WORK_FLAGS], &q->work_flags);
	}
	x->has_qps = true;
	return 1;
}

void ec_qps_free(struct ec_context *x)
{
	free(x->qps);
	x->qps = NULL;
	x->nqps = 0;
}

const char *ec_drop_reason_name(unsigned i)
{
	static const char *const names[EFI_CSHM_DROP_REASONS_NAMED] = EFI_CSHM_DROP_REASON_NAMES;
	return i < EFI_CSHM_DROP_REASONS_NAMED ? names[i] : NULL;
}

const char *ec_qp_state_name(uint32_t s)
{
	/* libefi's enum efi_qp_state */
	static const char *const names[] = { "reset", "init", "rtr", "rts", "sqd", "sqe", "err" };
	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}

void ec_qps_json(struct json *j, const struct ec_context *x)
{
	static const char *const names[EFI_CSHM_QP_VALUES] = EFI_CSHM_QP_VALUE_NAMES;
	char buf[INET6_ADDRSTRLEN], other[32];

	/* Every reason libefi names, zero or not (a stable schema); others
	 * only when they counted something, by number. */
	json_key(j, "drops_by_reason");
	if (x->has_drops) {
		json_obj_begin(j);
		for (unsigned i = 0; i < EFI_CSHM_DROP_REASONS; i++) {
			const char *n = ec_drop_reason_name(i);
			if (!n && !x->drop_reasons[i])
				continue;
			if (!n) {
				snprintf(other, sizeof(other), "reason_%u", i);
				n = other;
			}
			json_member_u64(j, n, x->drop_reasons[i]);
		}
		json_obj_end(j);
	} else {
		json_null(j);
	}
	json_key(j, "qps_omitted");
	if (x->has_qps)
		json_u64(j, x->qps_omitted);
	else
		json_null(j);
	json_key(j, "stalled_qps");
	if (x->has_stalled)
		json_u64(j, x->stalled_qps);
	else
		json_null(j);
	json_key(j, "qps");
	json_arr_begin(j);
	for (size_t k = 0; k < x->nqps; k++) {
		const struct ec_qp *q = &x->qps[k];
		json_obj_begin(j);
		json_member_u64(j, "qpn", q->qpn);
		json_member_str(j, "state", ec_qp_state_name(q->state));
		json_member_str(j, "peer", q->has_peer ? efi_gid_format(&q->peer, buf, sizeof(buf)) :
							   NULL);
		for (unsigned i = 0; i < EFI_CSHM_QP_VALUES; i++)
			json_member_u64(j, names[i], q->v[i]);
		/* the stall detector: null from a libefi without it */
		json_key(j, "outstanding");
		q->has_work ? json_u64(j, q->outstanding) : json_null(j);
		json_key(j, "stalled_ms");
		q->has_work ? json_u64(j, q->stalled_ms) : json_null(j);
		json_key(j, "rnr_wait");
		q->has_work ? json_bool(j, q->work_flags & EFI_CSHM_QPW_RNR) : json_null(j);
		json_obj_end(j);
	}
	json_arr_end(j);
}

bool ec_qp_stalled(const struct ec_qp *q)
{
	return q->has_work && q->stalled_ms >= EFI_CSHM_STALL_MS;
}

static void print_stall(FILE *f, const struct ec_qp *q, int indent)
{
	fprintf(f, "%*sSTALLED: %" PRIu32 " send WQEs outstanding, no progress for %.1f s%s\n", indent,
		"", q->outstanding, q->stalled_ms / 1e3,
		q->work_flags & EFI_CSHM_QPW_RNR ? " (the peer answers RNR: it has no receive posted)"
						 : "");
}

static void print_stalled_count(FILE *f, const struct ec_context *x, int indent)
{
	if (x->has_stalled && x->stalled_qps)
		fprintf(f, "%*s%" PRIu32 " QP%s stalled (send work outstanding, no progress for %u s or more)\n",
			indent, "", x->stalled_qps, x->stalled_qps == 1 ? "" : "s",
			EFI_CSHM_STALL_MS / 1000);
}

void ec_stalls_print(FILE *f, const struct ec_context *x, int indent)
{
	char buf[INET6_ADDRSTRLEN];

	for (size_t k = 0; k < x->nqps; k++) {
		const struct ec_qp *q = &x->qps[k];
		if (!ec_qp_stalled(q))
			continue;
		fprintf(f, "%*sqp 0x%06x%s%s ", indent, "", q->qpn, q->has_peer ? " to " : "",
			q->has_peer ? efi_gid_format(&q->peer, buf, sizeof(buf)) : "");
		print_stall(f, q, 0);
	}
	print_stalled_count(f, x, indent);
}

void ec_stalls_json(struct json *j, const struct ec_context *x)
{
	char buf[INET6_ADDRSTRLEN];

	json_key(j, "stalled_qps");
	if (x->has_stalled)
		json_u64(j, x->stalled_qps);
	else
		json_null(j);
	json_key(j, "stalled");
	json_arr_begin(j);
	for (size_t k = 0; k < x->nqps; k++) {
		const struct ec_qp *q = &x->qps[k];
		if (!ec_qp_stalled(q))
			continue;
		json_obj_begin(j);
		json_member_u64(j, "qpn", q->qpn);
		json_member_str(j, "peer", q->has_peer ? efi_gid_format(&q->peer, buf, sizeof(buf)) :
							   NULL);
		json_member_u64(j, "outstanding", q->outstanding);
		json_member_u64(j, "stalled_ms", q->stalled_ms);
		json_key(j, "rnr_wait");
		json_bool(j, q->work_flags & EFI_CSHM_QPW_RNR);
		json_obj_end(j);
	}
	json_arr_end(j);
}

void ec_qps_print(FILE *f, const struct ec_context *x, int indent)
{
	char buf[INET6_ADDRSTRLEN];
	bool any = false;

	if (x->has_drops) {
		for (unsigned i = 0; i < EFI_CSHM_DROP_REASONS; i++) {
			const char *n = ec_drop_reason_name(i);
			if (!x->drop_reasons[i])
				continue;
			fprintf(f, "%s%*sdropped %s: %" PRIu64, any ? ", " : "", any ? 0 : indent, "",
				n ? n : "other", x->drop_reasons[i]);
			any = true;
		}
		if (any)
			fputc('\n', f);
	}
	for (size_t k = 0; k < x->nqps; k++) {
		const struct ec_qp *q = &x->qps[k];
		fprintf(f, "%*sqp 0x%06x %s%s%s: tx %" PRIu64 " packets %" PRIu64 " bytes, rx %" PRIu64
			" packets %" PRIu64 " bytes, %" PRIu64 " retransmitted, %" PRIu64
			" timeouts, %" PRIu64 " duplicates, %" PRIu64 " dropped\n",
			indent, "", q->qpn, ec_qp_state_name(q->state), q->has_peer ? " to " : "",
			q->has_peer ? efi_gid_format(&q->peer, buf, sizeof(buf)) : "",
			q->v[EFI_CSHM_QP_TX_PACKETS], q->v[EFI_CSHM_QP_TX_BYTES],
			q->v[EFI_CSHM_QP_RX_PACKETS], q->v[EFI_CSHM_QP_RX_BYTES],
			q->v[EFI_CSHM_QP_RETRANSMISSIONS], q->v[EFI_CSHM_QP_TIMEOUTS],
			q->v[EFI_CSHM_QP_DUPLICATES], q->v[EFI_CSHM_QP_DROPS]);
		if (ec_qp_stalled(q))
			print_stall(f, q, indent + 2);
	}
	print_stalled_count(f, x, indent);
	if (x->qps_omitted)
		fprintf(f, "%*s(%" PRIu32 " more QPs not shown)\n", indent, "", x->qps_omitted);
}
