/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * formats.c - the table of lock formats and the walk that picks a row.
 *
 * The scanner hands every key it reads to formats_decode(), which asks each
 * row in order whether it claims the key and lets the first one decode it.
 * The order is the whole disambiguation policy: the hash formats check
 * shapes that cannot overlap, and among string formats the ones with a
 * recognisable structure (our own lw1 token, ShedLock's "ADDED:", a uuid1)
 * come before "plain", which takes any string, and "unknown", which takes
 * everything.  The per-format code lives in collectors/formats/, one file
 * per family; the small parsing helpers they share live here.
 */
#include "collectors/formats/formats.h"

#include <string.h>

#include "collectors/formats/formats_impl.h"
#include "common/keytext.h"
#include "common/prefixname.h"

const char fmt_release_detect[] = "(detect)";

/* One row per LOCK_FORMATS entry (formats_impl.h), in its order.  The
 * last, "unknown", claims everything, so formats_decode() always returns
 * a row. */
#define FMT_ROW(fname, id, ...)                                                \
    { .name = fname, .claims = fmt_##id##_claims, .decode = fmt_##id##_decode, \
      __VA_ARGS__ },
const struct lock_format formats_table[] = { LOCK_FORMATS(FMT_ROW) };
#undef FMT_ROW

const size_t formats_count = sizeof(formats_table) / sizeof(formats_table[0]);
_Static_assert(sizeof(formats_table) / sizeof(formats_table[0]) == FMT_ID_COUNT,
               "enum fmt_id follows the table");

const struct lock_format *
formats_decode(const struct raw_lock *raw, struct lock_view *view)
{
    const struct lock_format *last = &formats_table[formats_count - 1];

    for (size_t i = 0; i < formats_count - 1; i++) {
        const struct lock_format *f = &formats_table[i];

        /* a row only a declaration may give (format_patterns) */
        if (f->proves == FMT_PROVES_DECLARED || !f->claims(raw))
            continue;
        /* A decoder that fails part-way may have written into the view;
         * the next row must start from a clean one. */
        fmt_view_reset(view);
        if (f->decode(raw, view) == 0)
            return f;
    }
    fmt_view_reset(view);
    (void)last->decode(raw, view);
    return last;
}

int
formats_decode_as(const struct lock_format *fmt, const struct raw_lock *raw,
                  struct lock_view *view)
{
    fmt_view_reset(view);
    if (fmt == NULL || fmt->proves == FMT_PROVES_NOTHING || !fmt->claims(raw) ||
        fmt->decode(raw, view) == -1) {
        fmt_view_reset(view);
        return -1;
    }
    return 0;
}

bool
formats_declarable(const struct lock_format *fmt)
{
    return fmt != NULL && fmt->proves != FMT_PROVES_NOTHING && fmt->proves != FMT_PROVES_UNSET;
}

const char *
formats_source_name(enum fmt_source s)
{
    static const char *const names[] = {
        [FMT_SOURCE_GUESSED] = "guessed",
        [FMT_SOURCE_PROVEN] = "proven",
        [FMT_SOURCE_DECLARED] = "declared",
    };

    return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "guessed";
}

size_t
formats_index(const struct lock_format *fmt)
{
    return (size_t)(fmt - formats_table);
}

const struct lock_format *
formats_by_name(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < formats_count; i++)
        if (strcmp(formats_table[i].name, name) == 0)
            return &formats_table[i];
    return NULL;
}

/* --- the columns ---------------------------------------------------------- */

/* What a row's columns must say, and how they must agree; the name of the
 * first column that does not. */
const char *
formats_row_check(const struct lock_format *f)
{
    if (f->name == NULL || f->name[0] == '\0')
        return "name";
    if (f->claims == NULL || f->decode == NULL)
        return "claims/decode";
    if (f->holds == 0)
        return "holds";
    if (f->helpers == 0)
        return "helpers";
    if (!f->kin.set)
        return "kin";
    if (f->waiters == FMT_WAITERS_UNSET)
        return "waiters";
    if (f->semaphore == FMT_SEM_UNSET)
        return "semaphore";
    if (f->wake_role == NULL)
        return "wake";
    if (f->release == NULL)
        return "release";
    if (f->release_wakes == FMT_RWAKES_UNSET)
        return "release_wakes";
    if (f->proves == FMT_PROVES_UNSET)
        return "proves";
    /* a channel is counted and woken; only a channel can be counted */
    if ((f->wake_channel != NULL) != (f->waiters != FMT_WAITERS_NONE) ||
        (f->wake_channel != NULL && (f->wake_role[0] == '\0' || f->wake_message == NULL)))
        return "wake (a waiters source needs its channel, role and message)";
    if (f->wake_channel != NULL && f->release_wakes == FMT_RWAKES_NONE)
        return "release_wakes (a row with a wake channel wakes its waiters)";
    if ((f->kin.from != 0) != (f->kin.helpers != 0) || (f->kin.helpers & ~f->helpers))
        return "kin (its helpers must be among the row's helpers)";
    if (f->kin.from != 0 && f->proves != FMT_PROVES_NOTHING)
        return "proves (a kin row claims no value)";
    return NULL;
}

