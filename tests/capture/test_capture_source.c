/*
 * test_capture_source.c - capture files through cap_source: merge order,
 * pcap/pcapng/nanosecond formats, and every kind of bad file, with the exact
 * one-line errors and the records read before a failure kept.
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

#include "capture/capture.h"
#include "evlog.h"
#include "tests/helpers/child.h"
#include "tests/helpers/pktgen.h"

/* Write a conversation file: handshake, "req" and "reply", close (9
 * packets), starting at ts_us, with client port sport. */
static void write_conv(const char *path, pg_format fmt, int dlt, uint16_t sport, int64_t ts_us,
                       int64_t step_us)
{
    pg_packet p;
    pg_conv c;
    pg_packet_init(&p);
    p.dlt = dlt;
    p.sport = sport;
    pg_conv_init(&c, &p, 100, 5000, ts_us);
    c.step_us = step_us;
    c.file = pg_file_open(path, fmt, dlt, 65535);
    assert_non_null(c.file);
    assert_int_equal(pg_conv_handshake(&c), 0);
    assert_int_equal(pg_conv_send(&c, 0, "req", 3), 0);
    assert_int_equal(pg_conv_send(&c, 1, "reply", 5), 0);
    assert_int_equal(pg_conv_close(&c), 0);
    assert_int_equal(pg_file_close(c.file), 0);
}

/* Open paths, expecting success. */
static cap_source *open_ok(const char *const *paths, size_t n)
{
    char err[512] = "";
    cap_source *src = cap_open_files(paths, n, err, sizeof err);
    if (src == NULL)
        fail_msg("open failed: %s", err);
    assert_string_equal(err, "");
    return src;
}

/* Open one path, expecting the error text expect. */
static void open_fails(const char *path, const char *expect)
{
    char err[512] = "";
    const char *paths[] = {path};
    cap_source *src = cap_open_files(paths, 1, err, sizeof err);
    assert_null(src);
    assert_string_equal(err, expect);
}

/* Records of three files come out in timestamp order (ties: file order), in
 * all three file formats. */
static void test_merge_order(void **state)
{
    const char *paths[] = {"src_a.pcap", "src_b.pcapng", "src_c.pcap"};
    /* a: t = 10, 30, 50, ...; b: 20, 40, ...; c: 30, 70, ... (ns pcap) */
    cap_source *src;
    cap_record rec;
    char err[256];
    int64_t prev = 0;
    int seen_tie = 0;
    uint64_t from_c = 0, total = 0;
    size_t n;
    const cap_input_info *info;
    uint64_t done, size;
    (void)state;
    write_conv(paths[0], PG_PCAP, DLT_EN10MB, 41000, 10, 20);
    write_conv(paths[1], PG_PCAPNG, DLT_LINUX_SLL2, 41001, 20, 20);
    write_conv(paths[2], PG_PCAP_NS, DLT_NULL, 41002, 30, 40);
    src = open_ok(paths, 3);
    while (cap_source_next(src, &rec, err, sizeof err) == 1) {
        assert_true(rec.ts_us >= prev);
        if (rec.ts_us == 30 && !seen_tie)
            assert_int_equal(rec.linktype, DLT_EN10MB); /* a before c at the tie */
        seen_tie |= rec.ts_us == 30;
        if (rec.linktype == DLT_NULL)
            from_c++;
        prev = rec.ts_us;
        total++;
    }
    assert_int_equal(total, 27);
    assert_int_equal(from_c, 9);
    info = cap_source_inputs(src, &n);
    assert_int_equal(n, 3);
    assert_string_equal(info[1].name, "src_b.pcapng");
    assert_string_equal(info[1].linktype_name, "LINUX_SLL2");
    assert_int_equal(info[2].packets, 9);
    assert_int_equal(info[2].first_us, 30);
    assert_int_equal(info[2].last_us, 30 + 8 * 40);
    assert_string_equal(info[0].error, "");
    cap_source_progress(src, &done, &size);
    assert_true(size > 0);
    assert_int_equal(done, size);
    cap_source_free(src);
}

/* Append an Interface Statistics Block (pcapng, host byte order as pktgen
 * writes) for interface iface with option code (5 isb_ifdrop, 7 isb_osdrop)
 * set to value. */
static void append_isb(const char *path, uint32_t iface, uint16_t code, uint64_t value)
{
    uint8_t b[40];
    uint32_t w[5] = {5, sizeof b, iface, 0, 0};
    uint16_t opt[2] = {code, 8}, end[2] = {0, 0};
    uint32_t len = sizeof b;
    memcpy(b, w, 20);
    memcpy(b + 20, opt, 4);
    memcpy(b + 24, &value, 8);
    memcpy(b + 32, end, 4);
    memcpy(b + 36, &len, 4);
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, sizeof b, f), sizeof b);
    assert_int_equal(fclose(f), 0);
}

