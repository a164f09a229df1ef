/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_sinks.c - what each sink format sends: bodies, headers, Standard
 * Webhooks signatures (the spec's own test vector), Slack's escaping and
 * cuts, Alertmanager's endsAt and endpoint.  Pure: no network.
 */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "alerts/sinks/sinks.h"

#define NOW 1800000000000LL     /* 2027-01-15T08:00:00.000Z */

static struct alert
mk(enum alert_name name, const char *key, const char *summary)
{
    struct alert a;

    memset(&a, 0, sizeof(a));
    a.fp = 0x3e272086d6797205ULL;
    a.name = name;
    a.target = (char *)"main";
    a.class_ = (char *)"lock:x:*";
    a.key = (char *)key;
    a.summary = (char *)summary;
    a.description = (char *)"the description";
    a.state = ALERT_FIRING;
    a.starts_ms = NOW - 5000;
    return a;
}

static json_t *
render(const struct sink_type *t, enum alert_event_kind kind, const struct alert *const *list,
       size_t n)
{
    struct sink_batch b = { .kind = kind, .alerts = list, .n = n, .now_ms = NOW,
                            .generator_url = "http://127.0.0.1:9717/api/v1/alerts" };
    char *body = NULL;
    size_t len = 0;
    json_error_t err;
    json_t *j;

    assert_int_equal(t->render(&b, &body, &len), 0);
    assert_int_equal(strlen(body), len);
    j = json_loadb(body, len, 0, &err);
    if (j == NULL)
        fail_msg("not JSON: %s: %s", err.text, body);
    free(body);
    return j;
}

static void
standard_webhooks_vector(void **state)
{
    /* the example of the Standard Webhooks spec and its libraries */
    struct sink_key key;
    char sig[128];
    const char *body = "{\"test\": 2432232314}";

    (void)state;
    assert_int_equal(sink_signing_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &key), 0);
    assert_int_equal(key.len, 24);
    assert_int_equal(sink_sign(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body,
                               strlen(body), sig, sizeof(sig)), 0);
    assert_string_equal(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    sink_key_clear(&key);
    assert_null(key.bytes);

    /* a plain secret is the key, byte for byte */
    assert_int_equal(sink_signing_key("plain secret", &key), 0);
    assert_int_equal(sink_sign(&key, "msg_1", 1700000000, "hello", 5, sig, sizeof(sig)), 0);
    assert_string_equal(sig, "v1,ZCL1n/lRnKO2FHuJCJ5CXmHWOtRLgCCB8aAwR0YCJ/A=");
    sink_key_clear(&key);

    /* whsec_ with a bad rest is refused, not silently used */
    errno = 0;
    assert_int_equal(sink_signing_key("whsec_not base64!", &key), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(sink_signing_key("whsec_", &key), -1);
}

static void
generic_body_and_headers(void **state)
{
    struct alert a = mk(ALERT_LOCK_LEAKED, "lock:x:1", "Lock lock:x:1 leaked");
    struct alert r = mk(ALERT_LOCK_LEAKED, "lock:x:2", "Lock lock:x:2 leaked");
    const struct alert *list[] = { &a };
    const struct alert *rlist[] = { &r };
    struct sink_headers h;
    struct sink_key key, none = { NULL, 0 };
    json_t *j, *al;
    char *body = NULL;
    size_t len;

    (void)state;
    j = render(&sink_generic, EV_FIRING, list, 1);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "firing");
    assert_string_equal(json_string_value(json_object_get(j, "reason")), "new");
    assert_string_equal(json_string_value(json_object_get(j, "version")), "1");
    al = json_array_get(json_object_get(j, "alerts"), 0);
    assert_string_equal(json_string_value(json_object_get(al, "status")), "firing");
    assert_string_equal(json_string_value(json_object_get(al, "fingerprint")),
                        "3e272086d6797205");
    assert_string_equal(json_string_value(json_object_get(al, "startsAt")),
                        "2027-01-15T07:59:55.000Z");
    assert_null(json_object_get(al, "endsAt"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(al, "labels"),
                                                          "alertname")), "LockLeaked");
    assert_string_equal(json_string_value(json_object_get(json_object_get(al, "labels"),
                                                          "key")), "lock:x:1");
    assert_string_equal(json_string_value(json_object_get(json_object_get(al, "labels"),
                                                          "severity")), "warning");
    assert_int_equal(json_object_size(json_object_get(al, "labels")), 5);
    assert_string_equal(json_string_value(json_object_get(json_object_get(al, "annotations"),
                                                          "summary")), "Lock lock:x:1 leaked");
    assert_null(json_object_get(j, "fence"));       /* no election: no fence */
    json_decref(j);
    {
        struct sink_batch fb = { .kind = EV_FIRING, .alerts = list, .n = 1, .now_ms = NOW,
                                 .fence = 1733140000123456LL };

        assert_int_equal(sink_generic.render(&fb, &body, &len), 0);
        j = json_loadb(body, len, 0, NULL);
        free(body);
        assert_int_equal(json_integer_value(json_object_get(j, "fence")), 1733140000123456LL);
        json_decref(j);
    }

    r.state = ALERT_RESOLVED;
    r.ends_ms = NOW;
    j = render(&sink_generic, EV_RESOLVED, rlist, 1);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "resolved");
    al = json_array_get(json_object_get(j, "alerts"), 0);
    assert_string_equal(json_string_value(json_object_get(al, "endsAt")),
                        "2027-01-15T08:00:00.000Z");
    json_decref(j);

    assert_int_equal(sink_signing_key("s3cret", &key), 0);
    assert_int_equal(sink_generic.headers(&key, "msg_1", 1700000000, "{}", 2, &h), 0);
    assert_int_equal(h.n, 4);
    assert_string_equal(h.line[0], "Content-Type: application/json");
    assert_string_equal(h.line[1], "webhook-id: msg_1");
    assert_string_equal(h.line[2], "webhook-timestamp: 1700000000");
    assert_int_equal(strncmp(h.line[3], "webhook-signature: v1,", 22), 0);
    sink_key_clear(&key);
    /* no secret_file: ids and timestamps, no signature */
    assert_int_equal(sink_generic.headers(&none, "msg_1", 1700000000, "{}", 2, &h), 0);
    assert_int_equal(h.n, 3);
    /* render output is exactly what is signed: nothing re-serialises it */
    {
        struct sink_batch b = { .kind = EV_FIRING, .alerts = list, .n = 1, .now_ms = NOW };

        assert_int_equal(sink_generic.render(&b, &body, &len), 0);
        assert_null(strstr(body, "generatorURL"));
        free(body);
    }
}

