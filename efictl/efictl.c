/* SPDX-License-Identifier: MIT */
/*
 * efictl: global options, the subcommand dispatch table, usage text and the
 * error reporting every subcommand shares.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efictl.h"

struct command {
	const char *name;
	const char *alias;
	int (*fn)(struct efictl *ctx, int argc, char **argv);
	const char *args;
	const char *summary;
};

static const struct command commands[] = {
	{ "attach", NULL, cmd_attach,
	  "INSTANCE --address ADDR/PREFIX [--address ...] [--name NAME]\n"
	  "                [--uplink DEV] [--mtu N] [--kind veth|macvlan]",
	  "create an interface in an instance, or confirm it exists as asked" },
	{ "detach", NULL, cmd_detach, "INSTANCE NAME | INSTANCE --all  [--wait[=SECONDS]]",
	  "remove one interface, or every interface of an instance (processes using it see their QPs fail; --wait: first wait until they closed them)" },
	{ "list", NULL, cmd_list, "[INSTANCE]", "one line per interface" },
	{ "status", "show", cmd_status, "[INSTANCE [NAME]]",
	  "instances, interfaces, addresses and GID tables in detail; strays" },
	{ "apply", NULL, cmd_apply, "FILE|DIR",
	  "attach what interface files (*.conf) describe; idempotent" },
	{ "stats", NULL, cmd_stats, "[INSTANCE [NAME]] [--prometheus]", "counters and path health per interface, context, path, QP (--json; --prometheus: for node_exporter)" },
	{ "version", NULL, cmd_version, "", "versions of efictl, efid and the protocol" },
	{ "help", NULL, cmd_help, "[COMMAND]", "this text" },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(name, commands[i].name) == 0 ||
		    (commands[i].alias && strcmp(name, commands[i].alias) == 0))
			return &commands[i];
	return NULL;
}

static void print_usage(FILE *f)
{
	fprintf(f,
		"Usage: efictl [--socket PATH] [--json] [--timeout SECONDS] COMMAND [ARGS]\n"
		"\n"
		"Operate efid, the EFI control daemon.\n"
		"\n"
		"Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		char name[32];
		snprintf(name, sizeof(name), "%s%s%s", commands[i].name,
			 commands[i].alias ? ", " : "",
			 commands[i].alias ? commands[i].alias : "");
		fprintf(f, "  %-14s %s\n", name, commands[i].summary);
	}
	fprintf(f,
		"\n"
		"Options (before or after COMMAND):\n"
		"  --socket PATH      efid's control socket (default: $EFI_SOCKET, else %s)\n"
		"  --json             print one JSON document on stdout (errors too)\n"
		"  --timeout SECONDS  how long to wait for efid (default 30; 0: forever)\n"
		"  -h, --help         show help (efictl COMMAND --help for a command)\n"
		"\n"
		"Exit status:\n"
		"  0  success\n"
		"  1  other failure (efid error, store busy or full, protocol error)\n"
		"  2  usage error, invalid argument or interface file\n"
		"  3  not found (instance, interface or uplink)\n"
		"  4  conflict (name or address already taken)\n"
		"  5  permission denied (needs root or the group set in efid.conf)\n"
		"  6  efid unreachable (not running, or no answer in time)\n"
		"\n"
		"See docs/efictl.md (or efictl(8)) for the JSON schema and examples.\n",
		EFI_CTL_DEFAULT_SOCKET);
}

void efictl_print_command_usage(FILE *f, const char *cmd)
{
	const struct command *c = find_command(cmd);
	if (!c)
		return;
	fprintf(f, "Usage: efictl %s %s\n  %s\n", c->name, c->args, c->summary);
	if (c->alias)
		fprintf(f, "  (also: efictl %s)\n", c->alias);
	fprintf(f, "Global options --socket, --json and --timeout may follow the command.\n");
}

int cmd_help(struct efictl *ctx, int argc, char **argv)
{
	if (argc > 1 && argv[1][0] != '-') {
		if (!find_command(argv[1]))
			return efictl_usage_error(ctx, NULL, "unknown command '%s'", argv[1]);
		efictl_print_command_usage(stdout, argv[1]);
		return EXIT_OK;
	}
	print_usage(stdout);
	return EXIT_OK;
}

/* ---- errors ------------------------------------------------------------ */

int efictl_exit_for_errno(int err)
{
	switch (err) {
	case 0:
		return EXIT_OK;
	case EINVAL:
		return EXIT_USAGE;
	case ENOENT:
	case ENODEV:
		return EXIT_NOT_FOUND;
	case EEXIST:
	case EADDRINUSE:
		return EXIT_CONFLICT;
	case EPERM:
	case EACCES:
		return EXIT_PERMISSION;
	default:
		return EXIT_FAIL;
	}
}

const char *efictl_code_for_errno(int err)
{
	switch (err) {
	case EINVAL:
		return "invalid-argument";
	case ENOENT:
	case ENODEV:
		return "not-found";
	case EEXIST:
	case EADDRINUSE:
		return "conflict";
	case EPERM:
	case EACCES:
		return "permission-denied";
	case EBUSY:
		return "busy";
	case ENOSPC:
		return "no-space";
	case EROFS:
		return "read-only";
	case EPROTO:
	case EBADMSG:
		return "protocol-error";
	default:
		return "failed";
	}
}

static void vreport(struct efictl *ctx, const char *code, int err, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

static void vreport(struct efictl *ctx, const char *code, int err, const char *fmt, va_list ap)
{
	char msg[4096];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, "efictl: %s\n", msg);
	if (ctx && ctx->json) {
		struct json j;
		json_init(&j, stdout);
		json_obj_begin(&j);
		json_key(&j, "error");
		json_obj_begin(&j);
		json_key(&j, "code");
		json_str(&j, code);
		json_key(&j, "errno");
		json_i64(&j, err);
		json_key(&j, "message");
		json_str(&j, msg);
		json_obj_end(&j);
		json_obj_end(&j);
		json_finish(&j);
	}
}

