/* SPDX-License-Identifier: MIT */
/*
 * efictl's side of the control socket: one connection per run (apply sends
 * many requests over it), and the messages that tell an operator what to do
 * when efid cannot be reached or says no.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "efictl.h"

static int ensure_connected(struct efictl *ctx)
{
	if (ctx->client)
		return 0;
	return ctl_client_connect(ctx->socket_path, &ctx->client);
}

void ipc_close(struct efictl *ctx)
{
	ctl_client_close(ctx->client);
	ctx->client = NULL;
}

int ipc_request(struct efictl *ctx, struct ctl_buf *req, struct ctl_reply *rep)
{
	bool reused = ctx->client != NULL;
	int r = ensure_connected(ctx);
	if (r)
		return r;
	r = ctl_client_call(ctx->client, req, NULL, 0, rep, ctx->timeout_ms);
	if (r == -ECONNRESET && reused) {
		/* efid may close idle connections; every request efictl sends
		 * is idempotent, so one fresh attempt is safe. */
		ipc_close(ctx);
		r = ensure_connected(ctx);
		if (r == 0)
			r = ctl_client_call(ctx->client, req, NULL, 0, rep, ctx->timeout_ms);
	}
	if (r && r != -ETIMEDOUT)
		ipc_close(ctx);
	return r;
}

int ipc_report_transport(struct efictl *ctx, int err)
{
	const char *path = ctx->socket_path;
	int e = -err;

	switch (e) {
	case ENOENT:
	case ECONNREFUSED:
	case ENOTDIR:
		return efictl_report(ctx, EXIT_UNREACHABLE, "unreachable", e,
				     "efid is not running (cannot connect to %s: %s): start it "
				     "with `systemctl start efid`, or run `efid` in a terminal; "
				     "set EFI_SOCKET or --socket if it listens elsewhere",
				     path, strerror(e));
	case EACCES:
	case EPERM:
		return efictl_report(ctx, EXIT_PERMISSION, "permission-denied", e,
				     "permission denied opening %s: run efictl as root or as a "
				     "member of the group named in efid.conf ([Control] Group=)",
				     path);
	case ETIMEDOUT:
		return efictl_report(ctx, EXIT_UNREACHABLE, "unreachable", e,
				     "efid did not answer on %s within the timeout: it may be "
				     "stuck or very busy; check `journalctl -u efid`, or retry "
				     "with a larger --timeout",
				     path);
	case ENAMETOOLONG:
		return efictl_report(ctx, EXIT_USAGE, "invalid-argument", EINVAL,
				     "socket path %s is too long for a Unix socket", path);
	case ECONNRESET:
	case EPIPE:
		return efictl_report(ctx, EXIT_FAIL, "protocol-error", e,
				     "efid closed the connection on %s without answering; "
				     "check its log (`journalctl -u efid`)",
				     path);
	case EPROTO:
	case EBADMSG:
	case EMSGSIZE:
		return efictl_report(ctx, EXIT_FAIL, "protocol-error", e,
				     "malformed reply from efid on %s: efictl and efid may be "
				     "different versions (`efictl version`)",
				     path);
	default:
		return efictl_report(ctx, EXIT_FAIL, efictl_code_for_errno(e), e,
				     "talking to efid on %s failed: %s", path, strerror(e));
	}
}

int ipc_report_status(struct efictl *ctx, const struct ctl_reply *rep, const char *what)
{
	int e = -rep->status;
	int exit = efictl_exit_for_errno(e);
	const char *code = efictl_code_for_errno(e);

	if (rep->error && *rep->error) {
		if (exit == EXIT_PERMISSION && !strstr(rep->error, "root"))
			return efictl_report(ctx, exit, code, e,
					     "%s: %s (attach and detach need root or membership "
					     "in the group named in efid.conf)",
					     what, rep->error);
		return efictl_report(ctx, exit, code, e, "%s: %s", what, rep->error);
	}
	if (exit == EXIT_PERMISSION)
		return efictl_report(ctx, exit, code, e,
				     "%s: permission denied: run efictl as root or as a member "
				     "of the group named in efid.conf ([Control] Group=)",
				     what);
	return efictl_report(ctx, exit, code, e, "%s: %s", what, strerror(e));
}

int ipc_call(struct efictl *ctx, struct ctl_buf *req, struct ctl_reply *rep, const char *what)
{
	int r = ipc_request(ctx, req, rep);
	if (r)
		return ipc_report_transport(ctx, r);
	if (rep->status < 0) {
		int exit = ipc_report_status(ctx, rep, what);
		ctl_reply_free(rep);
		return exit;
	}
	return EXIT_OK;
}

