-- slotscope database schema, version 7 (store.h: STORE_SCHEMA_VERSION).
--
-- One database holds one run: the inputs it read, the nodes and clients it saw,
-- every redirect reply, the findings with their evidence, each slot's migration
-- window, latency summaries and the counters of what the capture could not see.
-- Times are integer microseconds since the epoch, in columns ending _us.
-- Addresses are text as the report prints them: "10.0.0.5", "10.0.0.5:41234",
-- "[::1]:7001". Credentials are never stored; keys are hashed ("h:...") when the
-- run used --redact-keys.

-- Key/value facts about the run: schema_version, tool_version, start_us,
-- end_us, command_line, inputs (names, one per line), client_by, redact_keys.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Each capture file or live interface, and what was read from it (written
-- at the start, updated every few seconds and at the end).
CREATE TABLE inputs (
    id             INTEGER PRIMARY KEY,
    name           TEXT NOT NULL UNIQUE,
    linktype       INTEGER NOT NULL,
    linktype_name  TEXT NOT NULL,
    packets        INTEGER NOT NULL,
    bytes          INTEGER NOT NULL,
    first_us       INTEGER NOT NULL,
    last_us        INTEGER NOT NULL,
    kernel_drops   INTEGER NOT NULL DEFAULT 0,
    if_drops       INTEGER NOT NULL DEFAULT 0,
    time_backwards INTEGER NOT NULL DEFAULT 0, -- records older than the one before
    error          TEXT NOT NULL DEFAULT '',
    compression    TEXT NOT NULL DEFAULT '',   -- 'gzip', 'zstd' or '' (plain)
    time_offset_us INTEGER NOT NULL DEFAULT 0, -- added to its times (--time-offset)
    skew_us        INTEGER NOT NULL DEFAULT 0, -- its clock minus input skew_ref's, estimated
    skew_shared    INTEGER NOT NULL DEFAULT 0, -- TCP segments both captured (0: no estimate)
    skew_ref       INTEGER NOT NULL DEFAULT 0, -- inputs.id the skew is measured against
    drops_recorded INTEGER NOT NULL DEFAULT 0  -- 1: kernel_drops is a count (live, or pcapng
                                               -- statistics); 0: unknown (a pcap file)
);

-- Cluster nodes: the address seen in the capture, the one the cluster
-- announces (MOVED/ASK targets, CLUSTER SLOTS), its node id and role. The
-- columns from flags on are what the cluster bus showed ('' / 0 without bus
-- messages from or about the node); each *_us is when the current value was
-- first seen (its first message, or the message that changed it).
CREATE TABLE nodes (
    id          INTEGER PRIMARY KEY,
    observed    TEXT NOT NULL,
    announced   TEXT NOT NULL,
    node_id     TEXT NOT NULL,
    role        TEXT NOT NULL,
    slots_owned INTEGER NOT NULL,
    commands    INTEGER NOT NULL,
    flags           TEXT NOT NULL DEFAULT '',   -- master|replica[,pfail|,fail][,handshake,noaddr,nofailover]
    master_id       TEXT NOT NULL DEFAULT '',   -- a replica's master
    config_epoch    INTEGER NOT NULL DEFAULT 0,
    current_epoch   INTEGER NOT NULL DEFAULT 0,
    bus_port        INTEGER NOT NULL DEFAULT 0,
    role_us         INTEGER NOT NULL DEFAULT 0,
    master_us       INTEGER NOT NULL DEFAULT 0,
    config_epoch_us INTEGER NOT NULL DEFAULT 0,
    flags_us        INTEGER NOT NULL DEFAULT 0,
    UNIQUE (observed, announced)
);

-- Clients: a host, host:port when the run grouped per connection, host/name
-- with --client-by name; a host's node-to-node connections are 'host (node)'.
-- A client the analyzer evicted (table full) and saw again arrives twice; its
-- rows are merged (sums, earliest first_us, latest last_us). lib_name,
-- lib_ver and client_name are what its connections announced (CLIENT SETINFO,
-- CLIENT SETNAME, HELLO SETNAME; '' if nothing; escaped, at most 63 bytes).
CREATE TABLE clients (
    name          TEXT PRIMARY KEY,
    first_us      INTEGER NOT NULL,
    last_us       INTEGER NOT NULL,
    connections   INTEGER NOT NULL,
    commands      INTEGER NOT NULL,
    redirects     INTEGER NOT NULL,
    findings      INTEGER NOT NULL,
    cluster_aware INTEGER NOT NULL,
    is_node       INTEGER NOT NULL,
    lib_name      TEXT NOT NULL DEFAULT '',
    lib_ver       TEXT NOT NULL DEFAULT '',
    client_name   TEXT NOT NULL DEFAULT ''
);

