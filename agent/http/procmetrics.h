/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * procmetrics.h - the agent process's own figures behind the standard
 * process_* families of /metrics (the Prometheus client libraries'
 * process collector: CPU, memory, descriptors, start time), read from
 * Linux's /proc and getrlimit at each scrape (procmetrics.c).
 */
#ifndef LOCKWATCH_PROCMETRICS_H
#define LOCKWATCH_PROCMETRICS_H

#include <stdbool.h>
#include <stdint.h>

/* One figure; have is false when it could not be read: its series is
 * left out, never shown as 0. */
struct proc_value {
    bool have;
    double v;
};

struct proc_sample {
    struct proc_value cpu_seconds;      /* user + system */
    struct proc_value resident_bytes;
    struct proc_value virtual_bytes;
    struct proc_value open_fds;
    struct proc_value max_fds;          /* RLIMIT_NOFILE, soft */
    struct proc_value start_seconds;    /* Unix seconds */
};

/* Fill s with this process's figures now, the start time from
 * started_ms (Unix ms the agent started; 0: unknown); returns s.
 * Never fails as a whole: a figure it cannot read is left out. */
const struct proc_sample *proc_sample_take(struct proc_sample *s, int64_t started_ms);

#endif
