-- migrations: when did each slot migrate, from which node to which, and how long was its ASK window?
-- Parameters: none.
-- Usage: slotscope query DB migrations   or   sqlite3 -header -column DB < queries/migrations.sql
-- One row per slot migration in time order. window_ms is last ASK minus first
-- ASK; empty times were not seen in the capture (SETSLOT commands are only seen
-- when the capture includes the reshard tool's connections). complete = 0: the
-- window has no end in the capture (see the migration_stuck finding).
SELECT slot, source, target,
       CASE WHEN importing_us > 0
            THEN strftime('%Y-%m-%d %H:%M:%f', importing_us / 1000000.0, 'unixepoch') END
           AS importing_utc,
       CASE WHEN first_ask_us > 0
            THEN strftime('%Y-%m-%d %H:%M:%f', first_ask_us / 1000000.0, 'unixepoch') END
           AS first_ask_utc,
       CASE WHEN last_ask_us > 0
            THEN strftime('%Y-%m-%d %H:%M:%f', last_ask_us / 1000000.0, 'unixepoch') END
           AS last_ask_utc,
       CASE WHEN flip_us > 0
            THEN strftime('%Y-%m-%d %H:%M:%f', flip_us / 1000000.0, 'unixepoch') END
           AS flip_utc,
       CASE WHEN first_ask_us > 0 THEN round((last_ask_us - first_ask_us) / 1000.0, 3) END
           AS window_ms,
       asks, tryagains, moveds, keys_migrated, complete
  FROM slot_migrations
 ORDER BY coalesce(nullif(first_ask_us, 0), nullif(importing_us, 0), nullif(migrating_us, 0),
                   nullif(flip_us, 0)), slot, id;