-- TCP connections, written when they end. id is the run's connection id
-- (redirects.conn, commands.conn).
CREATE TABLE connections (
    id                INTEGER PRIMARY KEY,
    client            TEXT NOT NULL,
    src               TEXT NOT NULL,
    dst               TEXT NOT NULL,
    first_us          INTEGER NOT NULL,
    last_us           INTEGER NOT NULL,
    bytes_to_server   INTEGER NOT NULL,
    bytes_to_client   INTEGER NOT NULL,
    packets_to_server INTEGER NOT NULL,
    packets_to_client INTEGER NOT NULL,
    commands          INTEGER NOT NULL,
    gaps              INTEGER NOT NULL,
    gap_bytes         INTEGER NOT NULL,
    retransmits       INTEGER NOT NULL,
    out_of_order      INTEGER NOT NULL,
    out_of_sync       INTEGER NOT NULL,
    mid_stream        INTEGER NOT NULL,
    side_source       TEXT NOT NULL,   -- how the server side was found: syn, port, known, shape, guess
    requests          INTEGER NOT NULL,
    replies           INTEGER NOT NULL,
    pushes            INTEGER NOT NULL,
    unpaired_requests INTEGER NOT NULL,
    unpaired_replies  INTEGER NOT NULL,
    resyncs           INTEGER NOT NULL,
    skipped_bytes     INTEGER NOT NULL,
    protocol_errors   INTEGER NOT NULL,
    kind              TEXT NOT NULL,   -- client; replication (a replication link, with or
                                       -- without its PSYNC: never paired nor judged);
                                       -- node (other node-to-node traffic: MIGRATE);
                                       -- bus (the cluster bus: client '', no commands)
    lib_name          TEXT NOT NULL DEFAULT '',  -- what it announced (as clients)
    lib_ver           TEXT NOT NULL DEFAULT '',
    client_name       TEXT NOT NULL DEFAULT ''
);

