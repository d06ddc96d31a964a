//! Every table that holds data, described once and neutrally (its columns
//! and their types), with the value a cell of it carries: what
//! `copy-store` moves between backends, each reading and writing by this
//! description.

use super::StoreError;

/// A column's type, as PostgreSQL keeps it (SQLite keeps every integer the
/// same way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Col {
    I64,
    I32,
    I16,
    Bool,
    Text,
    Bytes,
}

/// A table to copy: its columns in one order on both sides.
#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [(&'static str, Col)],
    /// How to read it in a stable order: its key, or `None` for the
    /// insertion order (events: the order they are listed and posted in).
    pub order_by: Option<&'static str>,
    /// Its `id` is generated: the target's generator must start past the
    /// copied ids.
    pub generated_id: bool,
}

/// One value; booleans travel as 0 and 1.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Text(String),
    Bytes(Vec<u8>),
}

impl Cell {
    /// The value as a column of type `col` keeps it, or why it cannot be.
    pub fn fit(self, col: Col) -> Result<Cell, &'static str> {
        match (col, self) {
            (_, Cell::Null) => Ok(Cell::Null),
            (I64 | I32 | I16 | Bool, Cell::Int(i)) => Ok(Cell::Int(i)),
            (Text, Cell::Text(t)) => Ok(Cell::Text(t)),
            (Text, Cell::Bytes(b)) => String::from_utf8(b)
                .map(Cell::Text)
                .map_err(|_| "bytes that are not UTF-8 in a text column"),
            (Bytes, Cell::Bytes(b)) => Ok(Cell::Bytes(b)),
            (Bytes, Cell::Text(t)) => Ok(Cell::Bytes(t.into_bytes())),
            (_, _) => Err("a value of another type"),
        }
    }
}

/// Why a row cannot be written where it goes.
pub(crate) fn unfit(table: &Table, column: &str, why: &str) -> StoreError {
    StoreError::Database(format!("{}.{column}: {why}", table.name))
}

/// Rows sent from the source to the target at once.
pub const BATCH: usize = 1000;

use Col::*;

