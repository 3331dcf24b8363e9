/*
 * test_broken_files.c - damaged capture files given to `slotscope analyze`.
 *
 * A good capture (CONNS connections of CMDS commands each, one after the
 * other) is written with pktgen, then damaged: cut in the middle of a record
 * (in its header, in its data), its file header corrupted, blocks of unknown
 * types inserted (pcapng), or the file left empty. For a damaged file
 * slotscope must print one clear line naming the file, exit nonzero, and keep
 * everything it analysed before the damage in the database (counters,
 * connections) and in the report. Unknown pcapng blocks are no damage: they
 * are skipped and the whole capture is analysed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "robust.h"
#include "tests/helpers/pktgen.h"

#define T0 1700000000000000LL
#define CONNS 20
#define CMDS 10
/* packets per connection: handshake 3, CMDS requests and replies, close 4 */
#define PKTS_PER_CONN (3 + 2 * CMDS + 4)

/* Write CONNS complete connections from clients 10.<net>.0.1.. to f, starting
 * at t0; offsets[i] is the file offset where connection i starts (offsets may
 * be NULL). */
static void write_good(pg_file *f, long *offsets, int64_t t0, int net)
{
    const char req[] = "*2\r\n$3\r\nGET\r\n$6\r\nuser:1\r\n";
    for (int i = 0; i < CONNS; i++) {
        if (offsets)
            offsets[i] = pg_file_offset(f);
        char client[32];
        snprintf(client, sizeof client, "10.%d.0.%d", net, i + 1);
        pg_conv c;
        rb_conv_start(&c, f, client, (uint16_t)(40000 + i), t0 + (int64_t)i * 1000000);
        assert_int_equal(pg_conv_handshake(&c), 0);
        for (int j = 0; j < CMDS; j++) {
            assert_int_equal(pg_conv_send(&c, 0, req, strlen(req)), 0);
            assert_int_equal(pg_conv_send(&c, 1, "$2\r\nok\r\n", 8), 0);
        }
        assert_int_equal(pg_conv_close(&c), 0);
    }
}

/* Write the good capture to path in format fmt (clients 10.1.0.x from T0). */
static void make_good(const char *path, pg_format fmt, long *offsets)
{
    pg_file *f = pg_file_open(path, fmt, DLT_EN10MB, 65535);
    assert_non_null(f);
    write_good(f, offsets, T0, 1);
    assert_int_equal(pg_file_close(f), 0);
}

/* Run analyze on one or two files with --db. */
static void analyze(const char *name, const char *file, const char *file2, const char *db,
                    rb_run *run)
{
    const char *one[] = {"analyze", file, "--db", db, "-q", NULL};
    const char *two[] = {"analyze", file, file2, "--db", db, "-q", NULL};
    const char *const *args = file2 ? two : one;
    assert_int_equal(rb_slotscope(args, run, NULL, NULL, 0), 0);
    printf("# %s: exit %d, peak RSS %ld KiB, stderr: %s", name, run->status, run->maxrss_kib,
           run->err && *run->err ? run->err : "(nothing)\n");
}

/* The checks every damaged file shares: it ran to its end (no crash), exited
 * nonzero, and said so in exactly one line that names the file. */
static void assert_clear_error(const rb_run *run, const char *file)
{
    assert_true(run->exited);
    assert_int_not_equal(run->status, 0);
    assert_non_null(run->err);
    assert_int_equal(rb_count_lines(run->err), 1);
    const char *base = strrchr(file, '/');
    assert_non_null(strstr(run->err, base ? base + 1 : file));
}

/* What was analysed before the damage is in the database: connections
 * 0..kept-1 complete, with their counters, and in the report. */
static void assert_kept(const rb_run *run, const char *db, int kept)
{
    printf("#   packets=%lld connections=%lld rows(connections)=%lld commands=%lld\n",
           (long long)rb_db_counter(db, "packets"), (long long)rb_db_counter(db, "connections"),
           (long long)rb_db_int(db, "SELECT count(*) FROM connections"),
           (long long)rb_db_counter(db, "commands"));
    char *ok = rb_db_integrity(db);
    assert_string_equal(ok, "ok");
    free(ok);
    assert_true(rb_db_int(db, "SELECT count(*) FROM meta WHERE key = 'schema_version'") == 1);
    assert_int_equal(rb_db_counter(db, "packets"), kept * PKTS_PER_CONN);
    assert_int_equal(rb_db_counter(db, "connections"), kept);
    assert_int_equal(rb_db_int(db, "SELECT count(*) FROM connections"), kept);
    assert_int_equal(rb_db_counter(db, "paired"), kept * CMDS);
    assert_int_equal(rb_db_int(db, "SELECT count(*) FROM clients"), kept);
    /* the report on stdout counts what was analysed */
    assert_non_null(run->out);
    char traffic[128];
    snprintf(traffic, sizeof traffic, "%d packets, %d connections, %d commands",
             kept * PKTS_PER_CONN, kept, kept * CMDS);
    assert_non_null(strstr(run->out, traffic));
}

