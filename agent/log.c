/*
 * log.c - stderr or syslog logging for lockwatchd.
 *
 * The settings are process-wide by nature (there is one stderr and one
 * syslog connection); they are written once at start-up, before any
 * thread exists, and only read afterwards.
 */
#include "agent/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

static int log_foreground = 1;
static int log_verbose;

void
log_init(int foreground, int verbose)
{
    log_foreground = foreground;
    log_verbose = verbose;
    if (!foreground)
        openlog("lockwatchd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

static void vlog(int, const char *, va_list, int) __attribute__((format(printf, 2, 0)));

static void
vlog(int pri, const char *fmt, va_list ap, int with_errno)
{
    char msg[1024];
    int saved = errno;
    size_t n;

    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (with_errno) {
        n = strlen(msg);
        snprintf(msg + n, sizeof(msg) - n, ": %s", strerror(saved));
    }
    if (log_foreground) {
        struct timespec ts;
        struct tm tm;
        char stamp[32];

        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
        fprintf(stderr, "%s.%03ldZ lockwatchd: %s\n", stamp, ts.tv_nsec / 1000000L, msg);
    } else {
        syslog(pri, "%s", msg);
    }
    errno = saved;
}

void
log_warn(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vlog(LOG_WARNING, fmt, ap, 1);
    va_end(ap);
}

void
log_warnx(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vlog(LOG_WARNING, fmt, ap, 0);
    va_end(ap);
}

void
log_info(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vlog(LOG_INFO, fmt, ap, 0);
    va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
    va_list ap;

    if (!log_verbose)
        return;
    va_start(ap, fmt);
    vlog(LOG_DEBUG, fmt, ap, 0);
    va_end(ap);
}

void
fatal(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vlog(LOG_CRIT, fmt, ap, 1);
    va_end(ap);
    exit(1);
}

void
fatalx(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vlog(LOG_CRIT, fmt, ap, 0);
    va_end(ap);
    exit(1);
}
