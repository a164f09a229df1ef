/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lockjson.c - lock data as JSON values (see lockjson.h).
 */
#include "collectors/locks/lockjson.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/keytext.h"
#include "collectors/locks/snapshot.h"

static json_t *
bytes(const char *p, size_t n, bool escaped)
{
    char stack[512], *tmp = stack;
    size_t need = escaped ? KEYTEXT_PERCENT_MAX(n) : KEYTEXT_SANITIZED_MAX(n), len;
    json_t *j;

    if (need > sizeof(stack) && (tmp = malloc(need)) == NULL)
        return NULL;
    len = escaped ? keytext_percent(tmp, need, p, n) : keytext_sanitize(tmp, need, p, n);
    j = json_stringn(tmp, len);
    if (tmp != stack)
        free(tmp);
    return j;
}

json_t *
lockjson_text(const char *p, size_t n)
{
    return bytes(p, n, false);
}

json_t *
lockjson_escaped(const char *p, size_t n)
{
    return bytes(p, n, true);
}

json_t *
lockjson_time(int64_t ms)
{
    char date[32], buf[48];
    time_t sec;
    struct tm tm;

    if (ms <= 0)
        return json_null();
    sec = (time_t)(ms / 1000);
    if (gmtime_r(&sec, &tm) == NULL ||
        strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        return json_null();
    snprintf(buf, sizeof(buf), "%s.%03dZ", date, (int)(ms % 1000));
    return json_string(buf);
}

json_t *
lockjson_states(uint8_t states)
{
    json_t *a = json_array();

    if (a == NULL)
        return NULL;
    json_array_append_new(a, json_string("held"));
    if (states & LOCK_LEAKED)
        json_array_append_new(a, json_string("leaked"));
    if (states & LOCK_LONG)
        json_array_append_new(a, json_string("long"));
    if (states & LOCK_REENTRANT_HIGH)
        json_array_append_new(a, json_string("reentrant_high"));
    return a;
}
