//! What each migration step does, on both backends: the one list. Each
//! backend's DDL stays its own (`sqlite/migrations/`, `postgres/migrations.rs`),
//! since the dialects' types and indexes differ; the steps correspond one
//! to one, except that PostgreSQL's first step is SQLite's first five (the
//! PostgreSQL schema began at SQLite's version 5). A step added to one
//! backend and not the other fails `both_backends_have_every_step`.

/// SQLite's steps that PostgreSQL's first step holds together.
const FOLDED: usize = 5;

/// SQLite's step n (from 1), and what it does.
pub const STEPS: &[&str] = &[
    "deliveries and the jobs they feed",
    "decisions, the outbox of events, merchant orders",
    "the work stored with its job; blocks per fraud alert; reviews",
    "duplicates found by an index lookup",
    "events leased for an attempt",
    "what each read saw of its resource (reconciliation's news)",
    "old fetches found by their time (pruning)",
    "each decision's reason; fraud reviews by round; blocks by authentication",
    "a queue per destination, the destinations' state, each attempt kept",
    "a body kept short keeps the SHA-256 and size of the whole one",
    "jobs in lanes; the live lane leased newest first",
    "the operator console: operators, sessions, the audit, acknowledgements, samples",
    "incidents: what a person was told, and when it was resolved",
    "what a job decided, for an order's story",
    "the classic payments behind orders of the Orders API",
    "holds, every kind in one table",
    "a job's failure typed: class, status, endpoint",
    "a decision's subject in its two parts (kind, id)",
    "when each event failed at a destination; since when a destination has something to recover",
    "fraud reviews become holds of kind fraud_review (the view fraud_reviews reads them back)",
    "what each order is known by (its references), kept when it is decided, for search",
];

/// PostgreSQL's step for SQLite's step `sqlite` (both from 1).
pub fn postgres_step(sqlite: usize) -> usize {
    sqlite.saturating_sub(FOLDED - 1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_backends_have_every_step() {
        let sqlite = crate::store::sqlite::migrations::LATEST as usize;
        let postgres = crate::store::postgres::migrations::LATEST as usize;
        assert_eq!(STEPS.len(), sqlite, "every SQLite step is listed here");
        assert_eq!(
            postgres_step(sqlite),
            postgres,
            "PostgreSQL has a step for each of SQLite's (SQLite {sqlite}, PostgreSQL {postgres})"
        );
    }
}
