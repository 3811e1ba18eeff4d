/* harness/ops/opcheck_db.h: one result row of `harness ops` and how it is recorded in the store's
 * database (table op_results, see docs/ops.md). */
#ifndef OPCHECK_DB_H
#define OPCHECK_DB_H

#include "opcheck.h"

typedef struct {
    const char *mode;      /* "test", "grad", "perf" */
    char device[DEVICE_SPEC_MAX]; /* the spec it was opened with */
    char device_name[128];
    char dtype[16];
    char reference[64];           /* test mode: the reference device's spec */
    char op[48];
    char shape[96];
    oc_result res;
} op_row;

/* checks --db before any work without creating it: an existing file must open as a harness
 * store, a missing one's folder must be writable (it is created when the results are recorded,
 * so a usage error leaves none); 0, or 2 after a message */
int opdb_check(const char *path);
/* appends rows to op_results in the database at path (opened as a harness store first, so a
 * file that is not one is refused). Returns 0, or 2 after a message. */
int opdb_record(const char *path, const op_row *rows, int n);

#endif
