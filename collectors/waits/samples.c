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

static bool
field_is(const char *p, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(p, word, n) == 0;
}

/* Decode the key field in place; its decoded length, or 0 when malformed
 * (an empty key is malformed too). */
static size_t
decode_key(char *p, size_t n)
{
    size_t o = keytext_unpercent(p, p, n, 0);   /* in place: o <= i always */

    return o == (size_t)-1 ? 0 : o;
}

#define FIELDS_MAX 5

int
samples_parse_line(char *line, size_t len, struct sample *out)
{
    char *f[FIELDS_MAX];
    size_t flen[FIELDS_MAX], nf = 0, i, start = 0;
    enum sample_outcome o;

    if (len == 0 || len > SAMPLES_LINE_MAX)
        return -1;
    /* Split on single spaces; an empty field (two spaces, a leading or
     * trailing one) or a sixth field is malformed. */
    for (i = 0; i <= len; i++) {
        unsigned char c = i < len ? (unsigned char)line[i] : ' ';

        if (c == ' ') {
            if (i == start || nf == FIELDS_MAX)
                return -1;
            f[nf] = line + start;
            flen[nf] = i - start;
            nf++;
            start = i + 1;
        } else if (!lw1_line_byte_ok(c)) {
            return -1;
        }
    }
    if (nf < 4 || !field_is(f[0], flen[0], LW1_VERSION))
        return -1;
    if (field_is(f[1], flen[1], LW1_VERB_WAIT)) {
        if (nf != 5)
            return -1;
        for (o = 0; o < SAMPLE_OUTCOMES; o++)
            if (field_is(f[4], flen[4], outcome_names[o]))
                break;
        if (o == SAMPLE_OUTCOMES)
            return -1;
        out->kind = SAMPLE_WAIT;
        out->outcome = o;
    } else if (field_is(f[1], flen[1], LW1_VERB_HOLD)) {
        if (nf != 4)
            return -1;
        out->kind = SAMPLE_HOLD;
        out->outcome = SAMPLE_OK;
    } else {
        return -1;
    }
    if (lw1_parse_us(f[3], flen[3], &out->us) == -1)
        return -1;
    /* Decode last: the fields above are checked on the original bytes. */
    out->keylen = decode_key(f[2], flen[2]);
    if (out->keylen == 0)
        return -1;
    out->key = f[2];
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
            if (n < outcap && samples_parse_line(buf + pos, linelen, &out[n]) == 0)
                n++;
            else
                bad++;
        }
        pos = end + 1;
    }
    if (truncated) {
        nlines++;
        bad++;
    }
    *lines = nlines;
    *invalid = bad;
    return n;
}
