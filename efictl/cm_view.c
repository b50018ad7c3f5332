/* SPDX-License-Identifier: MIT */
/*
 * The connection manager's part of an interface in LIST replies: its
 * listeners and connections (EFI_A_CM_LISTENER / EFI_A_CM_CONNECTION nests),
 * parsed as strictly as the rest of the reply (model.c), in JSON and for
 * people.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "efictl.h"

static const struct ctl_policy listener_policy[EFI_A_MAX] = {
	[EFI_A_CM_SERVICE] = { .kind = CTL_U32 },
	[EFI_A_PID] = { .kind = CTL_U32 },
	[EFI_A_CM_BACKLOG] = { .kind = CTL_U32 },
	[EFI_A_CM_PENDING] = { .kind = CTL_U32 },
};

static const struct ctl_policy connection_policy[EFI_A_MAX] = {
	[EFI_A_CM_QPN] = { .kind = CTL_U32 },
	[EFI_A_CM_PEER_GID] = { .kind = CTL_BIN, .minlen = 16, .maxlen = 16 },
	[EFI_A_CM_PEER_QPN] = { .kind = CTL_U32 },
	[EFI_A_STATE] = { .kind = CTL_STR, .minlen = 1, .maxlen = 31 },
	[EFI_A_CM_ACTIVE] = { .kind = CTL_U32 },
	[EFI_A_PID] = { .kind = CTL_U32 },
};

/* Only what efid sends: the three shown states (efid/cm_status.c). */
static bool known_state(const char *s)
{
	return strcmp(s, "connecting") == 0 || strcmp(s, "established") == 0 ||
	       strcmp(s, "closing") == 0;
}

int ec_cm_parse_attr(const struct ctl_attr *a, struct ec_iface *out)
{
	struct ctl_attr tb[EFI_A_MAX];

	if (a->type == EFI_A_CM_LISTENER) {
		struct ec_cm_listener *l;
		if (ctl_parse(a->data, a->len, listener_policy, EFI_A_MAX, tb, NULL) ||
		    !ctl_has(tb, EFI_A_CM_SERVICE) || !ctl_has(tb, EFI_A_PID) ||
		    !ctl_has(tb, EFI_A_CM_BACKLOG) || !ctl_has(tb, EFI_A_CM_PENDING))
			return -EBADMSG;
		l = ec_grow_one(&out->listeners, &out->nlisteners, sizeof(*l));
		if (!l)
			return -ENOMEM;
		ctl_attr_u32(&tb[EFI_A_CM_SERVICE], &l->service);
		ctl_attr_u32(&tb[EFI_A_PID], &l->pid);
		ctl_attr_u32(&tb[EFI_A_CM_BACKLOG], &l->backlog);
		ctl_attr_u32(&tb[EFI_A_CM_PENDING], &l->pending);
		return 1;
	}
	if (a->type == EFI_A_CM_CONNECTION) {
		struct ec_cm_conn *c;
		const char *state;
		uint32_t active = 0;
		if (ctl_parse(a->data, a->len, connection_policy, EFI_A_MAX, tb, NULL) ||
		    !ctl_has(tb, EFI_A_CM_QPN) || !ctl_has(tb, EFI_A_CM_PEER_GID) ||
		    !ctl_has(tb, EFI_A_CM_PEER_QPN) || !ctl_has(tb, EFI_A_STATE) ||
		    ctl_attr_str(&tb[EFI_A_STATE], &state) || !known_state(state))
			return -EBADMSG;
		c = ec_grow_one(&out->conns, &out->nconns, sizeof(*c));
		if (!c)
			return -ENOMEM;
		ctl_attr_u32(&tb[EFI_A_CM_QPN], &c->qpn);
		ctl_attr_u32(&tb[EFI_A_CM_PEER_QPN], &c->peer_qpn);
		memcpy(c->peer_gid.raw, tb[EFI_A_CM_PEER_GID].data, 16);
		c->state = state;
		if (ctl_has(tb, EFI_A_CM_ACTIVE))
			ctl_attr_u32(&tb[EFI_A_CM_ACTIVE], &active);
		c->active = active != 0;
		c->has_pid = ctl_attr_u32(&tb[EFI_A_PID], &c->pid) == 0;
		return 1;
	}
	return 0;
}

void ec_cm_free(struct ec_iface *i)
{
	free(i->listeners);
	free(i->conns);
	i->listeners = NULL;
	i->conns = NULL;
	i->nlisteners = i->nconns = 0;
}

void ec_cm_json(struct json *j, const struct ec_iface *i)
{
	char buf[INET6_ADDRSTRLEN];

	json_key(j, "listeners");
	json_arr_begin(j);
	for (size_t k = 0; k < i->nlisteners; k++) {
		const struct ec_cm_listener *l = &i->listeners[k];
		json_obj_begin(j);
		json_member_u64(j, "service", l->service);
		json_member_u64(j, "pid", l->pid);
		json_member_u64(j, "backlog", l->backlog);
		json_member_u64(j, "pending", l->pending);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_key(j, "connections");
	json_arr_begin(j);
	for (size_t k = 0; k < i->nconns; k++) {
		const struct ec_cm_conn *c = &i->conns[k];
		json_obj_begin(j);
		json_member_u64(j, "qpn", c->qpn);
		json_member_str(j, "peer_gid", efi_gid_format(&c->peer_gid, buf, sizeof(buf)));
		json_key(j, "peer_qpn");
		if (c->peer_qpn)
			json_u64(j, c->peer_qpn);
		else
			json_null(j);
		json_member_str(j, "state", c->state);
		json_member_str(j, "role", c->active ? "client" : "server");
		json_key(j, "pid");
		if (c->has_pid)
			json_u64(j, c->pid);
		else
			json_null(j);
		json_obj_end(j);
	}
	json_arr_end(j);
}

void ec_cm_print(FILE *f, const struct ec_iface *i, int in2)
{
	char buf[INET6_ADDRSTRLEN];

	for (size_t k = 0; k < i->nlisteners; k++) {
		const struct ec_cm_listener *l = &i->listeners[k];
		fprintf(f, "%*s%-12s service %u, pid %u, backlog %u, pending %u\n", in2, "",
			k == 0 ? "listeners" : "", l->service, l->pid, l->backlog, l->pending);
	}
	for (size_t k = 0; k < i->nconns; k++) {
		const struct ec_cm_conn *c = &i->conns[k];
		char peer_qpn[16] = "?", pid[16] = "-";
		if (c->peer_qpn)
			snprintf(peer_qpn, sizeof(peer_qpn), "0x%06x", c->peer_qpn);
		if (c->has_pid)
			snprintf(pid, sizeof(pid), "%u", c->pid);
		fprintf(f, "%*s%-12s QP 0x%06x <-> %s QP %s, %s (%s), pid %s\n", in2, "",
			k == 0 ? "connections" : "", c->qpn,
			efi_gid_format(&c->peer_gid, buf, sizeof(buf)), peer_qpn, c->state,
			c->active ? "client" : "server", pid);
	}
}