int efictl_report(struct efictl *ctx, int exit, const char *code, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(ctx, code, err, fmt, ap);
	va_end(ap);
	return exit;
}

int efictl_usage_error(struct efictl *ctx, const char *cmd, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (cmd)
		return efictl_report(ctx, EXIT_USAGE, "usage", EINVAL,
				     "%s (see `efictl %s --help`)", msg, cmd);
	return efictl_report(ctx, EXIT_USAGE, "usage", EINVAL, "%s (see `efictl --help`)", msg);
}

/* ---- options ----------------------------------------------------------- */

/* Parses --timeout: seconds, fractions allowed, 0 meaning no limit. */
static int parse_timeout(const char *s, int *ms)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0 && v <= 86400))
		return -EINVAL;
	*ms = v == 0 ? -1 : (int)(v * 1000 + 0.999);
	return 0;
}

/* Handles one global option; returns 0 or an exit code after reporting. */
static int global_option(struct efictl *ctx, int opt, const char *arg, const char *cmd)
{
	switch (opt) {
	case OPT_SOCKET:
		if (!*arg)
			return efictl_usage_error(ctx, cmd, "--socket needs a path");
		ctx->socket_path = arg;
		return 0;
	case OPT_JSON:
		ctx->json = true;
		return 0;
	case OPT_TIMEOUT:
		if (parse_timeout(arg, &ctx->timeout_ms))
			return efictl_usage_error(ctx, cmd,
						  "--timeout '%s' is invalid: give seconds, 0..86400 "
						  "(0: wait forever)",
						  arg);
		return 0;
	default:
		return EXIT_FAIL;
	}
}

int efictl_getopt(struct efictl *ctx, int argc, char **argv, const char *shortopts,
		  const struct option *longopts)
{
	char opts[64];
	snprintf(opts, sizeof(opts), ":h%s", shortopts);
	opterr = 0;
	for (;;) {
		int idx = -1;
		int c = getopt_long(argc, argv, opts, longopts, &idx);
		switch (c) {
		case OPT_SOCKET:
		case OPT_JSON:
		case OPT_TIMEOUT:
			ctx->stop_exit = global_option(ctx, c, optarg, argv[0]);
			if (ctx->stop_exit)
				return EFICTL_OPT_STOP;
			continue;
		case 'h':
		case OPT_HELP:
			efictl_print_command_usage(stdout, argv[0]);
			ctx->stop_exit = EXIT_OK;
			return EFICTL_OPT_STOP;
		case ':':
			ctx->stop_exit = efictl_usage_error(ctx, argv[0], "option '%s' needs a value",
							    argv[optind - 1]);
			return EFICTL_OPT_STOP;
		case '?':
			if (optopt)
				ctx->stop_exit = efictl_usage_error(ctx, argv[0],
								    "unknown option '-%c'", optopt);
			else
				ctx->stop_exit = efictl_usage_error(ctx, argv[0],
								    "unknown option '%s'",
								    argv[optind - 1]);
			return EFICTL_OPT_STOP;
		default:
			return c;
		}
	}
}

/* Global options before the command name. */
static int parse_leading_options(struct efictl *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		EFICTL_GLOBAL_OPTIONS,
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	opterr = 0;
	optind = 0;
	for (;;) {
		/* '+': stop at the command name, its options are its own. */
		int c = getopt_long(argc, argv, "+:hV", longopts, NULL);
		switch (c) {
		case -1:
			return 0;
		case OPT_SOCKET:
		case OPT_JSON:
		case OPT_TIMEOUT: {
			int r = global_option(ctx, c, optarg, NULL);
			if (r)
				return r;
			break;
		}
		case 'h':
		case OPT_HELP:
			print_usage(stdout);
			return -1;
		case 'V':
			return -2;
		case ':':
			return efictl_usage_error(ctx, NULL, "option '%s' needs a value",
						  argv[optind - 1]);
		default:
			if (optopt)
				return efictl_usage_error(ctx, NULL, "unknown option '-%c'", optopt);
			return efictl_usage_error(ctx, NULL, "unknown option '%s'",
						  argv[optind - 1]);
		}
	}
}

int main(int argc, char **argv)
{
	struct efictl ctx = { .timeout_ms = 30000 };
	int r = parse_leading_options(&ctx, argc, argv);
	if (r == -1)
		return EXIT_OK;
	if (r > 0)
		return r;

	char *version_argv[] = { (char *)"version", NULL };
	const struct command *cmd;
	int cargc;
	char **cargv;
	if (r == -2) {
		cmd = find_command("version");
		cargc = 1;
		cargv = version_argv;
	} else {
		if (optind >= argc) {
			print_usage(stderr);
			return efictl_usage_error(&ctx, NULL, "no command given");
		}
		cmd = find_command(argv[optind]);
		if (!cmd)
			return efictl_usage_error(&ctx, NULL, "unknown command '%s'", argv[optind]);
		cargc = argc - optind;
		cargv = argv + optind;
	}
	if (!ctx.socket_path)
		ctx.socket_path = ctl_default_socket_path();

	/* Subcommands run getopt afresh over their own arguments. */
	optind = 0;
	r = cmd->fn(&ctx, cargc, cargv);
	ipc_close(&ctx);
	if (fflush(stdout) == EOF && r == EXIT_OK) {
		fprintf(stderr, "efictl: cannot write output: %s\n", strerror(errno));
		r = EXIT_FAIL;
	}
	return r;
}
