/* harness/store/store_shape_internal.h: private to harness/store: the check that a store's
 * tables and columns are the ones its schema version's migrations make (store_shape.c). */
#ifndef STORE_SHAPE_INTERNAL_H
#define STORE_SHAPE_INTERNAL_H

#include <sqlite3.h>

/* 0 when db (at the current schema version) has every table of the schema that migrations[0..n)
 * make, each with the same columns (name, type, NOT NULL, key), and no trigger; else 2
 * after a message naming path and what differs */
int store_check_shape(sqlite3 *db, const char *path, const char *const *migrations, int n);

#endif
