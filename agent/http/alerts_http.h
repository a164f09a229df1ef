/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alerts_http.h - the agent's side of alerting: the once-a-second tick
 * that feeds the rules, GET /api/v1/alerts, and the alert metric
 * families in /metrics.
 */
#ifndef LOCKWATCH_ALERTS_HTTP_H
#define LOCKWATCH_ALERTS_HTTP_H

#include <stddef.h>

#include "common/strbuf.h"
#include "agent/agent.h"

/* Evaluate the alert rules on the newest snapshots and wait statistics.
 * Main thread, from the signal loop's tick; never on a scanner thread. */
void agent_alerts_tick(struct agent *a);

/* lockwatch_alerts_firing{alertname}, lockwatch_alerts_suppressed and
 * lockwatch_notifications_total{sink,result}.  Nothing when al is NULL
 * (--once evaluates no alerts). */
void render_alert_metrics(struct alerts *al, struct strbuf *sb);

#endif