/* A pcapng file's statistics blocks at its end (dumpcap writes them when it
 * stops) give the input's drops: the latest block of each interface counts
 * (isb_ifdrop, else isb_osdrop), summed; libpcap still reads every record.
 * A pcapng file without them, and a pcap file, record none. */
static void test_pcapng_drops(void **state)
{
    const char *paths[] = {"src_isb.pcapng", "src_noisb.pcapng", "src_plain.pcap"};
    cap_source *src;
    cap_record rec;
    char err[256];
    size_t n, total = 0;
    (void)state;
    write_conv(paths[0], PG_PCAPNG, DLT_EN10MB, 41010, 10, 20);
    append_isb(paths[0], 0, 5, 3);  /* an earlier count of interface 0 */
    append_isb(paths[0], 0, 5, 7);  /* its latest */
    write_conv(paths[1], PG_PCAPNG, DLT_EN10MB, 41011, 10, 20);
    write_conv(paths[2], PG_PCAP, DLT_EN10MB, 41012, 10, 20);
    src = open_ok(paths, 3);
    while (cap_source_next(src, &rec, err, sizeof err) == 1)
        total++;
    const cap_input_info *info = cap_source_inputs(src, &n);
    assert_int_equal(n, 3);
    assert_int_equal(total, 27);
    assert_int_equal(info[0].packets, 9);
    assert_int_equal(info[0].kernel_drops, 7);
    assert_string_equal(info[0].error, "");
    assert_int_equal(info[1].kernel_drops, 0);
    assert_int_equal(info[2].kernel_drops, 0);
    cap_source_free(src);

    /* isb_osdrop only, on two interfaces' blocks: summed */
    write_conv(paths[0], PG_PCAPNG, DLT_EN10MB, 41010, 10, 20);
    append_isb(paths[0], 1, 7, 5);
    append_isb(paths[0], 0, 7, 2);
    src = open_ok(paths, 1);
    info = cap_source_inputs(src, &n);
    assert_int_equal(info[0].kernel_drops, 7);
    cap_source_free(src);
}

/* One capture per host: the client's packets in one file, the server's in
 * another; merged by time they make one connection with both streams. */
static void test_merge_two_hosts(void **state)
{
    const char *paths[] = {"src_client.pcap", "src_server.pcapng"};
    pg_file *files[2];
    pg_packet p;
    pg_conv c;
    cap_tracker *t;
    evlog log;
    char err[256] = "";
    static uint8_t frame[PG_MAX_FRAME];
    (void)state;
    files[0] = pg_file_open(paths[0], PG_PCAP, DLT_EN10MB, 65535);
    files[1] = pg_file_open(paths[1], PG_PCAPNG, DLT_EN10MB, 65535);
    assert_non_null(files[0]);
    assert_non_null(files[1]);
    pg_packet_init(&p);
    pg_conv_init(&c, &p, 100, 5000, 1000);
    /* Build each packet, then route it by sender. */
    for (int step = 0; step < 6; step++) {
        pg_packet q = p;
        int from_server = step % 2;
        static const char *msgs[] = {"GET a", "v1", "GET b", "v2", "GET c", "v3"};
        if (from_server) {
            q.src = p.dst;
            q.dst = p.src;
            q.sport = p.dport;
            q.dport = p.sport;
        }
        q.seq = c.next[from_server];
        q.ack = c.next[!from_server];
        q.flags = PG_ACK | PG_PSH;
        q.payload = msgs[step];
        q.len = strlen(msgs[step]);
        c.next[from_server] += (uint32_t)q.len;
        assert_int_equal(pg_file_write(files[from_server], 1000 + step * 10, frame,
                                       pg_build(&q, frame, sizeof frame)),
                         0);
    }
    pg_file_close(files[0]);
    pg_file_close(files[1]);
    evlog_init(&log);
    t = cap_tracker_new(NULL, evlog_fn, &log);
    {
        cap_source *src = open_ok(paths, 2);
        assert_int_equal(cap_source_run(src, t, err, sizeof err), 0);
        cap_source_free(src);
    }
    cap_tracker_finish(t, 0);
    assert_string_equal(evlog_stream(&log, 1, CAP_TO_SERVER), "GET aGET bGET c");
    assert_string_equal(evlog_stream(&log, 1, CAP_TO_CLIENT), "v1v2v3");
    assert_int_equal(cap_tracker_stats(t)->time_backwards, 0);
    cap_tracker_free(t);
    evlog_free(&log);
}

