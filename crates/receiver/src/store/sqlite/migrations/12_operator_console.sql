-- 12: the operator console. Who may sign in (argon2id hashes) and their
-- sessions (the SHA-256 of the cookie's token, never the token); every
-- action a person or the API took; what a person acknowledged; the
-- health charts' minute samples; each delivery attempt of an event and
-- each death of a job, kept by triggers whoever changes the row.
-- Partial and expression indexes serve the console's lists: a delivery
-- only evaluates their WHERE (no entry unless it matches), so the ack
-- path pays a comparison, not an index insert.
    CREATE TABLE operators (
        name          TEXT    PRIMARY KEY,
        password_hash TEXT    NOT NULL,   -- PHC string (argon2id)
        created_at    INTEGER NOT NULL,
        updated_at    INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE sessions (
        token_hash BLOB    PRIMARY KEY,
        operator   TEXT    NOT NULL,
        csrf       TEXT    NOT NULL,
        created_at INTEGER NOT NULL,
        seen_at    INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX sessions_operator ON sessions (operator);

    CREATE TABLE audit (
        id        INTEGER PRIMARY KEY,
        at        INTEGER NOT NULL,
        actor     TEXT    NOT NULL,   -- an operator, an OS user, or "api"
        via       INTEGER NOT NULL,   -- domain::Via
        action    INTEGER NOT NULL,   -- domain::Action
        item      TEXT    NOT NULL,   -- fraud_review:12, job:5, event:evt_…
        account   TEXT,
        order_id  TEXT,               -- the order it concerns, for its timeline
        detail    TEXT    NOT NULL,   -- what was asked, in words
        outcome   INTEGER NOT NULL,   -- domain::AuditOutcome
        result    TEXT,               -- how it ended, in words
        ended_at  INTEGER
    ) STRICT;
    CREATE INDEX audit_item ON audit (item, id);
    CREATE INDEX audit_order ON audit (account, order_id, id) WHERE order_id IS NOT NULL;

    CREATE TABLE acknowledgements (
        item  TEXT    PRIMARY KEY,   -- missed:7, at_risk:default:123, …
        actor TEXT    NOT NULL,
        at    INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE samples (
        minute   INTEGER NOT NULL,   -- unix ms at the minute's start
        instance TEXT    NOT NULL,
        series   TEXT    NOT NULL,
        value    INTEGER NOT NULL,
        PRIMARY KEY (minute, instance, series)
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE event_attempts (
        event_id    TEXT    NOT NULL,
        destination TEXT    NOT NULL,
        attempt     INTEGER NOT NULL,
        at          INTEGER NOT NULL,
        state       INTEGER NOT NULL,   -- the queue row's state after it
        error       TEXT,
        PRIMARY KEY (event_id, destination, attempt)
    ) STRICT, WITHOUT ROWID;
    CREATE TRIGGER outbox_attempted AFTER UPDATE OF attempts ON outbox
    WHEN NEW.attempts > OLD.attempts
    BEGIN
        INSERT OR REPLACE INTO event_attempts (event_id, destination, attempt, at, state, error)
        VALUES (NEW.event_id, NEW.destination, NEW.attempts,
                CASE WHEN NEW.state = 1 THEN NEW.delivered_at
                     ELSE CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) END,
                NEW.state, CASE WHEN NEW.state = 1 THEN NULL ELSE NEW.last_error END);
    END;
    CREATE TRIGGER events_pruned_attempts AFTER DELETE ON events
    BEGIN
        DELETE FROM event_attempts WHERE event_id = OLD.id;
    END;

    CREATE TABLE job_history (
        job_id     INTEGER NOT NULL,
        ended_at   INTEGER NOT NULL,   -- when it died
        attempts   INTEGER NOT NULL,
        last_error TEXT,
        revived_at INTEGER NOT NULL,
        PRIMARY KEY (job_id, ended_at)
    ) STRICT, WITHOUT ROWID;
    CREATE TRIGGER jobs_revived AFTER UPDATE OF state ON jobs
    WHEN OLD.state = 3 AND NEW.state <> 3
    BEGIN
        INSERT OR IGNORE INTO job_history (job_id, ended_at, attempts, last_error, revived_at)
        VALUES (OLD.id, OLD.updated_at, OLD.attempts, OLD.last_error, NEW.updated_at);
    END;
    CREATE TRIGGER jobs_pruned AFTER DELETE ON jobs
    BEGIN
        DELETE FROM job_history WHERE job_id = OLD.id;
    END;

    CREATE INDEX deliveries_missed ON deliveries (received_at) WHERE kind = 4;
    CREATE INDEX deliveries_fraud ON deliveries (account, job_key)
        WHERE substr(job_key, 1, 6) = 'fraud:';
    CREATE INDEX orders_released ON orders (released_at) WHERE released_at IS NOT NULL;
    CREATE INDEX orders_blocked ON orders (blocked_at) WHERE blocked_at IS NOT NULL;
    CREATE INDEX orders_at_risk ON orders (at_risk_at) WHERE at_risk_at IS NOT NULL;
    CREATE INDEX decisions_after_release ON decisions (id)
        WHERE event_type = 'order.fraud_after_release';
    CREATE INDEX decisions_awaiting ON decisions (id)
        WHERE event_type = 'order.awaiting_shipment';
    CREATE INDEX events_reference ON events (json_extract(body, '$.data.external_reference'))
        WHERE json_extract(body, '$.data.external_reference') IS NOT NULL;
