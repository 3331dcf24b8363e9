/*
 * robust.c - scratch folders, slotscope as a child process, database reads
 * (see robust.h).
 */
#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "robust.h"

char *rb_tmpdir_new(const char *tag)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    size_t n = strlen(base) + strlen(tag) + 32;
    char *dir = malloc(n);
    if (!dir)
        return NULL;
    snprintf(dir, n, "%s/ss-robust-%s-XXXXXX", base, tag);
    if (!mkdtemp(dir)) {
        free(dir);
        return NULL;
    }
    return dir;
}

/* Remove every file in dir (one level: the tests make no subfolders), then dir. */
void rb_tmpdir_free(char *dir)
{
    if (!dir)
        return;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char *p = rb_path(dir, e->d_name);
            if (p)
                unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
    free(dir);
}

char *rb_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

int rb_count_lines(const char *text)
{
    int n = 0;
    const char *p = text;
    while (p && *p) {
        n++;
        const char *nl = strchr(p, '\n');
        if (!nl)
            break;
        p = nl + 1;
    }
    return n;
}

int64_t rb_db_int(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

int64_t rb_db_counter(const char *db, const char *name)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT value FROM counters WHERE name = '%s'", name);
    return rb_db_int(db, sql);
}

char *rb_db_integrity(const char *db)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    char *res = NULL;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        res = strdup(t ? (const char *)t : "");
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return res ? res : strdup("");
}

long long rb_file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

void rb_conv_start(pg_conv *c, pg_file *f, const char *client, uint16_t sport, int64_t ts_us)
{
    pg_packet tmpl;
    pg_packet_init(&tmpl);
    tmpl.src = client;
    tmpl.dst = "10.2.0.1";
    tmpl.sport = sport;
    tmpl.dport = 6379;
    pg_conv_init(c, &tmpl, 1000, 5000, ts_us);
    c->file = f;
}