const struct lock_format *
formats_kin(const struct lock_format *fmt, unsigned helper_kinds)
{
    size_t i, from;

    if (fmt == NULL || fmt < formats_table || fmt >= formats_table + formats_count)
        return fmt;
    from = formats_index(fmt);
    /* the later row wins: "redisson-fenced" over "redisson-fair" */
    for (i = formats_count; i-- > 0;) {
        const struct fmt_kin *k = &formats_table[i].kin;

        if ((k->from & (1u << from)) && (k->helpers & helper_kinds))
            return &formats_table[i];
    }
    return fmt;
}

size_t
formats_kin_probes(const struct lock_format *fmt, bool count,
                   enum helper_kind out[HELPER_KINDS])
{
    unsigned seen = 0;
    size_t i, n = 0, from;

    if (fmt == NULL || fmt < formats_table || fmt >= formats_table + formats_count)
        return 0;
    from = formats_index(fmt);
    for (i = formats_count; i-- > 0;) {
        const struct lock_format *t = &formats_table[i];
        unsigned want = 0;

        if ((t->kin.from & (1u << from)) && (count || !t->kin.count))
            want = t->kin.helpers;
        else if (t == fmt)
            want = t->kin.helpers;      /* only those that hold holders, below */
        for (int k = 0; k < HELPER_KINDS; k++) {
            if (!(want & (1u << k)) || (seen & (1u << k)) ||
                formats_helper_lock_name((enum helper_kind)k, "k", 1, NULL, 0) == 0 ||
                (t == fmt && !formats_helper_holds_holders((enum helper_kind)k)))
                continue;
            seen |= 1u << k;
            out[n++] = (enum helper_kind)k;
        }
    }
    return n;
}

const struct lock_format *
formats_wake_row(const char *role)
{
    for (size_t i = 0; role != NULL && role[0] != '\0' && i < formats_count; i++)
        if (strcmp(formats_table[i].wake_role, role) == 0)
            return &formats_table[i];
    return NULL;
}

long
formats_wake_channel(const struct lock_format *fmt, const char *key,
                     size_t keylen, char *out, size_t outlen)
{
    size_t n;

    if (fmt == NULL || fmt->wake_channel == NULL || out == NULL || outlen == 0 ||
        (key == NULL && keylen > 0) || keylen > (size_t)0x7fffffff)
        return -1;
    n = prefix_name(out, outlen, fmt->wake_channel, key, keylen);
    return n < outlen ? (long)n : -1;
}

/* --- helpers shared by the family files ---------------------------------- */

void
fmt_view_reset(struct lock_view *view)
{
    memset(view, 0, sizeof(*view));
    view->thread = -1;
}

void
fmt_add_holder(struct lock_view *view, const char *id, size_t idlen,
               bool truncated, long count)
{
    view->holders_total++;
    if (count > view->max_count)
        view->max_count = count;
    if (view->nholders >= HOLDERS_MAX)
        return;

    struct lock_holder *h = &view->holders[view->nholders++];
    size_t keep = idlen < HOLDER_ID_MAX - 1 ? idlen : HOLDER_ID_MAX - 1;

    if (keep > 0)
        memcpy(h->id, id, keep);
    h->id[keep] = '\0';
    h->idlen = keep;
    h->id_truncated = truncated || keep < idlen;
    h->count = count;
}

void
fmt_set_host(struct lock_view *view, const char *host, size_t len)
{
    size_t keep = len < HOST_MAX - 1 ? len : HOST_MAX - 1;

    if (keep > 0)
        memcpy(view->host, host, keep);
    view->host[keep] = '\0';
}

bool
fmt_is_uuid(const char *s, size_t len, bool lowercase_only)
{
    if (len != FMT_UUID_LEN)
        return false;
    for (size_t i = 0; i < FMT_UUID_LEN; i++) {
        unsigned char c = (unsigned char)s[i];

        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-')
                return false;
        } else if (keytext_hexval(c) < 0 || (lowercase_only && c >= 'A' && c <= 'F')) {
            return false;
        }
    }
    return true;
}

