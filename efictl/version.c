/* SPDX-License-Identifier: MIT */
/* efictl version: efictl's, efid's (asked with HELLO) and the protocol's. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "efictl.h"

int cmd_version(struct efictl *ctx, int argc, char **argv)
{
	static const struct option longopts[] = { EFICTL_GLOBAL_OPTIONS, { NULL, 0, NULL, 0 } };
	static const struct ctl_policy policy[EFI_A_MAX] = {
		[EFI_A_STATUS] = { .kind = CTL_I32 },
		[EFI_A_ERROR] = { .kind = CTL_STR, .maxlen = 4096 },
		[EFI_A_SERVER_VERSION] = { .kind = CTL_STR, .maxlen = 255 },
		[EFI_A_HOST_ID] = { .kind = CTL_STR, .maxlen = 255 },
	};
	struct ctl_attr tb[EFI_A_MAX];
	struct ctl_reply rep;
	struct ctl_buf req;
	const char *efid_version = NULL, *host_id = NULL;
	char why[512] = "";
	int c, r;

	while ((c = efictl_getopt(ctx, argc, argv, "", longopts)) != -1) {
		if (c == EFICTL_OPT_STOP)
			return ctx->stop_exit;
	}
	if (optind < argc)
		return efictl_usage_error(ctx, "version", "unexpected argument '%s'", argv[optind]);

	/* efictl's own version is printed even when efid does not answer, but
	 * the exit code still says so: scripts use `efictl version` to ask
	 * "is efid there?". */
	memset(&rep, 0, sizeof(rep));
	ctl_buf_init(&req);
	ctl_msg_begin(&req, EFI_CTL_HELLO, 0);
	ctl_put_str(&req, EFI_A_CLIENT, "efictl");
	r = ctl_msg_end(&req);
	if (r == 0)
		r = ipc_request(ctx, &req, &rep);
	ctl_buf_free(&req);
	if (r == 0 && rep.status < 0)
		r = rep.status;
	if (r == 0 && (ctl_parse(rep.payload, rep.payload_len, policy, EFI_A_MAX, tb, NULL) ||
		       ctl_attr_str(&tb[EFI_A_SERVER_VERSION], &efid_version)))
		r = -EBADMSG;
	if (r == 0 && ctl_has(tb, EFI_A_HOST_ID) && ctl_attr_str(&tb[EFI_A_HOST_ID], &host_id))
		r = -EBADMSG;
	if (r) {
		efid_version = host_id = NULL;
		snprintf(why, sizeof(why), "%s on %s",
			 r == -ENOENT || r == -ECONNREFUSED ? "not running" : strerror(-r),
			 ctx->socket_path);
	}

	if (ctx->json) {
		struct json j;
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "efictl");
		json_str(&j, PACKAGE_VERSION);
		json_key(&j, "efid");
		json_str(&j, efid_version);
		json_key(&j, "protocol");
		json_u64(&j, EFI_CTL_VERSION);
		json_obj_end(&j);
		json_finish(&j);
	} else {
		printf("efictl    %s\n", PACKAGE_VERSION);
		if (efid_version)
			printf("efid      %s%s%s\n", efid_version, host_id ? ", host " : "",
			       host_id ? host_id : "");
		else
			printf("efid      unknown (%s)\n", why);
		printf("protocol  %d\n", EFI_CTL_VERSION);
	}
	ctl_reply_free(&rep);
	if (!r)
		return EXIT_OK;
	return r == -EBADMSG || r == -EPROTO ? EXIT_FAIL : EXIT_UNREACHABLE;
}
