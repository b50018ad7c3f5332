/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "log.h"

static const char *log_ident = "efi";
static int log_level = LOG_INFO;
static int log_to_journal;

/* systemd sets JOURNAL_STREAM=dev:ino of the stream stderr is connected to;
 * only trust it if stderr really is that stream. */
static int stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
		return 0;
	if (fstat(STDERR_FILENO, &st) < 0)
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_open(const char *ident)
{
	log_ident = ident;
	log_to_journal = stderr_is_journal();
}

void log_set_level(int level)
{
	if (level < LOG_EMERG)
		level = LOG_EMERG;
	if (level > LOG_DEBUG)
		level = LOG_DEBUG;
	log_level = level;
}

int log_get_level(void)
{
	return log_level;
}

int log_level_from_string(const char *s)
{
	static const struct { const char *name; int level; } names[] = {
		{ "emerg", LOG_EMERG }, { "alert", LOG_ALERT }, { "crit", LOG_CRIT },
		{ "err", LOG_ERR }, { "error", LOG_ERR }, { "warning", LOG_WARNING },
		{ "warn", LOG_WARNING }, { "notice", LOG_NOTICE }, { "info", LOG_INFO },
		{ "debug", LOG_DEBUG },
	};
	if (!s)
		return -1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(s, names[i].name) == 0)
			return names[i].level;
	if (s[0] >= '0' && s[0] <= '7' && s[1] == '\0')
		return s[0] - '0';
	return -1;
}

void log_msg(int level, const char *fmt, ...)
{
	static const char *const tags[] = { "emerg", "alert", "crit", "error",
					    "warning", "notice", "info", "debug" };
	char line[2048];
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);

	if (log_to_journal) {
		sd_journal_send("MESSAGE=%s", line, "PRIORITY=%i", level,
				"SYSLOG_IDENTIFIER=%s", log_ident, NULL);
		return;
	}
	struct timespec ts;
	struct tm tm;
	char stamp[32];
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ld %s[%d] %s: %s\n", stamp, ts.tv_nsec / 1000000, log_ident,
		(int)getpid(), tags[level & 7], line);
}
