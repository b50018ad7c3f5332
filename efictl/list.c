/* SPDX-License-Identifier: MIT */
/* efictl list: one line per interface, in aligned columns. */
#include "config.h"

#include <string.h>

#include "efictl.h"
#include "ifacespec.h"

/* The ADDRESSES column: comma-separated, "-" when none. */
static void addresses_cell(const struct ec_iface *i, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = '\0';
	for (size_t k = 0; k < i->naddrs && off < len; k++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", k ? "," : "", i->addrs[k]);
	if (!i->naddrs)
		snprintf(buf, len, "-");
}

static int width(int w, const char *s)
{
	int n = (int)strlen(s ? s : "-");
	return n > w ? n : w;
}

/* The aligned table; the widths fit the longest cell of each column. */
static void print_rows(const struct ec_listing *l)
{
	int wi = (int)strlen("INSTANCE"), wn = (int)strlen("NAME"), ws = (int)strlen("STATE"),
	    wl = (int)strlen("LINK");

	for (size_t k = 0; k < l->nifaces; k++) {
		const struct ec_iface *i = &l->ifaces[k];
		wi = width(wi, i->instance);
		wn = width(wn, i->name);
		ws = width(ws, i->state);
		wl = width(wl, i->link);
	}
	printf("%-*s  %-*s  %-*s  %-*s  %s\n", wi, "INSTANCE", wn, "NAME", ws, "STATE", wl,
	       "LINK", "ADDRESSES");
	/* Instances in the order efid listed them, their interfaces together. */
	for (size_t n = 0; n < l->ninstances; n++) {
		for (size_t k = 0; k < l->nifaces; k++) {
			const struct ec_iface *i = &l->ifaces[k];
			char addrs[EFI_MAX_ADDRS * 64];
			if (strcmp(i->instance, l->instances[n].name) != 0)
				continue;
			addresses_cell(i, addrs, sizeof(addrs));
			printf("%-*s  %-*s  %-*s  %-*s  %s\n", wi, i->instance, wn, i->name, ws,
			       i->state ? i->state : "-", wl, i->link ? i->link : "-", addrs);
		}
	}
}

static void print_table(const struct ec_listing *l)
{
	if (l->nifaces == 0)
		printf("no interfaces attached\n");
	else
		print_rows(l);
	if (l->nstrays)
		printf("%zu stray device%s (made by efid, not on record): see `efictl status`\n",
		       l->nstrays, l->nstrays == 1 ? "" : "s");
}

int cmd_list(struct efictl *ctx, int argc, char **argv)
{
	static const struct option longopts[] = { EFICTL_GLOBAL_OPTIONS, { NULL, 0, NULL, 0 } };
	struct ctl_reply rep;
	struct ec_listing l;
	const char *instance = NULL;
	int c, r;

	while ((c = efictl_getopt(ctx, argc, argv, "", longopts)) != -1) {
		if (c == EFICTL_OPT_STOP)
			return ctx->stop_exit;
	}
	if (optind < argc) {
		instance = argv[optind++];
		if (!efi_instance_name_valid(instance))
			return efictl_usage_error(ctx, "list", "invalid instance name '%s'",
						  instance);
	}
	if (optind < argc)
		return efictl_usage_error(ctx, "list", "unexpected argument '%s'", argv[optind]);

	r = efictl_fetch_listing(ctx, "list", instance, NULL, &rep, &l);
	if (r)
		return r;
	if (ctx->json)
		ec_listing_print_json(stdout, &l);
	else
		print_table(&l);
	ec_listing_free(&l);
	ctl_reply_free(&rep);
	return EXIT_OK;
}
