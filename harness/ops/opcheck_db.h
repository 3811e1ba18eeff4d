/* harness/ops/opcheck_db.h: one result row of `harness ops` and how it is recorded in the store's
 * database (table op_results, see docs/ops.md). */
#ifndef OPCHECK_DB_H
#define OPCHECK_DB_H

#include "opcheck.h"

typedef struct {
    const char *mode;      /* "test", "grad", "perf" */
    char device[64];       /* the spec it was opened with */
    char device_name[128];
    char dtype[16];
    char reference[64];    /* test mode: the reference device's spec */
    char op[48];
    char shape[96];
    oc_result res;
} op_row;

/* opens path as a harness store (creating it if missing); 0, or 2 after the store's message */
int opdb_check(const char *path);
/* appends rows to op_results in the database at path (opened as a harness store first, so a
 * file that is not one is refused). Returns 0, or 2 after a message. */
int opdb_record(const char *path, const op_row *rows, int n);

#endif
