/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.h - the agent's logging, in the OpenBSD daemon manner.
 *
 * In the foreground (-d) messages go to stderr, otherwise to syslog.
 * log_warn() appends strerror(errno); log_warnx() does not.  fatal() and
 * fatalx() log and exit 1.  Secrets never reach these functions.  Every
 * message is escaped by log_defang() first.
 */
#ifndef LOCKWATCH_LOG_H
#define LOCKWATCH_LOG_H

#include <stdarg.h>
#include <stddef.h>

/* Worst-case size of log_defang's output for an input of n bytes, NUL
 * included (each byte may become \xNN). */
#define LOG_DEFANG_MAX(n) (4 * (n) + 1)

/*
 * Copy in to out (outsz bytes, NUL included) with each control byte
 * written as \xNN and each backslash doubled: the escaping every log
 * message gets, for text that reaches a terminal another way (the config
 * errors lockwatchd and lockctl print to stderr).  The output is cut
 * whole at outsz.
 */
void log_defang(char *out, size_t outsz, const char *in);

void log_init(int foreground, int verbose);
/* With syslog (not foreground): also write each message to stderr, on or
 * off (a daemon's start-up, while its parent's terminal is still there). */
void log_also_stderr(int on);
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
