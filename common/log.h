/* SPDX-License-Identifier: MIT */
/*
 * The daemon's one logger: to the journal when stderr is connected to it
 * (systemd sets $JOURNAL_STREAM), to stderr otherwise.  Library code
 * (libefi) never logs; only programs include this.
 */
#ifndef EFI_LOG_H
#define EFI_LOG_H

#include <syslog.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sets the program name and picks the journal or stderr.  Call once. */
void log_open(const char *ident);
/* Sets the threshold: LOG_ERR … LOG_DEBUG. */
void log_set_level(int level);
int log_get_level(void);
/* Parses "error|warning|notice|info|debug" (or 3..7).  Returns the level or -1. */
int log_level_from_string(const char *s);

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#ifdef __cplusplus
}
#endif
#endif
