/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * optsyntax.c - the text grammars of option values: durations, comma
 * separated lists, host:port, whether a URL carries a password, and a URL
 * with its user info, query and fragment masked (see optsyntax.h).
 *
 * Nothing here knows an option row or a message: the value types in
 * optvalue.c decide what a refusal says.  The two public duration helpers
 * (config_parse_duration for lockctl, option_format_duration for -n and
 * the man page) live here with the one table of units they share with
 * the parser, so reading and writing a duration cannot disagree.
 */
#include "conf/optsyntax.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "conf/options.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- durations ------------------------------------------------------------ */

/* Largest first: option_format_duration writes the largest exact unit. */
static const struct {
    const char *name;
    int64_t ms;
} units[] = {
    { "d", MS_D }, { "h", MS_H }, { "m", MS_M }, { "s", MS_S }, { "ms", 1 },
};

static int64_t
gcd64(int64_t a, int64_t b)
{
    while (b != 0) {
        int64_t t = a % b;

        a = b;
        b = t;
    }
    return a;
}

/*
 * Exact decimal arithmetic, no floating point: "1.5s" must be 1500 and
 * "0.1s" 100, which doubles do not promise.  A fraction that is not a
 * whole number of milliseconds is refused rather than rounded, so what -n
 * prints is what the file meant.
 */
enum dur_status
duration_parse(const char *s, int64_t *out)
{
    const char *p = s, *fs = NULL, *fe = NULL;
    int64_t whole = 0, frac = 0, pow10 = 1, unit = 0, fms = 0;
    size_t i, nfrac = 0;

    if (*p == '-')
        return DUR_NEGATIVE;
    if (!isdigit((unsigned char)*p))
        return DUR_SYNTAX;
    for (; isdigit((unsigned char)*p); p++) {
        if (whole > (INT64_MAX - 9) / 10)
            return DUR_RANGE;
        whole = whole * 10 + (*p - '0');
    }
    if (*p == '.') {
        fs = ++p;
        if (!isdigit((unsigned char)*p))
            return DUR_SYNTAX;
        while (isdigit((unsigned char)*p))
            p++;
        fe = p;
        while (fe > fs && fe[-1] == '0')        /* "1.50s" is "1.5s" */
            fe--;
        nfrac = (size_t)(fe - fs);
    }
    if (*p == '\0') {
        if (whole == 0 && nfrac == 0) {         /* "0" needs no unit */
            *out = 0;
            return DUR_OK;
        }
        return DUR_NO_UNIT;
    }
    for (i = 0; i < ARRAY_LEN(units); i++)
        if (strcmp(p, units[i].name) == 0)
            unit = units[i].ms;
    if (unit == 0)
        return DUR_SYNTAX;
    if (nfrac > 0) {
        int64_t g, need;

        /* A day is 2^10 * 3^3 * 5^5 ms, so no unit absorbs more than ten
         * decimal places (trailing zeros already dropped): past that the
         * value is never a whole number of milliseconds. */
        if (nfrac > 10)
            return DUR_FRACTION;
        for (i = 0; i < nfrac; i++) {
            frac = frac * 10 + (fs[i] - '0');
            pow10 *= 10;
        }
        g = gcd64(unit, pow10);
        need = pow10 / g;
        if (frac % need != 0)
            return DUR_FRACTION;
        fms = frac / need * (unit / g);         /* < unit: no overflow */
    }
    if (whole > (INT64_MAX - fms) / unit)
        return DUR_RANGE;
    *out = whole * unit + fms;
    return DUR_OK;
}

int
config_parse_duration(const char *s, int64_t *ms)
{
    int64_t v;

    if (s == NULL || duration_parse(s, &v) != DUR_OK)
        return -1;
    *ms = v;
    return 0;
}

void
option_format_duration(int64_t ms, char *buf, size_t len)
{
    size_t i;

    if (ms == 0) {
        snprintf(buf, len, "0s");
        return;
    }
    for (i = 0; i < ARRAY_LEN(units); i++) {
        if (ms % units[i].ms == 0) {
            snprintf(buf, len, "%" PRId64 "%s", ms / units[i].ms, units[i].name);
            return;
        }
    }
}

/* ---- lists ---------------------------------------------------------------- */

void
free_list(char **items, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        free(items[i]);
    free(items);
}

/*
 * An empty value is an empty list (the caller's cross-key checks decide
 * whether that is allowed); an empty item is refused, since it is always
 * a typo.
 */
