/*
 * options.c - the config option table and the parsers and printers of its
 * value types.
 *
 * Every key lockwatch reads is one row of config_options[].  A row's
 * default is a string in file syntax and goes through the same parser as a
 * value from the file, so a default can never be something a user could
 * not write, and -n prints defaults exactly as a file would say them.
 * Values are stored at offsets into the section's struct (config.h), so
 * the loader needs no per-key code; the only per-key knowledge outside this
 * table is the cross-key validation in config.c (sentinel mode needs
 * sentinels, and so on).
 *
 * Errors come back as "what is wrong (what is allowed)"; config.c prefixes
 * file, line, section and key.  A value that may carry a secret (a URL with
 * a password, a URL with a query string) is never echoed in a message.
 */
#include "conf/options.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/config.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* A secret file holds one password or token; anything bigger is the wrong
 * file, and a hard cap keeps a mistaken path (/dev/zero) from eating memory. */
#define SECRET_MAX 4096

/* Largest Redis database index accepted in a URL (Redis' own limit is
 * INT_MAX through "databases"; anything this large is a typo). */
#define REDIS_DB_MAX 1000000

static const char *const bool_yesno[] = { "no", "yes", NULL };
static const char *const bool_onoff[] = { "off", "on", NULL };
static const char *const mode_names[] = { "standalone", "cluster", "sentinel", NULL };
#define SINK_FORMAT_NAME(e, name, sym) name,
static const char *const format_names[] = { SINK_FORMATS(SINK_FORMAT_NAME) NULL };
#undef SINK_FORMAT_NAME

#define AT(S, m)  .off = offsetof(S, m), .size = sizeof(((S *)0)->m)
#define AT2(S, m) .off2 = offsetof(S, m)
#define AT3(S, m) .off3 = offsetof(S, m)

#define MS_S 1000LL
#define MS_M (60 * MS_S)
#define MS_H (60 * MS_M)
#define MS_D (24 * MS_H)

/*
 * The table.  Within a section, rows are in the order of the SPEC's example
 * config, which is the order -n prints them.  Bounds are there to catch
 * typos (5m for 5s) and values that would hurt the watched Redis, not to
 * second-guess operators: each is far from any sensible setting.
 */
