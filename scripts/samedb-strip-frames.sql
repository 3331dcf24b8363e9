-- samedb-strip-frames.sql: take away from a database what the frame numbers,
-- the display filters and the verdict diagnosis added (scripts/samedb.sh
-- --strip-new), so that the rest can be compared with a database of before.
ALTER TABLE redirects DROP COLUMN req_frame;
ALTER TABLE redirects DROP COLUMN reply_frame;
ALTER TABLE commands DROP COLUMN req_frame;
ALTER TABLE commands DROP COLUMN reply_frame;
ALTER TABLE findings DROP COLUMN frame_filter;
ALTER TABLE findings DROP COLUMN conn_filter;
UPDATE findings SET evidence = json_remove(evidence, '$.frame_filter', '$.conn_filter',
    '$.events[0].req_frame',
    '$.events[0].reply_frame',
    '$.events[1].req_frame',
    '$.events[1].reply_frame',
    '$.events[2].req_frame',
    '$.events[2].reply_frame',
    '$.events[3].req_frame',
    '$.events[3].reply_frame',
    '$.events[4].req_frame',
    '$.events[4].reply_frame',
    '$.events[5].req_frame',
    '$.events[5].reply_frame',
    '$.events[6].req_frame',
    '$.events[6].reply_frame',
    '$.events[7].req_frame',
    '$.events[7].reply_frame',
    '$.events[8].req_frame',
    '$.events[8].reply_frame',
    '$.events[9].req_frame',
    '$.events[9].reply_frame')
  WHERE evidence != '{}';
DELETE FROM counters WHERE name IN ('tls_connections', 'cluster_bus_connections',
                                    'unanswered_at_end');
DELETE FROM meta WHERE key IN ('diagnosis', 'diagnosis_text');