/* Files that are not captures at all. */
static void test_bad_files(void **state)
{
    FILE *fp;
    (void)state;
    unlink("src_missing.pcap");
    open_fails("src_missing.pcap", "cannot open 'src_missing.pcap': No such file or directory");
    fp = fopen("src_empty.pcap", "wb");
    fclose(fp);
    open_fails("src_empty.pcap", "'src_empty.pcap': empty file, not a capture");
    fp = fopen("src_garbage.pcap", "wb");
    fputs("this is not a capture file, just some text\n", fp);
    fclose(fp);
    open_fails("src_garbage.pcap",
               "'src_garbage.pcap': not a pcap or pcapng capture (unknown file format)");
    fp = fopen("src_short.pcap", "wb");
    fwrite("\xd4\xc3\xb2\xa1\x02\x00", 6, 1, fp); /* a pcap magic and 2 bytes */
    fclose(fp);
    open_fails("src_short.pcap", "'src_short.pcap': not a pcap or pcapng capture "
                                 "(truncated dump file; tried to read 24 file header bytes, "
                                 "only got 2)");
    open_fails(".", "'.': is a directory");
}

/* A link type we cannot decode is refused by name. */
static void test_unsupported_linktype(void **state)
{
    pg_file *f = pg_file_open("src_wifi.pcap", PG_PCAP, 105, 65535);
    (void)state;
    assert_non_null(f);
    assert_int_equal(pg_file_write_raw(f, 1, (const uint8_t *)"0123456789", 10, 10), 0);
    pg_file_close(f);
    open_fails("src_wifi.pcap", "'src_wifi.pcap': unsupported link type IEEE802_11 (105, 802.11)");
}

/* Run one file through a fresh tracker; returns cap_source_run's result with
 * the message in err and the tracker's stats in *st. */
static int run_file(const char *const *paths, size_t n, char *err, size_t err_size,
                    cap_stats *st, evlog *log)
{
    cap_tracker *t;
    cap_source *src = open_ok(paths, n);
    int rc;
    evlog_init(log);
    t = cap_tracker_new(NULL, evlog_fn, log);
    assert_non_null(t);
    rc = cap_source_run(src, t, err, err_size);
    cap_tracker_finish(t, 0);
    *st = *cap_tracker_stats(t);
    cap_tracker_free(t);
    cap_source_free(src);
    return rc;
}

/* Cut a file to size bytes. */
static void cut_file(const char *path, long size)
{
    assert_int_equal(truncate(path, size), 0);
}

/* A file cut in the middle of its fifth record: the error names the file
 * and the count, and the first four records are analysed. */
static void test_truncated_record(void **state)
{
    static const pg_format fmts[] = {PG_PCAP, PG_PCAPNG};
    static const char *const names[] = {"src_trunc.pcap", "src_trunc.pcapng"};
    (void)state;
    for (int i = 0; i < 2; i++) {
        const char *paths[] = {names[i]};
        pg_file *f = pg_file_open(names[i], fmts[i], DLT_EN10MB, 65535);
        pg_packet p;
        pg_conv c;
        char err[512] = "", expect[512];
        cap_stats st;
        evlog log;
        long cut;
        pg_packet_init(&p);
        pg_conv_init(&c, &p, 100, 5000, 1000);
        c.file = f;
        pg_conv_handshake(&c);
        pg_conv_send(&c, 0, "kept", 4);
        cut = pg_file_offset(f) + 30;
        pg_conv_send(&c, 0, "lost", 4);
        pg_file_close(f);
        cut_file(names[i], cut);
        assert_int_equal(run_file(paths, 1, err, sizeof err, &st, &log), -1);
        snprintf(expect, sizeof expect, "'%s': truncated record after 4 packets", names[i]);
        assert_memory_equal(err, expect, strlen(expect));
        assert_int_equal(st.packets, 4);
        assert_string_equal(evlog_stream(&log, 1, CAP_TO_SERVER), "kept");
        evlog_free(&log);
    }
}

/* A record with an absurd length stops the file with a clear error (libpcap
 * cannot frame what follows); what came before stays. A record with no bytes
 * is framed fine: counted as malformed, and reading goes on. */