static void
slack_text(void **state)
{
    struct alert a = mk(ALERT_LOCK_LEAKED, "lock:<!here>&", "Lock lock:<!here>&<@U1> leaked");
    const struct alert *one[] = { &a };
    const struct alert **many;
    char big[6000];
    const char *text;
    json_t *j;
    size_t i;

    (void)state;
    j = render(&sink_slack, EV_FIRING, one, 1);
    assert_int_equal(json_object_size(j), 2);
    /* plain text: mrkdwn has no escape for the * of lock:order:* */
    assert_true(json_is_false(json_object_get(j, "mrkdwn")));
    text = json_string_value(json_object_get(j, "text"));
    assert_non_null(text);
    assert_non_null(strstr(text, "[FIRING] LockLeaked: "));
    assert_non_null(strstr(text, "lock:&lt;!here&gt;&amp;&lt;@U1&gt;"));
    assert_null(strstr(text, "<!here>"));
    json_decref(j);

    /* a trial: a key with a newline wrote an alert line of its own (4
     * alerts said, 5 bullets); each line break quoted is written out */
    {
        struct alert f = mk(ALERT_LOCK_LEAKED, "lock:a\n\xe2\x80\xa2 LockLeaked: lock:forged",
                            "Lock lock:a\n\xe2\x80\xa2 LockLeaked: Lock lock:forged\r\xe2\x80\xa8"
                            "\xe2\x80\xa9 leaked");
        const struct alert *two[] = { &f, &a };
        const char *p;
        size_t lines = 0;

        a.summary = (char *)"s";
        j = render(&sink_slack, EV_FIRING, two, 2);
        text = json_string_value(json_object_get(j, "text"));
        for (p = text; (p = strchr(p, '\n')) != NULL; p++)
            lines++;
        assert_int_equal(lines, 3);     /* after the heading, one line per alert, the link */
        assert_non_null(strstr(text, "Lock lock:a\\n\xe2\x80\xa2 LockLeaked: Lock "
                               "lock:forged\\r\\u2028\\u2029 leaked"));
        assert_null(strstr(text, "\r"));
        json_decref(j);
        /* a key's own backslash-n is not a line break written out */
        f.summary = (char *)"Lock lock:a\\n leaked";
        j = render(&sink_slack, EV_FIRING, two, 2);
        text = json_string_value(json_object_get(j, "text"));
        assert_non_null(strstr(text, "Lock lock:a\\\\n leaked"));
        assert_null(strstr(text, "\xe2\x80\xa8"));
        json_decref(j);
        a.summary = (char *)"Lock lock:<!here>&<@U1> leaked";
    }

    /* a long summary: cut under the cap, still valid UTF-8 (json_loadb
     * would refuse it otherwise) */
    for (i = 0; i + 3 <= sizeof(big) - 1; i += 3)
        memcpy(big + i, "\xe2\x98\x83", 3);     /* U+2603 */
    big[i] = '\0';
    a.summary = big;
    j = render(&sink_slack, EV_FIRING, one, 1);
    assert_true(strlen(json_string_value(json_object_get(j, "text"))) <= 3500);
    json_decref(j);

    /* 30 alerts: 20 lines and "and 10 more" */
    a.summary = (char *)"s";
    many = calloc(30, sizeof(*many));
    for (i = 0; i < 30; i++)
        many[i] = &a;
    j = render(&sink_slack, EV_RESOLVED, many, 30);
    text = json_string_value(json_object_get(j, "text"));
    assert_non_null(strstr(text, "[RESOLVED]"));
    assert_non_null(strstr(text, "30 lockwatch alerts"));
    assert_non_null(strstr(text, "and 10 more"));
    json_decref(j);
    free(many);
}

