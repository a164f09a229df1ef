/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * procstat.c - the text of Linux's /proc/<pid>/stat to the figures the
 * process_* metrics take (procstat.h): pure, bounded by the text's length.
 */
#include "common/procstat.h"

#include <string.h>

#include "common/lw1.h"

/* The fields after the command name, counted from proc(5)'s (3), state. */
#define FIRST_FIELD 3
#define LAST_FIELD  24          /* rss: the last one read */

/* Field n (FIRST_FIELD..LAST_FIELD) as a decimal of at most 19 digits. */
static int
field_u64(const char *const *f, const size_t *flen, int n, uint64_t *out)
{
    return lw1_parse_udec(f[n - FIRST_FIELD], flen[n - FIRST_FIELD], 19, false, out);
}

int
procstat_parse_stat(const char *text, size_t len, struct procstat *out)
{
    const char *f[LAST_FIELD - FIRST_FIELD + 1];
    size_t flen[LAST_FIELD - FIRST_FIELD + 1];
    size_t i, nf = 0, at;
    const char *close = NULL;
    struct procstat ps;

    for (i = 0; i < len; i++)
        if (text[i] == ')')
            close = text + i;
    if (close == NULL)
        return -1;
    at = (size_t)(close - text) + 1;
    /* one space before each field: "pid (comm) S 1 ..." */
    while (nf < sizeof(f) / sizeof(f[0]) && at < len && text[at] == ' ') {
        size_t start = ++at;

        while (at < len && text[at] != ' ' && text[at] != '\n')
            at++;
        f[nf] = text + start;
        flen[nf++] = at - start;
    }
    if (nf < sizeof(f) / sizeof(f[0]))
        return -1;
    if (field_u64(f, flen, 14, &ps.utime_ticks) != 0 ||
        field_u64(f, flen, 15, &ps.stime_ticks) != 0 ||
        field_u64(f, flen, 23, &ps.vsize_bytes) != 0 ||
        field_u64(f, flen, 24, &ps.rss_pages) != 0)
        return -1;
    *out = ps;
    return 0;
}

bool
procstat_is_fd_name(const char *name)
{
    size_t n = strspn(name, "0123456789");

    return n > 0 && name[n] == '\0';
}
