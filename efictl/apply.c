/* SPDX-License-Identifier: MIT */
/*
 * efictl apply FILE|DIR: the declarative form cloud-init uses.  Each *.conf
 * (in name order) is parsed with efi_iface_file_parse and sent as ATTACH,
 * which is idempotent, so applying the same files twice changes nothing.
 * A bad file or a refused attach is reported and the rest still applied;
 * efid becoming unreachable stops the run.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "efictl.h"
#include "ifacespec.h"

struct apply_result {
	char *file;
	char instance[EFI_INSTANCE_MAX + 1];
	char name[EFI_IFNAME_MAX + 1];
	const char *result;
};

struct apply_error {
	char *file;
	char *message;
	int exit;
};

struct apply_run {
	struct apply_result *results;
	size_t nresults;
	struct apply_error *errors;
	size_t nerrors;
};

static void run_free(struct apply_run *run)
{
	for (size_t i = 0; i < run->nresults; i++)
		free(run->results[i].file);
	for (size_t i = 0; i < run->nerrors; i++) {
		free(run->errors[i].file);
		free(run->errors[i].message);
	}
	free(run->results);
	free(run->errors);
}

static int add_error(struct apply_run *run, const char *file, int exit, const char *message)
{
	struct apply_error *e = realloc(run->errors, (run->nerrors + 1) * sizeof(*e));
	if (!e)
		return -ENOMEM;
	run->errors = e;
	e = &run->errors[run->nerrors];
	e->file = strdup(file);
	e->message = strdup(message);
	e->exit = exit;
	if (!e->file || !e->message) {
		free(e->file);
		free(e->message);
		return -ENOMEM;
	}
	run->nerrors++;
	fprintf(stderr, "efictl: %s\n", message);
	return 0;
}

static int add_result(struct apply_run *run, const char *file, const struct ec_iface *iface,
		      enum efi_ctl_result result)
{
	struct apply_result *r = realloc(run->results, (run->nresults + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	run->results = r;
	r = &run->results[run->nresults];
	memset(r, 0, sizeof(*r));
	r->file = strdup(file);
	if (!r->file)
		return -ENOMEM;
	snprintf(r->instance, sizeof(r->instance), "%s", iface->instance);
	snprintf(r->name, sizeof(r->name), "%s", iface->name);
	r->result = attach_result_name(result);
	run->nresults++;
	return 0;
}

/* Applies one file.  Returns 0 (done, or failure recorded in run) or a
 * negative errno from the transport, which ends the whole run. */
static int apply_file(struct efictl *ctx, struct apply_run *run, const char *path)
{
	struct efi_iface_spec spec;
	struct ctl_reply rep;
	struct ec_iface iface;
	enum efi_ctl_result result;
	char err[1024], msg[1400];
	int r;

	r = efi_iface_file_parse(path, &spec, err, sizeof(err));
	if (r)
		return add_error(run, path, efictl_exit_for_errno(-r), err);
	r = attach_request(ctx, &spec, &rep, &result, &iface);
	if (r)
		return r;
	if (rep.status < 0) {
		snprintf(msg, sizeof(msg), "%s: attach to %s refused: %s", path, spec.instance,
			 rep.error && *rep.error ? rep.error : strerror(-rep.status));
		r = add_error(run, path, efictl_exit_for_errno(-rep.status), msg);
		ctl_reply_free(&rep);
		return r;
	}
	if (!ctx->json)
		printf("%s: %s %s on instance %s\n", path, attach_result_name(result), iface.name,
		       iface.instance);
	r = add_result(run, path, &iface, result);
	ec_iface_free(&iface);
	ctl_reply_free(&rep);
	return r;
}

static int conf_filter(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return d->d_name[0] != '.' && n > 5 && strcmp(d->d_name + n - 5, ".conf") == 0;
}

/* Byte order, not the locale's: the same files apply in the same order
 * everywhere (efid sorts the same way at start). */
