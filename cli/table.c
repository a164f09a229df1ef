/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * table.c - lockctl's human output: tables that fit the terminal, whatever
 * the keys hold.
 *
 * The width is the terminal's, as kubectl and systemctl take it: $COLUMNS,
 * else TIOCGWINSZ on stdout, else (a pipe, a file) no limit at all, as -o
 * wide: what goes to grep or into a ticket is every key and holder whole
 * (a cut key no longer greps, and two keys cut alike read as one); -o wide
 * lifts the limit anywhere.  A table that did cut a cell counts it
 * (table_cut_count()), so lockctl can say how many were cut.  Sentences (footers, outcomes, show's values) wrap at spaces onto
 * continuation lines rather than being cut: an on-call engineer at 80
 * columns reads all of "its waiters woke"; only keys and holders in list's
 * columns are cut, in the middle, with the whole text one -o wide away.
 * A paragraph (table_paragraph(): lockctl events' details, and a
 * TABLE_DETAIL cell, printed under its row: lockctl alerts' summaries)
 * wraps the same way, so an id, an address or an owner in it stays whole on one line; a
 * word wider than the whole line is the one thing broken, marked with "…"
 * at the end of the piece and the start of the next line.
 *
 * Keys and holders are whatever bytes a client wrote, and lockctl prints
 * them to an on-call engineer's terminal: an ESC sequence in a key could
 * rewrite the screen, a newline could forge a row, a right-to-left
 * override could make one key read as another.  Every cell therefore goes
 * through table_safe_text(): valid UTF-8 only, and every character that
 * moves the cursor, separates lines, reorders text or hides becomes U+FFFD.
 *
 * Widths are counted conservatively (a character from U+1100 up counts as
 * two columns, except "…" and U+FFFD, which this file itself writes), so
 * a line may come out a little narrower than its width, never wider.
 * Cells that do not fit are cut and marked with "…"; keys are cut in the
 * middle, since both their ends tell locks apart (lock:order:…:1001).
 *
 * Nothing here talks to Redis or reads other lockctl files, so the unit
 * tests link this file's object (from liblockctl.a) with nothing else of
 * lockctl's.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/lockctl.h"
#include "common/keytext.h"

#define ELLIPSIS     "\xe2\x80\xa6"     /* U+2026 */
#define REPLACEMENT  "\xef\xbf\xbd"     /* U+FFFD */
#define GAP          2                  /* spaces between columns */
#define FLEX_MIN     24                 /* columns the flex column is given
                                         * before shrinkable columns shrink,
                                         * and optional ones are left out */
#define FLEX_FLOOR   8                  /* ... and keeps before a wrapped
                                         * column goes under its min */
#define CONT_INDENT  2                  /* continuation lines of a sentence */

static size_t cells_cut;                /* cells cut by a table so far */

size_t
table_terminal_width(void)
{
    const char *env = getenv("COLUMNS");
    struct winsize ws;

    if (env != NULL && env[0] != '\0') {
        char *end;
        long v = strtol(env, &end, 10);

        if (*end == '\0' && v >= TABLE_WIDTH_MIN && v <= TABLE_WIDTH_MAX)
            return (size_t)v;
    }
    if (isatty(STDOUT_FILENO) != 1)
        return TABLE_WIDE;      /* a pipe or a file: nothing cut */
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= TABLE_WIDTH_MIN)
        return ws.ws_col > TABLE_WIDTH_MAX ? TABLE_WIDTH_MAX : ws.ws_col;
    return TABLE_WIDTH;
}

void
table_count_cut(void)
{
    cells_cut++;
}

size_t
table_cut_count(void)
{
    return cells_cut;
}

size_t
table_stderr_width(void)
{
    struct winsize ws;

    if (getenv("COLUMNS") == NULL && isatty(STDERR_FILENO) == 1 &&
        ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= TABLE_WIDTH_MIN)
        return ws.ws_col > TABLE_WIDTH_MAX ? TABLE_WIDTH_MAX : ws.ws_col;
    return table_terminal_width();
}

/* Decode one code point of valid UTF-8 at s; *len gets its bytes. */
static unsigned long
utf8_next(const unsigned char *s, size_t *len)
{
    if (s[0] < 0x80) {
        *len = 1;
        return s[0];
    }
    if ((s[0] & 0xe0) == 0xc0) {
        *len = 2;
        return ((unsigned long)(s[0] & 0x1f) << 6) | (s[1] & 0x3f);
    }
    if ((s[0] & 0xf0) == 0xe0) {
        *len = 3;
        return ((unsigned long)(s[0] & 0x0f) << 12) | ((unsigned long)(s[1] & 0x3f) << 6) |
            (s[2] & 0x3f);
    }
    *len = 4;
    return ((unsigned long)(s[0] & 0x07) << 18) | ((unsigned long)(s[1] & 0x3f) << 12) |
        ((unsigned long)(s[2] & 0x3f) << 6) | (s[3] & 0x3f);
}

static size_t
cp_width(unsigned long cp)
{
    /* Nothing below U+1100 is wide; above it, count two unless it is one
     * of the two narrow characters this file writes. */
    if (cp < 0x1100 || cp == 0x2026 || cp == 0xfffd)
        return 1;
    return 2;
}

char *
table_safe_text(const char *p, size_t n, size_t *width)
{
    size_t need = KEYTEXT_SANITIZED_MAX(n), slen, i = 0, o = 0, w = 0, cl;
    char *san = malloc(need), *out = NULL;

    if (san == NULL)
        return NULL;
    slen = keytext_sanitize(san, need, p, n);
    out = malloc(3 * slen + 1);
    if (out == NULL)
        goto done;
    while (i < slen) {
        unsigned long cp = utf8_next((const unsigned char *)san + i, &cl);

        if (keytext_display_unsafe(cp)) {
            memcpy(out + o, REPLACEMENT, 3);
            o += 3;
            w += 1;
        } else {
            memcpy(out + o, san + i, cl);
            o += cl;
            w += cp_width(cp);
        }
        i += cl;
    }
    out[o] = '\0';
    if (width != NULL)
        *width = w;
done:
    free(san);
    return out;
}

size_t
table_text_width(const char *s)
{
    size_t w = 0, cl;

    while (*s != '\0') {
        w += cp_width(utf8_next((const unsigned char *)s, &cl));
        s += cl;
    }
    return w;
}

/* Bytes of the longest prefix of s at most budget columns wide. */
static size_t
prefix_fitting(const char *s, size_t budget)
{
    size_t i = 0, w = 0, cl, cw;

    while (s[i] != '\0') {
        cw = cp_width(utf8_next((const unsigned char *)s + i, &cl));
        if (w + cw > budget)
            break;
        w += cw;
        i += cl;
    }
    return i;
}

/* Byte offset of the shortest suffix start of s at most budget wide. */
static size_t
suffix_fitting(const char *s, size_t budget)
{
    size_t len = strlen(s), start = len, w = 0, cl;

    while (start > 0) {
        size_t j = start - 1;

        while (j > 0 && ((unsigned char)s[j] & 0xc0) == 0x80)
            j--;                /* back to the lead byte */
        size_t cw = cp_width(utf8_next((const unsigned char *)s + j, &cl));

        if (w + cw > budget)
            break;
        w += cw;
        start = j;
    }
    return start;
}

char *
table_cut(const char *s, size_t width, bool middle)
{
    size_t len = strlen(s), head, tail_at, tail_len;
    char *out;

    if (table_text_width(s) <= width)
        return strdup(s);
    if (width == 0)
        return strdup("");
    if (middle && width >= 5) {
        size_t tail_budget = (width - 1) / 2;

        head = prefix_fitting(s, width - 1 - tail_budget);
        tail_at = suffix_fitting(s, tail_budget);
        if (tail_at < head)
            tail_at = head;
    } else {
        head = prefix_fitting(s, width - 1);
        tail_at = len;
    }
    tail_len = len - tail_at;
    out = malloc(head + 3 + tail_len + 1);
    if (out == NULL)
        return NULL;
    memcpy(out, s, head);
    memcpy(out + head, ELLIPSIS, 3);
    memcpy(out + head + 3, s + tail_at, tail_len);
    out[head + 3 + tail_len] = '\0';
    return out;
}

size_t
table_wrap_next(const char *s, size_t width, size_t *skip)
{
    size_t fit, brk;

    *skip = 0;
    if (table_text_width(s) <= width)
        return strlen(s);
    fit = prefix_fitting(s, width > 0 ? width : 1);
    if (fit == 0)               /* one character wider than width */
        for (fit = 1; ((unsigned char)s[fit] & 0xc0) == 0x80; fit++)
            ;
    /* the last space that fits (or the one right after), else a hard break */
    for (brk = fit + 1; brk-- > 1;)
        if (s[brk] == ' ')
            break;
    if (brk == 0)
        return fit;
    *skip = strspn(s + brk, " ");
    return brk;
}

/* Columns of the first n bytes of terminal-safe s. */
static size_t
span_width(const char *s, size_t n)
{
    size_t w = 0, cl;

    for (size_t i = 0; i < n; i += cl)
        w += cp_width(utf8_next((const unsigned char *)s + i, &cl));
    return w;
}

/* Bytes of the first piece of s broken at budget columns: at least one
 * character. */
static size_t
piece_fitting(const char *s, size_t budget)
{
    size_t n = prefix_fitting(s, budget);

    if (n == 0)
        for (n = 1; ((unsigned char)s[n] & 0xc0) == 0x80; n++)
            ;
    return n;
}

void
table_paragraph(FILE *fp, size_t width, size_t indent, const char *s)
{
    size_t avail = width > indent + 8 ? width - indent : 8;
    bool cont = false;          /* this line goes on with a broken word */

    s += strspn(s, " ");
    while (*s != '\0') {
        size_t budget = avail - (cont ? 1 : 0), skip, n, used, piece = 0;
        const char *word;
        bool hard;

        n = table_wrap_next(s, budget, &skip);
        word = s + n + skip;    /* the word after this line's, if any */
        if ((hard = skip == 0 && *word != '\0')) {
            n = 0;              /* no space fits: the first word is wider */
            word = s;
        }
        used = span_width(s, n) + (n > 0 ? 1 : 0);
        /* A word wider than any line is the one thing broken; it starts
         * where there is room, "…" ending each piece and opening the next
         * line. */
        if (hard || (*word != '\0' && span_width(word, strcspn(word, " ")) > avail &&
                     used + 3 <= budget))
            piece = piece_fitting(word, budget - used - 1);
        fprintf(fp, "%*s%s%.*s%s%.*s%s\n", (int)indent, "", cont ? ELLIPSIS : "", (int)n, s,
                piece > 0 && n > 0 ? " " : "", (int)piece, word, piece > 0 ? ELLIPSIS : "");
        cont = piece > 0;
        s = word + piece;
    }
}

void
table_line(FILE *fp, size_t width, const char *fmt, ...)
{
    char *buf = NULL, *safe;
    const char *p;
    va_list ap;
    size_t n, skip, indent = 0;
    int rc;

    /* as long as it is: a key in an outcome is never cut */
    va_start(ap, fmt);
    rc = vasprintf(&buf, fmt, ap);
    va_end(ap);
    if (rc < 0)
        return;
    safe = table_safe_text(buf, (size_t)rc, NULL);
    free(buf);
    if (safe == NULL)
        return;
    /* whole words per line; continuation lines indented, so a wrapped
     * sentence still reads as one */
    p = safe;
    do {
        n = table_wrap_next(p, width > indent + 8 ? width - indent : 8, &skip);
        fprintf(fp, "%*s%.*s\n", (int)indent, "", (int)n, p);
        p += n + skip;
        indent = CONT_INDENT;
    } while (*p != '\0');
    free(safe);
}

void
table_init(struct table *t, const struct table_col *cols, size_t ncols)
{
    memset(t, 0, sizeof(*t));
    t->cols = cols;
    t->ncols = ncols;
}

int
table_add(struct table *t, const char *const *cells, const size_t *lens)
{
    size_t i;

    if (t->nrows == t->cap) {
        size_t ncap = t->cap ? 2 * t->cap : 16;
        char **nc = realloc(t->cells, ncap * t->ncols * sizeof(*nc));

        if (nc == NULL)
            return -1;
        t->cells = nc;
        t->cap = ncap;
    }
    for (i = 0; i < t->ncols; i++) {
        const char *c = cells[i] ? cells[i] : "";
        size_t n = cells[i] == NULL ? 0 : lens ? lens[i] : strlen(cells[i]);
        char *s = table_safe_text(c, n, NULL);

        if (s == NULL) {
            while (i-- > 0)
                free(t->cells[t->nrows * t->ncols + i]);
            return -1;
        }
        t->cells[t->nrows * t->ncols + i] = s;
    }
    t->nrows++;
    return 0;
}

size_t
table_widest(const struct table *t, size_t i)
{
    size_t m = table_text_width(t->cols[i].title);

    for (size_t r = 0; r < t->nrows; r++) {
        size_t cw = table_text_width(t->cells[r * t->ncols + i]);

        if (cw > m)
            m = cw;
    }
    return m;
}

/* Columns of the widest word (between spaces) of column i's cells: what
 * a wrapped column needs so that no word breaks inside. */
static size_t
widest_word(const struct table *t, size_t i)
{
    size_t m = 0;

    for (size_t r = 0; r <= t->nrows; r++) {
        const char *s = r == 0 ? t->cols[i].title : t->cells[(r - 1) * t->ncols + i];

        while (*s != '\0') {
            size_t n = strcspn(s, " "), ww = span_width(s, n);

            m = ww > m ? ww : m;
            s += n + strspn(s + n, " ");
        }
    }
    return m;
}

/*
 * Column widths: each fixed column as wide as its widest cell (title
 * included) up to its max; the flex column gets what is left of width.
 * On a narrow terminal, in this order, until the flex column (the key) has
 * FLEX_MIN: shrinkable columns shrink to their min (cut ones, then
 * wrapped ones), then optional ones (list's FORMAT, then HOLDER) are left
 * out (width 0); then the key gives way down to FLEX_FLOOR before a
 * wrapped column (STATE) goes under its min, and that one only down to
 * its widest word.  A key cut to a few columns tells no lock from another
 * (lock…ace), and a state broken one letter a line is not read at all.
 * A TABLE_DETAIL column takes no width (0): it goes under its row.
 */
void
table_layout(const struct table *t, size_t width, size_t *w)
{
    size_t used = 0, flex = t->ncols, i, want, floor, m, shown = 0;

    for (i = 0; i < t->ncols; i++) {
        if (t->cols[i].flags & TABLE_DETAIL) {
            w[i] = 0;           /* under the row, not beside: no gap either */
            continue;
        }
        shown++;
        m = table_widest(t, i);
        if (t->cols[i].flags & TABLE_FLEX) {
            flex = i;
            w[i] = m;
            continue;
        }
        /* -o wide: every column as wide as its widest cell */
        w[i] = m < t->cols[i].max || width >= TABLE_WIDE ? m : t->cols[i].max;
        used += w[i];
    }
    used += shown > 0 ? GAP * (shown - 1) : 0;
    /* A narrow terminal: shrinkable columns (min > 0) give way, right to
     * left, down to their min, before the flex column (the key) gets less
     * than FLEX_MIN (or than its widest cell, when that is less). */
    want = flex < t->ncols && w[flex] < FLEX_MIN ? w[flex] : FLEX_MIN;
    /* cut columns first (a holder keeps both ends), wrapped ones last (a
     * narrower STATE breaks onto more lines) */
    for (int pass = 0; pass < 2; pass++)
        for (i = t->ncols; flex < t->ncols && used + want > width && i-- > 0;) {
            size_t give;

            if (t->cols[i].min == 0 || w[i] <= t->cols[i].min ||
                !(t->cols[i].flags & TABLE_WRAP) != !pass)
                continue;
            give = used + want - width;
            give = give < w[i] - t->cols[i].min ? give : w[i] - t->cols[i].min;
            w[i] -= give;
            used -= give;
        }
    /* still short of that: optional columns are left out, first first */
    for (i = 0; flex < t->ncols && used + want > width && i < t->ncols; i++)
        if (t->cols[i].flags & TABLE_OPTIONAL) {
            used -= w[i] + GAP;
            w[i] = 0;
        }
    /* then the key down to FLEX_FLOOR before a wrapped column goes under
     * its min, down to its widest word */
    floor = want < FLEX_FLOOR ? want : FLEX_FLOOR;
    for (i = t->ncols; flex < t->ncols && used + floor > width && i-- > 0;) {
        size_t give;

        if (!(t->cols[i].flags & TABLE_WRAP) || w[i] <= (m = widest_word(t, i)))
            continue;
        give = used + floor - width;
        give = give < w[i] - m ? give : w[i] - m;
        w[i] -= give;
        used -= give;
    }
    if (flex < t->ncols) {
        size_t room = used < width ? width - used : 1;

        if (w[flex] > room)
            w[flex] = room ? room : 1;
        used += w[flex];
    }
    /* Room left over: a wrapped column narrower than its text takes it,
     * so a sentence wraps no more than the terminal makes it; then a
     * column whose cells were cut at its max (a holder), so that a wide
     * terminal shows them whole. */
    for (int pass = 0; pass < 2; pass++)
        for (i = 0; i < t->ncols && used < width; i++) {
            if (!(t->cols[i].flags & TABLE_WRAP) == !pass || i == flex || w[i] == 0 ||
                (m = table_widest(t, i)) <= w[i])
                continue;
            m = m - w[i] < width - used ? m - w[i] : width - used;
            w[i] += m;
            used += m;
        }
    /* Fixed columns alone too wide (a tiny width): shrink from the right. */
    for (i = t->ncols; used > width && i-- > 0;) {
        size_t cut = used - width;

        if (i == flex || w[i] <= 1)
            continue;
        cut = cut < w[i] - 1 ? cut : w[i] - 1;
        w[i] -= cut;
        used -= cut;
    }
}

static void
print_cell(FILE *fp, const char *s, size_t w, unsigned flags, bool last)
{
    char *cut = table_cut(s, w, (flags & TABLE_MIDDLE) != 0);
    const char *txt = cut ? cut : "";
    size_t tw = table_text_width(txt), pad = tw < w ? w - tw : 0;

    if (table_text_width(s) > w)
        table_count_cut();

    if (flags & TABLE_RIGHT)
        fprintf(fp, "%*s%s", (int)pad, "", txt);
    else if (last)
        fputs(txt, fp);
    else
        fprintf(fp, "%s%*s", txt, (int)pad, "");
    free(cut);
}

/* One row: a TABLE_WRAP cell goes on over as many lines as it needs (the
 * other cells blank there); every other cell is cut to its width; a
 * column left out (width 0) is not printed at all, nor its gap. */
static void
print_row(const struct table *t, FILE *fp, const char *const *cells, const size_t *w)
{
    const char *rest[TABLE_COLS_MAX];
    bool more = true, first = true;
    size_t i, n, skip, last = 0;

    for (i = 0; i < t->ncols && i < TABLE_COLS_MAX; i++) {
        rest[i] = cells[i];
        if (w[i] > 0)
            last = i;
    }
    while (more) {
        bool lead = true;
        char *line = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&line, &len);

        /* a line at a time, so that what pads cells before empty ones is
         * not left at its end (a paste keeps no trailing blanks) */
        if (out == NULL)
            out = fp;
        more = false;
        for (i = 0; i < t->ncols && i < TABLE_COLS_MAX; i++) {
            const char *c = rest[i];
            char *part = NULL;

            if (w[i] == 0)
                continue;
            if (!lead)
                fprintf(out, "%*s", GAP, "");
            lead = false;
            if (t->cols[i].flags & TABLE_WRAP) {
                n = table_wrap_next(c, w[i], &skip);
                if ((part = malloc(n + 1)) != NULL) {
                    memcpy(part, c, n);
                    part[n] = '\0';
                }
                rest[i] = c + n + skip;
                more |= *rest[i] != '\0';
                c = part ? part : "";
            } else if (!first) {
                c = "";
            }
            print_cell(out, c, w[i], t->cols[i].flags, i == last);
            free(part);
        }
        if (out != fp && fclose(out) == 0 && line != NULL) {
            while (len > 0 && line[len - 1] == ' ')
                len--;
            fwrite(line, 1, len, fp);
        }
        free(line);
        fputc('\n', fp);
        first = false;
    }
}

void
table_print(const struct table *t, FILE *fp, size_t width)
{
    size_t *w = calloc(t->ncols ? t->ncols : 1, sizeof(*w)), i, r;
    const char *title[TABLE_COLS_MAX];

    if (w == NULL)
        return;
    table_layout(t, width, w);
    for (i = 0; i < t->ncols && i < TABLE_COLS_MAX; i++)
        title[i] = t->cols[i].title;
    print_row(t, fp, title, w);
    for (r = 0; r < t->nrows; r++) {
        const char *const *row = (const char *const *)t->cells + r * t->ncols;

        print_row(t, fp, row, w);
        for (i = 0; i < t->ncols; i++)
            if ((t->cols[i].flags & TABLE_DETAIL) && row[i][0] != '\0')
                table_paragraph(fp, width, TABLE_DETAIL_INDENT, row[i]);
    }
    free(w);
}

void
table_release(struct table *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof(*t));
}
