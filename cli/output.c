/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * output.c - how lockctl writes things: JSON (with jansson, never by hand)
 * and the short human forms of durations, TTLs and times.
 *
 * Keys, holders and values are bytes.  JSON carries each twice, as the
 * agent's API does: sanitised UTF-8 for people ("key") and percent-encoded
 * for programs ("key_escaped"), which is also what lockctl --escaped and
 * the HTTP API's key_escaped take back.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/lockctl.h"
#include "common/keytext.h"

int
out_json_print(json_t *root)
{
    char *s;
    int rc = -1;

    if (root == NULL)
        return -1;
    /* 15 significant digits: ages in seconds print as 349406.222, not
     * as the nearest binary fraction */
    s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    json_decref(root);
    if (s != NULL && fputs(s, stdout) != EOF && fputc('\n', stdout) != EOF)
        rc = 0;
    free(s);
    return rc;
}

void
out_duration(int64_t ms, char *buf, size_t len)
{
    int64_t s = ms / 1000;

    if (ms < 0)
        snprintf(buf, len, "-");
    else if (ms < 1000)
        snprintf(buf, len, "%lldms", (long long)ms);
    else if (s < 60)
        snprintf(buf, len, "%llds", (long long)s);
    else if (s < 3600)
        snprintf(buf, len, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
    else if (s < 86400)
        snprintf(buf, len, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
    else
        snprintf(buf, len, "%lldd%02lldh", (long long)(s / 86400),
                 (long long)(s % 86400 / 3600));
}

void
out_ttl(long long pttl_ms, char *buf, size_t len)
{
    if (pttl_ms == -1)
        snprintf(buf, len, "none");
    else if (pttl_ms < 0)
        snprintf(buf, len, "gone");
    else
        out_duration(pttl_ms, buf, len);
}

void
out_time(int64_t ms, char *buf, size_t len)
{
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;

    if (ms <= 0 || gmtime_r(&sec, &tm) == NULL ||
        strftime(buf, len, "%Y-%m-%d %H:%M:%SZ", &tm) == 0)
        snprintf(buf, len, "-");
}

char *
out_unescape(const char *s, size_t *len)
{
    size_t n = strlen(s);
    char *out = malloc(n + 1);

    if (out == NULL)
        return NULL;
    *len = keytext_unpercent(out, s, n, 0);
    if (*len == (size_t)-1) {
        free(out);
        return NULL;
    }
    out[*len] = '\0';
    return out;
}

