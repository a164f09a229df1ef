/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cycles.c - the bounded named graph and its cycles (see cycles.h).
 *
 * Nodes are interned in an open-addressing table of twice the node cap;
 * edges are kept as added.  cycles_find() ranks the nodes by name, sorts
 * the edges as one 64-bit key each (from, rank of to, label), which makes
 * the adjacency lists and drops repeated edges, finds the strongly
 * connected components with Tarjan's algorithm (iterative: a chain of
 * 8192 waiters must not exhaust the stack), and in each component of two
 * or more nodes takes a breadth-first search from its least node back to
 * itself.  Everything is O(nodes + edges log edges) per pass.
 */
#include "collectors/graph/cycles.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS (2 * CYCLES_NODES_MAX)    /* power of two */
#define NIL UINT32_MAX

struct node {
    char *name;
    size_t len;
    uint64_t hash;
};

struct edge {
    uint32_t from, to, label;
};

struct cycles {
    struct node nodes[CYCLES_NODES_MAX];
    uint32_t slot[SLOTS];
    size_t nnodes;
    struct edge *edges;         /* CYCLES_EDGES_MAX */
    size_t nedges;
    uint64_t nodes_dropped, edges_dropped, cut;
};

/* The scratch of one cycles_find(), all allocated together. */
struct work {
    uint32_t *rank, *first, *adj, *adjlabel;    /* CSR adjacency by rank order */
    uint32_t *index, *low, *comp, *stack, *call, *callpos;
    bool *onstack;
    uint32_t *queue, *parent, *plabel;
    uint64_t *keys;
};

struct cycles *
cycles_new(void)
{
    struct cycles *g = calloc(1, sizeof(*g));

    if (g == NULL)
        return NULL;
    if ((g->edges = malloc(CYCLES_EDGES_MAX * sizeof(*g->edges))) == NULL) {
        free(g);
        return NULL;
    }
    memset(g->slot, 0xff, sizeof(g->slot));
    return g;
}

void
cycles_reset(struct cycles *g)
{
    size_t i;

    for (i = 0; i < g->nnodes; i++)
        free(g->nodes[i].name);
    g->nnodes = 0;
    g->nedges = 0;
    g->nodes_dropped = g->edges_dropped = g->cut = 0;
    memset(g->slot, 0xff, sizeof(g->slot));
}

void
cycles_free(struct cycles *g)
{
    if (g == NULL)
        return;
    cycles_reset(g);
    free(g->edges);
    free(g);
}

static uint64_t
hash_bytes(const char *p, size_t n)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);

    while (n-- > 0)
        h = (h ^ (unsigned char)*p++) * UINT64_C(0x100000001b3);
    return h;
}

long
cycles_node(struct cycles *g, const char *id, size_t len)
{
    uint64_t h = hash_bytes(id, len);
    size_t s = h & (SLOTS - 1);
    struct node *n;

    for (; g->slot[s] != NIL; s = (s + 1) & (SLOTS - 1)) {
        n = &g->nodes[g->slot[s]];
        if (n->hash == h && n->len == len && memcmp(n->name, id, len) == 0)
            return (long)g->slot[s];
    }
    if (g->nnodes == CYCLES_NODES_MAX) {
        g->nodes_dropped++;
        return -1;
    }
    n = &g->nodes[g->nnodes];
    if ((n->name = malloc(len ? len : 1)) == NULL) {
        g->nodes_dropped++;
        return -1;
    }
    memcpy(n->name, id, len);
    n->len = len;
    n->hash = h;
    g->slot[s] = (uint32_t)g->nnodes;
    return (long)g->nnodes++;
}

const char *
cycles_name(const struct cycles *g, uint32_t i, size_t *len)
{
    *len = g->nodes[i].len;
    return g->nodes[i].name;
}

int
cycles_edge(struct cycles *g, uint32_t from, uint32_t to, uint32_t label)
{
    if (from >= g->nnodes || to >= g->nnodes)
        return -1;
    if (from == to)
        return 0;
    if (g->nedges == CYCLES_EDGES_MAX) {
        g->edges_dropped++;
        return -1;
    }
    g->edges[g->nedges++] = (struct edge){ from, to, label };
    return 0;
}

