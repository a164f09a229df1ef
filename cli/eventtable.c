/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * eventtable.c - lockctl events' table: the events of an /api/v1/events
 * answer as rows (time, kind, target, key, holder, detail), oldest first,
 * so the newest is last, next to the prompt.
 *
 * The key comes from its lossless key_escaped form (with "…" when the
 * agent's ring kept only its first bytes, key_cut), the holder from
 * holder_escaped, shown as list and show show one; every cell is made
 * safe for a terminal by table.c, so a key's newline, escape sequence or
 * bidirectional override can neither break a row nor move the cursor.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/lockctl.h"

const struct table_col events_table_cols[] = {
    { "TIME (UTC)", 14, 0, 0 },
    { "KIND", 16, 0, 0 },
    { "TARGET", 12, 0, 6 },
    { "KEY", 0, TABLE_FLEX | TABLE_MIDDLE, 0 },
    { "HOLDER", 18, 0, 8 },
    { "DETAIL", 30, TABLE_WRAP, 12 },
};
const size_t events_table_ncols = sizeof(events_table_cols) / sizeof(events_table_cols[0]);

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

long
events_table_add(struct table *t, const json_t *doc, int64_t since_ms)
{
    const json_t *e;
    size_t i;
    long n = 0;

    json_array_foreach(json_object_get(doc, "events"), i, e) {
        if (!json_is_object(e) ||
            json_integer_value(json_object_get(e, "time_ms")) < since_ms)
            continue;
        if (add_row(t, e) == -1)
            return -1;
        n++;
    }
    return n;
}
