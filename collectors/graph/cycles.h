/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cycles.h - a bounded directed graph of named nodes and the cycles in it:
 * the pure part of the wait-for graph (graph.h says where the nodes and
 * edges come from).
 *
 * Nodes are byte strings (holder ids, owners), interned: the same bytes
 * are the same node.  An edge u -> v carries a label, the caller's number
 * for why u points at v (in the wait-for graph: the lock u waits for, which
 * v holds).  Both are capped (CYCLES_NODES_MAX, CYCLES_EDGES_MAX); what
 * does not fit is counted, never stored.
 *
 * cycles_find() reports one cycle through every strongly connected set of
 * two or more nodes (a set in which each node can reach each other one:
 * every waiter in it waits, through the others, for itself): the shortest
 * cycle through the set's least node (bytewise), following edges in the
 * order of their target's name, so the same graph gives the same cycle
 * whatever order its edges were added in.  A node pointing at itself is
 * not a cycle here (a holder waiting for its own lock is reentrancy or a
 * stale record, never a deadlock between parties).  A cycle longer than
 * CYCLE_LEN_MAX is counted in cut and not reported.
 *
 * Pure: no I/O, no clock, no locks; one graph per caller.
 */
#ifndef LOCKWATCH_CYCLES_H
#define LOCKWATCH_CYCLES_H

#include <stddef.h>
#include <stdint.h>

#define CYCLES_NODES_MAX 8192   /* nodes in one graph */
#define CYCLES_EDGES_MAX 32768  /* edges in one graph */
#define CYCLE_LEN_MAX    16     /* edges in one reported cycle */

struct cycles;

/* The counts of one graph; *_dropped: refused by a cap (or ENOMEM). */
struct cycles_stats {
    size_t nodes, edges;
    uint64_t nodes_dropped, edges_dropped;
    uint64_t cut;               /* cycles longer than CYCLE_LEN_MAX */
};

/* NULL on ENOMEM; cycles_free(NULL) is fine. */
struct cycles *cycles_new(void);
void cycles_free(struct cycles *g);

/* Empty the graph for the next pass (keeps its memory). */
void cycles_reset(struct cycles *g);

/* The node named by len bytes at id: its index, added when new; -1 when
 * the graph is full (counted) or out of memory. */
long cycles_node(struct cycles *g, const char *id, size_t len);

/* The name of node i (len bytes, not NUL-terminated). */
const char *cycles_name(const struct cycles *g, uint32_t i, size_t *len);

/* An edge from -> to with label; the same edge twice is kept once.
 * 0, or -1 when full (counted).  A self edge is accepted and ignored. */
int cycles_edge(struct cycles *g, uint32_t from, uint32_t to, uint32_t label);

/*
 * Call fn once per cycle found: nodes[0..n-1] in order, nodes[0] the
 * least, each waiting for the next (the last for nodes[0]); labels[i] the
 * label of the edge nodes[i] -> nodes[(i + 1) % n].  Returns the number of
 * cycles reported, or -1 on ENOMEM (none reported).
 */
long cycles_find(struct cycles *g,
                 void (*fn)(const uint32_t *nodes, const uint32_t *labels, size_t n, void *arg),
                 void *arg);

void cycles_stats(const struct cycles *g, struct cycles_stats *st);

#endif