-- One row per MOVED, ASK, TRYAGAIN, CROSSSLOT or CLUSTERDOWN reply. node is who
-- answered, target the MOVED/ASK target ('' otherwise), latency_us the time
-- from the complete request to the complete reply.
CREATE TABLE redirects (
    id         INTEGER PRIMARY KEY,
    ts_us      INTEGER NOT NULL,
    client     TEXT NOT NULL,
    conn       INTEGER NOT NULL,
    node       TEXT NOT NULL,
    kind       TEXT NOT NULL,          -- MOVED, ASK, TRYAGAIN, CROSSSLOT, CLUSTERDOWN
    slot       INTEGER NOT NULL,       -- -1 when unknown
    target     TEXT NOT NULL,
    command    TEXT NOT NULL,
    key        TEXT NOT NULL,
    latency_us INTEGER NOT NULL,
    req_frame   INTEGER NOT NULL DEFAULT 0, -- record (frame number) of the request's first packet
    reply_frame INTEGER NOT NULL DEFAULT 0, -- record of the reply's last packet
    cause       TEXT NOT NULL DEFAULT ''    -- MOVED: migration, failover or unknown (what
                                            -- changed the slot's owner); '' for the others
);

-- Findings: one kind of mishandling by one client (client '' for cluster-side
-- findings such as migration_stuck) for one slot/node, aggregated. id is the
-- analyzer's stable id: a finding that changes replaces its row. evidence is a
-- JSON object with the commands, replies, connections, times and record
-- (frame) numbers to check.
CREATE TABLE findings (
    id               INTEGER PRIMARY KEY,
    kind             TEXT NOT NULL,    -- ask_cached, asking_missing, ... (DESIGN.md)
    severity         TEXT NOT NULL,    -- info, warning, error
    severity_level   INTEGER NOT NULL, -- 1, 2, 3 (for ordering)
    client           TEXT NOT NULL,
    node             TEXT NOT NULL,
    slot             INTEGER NOT NULL, -- -1 when not about one slot
    first_us         INTEGER NOT NULL,
    last_us          INTEGER NOT NULL,
    count            INTEGER NOT NULL,
    extra_latency_us INTEGER NOT NULL,
    summary          TEXT NOT NULL,
    evidence         TEXT NOT NULL,    -- JSON
    operations       INTEGER NOT NULL DEFAULT 0, -- client findings: operations covered
    frame_filter     TEXT NOT NULL DEFAULT '', -- Wireshark filter of its evidence records
                                               -- ("frame.number in {...}": one input file)
    conn_filter      TEXT NOT NULL DEFAULT ''  -- ... of their connections (any input)
);

-- The report's blocks: one row per (client, kind) over the per-slot rows of
-- findings (client '' is the cluster side). slots is the slot set as ranges
-- ("0-96, 141, 12000"); count, operations and extra_latency_us are sums over
-- the block's findings (one kind: an operation is in one of them), first_us /
-- last_us the earliest and latest, nodes the distinct nodes.
CREATE VIEW finding_blocks AS
WITH s AS (SELECT DISTINCT client, kind, slot FROM findings WHERE slot >= 0),
     islands AS (SELECT client, kind, slot,
                        slot - row_number() OVER (PARTITION BY client, kind ORDER BY slot) AS g
                 FROM s),
     ranges AS (SELECT client, kind, min(slot) AS lo, max(slot) AS hi
                FROM islands GROUP BY client, kind, g ORDER BY client, kind, lo),
     slot_text AS (SELECT client, kind,
                          group_concat(CASE WHEN lo = hi THEN lo ELSE lo || '-' || hi END,
                                       ', ') AS slots,
                          sum(hi - lo + 1) AS slot_count
                   FROM ranges GROUP BY client, kind)
SELECT f.client AS client, f.kind AS kind, max(f.severity_level) AS severity_level,
       count(*) AS findings, coalesce(t.slot_count, 0) AS slot_count,
       coalesce(t.slots, '') AS slots, sum(f.count) AS count,
       sum(f.operations) AS operations, min(f.first_us) AS first_us,
       max(f.last_us) AS last_us, sum(f.extra_latency_us) AS extra_latency_us,
       coalesce(group_concat(DISTINCT nullif(f.node, '')), '') AS nodes
FROM findings f LEFT JOIN slot_text t ON t.client = f.client AND t.kind = f.kind
GROUP BY f.client, f.kind;

-- Each slot's migration window as reconstructed (a slot that moves twice has
-- two rows): first and last ASK, the
-- ownership flip (first MOVED to the target or SETSLOT NODE), SETSLOT times.
-- 0 in a *_us column means not seen.
CREATE TABLE slot_migrations (
    id            INTEGER PRIMARY KEY,
    slot          INTEGER NOT NULL,
    source        TEXT NOT NULL,
    target        TEXT NOT NULL,
    first_ask_us  INTEGER NOT NULL,
    last_ask_us   INTEGER NOT NULL,
    flip_us       INTEGER NOT NULL,
    importing_us  INTEGER NOT NULL,
    migrating_us  INTEGER NOT NULL,
    asks          INTEGER NOT NULL,
    tryagains     INTEGER NOT NULL,
    moveds        INTEGER NOT NULL,
    keys_migrated INTEGER NOT NULL,
    complete      INTEGER NOT NULL
);

-- Slot ownership over time. source 'bus': as the masters claimed the slots on
-- the cluster bus (the higher config epoch wins); 'clients': as clients were
-- told (CLUSTER SLOTS / SHARDS / NODES replies, MOVED). Both are kept; the
-- report uses 'bus' when the capture has any. A row is a run of consecutive
-- slots with one owner, epoch and period; to_us 0: still the owner at the
-- end. config_epoch 0: the source gives none. cause: how the node got them
-- (first: the first owner the capture shows; migration; failover; unknown).
CREATE TABLE slot_owners (
    id           INTEGER PRIMARY KEY,
    slot_lo      INTEGER NOT NULL,
    slot_hi      INTEGER NOT NULL,
    node         TEXT NOT NULL,
    node_id      TEXT NOT NULL,
    config_epoch INTEGER NOT NULL,
    from_us      INTEGER NOT NULL,
    to_us        INTEGER NOT NULL,
    source       TEXT NOT NULL,
    cause        TEXT NOT NULL
);

