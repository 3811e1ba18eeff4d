/* harness/store/store_values_internal.h: private to harness/store: how a step's reals are bound
 * and read (docs/store.md, "Non-finite numbers"): 'nan'/'inf' texts, NULL for never recorded. */
#ifndef STORE_VALUES_INTERNAL_H
#define STORE_VALUES_INTERNAL_H

#include <sqlite3.h>

/* a finite double as REAL, NaN and the infinities as the texts 'nan', 'inf', '-inf' (SQLite
 * would turn a NaN into NULL); an SQLite result code */
int store_bind_real(sqlite3_stmt *s, int i, double v);
/* a step's real: NULL when bit is set in unrecorded (never recorded), else as store_bind_real */
int store_bind_field(sqlite3_stmt *s, int i, double v, unsigned unrecorded, unsigned bit);
/* the inverse of store_bind_real; NULL (a value never recorded) reads as NaN */
double store_column_real(sqlite3_stmt *s, int i);
/* column i as a step's real, bit set in *unrecorded when it is NULL */
double store_column_field(sqlite3_stmt *s, int i, unsigned bit, unsigned *unrecorded);
/* 1 when column i holds what the store writes for a real: NULL, a number, or the text 'nan',
 * 'inf' or '-inf' (not other text, not a blob) */
int store_column_real_ok(sqlite3_stmt *s, int i);

#endif
