/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * optvalue.c - the value types of config options: how each parses a value
 * into its row's fields, frees it, writes it back as the file would say
 * it, and describes what it accepts.
 *
 * value_types[] has one row per enum option_type, {name, set, clear,
 * format, describe}; option_set, option_clear, option_format and
 * option_describe (options.h) look the row up and call it, so nothing
 * switches on the type.  A type's functions find their fields through the
 * option row's offsets (what each type stores where is written above enum
 * option_type in options.h); the grammars they parse are in optsyntax.c.
 *
 * Errors come back as "what is wrong (what is allowed)"; the loader
 * (config.c's fail) prefixes file, line, section and key.  A value that may carry a secret (a URL with
 * a password, a URL with a query string) is never echoed in a message; a
 * secret file's contents are read, and wiped when freed, by secretfile.c.
 */
#include "conf/options.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/strbuf.h"
#include "conf/config.h"
#include "conf/optsyntax.h"
#include "conf/optshard.h"
#include "conf/optvalue_impl.h"
#include "conf/optpairs.h"
#include "conf/secretfile.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Largest Redis database index accepted in a URL (Redis' own limit is
 * INT_MAX through "databases"; anything this large is a typo). */
#define REDIS_DB_MAX 1000000

/* ---- small helpers ------------------------------------------------------ */