-- A node's health as the other nodes saw it on the bus: from / to 'ok',
-- 'pfail', 'fail'; reporter is the node whose message showed the change, via
-- that message's type (ping, pong, fail, ...), frame its record.
CREATE TABLE node_states (
    id          INTEGER PRIMARY KEY,
    ts_us       INTEGER NOT NULL,
    node        TEXT NOT NULL,
    node_id     TEXT NOT NULL,
    from_state  TEXT NOT NULL,
    to_state    TEXT NOT NULL,
    reporter    TEXT NOT NULL,
    reporter_id TEXT NOT NULL,
    via         TEXT NOT NULL,
    frame       INTEGER NOT NULL
);

-- Failovers as the cluster bus showed them. kind: manual (MFSTART seen),
-- takeover (epoch bump without an election), automatic (FAIL, then the
-- election). detected_us: manual the MFSTART, automatic the old master's FAIL
-- (else PFAIL), 0 for takeover; elected_us: the vote that made the majority
-- (else the last vote); done_us: the new master's first claim (0: election
-- seen, outcome not). votes: FAILOVER_AUTH_ACKs seen; slots: slots taken over.
CREATE TABLE failovers (
    id           INTEGER PRIMARY KEY,
    ts_us        INTEGER NOT NULL,
    kind         TEXT NOT NULL,
    old_master   TEXT NOT NULL,
    old_id       TEXT NOT NULL,
    new_master   TEXT NOT NULL,
    new_id       TEXT NOT NULL,
    config_epoch INTEGER NOT NULL,
    detected_us  INTEGER NOT NULL,
    elected_us   INTEGER NOT NULL,
    done_us      INTEGER NOT NULL,
    votes        INTEGER NOT NULL,
    slots        INTEGER NOT NULL,
    frame        INTEGER NOT NULL
);

-- Latency of logical operations (first attempt to final reply), direct and
-- redirected, per client, slot, node and over all ('all', key 'all').
-- extra_us is the time redirected operations spent on redirects.
CREATE TABLE latency (
    scope             TEXT NOT NULL,   -- client, slot, node, all
    key               TEXT NOT NULL,   -- client name, slot number, node address, 'all'
    redirected        INTEGER NOT NULL,
    count             INTEGER NOT NULL,
    p50_us            INTEGER NOT NULL,
    p90_us            INTEGER NOT NULL,
    p99_us            INTEGER NOT NULL,
    max_us            INTEGER NOT NULL,
    total_us          INTEGER NOT NULL,
    extra_us          INTEGER NOT NULL,
    extra_round_trips INTEGER NOT NULL,
    PRIMARY KEY (scope, key, redirected)
);

-- Counters of the three stages: packets, bytes, connections, commands,
-- redirects, gaps, unpaired_requests, unpaired_replies, resyncs,
-- evicted_connections, and more (see store_each_counter in store.h).
CREATE TABLE counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);

-- Every paired command, only with --store-commands (forensics). Only the name,
-- the first key (hashed with --redact-keys) and sizes are kept, never values.
CREATE TABLE commands (
    id          INTEGER PRIMARY KEY,
    ts_us       INTEGER NOT NULL,      -- request complete
    reply_us    INTEGER NOT NULL,      -- reply complete, 0 if none
    client      TEXT NOT NULL,
    conn        INTEGER NOT NULL,
    node        TEXT NOT NULL,         -- server endpoint
    seq         INTEGER NOT NULL,      -- index on its connection
    name        TEXT NOT NULL,
    argc        INTEGER NOT NULL,
    slot        INTEGER NOT NULL,      -- -1 when no key
    key         TEXT NOT NULL,
    outcome     TEXT NOT NULL,         -- ok, no_reply, unanswered
    reply_type  TEXT NOT NULL,         -- RESP type character, '' if none
    error       TEXT NOT NULL,         -- error class (MOVED, ERR, ...) or ''
    latency_us  INTEGER NOT NULL,      -- reply_us - ts_us, 0 if no reply
    req_bytes   INTEGER NOT NULL,
    reply_bytes INTEGER NOT NULL,
    in_multi    INTEGER NOT NULL,
    req_frame   INTEGER NOT NULL DEFAULT 0, -- record of the request's first packet
    reply_frame INTEGER NOT NULL DEFAULT 0  -- record of the reply's last packet, 0 if none
);

