/* SPDX-License-Identifier: MIT */
/*
 * efid: the per-host EFI control plane.
 *
 * Start-up order matters for systemd: READY=1 is sent only once the database
 * is open and migrated, the kernel has been enumerated and reconciled with
 * it, and the control socket accepts requests.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "auth.h"
#include "cm.h"
#include "control.h"
#include "efid.h"
#include "uplinks.h"
#include "iface.h"
#include "log.h"
#include "netns_path.h"
#include "store.h"

#define DEFAULT_STATE_DIR "/var/lib/efi"
#define DEFAULT_RUNTIME_DIR "/run/efi"

void efid_status(struct efid *d, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	(void)d;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	sd_notifyf(0, "STATUS=%s", line);
	log_debug("status: %s", line);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: efid [OPTIONS]\n"
		"The EFI per-host control-plane daemon (runs in the foreground).\n\n"
		"  -c, --config FILE       configuration file (default %s;\n"
		"                          a missing default file is fine)\n"
		"  -s, --state-dir DIR     database and lock (default $STATE_DIRECTORY or %s)\n"
		"  -r, --runtime-dir DIR   control socket (default $RUNTIME_DIRECTORY or %s)\n"
		"  -l, --log-level LEVEL   error, warning, notice, info (default) or debug\n"
		"  -h, --help              show this help\n"
		"  -V, --version           show the version\n\n"
		"The control socket is RUNTIME-DIR/efid.sock unless systemd passes one\n"
		"(efid.socket). Operators use efictl; see efictl --help.\n",
		EFID_DEFAULT_CONFIG, DEFAULT_STATE_DIR, DEFAULT_RUNTIME_DIR);
}

/* systemd may pass several colon-separated directories; use the first. */
static void dir_from_env(char *dst, size_t len, const char *env, const char *def)
{
	const char *v = getenv(env);
	if (v && *v) {
		size_t n = strcspn(v, ":");
		snprintf(dst, len, "%.*s", (int)n, v);
	} else {
		snprintf(dst, len, "%s", def);
	}
}

static int make_dir(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* One efid per state directory: a second one would fight over the database
 * and the kernel.  Returns the lock fd or -errno. */
static int lock_state_dir(const char *dir)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/efid.lock", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = -errno;
		log_error("cannot open %s: %s", path, strerror(-e));
		return e;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = -errno;
		char pid[32] = "";
		ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
		if (n > 0)
			pid[strcspn(pid, "\n")] = '\0';
		log_error("another efid (pid %s) already uses the state directory %s: stop it, or give this one its own --state-dir",
			  n > 0 ? pid : "?", dir);
		close(fd);
		return e == -EWOULDBLOCK ? -EBUSY : e;
	}
	char pid[32];
	int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)n, 0) < 0)
		log_debug("cannot record the pid in %s: %m", path);
	return fd;
}

