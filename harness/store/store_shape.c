/* harness/store/store_shape.c: a store's tables and columns checked against the schema its
 * migrations make, and triggers refused, before anything is read or written. */
#include "store_shape_internal.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "util/util.h"

/* the expected schema: a private in-memory database with every migration applied */
static sqlite3 *expected_schema(const char *const *migrations, int n)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY, NULL) !=
        SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (sqlite3_exec(db, migrations[i], NULL, NULL, NULL) != SQLITE_OK) {
            sqlite3_close(db);
            return NULL;
        }
    return db;
}

/* table's columns as "name type notnull pk;..." into out (n bytes); 0, or -1 on an error */
static int table_columns(sqlite3 *db, const char *table, char *out, size_t n)
{
    sqlite3_stmt *s = NULL;
    size_t used = 0;
    out[0] = 0;
    if (sqlite3_prepare_v2(db, "SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1)"
                               " ORDER BY cid", -1, &s, NULL) != SQLITE_OK ||
        sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC) != SQLITE_OK) {
        sqlite3_finalize(s);
        return -1;
    }
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW && used < n) {
        int w = snprintf(out + used, n - used, "%s %s %d %d;", sqlite3_column_text(s, 0),
                         sqlite3_column_text(s, 1), sqlite3_column_int(s, 2),
                         sqlite3_column_int(s, 3));
        used += w > 0 ? (size_t)w : 0;
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* the first trigger of db into name; 1 when there is one (a view a user made for a dashboard
 * is harmless: it runs on nothing the harness writes) */
static int planted_object(sqlite3 *db, char *kind, char *name, size_t n)
{
    sqlite3_stmt *s = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT type, name FROM sqlite_master WHERE type IN"
                               " ('trigger') ORDER BY name LIMIT 1", -1, &s, NULL) ==
            SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW) {
        snprintf(kind, 16, "%s", (const char *)sqlite3_column_text(s, 0));
        snprintf(name, n, "%s", (const char *)sqlite3_column_text(s, 1));
        found = 1;
    }
    sqlite3_finalize(s);
    return found;
}

/* every table of want with the same columns in db; 0, or 2 after a message */
static int same_tables(sqlite3 *db, sqlite3 *want, const char *path)
{
    static char a[8192], b[8192];
    sqlite3_stmt *s = NULL;
    int ret = 0;
    if (sqlite3_prepare_v2(want, "SELECT name FROM sqlite_master WHERE type = 'table'"
                                 " ORDER BY name", -1, &s, NULL) != SQLITE_OK) {
        log_error("%s: checking the store's tables: %s", path, sqlite3_errmsg(want));
        return 2;
    }
    while (!ret && sqlite3_step(s) == SQLITE_ROW) {
        const char *table = (const char *)sqlite3_column_text(s, 0);
        if (table_columns(want, table, a, sizeof a) || table_columns(db, table, b, sizeof b)) {
            log_error("%s: checking table %s: %s", path, table, sqlite3_errmsg(db));
            ret = 2;
        } else if (!b[0]) {
            log_error("%s: a harness store without its table '%s': refusing to use it", path,
                      table);
            ret = 2;
        } else if (strcmp(a, b) != 0) {
            log_error("%s: table '%s' has other columns than this harness's schema: refusing "
                      "to use it", path, table);
            ret = 2;
        }
    }
    sqlite3_finalize(s);
    return ret;
}

int store_check_shape(sqlite3 *db, const char *path, const char *const *migrations, int n)
{
    char kind[16], name[256];
    if (planted_object(db, kind, name, sizeof name)) {
        log_error("%s: the store holds a %s '%.200s' this harness never makes (it would run on "
                  "the harness's writes): refusing to use it", path, kind, name);
        return 2;
    }
    sqlite3 *want = expected_schema(migrations, n);
    if (!want) {
        log_error("%s: cannot build the expected schema to check the store against", path);
        return 2;
    }
    int rc = same_tables(db, want, path);
    sqlite3_close(want);
    return rc;
}