-- After each ownership change (a bus claim; what clients were told when the
-- capture has no bus), one row per client that sent commands for those slots:
-- how long it kept sending them to the old owner (last_stale_us - flip_us) and
-- what it paid. Commands sent with ASKING are not stale. A change is watched
-- for convergence_window_ms (--set). 0 in a *_us column means none.
CREATE TABLE convergence (
    id             INTEGER PRIMARY KEY,
    client         TEXT NOT NULL,
    slot_lo        INTEGER NOT NULL,
    slot_hi        INTEGER NOT NULL,
    old_node       TEXT NOT NULL,
    new_node       TEXT NOT NULL,
    source         TEXT NOT NULL,      -- bus, clients
    flip_us        INTEGER NOT NULL,   -- the change (bus: the claim's capture time)
    flip_frame     INTEGER NOT NULL,   -- the record proving it (bus), else 0
    config_epoch   INTEGER NOT NULL,   -- the new owner's (bus), else 0
    first_us       INTEGER NOT NULL,   -- its first command for the slots after the flip
    last_stale_us  INTEGER NOT NULL,   -- its last command sent to the old owner
    converged_us   INTEGER NOT NULL,   -- its first command sent to the new owner
    stale_commands INTEGER NOT NULL,
    moved_replies  INTEGER NOT NULL,
    at_risk_writes INTEGER NOT NULL
);

-- Every write of a writes_at_risk finding: acknowledged by node for slot
-- after new_node had claimed the slot on the bus with a higher config epoch
-- (proof_frame: that bus message's record). Keys are hashed under
-- --redact-keys.
CREATE TABLE at_risk_writes (
    id            INTEGER PRIMARY KEY,
    finding_id    INTEGER NOT NULL,    -- findings.id
    ts_us         INTEGER NOT NULL,    -- the acknowledgement (reply complete)
    client        TEXT NOT NULL,
    node          TEXT NOT NULL,
    new_node      TEXT NOT NULL,
    slot          INTEGER NOT NULL,
    command       TEXT NOT NULL,
    key           TEXT NOT NULL,
    req_frame     INTEGER NOT NULL,
    reply_frame   INTEGER NOT NULL,
    proof_frame   INTEGER NOT NULL,
    config_epoch  INTEGER NOT NULL
);

-- The redirect time series (analysis/series.c; not slot_migrations, the
-- per slot windows): per time bucket [bucket_us, bucket_us + width_us) of
-- capture time (1 s unless --bucket), what the whole cluster (scope
-- 'cluster', scope_id 'all'), each node (its address), each client and each
-- migrating slot range ('slots', '5000-5099': consecutive slots of one source
-- and target while their migration windows were open) saw. Per bucket and
-- scope kind the top scopes by redirects (--set series_top, 10) have rows of
-- their own; the rest are summed in one row, scope_id 'other', scopes = how
-- many it sums. An event counts at its reply's time, an operation at its final
-- reply. Latencies are of logical operations (first request to final reply),
-- from log-linear histograms (within 1/16 of the value); NULL when none ended.
CREATE TABLE timeline (
    bucket_us         INTEGER NOT NULL,
    width_us          INTEGER NOT NULL,
    scope             TEXT NOT NULL,    -- cluster, node, client, slots
    scope_id          TEXT NOT NULL,
    scopes            INTEGER NOT NULL, -- scopes summed in this row (1 but for 'other')
    commands          INTEGER NOT NULL, -- paired commands (node links included)
    moved             INTEGER NOT NULL,
    ask               INTEGER NOT NULL,
    tryagain          INTEGER NOT NULL,
    crossslot         INTEGER NOT NULL,
    clusterdown       INTEGER NOT NULL,
    asking            INTEGER NOT NULL, -- ASKING commands
    retries           INTEGER NOT NULL, -- attempts that retried a redirected one
    direct_ops        INTEGER NOT NULL, -- operations that ended with one attempt
    redirected_ops    INTEGER NOT NULL, -- ... after a redirect (or gave up)
    direct_p50_us     INTEGER,
    direct_p99_us     INTEGER,
    redirected_p50_us INTEGER,
    redirected_p99_us INTEGER
);

-- The indexes for the canned queries (queries/*.sql) are in store/indexes.sql:
-- store_open creates them with the tables for a live run, store_close builds
-- them for a run over capture files (store_opts.index_at_close).
