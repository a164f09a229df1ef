/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * eventtable.c - lockctl events' output: the events of an /api/v1/events
 * answer, oldest first, so the newest is last, next to the prompt.
 *
 * An event's detail is a sentence, so it is not squeezed into a column:
 * each event is one line of aligned columns (time, kind, target, key, and
 * the holder when it fits there whole), then, indented by EVENT_INDENT,
 * "holder ..." when it did not, and the detail, as paragraphs wrapped at
 * spaces (table_paragraph()): an audit entry id, an address or an owner
 * is never split, only a word wider than the whole line is, marked.  The
 * key gets the rest of the line before it is cut (in the middle, marked,
 * so lock:order:1001 and lock:order:1002 stay apart); on a terminal too
 * narrow for even EVENT_KEY_MIN columns of it, it goes on a "key ..."
 * line of its own.  The key column is as wide as puts the most holders on
 * their first lines.  At 80 columns an event takes two or three lines;
 * -o wide puts every field whole on its line.
 *
 * The key comes from its lossless key_escaped form (with "…" when the
 * agent's ring kept only its first bytes, key_cut), the holder from
 * holder_escaped, shown as list and show show one; every cell is made
 * safe for a terminal by table.c, so a key's newline, escape sequence or
 * bidirectional override can neither break a line nor move the cursor.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/lockctl.h"

#define EVENT_INDENT 4          /* the holder and detail lines under an event */
#define EVENT_GAP    2          /* spaces between the columns of its first line */
#define EVENT_KEY_MIN 16        /* the key's least room before the line is cut */

enum { EV_TIME, EV_KIND, EV_TARGET, EV_KEY, EV_HOLDER, EV_DETAIL, EV_NCOLS };

/* The cells of a row (table.c keeps them safe); max: the columns TARGET
 * takes before a name is cut (-o wide: whole).  The layout is
 * events_table_print()'s own, not table_print()'s. */
const struct table_col events_table_cols[EV_NCOLS] = {
    [EV_TIME] = { "TIME (UTC)", 14, 0, 0 },
    [EV_KIND] = { "KIND", 16, 0, 0 },
    [EV_TARGET] = { "TARGET", 16, 0, 0 },
    [EV_KEY] = { "KEY", 0, TABLE_MIDDLE, 0 },
    [EV_HOLDER] = { "HOLDER", 0, 0, 0 },
    [EV_DETAIL] = { "DETAIL", 0, 0, 0 },
};
const size_t events_table_ncols = EV_NCOLS;

static const char *
member_text(const json_t *o, const char *name)
{
    const char *s = json_string_value(json_object_get(o, name));

    return s != NULL ? s : "";
}

/* The holder as list and show print one, into a malloc'd string: its
 * bytes when they are text, else "hex:" and its bytes (what --holder-hex
 * takes), "…" when the ring kept only its first bytes; from the lossless
 * holder_escaped, else (an agent older than lockctl) the sanitised holder.
 * NULL on ENOMEM. */
static char *
holder_text(const json_t *e)
{
    const char *esc = json_string_value(json_object_get(e, "holder_escaped"));
    char *raw, *out;
    size_t n, cap;

    if (esc == NULL || (raw = out_unescape(esc, &n)) == NULL)
        return strdup(member_text(e, "holder"));
    cap = OUT_HOLDER_MAX(n) + 4;
    if ((out = malloc(cap)) != NULL) {
        n = out_holder(raw, n, out, cap);
        if (json_is_true(json_object_get(e, "holder_cut")))
            memcpy(out + n, "\xe2\x80\xa6", 4);
    }
    free(raw);
    return out;
}

/* One event's row; 0, -1 on ENOMEM. */
static int
add_row(struct table *t, const json_t *e)
{
    const char *cells[6];
    size_t lens[6], keylen = 0;
    char when[32], *key = NULL, *kb, *holder;
    const char *esc = json_string_value(json_object_get(e, "key_escaped"));
    int rc;

    out_time(json_integer_value(json_object_get(e, "time_ms")), when, sizeof(when));
    /* "2026-08-21 12:30:37Z": the month, day and time fit 14 columns */
    cells[0] = strlen(when) > 5 ? when + 5 : when;
    lens[0] = strlen(cells[0]);
    if (lens[0] > 0 && cells[0][lens[0] - 1] == 'Z')
        lens[0]--;
    cells[1] = member_text(e, "kind");
    cells[2] = member_text(e, "target");
    if (esc != NULL && (key = out_unescape(esc, &keylen)) == NULL)
        key = NULL;             /* malformed: shown as the sanitised text */
    if (key != NULL && json_is_true(json_object_get(e, "key_cut"))) {
        /* the ring kept only the key's first bytes: say so */
        if ((kb = realloc(key, keylen + 4)) == NULL) {
            free(key);
            return -1;
        }
        key = kb;
        memcpy(key + keylen, "\xe2\x80\xa6", 4);
        keylen += 3;
    }
    cells[3] = key != NULL ? key : member_text(e, "key");
    lens[3] = key != NULL ? keylen : strlen(cells[3]);
    if ((holder = holder_text(e)) == NULL) {
        free(key);
        return -1;
    }
    cells[4] = holder;
    cells[5] = member_text(e, "detail");
    for (size_t c = 1; c < 6; c++)
        if (c != 3)
            lens[c] = strlen(cells[c]);
    rc = table_add(t, cells, lens);
    free(key);
    free(holder);
    return rc;
}

/* How an event table is laid out at a width. */
struct layout {
    size_t w[EV_NCOLS];         /* time, kind, target; key: its column */
    size_t room;                /* the columns left for key (and holder) */
    bool key_inline;            /* room enough for the key on the first line */
    size_t *keyw, *holderw;     /* per row: the key's and the holder's columns */
};

/* Does row r's holder go on its first line, after a key column of w
 * (and under the title HOLDER)? */
static bool
holder_fits(const struct layout *l, size_t r, size_t w)
{
    size_t title = strlen(events_table_cols[EV_HOLDER].title);

    return l->key_inline && l->holderw[r] > 0 && l->keyw[r] <= w &&
        w + EVENT_GAP + (l->holderw[r] > title ? l->holderw[r] : title) <= l->room;
}

/* The key column: of the widths that put some holders on their first line,
 * the one that puts most there (the narrowest of equals); 0 when none
 * does: then no holder is on its first line, and every key has the room. */
static size_t
key_column(const struct layout *l, size_t nrows)
{
    size_t best = 0, best_n = 0, title = strlen(events_table_cols[EV_KEY].title);

    for (size_t c = 0; c < nrows; c++) {
        size_t w = l->keyw[c] > title ? l->keyw[c] : title, n = 0;

        for (size_t r = 0; r < nrows; r++)
            n += holder_fits(l, r, w);
        if (n > best_n || (n == best_n && n > 0 && w < best)) {
            best = w;
            best_n = n;
        }
    }
    return best;
}

/* Widths: time, kind and target as wide as their widest cell (target up
 * to its max unless wide), the key the rest of the line (key_column()).
 * 0, -1 on ENOMEM. */
static int
layout(const struct table *t, size_t width, struct layout *l)
{
    size_t used = 0;

    memset(l, 0, sizeof(*l));
    for (size_t c = EV_TIME; c <= EV_TARGET; c++) {
        l->w[c] = table_widest(t, c);
        if (width < TABLE_WIDE && t->cols[c].max > 0 && l->w[c] > t->cols[c].max)
            l->w[c] = t->cols[c].max;
        used += l->w[c] + EVENT_GAP;
    }
    l->key_inline = width >= used + EVENT_KEY_MIN;
    l->room = l->key_inline ? width - used : 0;
    l->keyw = calloc(t->nrows + 1, sizeof(*l->keyw));
    l->holderw = calloc(t->nrows + 1, sizeof(*l->holderw));
    if (l->keyw == NULL || l->holderw == NULL)
        return -1;
    for (size_t r = 0; r < t->nrows; r++) {
        l->keyw[r] = table_text_width(t->cells[r * t->ncols + EV_KEY]);
        l->holderw[r] = table_text_width(t->cells[r * t->ncols + EV_HOLDER]);
    }
    l->w[EV_KEY] = key_column(l, t->nrows);
    if (l->w[EV_KEY] > 0)
        l->w[EV_HOLDER] = l->room - l->w[EV_KEY] - EVENT_GAP;
    return 0;
}

/* One cell of the first line: cut to w (marked), padded unless last. */
static void
put_cell(FILE *fp, const char *s, size_t w, bool middle, bool last)
{
    char *cut = table_cut(s, w, middle);
    const char *txt = cut != NULL ? cut : "";
    size_t tw = table_text_width(txt);

    if (table_text_width(s) > w)
        table_count_cut();

    if (last)
        fputs(txt, fp);
    else
        fprintf(fp, "%s%*s", txt, (int)(tw < w ? w - tw + EVENT_GAP : EVENT_GAP), "");
    free(cut);
}

/* A first line (the titles', or an event's): time, kind, target, then the
 * key when there is room, then the holder when holder; a line that would
 * still be wider than width (a terminal too narrow for time, kind and
 * target) is cut, marked. */
static void
put_first_line(FILE *fp, const char *const *cells, const struct layout *l, bool holder,
               size_t width)
{
    size_t last = holder ? EV_HOLDER : l->key_inline ? EV_KEY : EV_TARGET, len = 0;
    char *line = NULL, *cut;
    FILE *mem = open_memstream(&line, &len);

    if (mem == NULL)
        return;
    for (size_t c = EV_TIME; c <= last; c++)
        put_cell(mem, cells[c], c == EV_KEY && !holder ? l->room : l->w[c], c == EV_KEY,
                 c == last);
    if (fclose(mem) == 0 && (cut = table_cut(line, width, false)) != NULL) {
        fprintf(fp, "%s\n", cut);
        free(cut);
    }
    free(line);
}

/* "name text" as a paragraph under an event. */
static void
put_named(FILE *fp, size_t width, const char *name, const char *text)
{
    size_t nl = strlen(name), tl = strlen(text);
    char *p = malloc(nl + 1 + tl + 1);

    if (p == NULL)
        return;
    memcpy(p, name, nl);
    p[nl] = ' ';
    memcpy(p + nl + 1, text, tl + 1);
    table_paragraph(fp, width, EVENT_INDENT, p);
    free(p);
}

int
events_table_print(const struct table *t, FILE *fp, size_t width, bool titles)
{
    const char *title[EV_NCOLS];
    struct layout l;
    bool any = false;

    if (layout(t, width, &l) == -1) {
        free(l.keyw);
        free(l.holderw);
        return -1;
    }
    for (size_t r = 0; r < t->nrows; r++)
        any |= holder_fits(&l, r, l.w[EV_KEY]);
    for (size_t c = 0; c < EV_NCOLS; c++)
        title[c] = t->cols[c].title;
    if (titles)
        put_first_line(fp, title, &l, any, width);
    for (size_t r = 0; r < t->nrows; r++) {
        const char *const *cells = (const char *const *)t->cells + r * t->ncols;
        bool inline_holder = holder_fits(&l, r, l.w[EV_KEY]);

        put_first_line(fp, cells, &l, inline_holder, width);
        if (!l.key_inline && cells[EV_KEY][0] != '\0')
            put_named(fp, width, "key", cells[EV_KEY]);
        if (!inline_holder && cells[EV_HOLDER][0] != '\0')
            put_named(fp, width, "holder", cells[EV_HOLDER]);
        table_paragraph(fp, width, EVENT_INDENT, cells[EV_DETAIL]);
    }
    free(l.keyw);
    free(l.holderw);
    return 0;
}

/* An event of a page, and where it came: the order of the table. */
struct row_order {
    const json_t *e;
    int64_t at_ms;
    size_t i;
};

/* By time, then as the agent recorded them: lockctl's forced releases
 * carry the time of the release, which the agent may learn after newer
 * events (from the audit stream). */
static int
by_time(const void *a, const void *b)
{
    const struct row_order *x = a, *y = b;

    if (x->at_ms != y->at_ms)
        return x->at_ms < y->at_ms ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

long
events_table_add(struct table *t, const json_t *doc, int64_t since_ms)
{
    const json_t *events = json_object_get(doc, "events"), *e;
    struct row_order *rows;
    size_t i, n = 0;
    long rc = 0;

    if ((rows = calloc(json_array_size(events) + 1, sizeof(*rows))) == NULL)
        return -1;
    json_array_foreach(events, i, e) {
        int64_t at = json_integer_value(json_object_get(e, "time_ms"));

        if (!json_is_object(e) || at < since_ms)
            continue;
        rows[n].e = e;
        rows[n].at_ms = at;
        rows[n].i = i;
        n++;
    }
    qsort(rows, n, sizeof(*rows), by_time);
    for (i = 0; i < n && rc == 0; i++)
        if (add_row(t, rows[i].e) == -1)
            rc = -1;
    free(rows);
    return rc == 0 ? (long)n : -1;
}
