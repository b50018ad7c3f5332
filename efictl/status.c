/* SPDX-License-Identifier: MIT */
/* efictl status (show): instances, interfaces, GID tables, strays. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "efictl.h"
#include "ifacespec.h"

static void print_status(const struct ec_listing *l)
{
	printf("efid %s, host %s\n", l->server_version ? l->server_version : "(unknown version)",
	       l->host_id ? l->host_id : "(no id)");
	if (l->ninstances == 0)
		printf("\nno instances with interfaces\n");
	for (size_t n = 0; n < l->ninstances; n++) {
		const struct ec_instance *in = &l->instances[n];
		bool any = false;
		printf("\ninstance %s", in->name);
		if (in->netns)
			printf(" (netns %s)", in->netns);
		printf("\n");
		for (size_t k = 0; k < l->nifaces; k++) {
			if (strcmp(l->ifaces[k].instance, in->name) != 0)
				continue;
			ec_iface_print(stdout, &l->ifaces[k], 2);
			any = true;
		}
		if (!any)
			printf("  no interfaces\n");
	}
	if (l->nuplinks) {
		printf("\nuplinks (lane L leaves by uplink L mod %zu):\n", l->nuplinks);
		for (size_t n = 0; n < l->nuplinks; n++) {
			const struct ec_uplink *u = &l->uplinks[n];
			const char *sep = "";
			printf("  %-15s %-7s lanes ", u->name, u->link && *u->link ? u->link : "unknown");
			for (unsigned lane = 0; lane < 32; lane++)
				if (u->lanes & (1u << lane)) {
					printf("%s%u", sep, lane);
					sep = ",";
				}
			printf("  (%u changes)\n", u->changes);
		}
	}
	if (l->nstrays) {
		printf("\nstrays (devices efid created but has no record of; efid never deletes "
		       "them: remove one with `ip link del DEVICE` once you know it is unused):\n");
		for (size_t n = 0; n < l->nstrays; n++) {
			const struct ec_stray *s = &l->strays[n];
			printf("  %s", s->host_ifname);
			if (s->instance && *s->instance)
				printf("  instance %s", s->instance);
			if (s->ifname && *s->ifname)
				printf("  name %s", s->ifname);
			printf("\n");
		}
	}
}

/* With filters, an empty answer means the thing asked for does not exist. */
static int check_found(struct efictl *ctx, const struct ec_listing *l, const char *instance,
		       const char *name)
{
	if (name) {
		for (size_t k = 0; k < l->nifaces; k++)
			if (strcmp(l->ifaces[k].instance, instance) == 0 &&
			    strcmp(l->ifaces[k].name, name) == 0)
				return EXIT_OK;
		return efictl_report(ctx, EXIT_NOT_FOUND, "not-found", ENOENT,
				     "instance %s has no interface %s (see `efictl list`)", instance,
				     name);
	}
	if (instance) {
		for (size_t n = 0; n < l->ninstances; n++)
			if (strcmp(l->instances[n].name, instance) == 0)
				return EXIT_OK;
		return efictl_report(ctx, EXIT_NOT_FOUND, "not-found", ENOENT,
				     "no instance %s known to efid (see `efictl list`)", instance);
	}
	return EXIT_OK;
}

int cmd_status(struct efictl *ctx, int argc, char **argv)
{
	static const struct option longopts[] = { EFICTL_GLOBAL_OPTIONS, { NULL, 0, NULL, 0 } };
	struct ctl_reply rep;
	struct ec_listing l;
	const char *instance = NULL, *name = NULL;
	int c, r;

	while ((c = efictl_getopt(ctx, argc, argv, "", longopts)) != -1) {
		if (c == EFICTL_OPT_STOP)
			return ctx->stop_exit;
	}
	if (optind < argc)
		instance = argv[optind++];
	if (optind < argc)
		name = argv[optind++];
	if (optind < argc)
		return efictl_usage_error(ctx, "status", "unexpected argument '%s'", argv[optind]);
	if (instance && !efi_instance_name_valid(instance))
		return efictl_usage_error(ctx, "status", "invalid instance name '%s'", instance);
	if (name && !efi_ifname_valid(name))
		return efictl_usage_error(ctx, "status", "invalid interface name '%s'", name);

	r = efictl_fetch_listing(ctx, "status", instance, name, &rep, &l);
	if (r)
		return r;
	r = check_found(ctx, &l, instance, name);
	if (r == EXIT_OK) {
		if (ctx->json)
			ec_listing_print_json(stdout, &l);
		else
			print_status(&l);
	}
	ec_listing_free(&l);
	ctl_reply_free(&rep);
	return r;
}
