/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alerts_http.h - the agent's side of alerting: the once-a-second tick
 * that feeds the rules, and GET /api/v1/alerts.  The alert families of
 * /metrics are rows of metrics.c.
 */
#ifndef LOCKWATCH_ALERTS_HTTP_H
#define LOCKWATCH_ALERTS_HTTP_H

#include "agent/agent.h"

/* Evaluate the alert rules on the newest snapshots and wait statistics.
 * Main thread, from the signal loop's tick; never on a scanner thread. */
void agent_alerts_tick(struct agent *a);

#endif
