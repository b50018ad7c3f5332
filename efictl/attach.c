/* SPDX-License-Identifier: MIT */
/*
 * efictl attach: arguments become an efi_iface_spec, checked with the same
 * validator efid and the interface files use, then one ATTACH request.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "efictl.h"
#include "ifacespec.h"

const char *attach_result_name(enum efi_ctl_result r)
{
	switch (r) {
	case EFI_R_CREATED:
		return "created";
	case EFI_R_UNCHANGED:
		return "unchanged";
	case EFI_R_REPAIRED:
		return "repaired";
	default:
		return NULL;
	}
}

int attach_request(struct efictl *ctx, const struct efi_iface_spec *spec, struct ctl_reply *rep,
		   enum efi_ctl_result *result, struct ec_iface *iface)
{
	static const struct ctl_policy policy[EFI_A_MAX] = {
		[EFI_A_STATUS] = { .kind = CTL_I32 },
		[EFI_A_ERROR] = { .kind = CTL_STR, .maxlen = 4096 },
		[EFI_A_RESULT] = { .kind = CTL_U32 },
		[EFI_A_IFACE] = { .kind = CTL_NEST },
	};
	struct ctl_attr tb[EFI_A_MAX];
	struct ctl_buf req;
	char buf[INET6_ADDRSTRLEN + 8];
	uint32_t res;
	int r;

	memset(rep, 0, sizeof(*rep));
	ctl_buf_init(&req);
	ctl_msg_begin(&req, EFI_CTL_ATTACH, 0);
	ctl_put_str(&req, EFI_A_INSTANCE, spec->instance);
	if (spec->name[0])
		ctl_put_str(&req, EFI_A_IFNAME, spec->name);
	for (size_t i = 0; i < spec->naddrs; i++)
		ctl_put_str(&req, EFI_A_ADDRESS, efi_addr_format(&spec->addrs[i], buf, sizeof(buf)));
	if (spec->uplink[0])
		ctl_put_str(&req, EFI_A_UPLINK, spec->uplink);
	if (spec->mtu)
		ctl_put_u32(&req, EFI_A_MTU, spec->mtu);
	if (spec->kind[0])
		ctl_put_str(&req, EFI_A_KIND, spec->kind);
	r = ctl_msg_end(&req);
	if (r == 0)
		r = ipc_request(ctx, &req, rep);
	ctl_buf_free(&req);
	if (r || rep->status < 0)
		return r;

	if (ctl_parse(rep->payload, rep->payload_len, policy, EFI_A_MAX, tb, NULL) ||
	    ctl_attr_u32(&tb[EFI_A_RESULT], &res) || !attach_result_name(res) ||
	    !ctl_has(tb, EFI_A_IFACE) || ec_iface_parse(&tb[EFI_A_IFACE], iface)) {
		ctl_reply_free(rep);
		return -EBADMSG;
	}
	*result = res;
	return 0;
}

/* Digits only, 0 (efid's default) or EFI_MTU_MIN..EFI_MTU_MAX. */
static int parse_mtu(const char *s, uint32_t *out)
{
	uint32_t v = 0;
	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (uint32_t)(*s - '0');
		if (v > EFI_MTU_MAX)
			return -EINVAL;
	}
	if (v && v < EFI_MTU_MIN)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Fills *s from the command line.  Returns 0, an exit code after reporting a
 * usage error, or -1 when getopt says stop (--help shown): exit with
 * ctx->stop_exit. */