/* Appends the attributes of page to the listing being gathered in *acc
 * (the first page's header included, later pages' entries only) and sets
 * *next to its EFI_A_LIST_NEXT (0 when it was the last).  Returns 0,
 * -ENOMEM, or -EBADMSG for a malformed page. */
static int listing_append(struct ctl_reply *acc, const struct ctl_reply *page, bool first,
			  uint32_t *next)
{
	struct ctl_iter it;
	struct ctl_attr a;
	size_t len = acc->payload_len;

	*next = 0;
	uint8_t *buf = realloc(acc->buf, CTL_HDR_SIZE + len + page->payload_len);
	if (!buf)
		return -ENOMEM;
	if (first)
		memcpy(buf, page->buf, CTL_HDR_SIZE);
	acc->buf = buf;
	ctl_iter_init(&it, page->payload, page->payload_len);
	const uint8_t *start = it.p;
	while (ctl_iter_next(&it, &a)) {
		size_t n = (size_t)(it.p - start);
		bool keep = true;
		if (a.type == EFI_A_LIST_NEXT) {
			if (ctl_attr_u32(&a, next))
				return -EBADMSG;
			keep = false;
		} else if (!first) {
			/* The header is the first page's. */
			keep = a.type != EFI_A_STATUS && a.type != EFI_A_ERROR &&
			       a.type != EFI_A_HOST_ID && a.type != EFI_A_SERVER_VERSION &&
			       a.type != EFI_A_CALLER_INSTANCE;
		}
		if (keep) {
			memcpy(buf + CTL_HDR_SIZE + len, start, n);
			len += n;
		}
		start = it.p;
	}
	if (it.err)
		return -EBADMSG;
	acc->payload = buf + CTL_HDR_SIZE;
	acc->payload_len = len;
	return 0;
}

/* The LIST request, shared by list, status, stats and detach --wait.  It
 * asks for pages (issue 22: a listing may be longer than one reply) and
 * gathers them into one reply; an efid from before paging answers in one. */
int efictl_fetch_listing(struct efictl *ctx, const char *what, const char *instance,
			 const char *ifname, struct ctl_reply *rep, struct ec_listing *out)
{
	struct ctl_buf req;
	struct ctl_reply page;
	uint32_t cursor = 0, next = 0;
	unsigned pages = 0, attempts = 0;
	int r;

again:
	memset(rep, 0, sizeof(*rep));
	cursor = 0;
	for (unsigned n = 0;; n++) {
		ctl_buf_init(&req);
		ctl_msg_begin(&req, EFI_CTL_LIST, 0);
		if (instance)
			ctl_put_str(&req, EFI_A_INSTANCE, instance);
		if (ifname)
			ctl_put_str(&req, EFI_A_IFNAME, ifname);
		ctl_put_u32(&req, EFI_A_FLAGS, EFI_F_LIST_PAGED);
		ctl_put_u32(&req, EFI_A_LIST_CURSOR, cursor);
		if (ctl_msg_end(&req)) {
			ctl_buf_free(&req);
			ctl_reply_free(rep);
			return efictl_report(ctx, EXIT_FAIL, "failed", ENOMEM, "out of memory");
		}
		r = ipc_call(ctx, &req, &page, what);
		ctl_buf_free(&req);
		if (r) {
			ctl_reply_free(rep);
			return r;
		}
		r = listing_append(rep, &page, n == 0, &next);
		ctl_reply_free(&page);
		/* Every page moves on, or efid is not speaking sense. */
		if (r == 0 && next && (next <= cursor || n >= 1000000))
			r = -EBADMSG;
		if (r) {
			ctl_reply_free(rep);
			return ipc_report_transport(ctx, r == -ENOMEM ? r : -EBADMSG);
		}
		pages = n + 1;
		if (!next)
			break;
		cursor = next;
	}
	r = ec_listing_parse(rep, out);
	if (r == -EBADMSG && pages > 1 && ++attempts < 3) {
		/* An interface came or went between two pages (an entry is
		 * then seen twice): the whole listing again. */
		ctl_reply_free(rep);
		goto again;
	}
	if (r) {
		ctl_reply_free(rep);
		return ipc_report_transport(ctx, r == -ENOMEM ? r : -EBADMSG);
	}
	return EXIT_OK;
}
