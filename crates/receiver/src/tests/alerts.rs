//! When a person is told: once per incident, dead jobs digested, each
//! told incident resolved once.

use std::collections::HashMap;

use crate::domain::attention::{AlertKind, Attention, Incident, Severity};
use crate::rules::alerts::{AccountFacts, DestinationFacts, Facts, Thresholds, attention, plan};

const T: Thresholds = Thresholds {
    digest_ms: 60_000,
    destination_failing_ms: 600_000,
    events_waiting_ms: 900_000,
    storage_not_ready_ms: 60_000,
};

fn item(kind: AlertKind, key: &str) -> Attention {
    Attention {
        kind,
        key: key.into(),
        text: format!("{key} needs you"),
        path: format!("/{key}"),
    }
}

/// Runs rounds the way the alerter does: open what is new, mark what was
/// sent, close what was resolved. Returns each round's messages as (kind,
/// items, resolved).
struct Alerter {
    open: Vec<Incident>,
    last_sent: HashMap<AlertKind, i64>,
}

impl Alerter {
    fn new() -> Alerter {
        Alerter {
            open: Vec::new(),
            last_sent: HashMap::new(),
        }
    }

    fn round(&mut self, now: i64, current: &[Attention]) -> Vec<(AlertKind, usize, bool)> {
        let p = plan(now, current, &self.open, &self.last_sent, &T);
        self.open.extend(p.open);
        self.open
            .retain(|i| !p.resolve.contains(&(i.kind, i.key.clone())));
        for m in &p.send {
            self.last_sent.insert(m.kind, now);
            for i in self.open.iter_mut().filter(|i| m.keys.contains(&i.key)) {
                if !m.resolved {
                    i.notified_at = Some(now);
                }
            }
        }
        p.send
            .iter()
            .map(|m| (m.kind, m.items.len(), m.resolved))
            .collect()
    }
}

#[test]
fn a_held_review_is_told_once_and_its_resolution_once() {
    let mut a = Alerter::new();
    let held = [item(AlertKind::FraudReviewHeld, "review:1")];
    assert_eq!(a.round(0, &held), [(AlertKind::FraudReviewHeld, 1, false)]);
    assert!(a.round(1_000, &held).is_empty(), "once per incident");
    assert!(a.round(2_000, &held).is_empty());
    assert_eq!(a.round(3_000, &[]), [(AlertKind::FraudReviewHeld, 1, true)]);
    assert!(a.round(4_000, &[]).is_empty(), "resolved once");
}

#[test]
fn dead_jobs_of_a_burst_are_grouped_per_digest() {
    let mut a = Alerter::new();
    let dead = |n: usize| -> Vec<Attention> {
        (1..=n)
            .map(|i| item(AlertKind::DeadJobs, &format!("job:{i}")))
            .collect()
    };
    // The first at once.
    assert_eq!(a.round(0, &dead(1)), [(AlertKind::DeadJobs, 1, false)]);
    // Four more within the digest window wait...
    assert!(a.round(10_000, &dead(3)).is_empty());
    assert!(a.round(30_000, &dead(5)).is_empty());
    // ...and go as one message when it closes.
    assert_eq!(a.round(60_000, &dead(5)), [(AlertKind::DeadJobs, 4, false)]);
    assert!(a.round(70_000, &dead(5)).is_empty());
    // Retried and done: one resolution for the five.
    assert_eq!(a.round(200_000, &[]), [(AlertKind::DeadJobs, 5, true)]);
}

#[test]
fn what_resolves_before_it_was_told_is_never_told() {
    let mut a = Alerter::new();
    assert_eq!(a.round(0, &[item(AlertKind::DeadJobs, "job:1")]).len(), 1);
    // Dies and is retried within the window: never told, never resolved.
    assert!(
        a.round(
            5_000,
            &[
                item(AlertKind::DeadJobs, "job:1"),
                item(AlertKind::DeadJobs, "job:2")
            ]
        )
        .is_empty()
    );
    assert_eq!(a.round(10_000, &[item(AlertKind::DeadJobs, "job:1")]), []);
    assert_eq!(a.round(20_000, &[]), [(AlertKind::DeadJobs, 1, true)]);
}

#[test]
fn thresholds_decide_what_needs_a_person() {
    let facts = |now: i64| Facts {
        now,
        items: vec![],
        destinations: vec![
            DestinationFacts {
                name: "erp".into(),
                disabled: None,
                failing_since: Some(0),
                oldest_waiting_at: Some(0),
            },
            DestinationFacts {
                name: "shop".into(),
                disabled: Some("410 Gone".into()),
                failing_since: None,
                oldest_waiting_at: None,
            },
        ],
        missed_last_hour: 0,
        accounts: vec![AccountFacts {
            name: "default".into(),
            last_heard_at: Some(0),
            expect_within_ms: 3_600_000,
        }],
        storage_failing_since: Some(0),
        storage_disk_full: false,
    };
    let kinds = |now: i64| -> Vec<(AlertKind, String)> {
        attention(&facts(now), &T)
            .into_iter()
            .map(|a| (a.kind, a.key))
            .collect()
    };
    assert_eq!(
        kinds(1_000),
        [(AlertKind::DestinationFailing, "destination:shop".into())],
        "a disabled destination at once; nothing else yet"
    );
    let later = kinds(3_600_000);
    for expected in [
        (AlertKind::DestinationFailing, "destination:erp"),
        (AlertKind::EventsWaiting, "waiting:erp"),
        (AlertKind::PlatformSilent, "silent:default"),
        (AlertKind::StorageNotReady, "storage"),
    ] {
        assert!(
            later.contains(&(expected.0, expected.1.to_string())),
            "{expected:?} in {later:?}"
        );
    }
    let missed = Facts {
        missed_last_hour: 3,
        ..facts(0)
    };
    let a = attention(&missed, &T);
    assert!(
        a.iter()
            .any(|a| a.kind == AlertKind::MissedNotifications && a.text.contains('3'))
    );
}

