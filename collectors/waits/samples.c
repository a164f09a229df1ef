/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * samples.c - the strict parser of the sample line protocol.
 *
 * The input is whatever anyone on the network put in a UDP datagram, so
 * the parser reads each byte once, never past len, never allocates, and
 * treats every deviation from samples.h's grammar as an invalid line.  A
 * bad line never spoils its neighbours: the datagram is cut at '\n' first
 * and each line stands alone.  The rules of single fields (which bytes a
 * line may hold, the microseconds, the words) are common/lw1.h's, the
 * header liblockwatch writes its lines with.
 */
#include "collectors/waits/samples.h"

#include <string.h>

#include "common/keytext.h"
#include "common/lw1.h"

static const char *const outcome_names[SAMPLE_OUTCOMES] = {
    [SAMPLE_OK] = LW1_OUTCOME_OK,
    [SAMPLE_TIMEOUT] = LW1_OUTCOME_TIMEOUT,
    [SAMPLE_ERROR] = LW1_OUTCOME_ERROR,
};

const char *
sample_outcome_str(enum sample_outcome o)
{
    return (unsigned)o < SAMPLE_OUTCOMES ? outcome_names[o] : "?";
}

static const char *const reason_names[SAMPLE_LOST_REASONS] = {
    [SAMPLE_LOST_RENEWAL] = LW1_LOST_RENEWAL,
    [SAMPLE_LOST_EXPIRED] = LW1_LOST_EXPIRED,
};

const char *
sample_lost_reason_str(enum sample_lost_reason r)
{
    return (unsigned)r < SAMPLE_LOST_REASONS ? reason_names[r] : "?";
}

/* Why the calling thread's last samples_parse_line() refused its line
 * (samples_why()): set only on a refusal, so the accepting path costs
 * nothing. */
static __thread const char *why_last;

#define REFUSE(why) do { why_last = (why); return -1; } while (0)

/* The first refused line of the calling thread's last datagram. */
static __thread struct {
    const char *why;            /* NULL: none */
    size_t off, len;
} first_bad;

const char *
samples_why(void)
{
    return why_last != NULL ? why_last : "malformed";
}

const char *
samples_first_invalid(size_t *off, size_t *len)
{
    *off = first_bad.off;
    *len = first_bad.len;
    return first_bad.why;
}

static void
note_bad(size_t off, size_t len, const char *why)
{
    if (first_bad.why != NULL)
        return;
    first_bad.why = why;
    first_bad.off = off;
    first_bad.len = len;
}

static bool
field_is(const char *p, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(p, word, n) == 0;
}

/* Index of the word p[0..n) in names[0..count), or -1. */
static int
word_index(const char *p, size_t n, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (field_is(p, n, names[i]))
            return i;
    return -1;
}

/* Decode a percent-encoded field in place; its decoded length, or 0 when
 * malformed, empty or longer than max. */
static size_t
decode_field(char *p, size_t n, size_t max)
{
    size_t o = keytext_unpercent(p, p, n, 0);   /* in place: o <= i always */

    return o == (size_t)-1 || o > max ? 0 : o;
}

#define FIELDS_MAX 8

/* One line split into fields (pointers into the line). */
struct fields {
    char *f[FIELDS_MAX];
    size_t len[FIELDS_MAX];
    size_t n;
};

/* The <owner> <holder> pair at fields i and i+1. */
static int
parse_owner_holder(struct fields *fl, size_t i, struct sample *out)
{
    out->ownerlen = decode_field(fl->f[i], fl->len[i], LW1_OWNER_MAX);
    if (out->ownerlen == 0)
        REFUSE("an owner that is not percent-encoding of 1 to 256 bytes");
    out->owner = fl->f[i];
    if (field_is(fl->f[i + 1], fl->len[i + 1], LW1_UNKNOWN))
        return 0;               /* not known: holder NULL, holderlen 0 */
    out->holderlen = decode_field(fl->f[i + 1], fl->len[i + 1], LW1_HOLDER_MAX);
    if (out->holderlen == 0)
        REFUSE("a holder that is not '-' or percent-encoding of 1 to 512 bytes");
    out->holder = fl->f[i + 1];
    return 0;
}

static int
parse_wait(struct fields *fl, struct sample *out)
{
    int o = word_index(fl->f[4], fl->len[4], outcome_names, SAMPLE_OUTCOMES);

    if (o < 0)
        REFUSE("an outcome other than ok, timeout or error");
    out->outcome = (enum sample_outcome)o;
    if (lw1_parse_us(fl->f[3], fl->len[3], &out->us) == -1)
        REFUSE("a duration that is not whole microseconds (digits only)");
    return fl->n == 7 ? parse_owner_holder(fl, 5, out) : 0;
}

static int
parse_hold(struct fields *fl, struct sample *out)
{
    if (lw1_parse_us(fl->f[3], fl->len[3], &out->us) == -1)
        REFUSE("a duration that is not whole microseconds (digits only)");
    return fl->n == 6 ? parse_owner_holder(fl, 4, out) : 0;
}

static int
parse_waiting(struct fields *fl, struct sample *out)
{
    int o = -1;

    out->start = field_is(fl->f[5], fl->len[5], LW1_PHASE_START);
    if (!out->start && (o = word_index(fl->f[5], fl->len[5], outcome_names,
                                       SAMPLE_OUTCOMES)) < 0)
        REFUSE("a phase other than start, ok, timeout or error");
    out->outcome = out->start ? SAMPLE_OK : (enum sample_outcome)o;
    return parse_owner_holder(fl, 3, out);
}