const struct config_option config_options[] = {
    /* [agent] */
    { .section = SECTION_AGENT, .key = "listen", .type = OPT_HOSTPORT,
      .def = "127.0.0.1:9717",
      AT(struct config, listen_host), AT2(struct config, listen_port),
      .help = "HTTP address: /metrics, API, status page" },
    { .section = SECTION_AGENT, .key = "samples", .type = OPT_HOSTPORT,
      .def = "127.0.0.1:9717", .flags = OPT_OFF,
      AT(struct config, samples_host), AT2(struct config, samples_port),
      AT3(struct config, samples_off),
      .help = "UDP address for wait/hold samples from clients (off disables)" },
    { .section = SECTION_AGENT, .key = "top_offenders", .type = OPT_INT,
      .def = "20", .min = 1, .max = 1000,
      AT(struct config, top_offenders),
      .help = "per-key series exported, worst first" },

    /* [target NAME] */
    { .section = SECTION_TARGET, .key = "url", .type = OPT_REDIS_URL,
      .def = "redis://127.0.0.1:6379/0",
      AT(struct target_conf, url),
      .help = "redis://[user@]host[:port][/db]; the password goes in password_file" },
    { .section = SECTION_TARGET, .key = "password_file", .type = OPT_FILE,
      AT(struct target_conf, password_file), AT2(struct target_conf, password),
      .example = "/etc/lockwatch/main.pass", .holds = "the password",
      .help = "file with the Redis password alone on one line; only lockwatchd may read it" },
    { .section = SECTION_TARGET, .key = "mode", .type = OPT_ENUM,
      .def = "standalone", .names = mode_names,
      AT(struct target_conf, mode),
      .help = "standalone | cluster | sentinel" },
    { .section = SECTION_TARGET, .key = "sentinels", .type = OPT_HOSTPORTS,
      AT(struct target_conf, sentinels), AT2(struct target_conf, nsentinels),
      .example = "127.0.0.1:26379",
      .help = "mode = sentinel: the sentinels, comma separated host:port" },
    { .section = SECTION_TARGET, .key = "master_name", .type = OPT_STRING,
      AT(struct target_conf, master_name), .example = "mymaster",
      .help = "mode = sentinel: the monitored master's name" },
    { .section = SECTION_TARGET, .key = "patterns", .type = OPT_LIST,
      .def = "lock:*",
      AT(struct target_conf, patterns), AT2(struct target_conf, npatterns),
      .help = "comma separated globs of lock keys; release refuses other keys" },
    { .section = SECTION_TARGET, .key = "scan_interval", .type = OPT_DURATION,
      .def = "15s", .min = 100, .max = MS_D,
      AT(struct target_conf, scan_interval_ms),
      .help = "start a full scan this often" },
    { .section = SECTION_TARGET, .key = "scan_count", .type = OPT_INT,
      .def = "1000", .min = 1, .max = 100000,
      AT(struct target_conf, scan_count),
      .help = "SCAN COUNT hint" },
    { .section = SECTION_TARGET, .key = "scan_duty", .type = OPT_PERCENT,
      .def = "25%",
      AT(struct target_conf, scan_duty),
      .help = "at most this share of wall time spent in scan round trips" },
    { .section = SECTION_TARGET, .key = "max_keys_per_second", .type = OPT_INT,
      .def = "0", .min = 0, .max = 100000000,
      AT(struct target_conf, max_keys_per_second),
      .help = "0 = unlimited; an absolute cap on top of scan_duty" },
    { .section = SECTION_TARGET, .key = "scan_replicas", .type = OPT_BOOL,
      .def = "no", .names = bool_yesno,
      AT(struct target_conf, scan_replicas),
      .help = "mode = cluster: scan replicas (READONLY) instead of primaries" },
    { .section = SECTION_TARGET, .key = "connect_timeout", .type = OPT_DURATION,
      .def = "2s", .min = 10, .max = 5 * MS_M,
      AT(struct target_conf, connect_timeout_ms),
      .help = "give up connecting to Redis after this long" },
    { .section = SECTION_TARGET, .key = "command_timeout", .type = OPT_DURATION,
      .def = "5s", .min = 10, .max = 10 * MS_M,
      AT(struct target_conf, command_timeout_ms),
      .help = "give up waiting for a Redis reply after this long" },

    /* [redlock NAME] */
    { .section = SECTION_REDLOCK, .key = "targets", .type = OPT_LIST,
      .flags = OPT_REQUIRED,
      AT(struct redlock_conf, targets), AT2(struct redlock_conf, ntargets),
      .example = "r1, r2, r3",
      .help = "the [target] names that together form one Redlock group (2 or more)" },

    /* [rules] */
    { .section = SECTION_RULES, .key = "leak_grace", .type = OPT_DURATION,
      .def = "30s", .min = 0, .max = 30 * MS_D,
      AT(struct config, leak_grace_ms),
      .help = "a lock with no TTL is a leak once seen that long" },
    { .section = SECTION_RULES, .key = "max_hold", .type = OPT_DURATION,
      .def = "5m", .min = MS_S, .max = 30 * MS_D,
      AT(struct config, max_hold_ms),
      .help = "the same holder for longer is a long holder" },
    { .section = SECTION_RULES, .key = "max_reentrancy", .type = OPT_INT,
      .def = "16", .min = 1, .max = 1000000,
      AT(struct config, max_reentrancy),
      .help = "hold count on a reentrant lock at or above this alerts" },
    { .section = SECTION_RULES, .key = "wait_p99", .type = OPT_DURATION,
      .def = "1s", .min = 1, .max = MS_H,
      AT(struct config, wait_p99_ms),
      .help = "P99 acquire wait per lock class above this alerts" },
    { .section = SECTION_RULES, .key = "wait_window", .type = OPT_DURATION,
      .def = "1m", .min = MS_S, .max = MS_D,
      AT(struct config, wait_window_ms),
      .help = "window of the P99 acquire wait" },
    { .section = SECTION_RULES, .key = "wait_min_samples", .type = OPT_INT,
      .def = "20", .min = 1, .max = 1000000,
      AT(struct config, wait_min_samples),
      .help = "fewer samples in the window never alert" },
    { .section = SECTION_RULES, .key = "repeat_interval", .type = OPT_DURATION,
      .def = "1h", .min = MS_M, .max = 30 * MS_D,
      AT(struct config, repeat_interval_ms),
      .help = "re-send a firing alert this often" },

    /* [webhook NAME] */
    { .section = SECTION_WEBHOOK, .key = "url", .type = OPT_HTTP_URL,
      .flags = OPT_REQUIRED,
      AT(struct webhook_conf, url), .example = "https://hooks.example/lockwatch",
      .help = "where notifications are POSTed" },
    { .section = SECTION_WEBHOOK, .key = "format", .type = OPT_ENUM,
      .def = "generic", .names = format_names,
      AT(struct webhook_conf, format),
      .help = "generic | slack | alertmanager" },
    { .section = SECTION_WEBHOOK, .key = "secret_file", .type = OPT_FILE,
      AT(struct webhook_conf, secret_file), AT2(struct webhook_conf, secret),
      .example = "/etc/lockwatch/oncall.secret", .holds = "the signing secret",
      .help = "format = generic: file holding the HMAC-SHA256 signing secret" },
    { .section = SECTION_WEBHOOK, .key = "timeout", .type = OPT_DURATION,
      .def = "10s", .min = 100, .max = 5 * MS_M,
      AT(struct webhook_conf, timeout_ms),
      .help = "give up on one delivery attempt after this long" },
    { .section = SECTION_WEBHOOK, .key = "retry_base", .type = OPT_DURATION,
      .def = "1s", .min = 10, .max = MS_M,
      AT(struct webhook_conf, retry_base_ms),
      .help = "first retry within this, doubling per try up to 5m (full jitter)" },

    /* [unlock] */
    { .section = SECTION_UNLOCK, .key = "http", .type = OPT_BOOL,
      .def = "off", .names = bool_onoff,
      AT(struct config, unlock_http),
      .help = "POST /api/v1/locks/release; needs token_file when on" },
    { .section = SECTION_UNLOCK, .key = "token_file", .type = OPT_FILE,
      AT(struct config, unlock_token_file), AT2(struct config, unlock_token),
      .example = "/etc/lockwatch/unlock.token", .holds = "the bearer token",
      .help = "file holding the bearer token for the release API" },
    { .section = SECTION_UNLOCK, .key = "audit_stream", .type = OPT_STRING,
      .def = "lockwatch:audit",
      AT(struct config, audit_stream),
      .help = "capped Redis stream of every release and expire" },
};