static int on_exit_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct efid *d = userdata;
	log_info("received %s, shutting down", strsignal((int)si->ssi_signo));
	d->stopping = true;
	sd_notify(0, "STOPPING=1");
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "runtime-dir", required_argument, NULL, 'r' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct efid d;
	const char *config_arg = NULL, *state_arg = NULL, *runtime_arg = NULL, *level_arg = NULL;
	char err[1024] = "";
	int lock_fd = -1, r, c, ret = EXIT_FAILURE;
	sigset_t ss;

	memset(&d, 0, sizeof(d));
	log_open("efid");
	while ((c = getopt_long(argc, argv, "c:s:r:l:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config_arg = optarg; break;
		case 's': state_arg = optarg; break;
		case 'r': runtime_arg = optarg; break;
		case 'l': level_arg = optarg; break;
		case 'h': usage(stdout); return EXIT_SUCCESS;
		case 'V': printf("efid %s (control protocol %d, schema %d)\n", PACKAGE_VERSION,
				 EFI_CTL_VERSION, STORE_SCHEMA_VERSION);
			return EXIT_SUCCESS;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "efid: unexpected argument '%s'; see efid --help\n", argv[optind]);
		return 2;
	}
	if (level_arg) {
		int lvl = log_level_from_string(level_arg);
		if (lvl < 0) {
			fprintf(stderr, "efid: invalid --log-level '%s': use error, warning, notice, info or debug\n",
				level_arg);
			return 2;
		}
		log_set_level(lvl);
	}

	/* Configuration: embedded defaults, then the file. */
	efid_config_defaults(&d.config);
	snprintf(d.config_path, sizeof(d.config_path), "%s", config_arg ? config_arg : EFID_DEFAULT_CONFIG);
	r = efid_config_load(&d.config, d.config_path, config_arg == NULL, err, sizeof(err));
	if (r < 0) {
		log_error("cannot load the configuration: %s", err);
		return EXIT_FAILURE;
	}
	if (!level_arg && d.config.log_level >= 0)
		log_set_level(d.config.log_level);

	if (state_arg)
		snprintf(d.state_dir, sizeof(d.state_dir), "%s", state_arg);
	else
		dir_from_env(d.state_dir, sizeof(d.state_dir), "STATE_DIRECTORY", DEFAULT_STATE_DIR);
	if (runtime_arg)
		snprintf(d.runtime_dir, sizeof(d.runtime_dir), "%s", runtime_arg);
	else
		dir_from_env(d.runtime_dir, sizeof(d.runtime_dir), "RUNTIME_DIRECTORY", DEFAULT_RUNTIME_DIR);
	if ((size_t)snprintf(d.socket_path, sizeof(d.socket_path), "%s/efid.sock", d.runtime_dir) >=
	    sizeof(d.socket_path)) {
		log_error("the runtime directory path %s is too long", d.runtime_dir);
		return EXIT_FAILURE;
	}

	if ((r = make_dir(d.state_dir, 0755)) < 0) {
		log_error("cannot create the state directory %s: %s", d.state_dir, strerror(-r));
		return EXIT_FAILURE;
	}
	if ((r = make_dir(d.runtime_dir, 0755)) < 0) {
		log_error("cannot create the runtime directory %s: %s", d.runtime_dir, strerror(-r));
		return EXIT_FAILURE;
	}
	signal(SIGPIPE, SIG_IGN);
	if (auth_init() < 0) {
		log_error("cannot read efid's own network namespace (/proc/self/ns/net): %m");
		return EXIT_FAILURE;
	}

	lock_fd = lock_state_dir(d.state_dir);
	if (lock_fd < 0)
		goto out;
	/* Before reconciling: path instances' namespaces must be found again
	 * first, or their interfaces would look missing. */
	r = netns_path_init(d.runtime_dir);
	if (r < 0)
		log_warning("cannot keep namespace paths in %s/netns-paths (%s): CNI attaches "
			    "will fail", d.runtime_dir, strerror(-r));

	char db[PATH_MAX + 16];
	snprintf(db, sizeof(db), "%s/efid.db", d.state_dir);
	efid_status(&d, "Opening the database");
	r = store_open(db, &d.store);
	if (r < 0) {
		log_error("cannot use the database: %s", store_open_error());
		goto out;
	}
	log_info("database %s (schema %d, host id %s)", db, store_schema_version(d.store),
		 store_host_id(d.store));

	r = sd_event_default(&d.event);
	if (r < 0) {
		log_error("cannot create the event loop: %s", strerror(-r));
		goto out;
	}
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	sd_event_add_signal(d.event, NULL, SIGTERM, on_exit_signal, &d);
	sd_event_add_signal(d.event, NULL, SIGINT, on_exit_signal, &d);
	/* Pings the watchdog on its own when $WATCHDOG_USEC is set. */
	sd_event_set_watchdog(d.event, true);

	efid_status(&d, "Enumerating the kernel");
	r = kernel_open(&d);
	if (r < 0) {
		log_error("cannot open netlink: %s", strerror(-r));
		goto out;
	}
	efid_status(&d, "Reconciling the database with the kernel");
	r = iface_reconcile(&d);
	if (r < 0) {
		log_error("reconciliation failed: %s", strerror(-r));
		goto out;
	}
	if (d.config.iface_dir[0]) {
		struct stat st;
		if (stat(d.config.iface_dir, &st) == 0) {
			int failed = iface_apply_dir(&d, d.config.iface_dir);
			if (failed > 0)
				log_warning("%d interface file(s) in %s could not be applied (see above)",
					    failed, d.config.iface_dir);
		}
	}
	r = iface_watch_start(&d);
	if (r < 0) {
		log_error("cannot watch netlink events: %s", strerror(-r));
		goto out;
	}
	r = uplinks_start(&d);
	if (r < 0)
		goto out;
	r = cm_start(&d);
	if (r < 0)
		goto out;
	r = control_start(&d);
	if (r < 0)
		goto out;

	log_info("efid %s ready on %s", PACKAGE_VERSION, d.socket_path);
	sd_notify(0, "READY=1");
	efid_status(&d, "Serving on %s", d.socket_path);

	r = sd_event_loop(d.event);
	if (r < 0) {
		log_error("event loop failed: %s", strerror(-r));
		goto out;
	}
	ret = EXIT_SUCCESS;
out:
	if (!d.stopping)
		sd_notify(0, "STOPPING=1");
	cm_shutdown(&d);
	control_stop(&d);
	cm_stop(&d);
	uplinks_stop(&d);
	kernel_close(&d);
	sd_event_unref(d.event);
	store_close(d.store);
	netns_path_exit();
	if (lock_fd >= 0)
		close(lock_fd);
	return ret;
}
