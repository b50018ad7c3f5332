/* SPDX-License-Identifier: MIT */
/* efictl detach INSTANCE NAME | INSTANCE --all  [--wait[=SECONDS]] */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "efictl.h"
#include "ifacespec.h"

#define WAIT_DEFAULT_S 30
#define WAIT_POLL_MS 100

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * --wait: polls efid until no QP and no CM connection is left on the
 * interface (or any of the instance's, name NULL), so that detaching
 * revokes nothing.  Returns EXIT_OK, or an exit code already reported (a
 * timeout is EXIT_FAIL and detaches nothing).
 */
static int wait_idle(struct efictl *ctx, const char *instance, const char *name, int seconds)
{
	long long deadline = now_ms() + (long long)seconds * 1000;
	for (;;) {
		struct ctl_reply rep;
		struct ec_listing l;
		uint32_t qps = 0, conns = 0;
		int r = efictl_fetch_listing(ctx, "status (detach --wait)", instance, name, &rep, &l);
		if (r)
			return r;
		for (size_t k = 0; k < l.nifaces; k++) {
			qps += l.ifaces[k].qps;
			conns += (uint32_t)l.ifaces[k].nconns;
		}
		ec_listing_free(&l);
		ctl_reply_free(&rep);
		if (qps == 0 && conns == 0)
			return EXIT_OK;
		if (now_ms() >= deadline)
			return efictl_report(ctx, EXIT_FAIL, "busy", EBUSY,
					     "%u QP(s) and %u connection(s) still open after %d s; nothing detached (without --wait, detach revokes them)",
					     qps, conns, seconds);
		struct timespec ts = { 0, WAIT_POLL_MS * 1000000L };
		nanosleep(&ts, NULL);
	}
}

int cmd_detach(struct efictl *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		EFICTL_GLOBAL_OPTIONS,
		{ "all", no_argument, NULL, 'A' },
		{ "wait", optional_argument, NULL, 'W' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct ctl_policy policy[EFI_A_MAX] = {
		[EFI_A_STATUS] = { .kind = CTL_I32 },
		[EFI_A_ERROR] = { .kind = CTL_STR, .maxlen = 4096 },
		[EFI_A_COUNT] = { .kind = CTL_U32 },
	};
	struct ctl_attr tb[EFI_A_MAX];
	struct ctl_reply rep;
	struct ctl_buf req;
	const char *instance, *name = NULL;
	bool all = false;
	int wait_s = -1;
	char what[128];
	uint32_t count;
	int c, r;

	while ((c = efictl_getopt(ctx, argc, argv, "", longopts)) != -1) {
		if (c == EFICTL_OPT_STOP)
			return ctx->stop_exit;
		if (c == 'A')
			all = true;
		if (c == 'W') {
			char *end = NULL;
			long v = optarg ? strtol(optarg, &end, 10) : WAIT_DEFAULT_S;
			if (optarg && (!*optarg || *end || v < 1 || v > 86400))
				return efictl_usage_error(ctx, "detach",
							  "--wait=%s: give seconds in 1..86400", optarg);
			wait_s = (int)v;
		}
	}
	if (optind >= argc)
		return efictl_usage_error(ctx, "detach", "no INSTANCE given");
	instance = argv[optind++];
	if (optind < argc)
		name = argv[optind++];
	if (optind < argc)
		return efictl_usage_error(ctx, "detach", "unexpected argument '%s'", argv[optind]);
	if (!efi_instance_name_valid(instance))
		return efictl_usage_error(ctx, "detach", "invalid instance name '%s'", instance);
	if (all && name)
		return efictl_usage_error(ctx, "detach", "give either NAME or --all, not both");
	if (!all && !name)
		return efictl_usage_error(ctx, "detach",
					  "which interface? give NAME (see `efictl list %s`) or "
					  "--all",
					  instance);
	if (name && !efi_ifname_valid(name))
		return efictl_usage_error(ctx, "detach", "invalid interface name '%s'", name);

	if (wait_s > 0) {
		r = wait_idle(ctx, instance, name, wait_s);
		if (r)
			return r;
	}
	ctl_buf_init(&req);
	ctl_msg_begin(&req, EFI_CTL_DETACH, 0);
	ctl_put_str(&req, EFI_A_INSTANCE, instance);
	if (name)
		ctl_put_str(&req, EFI_A_IFNAME, name);
	else
		ctl_put_u32(&req, EFI_A_FLAGS, EFI_F_ALL);
	if (ctl_msg_end(&req)) {
		ctl_buf_free(&req);
		return efictl_report(ctx, EXIT_FAIL, "failed", ENOMEM, "out of memory");
	}
	if (name)
		snprintf(what, sizeof(what), "detach %s from %s", name, instance);
	else
		snprintf(what, sizeof(what), "detach all from %s", instance);
	r = ipc_call(ctx, &req, &rep, what);
	ctl_buf_free(&req);
	if (r)
		return r;

	if (ctl_parse(rep.payload, rep.payload_len, policy, EFI_A_MAX, tb, NULL)) {
		ctl_reply_free(&rep);
		return ipc_report_transport(ctx, -EBADMSG);
	}
	/* A single detach may answer without a count: it removed one. */
	if (ctl_attr_u32(&tb[EFI_A_COUNT], &count)) {
		if (!name) {
			ctl_reply_free(&rep);
			return ipc_report_transport(ctx, -EBADMSG);
		}
		count = 1;
	}
	ctl_reply_free(&rep);

	if (ctx->json) {
		struct json j;
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "detached");
		json_u64(&j, count);
		json_obj_end(&j);
		json_finish(&j);
	} else if (name) {
		printf("detached %s from instance %s\n", name, instance);
	} else {
		printf("detached %u interface%s from instance %s\n", count, count == 1 ? "" : "s",
		       instance);
	}
	return EXIT_OK;
}
