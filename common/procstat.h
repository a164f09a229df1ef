/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * procstat.h - the figures of Linux's /proc/<pid>/stat that the process_*
 * metrics (agent/http/procmetrics.c) take, read from the file's text.
 *
 * Pure: the caller reads the file; nothing here does I/O, allocates or
 * reads past len.  A text that is not what proc(5) describes (cut short,
 * a field that is not a decimal) is refused whole, so a caller never
 * shows a number taken from the wrong field.
 */
#ifndef LOCKWATCH_PROCSTAT_H
#define LOCKWATCH_PROCSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* proc(5)'s fields of /proc/<pid>/stat, numbered from 1 as there. */
struct procstat {
    uint64_t utime_ticks;       /* (14) user CPU, clock ticks (sysconf(_SC_CLK_TCK)) */
    uint64_t stime_ticks;       /* (15) system CPU, clock ticks */
    uint64_t vsize_bytes;       /* (23) virtual memory size, bytes */
    uint64_t rss_pages;         /* (24) resident set size, pages */
};

/*
 * The figures of the text of /proc/<pid>/stat (len bytes, no NUL needed).
 * The command name (2) may hold spaces and parentheses: the fields after
 * it start after its last ')'.  0, or -1 when the text is not one (out
 * then untouched).
 */
int procstat_parse_stat(const char *text, size_t len, struct procstat *out);

/* Whether a name of /proc/<pid>/fd is a descriptor (all digits), not "."
 * or "..". */
bool procstat_is_fd_name(const char *name);

#endif