/* Cut the file at `at` bytes. */
static void cut_file(const char *path, long at)
{
    assert_int_equal(truncate(path, at), 0);
}

/* cmocka setup/teardown: a scratch folder per test, removed even when the
 * test fails. */
static int dir_setup(void **state)
{
    *state = rb_tmpdir_new("broken");
    return *state ? 0 : -1;
}

static int dir_teardown(void **state)
{
    rb_tmpdir_free(*state);
    return 0;
}

/* ---------------------------------------------------------------- truncated */

/* Cut in the 16-byte header of the first record of connection 12. */
static void test_truncated_in_record_header(void **state)
{
    char *dir = *state;
    char *pcap = rb_path(dir, "cut.pcap"), *db = rb_path(dir, "out.db");
    long off[CONNS];
    make_good(pcap, PG_PCAP, off);
    cut_file(pcap, off[12] + 8);
    rb_run run;
    analyze("truncated in a record header", pcap, NULL, db, &run);
    assert_clear_error(&run, pcap);
    assert_kept(&run, db, 12);
    rb_run_free(&run);
    free(pcap);
    free(db);
}

/* Cut in the data of the first record of connection 7. */
static void test_truncated_in_record_data(void **state)
{
    char *dir = *state;
    char *pcap = rb_path(dir, "cut.pcap"), *db = rb_path(dir, "out.db");
    long off[CONNS];
    make_good(pcap, PG_PCAP, off);
    cut_file(pcap, off[7] + 16 + 30);
    rb_run run;
    analyze("truncated in record data", pcap, NULL, db, &run);
    assert_clear_error(&run, pcap);
    assert_kept(&run, db, 7);
    rb_run_free(&run);
    free(pcap);
    free(db);
}

/* Two files merged, one cut after 5 connections: the good one (clients
 * 10.3.0.x, interleaved in time with the other) is read to its end, the cut
 * one up to the damage; still an error exit. */
static void test_merge_with_truncated(void **state)
{
    char *dir = *state;
    char *good = rb_path(dir, "good.pcap"), *cut = rb_path(dir, "cut.pcap");
    char *db = rb_path(dir, "out.db");
    long off[CONNS];
    pg_file *f = pg_file_open(good, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(f);
    write_good(f, NULL, T0 + 500000, 3);
    assert_int_equal(pg_file_close(f), 0);
    make_good(cut, PG_PCAP, off);
    cut_file(cut, off[5] + 20);
    rb_run run;
    analyze("merge of a good and a truncated file", good, cut, db, &run);
    assert_clear_error(&run, cut);
    printf("#   packets=%lld rows(connections)=%lld\n", (long long)rb_db_counter(db, "packets"),
           (long long)rb_db_int(db, "SELECT count(*) FROM connections"));
    assert_int_equal(rb_db_counter(db, "packets"), (CONNS + 5) * PKTS_PER_CONN);
    assert_int_equal(rb_db_int(db, "SELECT count(*) FROM connections"), CONNS + 5);
    assert_int_equal(rb_db_int(db, "SELECT count(*) FROM inputs"), 2);
    /* the broken input says what went wrong, the good one does not */
    assert_int_equal(rb_db_int(db, "SELECT count(*) FROM inputs WHERE error != ''"), 1);
    rb_run_free(&run);
    free(good);
    free(cut);
    free(db);
}

/* ---------------------------------------------------------------- header */

/* Overwrite `n` bytes at `at` with `bytes`. */
static void patch_file(const char *path, long at, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, at, SEEK_SET), 0);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* A pcap whose magic number is garbage, and one whose version is 9.9. */
static void test_corrupted_header(void **state)
{
    char *dir = *state;
    char *pcap = rb_path(dir, "bad.pcap"), *db = rb_path(dir, "out.db");
    char *pcap2 = rb_path(dir, "badver.pcap"), *db2 = rb_path(dir, "out2.db");
    make_good(pcap, PG_PCAP, NULL);
    patch_file(pcap, 0, "\x13\x37\xbe\xef", 4);
    make_good(pcap2, PG_PCAP, NULL);
    patch_file(pcap2, 4, "\x09\x00\x09\x00", 4);

    rb_run run;
    analyze("corrupted magic", pcap, NULL, db, &run);
    assert_clear_error(&run, pcap);
    rb_run_free(&run);
    analyze("corrupted version", pcap2, NULL, db2, &run);
    assert_clear_error(&run, pcap2);
    rb_run_free(&run);
    free(pcap);
    free(db);
    free(pcap2);
    free(db2);
}

/* A record in the middle (first of connection 9) claims a capture length of
 * 2 GiB: libpcap refuses the file from there on; what came before is kept. */