const size_t config_noptions = ARRAY_LEN(config_options);

static const struct {
    const char *name;
    bool named;
} sections[SECTION_COUNT] = {
    [SECTION_AGENT]   = { "agent", false },
    [SECTION_TARGET]  = { "target", true },
    [SECTION_REDLOCK] = { "redlock", true },
    [SECTION_RULES]   = { "rules", false },
    [SECTION_CLASSES] = { "classes", false },
    [SECTION_WEBHOOK] = { "webhook", true },
    [SECTION_UNLOCK]  = { "unlock", false },
};

const char *
config_section_name(enum config_section s)
{
    return (unsigned)s < SECTION_COUNT ? sections[s].name : "?";
}

bool
config_section_named(enum config_section s)
{
    return (unsigned)s < SECTION_COUNT && sections[s].named;
}

const char *
option_type_name(enum option_type t)
{
    static const char *const names[] = {
        [OPT_DURATION] = "duration", [OPT_INT] = "integer",
        [OPT_PERCENT] = "percentage", [OPT_BOOL] = "boolean",
        [OPT_STRING] = "string", [OPT_HOSTPORT] = "host:port",
        [OPT_HOSTPORTS] = "host:port list", [OPT_REDIS_URL] = "Redis URL",
        [OPT_HTTP_URL] = "HTTP URL", [OPT_LIST] = "list",
        [OPT_ENUM] = "choice", [OPT_FILE] = "secret file",
    };
    return (unsigned)t < ARRAY_LEN(names) ? names[t] : "?";
}

/* ---- small helpers ------------------------------------------------------ */

