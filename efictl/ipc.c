/* SPDX-License-Identifier: MIT */
/*
 * efictl's side of the control socket: one connection per run (apply sends
 * many requests over it), and the messages that tell an operator what to do
 * when efid cannot be reached or says no.
 */
#include "config.h"

#include <errno.h>
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

/* The LIST request, shared by list and status. */
int efictl_fetch_listing(struct efictl *ctx, const char *what, const char *instance,
			 const char *ifname, struct ctl_reply *rep, struct ec_listing *out)
{
	struct ctl_buf req;
	int r;

	ctl_buf_init(&req);
	ctl_msg_begin(&req, EFI_CTL_LIST, 0);
	if (instance)
		ctl_put_str(&req, EFI_A_INSTANCE, instance);
	if (ifname)
		ctl_put_str(&req, EFI_A_IFNAME, ifname);
	if (ctl_msg_end(&req)) {
		ctl_buf_free(&req);
		return efictl_report(ctx, EXIT_FAIL, "failed", ENOMEM, "out of memory");
	}
	r = ipc_call(ctx, &req, rep, what);
	ctl_buf_free(&req);
	if (r)
		return r;
	r = ec_listing_parse(rep, out);
	if (r) {
		ctl_reply_free(rep);
		return ipc_report_transport(ctx, r == -ENOMEM ? r : -EBADMSG);
	}
	return EXIT_OK;
}