static int parse_args(struct efictl *ctx, int argc, char **argv, struct efi_iface_spec *s)
{
	static const struct option longopts[] = {
		EFICTL_GLOBAL_OPTIONS,
		{ "address", required_argument, NULL, 'a' },
		{ "name", required_argument, NULL, 'n' },
		{ "uplink", required_argument, NULL, 'u' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "kind", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	char why[256];
	int c;

	memset(s, 0, sizeof(*s));
	while ((c = efictl_getopt(ctx, argc, argv, "a:n:u:m:k:", longopts)) != -1) {
		switch (c) {
		case EFICTL_OPT_STOP:
			return -1; /* cmd_attach returns ctx->stop_exit */
		case 'a': {
			struct efi_addr a;
			if (efi_addr_parse(optarg, &a, why, sizeof(why)))
				return efictl_usage_error(ctx, "attach", "--address: %s", why);
			if (s->naddrs >= EFI_MAX_ADDRS)
				return efictl_usage_error(ctx, "attach",
							  "too many --address options (at most %d)",
							  EFI_MAX_ADDRS);
			s->addrs[s->naddrs++] = a;
			break;
		}
		case 'n':
			if (!efi_ifname_valid(optarg))
				return efictl_usage_error(
					ctx, "attach",
					"--name '%s' is not a valid interface name: use 1-%d "
					"printable characters without '/', ':' or spaces",
					optarg, EFI_IFNAME_MAX);
			snprintf(s->name, sizeof(s->name), "%s", optarg);
			break;
		case 'u':
			if (!efi_ifname_valid(optarg))
				return efictl_usage_error(ctx, "attach",
							  "--uplink '%s' is not a valid device name",
							  optarg);
			snprintf(s->uplink, sizeof(s->uplink), "%s", optarg);
			break;
		case 'm':
			if (parse_mtu(optarg, &s->mtu))
				return efictl_usage_error(ctx, "attach",
							  "--mtu '%s' is invalid: use %d..%d", optarg,
							  EFI_MTU_MIN, EFI_MTU_MAX);
			break;
		case 'k':
			if (strcmp(optarg, "veth") != 0 && strcmp(optarg, "macvlan") != 0)
				return efictl_usage_error(ctx, "attach",
							  "--kind '%s' is invalid: use veth or macvlan",
							  optarg);
			snprintf(s->kind, sizeof(s->kind), "%s", optarg);
			break;
		default:
			return efictl_usage_error(ctx, "attach", "unexpected option");
		}
	}
	if (optind >= argc)
		return efictl_usage_error(ctx, "attach", "no INSTANCE given");
	const char *instance = argv[optind++];
	if (!efi_instance_name_valid(instance))
		return efictl_usage_error(ctx, "attach",
					  "invalid instance name '%s': use 1-%d characters of "
					  "A-Z a-z 0-9 _ . -, not starting with '.' or '-'",
					  instance, EFI_INSTANCE_MAX);
	snprintf(s->instance, sizeof(s->instance), "%s", instance);
	if (optind < argc)
		return efictl_usage_error(ctx, "attach", "unexpected argument '%s'", argv[optind]);
	if (s->naddrs == 0)
		return efictl_usage_error(ctx, "attach",
					  "no --address given: an interface needs at least one, "
					  "e.g. --address 10.0.0.5/24");
	if (efi_iface_spec_validate(s, why, sizeof(why)))
		return efictl_usage_error(ctx, "attach", "%s", why);
	return EXIT_OK;
}

int cmd_attach(struct efictl *ctx, int argc, char **argv)
{
	struct efi_iface_spec spec;
	struct ctl_reply rep;
	struct ec_iface iface;
	enum efi_ctl_result result;
	char what[128];

	int r = parse_args(ctx, argc, argv, &spec);
	if (r)
		return r < 0 ? ctx->stop_exit : r;
	snprintf(what, sizeof(what), "attach to %s", spec.instance);
	r = attach_request(ctx, &spec, &rep, &result, &iface);
	if (r)
		return ipc_report_transport(ctx, r);
	if (rep.status < 0) {
		r = ipc_report_status(ctx, &rep, what);
		ctl_reply_free(&rep);
		return r;
	}

	if (ctx->json) {
		struct json j;
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "result");
		json_str(&j, attach_result_name(result));
		json_key(&j, "instance");
		json_str(&j, iface.instance);
		json_key(&j, "interface");
		ec_iface_json(&j, &iface);
		json_obj_end(&j);
		json_finish(&j);
	} else {
		printf("%s %s on instance %s\n", attach_result_name(result), iface.name,
		       iface.instance);
		ec_iface_print(stdout, &iface, 2);
	}
	ec_iface_free(&iface);
	ctl_reply_free(&rep);
	return EXIT_OK;
}
