/* SPDX-License-Identifier: MIT */
/* efi-cni's requests to efid (docs/control-protocol.md). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cni.h"
#include "ctlclient.h"
#include "ctlproto.h"

#define CALL_TIMEOUT_MS 30000

static const struct ctl_policy reply_policy[EFI_A_MAX] = {
	[EFI_A_RESULT] = { .kind = CTL_U32 },
	[EFI_A_IFACE] = { .kind = CTL_NEST, .multi = true },
};

/* Sends req, answers 0 with *rep, or -1 with e.  A daemon that cannot be
 * reached is "try again later": the runtime retries, and DEL must not be
 * given up on (it is how the interface is cleaned up). */
static int call(const struct cni_conf *c, struct ctl_buf *req, struct ctl_reply *rep,
		const char *what, struct cni_err *e)
{
	struct ctl_client *cl = NULL;
	int r;

	memset(rep, 0, sizeof(*rep));
	r = ctl_msg_end(req);
	if (r == 0)
		r = ctl_client_connect(c->socket[0] ? c->socket : NULL, &cl);
	if (r == 0)
		r = ctl_client_call(cl, req, NULL, 0, rep, CALL_TIMEOUT_MS);
	ctl_client_close(cl);
	if (r < 0)
		return cni_fail(e, CNI_E_AGAIN, strerror(-r), "cannot reach efid at %s to %s "
				"(is efid running?)",
				c->socket[0] ? c->socket : ctl_default_socket_path(), what);
	return 0;
}

static int efid_refused(struct ctl_reply *rep, const char *what, struct cni_err *e)
{
	cni_fail(e, CNI_E_EFID, rep->error ? rep->error : strerror(-rep->status),
		 "efid refused to %s: %s", what, strerror(-rep->status));
	ctl_reply_free(rep);
	return -1;
}

int cni_efid_attach(const struct cni_conf *c, const struct cni_env *env, const char *instance,
		    const struct efi_addr *addrs, size_t naddrs, char *got, size_t len,
		    struct cni_err *e)
{
	struct ctl_buf req;
	struct ctl_reply rep;
	struct ctl_attr tb[EFI_A_MAX], itb[EFI_A_MAX];
	static const struct ctl_policy iface_policy[EFI_A_MAX] = {
		[EFI_A_INSTANCE] = { .kind = CTL_STR, .minlen = 1, .maxlen = EFI_INSTANCE_MAX },
	};
	char text[INET6_ADDRSTRLEN + 8];
	const char *s;
	int r;

	ctl_buf_init(&req);
	ctl_msg_begin(&req, EFI_CTL_ATTACH, 0);
	ctl_put_str(&req, EFI_A_INSTANCE, instance);
	ctl_put_str(&req, EFI_A_IFNAME, env->ifname);
	ctl_put_str(&req, EFI_A_NETNS_PATH, env->netns);
	for (size_t i = 0; i < naddrs; i++)
		ctl_put_str(&req, EFI_A_ADDRESS, efi_addr_format(&addrs[i], text, sizeof(text)));
	if (c->uplink[0])
		ctl_put_str(&req, EFI_A_UPLINK, c->uplink);
	if (c->kind[0])
		ctl_put_str(&req, EFI_A_KIND, c->kind);
	if (c->mtu)
		ctl_put_u32(&req, EFI_A_MTU, c->mtu);
	r = call(c, &req, &rep, "attach the interface", e);
	ctl_buf_free(&req);
	if (r < 0)
		return -1;
	if (rep.status < 0) {
		/* The namespace path named nothing: the container is gone. */
		if (rep.status == -ENOENT && rep.error && strstr(rep.error, "namespace")) {
			cni_fail(e, CNI_E_UNKNOWN, rep.error, "the pod's network namespace %s does "
				 "not exist", env->netns);
			ctl_reply_free(&rep);
			return -1;
		}
		return efid_refused(&rep, "attach the interface", e);
	}
	if (ctl_parse(rep.payload, rep.payload_len, reply_policy, EFI_A_MAX, tb, NULL) ||
	    !ctl_has(tb, EFI_A_IFACE)) {
		ctl_reply_free(&rep);
		return cni_fail(e, CNI_E_EFID, NULL, "efid's attach reply is malformed");
	}
	if (ctl_parse(tb[EFI_A_IFACE].data, tb[EFI_A_IFACE].len, iface_policy, EFI_A_MAX, itb,
		      NULL) || !ctl_has(itb, EFI_A_INSTANCE) ||
	    ctl_attr_str(&itb[EFI_A_INSTANCE], &s)) {
		ctl_reply_free(&rep);
		return cni_fail(e, CNI_E_EFID, NULL, "efid's attach reply names no instance");
	}
	snprintf(got, len, "%s", s);
	ctl_reply_free(&rep);
	return 0;
}

