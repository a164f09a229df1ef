/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sink_formats.h - the one list of alert sink formats.
 *
 * Each row is X(ENUM_SUFFIX, config_name, sink_type_symbol).  The list
 * makes enum sink_format (conf/config.h), the names `format =` accepts
 * (conf/options.c) and the sink table (alerts/sinks/sinks.c); a new format
 * is one row here plus its file in alerts/sinks/ (CONTRIBUTING.md).
 */
#ifndef LOCKWATCH_SINK_FORMATS_H
#define LOCKWATCH_SINK_FORMATS_H

#define SINK_FORMATS(X)                                   \
    X(GENERIC,      "generic",      sink_generic)         \
    X(SLACK,        "slack",        sink_slack)           \
    X(ALERTMANAGER, "alertmanager", sink_alertmanager)

#endif
