//! The tables, created when missing. Each enum column holds the number of
//! the `model` enum it names.

pub(super) const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS accounts (
    name             TEXT PRIMARY KEY,
    token            TEXT NOT NULL UNIQUE,
    notification_url TEXT,
    webhook_url      TEXT,
    webhook_secret   TEXT,
    email            TEXT,
    groups           TEXT NOT NULL,          -- JSON array of event groups
    integrator       TEXT NOT NULL DEFAULT '{}'
) STRICT;
CREATE TABLE IF NOT EXISTS resources (
    kind             TEXT NOT NULL,          -- payment, merchant_order, chargeback, payment_intent
    id               TEXT NOT NULL,
    account          TEXT NOT NULL,
    body             TEXT NOT NULL,          -- JSON, as GET serves it
    notification_url TEXT,
    PRIMARY KEY (kind, id)
) STRICT;
CREATE TABLE IF NOT EXISTS counters (
    name TEXT PRIMARY KEY,
    next INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS presets (
    account TEXT NOT NULL,
    name    TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (account, name)
) STRICT;
CREATE TABLE IF NOT EXISTS payment_refunds (
    id              INTEGER PRIMARY KEY,     -- the refund's id
    payment_id      TEXT NOT NULL,
    idempotency_key TEXT,                    -- NULL: sent without one
    body            TEXT NOT NULL,           -- JSON, as the API serves it
    UNIQUE (payment_id, idempotency_key)
) STRICT;
CREATE TABLE IF NOT EXISTS device_presets (
    account        TEXT NOT NULL,
    device_id      TEXT NOT NULL,
    outcome        INTEGER NOT NULL,         -- model::FinalState
    payment_status TEXT,                     -- NULL: approved
    PRIMARY KEY (account, device_id)
) STRICT;
CREATE TABLE IF NOT EXISTS terminal_steps (
    intent_id      TEXT PRIMARY KEY,
    account        TEXT NOT NULL,
    device_id      TEXT NOT NULL,
    next           INTEGER NOT NULL,         -- model::TerminalStep
    due_at         INTEGER NOT NULL,         -- sandbox clock, ms
    outcome        INTEGER NOT NULL,         -- model::FinalState
    payment_status TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS terminal_steps_due ON terminal_steps (due_at);
CREATE TABLE IF NOT EXISTS dispatches (
    id          INTEGER PRIMARY KEY,
    account     TEXT    NOT NULL,
    url         TEXT    NOT NULL,
    form        INTEGER NOT NULL,            -- model::Form
    topic       TEXT    NOT NULL,
    resource_id TEXT    NOT NULL,
    body        TEXT    NOT NULL,
    headers     TEXT    NOT NULL,            -- JSON object
    first_at    INTEGER NOT NULL,            -- sandbox clock, ms
    attempts    INTEGER NOT NULL DEFAULT 0,
    next_due_at INTEGER,
    state       INTEGER NOT NULL             -- model::DispatchState
) STRICT;
CREATE INDEX IF NOT EXISTS dispatches_due ON dispatches (state, next_due_at);
CREATE TABLE IF NOT EXISTS attempts (
    dispatch_id INTEGER NOT NULL,
    n           INTEGER NOT NULL,
    at          INTEGER NOT NULL,            -- sandbox clock, ms
    status      INTEGER,                     -- HTTP status; NULL: no answer in the window
    acked       INTEGER NOT NULL,
    latency_ms  INTEGER NOT NULL,
    error       TEXT,
    PRIMARY KEY (dispatch_id, n)
) STRICT;
CREATE TABLE IF NOT EXISTS intent_events (
    account    TEXT    NOT NULL,
    intent_id  TEXT    NOT NULL,
    status     TEXT    NOT NULL,
    at         INTEGER NOT NULL              -- sandbox clock, ms
) STRICT;
CREATE INDEX IF NOT EXISTS intent_events_at ON intent_events (account, at);
CREATE TABLE IF NOT EXISTS drops (
    id         INTEGER PRIMARY KEY,
    topic      TEXT,                         -- NULL: any
    remaining  INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS devices (
    account   TEXT NOT NULL,
    device_id TEXT NOT NULL,
    mode      TEXT NOT NULL,                 -- PDV or STANDALONE
    PRIMARY KEY (account, device_id)
) STRICT;
CREATE TABLE IF NOT EXISTS quirks (
    scope    TEXT PRIMARY KEY,              -- an account's name; '': every account
    settings TEXT NOT NULL                  -- JSON, quirks::QuirkSet
) STRICT;
CREATE TABLE IF NOT EXISTS unseen (
    kind  TEXT NOT NULL,                    -- as in resources; 'order': the Orders API
    id    TEXT NOT NULL,
    until INTEGER NOT NULL,                 -- sandbox clock, ms: answers 404 before
    PRIMARY KEY (kind, id)
) STRICT;
CREATE TABLE IF NOT EXISTS mails (
    id      INTEGER PRIMARY KEY,
    account TEXT    NOT NULL,
    device  TEXT    NOT NULL,
    event   TEXT    NOT NULL,               -- what happened, in words
    at      INTEGER NOT NULL,               -- sandbox clock, ms
    state   INTEGER NOT NULL DEFAULT 0,     -- model::MailState
    sent_at INTEGER
) STRICT;
CREATE TABLE IF NOT EXISTS order_versions (
    order_id TEXT PRIMARY KEY,
    version  INTEGER NOT NULL               -- data.version of the order's webhooks
) STRICT;
CREATE TABLE IF NOT EXISTS order_steps (
    id       INTEGER PRIMARY KEY,
    order_id TEXT    NOT NULL,
    account  TEXT    NOT NULL,
    due_at   INTEGER NOT NULL,              -- sandbox clock, ms
    step     TEXT    NOT NULL,              -- ops::orders::steps::Step
    arg      TEXT    NOT NULL DEFAULT '{}'
) STRICT;
CREATE INDEX IF NOT EXISTS order_steps_due ON order_steps (due_at, id);
CREATE TABLE IF NOT EXISTS order_keys (
    account TEXT    NOT NULL,
    key     TEXT    NOT NULL,
    request TEXT    NOT NULL,               -- JSON: method, path, body
    status  INTEGER NOT NULL,
    body    TEXT    NOT NULL,
    at      INTEGER NOT NULL,               -- sandbox clock, ms
    PRIMARY KEY (account, key)
) STRICT;
"#;