static void test_bad_record_lengths(void **state)
{
    const char *paths[] = {"src_huge.pcap"};
    uint8_t *big = calloc(1, 300000);
    char err[512] = "";
    cap_stats st;
    evlog log;
    pg_file *f = pg_file_open(paths[0], PG_PCAP, DLT_EN10MB, 65535);
    (void)state;
    assert_non_null(big);
    assert_int_equal(pg_file_write_raw(f, 1, big, 60, 60), 0);
    assert_int_equal(pg_file_write_raw(f, 2, big, 300000, 300000), 0);
    pg_file_close(f);
    assert_int_equal(run_file(paths, 1, err, sizeof err, &st, &log), -1);
    assert_string_equal(err, "'src_huge.pcap': bad record after 1 packets (invalid packet "
                             "capture length 300000, bigger than snaplen of 65535)");
    assert_int_equal(st.packets, 1);
    evlog_free(&log);
    paths[0] = "src_zero.pcap";
    f = pg_file_open(paths[0], PG_PCAP, DLT_EN10MB, 65535);
    assert_int_equal(pg_file_write_raw(f, 1, big, 60, 60), 0);
    assert_int_equal(pg_file_write_raw(f, 2, big, 0, 0), 0);
    assert_int_equal(pg_file_write_raw(f, 3, big, 60, 60), 0);
    pg_file_close(f);
    err[0] = '\0';
    assert_int_equal(run_file(paths, 1, err, sizeof err, &st, &log), 0);
    assert_string_equal(err, "");
    assert_int_equal(st.packets, 3);
    assert_int_equal(st.malformed, 1);
    assert_int_equal(st.non_ip, 2); /* 60 zero bytes: EtherType 0 */
    evlog_free(&log);
    free(big);
}

/* A Linux BIG TCP super-frame on an 'any' capture (SLL2): 400000 bytes on the
 * wire (Linux allows up to GSO_MAX_SIZE, 524280), 262144 captured (tcpdump's
 * snap length). A believable record: not flagged as impossible, its captured
 * head delivered, the rest one exact GAP, and the next segment follows. */
static void test_big_tcp_superframe(void **state)
{
    const char *paths[] = {"src_bigtcp.pcap"};
    const size_t wire = 400000, payload_len = wire - 20 - 40 - 20, tail = 100;
    uint8_t *payload = malloc(wire), *frame = malloc(wire + 512);
    char *want = malloc(wire);
    pg_packet p;
    pg_file *f;
    cap_source *src;
    cap_tracker *t;
    const cap_input_info *info;
    char err[512] = "";
    evlog log;
    size_t n, kept, at;
    (void)state;
    assert_non_null(payload);
    assert_non_null(frame);
    assert_non_null(want);
    for (size_t i = 0; i < wire; i++)
        payload[i] = (uint8_t)('a' + i % 26);
    f = pg_file_open(paths[0], PG_PCAP, DLT_LINUX_SLL2, 262144);
    assert_non_null(f);
    pg_packet_init(&p);
    p.dlt = DLT_LINUX_SLL2;
    p.src = "fd00::1";
    p.dst = "fd00::2";
    p.big = 1;
    p.seq = 1000;
    p.flags = PG_ACK | PG_PSH;
    p.payload = payload;
    p.len = payload_len;
    n = pg_build(&p, frame, wire + 512);
    assert_int_equal(n, wire);
    assert_int_equal(pg_file_write(f, 10, frame, n), 0); /* cut at 262144 */
    p.seq = 1000 + (uint32_t)payload_len;
    p.payload = payload + payload_len % 26; /* the letters go on */
    p.len = tail;
    p.big = 0;
    n = pg_build(&p, frame, wire + 512);
    assert_true(n > 0);
    assert_int_equal(pg_file_write(f, 20, frame, n), 0);
    assert_int_equal(pg_file_close(f), 0);

    src = open_ok(paths, 1);
    evlog_init(&log);
    t = cap_tracker_new(NULL, evlog_fn, &log);
    assert_non_null(t);
    assert_int_equal(cap_source_run(src, t, err, sizeof err), 0);
    cap_tracker_finish(t, 0);
    info = cap_source_inputs(src, &n);
    assert_int_equal(info[0].bad_lengths, 0);
    assert_int_equal(cap_tracker_stats(t)->malformed, 0);
    assert_int_equal(cap_tracker_stats(t)->truncated, 1);
    kept = 262144 - 20 - 40 - 20;
    memcpy(want, payload, kept);
    at = kept + (size_t)sprintf(want + kept, "<gap %zu>", payload_len - kept);
    memcpy(want + at, payload + payload_len % 26, tail);
    want[at + tail] = '\0';
    assert_string_equal(evlog_stream(&log, 1, CAP_TO_SERVER), want);
    cap_tracker_free(t);
    cap_source_free(src);
    evlog_free(&log);
    free(payload);
    free(frame);
    free(want);
}

