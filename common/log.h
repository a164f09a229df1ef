/*
 * log.h - the agent's logging, in the OpenBSD daemon manner.
 *
 * In the foreground (-d) messages go to stderr, otherwise to syslog.
 * log_warn() appends strerror(errno); log_warnx() does not.  fatal() and
 * fatalx() log and exit 1.  Secrets never reach these functions.
 */
#ifndef LOCKWATCH_LOG_H
#define LOCKWATCH_LOG_H

#include <stdarg.h>

void log_init(int foreground, int verbose);
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