void
cycles_stats(const struct cycles *g, struct cycles_stats *st)
{
    st->nodes = g->nnodes;
    st->edges = g->nedges;
    st->nodes_dropped = g->nodes_dropped;
    st->edges_dropped = g->edges_dropped;
    st->cut = g->cut;
}

/* ---- one search -------------------------------------------------------------- */

static const struct cycles *sort_graph;     /* for by_name: qsort has no argument */

static int
by_name(const void *a, const void *b)
{
    const struct node *x = &sort_graph->nodes[*(const uint32_t *)a];
    const struct node *y = &sort_graph->nodes[*(const uint32_t *)b];
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->name, y->name, n);

    return c != 0 ? c : x->len < y->len ? -1 : x->len > y->len;
}

static int
by_key(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static void
work_free(struct work *w)
{
    free(w->rank);
    free(w->keys);
}

/* Everything one search needs, in two allocations. */
static int
work_alloc(struct work *w, size_t n, size_t e)
{
    uint32_t *p;

    memset(w, 0, sizeof(*w));
    w->rank = p = malloc((13 * (n + 1) + 2 * (e + 1)) * sizeof(uint32_t) + (n + 1));
    w->keys = malloc((e + 1) * sizeof(uint64_t));
    if (p == NULL || w->keys == NULL) {
        work_free(w);
        return -1;
    }
    w->first = p + (n + 1);
    w->index = p + 2 * (n + 1);
    w->low = p + 3 * (n + 1);
    w->comp = p + 4 * (n + 1);
    w->stack = p + 5 * (n + 1);
    w->call = p + 6 * (n + 1);
    w->callpos = p + 7 * (n + 1);
    w->queue = p + 8 * (n + 1);
    w->parent = p + 9 * (n + 1);
    w->plabel = p + 10 * (n + 1);
    w->adj = p + 13 * (n + 1);
    w->adjlabel = w->adj + (e + 1);
    w->onstack = (bool *)(w->adjlabel + (e + 1));
    return 0;
}

/* Nodes renumbered by name (rank), edges sorted into CSR lists of ranks
 * with repeats dropped.  Returns the edges kept. */
static size_t
build_adjacency(const struct cycles *g, struct work *w)
{
    uint32_t *byname = w->queue;    /* scratch until the searches */
    size_t i, n = g->nnodes, m = 0;

    for (i = 0; i < n; i++)
        byname[i] = (uint32_t)i;
    sort_graph = g;
    qsort(byname, n, sizeof(*byname), by_name);
    sort_graph = NULL;
    for (i = 0; i < n; i++)
        w->rank[byname[i]] = (uint32_t)i;
    for (i = 0; i < g->nedges; i++)
        w->keys[i] = (uint64_t)w->rank[g->edges[i].from] << 45 |
                     (uint64_t)w->rank[g->edges[i].to] << 32 | g->edges[i].label;
    qsort(w->keys, g->nedges, sizeof(*w->keys), by_key);
    memset(w->first, 0, (n + 1) * sizeof(uint32_t));
    for (i = 0; i < g->nedges; i++) {
        uint64_t k = w->keys[i];

        if (m > 0 && (w->keys[i - 1] >> 32) == (k >> 32))
            continue;           /* the same from and to: the first label */
        w->adj[m] = (uint32_t)(k >> 32) & 0x1fff;
        w->adjlabel[m++] = (uint32_t)k;
        w->first[(k >> 45) + 1]++;
    }
    for (i = 0; i < n; i++)
        w->first[i + 1] += w->first[i];
    return m;
}

/* Tarjan's strongly connected components over ranks, iteratively; comp[v]
 * is v's component.  Returns the number of components. */
static uint32_t
components(struct work *w, size_t n)
{
    uint32_t next = 1, ncomp = 0, sp = 0, cp, v, u;
    size_t root;

    memset(w->index, 0, n * sizeof(uint32_t));
    memset(w->onstack, 0, n);
    for (root = 0; root < n; root++) {
        if (w->index[root] != 0)
            continue;
        cp = 0;
        w->call[cp] = (uint32_t)root;
        w->callpos[cp++] = w->first[root];
        w->index[root] = w->low[root] = next++;
        w->stack[sp++] = (uint32_t)root;
        w->onstack[root] = true;
        while (cp > 0) {
            v = w->call[cp - 1];
            if (w->callpos[cp - 1] < w->first[v + 1]) {
                u = w->adj[w->callpos[cp - 1]++];
                if (w->index[u] == 0) {
                    w->index[u] = w->low[u] = next++;
                    w->stack[sp++] = u;
                    w->onstack[u] = true;
                    w->call[cp] = u;
                    w->callpos[cp++] = w->first[u];
                } else if (w->onstack[u] && w->index[u] < w->low[v]) {
                    w->low[v] = w->index[u];
                }
                continue;
            }
            if (w->low[v] == w->index[v]) {
                do {
                    u = w->stack[--sp];
                    w->onstack[u] = false;
                    w->comp[u] = ncomp;
                } while (u != v);
                ncomp++;
            }
            if (--cp > 0 && w->low[v] < w->low[w->call[cp - 1]])
                w->low[w->call[cp - 1]] = w->low[v];
        }
    }
    return ncomp;
}

/* The shortest cycle through start inside its component, by BFS: its
 * length into *len and its ranks into out/labels, or false when there is
 * none within CYCLE_LEN_MAX. */
static bool
shortest_cycle(struct work *w, size_t n, uint32_t start, uint32_t *out, uint32_t *labels,
               size_t *len)
{
    size_t head = 0, tail = 0, k, depth;
    uint32_t v, u, e, c = w->comp[start];

    for (k = 0; k < n; k++)
        w->parent[k] = NIL;
    w->queue[tail++] = start;
    w->parent[start] = start;
    while (head < tail) {
        v = w->queue[head++];
        for (e = w->first[v]; e < w->first[v + 1]; e++) {
            u = w->adj[e];
            if (w->comp[u] != c)
                continue;
            if (u == start) {
                /* the path start .. v, then v -> start */
                for (depth = 1, k = v; k != start; k = w->parent[k])
                    depth++;
                if (depth > CYCLE_LEN_MAX)
                    return false;
                *len = depth;
                out[depth - 1] = v;
                labels[depth - 1] = w->adjlabel[e];
                for (k = depth - 1, u = v; u != start; u = w->parent[u]) {
                    k--;
                    out[k] = w->parent[u];
                    labels[k] = w->plabel[u];
                }
                return true;
            }
            if (w->parent[u] == NIL) {
                w->parent[u] = v;
                w->plabel[u] = w->adjlabel[e];
                w->queue[tail++] = u;
            }
        }
    }
    return false;
}

long
cycles_find(struct cycles *g,
            void (*fn)(const uint32_t *nodes, const uint32_t *labels, size_t n, void *arg),
            void *arg)
{
    struct work w;
    size_t n = g->nnodes, k, len, i;
    uint32_t ncomp, c, *size, *least, byrank[CYCLES_NODES_MAX];
    uint32_t ranks[CYCLE_LEN_MAX], labels[CYCLE_LEN_MAX], nodes[CYCLE_LEN_MAX];
    long found = 0;

    if (n < 2 || g->nedges == 0)
        return 0;
    if (work_alloc(&w, n, g->nedges) == -1)
        return -1;
    build_adjacency(g, &w);
    ncomp = components(&w, n);
    /* per component: its size and least rank (index, low are done with) */
    size = w.index;
    least = w.low;
    for (c = 0; c < ncomp; c++) {
        size[c] = 0;
        least[c] = NIL;
    }
    for (k = 0; k < n; k++)
        byrank[w.rank[k]] = (uint32_t)k;
    for (k = 0; k < n; k++) {
        c = w.comp[k];
        size[c]++;
        if ((uint32_t)k < least[c])
            least[c] = (uint32_t)k;
    }
    for (c = 0; c < ncomp; c++) {
        if (size[c] < 2)
            continue;
        if (!shortest_cycle(&w, n, least[c], ranks, labels, &len)) {
            g->cut++;
            continue;
        }
        for (i = 0; i < len; i++)
            nodes[i] = byrank[ranks[i]];
        fn(nodes, labels, len, arg);
        found++;
    }
    work_free(&w);
    return found;
}
