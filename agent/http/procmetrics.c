/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * procmetrics.c - the standard process_* families of /metrics: the agent
 * process's CPU time, resident and virtual memory, open and maximum file
 * descriptors and start time, as the Prometheus client libraries' process
 * collector names them, so the dashboards and alerts written for every
 * exporter work on lockwatchd too.
 *
 * Read at each scrape of the /metrics route (not in --once): the text of
 * /proc/self/stat (parsed by common/procstat.c), the entries of
 * /proc/self/fd, getrlimit(RLIMIT_NOFILE); the start time is the one the
 * agent took from the realtime clock at start-up.  Linux only.  A figure
 * that cannot be read (no /proc, an unexpected text) is left out, its
 * family's HELP and TYPE with no sample: never a wrong number.  The rows
 * are METRICS_PROCESS_ROWS of metrics_impl.h.
 */
#include "agent/http/procmetrics.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "agent/http/metrics_impl.h"
#include "common/procstat.h"

#define STAT_MAX 4096           /* /proc/self/stat is a few hundred bytes */

static void
set(struct proc_value *pv, double v)
{
    pv->have = true;
    pv->v = v;
}

/* The whole of /proc/self/stat into buf; its length, or -1 (unreadable,
 * or longer than the buffer: cut, so not parsed). */
static ssize_t
read_stat(char *buf, size_t cap)
{
    size_t got = 0;
    ssize_t n = 0;
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

    if (fd == -1)
        return -1;
    while (got < cap) {
        n = read(fd, buf + got, cap - got);
        if (n == -1 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    return n == -1 || got == cap ? -1 : (ssize_t)got;
}

static void
take_stat(struct proc_sample *s)
{
    char buf[STAT_MAX];
    struct procstat ps;
    long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    ssize_t len = read_stat(buf, sizeof(buf));

    if (len == -1 || procstat_parse_stat(buf, (size_t)len, &ps) == -1)
        return;
    if (tck > 0)
        set(&s->cpu_seconds, (double)(ps.utime_ticks + ps.stime_ticks) / (double)tck);
    if (page > 0)
        set(&s->resident_bytes, (double)ps.rss_pages * (double)page);
    set(&s->virtual_bytes, (double)ps.vsize_bytes);
}

/* The entries of /proc/self/fd but the one this count opened to read it. */
static void
take_open_fds(struct proc_sample *s)
{
    char own[24];
    struct dirent *e;
    double count = 0;
    DIR *d = opendir("/proc/self/fd");

    if (d == NULL)
        return;
    snprintf(own, sizeof(own), "%d", dirfd(d));
    for (;;) {
        errno = 0;
        if ((e = readdir(d)) == NULL)
            break;
        if (procstat_is_fd_name(e->d_name) && strcmp(e->d_name, own) != 0)
            count++;
    }
    if (errno == 0)
        set(&s->open_fds, count);
    closedir(d);
}

const struct proc_sample *
proc_sample_take(struct proc_sample *s, int64_t started_ms)
{
    struct rlimit rl;

    memset(s, 0, sizeof(*s));
    take_stat(s);
    take_open_fds(s);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        set(&s->max_fds, (double)rl.rlim_cur);
    if (started_ms > 0)
        set(&s->start_seconds, (double)started_ms / 1000.0);
    return s;
}

/* The figure at offset mf->at of the sample, one series without labels,
 * when it was read. */
void
process_value(struct metrics_out *o, const struct metric_family *mf)
{
    const struct proc_value *pv =
        (const struct proc_value *)((const char *)o->source[SRC_PROCESS] + mf->at);

    if (!pv->have)
        return;
    sb_adds(o->sb, mf->name);
    sb_adds(o->sb, " ");
    add_double(o->sb, pv->v);
    sb_adds(o->sb, "\n");
}
