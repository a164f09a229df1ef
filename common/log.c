/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c - stderr or syslog logging for lockwatchd, and the escaping of
 * control bytes every message goes through.
 *
 * The settings are process-wide by nature (there is one stderr and one
 * syslog connection); they are written once at start-up, before any
 * thread exists, and only read afterwards.
 */
#include "common/log.h"
#include "common/keytext.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

static int log_foreground = 1;
static int log_verbose;
static atomic_int log_stderr_too;       /* a daemon starting: syslog and stderr */

void
log_also_stderr(int on)
{
    atomic_store(&log_stderr_too, on);
}

void
log_init(int foreground, int verbose)
{
    log_foreground = foreground;
    log_verbose = verbose;
    if (!foreground)
        openlog("lockwatchd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

/*
 * Messages may carry bytes from Redis (keys, holders), the network or a
 * config file: a control byte is written as \xNN, and a character that
 * reorders or hides text (C1, a bidirectional override, a zero-width one:
 * keytext_display_unsafe()) as \uNNNN, so nothing can forge a log line,
 * send escape sequences to a terminal or show a key as another.  A
 * backslash is doubled so the escape cannot be faked either.  What does
 * not fit is cut at a whole character of the output.
 */
void
log_defang(char *out, size_t outsz, const char *in)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0, need, seq, left = strlen(in);
    unsigned long cp = 0;
    unsigned char c;

    if (outsz == 0)
        return;
    for (; *in != '\0'; in++, left--) {
        c = (unsigned char)*in;
        if (c >= 0x80 && (seq = keytext_utf8_next(in, left, &cp)) > 1 &&
            keytext_display_unsafe(cp)) {
            if (o + 6 >= outsz)
                break;
            out[o++] = '\\';
            out[o++] = 'u';
            for (int sh = 12; sh >= 0; sh -= 4)
                out[o++] = hex[(cp >> sh) & 0xf];
            in += seq - 1;
            left -= seq - 1;
            continue;
        }
        need = c < 0x20 || c == 0x7f ? 4 : c == '\\' ? 2 : 1;
        if (o + need >= outsz)
            break;
        if (need == 4) {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 0xf];
        } else if (need == 2) {
            out[o++] = '\\';
            out[o++] = '\\';
        } else {
            out[o++] = (char)c;
        }
    }
    out[o] = '\0';
}

static void vlog(int, const char *, va_list, int) __attribute__((format(printf, 2, 0)));

static void
vlog(int pri, const char *fmt, va_list ap, int with_errno)
{
    char raw[1024], msg[4 * sizeof(raw)];
    int saved = errno;
    size_t n;

    vsnprintf(raw, sizeof(raw), fmt, ap);
    if (with_errno) {
        n = strlen(raw);
        snprintf(raw + n, sizeof(raw) - n, ": %s", strerror(saved));
    }
    log_defang(msg, sizeof(msg), raw);
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
        if (atomic_load(&log_stderr_too))
            fprintf(stderr, "lockwatchd: %s\n", msg);
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