static void whyf(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
whyf(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    if (len == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

static void *
field(void *base, size_t off)
{
    return (char *)base + off;
}

static const void *
cfield(const void *base, size_t off)
{
    return (const char *)base + off;
}

/* Integers and enums are stored by size so one row type serves int, long,
 * int64_t and enum fields; memcpy keeps it free of aliasing games.  The
 * row's bounds keep the value within the field (a unit test checks). */
static void
store_int(void *base, size_t off, size_t size, int64_t v)
{
    if (size == sizeof(int64_t)) {
        memcpy(field(base, off), &v, sizeof(v));
    } else if (size == sizeof(int32_t)) {
        int32_t v32 = (int32_t)v;
        memcpy(field(base, off), &v32, sizeof(v32));
    }
}

static int64_t
load_int(const void *base, size_t off, size_t size)
{
    if (size == sizeof(int64_t)) {
        int64_t v;
        memcpy(&v, cfield(base, off), sizeof(v));
        return v;
    }
    if (size == sizeof(int32_t)) {
        int32_t v32;
        memcpy(&v32, cfield(base, off), sizeof(v32));
        return v32;
    }
    return 0;
}

static char **
str_field(void *base, size_t off)
{
    return (char **)field(base, off);
}

static char *const *
cstr_field(const void *base, size_t off)
{
    return (char *const *)cfield(base, off);
}

static void
free_secret(char *s)
{
    if (s != NULL) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

/* "a, b or c" from a NULL-terminated list. */
static void
join_names(const char *const *names, char *buf, size_t len)
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

/* ---- durations ------------------------------------------------------------ */

enum dur_status { DUR_OK, DUR_SYNTAX, DUR_NEGATIVE, DUR_NO_UNIT, DUR_FRACTION, DUR_RANGE };

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
static enum dur_status
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
        whyf(why, len, "\"%s\" is not a duration (use a number followed by ms, s, m, h "
             "or d, e.g. 30s)", v);
        return -1;
    case DUR_NEGATIVE:
        whyf(why, len, "\"%s\" is negative (allowed: %s to %s)", v, lo, hi);
        return -1;
    case DUR_NO_UNIT:
        whyf(why, len, "\"%s\" has no unit (add ms, s, m, h or d, e.g. %ss)", v, v);
        return -1;
    case DUR_FRACTION:
        whyf(why, len, "\"%s\" is not a whole number of milliseconds (use a smaller "
             "unit, e.g. 1500ms for 1.5s)", v);
        return -1;
    case DUR_RANGE:
        whyf(why, len, "\"%s\" is too large (allowed: %s to %s)", v, lo, hi);
        return -1;
    }
    if (ms < o->min || ms > o->max) {
        whyf(why, len, "\"%s\" is out of range (allowed: %s to %s)", v, lo, hi);
        return -1;
    }
    store_int(base, o->off, o->size, ms);
    return 0;
}

/* ---- numbers -------------------------------------------------------------- */

static int
set_int(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    long long n;
    char *end = NULL;

    if (!(isdigit((unsigned char)v[0]) || (v[0] == '-' && isdigit((unsigned char)v[1])))) {
        whyf(why, len, "\"%s\" is not a whole number (allowed: %" PRId64 " to %" PRId64 ")",
             v, o->min, o->max);
        return -1;
    }
    errno = 0;
    n = strtoll(v, &end, 10);
    if (end == v || *end != '\0') {
        whyf(why, len, "\"%s\" is not a whole number (allowed: %" PRId64 " to %" PRId64 ")",
             v, o->min, o->max);
        return -1;
    }
    if (errno == ERANGE || n < o->min || n > o->max) {
        whyf(why, len, "\"%s\" is out of range (allowed: %" PRId64 " to %" PRId64 ")",
             v, o->min, o->max);
        return -1;
    }
    store_int(base, o->off, o->size, (int64_t)n);
    return 0;
}

/* A share, written with a % sign so "25" can never be read as 25 times. */
static int
set_percent(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    char num[64];
    const char *p = v;
    char *end = NULL;
    size_t n;
    double d;

    if (*p == '-') {
        whyf(why, len, "\"%s\" is out of range (allowed: above 0%% up to 100%%)", v);
        return -1;
    }
    while (isdigit((unsigned char)*p))
        p++;
    if (p > v && *p == '.' && isdigit((unsigned char)p[1]))
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    n = (size_t)(p - v);
    if (n == 0 || n >= sizeof(num) || strcmp(p, "%") != 0) {
        whyf(why, len, "\"%s\" is not a percentage (use a number followed by %%, e.g. 25%%)",
             v);
        return -1;
    }
    memcpy(num, v, n);
    num[n] = '\0';
    errno = 0;
    d = strtod(num, &end);
    if (end != num + n || errno == ERANGE || !(d > 0.0 && d <= 100.0)) {
        whyf(why, len, "\"%s\" is out of range (allowed: above 0%% up to 100%%)", v);
        return -1;
    }
    d /= 100.0;
    memcpy(field(base, o->off), &d, sizeof(d));
    return 0;
}

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
    whyf(why, len, "\"%s\" is not a yes/no value (use yes, no, on, off, true, false, "
         "1 or 0)", v);
    return -1;
found:
    memcpy(field(base, o->off), &b, sizeof(b));
    return 0;
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
    join_names(o->names, allowed, sizeof(allowed));
    whyf(why, len, "\"%s\" is not a valid %s (use %s)", v, o->key, allowed);
    return -1;
}

/* ---- strings and lists ---------------------------------------------------- */

static int
set_string(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    char *s;

    if (v[0] == '\0') {
        whyf(why, len, "empty value (give one, e.g. %s)", o->def ? o->def : o->example);
        return -1;
    }
    s = strdup(v);
    if (s == NULL) {
        whyf(why, len, "out of memory");
        return -1;
    }
    free(*str_field(base, o->off));
    *str_field(base, o->off) = s;
    return 0;
}

static void
free_list(char **items, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        free(items[i]);
    free(items);
}

/*
 * Split "a, b ,c" into trimmed items.  An empty value is an empty list
 * (the caller's cross-key checks decide whether that is allowed); an empty
 * item ("a,,b") is refused, since it is always a typo.  Returns 0, -1 on an
 * empty item, -2 when out of memory.
 */
static int
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

static int
set_list(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    char **items = NULL;
    size_t n = 0;
    int rc = split_list(v, &items, &n);

    if (rc == -1) {
        whyf(why, len, "\"%s\" has an empty item (use comma separated values, e.g. %s)",
             v, o->def ? o->def : o->example);
        return -1;
    }
    if (rc == -2) {
        whyf(why, len, "out of memory");
        return -1;
    }
    free_list(*(char ***)field(base, o->off), *(size_t *)field(base, o->off2));
    *(char ***)field(base, o->off) = items;
    *(size_t *)field(base, o->off2) = n;
    return 0;
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

/*
 * "host:port", "[v6]:port", and with need_port false also "host" and
 * "[v6]" (port left alone).  A bare IPv6 address must be bracketed: in
 * "::1:6379" the port cannot be told from the address.
 */
static int
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
        whyf(why, len, "\"%s\" is not host:port (use an address and a port from 1 to "
             "65535, e.g. %s or [::1]:%s%s)", v, o->def ? o->def : o->example,
             o->def != NULL && strrchr(o->def, ':') ? strrchr(o->def, ':') + 1 : "9717",
             (o->flags & OPT_OFF) ? ", or off" : "");
        return -1;
    }
    memcpy(field(base, o->off), host, strlen(host) + 1);
    memcpy(field(base, o->off2), &port, sizeof(port));
    if (o->flags & OPT_OFF)
        memcpy(field(base, o->off3), &off, sizeof(off));
    return 0;
}

