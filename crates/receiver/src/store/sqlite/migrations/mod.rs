//! Append-only schema migrations, tracked with `PRAGMA user_version` and run
//! in one exclusive transaction. Never edit a released migration: add one.

use rusqlite::{Connection, TransactionBehavior};

use crate::store::StoreError;

/// Migration `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: deliveries and the jobs they feed.
    r#"
    CREATE TABLE deliveries (
        id              INTEGER PRIMARY KEY,
        received_at     INTEGER NOT NULL,   -- unix milliseconds
        account         TEXT    NOT NULL,
        kind            INTEGER NOT NULL,   -- domain::Kind
        topic           TEXT    NOT NULL,   -- as received
        resource_id     TEXT    NOT NULL,
        notification_id TEXT,
        source_news     TEXT,
        query           TEXT    NOT NULL,
        headers         TEXT    NOT NULL,   -- JSON object of the headers we keep
        body            BLOB,               -- exact bytes; NULL when empty
        remote_addr     TEXT    NOT NULL,
        fingerprint     BLOB    NOT NULL,
        duplicate_of    INTEGER,            -- first delivery with this fingerprint
        signature       INTEGER NOT NULL,   -- domain::SignatureStatus
        job_key         TEXT                -- NULL: ignored (a topic we do not handle)
    ) STRICT;
    -- Duplicates share account and resource, so this index finds them
    -- without indexing the (random) fingerprint itself, which would dirty a
    -- random page per insert and multiply what each commit writes.
    CREATE INDEX deliveries_resource ON deliveries (account, resource_id);
    CREATE INDEX deliveries_received_at ON deliveries (received_at);

    CREATE TABLE jobs (
        id                INTEGER PRIMARY KEY,
        account           TEXT    NOT NULL,
        job_key           TEXT    NOT NULL,
        kind              INTEGER NOT NULL,   -- domain::JobKind
        resource_id       TEXT    NOT NULL,
        input_delivery_id INTEGER REFERENCES deliveries (id),
        state             INTEGER NOT NULL,   -- domain::JobState
        rerun             INTEGER NOT NULL DEFAULT 0,  -- notified again while running
        attempts          INTEGER NOT NULL DEFAULT 0,
        run_at            INTEGER NOT NULL,   -- unix ms; earliest next run
        lease_until       INTEGER,            -- unix ms, while running
        last_error        TEXT,
        created_at        INTEGER NOT NULL,
        updated_at        INTEGER NOT NULL,
        UNIQUE (account, job_key)
    ) STRICT;
    CREATE INDEX jobs_runnable ON jobs (state, run_at);

    CREATE TABLE health (
        id         INTEGER PRIMARY KEY CHECK (id = 1),
        checked_at INTEGER NOT NULL
    ) STRICT;
    "#,
    // 2: what the worker decided, the outbox of events, merchant orders.
    r#"
    CREATE TABLE decisions (
        id         INTEGER PRIMARY KEY,
        account    TEXT    NOT NULL,
        subject    TEXT    NOT NULL,   -- e.g. merchant_order:123
        key        TEXT    NOT NULL,   -- e.g. order.released, or with the state seen
        event_type TEXT    NOT NULL,
        event_id   TEXT,               -- NULL: recorded without an event (a conflict)
        job_id     INTEGER,
        created_at INTEGER NOT NULL,
        UNIQUE (account, subject, key)
    ) STRICT;

    CREATE TABLE events (
        id              TEXT    PRIMARY KEY,   -- evt_…, stable across redeliveries
        account         TEXT    NOT NULL,
        type            TEXT    NOT NULL,
        subject         TEXT    NOT NULL,
        body            TEXT    NOT NULL,      -- the exact JSON that is POSTed
        job_id          INTEGER,
        created_at      INTEGER NOT NULL,
        state           INTEGER NOT NULL,      -- domain::EventState
        attempts        INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL,
        last_error      TEXT,
        delivered_at    INTEGER
    ) STRICT;
    CREATE INDEX events_due ON events (state, next_attempt_at);
    CREATE INDEX events_subject ON events (account, subject);

    CREATE TABLE fetches (
        id          INTEGER PRIMARY KEY,
        job_id      INTEGER NOT NULL,
        account     TEXT    NOT NULL,
        endpoint    TEXT    NOT NULL,   -- api::Endpoint
        resource_id TEXT    NOT NULL,
        status      INTEGER NOT NULL,   -- HTTP status; 0: no answer
        elapsed_ms  INTEGER NOT NULL,
        at          INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX fetches_job ON fetches (job_id);
    CREATE INDEX fetches_resource ON fetches (account, endpoint, resource_id);

    CREATE TABLE orders (
        account      TEXT    NOT NULL,
        order_id     TEXT    NOT NULL,
        total_amount TEXT,
        paid_amount  TEXT,
        released_at  INTEGER,
        blocked_at   INTEGER,
        at_risk_at   INTEGER,
        updated_at   INTEGER NOT NULL,
        PRIMARY KEY (account, order_id)
    ) STRICT, WITHOUT ROWID;
    "#,
    // 3: the work is stored with its job; blocks per fraud alert; reviews.
    r#"
    ALTER TABLE jobs ADD COLUMN work TEXT;   -- domain::Work as JSON
    ALTER TABLE jobs ADD COLUMN work_rank INTEGER NOT NULL DEFAULT 0;
    -- Jobs of an earlier version: fetches from their kind and resource;
    -- payment-intent bodies (kind 6) become fetches of the intent; fraud
    -- alerts from their input delivery's body, unauthenticated.
    UPDATE jobs SET work = json_object(
        'kind', CASE kind WHEN 1 THEN 'payment' WHEN 2 THEN 'merchant_order'
                          WHEN 3 THEN 'chargeback' ELSE 'payment_intent' END,
        'id', resource_id)
    WHERE kind IN (1, 2, 3, 4, 6);
    UPDATE jobs SET kind = 4 WHERE kind = 6;
    UPDATE jobs SET work = (
        SELECT json_object(
            'kind', 'fraud_alert',
            'merchant_order', CAST(coalesce(json_extract(b.text, '$.merchant_order'),
                                            json_extract(b.text, '$.data.merchant_order')) AS TEXT),
            'payment', jobs.resource_id,
            'notified_id', NULL,
            'description', coalesce(json_extract(b.text, '$.description'),
                                    json_extract(b.text, '$.data.description')),
            'authenticated', json('false'))
        FROM (SELECT CASE WHEN json_valid(CAST(body AS TEXT)) THEN CAST(body AS TEXT)
                          ELSE '{}' END AS text
              FROM deliveries WHERE id = jobs.input_delivery_id) AS b)
    WHERE kind = 5;

    -- An order is blocked while any fraud alert's block on it stands;
    -- orders.blocked_at says since when (NULL: not blocked).
    CREATE TABLE order_blocks (
        account    TEXT    NOT NULL,
        order_id   TEXT    NOT NULL,
        alert      TEXT    NOT NULL,   -- the alert's subject (fraud_alert:…)
        blocked_at INTEGER NOT NULL,
        lifted_at  INTEGER,
        PRIMARY KEY (account, order_id, alert)
    ) STRICT, WITHOUT ROWID;
    INSERT INTO order_blocks (account, order_id, alert, blocked_at)
        SELECT account, order_id, 'fraud_alert:' || order_id || ':-', blocked_at
        FROM orders WHERE blocked_at IS NOT NULL;

    -- Fraud alerts held for a person (domain::Review).
    CREATE TABLE fraud_reviews (
        id             INTEGER PRIMARY KEY,
        account        TEXT    NOT NULL,
        job_key        TEXT    NOT NULL,
        alert          TEXT    NOT NULL,   -- the alert's subject
        merchant_order TEXT,
        payment        TEXT,
        reason         TEXT    NOT NULL,
        state          INTEGER NOT NULL,
        created_at     INTEGER NOT NULL,
        decided_at     INTEGER,
        UNIQUE (account, job_key)
    ) STRICT;
    CREATE INDEX fraud_reviews_state ON fraud_reviews (state, id);
    "#,
    // 4: duplicates found by an index lookup (the fingerprint joins the
    // resource's index: one seek, and inserts stay where the resource's
    // entries are); bodies of topics nothing acts on kept up to a cap.
    r#"
    DROP INDEX deliveries_resource;
    CREATE INDEX deliveries_resource ON deliveries (account, resource_id, fingerprint);
    ALTER TABLE deliveries ADD COLUMN body_size INTEGER;   -- set when body was cut short
    "#,
    // 5: events are leased for an attempt (several senders on one outbox).
    r#"
    ALTER TABLE events ADD COLUMN lease_until INTEGER;
    "#,
    // 6: what each read saw of its resource (its last-update stamp, an
    // intent's state), so reconciliation knows what is news.
    r#"
    ALTER TABLE fetches ADD COLUMN seen TEXT;
    "#,
    // 7: pruning finds old fetches by their time. Fetches are written in
    // time order, so an entry is appended, one page per commit.
    r#"
    CREATE INDEX fetches_at ON fetches (at);
    "#,
    // 8: each decision's reason; fraud reviews by round (a dismissal covers
    // the deliveries it saw, a later alert opens the next round); blocks by
    // unauthenticated alerts counted per hour; signatures looked up to
    // refuse a replay (only signed deliveries are in the index); what each
    // API call answered.
    r#"
    ALTER TABLE decisions ADD COLUMN reason TEXT;
    CREATE TABLE fraud_reviews_by_round (
        id             INTEGER PRIMARY KEY,
        account        TEXT    NOT NULL,
        job_key        TEXT    NOT NULL,
        round          INTEGER NOT NULL DEFAULT 0,
        alert          TEXT    NOT NULL,
        merchant_order TEXT,
        payment        TEXT,
        reason         TEXT    NOT NULL,
        state          INTEGER NOT NULL,
        delivery_id    INTEGER,
        created_at     INTEGER NOT NULL,
        decided_at     INTEGER,
        UNIQUE (account, job_key, round)
    ) STRICT;
    INSERT INTO fraud_reviews_by_round (id, account, job_key, alert, merchant_order, payment,
                                        reason, state, created_at, decided_at)
        SELECT id, account, job_key, alert, merchant_order, payment, reason, state,
               created_at, decided_at
        FROM fraud_reviews;
    DROP TABLE fraud_reviews;
    ALTER TABLE fraud_reviews_by_round RENAME TO fraud_reviews;
    CREATE INDEX fraud_reviews_state ON fraud_reviews (state, id);
    ALTER TABLE order_blocks ADD COLUMN unauthenticated INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX order_blocks_unauthenticated ON order_blocks (account, blocked_at)
        WHERE unauthenticated = 1;
    ALTER TABLE deliveries ADD COLUMN signature_key TEXT;
    CREATE INDEX deliveries_signature ON deliveries (signature_key)
        WHERE signature_key IS NOT NULL;
    ALTER TABLE fetches ADD COLUMN body BLOB;
    "#,
    // 9: a queue per destination. `outbox` holds one row per event and
    // destination it goes to, with its own attempts, state and schedule;
    // the event's row keeps the envelope and sums its rows up (pending
    // while `unfinished` ones wait, dead when one gave up). A destination's
    // state (enabled or disabled, and why) is in `destinations`. Events of
    // an earlier version were sent to `[fulfillment]`: the destination
    // `default`.
    r#"
    CREATE TABLE outbox (
        event_id        TEXT    NOT NULL,
        destination     TEXT    NOT NULL,
        state           INTEGER NOT NULL,   -- domain::EventState (pending, paused, delivered, dead)
        attempts        INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL,
        lease_until     INTEGER,
        last_error      TEXT,
        delivered_at    INTEGER,
        created_at      INTEGER NOT NULL,   -- the event's
        queued_at       INTEGER NOT NULL,   -- since when it is tried: the give-up clock
        UNIQUE (event_id, destination)
    ) STRICT;   -- the rowid is the order queued: a lease takes ties in it
    CREATE INDEX outbox_due ON outbox (destination, state, next_attempt_at);
    CREATE INDEX outbox_created ON outbox (destination, created_at);

    CREATE TABLE destinations (
        name            TEXT    PRIMARY KEY,
        url             TEXT,               -- as shown: no credentials, no query
        configured      INTEGER NOT NULL DEFAULT 0,
        state           INTEGER NOT NULL,   -- domain::DestinationState
        disabled_reason TEXT,
        disabled_at     INTEGER,
        failing_since   INTEGER,            -- the first failed attempt since the last success
        last_success_at INTEGER,
        recovery_since  INTEGER,            -- the last recovery: events since then
        recovery_at     INTEGER,            -- when it was asked
        recovery_queued INTEGER,
        updated_at      INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;

    -- An event pruned takes its queue rows with it.
    CREATE TRIGGER events_pruned AFTER DELETE ON events
    BEGIN DELETE FROM outbox WHERE event_id = old.id; END;

    ALTER TABLE events ADD COLUMN unfinished INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE events ADD COLUMN gave_up INTEGER NOT NULL DEFAULT 0;
    INSERT INTO outbox (event_id, destination, state, attempts, next_attempt_at, lease_until,
                        last_error, delivered_at, created_at, queued_at)
        SELECT id, 'default', state, attempts, next_attempt_at, lease_until, last_error,
               delivered_at, created_at, created_at
        FROM events WHERE state IN (0, 1, 2) ORDER BY rowid;
    UPDATE events SET unfinished = 1 WHERE state = 0;
    UPDATE events SET gave_up = 1 WHERE state = 2;
    INSERT INTO destinations (name, state, updated_at)
        SELECT 'default', 0, coalesce(max(created_at), 0) FROM events
        HAVING count(*) FILTER (WHERE state IN (0, 1, 2)) > 0;
    "#,
    // 10: a body kept short keeps the SHA-256 of the whole one beside its
    // size.
    r#"
    ALTER TABLE deliveries ADD COLUMN body_sha256 BLOB;   -- set with body_size
    "#,
    // 11: jobs wait in a lane (domain::Lane); the live one is leased newest
    // first, from an index that holds only its pending jobs. A job of an
    // earlier version waits in the backlog.
    r#"
    ALTER TABLE jobs ADD COLUMN lane INTEGER NOT NULL DEFAULT 1;
    CREATE INDEX jobs_live ON jobs (run_at) WHERE state = 0 AND lane = 0;
    "#,
    // 12: the operator console. Who may sign in (argon2id hashes) and their
    // sessions (the SHA-256 of the cookie's token, never the token); every
    // action a person or the API took; what a person acknowledged; the
    // health charts' minute samples; each delivery attempt of an event and
    // each death of a job, kept by triggers whoever changes the row.
    // Partial and expression indexes serve the console's lists: a delivery
    // only evaluates their WHERE (no entry unless it matches), so the ack
    // path pays a comparison, not an index insert.
    include_str!("12_operator_console.sql"),
    // 13: what a person was told: an incident per
    // thing that needs a person, open until it is dealt with, so each is
    // told once however many instances or restarts; resolved ones are
    // kept a while (when a digest last went, what was told).
    r#"
    CREATE TABLE incidents (
        id          INTEGER PRIMARY KEY,
        kind        INTEGER NOT NULL,   -- domain::attention::AlertKind
        item        TEXT    NOT NULL,   -- fraud_review:12, job:7, destination:erp, …
        text        TEXT    NOT NULL,
        path        TEXT    NOT NULL,   -- the console page that shows it
        opened_at   INTEGER NOT NULL,
        notified_at INTEGER,            -- its opening sent; NULL: waiting for a digest
        resolved_at INTEGER
    ) STRICT;
    CREATE UNIQUE INDEX incidents_open ON incidents (kind, item) WHERE resolved_at IS NULL;
    CREATE INDEX incidents_resolved ON incidents (resolved_at) WHERE resolved_at IS NOT NULL;
    "#, // 14: what a job decided, for an order's story (a fraud alert's job
    // decides about a payment of the order too).
    r#"
    CREATE INDEX decisions_job ON decisions (job_id) WHERE job_id IS NOT NULL;
    "#, // 15: the classic payments behind orders of the Orders API (the
    // sweeper's payment search lists them; their story is the order's).
    r#"
    CREATE TABLE order_payments (
        account        TEXT NOT NULL,
        payment_id     TEXT NOT NULL,
        platform_order TEXT NOT NULL,
        PRIMARY KEY (account, payment_id)
    ) STRICT, WITHOUT ROWID;
    "#,
    // 16: holds, every kind in one table (`domain::holds`): what waits for
    // a person, and who decided it and when.
    r#"
    CREATE TABLE holds (
        id         INTEGER PRIMARY KEY,
        account    TEXT    NOT NULL,
        kind       TEXT    NOT NULL,   -- rules::holds::Kind::name
        subject    TEXT    NOT NULL,
        state      INTEGER NOT NULL,   -- domain::HoldState
        reason     TEXT    NOT NULL,
        evidence   TEXT    NOT NULL,   -- JSON: what the rule read
        job_id     INTEGER,            -- the job that placed it
        decided_by TEXT,
        decided_at INTEGER,
        created_at INTEGER NOT NULL,
        UNIQUE (account, kind, subject)
    ) STRICT;
    CREATE INDEX holds_state ON holds (state, id);
    "#,
    // 17: a job's failure, typed beside its error text (domain::Failure):
    // what the inbox groups dead jobs by and retries together.
    r#"
    ALTER TABLE jobs ADD COLUMN failure_class TEXT;        -- domain::FailureClass
    ALTER TABLE jobs ADD COLUMN failure_status INTEGER;    -- the platform's HTTP status
    ALTER TABLE jobs ADD COLUMN failure_endpoint TEXT;     -- the API endpoint asked
    "#,
    // 18: a decision's subject in its two parts (domain::subject), derived
    // from the one text the decision's key holds, for queries to join on.
    r#"
    ALTER TABLE decisions ADD COLUMN subject_kind TEXT
        GENERATED ALWAYS AS (substr(subject, 1, instr(subject, ':') - 1)) VIRTUAL;
    ALTER TABLE decisions ADD COLUMN subject_id TEXT
        GENERATED ALWAYS AS (substr(subject, instr(subject, ':') + 1)) VIRTUAL;
    "#,
    // 19: when each event last failed, was paused or gave up at a
    // destination (a recovery picks by it, not by when the event was
    // decided), and since when a destination has something to recover
    // (kept after it is enabled, the recovery's default); each state's
    // rows at every destination by their due time (the lists of what
    // gave up); a recovery's rows by when it was asked.
    r#"
    ALTER TABLE outbox ADD COLUMN failed_at INTEGER;
    UPDATE outbox SET failed_at = coalesce(
        (SELECT max(a.at) FROM event_attempts a
         WHERE a.event_id = outbox.event_id AND a.destination = outbox.destination),
        queued_at)
    WHERE state IN (2, 4) OR (state = 0 AND attempts > 0);
    ALTER TABLE destinations ADD COLUMN outage_since INTEGER;
    UPDATE destinations SET outage_since = coalesce(failing_since, disabled_at)
    WHERE state = 1 OR EXISTS (SELECT 1 FROM outbox o WHERE o.destination = name AND o.state = 2);
    CREATE INDEX outbox_state ON outbox (state, next_attempt_at);
    CREATE INDEX outbox_queued ON outbox (destination, queued_at);
    "#,
    // 20: fraud reviews are holds of kind `fraud_review`.
    include_str!("20_fraud_reviews_are_holds.sql"),
    // 21: what each order is known by (`domain::refs`), kept when it is
    // decided, so a search finds it by any reference whatever was told.
    r#"
    CREATE TABLE order_refs (
        account TEXT NOT NULL,
        kind    TEXT NOT NULL,
        value   TEXT NOT NULL,
        subject TEXT NOT NULL,
        PRIMARY KEY (account, value, kind, subject)
    ) STRICT, WITHOUT ROWID;
    "#,
];

/// The schema version this build writes.
pub const LATEST: i64 = MIGRATIONS.len() as i64;

/// Brings the database up to `LATEST`; a no-op when it is there already.
pub fn migrate(conn: &mut Connection) -> Result<i64, StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Exclusive)?;
    let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version > LATEST {
        return Err(StoreError::TooNew {
            found: version,
            known: LATEST,
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
    }
    tx.commit()?;
    Ok(LATEST)
}

#[cfg(test)]
mod tests;
