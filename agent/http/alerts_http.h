/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alerts_http.h - the agent's side of alerting: the once-a-second tick
 * that feeds the rules, and GET /api/v1/alerts.  The alert families of
 * /metrics are rows of metrics.c.
 */
#ifndef LOCKWATCH_ALERTS_HTTP_H
#define LOCKWATCH_ALERTS_HTTP_H

#include "agent/agent.h"

#include <stdbool.h>

/* Evaluate the alert rules on the newest snapshots, wait statistics and
 * wait-for graph report.  Main thread, from the signal loop's tick (about
 * once a second); never on a scanner thread. */
void agent_alerts_tick(struct agent *a);

/* The wait-for graph's pass (collectors/graph/graph.h) over the newest
 * snapshots and the waiting table: main thread, every
 * AGENT_GRAPH_TICK_MS.  True when its deadlocks or inversions changed
 * since the pass before: the loop then evaluates the alerts at once, so
 * a deadlock is raised as soon as it is confirmed. */
#define AGENT_GRAPH_TICK_MS 500
bool agent_graph_tick(struct agent *a);

#endif