static void
alertmanager_body(void **state)
{
    struct alert a = mk(ALERT_LOCK_LEAKED, "lock:x:1", "s");
    struct alert r = mk(ALERT_LOCK_TARGET_DOWN, NULL, "down");
    const struct alert *list[] = { &a, &r };
    json_t *j, *x;
    char *url;

    (void)state;
    r.class_ = NULL;
    r.state = ALERT_RESOLVED;
    r.ends_ms = NOW - 1000;
    j = render(&sink_alertmanager, EV_REFRESH, list, 2);
    assert_true(json_is_array(j));
    assert_int_equal(json_array_size(j), 2);
    x = json_array_get(j, 0);
    assert_string_equal(json_string_value(json_object_get(x, "endsAt")),
                        "2027-01-15T08:04:00.000Z");           /* now + 4m */
    assert_string_equal(json_string_value(json_object_get(x, "generatorURL")),
                        "http://127.0.0.1:9717/api/v1/alerts");
    assert_null(json_object_get(x, "status"));
    x = json_array_get(j, 1);
    assert_string_equal(json_string_value(json_object_get(x, "endsAt")),
                        "2027-01-15T07:59:59.000Z");           /* when it resolved */
    assert_int_equal(json_object_size(json_object_get(x, "labels")), 3);   /* + severity */
    json_decref(j);

    url = sink_alertmanager.endpoint("http://am:9093");
    assert_string_equal(url, "http://am:9093/api/v2/alerts");
    free(url);
    url = sink_alertmanager.endpoint("http://am:9093/prefix/");
    assert_string_equal(url, "http://am:9093/prefix/api/v2/alerts");
    free(url);
    url = sink_alertmanager.endpoint("http://am:9093/api/v2/alerts");
    assert_string_equal(url, "http://am:9093/api/v2/alerts");
    free(url);
}