static int
set_hostports(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    struct hostport *hp = NULL;
    char **items = NULL;
    size_t n = 0, i;
    int rc = -1, s = split_list(v, &items, &n);

    if (s == -1) {
        whyf(why, len, "\"%s\" has an empty item (use host:port, comma separated, e.g. %s)",
             v, o->example);
        goto out;
    }
    if (s == -2 || (n > 0 && (hp = calloc(n, sizeof(*hp))) == NULL)) {
        whyf(why, len, "out of memory");
        goto out;
    }
    for (i = 0; i < n; i++) {
        if (split_hostport(items[i], strlen(items[i]), hp[i].host, sizeof(hp[i].host),
                           &hp[i].port, true) == -1) {
            whyf(why, len, "\"%s\" is not host:port (use host:port with a port from 1 to "
                 "65535, comma separated, e.g. %s)", items[i], o->example);
            goto out;
        }
    }
    free(*(struct hostport **)field(base, o->off));
    *(struct hostport **)field(base, o->off) = hp;
    *(size_t *)field(base, o->off2) = n;
    hp = NULL;
    rc = 0;
out:
    free(hp);
    free_list(items, n);
    return rc;
}

/* The part between "scheme://" and the path, and whether its user info
 * carries a password ("user:pw@" or ":pw@"). */
static bool
authority_has_password(const char *auth, size_t n)
{
    const char *at = NULL, *c;

    for (c = auth; c < auth + n; c++)
        if (*c == '@')
            at = c;
    return at != NULL && memchr(auth, ':', (size_t)(at - auth)) != NULL;
}

/*
 * redis://[user@]host[:port][/db].  Stored in the target's url (as
 * written, for -n), user, host, port and db.  A password in the URL is
 * refused without repeating the URL, so the secret does not end up in a
 * log: SPEC "password never in the URL".
 */
