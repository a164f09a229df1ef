/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cycles.c - the wait-for graph's cycle finder (collectors/graph/
 * cycles.h): one cycle per strongly connected set, its least node first,
 * the same cycle whatever order the edges came in, no cycle for a chain
 * or a self edge, the shortest cycle through the least node, and the
 * caps counted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "collectors/graph/cycles.h"

struct found {
    size_t n;                   /* cycles */
    char text[8][256];          /* "a>b>" with labels "a(1)b(2)" */
};

static void
collect(const uint32_t *nodes, const uint32_t *labels, size_t n, void *arg)
{
    struct found *f = arg;
    char *t = f->text[f->n < 8 ? f->n : 7];
    size_t i, len = 0;

    t[0] = '\0';
    for (i = 0; i < n; i++)
        len += (size_t)snprintf(t + len, 256 - len, "%u(%u)", nodes[i], labels[i]);
    f->n++;
}

static uint32_t
node(struct cycles *g, const char *name)
{
    long i = cycles_node(g, name, strlen(name));

    assert_true(i >= 0);
    return (uint32_t)i;
}

static void
edge(struct cycles *g, const char *a, const char *b, uint32_t label)
{
    uint32_t from = node(g, a), to = node(g, b);   /* a interned first */

    assert_int_equal(cycles_edge(g, from, to, label), 0);
}

static void
two_waiters_one_cycle(void **state)
{
    struct cycles *g = cycles_new();
    struct found f = { 0 };

    (void)state;
    edge(g, "uuid-b:7", "uuid-a:1", 20);    /* b waits for lock 20, held by a */
    edge(g, "uuid-a:1", "uuid-b:7", 10);
    assert_int_equal(cycles_find(g, collect, &f), 1);
    /* the least name first: uuid-a:1 is node 1, waiting on label 10 */
    assert_string_equal(f.text[0], "1(10)0(20)");
    cycles_free(g);
}

static void
chain_and_self_edge_are_no_cycle(void **state)
{
    struct cycles *g = cycles_new();
    struct found f = { 0 };

    (void)state;
    edge(g, "a", "b", 1);
    edge(g, "b", "c", 2);
    edge(g, "c", "c", 3);
    edge(g, "d", "a", 4);
    assert_int_equal(cycles_find(g, collect, &f), 0);
    assert_int_equal(f.n, 0);
    cycles_free(g);
}

static void
same_cycle_in_any_order(void **state)
{
    const char *e[][2] = { { "p", "q" }, { "q", "r" }, { "r", "p" }, { "q", "p" }, { "x", "p" } };
    char first[256];
    size_t round, i;

    (void)state;
    for (round = 0; round < 5; round++) {
        struct cycles *g = cycles_new();
        struct found f = { 0 };

        /* nodes interned in a fixed order, edges added rotated */
        node(g, "p");
        node(g, "q");
        node(g, "r");
        node(g, "x");
        for (i = 0; i < 5; i++) {
            size_t k = (i + round) % 5;

            edge(g, e[k][0], e[k][1], (uint32_t)k);
        }
        assert_int_equal(cycles_find(g, collect, &f), 1);
        if (round == 0)
            snprintf(first, sizeof(first), "%s", f.text[0]);
        assert_string_equal(f.text[0], first);
        cycles_free(g);
    }
    /* p q r with q -> p too: the shortest cycle through p is p q */
    assert_string_equal(first, "0(0)1(3)");
}

static void
two_sets_two_cycles(void **state)
{
    struct cycles *g = cycles_new();
    struct found f = { 0 };

    (void)state;
    edge(g, "a", "b", 1);
    edge(g, "b", "a", 2);
    edge(g, "c", "d", 3);
    edge(g, "d", "e", 4);
    edge(g, "e", "c", 5);
    edge(g, "b", "c", 6);       /* joins them one way only */
    assert_int_equal(cycles_find(g, collect, &f), 2);
    cycles_free(g);
}

static void
caps_are_counted(void **state)
{
    struct cycles *g = cycles_new();
    struct cycles_stats st;
    struct found f = { 0 };
    char name[32];
    size_t i;

    (void)state;
    for (i = 0; i < CYCLES_NODES_MAX; i++) {
        snprintf(name, sizeof(name), "n%zu", i);
        assert_true(cycles_node(g, name, strlen(name)) >= 0);
    }
    assert_int_equal(cycles_node(g, "one more", 8), -1);
    assert_int_equal(cycles_node(g, "n5", 2), 5);   /* known ones still found */
    /* a ring longer than CYCLE_LEN_MAX: found, cut, not reported */
    for (i = 0; i <= CYCLE_LEN_MAX; i++)
        assert_int_equal(cycles_edge(g, (uint32_t)i, (uint32_t)((i + 1) % (CYCLE_LEN_MAX + 1)),
                                     (uint32_t)i), 0);
    for (i = CYCLE_LEN_MAX + 1; i < CYCLES_EDGES_MAX; i++)
        assert_int_equal(cycles_edge(g, 100, 200, (uint32_t)i), 0);
    assert_int_equal(cycles_edge(g, 300, 400, 1), -1);
    assert_int_equal(cycles_find(g, collect, &f), 0);
    cycles_stats(g, &st);
    assert_int_equal(st.nodes, CYCLES_NODES_MAX);
    assert_int_equal(st.nodes_dropped, 1);
    assert_int_equal(st.edges_dropped, 1);
    assert_int_equal(st.cut, 1);
    cycles_reset(g);
    cycles_stats(g, &st);
    assert_int_equal(st.nodes, 0);
    assert_int_equal(st.cut, 0);
    cycles_free(g);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_waiters_one_cycle),
        cmocka_unit_test(chain_and_self_edge_are_no_cycle),
        cmocka_unit_test(same_cycle_in_any_order),
        cmocka_unit_test(two_sets_two_cycles),
        cmocka_unit_test(caps_are_counted),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