static void
the_table(void **state)
{
    (void)state;
    assert_ptr_equal(sink_type_of(SINK_GENERIC), &sink_generic);
    assert_ptr_equal(sink_type_of(SINK_SLACK), &sink_slack);
    assert_ptr_equal(sink_type_of(SINK_ALERTMANAGER), &sink_alertmanager);
    assert_string_equal(sink_type_of(SINK_SLACK)->name, config_sink_format_str(SINK_SLACK));
    assert_string_equal(sink_type_of(SINK_ALERTMANAGER)->name,
                        config_sink_format_str(SINK_ALERTMANAGER));
    /* Alertmanager dedupes and repeats itself; the others never refresh */
    assert_false(sink_alertmanager.kinds & SINK_KIND(EV_REPEAT));
    assert_true(sink_alertmanager.kinds & SINK_KIND(EV_REFRESH));
    assert_false(sink_generic.kinds & SINK_KIND(EV_REFRESH));
    assert_false(sink_slack.kinds & SINK_KIND(EV_REFRESH));
}

/* A resolved alert says what it was about and since when, not its firing
 * text again (issue 24). */
static void
slack_resolved_says_since_when(void **state)
{
    struct alert r = mk(ALERT_LOCK_LEAKED, "lock:x:1", "Lock lock:x:1 has no TTL");
    const struct alert *one[1] = { &r };
    const char *text;
    json_t *j;

    (void)state;
    r.state = ALERT_RESOLVED;
    r.starts_ms = NOW - 182000;
    r.ends_ms = NOW;
    j = render(&sink_slack, EV_RESOLVED, one, 1);
    text = json_string_value(json_object_get(j, "text"));
    assert_non_null(strstr(text, "[RESOLVED] LockLeaked: lock lock:x:1 on main: resolved "
                                 "after 3m02s (firing since 2027-01-15T07:56:58Z)"));
    assert_null(strstr(text, "has no TTL"));
    assert_null(strstr(text, "the description"));
    json_decref(j);
}

/* Two replicas' posts of one alert: the same labels (one fingerprint at
 * Alertmanager), the replica only as an annotation. */
static void
alertmanager_replicas_differ_only_in_an_annotation(void **state)
{
    struct alert a = mk(ALERT_LOCK_LEAKED, "lock:x:1", "Lock lock:x:1 leaked");
    const struct alert *list[] = { &a };
    const char *names[] = { "a", "b" };
    json_t *al[2], *j[2];

    (void)state;
    for (int i = 0; i < 2; i++) {
        struct sink_batch b = { .kind = EV_FIRING, .alerts = list, .n = 1, .now_ms = NOW,
                                .generator_url = "http://x/api/v1/alerts",
                                .replica = names[i] };
        char *body = NULL;
        size_t len = 0;

        assert_int_equal(sink_alertmanager.render(&b, &body, &len), 0);
        j[i] = json_loadb(body, len, 0, NULL);
        assert_non_null(j[i]);
        free(body);
        al[i] = json_array_get(j[i], 0);
        assert_string_equal(json_string_value(json_object_get(
            json_object_get(al[i], "annotations"), "replica")), names[i]);
        assert_null(json_object_get(json_object_get(al[i], "labels"), "replica"));
    }
    assert_true(json_equal(json_object_get(al[0], "labels"), json_object_get(al[1], "labels")));
    assert_null(json_object_get(al[0], "fence"));
    json_decref(j[0]);
    json_decref(j[1]);
}

/* [rules] runbook_url: each alert's name in it, as an annotation of the
 * JSON sinks and a line of a Slack message of one alert name. */
