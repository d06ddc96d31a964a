//! Append-only migrations of the PostgreSQL schema, tracked in
//! `pointhook_schema` and applied in one transaction under an advisory
//! lock, so several instances starting at once apply each exactly once.
//! Never edit a released migration: add one.

use tokio_postgres::Client;

use crate::store::StoreError;

/// Migration `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: everything the SQLite schema has at its version 5.
    r#"
    CREATE TABLE deliveries (
        id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        received_at     BIGINT   NOT NULL,   -- unix milliseconds
        account         TEXT     NOT NULL,
        kind            SMALLINT NOT NULL,   -- domain::Kind
        topic           TEXT     NOT NULL,
        resource_id     TEXT     NOT NULL,
        notification_id TEXT,
        source_news     TEXT,
        query           TEXT     NOT NULL,
        headers         TEXT     NOT NULL,
        body            BYTEA,
        body_size       BIGINT,
        remote_addr     TEXT     NOT NULL,
        fingerprint     BYTEA    NOT NULL,
        duplicate_of    BIGINT,
        signature       SMALLINT NOT NULL,   -- domain::SignatureStatus
        job_key         TEXT
    );
    -- With id last, the duplicate check is one seek, already in order.
    CREATE INDEX deliveries_resource ON deliveries (account, resource_id, fingerprint, id);
    CREATE INDEX deliveries_received_at ON deliveries (received_at);
    -- job_key first: an index that starts with account alone is a plan
    -- the duplicate check could pick on a young table (and then read every
    -- delivery of the account per insert).
    CREATE INDEX deliveries_job ON deliveries (job_key, account);

    CREATE TABLE jobs (
        id                BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        account           TEXT     NOT NULL,
        job_key           TEXT     NOT NULL,
        kind              SMALLINT NOT NULL,   -- domain::JobKind
        resource_id       TEXT     NOT NULL,
        input_delivery_id BIGINT,
        work              TEXT,
        work_rank         BIGINT   NOT NULL DEFAULT 0,
        state             SMALLINT NOT NULL,   -- domain::JobState
        rerun             BOOLEAN  NOT NULL DEFAULT false,
        attempts          INTEGER  NOT NULL DEFAULT 0,
        run_at            BIGINT   NOT NULL,
        lease_until       BIGINT,
        last_error        TEXT,
        created_at        BIGINT   NOT NULL,
        updated_at        BIGINT   NOT NULL,
        UNIQUE (account, job_key)
    );
    CREATE INDEX jobs_runnable ON jobs (state, run_at);

    CREATE TABLE health (
        id         INTEGER PRIMARY KEY CHECK (id = 1),
        checked_at BIGINT  NOT NULL
    );

    CREATE TABLE decisions (
        id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        account    TEXT   NOT NULL,
        subject    TEXT   NOT NULL,
        key        TEXT   NOT NULL,
        event_type TEXT   NOT NULL,
        event_id   TEXT,
        job_id     BIGINT,
        created_at BIGINT NOT NULL,
        UNIQUE (account, subject, key)
    );

    CREATE TABLE events (
        seq             BIGINT GENERATED ALWAYS AS IDENTITY,  -- insertion order
        id              TEXT     PRIMARY KEY,
        account         TEXT     NOT NULL,
        type            TEXT     NOT NULL,
        subject         TEXT     NOT NULL,
        body            TEXT     NOT NULL,
        job_id          BIGINT,
        created_at      BIGINT   NOT NULL,
        state           SMALLINT NOT NULL,   -- domain::EventState
        attempts        INTEGER  NOT NULL DEFAULT 0,
        next_attempt_at BIGINT   NOT NULL,
        last_error      TEXT,
        delivered_at    BIGINT,
        lease_until     BIGINT
    );
    CREATE INDEX events_due ON events (state, next_attempt_at);
    CREATE INDEX events_subject ON events (account, subject);
    CREATE INDEX events_seq ON events (seq);

    CREATE TABLE fetches (
        id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        job_id      BIGINT  NOT NULL,
        account     TEXT    NOT NULL,
        endpoint    TEXT    NOT NULL,
        resource_id TEXT    NOT NULL,
        status      INTEGER NOT NULL,
        elapsed_ms  BIGINT  NOT NULL,
        at          BIGINT  NOT NULL
    );
    CREATE INDEX fetches_job ON fetches (job_id);
    CREATE INDEX fetches_resource ON fetches (account, endpoint, resource_id);

    CREATE TABLE orders (
        account      TEXT   NOT NULL,
        order_id     TEXT   NOT NULL,
        total_amount TEXT,
        paid_amount  TEXT,
        released_at  BIGINT,
        blocked_at   BIGINT,
        at_risk_at   BIGINT,
        updated_at   BIGINT NOT NULL,
        PRIMARY KEY (account, order_id)
    );

    CREATE TABLE order_blocks (
        account    TEXT   NOT NULL,
        order_id   TEXT   NOT NULL,
        alert      TEXT   NOT NULL,
        blocked_at BIGINT NOT NULL,
        lifted_at  BIGINT,
        PRIMARY KEY (account, order_id, alert)
    );

    CREATE TABLE fraud_reviews (
        id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        account        TEXT     NOT NULL,
        job_key        TEXT     NOT NULL,
        alert          TEXT     NOT NULL,
        merchant_order TEXT,
        payment        TEXT,
        reason         TEXT     NOT NULL,
        state          SMALLINT NOT NULL,   -- domain::Review
        created_at     BIGINT   NOT NULL,
        decided_at     BIGINT,
        UNIQUE (account, job_key)
    );
    CREATE INDEX fraud_reviews_state ON fraud_reviews (state, id);
    "#,
    // 2: what each read saw of its resource (its last-update stamp, an
    // intent's state), so reconciliation knows what is news.
    r#"
    ALTER TABLE fetches ADD COLUMN seen TEXT;
    "#,
    // 3: pruning finds old fetches by their time (as SQLite's 7).
    r#"
    CREATE INDEX fetches_at ON fetches (at);
    "#,
    // 4: as SQLite's 8: reasons, reviews by round, blocks by
    // unauthenticated alerts, signatures looked up, API answers kept.
    r#"
    ALTER TABLE decisions ADD COLUMN reason TEXT;
    ALTER TABLE fraud_reviews DROP CONSTRAINT fraud_reviews_account_job_key_key;
    ALTER TABLE fraud_reviews ADD COLUMN round INT NOT NULL DEFAULT 0;
    ALTER TABLE fraud_reviews ADD COLUMN delivery_id BIGINT;
    ALTER TABLE fraud_reviews ADD CONSTRAINT fraud_reviews_round UNIQUE (account, job_key, round);
    ALTER TABLE order_blocks ADD COLUMN unauthenticated BOOLEAN NOT NULL DEFAULT false;
    CREATE INDEX order_blocks_unauthenticated ON order_blocks (account, blocked_at)
        WHERE unauthenticated;
    ALTER TABLE deliveries ADD COLUMN signature_key TEXT;
    CREATE INDEX deliveries_signature ON deliveries (signature_key)
        WHERE signature_key IS NOT NULL;
    ALTER TABLE fetches ADD COLUMN body BYTEA;
    "#,
    // 5: as SQLite's 9: a queue per destination, the destinations' state,
    // an event's row summing its queue rows up; events of an earlier
    // version go to `[fulfillment]`, the destination `default`.
    r#"
    CREATE TABLE outbox (
        seq             BIGINT GENERATED ALWAYS AS IDENTITY,  -- the order queued
        event_id        TEXT     NOT NULL,
        destination     TEXT     NOT NULL,
        state           SMALLINT NOT NULL,   -- domain::EventState
        attempts        INTEGER  NOT NULL DEFAULT 0,
        next_attempt_at BIGINT   NOT NULL,
        lease_until     BIGINT,
        last_error      TEXT,
        delivered_at    BIGINT,
        created_at      BIGINT   NOT NULL,
        queued_at       BIGINT   NOT NULL,
        PRIMARY KEY (event_id, destination)
    );
    CREATE INDEX outbox_due ON outbox (destination, state, next_attempt_at, seq);
    CREATE INDEX outbox_created ON outbox (destination, created_at);

    CREATE TABLE destinations (
        name            TEXT     PRIMARY KEY,
        url             TEXT,
        configured      BOOLEAN  NOT NULL DEFAULT false,
        state           SMALLINT NOT NULL,   -- domain::DestinationState
        disabled_reason TEXT,
        disabled_at     BIGINT,
        failing_since   BIGINT,
        last_success_at BIGINT,
        recovery_since  BIGINT,
        recovery_at     BIGINT,
        recovery_queued BIGINT,
        updated_at      BIGINT   NOT NULL
    );

    ALTER TABLE events ADD COLUMN unfinished INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE events ADD COLUMN gave_up INTEGER NOT NULL DEFAULT 0;
    INSERT INTO outbox (event_id, destination, state, attempts, next_attempt_at, lease_until,
                        last_error, delivered_at, created_at, queued_at)
        SELECT id, 'default', state, attempts, next_attempt_at, lease_until, last_error,
               delivered_at, created_at, created_at
        FROM events WHERE state IN (0, 1, 2) ORDER BY seq;
    UPDATE events SET unfinished = 1 WHERE state = 0;
    UPDATE events SET gave_up = 1 WHERE state = 2;
    INSERT INTO destinations (name, state, updated_at)
        SELECT 'default', 0, coalesce(max(created_at), 0) FROM events
        HAVING count(*) FILTER (WHERE state IN (0, 1, 2)) > 0;
    "#,
    // 6: a body kept short keeps the SHA-256 of the whole one (as
    // SQLite's 10).
    r#"
    ALTER TABLE deliveries ADD COLUMN body_sha256 BYTEA;
    "#,
    // 7: jobs wait in a lane (as SQLite's 11); the live lane's pending jobs
    // have an index of their own, read newest first.
    r#"
    ALTER TABLE jobs ADD COLUMN lane SMALLINT NOT NULL DEFAULT 1;
    CREATE INDEX jobs_live ON jobs (run_at) WHERE state = 0 AND lane = 0;
    "#,
    // 8: the operator console (as SQLite's 12): operators, sessions, the
    // audit, acknowledgements, the health charts' samples, each attempt of
    // an event and each death of a job (kept by triggers), and the partial
    // and expression indexes of the console's lists.
    include_str!("08_operator_console.sql"),
    // 9: what a person was told (as SQLite's 13).
    r#"
    CREATE TABLE incidents (
        id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        kind        SMALLINT NOT NULL,   -- domain::attention::AlertKind
        item        TEXT     NOT NULL,
        text        TEXT     NOT NULL,
        path        TEXT     NOT NULL,
        opened_at   BIGINT   NOT NULL,
        notified_at BIGINT,
        resolved_at BIGINT
    );
    CREATE UNIQUE INDEX incidents_open ON incidents (kind, item) WHERE resolved_at IS NULL;
    CREATE INDEX incidents_resolved ON incidents (resolved_at) WHERE resolved_at IS NOT NULL;
    "#, // 10: what a job decided (as SQLite's 14).
    r#"
    CREATE INDEX decisions_job ON decisions (job_id) WHERE job_id IS NOT NULL;
    "#, // 11: the classic payments behind orders of the Orders API (as
    // SQLite's 15).
    r#"
    CREATE TABLE order_payments (
        account        TEXT NOT NULL,
        payment_id     TEXT NOT NULL,
        platform_order TEXT NOT NULL,
        PRIMARY KEY (account, payment_id)
    );
    "#,
    // 12: holds (as SQLite's 16).
    r#"
    CREATE TABLE holds (
        id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        account    TEXT     NOT NULL,
        kind       TEXT     NOT NULL,
        subject    TEXT     NOT NULL,
        state      SMALLINT NOT NULL,   -- domain::HoldState
        reason     TEXT     NOT NULL,
        evidence   TEXT     NOT NULL,   -- JSON: what the rule read
        job_id     BIGINT,
        decided_by TEXT,
        decided_at BIGINT,
        created_at BIGINT   NOT NULL,
        UNIQUE (account, kind, subject)
    );
    CREATE INDEX holds_state ON holds (state, id);
    "#, // 13: a job's failure, typed beside its error text (as SQLite's 17).
    r#"
    ALTER TABLE jobs ADD COLUMN failure_class TEXT,
        ADD COLUMN failure_status INTEGER,
        ADD COLUMN failure_endpoint TEXT;
    "#, // 14: a decision's subject in its two parts (as SQLite's 18).
    r#"
    ALTER TABLE decisions
        ADD COLUMN subject_kind TEXT GENERATED ALWAYS AS (split_part(subject, ':', 1)) STORED,
        ADD COLUMN subject_id TEXT
            GENERATED ALWAYS AS (substr(subject, strpos(subject, ':') + 1)) STORED;
    "#, // 15: when each event last failed, was paused or gave up at a
    // destination, since when a destination has something to recover, and
    // the indexes of the lists of what gave up (as SQLite's 19).
    r#"
    ALTER TABLE outbox ADD COLUMN failed_at BIGINT;
    UPDATE outbox SET failed_at = coalesce(
        (SELECT max(a.at) FROM event_attempts a
         WHERE a.event_id = outbox.event_id AND a.destination = outbox.destination),
        queued_at)
    WHERE state IN (2, 4) OR (state = 0 AND attempts > 0);
    ALTER TABLE destinations ADD COLUMN outage_since BIGINT;
    UPDATE destinations SET outage_since = coalesce(failing_since, disabled_at)
    WHERE state = 1 OR EXISTS (SELECT 1 FROM outbox o WHERE o.destination = name AND o.state = 2);
    CREATE INDEX outbox_state ON outbox (state, next_attempt_at, seq);
    CREATE INDEX outbox_queued ON outbox (destination, queued_at);
    "#,
    // 16: fraud reviews are holds of kind `fraud_review` (as SQLite's 20).
    r#"
    INSERT INTO holds (account, kind, subject, state, reason, evidence, job_id,
                       decided_at, created_at)
        SELECT r.account, 'fraud_review', r.alert, r.state, r.reason,
               json_build_object('job_key', r.job_key, 'round', r.round,
                                 'merchant_order', r.merchant_order, 'payment', r.payment,
                                 'delivery_id', r.delivery_id)::text,
               (SELECT j.id FROM jobs j
                WHERE j.account = r.account AND j.job_key = r.job_key LIMIT 1),
               r.decided_at, r.created_at
        FROM fraud_reviews r ORDER BY r.id;
    DROP TABLE fraud_reviews;
    CREATE VIEW fraud_reviews AS
        SELECT id, account,
               evidence::jsonb ->> 'job_key' AS job_key,
               CAST(evidence::jsonb ->> 'round' AS INT) AS round,
               subject AS alert,
               evidence::jsonb ->> 'merchant_order' AS merchant_order,
               evidence::jsonb ->> 'payment' AS payment,
               reason, state,
               CAST(evidence::jsonb ->> 'delivery_id' AS BIGINT) AS delivery_id,
               created_at, decided_at
        FROM holds WHERE kind = 'fraud_review';
    "#, // 17: what each order is known by (as SQLite's 21).
    r#"
    CREATE TABLE order_refs (
        account TEXT NOT NULL,
        kind    TEXT NOT NULL,
        value   TEXT NOT NULL,
        subject TEXT NOT NULL,
        PRIMARY KEY (account, value, kind, subject)
    );
    "#,
];

