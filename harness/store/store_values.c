/* harness/store/store_values.c: how a step's reals are bound and read, for every table that
 * holds them (steps, rank_steps, comparisons, ...): store_values_internal.h. */
#include "store_values_internal.h"

#include <math.h>
#include <string.h>

int store_bind_real(sqlite3_stmt *s, int i, double v)
{
    if (isfinite(v))
        return sqlite3_bind_double(s, i, v);
    const char *t = isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
    return sqlite3_bind_text(s, i, t, -1, SQLITE_STATIC);
}

int store_bind_field(sqlite3_stmt *s, int i, double v, unsigned unrecorded, unsigned bit)
{
    return unrecorded & bit ? sqlite3_bind_null(s, i) : store_bind_real(s, i, v);
}

double store_column_real(sqlite3_stmt *s, int i)
{
    switch (sqlite3_column_type(s, i)) {
    case SQLITE_FLOAT:
    case SQLITE_INTEGER:
        return sqlite3_column_double(s, i);
    case SQLITE_TEXT: {
        const char *t = (const char *)sqlite3_column_text(s, i);
        if (t && strcmp(t, "inf") == 0)
            return INFINITY;
        if (t && strcmp(t, "-inf") == 0)
            return -INFINITY;
        return NAN;
    }
    default:
        return NAN;
    }
}

int store_column_real_ok(sqlite3_stmt *s, int i)
{
    int type = sqlite3_column_type(s, i);
    if (type != SQLITE_TEXT)
        return type != SQLITE_BLOB;
    const char *t = (const char *)sqlite3_column_text(s, i);
    return t && (strcmp(t, "nan") == 0 || strcmp(t, "inf") == 0 || strcmp(t, "-inf") == 0);
}

double store_column_field(sqlite3_stmt *s, int i, unsigned bit, unsigned *unrecorded)
{
    if (sqlite3_column_type(s, i) == SQLITE_NULL)
        *unrecorded |= bit;
    return store_column_real(s, i);
}
