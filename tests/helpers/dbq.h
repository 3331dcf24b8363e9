/*
 * dbq.h - reading a slotscope database in a test: one integer from a query,
 * the integrity check. A SQL error (a misspelt table or column) fails the
 * test at once (cmocka's fail_msg), so it cannot pass as "no rows".
 */
#ifndef SLOTSCOPE_TESTS_DBQ_H
#define SLOTSCOPE_TESTS_DBQ_H

#include <stdint.h>

#include <sqlite3.h>

/* The first column of the first row of sql on db, with the text parameters
 * params (NULL-terminated, or NULL for none) bound to ?1, ?2, ...; -1 when
 * there is no row. A NULL value reads as 0 (as sqlite3_column_int64 does). */
int64_t th_sql_int(sqlite3 *db, const char *sql, const char *const *params);
/* th_sql_int with the text parameters inline. */
#define th_sql_int_p(db, sql, ...) th_sql_int((db), (sql), (const char *const[]){__VA_ARGS__, NULL})

/* th_sql_int on the database file at path, opened read-only for the query. */
int64_t th_db_int(const char *path, const char *sql);

/* PRAGMA integrity_check on the database file at path says "ok". */
void th_assert_db_ok(const char *path);

#endif /* SLOTSCOPE_TESTS_DBQ_H */
