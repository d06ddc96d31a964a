-- 8: the operator console (as SQLite's 12): operators, sessions, the
-- audit, acknowledgements, the health charts' samples, each attempt of
-- an event and each death of a job (kept by triggers), and the partial
-- and expression indexes of the console's lists.
    CREATE TABLE operators (
        name          TEXT   PRIMARY KEY,
        password_hash TEXT   NOT NULL,
        created_at    BIGINT NOT NULL,
        updated_at    BIGINT NOT NULL
    );

    CREATE TABLE sessions (
        token_hash BYTEA  PRIMARY KEY,
        operator   TEXT   NOT NULL,
        csrf       TEXT   NOT NULL,
        created_at BIGINT NOT NULL,
        seen_at    BIGINT NOT NULL
    );
    CREATE INDEX sessions_operator ON sessions (operator);

    CREATE TABLE audit (
        id        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        at        BIGINT   NOT NULL,
        actor     TEXT     NOT NULL,
        via       SMALLINT NOT NULL,   -- domain::Via
        action    SMALLINT NOT NULL,   -- domain::Action
        item      TEXT     NOT NULL,
        account   TEXT,
        order_id  TEXT,
        detail    TEXT     NOT NULL,
        outcome   SMALLINT NOT NULL,   -- domain::AuditOutcome
        result    TEXT,
        ended_at  BIGINT
    );
    CREATE INDEX audit_item ON audit (item, id);
    CREATE INDEX audit_order ON audit (account, order_id, id) WHERE order_id IS NOT NULL;

    CREATE TABLE acknowledgements (
        item  TEXT   PRIMARY KEY,
        actor TEXT   NOT NULL,
        at    BIGINT NOT NULL
    );

    CREATE TABLE samples (
        minute   BIGINT NOT NULL,
        instance TEXT   NOT NULL,
        series   TEXT   NOT NULL,
        value    BIGINT NOT NULL,
        PRIMARY KEY (minute, instance, series)
    );

    CREATE TABLE event_attempts (
        event_id    TEXT     NOT NULL,
        destination TEXT     NOT NULL,
        attempt     INTEGER  NOT NULL,
        at          BIGINT   NOT NULL,
        state       SMALLINT NOT NULL,
        error       TEXT,
        PRIMARY KEY (event_id, destination, attempt)
    );
    CREATE FUNCTION pointhook_event_attempted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO event_attempts (event_id, destination, attempt, at, state, error)
        VALUES (NEW.event_id, NEW.destination, NEW.attempts,
                CASE WHEN NEW.state = 1 THEN NEW.delivered_at
                     ELSE (extract(epoch FROM clock_timestamp()) * 1000)::bigint END,
                NEW.state, CASE WHEN NEW.state = 1 THEN NULL ELSE NEW.last_error END)
        ON CONFLICT (event_id, destination, attempt) DO UPDATE
            SET at = excluded.at, state = excluded.state, error = excluded.error;
        RETURN NULL;
    END $$;
    CREATE TRIGGER outbox_attempted AFTER UPDATE OF attempts ON outbox
        FOR EACH ROW WHEN (NEW.attempts > OLD.attempts)
        EXECUTE FUNCTION pointhook_event_attempted();
    CREATE FUNCTION pointhook_event_pruned() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM event_attempts WHERE event_id = OLD.id;
        RETURN NULL;
    END $$;
    CREATE TRIGGER events_pruned_attempts AFTER DELETE ON events
        FOR EACH ROW EXECUTE FUNCTION pointhook_event_pruned();

    CREATE TABLE job_history (
        job_id     BIGINT NOT NULL,
        ended_at   BIGINT NOT NULL,
        attempts   INTEGER NOT NULL,
        last_error TEXT,
        revived_at BIGINT NOT NULL,
        PRIMARY KEY (job_id, ended_at)
    );
    CREATE FUNCTION pointhook_job_revived() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO job_history (job_id, ended_at, attempts, last_error, revived_at)
        VALUES (OLD.id, OLD.updated_at, OLD.attempts, OLD.last_error, NEW.updated_at)
        ON CONFLICT DO NOTHING;
        RETURN NULL;
    END $$;
    CREATE TRIGGER jobs_revived AFTER UPDATE OF state ON jobs
        FOR EACH ROW WHEN (OLD.state = 3 AND NEW.state <> 3)
        EXECUTE FUNCTION pointhook_job_revived();
    CREATE FUNCTION pointhook_job_pruned() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM job_history WHERE job_id = OLD.id;
        RETURN NULL;
    END $$;
    CREATE TRIGGER jobs_pruned AFTER DELETE ON jobs
        FOR EACH ROW EXECUTE FUNCTION pointhook_job_pruned();

    CREATE INDEX deliveries_missed ON deliveries (received_at) WHERE kind = 4;
    CREATE INDEX orders_released ON orders (released_at) WHERE released_at IS NOT NULL;
    CREATE INDEX orders_blocked ON orders (blocked_at) WHERE blocked_at IS NOT NULL;
    CREATE INDEX orders_at_risk ON orders (at_risk_at) WHERE at_risk_at IS NOT NULL;
    CREATE INDEX decisions_after_release ON decisions (id)
        WHERE event_type = 'order.fraud_after_release';
    CREATE INDEX decisions_awaiting ON decisions (id)
        WHERE event_type = 'order.awaiting_shipment';
    CREATE INDEX events_reference ON events (((body::jsonb -> 'data') ->> 'external_reference'))
        WHERE ((body::jsonb -> 'data') ->> 'external_reference') IS NOT NULL;
