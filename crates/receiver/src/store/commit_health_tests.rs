//! Tests of `CommitHealth`.

use super::CommitHealth;

#[test]
fn the_outcome_recorded_last_wins_however_close_together() {
    let h = CommitHealth::default();
    assert!(!h.failing(), "nothing recorded yet");
    h.record(true);
    h.record(false);
    assert!(h.failing(), "a failure right after a success");
    h.record(true);
    assert!(!h.failing());
}

#[test]
fn failures_are_timed_from_the_first_of_a_run() {
    let h = CommitHealth::default();
    assert_eq!(h.failing_for(), None);
    h.record(false);
    let first = h.failing_for().expect("failing");
    std::thread::sleep(std::time::Duration::from_millis(5));
    h.record(false);
    assert!(
        h.failing_for().unwrap() > first,
        "still timed from the first"
    );
    h.record(true);
    assert_eq!(h.failing_for(), None);
}
