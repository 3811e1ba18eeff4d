/* harness/store/store_comm.c: writing `harness comm-check` results into the comm_checks table
 * (docs/store.md). */
#include <sqlite3.h>
#include <stdio.h>

#include "store_comm.h"
#include "store_logs.h"
#include "util/util.h"

static int prepare(store *st, const char *sql, sqlite3_stmt **s)
{
    *s = NULL;
    if (store_is_readonly(st)) {
        log_error("%s: recording a comm check: the store was opened read-only", store_path(st));
        return 1;
    }
    if (sqlite3_prepare_v2(store_handle(st), sql, -1, s, NULL) != SQLITE_OK) {
        log_error("%s: recording a comm check: %s", store_path(st),
                  sqlite3_errmsg(store_handle(st)));
        return 1;
    }
    return 0;
}

int store_next_comm_check(store *st, int64_t *check_id)
{
    sqlite3_stmt *s;
    if (prepare(st, "SELECT coalesce(max(check_id), 0) + 1 FROM comm_checks", &s))
        return 1;
    int ok = sqlite3_step(s) == SQLITE_ROW;
    if (ok)
        *check_id = sqlite3_column_int64(s, 0);
    else
        log_error("%s: numbering a comm check: %s", store_path(st),
                  sqlite3_errmsg(store_handle(st)));
    sqlite3_finalize(s);
    return ok ? 0 : 1;
}

int store_add_comm_check(store *st, int64_t check_id, const comm_check_meta *m,
                         const comm_check_row *r)
{
    static const char sql[] =
        "INSERT INTO comm_checks(check_id, created_at, host, launcher, comm, world_size, device,"
        " device_name, op, bytes, count, iters, time_us, algbw_gbs, busbw_gbs, wrong,"
        " first_bad_rank, status) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
    sqlite3_stmt *s;
    if (prepare(st, sql, &s))
        return 1;
    char now[32];
    iso_time_now(now, sizeof now);
    int i = 1, rc = sqlite3_bind_int64(s, i++, check_id);
    const char *texts[] = {now, m->host, m->launcher, m->comm};
    for (int k = 0; k < 4 && rc == SQLITE_OK; k++)
        rc = sqlite3_bind_text(s, i++, texts[k], -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int(s, i++, m->world_size);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, i++, m->device, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, i++, m->device_name, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, i++, r->op, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, i++, r->bytes);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, i++, r->count);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int(s, i++, r->iters);
    if (rc == SQLITE_OK) rc = sqlite3_bind_double(s, i++, r->time_us);
    if (rc == SQLITE_OK) rc = sqlite3_bind_double(s, i++, r->algbw_gbs);
    if (rc == SQLITE_OK) rc = sqlite3_bind_double(s, i++, r->busbw_gbs);
    if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, i++, r->wrong);
    if (rc == SQLITE_OK)
        rc = r->first_bad_rank < 0 ? sqlite3_bind_null(s, i++)
                                   : sqlite3_bind_int(s, i++, r->first_bad_rank);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(s, i++, r->wrong ? "wrong" : "ok", -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    if (rc != SQLITE_OK)
        log_error("%s: recording a comm check: %s", store_path(st),
                  sqlite3_errmsg(store_handle(st)));
    sqlite3_finalize(s);
    return rc == SQLITE_OK ? 0 : 1;
}

/* "rank R X MiB" appended to out at *used */
static void append(char *out, size_t len, size_t *used, const char *fmt, int rank, double mib)
{
    if (*used >= len)
        return;
    int n = snprintf(out + *used, len - *used, fmt, rank, mib);
    *used += n > 0 ? (size_t)n : 0;
}

int store_rank_peaks_text(store *st, int64_t run_id, char *out, size_t len, int *ranks)
{
    static const char sql[] = "SELECT rank, max(mem_peak_bytes) FROM rank_steps WHERE run_id = ?"
                              " GROUP BY rank ORDER BY rank";
    sqlite3_stmt *s;
    out[0] = '\0';
    *ranks = 0;
    if (sqlite3_prepare_v2(store_handle(st), sql, -1, &s, NULL) != SQLITE_OK ||
        sqlite3_bind_int64(s, 1, run_id) != SQLITE_OK) {
        log_error("%s: reading the ranks' memory: %s", store_path(st),
                  sqlite3_errmsg(store_handle(st)));
        sqlite3_finalize(s);
        return EXIT_USAGE;
    }
    char each[768] = "";
    size_t used = 0;
    int max_rank = -1;
    double max_mib = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        int rank = sqlite3_column_int(s, 0);
        double mib = sqlite3_column_int64(s, 1) / 1048576.0;
        append(each, sizeof each, &used, *ranks ? ", rank %d %.1f MiB" : "rank %d %.1f MiB",
               rank, mib);
        if (max_rank < 0 || mib > max_mib)
            max_rank = rank, max_mib = mib;
        (*ranks)++;
    }
    sqlite3_finalize(s);
    if (*ranks)
        snprintf(out, len, "max %.1f MiB (rank %d); %s", max_mib, max_rank, each);
    return 0;
}
