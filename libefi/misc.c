/* SPDX-License-Identifier: MIT */
/* Names for enum values (efi_*_str) and counter queries. */
#include <errno.h>
#include <string.h>

#include "efi_int.h"

const char *efi_wc_status_str(enum efi_wc_status status)
{
	static const char *const s[] = {
		[EFI_WC_SUCCESS] = "success",
		[EFI_WC_LOC_LEN_ERR] = "local length error",
		[EFI_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[EFI_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[EFI_WC_LOC_PROT_ERR] = "local protection error",
		[EFI_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[EFI_WC_MW_BIND_ERR] = "memory management operation error",
		[EFI_WC_BAD_RESP_ERR] = "bad response error",
		[EFI_WC_LOC_ACCESS_ERR] = "local access error",
		[EFI_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[EFI_WC_REM_ACCESS_ERR] = "remote access error",
		[EFI_WC_REM_OP_ERR] = "remote operation error",
		[EFI_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[EFI_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[EFI_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[EFI_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[EFI_WC_REM_ABORT_ERR] = "aborted error",
		[EFI_WC_INV_EECN_ERR] = "invalid EE context number",
		[EFI_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[EFI_WC_FATAL_ERR] = "fatal error",
		[EFI_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[EFI_WC_GENERAL_ERR] = "general error",
	};
	if ((unsigned)status >= sizeof(s) / sizeof(s[0]) || !s[status])
		return "unknown";
	return s[status];
}

const char *efi_port_state_str(enum efi_port_state st)
{
	static const char *const s[] = {
		[EFI_PORT_NOP] = "nop", [EFI_PORT_DOWN] = "down", [EFI_PORT_INIT] = "init",
		[EFI_PORT_ARMED] = "armed", [EFI_PORT_ACTIVE] = "active",
		[EFI_PORT_ACTIVE_DEFER] = "active_defer",
	};
	if ((unsigned)st >= sizeof(s) / sizeof(s[0]))
		return "unknown";
	return s[st];
}

const char *efi_drop_reason_str(enum efi_drop_reason r)
{
	static const char *const s[] = {
		[EFI_DROP_MALFORMED] = "malformed", [EFI_DROP_BAD_VERSION] = "bad_version",
		[EFI_DROP_UNKNOWN_QP] = "unknown_qp", [EFI_DROP_BAD_SOURCE] = "bad_source",
		[EFI_DROP_QP_STATE] = "qp_state", [EFI_DROP_OUT_OF_WINDOW] = "out_of_window",
		[EFI_DROP_INJECTED] = "injected", [EFI_DROP_BAD_KEY] = "bad_key",
		[EFI_DROP_NO_RECEIVE] = "no_receive", [EFI_DROP_QP_TYPE] = "qp_type",
	};
	if ((unsigned)r >= EFI_DROP_REASON_COUNT)
		return "unknown";
	return s[r];
}

void efi_counters_add(struct efi_counters *to, const struct efi_counters *from)
{
	to->tx_packets += from->tx_packets;
	to->tx_bytes += from->tx_bytes;
	to->rx_packets += from->rx_packets;
	to->rx_bytes += from->rx_bytes;
	to->retransmissions += from->retransmissions;
	to->timeouts += from->timeouts;
	to->duplicates += from->duplicates;
	to->rnr_naks_sent += from->rnr_naks_sent;
	to->rnr_naks_received += from->rnr_naks_received;
	to->seq_naks_sent += from->seq_naks_sent;
	to->seq_naks_received += from->seq_naks_received;
	to->drops += from->drops;
	for (int i = 0; i < EFI_DROP_REASON_MAX; i++)
		to->drop_reasons[i] += from->drop_reasons[i];
	to->fast_retransmits += from->fast_retransmits;
	to->tail_probes += from->tail_probes;
}

/* Takes ctx->lock. */
int efi_query_context_counters(struct efi_context *context, struct efi_counters *c)
{
	struct efi_context_int *ctx = ctx_of(context);
	struct efi_wire_fault_stats fs;

	if (!ctx || !c)
		return EINVAL;
	pthread_mutex_lock(&ctx->lock);
	*c = ctx->dead;
	for (struct efi_qp_int *qp = ctx->qp_list; qp; qp = qp->next_active)
		efi_counters_add(c, &qp->cnt);
	memset(&fs, 0, sizeof(fs));
	efi_wire_fault_stats(ctx->wire, &fs);
	pthread_mutex_unlock(&ctx->lock);
	c->drop_reasons[EFI_DROP_INJECTED] += fs.dropped;
	c->drops += fs.dropped;
	return 0;
}