#[test]
fn money_at_stake_is_critical_and_a_resolution_is_info() {
    let p = plan(
        0,
        &[item(AlertKind::FraudReviewHeld, "review:1")],
        &[],
        &HashMap::new(),
        &T,
    );
    assert_eq!(p.send[0].severity, Severity::Critical);
    assert_eq!(p.send[0].path, "/review:1");
    let told = Incident {
        kind: AlertKind::EventsWaiting,
        key: "waiting:erp".into(),
        text: "x".into(),
        path: "/destinations/erp".into(),
        opened_at: 0,
        notified_at: Some(0),
    };
    let p = plan(1, &[], &[told], &HashMap::new(), &T);
    assert_eq!(p.send[0].severity, Severity::Info);
    assert!(p.send[0].resolved);
    assert!(p.send[0].text.starts_with("resolved"));
}

#[test]
fn a_burst_lists_twenty_items_and_counts_the_rest() {
    let dead: Vec<Attention> = (1..=25)
        .map(|i| item(AlertKind::DeadJobs, &format!("job:{i}")))
        .collect();
    let p = plan(0, &dead, &[], &HashMap::new(), &T);
    assert_eq!(p.send.len(), 1);
    let m = &p.send[0];
    assert_eq!(m.keys.len(), 25, "every incident is marked told");
    assert_eq!(m.items.len(), 21);
    assert_eq!(m.items[20], "and 5 more");
    assert!(m.text.starts_with("25 jobs gave up"), "{}", m.text);
    assert_eq!(m.path, "/#dead-jobs", "the inbox groups them by cause");
}

#[test]
fn what_a_bounded_read_did_not_list_is_not_resolved() {
    let open: Vec<Incident> = (1..=3)
        .map(|i| Incident {
            kind: AlertKind::DeadJobs,
            key: format!("job:{i}"),
            text: format!("job {i}"),
            path: format!("/jobs/{i}"),
            opened_at: 0,
            notified_at: Some(0),
        })
        .chain([Incident {
            kind: AlertKind::FraudReviewHeld,
            key: "fraud_review:9".into(),
            text: "review 9".into(),
            path: "/fraud-reviews/9".into(),
            opened_at: 0,
            notified_at: Some(0),
        }])
        .collect();
    // The read of dead jobs stopped at its bound after job 1; reviews
    // were read whole.
    let mut current = vec![item(AlertKind::DeadJobs, "job:1")];
    crate::rules::alerts::carry_unlisted(&mut current, &open, &[AlertKind::DeadJobs]);
    let p = plan(1, &current, &open, &HashMap::new(), &T);
    assert_eq!(
        p.resolve,
        [(AlertKind::FraudReviewHeld, "fraud_review:9".to_string())],
        "only what was read whole and is gone resolves"
    );
    assert!(p.open.is_empty());
}

/// Storage that fails for lack of space is told in those words.
#[test]
fn a_full_disk_is_told_as_a_full_disk() {
    let facts = |disk_full| Facts {
        now: 120_000,
        storage_failing_since: Some(0),
        storage_disk_full: disk_full,
        ..Facts::default()
    };
    let text = |disk_full| {
        attention(&facts(disk_full), &T)
            .into_iter()
            .find(|a| a.kind == AlertKind::StorageNotReady)
            .map(|a| a.text)
            .unwrap()
    };
    assert!(text(true).starts_with("disk full: "), "{}", text(true));
    assert!(!text(false).contains("disk full"), "{}", text(false));
}

#[test]
fn held_reviews_of_a_burst_are_one_message_then_one_digest() {
    let mut a = Alerter::new();
    let held = |n: usize| -> Vec<Attention> {
        (1..=n)
            .map(|i| item(AlertKind::FraudReviewHeld, &format!("review:{i}")))
            .collect()
    };
    // Four at once: the first told now, the rest wait.
    assert_eq!(
        a.round(0, &held(4)),
        [(AlertKind::FraudReviewHeld, 1, false)]
    );
    assert!(a.round(10_000, &held(4)).is_empty());
    // More of the same burst wait with them.
    assert!(a.round(30_000, &held(6)).is_empty());
    // One digest when the window has passed.
    assert_eq!(
        a.round(60_000, &held(6)),
        [(AlertKind::FraudReviewHeld, 5, false)]
    );
    assert!(a.round(200_000, &held(6)).is_empty(), "each told once");
    // After a calm, the next one is told at once.
    assert_eq!(
        a.round(300_000, &held(7)),
        [(AlertKind::FraudReviewHeld, 1, false)]
    );
}
