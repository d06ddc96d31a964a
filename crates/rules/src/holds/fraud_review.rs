//! A fraud alert held for a person is a hold of kind `fraud_review`. It is
//! placed by the fraud rules (a held alert's `Mark::Review`, one per round
//! of the alert), never by an account's setting, so it is not in `KINDS`
//! (the kinds placed over what a job decides); it keeps its own inbox
//! section, alert and gauge. Approving confirms it (the alert's job runs
//! the cancel or refund); rejecting dismisses it (the block is lifted, the
//! order looked at again, `fraud_alert.dismissed` told): both are the
//! store's review path, so `rejected` decides nothing here.

use super::Kind;

pub static FRAUD_REVIEW: Kind = Kind {
    name: "fraud_review",
    title: "fraud alerts held for a person",
    check: |_| {
        Err("a fraud review is held by the fraud rules ([fraud] settings), not by this key".into())
    },
    holds: |_, _| None,
    approve: "confirm: the alert's job cancels or refunds its payment",
    reject: "dismiss: the alert's block is lifted and its order looked at again",
    rejected: |_| Vec::new(),
};