static int
parse_lost(struct fields *fl, struct sample *out)
{
    int r = word_index(fl->f[7], fl->len[7], reason_names, SAMPLE_LOST_REASONS);

    if (r < 0)
        REFUSE("a lost reason other than renewal or expired");
    if (lw1_parse_us(fl->f[5], fl->len[5], &out->us) == -1)
        REFUSE("a held time that is not whole microseconds (digits only)");
    out->reason = (enum sample_lost_reason)r;
    if (!field_is(fl->f[6], fl->len[6], LW1_UNKNOWN)) {
        if (lw1_parse_us(fl->f[6], fl->len[6], &out->overrun_us) == -1)
            REFUSE("an overrun that is not '-' or whole microseconds");
        out->overrun_known = true;
    }
    return parse_owner_holder(fl, 3, out);
}

/* The verbs: how many fields each line has and what reads the rest.  Each
 * parse checks its words and numbers before it decodes any field in place
 * (decoding one field never moves another). */
static const struct verb {
    const char *word;
    enum sample_kind kind;
    size_t nmin, nmax;
    int (*parse)(struct fields *fl, struct sample *out);
} verbs[] = {
    { LW1_VERB_WAIT, SAMPLE_WAIT, 5, 7, parse_wait },
    { LW1_VERB_HOLD, SAMPLE_HOLD, 4, 6, parse_hold },
    { LW1_VERB_WAITING, SAMPLE_WAITING, 6, 6, parse_waiting },
    { LW1_VERB_LOST, SAMPLE_LOST, 8, 8, parse_lost },
};

int
samples_parse_line(char *line, size_t len, struct sample *out)
{
    struct fields fl;
    const struct verb *v = NULL;
    size_t i, start;

    if (len == 0 || len > SAMPLES_LINE_MAX)
        REFUSE("a line over 4096 bytes");
    /* Split on single spaces; an empty field (two spaces, a leading or
     * trailing one) or a ninth field is malformed. */
    fl.n = 0;
    for (i = 0;;) {
        start = i;
        while (i < len && lw1_line_byte_ok((unsigned char)line[i]))
            i++;
        if (i == start || fl.n == FIELDS_MAX)
            REFUSE(i == start ? "an empty field, or a byte no line may hold (a control byte, "
                   "a space inside a field: percent-encode it)" : "more than 8 fields");
        fl.f[fl.n] = line + start;
        fl.len[fl.n] = i - start;
        fl.n++;
        if (i == len)
            break;
        if (line[i] != ' ' || ++i == len)
            REFUSE(line[i - 1] == ' ' ? "a trailing space" : "a byte no line may hold "
                   "(a control byte or a non-ASCII one: percent-encode it)");
    }
    if (!field_is(fl.f[0], fl.len[0], LW1_VERSION))
        REFUSE("a first field other than lw1");
    if (fl.n < 4)
        REFUSE("fewer than 4 fields");
    for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
        if (field_is(fl.f[1], fl.len[1], verbs[i].word))
            v = &verbs[i];
    /* a 5-field hold or a 6-field wait is neither form */
    if (v == NULL)
        REFUSE("a verb other than wait, hold, waiting or lost");
    if (fl.n < v->nmin || fl.n > v->nmax || (v->kind == SAMPLE_HOLD && fl.n == 5) ||
        (v->kind == SAMPLE_WAIT && fl.n == 6))
        REFUSE("a field count the verb does not take (wait 5 or 7, hold 4 or 6, "
               "waiting 6, lost 8)");
    memset(out, 0, sizeof(*out));
    out->kind = v->kind;
    out->outcome = SAMPLE_OK;
    if (v->parse(&fl, out) == -1)
        return -1;
    /* The key last: the fields above were checked on the original bytes. */
    out->keylen = decode_field(fl.f[2], fl.len[2], SAMPLES_LINE_MAX);
    if (out->keylen == 0)
        REFUSE("a key that is not percent-encoding (a '%' not followed by two hex digits)");
    out->key = fl.f[2];
    return 0;
}

size_t
samples_parse_datagram(char *buf, size_t len, bool truncated,
                       struct sample *out, size_t outcap,
                       uint64_t *lines, uint64_t *invalid)
{
    size_t pos = 0, n = 0, end, linelen;
    uint64_t nlines = 0, bad = 0;
    char *nl;

    first_bad.why = NULL;
    while (pos < len) {
        nl = memchr(buf + pos, '\n', len - pos);
        if (nl == NULL) {
            if (truncated)
                break;          /* the cut part; counted below */
            end = len;
        } else {
            end = (size_t)(nl - buf);
        }
        linelen = end - pos;
        if (linelen > 0 && buf[end - 1] == '\r')
            linelen--;
        if (linelen > 0) {
            nlines++;
            if (n >= outcap) {
                note_bad(pos, linelen, "more lines than a datagram may hold");
                bad++;
            } else if (samples_parse_line(buf + pos, linelen, &out[n]) == 0) {
                n++;
            } else {
                note_bad(pos, linelen, samples_why());
                bad++;
            }
        }
        pos = end + 1;
    }
    if (truncated) {
        note_bad(pos, len - pos, "a datagram cut at the agent's 8192 bytes");
        nlines++;
        bad++;
    }
    *lines = nlines;
    *invalid = bad;
    return n;
}