static void test_absurd_caplen(void **state)
{
    char *dir = *state;
    char *pcap = rb_path(dir, "huge.pcap"), *db = rb_path(dir, "out.db");
    long off[CONNS];
    make_good(pcap, PG_PCAP, off);
    const uint8_t huge[4] = {0xF0, 0xFF, 0xFF, 0x7F}; /* 0x7FFFFFF0, little-endian */
    patch_file(pcap, off[9] + 8, huge, 4);
    rb_run run;
    analyze("record with caplen 2 GiB", pcap, NULL, db, &run);
    assert_clear_error(&run, pcap);
    assert_kept(&run, db, 9);
    rb_run_free(&run);
    free(pcap);
    free(db);
}

/* ---------------------------------------------------------------- empty */

/* A 0-byte file is an error; a pcap with a header and no record is a valid,
 * empty capture. */
static void test_empty_file(void **state)
{
    char *dir = *state;
    char *pcap = rb_path(dir, "empty.pcap"), *db = rb_path(dir, "out.db");
    char *hdr = rb_path(dir, "header-only.pcap"), *db2 = rb_path(dir, "out2.db");
    FILE *f = fopen(pcap, "wb");
    assert_non_null(f);
    fclose(f);
    pg_file *pf = pg_file_open(hdr, PG_PCAP, DLT_EN10MB, 65535);
    assert_non_null(pf);
    assert_int_equal(pg_file_close(pf), 0);

    rb_run run;
    analyze("empty file", pcap, NULL, db, &run);
    assert_clear_error(&run, pcap);
    rb_run_free(&run);

    analyze("header only", hdr, NULL, db2, &run);
    assert_true(run.exited);
    assert_int_equal(run.status, 0);
    assert_int_equal(rb_db_counter(db2, "packets"), 0);
    rb_run_free(&run);
    free(pcap);
    free(db);
    free(hdr);
    free(db2);
}

/* ---------------------------------------------------------------- pcapng */

/* Read a 32-bit little-endian value. */
static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Append a block of type `type` with a body of `body_len` bytes of 0xAB. */
static size_t put_block(uint8_t *out, uint32_t type, uint32_t body_len)
{
    uint32_t total = 12 + body_len;
    uint8_t *p = out;
    memcpy(p, &type, 4);
    memcpy(p + 4, &total, 4);
    memset(p + 8, 0xAB, body_len);
    memcpy(p + 8 + body_len, &total, 4);
    return total;
}

/* Rewrite a pcapng file (little-endian, as pktgen writes it) with blocks of
 * unknown and ignorable types after the interface block and between every
 * packet: a reserved type, a local-use type, custom blocks (both kinds), a
 * name resolution block and an interface statistics block. */
static int add_unknown_blocks(const char *in, const char *out)
{
    FILE *f = fopen(in, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    rewind(f);
    uint8_t *buf = malloc((size_t)size);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
    fclose(f);

    FILE *o = fopen(out, "wb");
    assert_non_null(o);
    static const uint32_t odd_types[] = {0x00000BAD, 0x80000001, 0x00000BAD, 0x40000BAD};
    uint8_t blk[256];
    int added = 0;
    long off = 0;
    while (off + 12 <= size) {
        uint32_t type = le32(buf + off), total = le32(buf + off + 4);
        assert_true(total >= 12 && off + (long)total <= size);
        assert_int_equal(fwrite(buf + off, 1, total, o), total);
        off += total;
        if (type == 1 /* IDB */ || type == 6 /* EPB */) {
            size_t n = put_block(blk, odd_types[added % 4], 4 * (uint32_t)(added % 8));
            assert_int_equal(fwrite(blk, 1, n, o), n);
            added++;
        }
    }
    /* an interface statistics block (type 5) with no options: if_id, ts */
    uint8_t isb[24] = {5, 0, 0, 0, 24, 0, 0, 0};
    isb[20] = 24;
    assert_int_equal(fwrite(isb, 1, sizeof isb, o), sizeof isb);
    assert_int_equal(fclose(o), 0);
    free(buf);
    return added;
}

static void test_pcapng_unknown_blocks(void **state)
{
    char *dir = *state;
    char *plain = rb_path(dir, "plain.pcapng"), *odd = rb_path(dir, "odd.pcapng");
    char *db = rb_path(dir, "out.db");
    make_good(plain, PG_PCAPNG, NULL);
    int added = add_unknown_blocks(plain, odd);
    assert_true(added > CONNS * PKTS_PER_CONN);
    rb_run run;
    analyze("pcapng with unknown blocks", odd, NULL, db, &run);
    assert_true(run.exited);
    assert_int_equal(run.status, 0);
    assert_int_equal(rb_db_counter(db, "packets"), CONNS * PKTS_PER_CONN);
    assert_int_equal(rb_db_counter(db, "paired"), CONNS * CMDS);
    assert_int_equal(rb_db_int(db, "SELECT count(*) FROM connections"), CONNS);
    rb_run_free(&run);
    free(plain);
    free(odd);
    free(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_truncated_in_record_header, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(test_truncated_in_record_data, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(test_merge_with_truncated, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(test_corrupted_header, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(test_absurd_caplen, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(test_empty_file, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(test_pcapng_unknown_blocks, dir_setup, dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
