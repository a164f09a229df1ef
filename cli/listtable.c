/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * listtable.c - the columns of lockctl list's table, apart from list.c so
 * that the unit tests lay them out (table_layout()) without the command.
 */
#include "cli/lockctl.h"

/* FORMAT and HOLDER give way before the key (left out when it would get
 * under 24 columns): keys cut to a few columns tell no lock from another,
 * and show KEY gives both. */
const struct table_col list_table_cols[] = {
    { "KEY", 0, TABLE_FLEX | TABLE_MIDDLE, 0 },
    { "FORMAT", 16, TABLE_OPTIONAL, 8 },        /* redisson-fenced whole when there is room */
    { "HOLDER", 22, TABLE_MIDDLE | TABLE_OPTIONAL, 10 },
    { "HOLDS", 5, TABLE_RIGHT, 0 },
    { "TTL", 7, TABLE_RIGHT, 0 },
    { "AGE", 10, TABLE_RIGHT, 0 },
    /* down to 15 before FORMAT and HOLDER are left out ("reentrant_high,"
     * fits a line); under it only once the key is down to 8, and never
     * inside a state (table.c) */
    { "STATE", 28, TABLE_WRAP, 15 },
};
const size_t list_table_ncols = sizeof(list_table_cols) / sizeof(list_table_cols[0]);