static int
set_redis_url(void *base, const char *v, char *why, size_t len)
{
    struct target_conf *t = base;
    char host[sizeof(t->host)];
    const char *sep = strstr(v, "://"), *auth, *aend, *at = NULL, *c;
    char *url = NULL, *user = NULL;
    int port = 6379, rc = -1;
    long db = 0;

    auth = sep != NULL ? sep + 3 : v;
    aend = auth + strcspn(auth, "/");
    if (authority_has_password(auth, (size_t)(aend - auth))) {
        whyf(why, len, "a password in the URL is not allowed (put the password alone "
             "on one line in a file only lockwatchd can read, and set password_file to its path)");
        goto out;
    }
    if (strpbrk(v, "?#") != NULL) {
        whyf(why, len, "URL parameters are not supported (use redis://[user@]host[:port]"
             "[/db]; the password goes in password_file)");
        goto out;
    }
    if (sep != NULL && (size_t)(sep - v) == 6 && strncasecmp(v, "rediss", 6) == 0) {
        whyf(why, len, "\"%s\": TLS (rediss://) is not supported by this build (use "
             "redis://, through a local TLS tunnel if needed)", v);
        goto out;
    }
    if (sep == NULL || (size_t)(sep - v) != 5 || strncasecmp(v, "redis", 5) != 0)
        goto bad;
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
    t->port = port;
    t->db = (int)db;
    url = user = NULL;
    rc = 0;
    goto out;
bad:
    whyf(why, len, "\"%s\" is not a Redis URL (use redis://[user@]host[:port][/db], "
         "e.g. redis://127.0.0.1:6379/0)", v);
    goto out;
oom:
    whyf(why, len, "out of memory");
out:
    free(url);
    free(user);
    return rc;
}

/* Webhook URLs go to libcurl; only http(s) makes sense for a POST, and
 * credentials in the URL would be printed by -n, so they are refused. */
static int
set_http_url(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    const char *sep = strstr(v, "://"), *auth, *c;
    size_t slen = sep != NULL ? (size_t)(sep - v) : 0, alen;

    auth = sep != NULL ? sep + 3 : v;
    alen = strcspn(auth, "/?#");
    if (authority_has_password(auth, alen)) {
        whyf(why, len, "a user:password in the URL is not allowed (it would show in -n "
             "output and logs; generic sinks sign with secret_file instead)");
        return -1;
    }
    for (c = v; *c != '\0'; c++)
        if (isspace((unsigned char)*c) || iscntrl((unsigned char)*c))
            goto bad;
    if (sep == NULL || alen == 0 ||
        !((slen == 4 && strncasecmp(v, "http", 4) == 0) ||
          (slen == 5 && strncasecmp(v, "https", 5) == 0)))
        goto bad;
    return set_string(o, base, v, why, len);
bad:
    whyf(why, len, "\"%s\" is not an http:// or https:// URL (e.g. %s)", v, o->example);
    return -1;
}

/* ---- secret files --------------------------------------------------------- */

/*
 * Read a secret file whole.  Read at load time, not at use, so a missing
 * or unreadable file fails -n and a reload instead of the first AUTH at
 * 3 a.m.  Trailing newlines are dropped (editors add one); anything else
 * is the secret, byte for byte.
 */