/* In a merge, a file that fails is reported while the others are read to
 * their end; next() goes on after an error. */
static void test_merge_with_failure(void **state)
{
    const char *paths[] = {"src_fail.pcap", "src_good.pcap"};
    char err[512] = "";
    cap_stats st;
    evlog log;
    cap_source *src;
    cap_record rec;
    const cap_input_info *info;
    size_t n;
    int r, errors = 0, records = 0;
    (void)state;
    write_conv(paths[0], PG_PCAP, DLT_EN10MB, 41000, 10, 20);
    write_conv(paths[1], PG_PCAP, DLT_EN10MB, 41001, 11, 20);
    cut_file(paths[0], 24 + 2 * (16 + 54) + 10); /* two records and a bit */
    assert_int_equal(run_file(paths, 2, err, sizeof err, &st, &log), -1);
    assert_memory_equal(err, "'src_fail.pcap': truncated record after 2 packets",
                        strlen("'src_fail.pcap': truncated record after 2 packets"));
    assert_int_equal(st.packets, 2 + 9);
    assert_int_equal(st.connections, 2);
    assert_string_equal(evlog_stream(&log, 2, CAP_TO_CLIENT), "reply");
    evlog_free(&log);
    src = open_ok(paths, 2);
    while ((r = cap_source_next(src, &rec, err, sizeof err)) != 0) {
        if (r < 0)
            errors++;
        else
            records++;
    }
    assert_int_equal(errors, 1);
    assert_int_equal(records, 11);
    info = cap_source_inputs(src, &n);
    assert_memory_equal(info[0].error, err, strlen(err));
    assert_string_equal(info[1].error, "");
    cap_source_free(src);
}

/* Records going back in time are counted per file and by the tracker, by one
 * rule (older than an earlier record): 5, 3, 4, 7 s gives 2 both ways. */
static void test_time_backwards(void **state)
{
    const char *paths[] = {"src_back.pcap"};
    static uint8_t frame[PG_MAX_FRAME];
    pg_packet p;
    size_t len;
    char err[256] = "";
    cap_stats st;
    evlog log;
    cap_source *src;
    cap_record rec;
    const cap_input_info *info;
    size_t n;
    pg_file *f = pg_file_open(paths[0], PG_PCAP, DLT_EN10MB, 65535);
    (void)state;
    pg_packet_init(&p);
    len = pg_build(&p, frame, sizeof frame);
    pg_file_write(f, 5000000, frame, len);
    pg_file_write(f, 3000000, frame, len);
    pg_file_write(f, 4000000, frame, len);
    pg_file_write(f, 7000000, frame, len);
    pg_file_close(f);
    assert_int_equal(run_file(paths, 1, err, sizeof err, &st, &log), 0);
    assert_int_equal(st.time_backwards, 2);
    assert_int_equal(st.packets, 4);
    evlog_free(&log);
    src = open_ok(paths, 1);
    while (cap_source_next(src, &rec, err, sizeof err) == 1)
        ;
    info = cap_source_inputs(src, &n);
    assert_int_equal(info[0].time_backwards, 2);
    assert_int_equal(info[0].first_us, 5000000);
    assert_int_equal(info[0].last_us, 7000000);
    cap_source_free(src);
}

/* A break before the run makes it return 1 at once. */
static void test_break(void **state)
{
    const char *paths[] = {"src_brk.pcap"};
    cap_source *src;
    cap_tracker *t;
    char err[64] = "";
    (void)state;
    write_conv(paths[0], PG_PCAP, DLT_EN10MB, 41000, 10, 20);
    src = open_ok(paths, 1);
    t = cap_tracker_new(NULL, NULL, NULL);
    cap_source_break(src);
    assert_int_equal(cap_source_run(src, t, err, sizeof err), 1);
    assert_int_equal(cap_tracker_stats(t)->packets, 0);
    cap_tracker_free(t);
    cap_source_free(src);
}

/* Every test, in a scratch folder: the files are written by relative name. */
static int run_all(void *ctx)
{
    (void)ctx;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_order),
        cmocka_unit_test(test_pcapng_drops),
        cmocka_unit_test(test_merge_two_hosts),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_unsupported_linktype),
        cmocka_unit_test(test_truncated_record),
        cmocka_unit_test(test_bad_record_lengths),
        cmocka_unit_test(test_big_tcp_superframe),
        cmocka_unit_test(test_merge_with_failure),
        cmocka_unit_test(test_time_backwards),
        cmocka_unit_test(test_break),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

int main(void)
{
    return th_in_scratch_dir("capsrc", run_all, NULL);
}