static void
runbook_url_names_the_alert(void **state)
{
    struct alert a = mk(ALERT_LOCK_LEAKED, "lock:x:1", "s");
    struct alert d = mk(ALERT_LOCK_TARGET_DOWN, NULL, "down");
    const struct alert *one[] = { &a }, *two[] = { &a, &d };
    const struct sink_type *json_sinks[] = { &sink_generic, &sink_alertmanager };
    const char *text;
    json_t *j, *x;

    (void)state;
    for (size_t k = 0; k < 2; k++) {
        struct sink_batch b = { .kind = EV_FIRING, .alerts = one, .n = 1, .now_ms = NOW,
                                .runbook = "https://wiki.example/rb/{alertname}?a=1&n={alertname}" };
        char *body = NULL;
        size_t len = 0;

        assert_int_equal(json_sinks[k]->render(&b, &body, &len), 0);
        assert_non_null(j = json_loadb(body, len, 0, NULL));
        free(body);
        x = json_is_array(j) ? json_array_get(j, 0) : json_array_get(json_object_get(j, "alerts"), 0);
        assert_non_null(x);
        assert_string_equal(json_string_value(json_object_get(json_object_get(x, "annotations"),
                                                              "runbook_url")),
                            "https://wiki.example/rb/LockLeaked?a=1&n=LockLeaked");
        json_decref(j);
    }
    {
        struct sink_batch b = { .kind = EV_FIRING, .alerts = one, .n = 1, .now_ms = NOW,
                                .runbook = "https://wiki.example/lockwatch#{alertname}&x" };
        char *body = NULL;
        size_t len = 0;

        assert_int_equal(sink_slack.render(&b, &body, &len), 0);
        assert_non_null(j = json_loadb(body, len, 0, NULL));
        text = json_string_value(json_object_get(j, "text"));
        assert_non_null(strstr(text, "\nRunbook: https://wiki.example/lockwatch#LockLeaked&amp;x"));
        json_decref(j);
        free(body);
        /* two alert names: no one runbook to give */
        b.alerts = two;
        b.n = 2;
        assert_int_equal(sink_slack.render(&b, &body, &len), 0);
        assert_null(strstr(body, "Runbook"));
        free(body);
    }
    /* unset: no annotation */
    j = render(&sink_alertmanager, EV_FIRING, one, 1);
    assert_null(json_object_get(json_object_get(json_array_get(j, 0), "annotations"),
                                "runbook_url"));
    json_decref(j);
}

/* watchdog = on: LockwatchWatchdog after the alerts, alone when none
 * fire; each replica its own (its name a label), valid 4 minutes. */
static void
alertmanager_watchdog(void **state)
{
    struct alert a = mk(ALERT_LOCK_LEAKED, "lock:x:1", "s");
    const struct alert *one[] = { &a };
    struct sink_batch b = { .kind = EV_REFRESH, .alerts = one, .n = 1, .now_ms = NOW,
                            .replica = "b", .watchdog_since_ms = NOW - 3600000 };
    char *body = NULL;
    size_t len = 0;
    json_t *j, *w, *l;

    (void)state;
    assert_int_equal(sink_alertmanager.render(&b, &body, &len), 0);
    assert_non_null(j = json_loadb(body, len, 0, NULL));
    free(body);
    assert_int_equal(json_array_size(j), 2);
    w = json_array_get(j, 1);
    l = json_object_get(w, "labels");
    assert_int_equal(json_object_size(l), 3);
    assert_string_equal(json_string_value(json_object_get(l, "alertname")), "LockwatchWatchdog");
    assert_string_equal(json_string_value(json_object_get(l, "severity")), "none");
    assert_string_equal(json_string_value(json_object_get(l, "replica")), "b");
    assert_string_equal(json_string_value(json_object_get(w, "startsAt")),
                        "2027-01-15T07:00:00.000Z");
    assert_string_equal(json_string_value(json_object_get(w, "endsAt")),
                        "2027-01-15T08:04:00.000Z");
    assert_non_null(strstr(json_string_value(json_object_get(json_object_get(w, "annotations"),
                                                             "description")), "dead man's switch"));
    json_decref(j);
    /* nothing else firing: the watchdog alone; no replica, no label */
    b.n = 0;
    b.replica = NULL;
    assert_int_equal(sink_alertmanager.render(&b, &body, &len), 0);
    assert_non_null(j = json_loadb(body, len, 0, NULL));
    free(body);
    assert_int_equal(json_array_size(j), 1);
    assert_int_equal(json_object_size(json_object_get(json_array_get(j, 0), "labels")), 2);
    json_decref(j);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(standard_webhooks_vector),
        cmocka_unit_test(generic_body_and_headers),
        cmocka_unit_test(slack_text),
        cmocka_unit_test(slack_resolved_says_since_when),
        cmocka_unit_test(alertmanager_body),
        cmocka_unit_test(alertmanager_replicas_differ_only_in_an_annotation),
        cmocka_unit_test(the_table),
        cmocka_unit_test(runbook_url_names_the_alert),
        cmocka_unit_test(alertmanager_watchdog),
    };

    return cmocka_run_group_tests_name("sinks", tests, NULL, NULL);
}
