/*
 * dbq.c - reading a slotscope database in a test (dbq.h). SQLite C API:
 * https://www.sqlite.org/cintro.html
 */
#include "tests/helpers/dbq.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

int64_t th_sql_int(sqlite3 *db, const char *sql, const char *const *params)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    for (int i = 0; params && params[i]; i++)
        assert_int_equal(sqlite3_bind_text(st, i + 1, params[i], -1, SQLITE_TRANSIENT), SQLITE_OK);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    else if (rc != SQLITE_DONE)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return v;
}

int64_t th_db_int(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        fail_msg("cannot open %s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
    int64_t v = th_sql_int(db, sql, NULL);
    sqlite3_close(db);
    return v;
}

void th_assert_db_ok(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    sqlite3_close(db);
}