int64_t
fmt_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    /* Shift the year to start in March so the leap day is the last day of
     * the year; then each 400-year era has the same number of days. */
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (int64_t)(m > 2 ? m - 3 : m + 9) + 2) / 5 + (int64_t)d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

    return era * 146097 + doe - 719468;
}

bool
fmt_time_plausible(int64_t ms)
{
    return ms >= FORMATS_TIME_MIN_MS && ms < FORMATS_TIME_MAX_MS;
}

/* n decimal digits at s, no sign. */
static bool
digits(const char *s, size_t n, unsigned *out)
{
    uint64_t v;

    if (lw1_parse_udec(s, n, n, false, &v) == -1)
        return false;
    *out = (unsigned)v;
    return true;
}

static bool
is_leap(unsigned y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

size_t
formats_parse_iso_utc(const char *s, size_t len, int64_t *ms)
{
    static const unsigned mdays[12] = { 31, 28, 31, 30, 31, 30,
                                        31, 31, 30, 31, 30, 31 };
    unsigned y, mo, d, h, mi, sec, frac_ms = 0;
    size_t i;

    if (len < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
        s[13] != ':' || s[16] != ':')
        return 0;
    if (!digits(s, 4, &y) || !digits(s + 5, 2, &mo) || !digits(s + 8, 2, &d) ||
        !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) ||
        !digits(s + 17, 2, &sec))
        return 0;
    if (mo < 1 || mo > 12 || d < 1 ||
        d > mdays[mo - 1] + (mo == 2 && is_leap(y)) ||
        h > 23 || mi > 59 || sec > 59)
        return 0;

    i = 19;
    if (s[i] == '.') {
        size_t nd = 0;

        i++;
        while (i < len && s[i] >= '0' && s[i] <= '9' && nd < 9) {
            /* Keep milliseconds; finer digits only need to be valid. */
            if (nd < 3)
                frac_ms = frac_ms * 10 + (unsigned)(s[i] - '0');
            nd++;
            i++;
        }
        if (nd == 0)
            return 0;
        for (; nd < 3; nd++)
            frac_ms *= 10;
    }
    if (i >= len || s[i] != 'Z')
        return 0;
    i++;

    *ms = ((fmt_days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60 * 1000 +
          (int64_t)sec * 1000 + frac_ms;
    return i;
}

bool
fmt_is_uuid4(const char *s, size_t len)
{
    return fmt_is_uuid(s, len, true) && s[14] == '4' &&
           (s[19] == '8' || s[19] == '9' || s[19] == 'a' || s[19] == 'b');
}

bool
fmt_is_base64(const char *s, size_t len, size_t pad)
{
    if (s == NULL || len <= pad || len % 4 != 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        if (i >= len - pad) {
            if (c != '=')
                return false;
        } else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                     (c >= '0' && c <= '9') || c == '+' || c == '/')) {
            return false;
        }
    }
    return true;
}

bool
fmt_is_hex32(const char *s, size_t len)
{
    if (s == NULL || len != 32)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

bool
fmt_whole_string(const struct raw_lock *raw)
{
    return raw->type == RAW_STRING && !raw->value_truncated && raw->value != NULL;
}

bool
fmt_key_has_prefix(const struct raw_lock *raw, const char *prefix)
{
    size_t n = strlen(prefix);

    return raw->key != NULL && raw->keylen > n && memcmp(raw->key, prefix, n) == 0;
}

int
fmt_decode_token(const struct raw_lock *raw, struct lock_view *view,
                 bool (*claims)(const struct raw_lock *))
{
    fmt_view_reset(view);
    if (!claims(raw))
        return -1;
    fmt_add_holder(view, raw->value, raw->valuelen, false, 1);
    return 0;
}

bool
formats_registry_holder(const char *id, size_t len, char uuid[FORMATS_UUID_LEN + 1],
                        const char **tid, size_t *tidlen)
{
    const char *end = id + len, *p;

    if (len < FORMATS_UUID_LEN + 2 || id[FORMATS_UUID_LEN] != ':')
        return false;
    if (len > 6 && memcmp(end - 6, ":write", 6) == 0)
        end -= 6;
    for (p = id + FORMATS_UUID_LEN + 1; p < end; p++)
        if (!((*p >= '0' && *p <= '9') || (*p == '-' && p == id + FORMATS_UUID_LEN + 1)))
            return false;
    if (end == id + FORMATS_UUID_LEN + 1)
        return false;
    memcpy(uuid, id, FORMATS_UUID_LEN);
    uuid[FORMATS_UUID_LEN] = '\0';
    *tid = id + FORMATS_UUID_LEN + 1;
    *tidlen = (size_t)(end - *tid);
    return true;
}