static int
set_file(const struct config_option *o, void *base, const char *v, char *why, size_t len)
{
    char *buf = NULL, *path = NULL, *secret = NULL;
    struct stat st;
    size_t n = 0;
    int fd = -1, rc = -1;

    if (v[0] != '/') {
        whyf(why, len, "\"%s\" is not an absolute path (give the full path of the file "
             "holding %s, e.g. %s)", v, o->holds, o->example);
        goto out;
    }
    fd = open(v, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd == -1 || fstat(fd, &st) == -1) {
        int e = errno;

        if (e == EACCES)
            whyf(why, len, "cannot read \"%s\": %s (make it readable by the user "
                 "lockwatch runs as, e.g. 0640 root:lockwatch)", v, strerror(e));
        else
            whyf(why, len, "cannot read \"%s\": %s (create it with %s alone on one "
                 "line, readable by lockwatchd only)", v, strerror(e), o->holds);
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        whyf(why, len, "\"%s\" is not a regular file (it should hold %s alone on one "
             "line)", v, o->holds);
        goto out;
    }
    buf = malloc(SECRET_MAX + 1);
    if (buf == NULL)
        goto oom;
    while (n < SECRET_MAX + 1) {
        ssize_t r = read(fd, buf + n, SECRET_MAX + 1 - n);

        if (r == -1 && errno == EINTR)
            continue;
        if (r == -1) {
            whyf(why, len, "cannot read \"%s\": %s (it should hold %s alone on one line)",
                 v, strerror(errno), o->holds);
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n > SECRET_MAX) {
        whyf(why, len, "\"%s\" is larger than %d bytes (it should hold %s alone on one "
             "line)", v, SECRET_MAX, o->holds);
        goto out;
    }
    if (memchr(buf, '\0', n) != NULL) {
        whyf(why, len, "\"%s\" contains a NUL byte (it should hold %s alone on one line)",
             v, o->holds);
        goto out;
    }
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    if (n == 0) {
        whyf(why, len, "\"%s\" is empty (put %s in it, alone on one line)", v, o->holds);
        goto out;
    }
    secret = strndup(buf, n);
    path = strdup(v);
    if (secret == NULL || path == NULL)
        goto oom;
    free(*str_field(base, o->off));
    free_secret(*str_field(base, o->off2));
    *str_field(base, o->off) = path;
    *str_field(base, o->off2) = secret;
    path = secret = NULL;
    rc = 0;
    goto out;
oom:
    whyf(why, len, "out of memory");
out:
    if (buf != NULL) {
        explicit_bzero(buf, SECRET_MAX + 1);
        free(buf);
    }
    free_secret(secret);
    free(path);
    if (fd != -1)
        close(fd);
    return rc;
}

/* ---- the per-type dispatch ------------------------------------------------ */

int
option_set(const struct config_option *o, void *base, const char *value,
           char *why, size_t whylen)
{
    switch (o->type) {
    case OPT_DURATION:  return set_duration(o, base, value, why, whylen);
    case OPT_INT:       return set_int(o, base, value, why, whylen);
    case OPT_PERCENT:   return set_percent(o, base, value, why, whylen);
    case OPT_BOOL:      return set_bool(o, base, value, why, whylen);
    case OPT_STRING:    return set_string(o, base, value, why, whylen);
    case OPT_HOSTPORT:  return set_hostport(o, base, value, why, whylen);
    case OPT_HOSTPORTS: return set_hostports(o, base, value, why, whylen);
    case OPT_REDIS_URL: return set_redis_url(base, value, why, whylen);
    case OPT_HTTP_URL:  return set_http_url(o, base, value, why, whylen);
    case OPT_LIST:      return set_list(o, base, value, why, whylen);
    case OPT_ENUM:      return set_enum(o, base, value, why, whylen);
    case OPT_FILE:      return set_file(o, base, value, why, whylen);
    }
    whyf(why, whylen, "internal error: option type %d", (int)o->type);
    return -1;
}

void
option_clear(const struct config_option *o, void *base)
{
    switch (o->type) {
    case OPT_DURATION:
    case OPT_INT:
    case OPT_ENUM:
        store_int(base, o->off, o->size, 0);
        break;
    case OPT_PERCENT:
    case OPT_BOOL:
        memset(field(base, o->off), 0, o->size);
        break;
    case OPT_STRING:
    case OPT_HTTP_URL:
        free(*str_field(base, o->off));
        *str_field(base, o->off) = NULL;
        break;
    case OPT_HOSTPORT:
        memset(field(base, o->off), 0, o->size);
        memset(field(base, o->off2), 0, sizeof(int));
        break;
    case OPT_HOSTPORTS:
        free(*(struct hostport **)field(base, o->off));
        *(struct hostport **)field(base, o->off) = NULL;
        *(size_t *)field(base, o->off2) = 0;
        break;
    case OPT_REDIS_URL: {
        struct target_conf *t = base;

        free(t->url);
        free(t->user);
        t->url = t->user = NULL;
        t->host[0] = '\0';
        t->port = t->db = 0;
        break;
    }
    case OPT_LIST:
        free_list(*(char ***)field(base, o->off), *(size_t *)field(base, o->off2));
        *(char ***)field(base, o->off) = NULL;
        *(size_t *)field(base, o->off2) = 0;
        break;
    case OPT_FILE:
        free(*str_field(base, o->off));
        free_secret(*str_field(base, o->off2));
        *str_field(base, o->off) = NULL;
        *str_field(base, o->off2) = NULL;
        break;
    }
}

/* Bounded appending into a caller's buffer; once something did not fit,
 * every later append fails too and the caller reports -1. */
struct out {
    char *buf;
    size_t len, used;
    bool full;
};

static void outf(struct out *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
outf(struct out *b, const char *fmt, ...)
{
    va_list ap;
    int w;

    if (b->full)
        return;
    va_start(ap, fmt);
    w = vsnprintf(b->buf + b->used, b->len - b->used, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= b->len - b->used)
        b->full = true;
    else
        b->used += (size_t)w;
}

static void
out_host(struct out *b, const char *host, int port)
{
    outf(b, strchr(host, ':') != NULL ? "[%s]:%d" : "%s:%d", host, port);
}

int
option_format(const struct config_option *o, const void *base, bool compact,
              char *buf, size_t len)
{
    struct out b = { buf, len, 0, false };
    const char *sep = compact ? "," : ", ";
    size_t i;

    if (len == 0)
        return -1;
    buf[0] = '\0';
    switch (o->type) {
    case OPT_DURATION: {
        char d[32];

        option_format_duration(load_int(base, o->off, o->size), d, sizeof(d));
        outf(&b, "%s", d);
        break;
    }
    case OPT_INT:
        outf(&b, "%" PRId64, load_int(base, o->off, o->size));
        break;
    case OPT_PERCENT: {
        double d;

        memcpy(&d, cfield(base, o->off), sizeof(d));
        /* 15 digits: enough to give back the decimal that was parsed. */
        outf(&b, "%.15g%%", d * 100.0);
        break;
    }
    case OPT_BOOL: {
        bool v;

        memcpy(&v, cfield(base, o->off), sizeof(v));
        outf(&b, "%s", o->names != NULL ? o->names[v ? 1 : 0] : v ? "yes" : "no");
        break;
    }
    case OPT_STRING:
    case OPT_HTTP_URL:
    case OPT_FILE:              /* the path; the contents stay secret */
        if (*cstr_field(base, o->off) == NULL)
            return 0;
        outf(&b, "%s", *cstr_field(base, o->off));
        break;
    case OPT_REDIS_URL: {
        const struct target_conf *t = base;

        if (t->url == NULL)
            return 0;
        outf(&b, "%s", t->url);
        break;
    }
    case OPT_HOSTPORT: {
        const char *host = cfield(base, o->off);
        bool off = false;
        int port;

        if (o->flags & OPT_OFF)
            memcpy(&off, cfield(base, o->off3), sizeof(off));
        memcpy(&port, cfield(base, o->off2), sizeof(port));
        if (off)
            outf(&b, "off");
        else if (host[0] == '\0')
            return 0;
        else
            out_host(&b, host, port);
        break;
    }
    case OPT_HOSTPORTS: {
        const struct hostport *hp = *(struct hostport *const *)cfield(base, o->off);
        size_t n = *(const size_t *)cfield(base, o->off2);

        if (n == 0)
            return 0;
        for (i = 0; i < n; i++) {
            outf(&b, "%s", i > 0 ? sep : "");
            out_host(&b, hp[i].host, hp[i].port);
        }
        break;
    }
    case OPT_LIST: {
        char *const *items = *(char **const *)cfield(base, o->off);
        size_t n = *(const size_t *)cfield(base, o->off2);

        if (n == 0)
            return 0;
        for (i = 0; i < n; i++)
            outf(&b, "%s%s", i > 0 ? sep : "", items[i]);
        break;
    }
    case OPT_ENUM: {
        int64_t v = load_int(base, o->off, o->size);

        for (i = 0; o->names[i] != NULL; i++)
            if ((int64_t)i == v)
                break;
        outf(&b, "%s", o->names[i] != NULL ? o->names[i] : "?");
        break;
    }
    }
    return b.full ? -1 : 1;
}

void
option_describe(const struct config_option *o, char *buf, size_t len)
{
    char lo[32], hi[32], names[128];

    switch (o->type) {
    case OPT_DURATION:
        option_format_duration(o->min, lo, sizeof(lo));
        option_format_duration(o->max, hi, sizeof(hi));
        snprintf(buf, len, "a duration (ms, s, m, h or d) from %s to %s", lo, hi);
        break;
    case OPT_INT:
        snprintf(buf, len, "a whole number from %" PRId64 " to %" PRId64, o->min, o->max);
        break;
    case OPT_PERCENT:
        snprintf(buf, len, "a percentage above 0%% up to 100%%");
        break;
    case OPT_BOOL:
        snprintf(buf, len, "%s or %s", o->names ? o->names[1] : "yes",
                 o->names ? o->names[0] : "no");
        break;
    case OPT_STRING:
        snprintf(buf, len, "a non-empty string");
        break;
    case OPT_HOSTPORT:
        snprintf(buf, len, "host:port%s", (o->flags & OPT_OFF) ? " or off" : "");
        break;
    case OPT_HOSTPORTS:
        snprintf(buf, len, "host:port, comma separated");
        break;
    case OPT_REDIS_URL:
        snprintf(buf, len, "redis://[user@]host[:port][/db]");
        break;
    case OPT_HTTP_URL:
        snprintf(buf, len, "an http:// or https:// URL");
        break;
    case OPT_LIST:
        snprintf(buf, len, "a comma separated list");
        break;
    case OPT_ENUM:
        join_names(o->names, names, sizeof(names));
        snprintf(buf, len, "%s", names);
        break;
    case OPT_FILE:
        snprintf(buf, len, "the absolute path of a file holding %s", o->holds);
        break;
    }
}

const char *
config_target_mode_str(enum target_mode mode)
{
    return (unsigned)mode < ARRAY_LEN(mode_names) - 1 ? mode_names[mode] : "?";
}

const char *
config_sink_format_str(enum sink_format format)
{
    return (unsigned)format < ARRAY_LEN(format_names) - 1 ? format_names[format] : "?";
}