int
split_list(const char *v, char ***out, size_t *nout)
{
    char **items = NULL;
    size_t n = 1, i = 0;
    const char *p;
    int rc = -2;

    *out = NULL;
    *nout = 0;
    for (p = v; *p != '\0' && isspace((unsigned char)*p); p++)
        ;
    if (*p == '\0')
        return 0;
    for (p = v; *p != '\0'; p++)
        if (*p == ',')
            n++;
    items = calloc(n, sizeof(*items));
    if (items == NULL)
        goto out;
    for (p = v; i < n; i++) {
        const char *e = strchr(p, ',');
        const char *b = p;

        if (e == NULL)
            e = p + strlen(p);
        p = *e == ',' ? e + 1 : e;
        while (b < e && isspace((unsigned char)*b))
            b++;
        while (e > b && isspace((unsigned char)e[-1]))
            e--;
        if (e == b) {
            rc = -1;
            goto out;
        }
        items[i] = strndup(b, (size_t)(e - b));
        if (items[i] == NULL)
            goto out;
    }
    *out = items;
    *nout = n;
    items = NULL;
    rc = 0;
out:
    if (items != NULL)
        free_list(items, n);
    return rc;
}

/* ---- addresses ------------------------------------------------------------ */

static int
parse_port(const char *p, const char *end, int *port)
{
    long v = 0;

    if (p == end || end - p > 5)
        return -1;
    for (; p < end; p++) {
        if (!isdigit((unsigned char)*p))
            return -1;
        v = v * 10 + (*p - '0');
    }
    if (v < 1 || v > 65535)
        return -1;
    *port = (int)v;
    return 0;
}

/* A bare IPv6 address must be bracketed: in "::1:6379" the port cannot be
 * told from the address. */
int
split_hostport(const char *s, size_t n, char *host, size_t hostlen, int *port, bool need_port)
{
    const char *end = s + n, *h = s, *hend, *pp = NULL, *c;
    size_t hn;

    if (n > 0 && s[0] == '[') {
        hend = memchr(s, ']', n);
        if (hend == NULL)
            return -1;
        h = s + 1;
        if (hend + 1 < end) {
            if (hend[1] != ':')
                return -1;
            pp = hend + 2;
        }
    } else {
        const char *colon = NULL;

        for (c = s; c < end; c++) {
            if (*c == ':') {
                if (colon != NULL)
                    return -1;
                colon = c;
            }
        }
        hend = colon != NULL ? colon : end;
        if (colon != NULL)
            pp = colon + 1;
    }
    hn = (size_t)(hend - h);
    if (hn == 0 || hn >= hostlen)
        return -1;
    for (c = h; c < hend; c++)
        if (isspace((unsigned char)*c) || iscntrl((unsigned char)*c) ||
            strchr("/@[]?#,;", *c) != NULL)
            return -1;
    if (pp != NULL) {
        if (parse_port(pp, end, port) == -1)
            return -1;
    } else if (need_port) {
        return -1;
    }
    memcpy(host, h, hn);
    host[hn] = '\0';
    return 0;
}

bool
authority_has_password(const char *auth, size_t n)
{
    const char *at = NULL, *c;

    for (c = auth; c < auth + n; c++)
        if (*c == '@')
            at = c;
    return at != NULL && memchr(auth, ':', (size_t)(at - auth)) != NULL;
}

/* The mask for a part of n bytes: URL_MASK, or as many '*' as the part
 * had when it is shorter, so a masked line is never longer than the
 * configured one (-n's output must load back within the line limit). */
static void
mask_part(struct strbuf *sb, size_t n)
{
    sb_add(sb, URL_MASK, n < sizeof(URL_MASK) - 1 ? n : sizeof(URL_MASK) - 1);
}

void
url_mask(const char *url, struct strbuf *sb)
{
    const char *sep = strstr(url, "://"), *auth = url, *at = NULL, *c, *end;
    size_t alen;

    if (sep != NULL && (size_t)(sep - url) == strcspn(url, ":/?#")) {
        auth = sep + 3;
        sb_add(sb, url, (size_t)(auth - url));
    }
    alen = strcspn(auth, "/?#");
    /* the user info ends at the authority's last '@' (a host has none) */
    for (c = auth; c < auth + alen; c++)
        if (*c == '@')
            at = c;
    if (at != NULL) {
        mask_part(sb, (size_t)(at - auth));
        sb_adds(sb, "@");
        auth = at + 1;
    }
    end = auth + strcspn(auth, "?#");
    c = auth + strcspn(auth, "/?#");           /* the path, if any */
    sb_add(sb, auth, (size_t)(c - auth));
    if (c < end) {
        /* its first segment says where; a token may follow (Slack's
         * /services/T/B/SECRET, Discord's /api/webhooks/ID/TOKEN) */
        const char *rest = memchr(c + 1, '/', (size_t)(end - c - 1)), *semi;

        rest = rest != NULL ? rest + 1 : end;
        /* nor its ;parameters, where a token may be too */
        semi = memchr(c + 1, ';', (size_t)(rest - c - 1));
        if (semi != NULL)
            rest = semi + 1;
        sb_add(sb, c, (size_t)(rest - c));
        if (rest < end)
            mask_part(sb, (size_t)(end - rest));
    }
    if (*end == '?') {
        size_t qlen = strcspn(end + 1, "#");

        sb_adds(sb, "?");
        mask_part(sb, qlen);
        end += 1 + qlen;
    }
    if (*end == '#') {
        sb_adds(sb, "#");
        mask_part(sb, strlen(end + 1));
    }
}