/// The schema version this build writes.
pub const LATEST: i64 = MIGRATIONS.len() as i64;

/// The advisory lock migrations hold (any fixed number will do; this one
/// spells "ptHk").
const MIGRATION_LOCK: i64 = 0x7074_486b;

/// Brings the database up to `LATEST`; a no-op when it is there already.
pub async fn migrate(client: &mut Client) -> Result<i64, StoreError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS pointhook_schema (
             one     BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
             version BIGINT  NOT NULL
         );
         INSERT INTO pointhook_schema (version) VALUES (0) ON CONFLICT DO NOTHING;",
    )
    .await?;
    let version: i64 = tx
        .query_one("SELECT version FROM pointhook_schema", &[])
        .await?
        .get(0);
    if version > LATEST {
        return Err(StoreError::TooNew {
            found: version,
            known: LATEST,
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.batch_execute(sql).await?;
        tx.execute(
            "UPDATE pointhook_schema SET version = $1",
            &[&((i + 1) as i64)],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(LATEST)
}

/// The version a database is at (0: never migrated).
pub async fn version(client: &Client) -> Result<i64, StoreError> {
    let exists: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE tablename = 'pointhook_schema')",
            &[],
        )
        .await?
        .get(0);
    if !exists {
        return Ok(0);
    }
    Ok(client
        .query_one("SELECT version FROM pointhook_schema", &[])
        .await?
        .get(0))
}

#[cfg(test)]
mod tests;
