/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * optshard.c - the SHARD value type: "I/N", this agent's shard I of N
 * (0-based, as a StatefulSet's pod ordinal and kube-state-metrics'
 * --shard count), e.g. "1/3".  Both numbers are plain decimals without
 * sign or leading zeros; N from 1 to the row's max, I below N.  Which
 * targets a shard watches is conf/shard.h's business.
 */
#include "conf/optshard.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/lw1.h"
#include "common/strbuf.h"
#include "conf/options.h"
#include "conf/optvalue_impl.h"

int
optshard_set(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    const char *slash = strchr(v, '/');
    uint64_t i, n;

    if (slash == NULL ||
        lw1_parse_udec(v, (size_t)(slash - v), 5, true, &i) != 0 ||
        lw1_parse_udec(slash + 1, strlen(slash + 1), 5, true, &n) != 0) {
        optvalue_whyf(why, len, "\"%.32s\" is not I/N (this agent's shard I of N, "
                      "counted from 0: e.g. 0/2 and 1/2)", v);
        return -1;
    }
    if (n < 1 || n > (uint64_t)o->max || i >= n) {
        optvalue_whyf(why, len, "%llu/%llu: N must be 1 to %lld and I from 0 to N-1",
                      (unsigned long long)i, (unsigned long long)n, (long long)o->max);
        return -1;
    }
    *(int *)optvalue_field(base, o->off) = (int)i;
    *(int *)optvalue_field(base, o->off2) = (int)n;
    return 0;
}

void
optshard_clear(const struct config_option *o, void *base)
{
    *(int *)optvalue_field(base, o->off) = 0;
    *(int *)optvalue_field(base, o->off2) = 1;
}

int
optshard_format(const struct config_option *o, const void *base, const char *sep,
                struct strbuf *sb)
{
    (void)sep;
    sb_addf(sb, "%d/%d", *(const int *)optvalue_cfield(base, o->off),
            *(const int *)optvalue_cfield(base, o->off2));
    return 1;
}

void
optshard_describe(const struct config_option *o, char *buf, size_t len)
{
    snprintf(buf, len, "I/N: shard I of N, counted from 0 (N from 1 to %lld)",
             (long long)o->max);
}