int cni_efid_detach(const struct cni_conf *c, const char *instance, const char *ifname,
		    bool *gone, struct cni_err *e)
{
	struct ctl_buf req;
	struct ctl_reply rep;
	int r;

	*gone = false;
	ctl_buf_init(&req);
	ctl_msg_begin(&req, EFI_CTL_DETACH, 0);
	ctl_put_str(&req, EFI_A_INSTANCE, instance);
	ctl_put_str(&req, EFI_A_IFNAME, ifname);
	r = call(c, &req, &rep, "detach the interface", e);
	ctl_buf_free(&req);
	if (r < 0)
		return -1;
	if (rep.status == -ENOENT) {
		*gone = true; /* DEL is idempotent: nothing left to remove */
		ctl_reply_free(&rep);
		return 0;
	}
	if (rep.status < 0)
		return efid_refused(&rep, "detach the interface", e);
	ctl_reply_free(&rep);
	return 0;
}

/* Walks one IFACE nest of a LIST reply for what CHECK needs. */
static int check_iface(const struct ctl_attr *nest, const struct cni_record *r,
		       const char *ifname, struct cni_err *e)
{
	const char *state = NULL, *link = NULL, *name = NULL, *s;
	bool seen[EFI_MAX_ADDRS] = { false };
	struct ctl_iter it;
	struct ctl_attr a;

	ctl_iter_nest(&it, nest);
	while (ctl_iter_next(&it, &a)) {
		if (ctl_attr_str(&a, &s))
			continue;
		if (a.type == EFI_A_IFNAME)
			name = s;
		else if (a.type == EFI_A_STATE)
			state = s;
		else if (a.type == EFI_A_LINK)
			link = s;
		else if (a.type == EFI_A_ADDRESS) {
			struct efi_addr got;
			char why[128];
			if (efi_addr_parse(s, &got, why, sizeof(why)) < 0)
				continue;
			for (size_t i = 0; i < r->naddrs; i++)
				if (efi_addr_same_ip(&got, &r->addrs[i]))
					seen[i] = true;
		}
	}
	if (!name || strcmp(name, ifname) != 0)
		return 1; /* another interface of the instance */
	if (!state || strcmp(state, "attached") != 0)
		return cni_fail(e, CNI_E_CHECK, state, "efid has %s/%s, but not attached",
				r->instance, ifname);
	if (!link || strcmp(link, "missing") == 0)
		return cni_fail(e, CNI_E_CHECK, link, "efid reports the link of %s/%s missing",
				r->instance, ifname);
	for (size_t i = 0; i < r->naddrs; i++) {
		char t[INET6_ADDRSTRLEN + 8];
		if (!seen[i])
			return cni_fail(e, CNI_E_CHECK, NULL, "efid's %s/%s lacks address %s",
					r->instance, ifname,
					efi_addr_format(&r->addrs[i], t, sizeof(t)));
	}
	return 0;
}

int cni_efid_check(const struct cni_conf *c, const struct cni_record *r, const char *ifname,
		   struct cni_err *e)
{
	struct ctl_buf req;
	struct ctl_reply rep;
	struct ctl_iter it;
	struct ctl_attr a;
	int res = 1;

	ctl_buf_init(&req);
	ctl_msg_begin(&req, EFI_CTL_LIST, 0);
	ctl_put_str(&req, EFI_A_INSTANCE, r->instance);
	ctl_put_str(&req, EFI_A_IFNAME, ifname);
	if (call(c, &req, &rep, "list the interface", e) < 0) {
		ctl_buf_free(&req);
		return -1;
	}
	ctl_buf_free(&req);
	if (rep.status < 0)
		return efid_refused(&rep, "list the interface", e);
	ctl_iter_init(&it, rep.payload, rep.payload_len);
	while (res == 1 && ctl_iter_next(&it, &a))
		if (a.type == EFI_A_IFACE)
			res = check_iface(&a, r, ifname, e);
	ctl_reply_free(&rep);
	if (res == 1)
		return cni_fail(e, CNI_E_CHECK, NULL, "efid has no interface %s in instance %s",
				ifname, r->instance);
	return res;
}