void
optvalue_whyf(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    if (len == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

/* Integers and enums are stored by size so one row type serves int, long,
 * int64_t and enum fields; memcpy keeps it free of aliasing games.  The
 * row's bounds keep the value within the field (a unit test checks). */
static void
store_int(void *base, size_t off, size_t size, int64_t v)
{
    if (size == sizeof(int64_t)) {
        memcpy(optvalue_field(base, off), &v, sizeof(v));
    } else if (size == sizeof(int32_t)) {
        int32_t v32 = (int32_t)v;
        memcpy(optvalue_field(base, off), &v32, sizeof(v32));
    }
}

static int64_t
load_int(const void *base, size_t off, size_t size)
{
    if (size == sizeof(int64_t)) {
        int64_t v;
        memcpy(&v, optvalue_cfield(base, off), sizeof(v));
        return v;
    }
    if (size == sizeof(int32_t)) {
        int32_t v32;
        memcpy(&v32, optvalue_cfield(base, off), sizeof(v32));
        return v32;
    }
    return 0;
}

static char **
str_field(void *base, size_t off)
{
    return (char **)optvalue_field(base, off);
}

static char *const *
cstr_field(const void *base, size_t off)
{
    return (char *const *)optvalue_cfield(base, off);
}

/* "a, b or c" from a NULL-terminated list, cut at len. */
void
optvalue_join_names(const char *const *names, char *buf, size_t len)
{
    size_t n = 0, i, used = 0;

    if (len == 0)
        return;
    buf[0] = '\0';
    while (names[n] != NULL)
        n++;
    for (i = 0; i < n; i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
        int w = snprintf(buf + used, len - used, "%s%s", sep, names[i]);

        if (w < 0 || (size_t)w >= len - used)
            return;
        used += (size_t)w;
    }
}

/* The clears shared by several types. */
static void
clear_int(const struct config_option *o, void *base)
{
    store_int(base, o->off, o->size, 0);
}

static void
clear_bytes(const struct config_option *o, void *base)
{
    memset(optvalue_field(base, o->off), 0, o->size);
}

static void
clear_string(const struct config_option *o, void *base)
{
    free(*str_field(base, o->off));
    *str_field(base, o->off) = NULL;
}

/* STRING and FILE: the string at off (for FILE the path; the
 * contents stay secret). */
static int
format_string(const struct config_option *o, const void *base, const char *sep,
              struct strbuf *sb)
{
    (void)sep;
    if (*cstr_field(base, o->off) == NULL)
        return 0;
    sb_adds(sb, *cstr_field(base, o->off));
    return 1;
}

/* ---- durations ------------------------------------------------------------ */

static int
set_duration(const struct config_option *o, void *base, const char *v,
             char *why, size_t len)
{
    char lo[32], hi[32];
    int64_t ms = 0;

    option_format_duration(o->min, lo, sizeof(lo));
    option_format_duration(o->max, hi, sizeof(hi));
    switch (duration_parse(v, &ms)) {
    case DUR_OK:
        break;
    case DUR_SYNTAX:
        optvalue_whyf(why, len, "\"%s\" is not a duration (use a number followed by ms, s, m, h "
             "or d, e.g. 30s)", v);
        return -1;
    case DUR_NEGATIVE:
        optvalue_whyf(why, len, "\"%s\" is negative (allowed: %s to %s)", v, lo, hi);
        return -1;
    case DUR_NO_UNIT:
        optvalue_whyf(why, len, "\"%s\" has no unit (add ms, s, m, h or d, e.g. %ss)", v, v);
        return -1;
    case DUR_FRACTION:
        optvalue_whyf(why, len, "\"%s\" is not a whole number of milliseconds (use a smaller "
             "unit, e.g. 1500ms for 1.5s)", v);
        return -1;
    case DUR_RANGE:
        optvalue_whyf(why, len, "\"%s\" is too large (allowed: %s to %s)", v, lo, hi);
        return -1;
    }
    if (ms < o->min || ms > o->max) {
        optvalue_whyf(why, len, "\"%s\" is out of range (allowed: %s to %s)", v, lo, hi);
        return -1;
    }
    store_int(base, o->off, o->size, ms);
    return 0;
}

static int
format_duration(const struct config_option *o, const void *base, const char *sep,
                struct strbuf *sb)
{
    char d[32];

    (void)sep;
    option_format_duration(load_int(base, o->off, o->size), d, sizeof(d));
    sb_adds(sb, d);
    return 1;
}

static void
describe_duration(const struct config_option *o, char *buf, size_t len)
{
    char lo[32], hi[32];

    option_format_duration(o->min, lo, sizeof(lo));
    option_format_duration(o->max, hi, sizeof(hi));
    snprintf(buf, len, "a duration (ms, s, m, h or d) from %s to %s", lo, hi);
}

/* ---- numbers -------------------------------------------------------------- */

static int
set_int(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    long long n;
    char *end = NULL;

    if (!(isdigit((unsigned char)v[0]) || (v[0] == '-' && isdigit((unsigned char)v[1])))) {
        optvalue_whyf(why, len, "\"%s\" is not a whole number (allowed: %" PRId64 " to %" PRId64 ")",
             v, o->min, o->max);
        return -1;
    }
    errno = 0;
    n = strtoll(v, &end, 10);
    if (end == v || *end != '\0') {
        optvalue_whyf(why, len, "\"%s\" is not a whole number (allowed: %" PRId64 " to %" PRId64 ")",
             v, o->min, o->max);
        return -1;
    }
    if (errno == ERANGE || n < o->min || n > o->max) {
        optvalue_whyf(why, len, "\"%s\" is out of range (allowed: %" PRId64 " to %" PRId64 ")",
             v, o->min, o->max);
        return -1;
    }
    store_int(base, o->off, o->size, (int64_t)n);
    return 0;
}

static int
format_int(const struct config_option *o, const void *base, const char *sep,
           struct strbuf *sb)
{
    (void)sep;
    sb_addf(sb, "%" PRId64, load_int(base, o->off, o->size));
    return 1;
}

static void
describe_int(const struct config_option *o, char *buf, size_t len)
{
    snprintf(buf, len, "a whole number from %" PRId64 " to %" PRId64, o->min, o->max);
}

/*
 * A share, written with a % sign so "25" can never be read as 25 times.
 * The floor keeps every accepted value printable by format_percent()
 * without an exponent (which the grammar above would refuse on reading
 * -n's output back); a share below it is no pacing anyone can mean.
 */
#define PERCENT_MIN   0.001
#define PERCENT_RANGE "from 0.001%% to 100%%"

static int
set_percent(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    char num[64];
    const char *p = v;
    char *end = NULL;
    size_t n;
    double d;

    if (*p == '-') {
        optvalue_whyf(why, len, "\"%s\" is out of range (allowed: " PERCENT_RANGE ")", v);
        return -1;
    }
    while (isdigit((unsigned char)*p))
        p++;
    if (p > v && *p == '.' && isdigit((unsigned char)p[1]))
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    n = (size_t)(p - v);
    if (n == 0 || n >= sizeof(num) || strcmp(p, "%") != 0) {
        optvalue_whyf(why, len, "\"%s\" is not a percentage (use a number followed by %%, e.g. 25%%)",
             v);
        return -1;
    }
    memcpy(num, v, n);
    num[n] = '\0';
    errno = 0;
    d = strtod(num, &end);
    if (end != num + n || errno == ERANGE || !(d >= PERCENT_MIN && d <= 100.0)) {
        optvalue_whyf(why, len, "\"%s\" is out of range (allowed: " PERCENT_RANGE ")", v);
        return -1;
    }
    d /= 100.0;
    memcpy(optvalue_field(base, o->off), &d, sizeof(d));
    return 0;
}

static int
format_percent(const struct config_option *o, const void *base, const char *sep,
               struct strbuf *sb)
{
    double d;

    (void)sep;
    memcpy(&d, optvalue_cfield(base, o->off), sizeof(d));
    /* 15 digits: enough to give back the decimal that was parsed. */
    sb_addf(sb, "%.15g%%", d * 100.0);
    return 1;
}

static void
describe_percent(const struct config_option *o, char *buf, size_t len)
{
    (void)o;
    snprintf(buf, len, "a percentage " PERCENT_RANGE);
}

/* ---- yes/no and choices --------------------------------------------------- */

static int
set_bool(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    static const char *const yes[] = { "yes", "on", "true", "1" };
    static const char *const no[] = { "no", "off", "false", "0" };
    size_t i;
    bool b;

    for (i = 0; i < ARRAY_LEN(yes); i++) {
        if (strcasecmp(v, yes[i]) == 0) {
            b = true;
            goto found;
        }
        if (strcasecmp(v, no[i]) == 0) {
            b = false;
            goto found;
        }
    }
    optvalue_whyf(why, len, "\"%s\" is not a yes/no value (use yes, no, on, off, true, false, "
         "1 or 0)", v);
    return -1;
found:
    memcpy(optvalue_field(base, o->off), &b, sizeof(b));
    return 0;
}

static int
format_bool(const struct config_option *o, const void *base, const char *sep,
            struct strbuf *sb)
{
    bool v;

    (void)sep;
    memcpy(&v, optvalue_cfield(base, o->off), sizeof(v));
    sb_adds(sb, o->names != NULL ? o->names[v ? 1 : 0] : v ? "yes" : "no");
    return 1;
}

static void
describe_bool(const struct config_option *o, char *buf, size_t len)
{
    snprintf(buf, len, "%s or %s", o->names ? o->names[1] : "yes",
             o->names ? o->names[0] : "no");
}

static int
set_enum(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    char allowed[128];
    size_t i;

    for (i = 0; o->names[i] != NULL; i++) {
        if (strcasecmp(v, o->names[i]) == 0) {
            store_int(base, o->off, o->size, (int64_t)i);
            return 0;
        }
    }
    optvalue_join_names(o->names, allowed, sizeof(allowed));
    optvalue_whyf(why, len, "\"%s\" is not a valid %s (use %s)", v, o->key, allowed);
    return -1;
}

static int
format_enum(const struct config_option *o, const void *base, const char *sep,
            struct strbuf *sb)
{
    int64_t v = load_int(base, o->off, o->size);
    size_t i;

    (void)sep;
    for (i = 0; o->names[i] != NULL; i++)
        if ((int64_t)i == v)
            break;
    sb_adds(sb, o->names[i] != NULL ? o->names[i] : "?");
    return 1;
}

static void
describe_enum(const struct config_option *o, char *buf, size_t len)
{
    char names[128];

    optvalue_join_names(o->names, names, sizeof(names));
    snprintf(buf, len, "%s", names);
}

/* ---- strings and lists ---------------------------------------------------- */

static int
set_string(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    char *s;

    if (v[0] == '\0') {
        optvalue_whyf(why, len, "empty value (give one, e.g. %s)", o->def ? o->def : o->example);
        return -1;
    }
    s = strdup(v);
    if (s == NULL) {
        optvalue_whyf(why, len, "out of memory");
        return -1;
    }
    free(*str_field(base, o->off));
    *str_field(base, o->off) = s;
    return 0;
}

static void
describe_string(const struct config_option *o, char *buf, size_t len)
{
    (void)o;
    snprintf(buf, len, "a non-empty string");
}

static int
set_list(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    char **items = NULL;
    size_t n = 0;
    int rc = split_list(v, &items, &n);

    if (rc == -1) {
        optvalue_whyf(why, len, "\"%s\" has an empty item (use comma separated values, e.g. %s)",
             v, o->def ? o->def : o->example);
        return -1;
    }
    if (rc == -2) {
        optvalue_whyf(why, len, "out of memory");
        return -1;
    }
    /* -n writes the items joined by ", ": one that began with ';' would
     * read back as the start of a comment */
    for (size_t i = 0; i < n; i++)
        if (items[i][0] == ';') {
            optvalue_whyf(why, len, "\"%s\": an item may not begin with ';' (it would read back as a "
                 "comment)", v);
            free_list(items, n);
            return -1;
        }
    free_list(*(char ***)optvalue_field(base, o->off), *(size_t *)optvalue_field(base, o->off2));
    *(char ***)optvalue_field(base, o->off) = items;
    *(size_t *)optvalue_field(base, o->off2) = n;
    return 0;
}

static void
clear_list(const struct config_option *o, void *base)
{
    free_list(*(char ***)optvalue_field(base, o->off), *(size_t *)optvalue_field(base, o->off2));
    *(char ***)optvalue_field(base, o->off) = NULL;
    *(size_t *)optvalue_field(base, o->off2) = 0;
}

static int
format_list(const struct config_option *o, const void *base, const char *sep,
            struct strbuf *sb)
{
    char *const *items = *(char **const *)optvalue_cfield(base, o->off);
    size_t n = *(const size_t *)optvalue_cfield(base, o->off2), i;

    if (n == 0)
        return 0;
    for (i = 0; i < n; i++) {
        sb_adds(sb, i > 0 ? sep : "");
        sb_adds(sb, items[i]);
    }
    return 1;
}

static void
describe_list(const struct config_option *o, char *buf, size_t len)
{
    (void)o;
    snprintf(buf, len, "a comma separated list");
}

/* ---- addresses ------------------------------------------------------------ */

static void
add_host(struct strbuf *sb, const char *host, int port)
{
    sb_addf(sb, strchr(host, ':') != NULL ? "[%s]:%d" : "%s:%d", host, port);
}

static int
set_hostport(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    char host[256];
    int port = 0;
    bool off = false;

    if ((o->flags & OPT_OFF) && strcasecmp(v, "off") == 0) {
        off = true;
        host[0] = '\0';
    } else if (o->size > sizeof(host) ||
               split_hostport(v, strlen(v), host, o->size, &port, true) == -1) {
        optvalue_whyf(why, len, "\"%s\" is not host:port (use an address and a port from 1 to "
             "65535, e.g. %s or [::1]:%s%s)", v, o->def ? o->def : o->example,
             o->def != NULL && strrchr(o->def, ':') ? strrchr(o->def, ':') + 1 : "9717",
             (o->flags & OPT_OFF) ? ", or off" : "");
        return -1;
    }
    memcpy(optvalue_field(base, o->off), host, strlen(host) + 1);
    memcpy(optvalue_field(base, o->off2), &port, sizeof(port));
    if (o->flags & OPT_OFF)
        memcpy(optvalue_field(base, o->off3), &off, sizeof(off));
    return 0;
}

static void
clear_hostport(const struct config_option *o, void *base)
{
    memset(optvalue_field(base, o->off), 0, o->size);
    memset(optvalue_field(base, o->off2), 0, sizeof(int));
}

static int
format_hostport(const struct config_option *o, const void *base, const char *sep,
                struct strbuf *sb)
{
    const char *host = optvalue_cfield(base, o->off);
    bool off = false;
    int port;

    (void)sep;
    if (o->flags & OPT_OFF)
        memcpy(&off, optvalue_cfield(base, o->off3), sizeof(off));
    memcpy(&port, optvalue_cfield(base, o->off2), sizeof(port));
    if (off) {
        sb_adds(sb, "off");
        return 1;
    }
    if (host[0] == '\0')
        return 0;
    add_host(sb, host, port);
    return 1;
}

static void
describe_hostport(const struct config_option *o, char *buf, size_t len)
{
    snprintf(buf, len, "host:port%s", (o->flags & OPT_OFF) ? " or off" : "");
}

static int
set_hostports(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    struct hostport *hp = NULL;
    char **items = NULL;
    size_t n = 0, i;
    int rc = -1, s = split_list(v, &items, &n);

    if (s == -1) {
        optvalue_whyf(why, len, "\"%s\" has an empty item (use host:port, comma separated, e.g. %s)",
             v, o->example);
        goto out;
    }
    if (s == -2 || (n > 0 && (hp = calloc(n, sizeof(*hp))) == NULL)) {
        optvalue_whyf(why, len, "out of memory");
        goto out;
    }
    for (i = 0; i < n; i++) {
        if (split_hostport(items[i], strlen(items[i]), hp[i].host, sizeof(hp[i].host),
                           &hp[i].port, true) == -1) {
            optvalue_whyf(why, len, "\"%s\" is not host:port (use host:port with a port from 1 to "
                 "65535, comma separated, e.g. %s)", items[i], o->example);
            goto out;
        }
    }
    free(*(struct hostport **)optvalue_field(base, o->off));
    *(struct hostport **)optvalue_field(base, o->off) = hp;
    *(size_t *)optvalue_field(base, o->off2) = n;
    hp = NULL;
    rc = 0;
out:
    free(hp);
    free_list(items, n);
    return rc;
}

static void
clear_hostports(const struct config_option *o, void *base)
{
    free(*(struct hostport **)optvalue_field(base, o->off));
    *(struct hostport **)optvalue_field(base, o->off) = NULL;
    *(size_t *)optvalue_field(base, o->off2) = 0;
}

static int
format_hostports(const struct config_option *o, const void *base, const char *sep,
                 struct strbuf *sb)
{
    const struct hostport *hp = *(struct hostport *const *)optvalue_cfield(base, o->off);
    size_t n = *(const size_t *)optvalue_cfield(base, o->off2), i;

    if (n == 0)
        return 0;
    for (i = 0; i < n; i++) {
        sb_adds(sb, i > 0 ? sep : "");
        add_host(sb, hp[i].host, hp[i].port);
    }
    return 1;
}

static void
describe_hostports(const struct config_option *o, char *buf, size_t len)
{
    (void)o;
    snprintf(buf, len, "host:port, comma separated");
}

/* ---- URLs ----------------------------------------------------------------- */

/*
 * redis://[user@]host[:port][/db], or rediss:// for TLS (refused with the
 * reason in a build without it).  Stored in the target's url (as
 * written, for -n), user, host, port, db and tls; the host is also the
 * name a TLS certificate must carry (tls_name) unless tls_server_name says
 * otherwise.  A password in the URL is
 * refused without repeating the URL, so the secret does not end up in a
 * log: SPEC "password never in the URL".
 */
static int
set_redis_url(const struct config_option *o, void *base, const char *v, char *why,
              size_t len)
{
    struct target_conf *t = base;
    char host[sizeof(t->host)];
    const char *sep = strstr(v, "://"), *auth, *aend, *at = NULL, *c;
    char *url = NULL, *user = NULL;
    int port = 6379, rc = -1;
    long db = 0;
    bool tls = false;

    (void)o;
    auth = sep != NULL ? sep + 3 : v;
    aend = auth + strcspn(auth, "/");
    if (authority_has_password(auth, (size_t)(aend - auth))) {
        optvalue_whyf(why, len, "a password in the URL is not allowed (put the password alone "
             "on one line in a file only lockwatchd can read, and set password_file to its path)");
        goto out;
    }
    if (strpbrk(v, "?#") != NULL) {
        optvalue_whyf(why, len, "URL parameters are not supported (use redis://[user@]host[:port]"
             "[/db]; the password goes in password_file)");
        goto out;
    }
    if (sep != NULL && (size_t)(sep - v) == 6 && strncasecmp(v, "rediss", 6) == 0) {
#ifdef LOCKWATCH_TLS
        tls = true;
#else
        optvalue_whyf(why, len, "\"%s\": TLS (rediss://) is not supported by this build (it was "
             "built without hiredis_ssl: build lockwatch against hiredis 1.x with "
             "hiredis_ssl, e.g. make deps-hiredis-tls, or use redis:// through a local TLS "
             "tunnel)", v);
        goto out;
#endif
    } else if (sep == NULL || (size_t)(sep - v) != 5 || strncasecmp(v, "redis", 5) != 0) {
        goto bad;
    }
    for (c = auth; c < aend; c++)
        if (*c == '@')
            at = c;
    if (at != NULL) {
        if (at == auth)
            goto bad;
        user = strndup(auth, (size_t)(at - auth));
        if (user == NULL)
            goto oom;
        auth = at + 1;
    }
    if (split_hostport(auth, (size_t)(aend - auth), host, sizeof(host), &port, false) == -1)
        goto bad;
    if (aend[0] == '/' && aend[1] != '\0') {
        const char *d = aend + 1;
        char *end = NULL;

        if (!isdigit((unsigned char)*d))
            goto bad;
        errno = 0;
        db = strtol(d, &end, 10);
        if (*end != '\0' || errno == ERANGE || db > REDIS_DB_MAX)
            goto bad;
    }
    url = strdup(v);
    if (url == NULL)
        goto oom;
    free(t->url);
    free(t->user);
    t->url = url;
    t->user = user;
    memcpy(t->host, host, strlen(host) + 1);
    memcpy(t->tls_name, host, strlen(host) + 1);
    t->port = port;
    t->db = (int)db;
    t->tls = tls;
    url = user = NULL;
    rc = 0;
    goto out;
bad:
    optvalue_whyf(why, len, "\"%s\" is not a Redis URL (use redis://[user@]host[:port][/db], "
         "e.g. redis://127.0.0.1:6379/0)", v);
    goto out;
oom:
    optvalue_whyf(why, len, "out of memory");
out:
    free(url);
    free(user);
    return rc;
}

static void
clear_redis_url(const struct config_option *o, void *base)
{
    struct target_conf *t = base;

    (void)o;
    free(t->url);
    free(t->user);
    t->url = t->user = NULL;
    t->host[0] = t->tls_name[0] = '\0';
    t->port = t->db = 0;
    t->tls = false;
}

static int
format_redis_url(const struct config_option *o, const void *base, const char *sep,
                 struct strbuf *sb)
{
    const struct target_conf *t = base;

    (void)o;
    (void)sep;
    if (t->url == NULL)
        return 0;
    sb_adds(sb, t->url);
    return 1;
}

static void
describe_redis_url(const struct config_option *o, char *buf, size_t len)
{
    (void)o;
    snprintf(buf, len, "redis://[user@]host[:port][/db], or rediss:// for TLS");
}

/* HTTP_URL: as written, but a webhook URL's user info and query are how
 * many services take a token (a bearer secret), so -n masks them. */
static int
format_http_url(const struct config_option *o, const void *base, const char *sep,
                struct strbuf *sb)
{
    (void)sep;
    if (*cstr_field(base, o->off) == NULL)
        return 0;
    url_mask(*cstr_field(base, o->off), sb);
    return 1;
}

/* The port of an authority (host[:port], [v6][:port], user@ before it):
 * 0 when it names none, -1 when it is not 1..65535. */
static long
authority_port(const char *auth, size_t alen)
{
    const char *end = auth + alen, *p, *colon = NULL;
    long port = 0;

    /* the user info ends at the last '@', as url_mask() and
     * authority_has_password() read it: -n's masked form must load back */
    for (p = auth; p < end; p++)
        if (*p == '@')
            auth = p + 1;
    p = auth < end && *auth == '[' ? memchr(auth, ']', (size_t)(end - auth)) : auth;
    if (p == NULL)
        return 0;               /* an unclosed [: curl says what is wrong */
    for (; p < end; p++)
        if (*p == ':')
            colon = p;
    if (colon == NULL)
        return 0;
    for (p = colon + 1; p < end; p++) {
        if (*p < '0' || *p > '9' || port > 65535)
            return -1;
        port = port * 10 + (*p - '0');
    }
    return colon + 1 == end || port < 1 || port > 65535 ? -1 : port;
}

/* Webhook URLs go to libcurl; only http(s) makes sense for a POST, and
 * credentials in the URL would be printed by -n, so they are refused. */
static int
set_http_url(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    const char *sep = strstr(v, "://"), *auth, *c;
    size_t slen = sep != NULL ? (size_t)(sep - v) : 0, alen;
    const char *what = "is not an http:// or https:// URL";

    auth = sep != NULL ? sep + 3 : v;
    alen = strcspn(auth, "/?#");
    if (authority_has_password(auth, alen)) {
        optvalue_whyf(why, len, "a user:password in the URL is not allowed (it would show in -n "
             "output and logs; generic sinks sign with secret_file instead)");
        return -1;
    }
    for (c = v; *c != '\0'; c++)
        if (isspace((unsigned char)*c) || iscntrl((unsigned char)*c)) {
            what = "has a blank or a control byte: percent-encode it (a blank is %20)";
            goto bad;
        }
    if (sep == NULL || alen == 0 ||
        !((slen == 4 && strncasecmp(v, "http", 4) == 0) ||
          (slen == 5 && strncasecmp(v, "https", 5) == 0)))
        goto bad;
    if (authority_port(auth, alen) < 0) {
        what = "has a port that is not 1 to 65535";
        goto bad;
    }
    return set_string(o, base, v, why, len);
bad:
    {
        struct strbuf masked;

        sb_init(&masked, 512);
        url_mask(v, &masked);
        optvalue_whyf(why, len, "\"%s\" %s (e.g. %s)",
             masked.failed ? "(too long)" : masked.buf != NULL ? masked.buf : "", what,
             o->example);
        sb_release(&masked);
    }
    return -1;
}

static void
describe_http_url(const struct config_option *o, char *buf, size_t len)
{
    (void)o;
    snprintf(buf, len, "an http:// or https:// URL");
}

/* ---- the table ------------------------------------------------------------ */

/*
 * One row per type.  set: parse a value into the row's fields (0, or -1
 * with why; nothing changes on -1).  clear: free and zero them.  format:
 * append the value as the file would say it, lists joined with sep;
 * 1 when written, 0 when unset.  describe: what values it takes, for the
 * man page.  The array is sized by OPT_TYPE_COUNT, so a type without a row
 * has NULL functions, which option_type_of refuses and a unit test catches.
 */
struct value_type {
    const char *name;
    int (*set)(const struct config_option *o, void *base, const char *v,
               char *why, size_t len);
    void (*clear)(const struct config_option *o, void *base);
    int (*format)(const struct config_option *o, const void *base, const char *sep,
                  struct strbuf *sb);
    void (*describe)(const struct config_option *o, char *buf, size_t len);
};

static const struct value_type value_types[OPT_TYPE_COUNT] = {
    [OPT_DURATION]  = { "duration", set_duration, clear_int, format_duration,
                        describe_duration },
    [OPT_INT]       = { "integer", set_int, clear_int, format_int, describe_int },
    [OPT_PERCENT]   = { "percentage", set_percent, clear_bytes, format_percent,
                        describe_percent },
    [OPT_BOOL]      = { "boolean", set_bool, clear_bytes, format_bool, describe_bool },
    [OPT_STRING]    = { "string", set_string, clear_string, format_string,
                        describe_string },
    [OPT_HOSTPORT]  = { "host:port", set_hostport, clear_hostport, format_hostport,
                        describe_hostport },
    [OPT_HOSTPORTS] = { "host:port list", set_hostports, clear_hostports,
                        format_hostports, describe_hostports },
    [OPT_REDIS_URL] = { "Redis URL", set_redis_url, clear_redis_url, format_redis_url,
                        describe_redis_url },
    [OPT_HTTP_URL]  = { "HTTP URL", set_http_url, clear_string, format_http_url,
                        describe_http_url },
    [OPT_LIST]      = { "list", set_list, clear_list, format_list, describe_list },
    [OPT_FORMAT_PATTERNS] = { "format patterns", optpairs_set, optpairs_clear,
                              optpairs_format, optpairs_describe },
    [OPT_ENUM]      = { "choice", set_enum, clear_int, format_enum, describe_enum },
    [OPT_FILE]      = { "secret file", optfile_set_secret, optfile_clear, format_string,
                        optfile_describe_secret },
    [OPT_PEM]       = { "PEM file", optfile_set_pem, optfile_clear, format_string,
                        optfile_describe_pem },
    [OPT_SHARD]     = { "shard", optshard_set, optshard_clear, optshard_format,
                        optshard_describe },
};

/* The row of type T; NULL for a type without one. */
static const struct value_type *
option_type_of(enum option_type t)
{
    const struct value_type *vt;

    if ((unsigned)t >= OPT_TYPE_COUNT)
        return NULL;
    vt = &value_types[t];
    if (vt->name == NULL || vt->set == NULL || vt->clear == NULL || vt->format == NULL ||
        vt->describe == NULL)
        return NULL;
    return vt;
}

const char *
option_type_name(enum option_type t)
{
    const struct value_type *vt = option_type_of(t);

    return vt != NULL ? vt->name : "?";
}

int
option_set(const struct config_option *o, void *base, const char *value,
           char *why, size_t whylen)
{
    const struct value_type *vt = option_type_of(o->type);

    if (vt == NULL) {
        optvalue_whyf(why, whylen, "internal error: option type %d", (int)o->type);
        return -1;
    }
    return vt->set(o, base, value, why, whylen);
}

void
option_clear(const struct config_option *o, void *base)
{
    const struct value_type *vt = option_type_of(o->type);

    if (vt != NULL)
        vt->clear(o, base);
}

/* Formatted through a strbuf capped at the caller's buffer, so a value
 * that does not fit is reported, never cut. */
int
option_format(const struct config_option *o, const void *base, bool compact,
              char *buf, size_t len)
{
    const struct value_type *vt = option_type_of(o->type);
    struct strbuf sb;
    int r;

    if (len == 0)
        return -1;
    buf[0] = '\0';
    if (vt == NULL)
        return -1;
    sb_init(&sb, len);
    r = vt->format(o, base, compact ? "," : ", ", &sb);
    if (r == 1 && sb_failed(&sb))
        r = -1;
    else if (r == 1 && sb.buf != NULL)
        memcpy(buf, sb.buf, sb.len + 1);
    sb_release(&sb);
    return r;
}

void
option_describe(const struct config_option *o, char *buf, size_t len)
{
    const struct value_type *vt = option_type_of(o->type);

    if (vt != NULL)
        vt->describe(o, buf, len);
    else
        snprintf(buf, len, "?");
}