/// Every table that holds data. `health` is left out (a scratch row that
/// `/readyz` rewrites), and so are `sessions` (signing in again is the
/// safe default on a new store) and `samples` (the charts' recent past).
pub const TABLES: &[Table] = &[
    Table {
        name: "deliveries",
        columns: &[
            ("id", I64),
            ("received_at", I64),
            ("account", Text),
            ("kind", I16),
            ("topic", Text),
            ("resource_id", Text),
            ("notification_id", Text),
            ("source_news", Text),
            ("query", Text),
            ("headers", Text),
            ("body", Bytes),
            ("body_size", I64),
            ("remote_addr", Text),
            ("fingerprint", Bytes),
            ("duplicate_of", I64),
            ("signature", I16),
            ("job_key", Text),
            ("signature_key", Text),
            ("body_sha256", Bytes),
        ],
        order_by: Some("id"),
        generated_id: true,
    },
    Table {
        name: "jobs",
        columns: &[
            ("id", I64),
            ("account", Text),
            ("job_key", Text),
            ("kind", I16),
            ("resource_id", Text),
            ("input_delivery_id", I64),
            ("work", Text),
            ("work_rank", I64),
            ("state", I16),
            ("rerun", Bool),
            ("attempts", I32),
            ("run_at", I64),
            ("lease_until", I64),
            ("last_error", Text),
            ("created_at", I64),
            ("updated_at", I64),
            ("lane", I16),
            ("failure_class", Text),
            ("failure_status", I32),
            ("failure_endpoint", Text),
        ],
        order_by: Some("id"),
        generated_id: true,
    },
    Table {
        name: "decisions",
        columns: &[
            ("id", I64),
            ("account", Text),
            ("subject", Text),
            ("key", Text),
            ("event_type", Text),
            ("event_id", Text),
            ("job_id", I64),
            ("created_at", I64),
            ("reason", Text),
        ],
        order_by: Some("id"),
        generated_id: true,
    },
    Table {
        name: "events",
        columns: &[
            ("id", Text),
            ("account", Text),
            ("type", Text),
            ("subject", Text),
            ("body", Text),
            ("job_id", I64),
            ("created_at", I64),
            ("state", I16),
            ("attempts", I32),
            ("next_attempt_at", I64),
            ("last_error", Text),
            ("delivered_at", I64),
            ("lease_until", I64),
            ("unfinished", I32),
            ("gave_up", I32),
        ],
        order_by: None,
        generated_id: false,
    },
    Table {
        name: "outbox",
        columns: &[
            ("event_id", Text),
            ("destination", Text),
            ("state", I16),
            ("attempts", I32),
            ("next_attempt_at", I64),
            ("lease_until", I64),
            ("last_error", Text),
            ("delivered_at", I64),
            ("created_at", I64),
            ("queued_at", I64),
        ],
        order_by: None,
        generated_id: false,
    },
    Table {
        name: "destinations",
        columns: &[
            ("name", Text),
            ("url", Text),
            ("configured", Bool),
            ("state", I16),
            ("disabled_reason", Text),
            ("disabled_at", I64),
            ("failing_since", I64),
            ("last_success_at", I64),
            ("recovery_since", I64),
            ("recovery_at", I64),
            ("recovery_queued", I64),
            ("updated_at", I64),
        ],
        order_by: Some("name"),
        generated_id: false,
    },
    Table {
        name: "fetches",
        columns: &[
            ("id", I64),
            ("job_id", I64),
            ("account", Text),
            ("endpoint", Text),
            ("resource_id", Text),
            ("status", I32),
            ("elapsed_ms", I64),
            ("at", I64),
            ("seen", Text),
            ("body", Bytes),
        ],
        order_by: Some("id"),
        generated_id: true,
    },
    Table {
        name: "orders",
        columns: &[
            ("account", Text),
            ("order_id", Text),
            ("total_amount", Text),
            ("paid_amount", Text),
            ("released_at", I64),
            ("blocked_at", I64),
            ("at_risk_at", I64),
            ("updated_at", I64),
        ],
        order_by: Some("account, order_id"),
        generated_id: false,
    },
    Table {
        name: "order_payments",
        columns: &[
            ("account", Text),
            ("payment_id", Text),
            ("platform_order", Text),
        ],
        order_by: Some("account, payment_id"),
        generated_id: false,
    },
    Table {
        name: "order_refs",
        columns: &[
            ("account", Text),
            ("kind", Text),
            ("value", Text),
            ("subject", Text),
        ],
        order_by: Some("account, value, kind, subject"),
        generated_id: false,
    },
    Table {
        name: "holds",
        columns: &[
            ("id", I64),
            ("account", Text),
            ("kind", Text),
            ("subject", Text),
            ("state", I16),
            ("reason", Text),
            ("evidence", Text),
            ("job_id", I64),
            ("decided_by", Text),
            ("decided_at", I64),
            ("created_at", I64),
        ],
        order_by: Some("id"),
        generated_id: true,
    },
    Table {
        name: "order_blocks",
        columns: &[
            ("account", Text),
            ("order_id", Text),
            ("alert", Text),
            ("blocked_at", I64),
            ("lifted_at", I64),
            ("unauthenticated", Bool),
        ],
        order_by: Some("account, order_id, alert"),
        generated_id: false,
    },
    Table {
        name: "operators",
        columns: &[
            ("name", Text),
            ("password_hash", Text),
            ("created_at", I64),
            ("updated_at", I64),
        ],
        order_by: Some("name"),
        generated_id: false,
    },
    Table {
        name: "audit",
        columns: &[
            ("id", I64),
            ("at", I64),
            ("actor", Text),
            ("via", I16),
            ("action", I16),
            ("item", Text),
            ("account", Text),
            ("order_id", Text),
            ("detail", Text),
            ("outcome", I16),
            ("result", Text),
            ("ended_at", I64),
        ],
        order_by: Some("id"),
        generated_id: true,
    },
    Table {
        name: "acknowledgements",
        columns: &[("item", Text), ("actor", Text), ("at", I64)],
        order_by: Some("item"),
        generated_id: false,
    },
    Table {
        name: "event_attempts",
        columns: &[
            ("event_id", Text),
            ("destination", Text),
            ("attempt", I32),
            ("at", I64),
            ("state", I16),
            ("error", Text),
        ],
        order_by: Some("event_id, destination, attempt"),
        generated_id: false,
    },
    Table {
        name: "job_history",
        columns: &[
            ("job_id", I64),
            ("ended_at", I64),
            ("attempts", I32),
            ("last_error", Text),
            ("revived_at", I64),
        ],
        order_by: Some("job_id, ended_at"),
        generated_id: false,
    },
    Table {
        name: "incidents",
        columns: &[
            ("id", I64),
            ("kind", I16),
            ("item", Text),
            ("text", Text),
            ("path", Text),
            ("opened_at", I64),
            ("notified_at", I64),
            ("resolved_at", I64),
        ],
        order_by: Some("id"),
        generated_id: true,
    },
];

impl Table {
    pub fn column_list(&self) -> String {
        self.columns
            .iter()
            .map(|(c, _)| *c)
            .collect::<Vec<_>>()
            .join(", ")
    }
}
