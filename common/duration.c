/* SPDX-License-Identifier: BSD-3-Clause */
/* duration.c - see duration.h. */
#include "common/duration.h"

#include <inttypes.h>
#include <stdio.h>

void
duration_format(int64_t ms, char *buf, size_t len)
{
    int64_t s;

    if (ms < 0)
        ms = 0;
    s = ms / 1000;
    if (ms < 1000)
        snprintf(buf, len, "%" PRId64 "ms", ms);
    else if (s < 60)
        snprintf(buf, len, "%" PRId64 "s", s);
    else if (s < 3600)
        snprintf(buf, len, "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m", s / 3600, s % 3600 / 60);
    else
        snprintf(buf, len, "%" PRId64 "d%02" PRId64 "h", s / 86400, s % 86400 / 3600);
}