static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static void print_json(const struct apply_run *run)
{
	struct json j;
	json_init(&j, stdout);
	json_obj_begin(&j);
	json_key(&j, "results");
	json_arr_begin(&j);
	for (size_t i = 0; i < run->nresults; i++) {
		json_obj_begin(&j);
		json_key(&j, "file");
		json_str(&j, run->results[i].file);
		json_key(&j, "instance");
		json_str(&j, run->results[i].instance);
		json_key(&j, "name");
		json_str(&j, run->results[i].name);
		json_key(&j, "result");
		json_str(&j, run->results[i].result);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_key(&j, "errors");
	json_arr_begin(&j);
	for (size_t i = 0; i < run->nerrors; i++) {
		json_obj_begin(&j);
		json_key(&j, "file");
		json_str(&j, run->errors[i].file);
		json_key(&j, "message");
		json_str(&j, run->errors[i].message);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_obj_end(&j);
	json_finish(&j);
}

/* One failure: its code; several of one kind: that code; mixed: 1. */
static int run_exit(const struct apply_run *run)
{
	if (run->nerrors == 0)
		return EXIT_OK;
	int exit = run->errors[0].exit;
	for (size_t i = 1; i < run->nerrors; i++)
		if (run->errors[i].exit != exit)
			return EXIT_FAIL;
	return exit == EXIT_OK ? EXIT_FAIL : exit;
}

int cmd_apply(struct efictl *ctx, int argc, char **argv)
{
	static const struct option longopts[] = { EFICTL_GLOBAL_OPTIONS, { NULL, 0, NULL, 0 } };
	struct apply_run run = { 0 };
	struct dirent **names = NULL;
	int nnames = 0;
	struct stat st;
	const char *target;
	int c, r = 0;

	while ((c = efictl_getopt(ctx, argc, argv, "", longopts)) != -1) {
		if (c == EFICTL_OPT_STOP)
			return ctx->stop_exit;
	}
	if (optind >= argc)
		return efictl_usage_error(ctx, "apply", "no FILE or DIR given");
	target = argv[optind++];
	if (optind < argc)
		return efictl_usage_error(ctx, "apply", "unexpected argument '%s'", argv[optind]);

	if (stat(target, &st) < 0) {
		int e = errno;
		return efictl_report(ctx, efictl_exit_for_errno(e), efictl_code_for_errno(e), e,
				     "cannot apply %s: %s", target, strerror(e));
	}
	if (S_ISDIR(st.st_mode)) {
		nnames = scandir(target, &names, conf_filter, by_name);
		if (nnames < 0) {
			int e = errno;
			return efictl_report(ctx, efictl_exit_for_errno(e),
					     efictl_code_for_errno(e), e, "cannot read %s: %s",
					     target, strerror(e));
		}
		for (int i = 0; i < nnames && r == 0; i++) {
			char path[4096];
			size_t tl = strlen(target);
			int n = snprintf(path, sizeof(path), "%s%s%s", target,
					 tl && target[tl - 1] == '/' ? "" : "/", names[i]->d_name);
			if (n < 0 || (size_t)n >= sizeof(path)) {
				r = add_error(&run, names[i]->d_name, EXIT_USAGE, "path too long");
				continue;
			}
			r = apply_file(ctx, &run, path);
		}
		if (nnames == 0 && !ctx->json)
			printf("%s: no *.conf files, nothing to apply\n", target);
	} else {
		r = apply_file(ctx, &run, target);
	}

	int exit;
	if (r == -ENOMEM)
		exit = efictl_report(ctx, EXIT_FAIL, "failed", ENOMEM, "out of memory");
	else if (r)
		exit = ipc_report_transport(ctx, r);
	else {
		if (ctx->json)
			print_json(&run);
		exit = run_exit(&run);
	}
	for (int i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	run_free(&run);
	return exit;
}
