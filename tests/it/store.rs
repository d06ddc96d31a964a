//! The store's contract, through `Store` itself, once per backend: what the
//! worker, the outbox and the receiver rely on whichever database is behind
//! it. On PostgreSQL the "two stores" are two pools on one database, as two
//! instances would be; SQLite has one owner, so there they are one store
//! used from two tasks.

use std::collections::HashSet;
use std::future::Future;

use pointhook::domain::{
    Decision, Effects, EventType, Guard, Kind, Mark, MerchantOrderId, OrderSeen, SignatureStatus,
    Slot, Work,
};
use pointhook::store::{
    Attempted, EventOutcome, Finish, JobOutcome, Location, NewDelivery, NewJob, Store, fingerprint,
    unix_ms_now,
};
use serde_json::json;

use crate::backends::Backend;

on_both_backends!(
    a_delivery_and_its_job_commit_together_and_coalesce,
    two_stores_never_lease_one_job,
    a_run_whose_lease_moved_on_records_nothing,
    one_decision_per_key_however_many_runs_race,
    an_order_is_released_once_by_racing_decisions,
    two_stores_never_lease_one_event,
    a_job_sees_its_own_marks_and_keeps_amounts_it_did_not_see,
    the_id_given_for_a_job_is_its_own,
    a_job_notified_while_it_ran_wakes_the_worker_when_it_finishes,
    an_ingest_whose_caller_went_away_still_wakes_the_worker,
    a_lease_of_fewer_jobs_than_asked_tells_when_the_next_is_due,
    a_lease_of_fewer_events_than_asked_tells_when_the_next_is_due,
    destinations_recording_the_same_events_at_once_keep_each_events_sums,
);

struct Opened {
    store: Store,
    location: Location,
    _dir: tempfile::TempDir,
    _database: Backend,
}

async fn open() -> Opened {
    open_with(crate::helpers::rules()).await
}

async fn open_with(rules: pointhook::domain::verdict::DecisionRules) -> Opened {
    let dir = tempfile::tempdir().unwrap();
    let database = crate::backends::current();
    let location = match &database {
        Backend::Sqlite => Location::Sqlite(dir.path().join("store.db")),
        Backend::Postgres(pg) => Location::Postgres(pg.url.clone()),
    };
    let store = Store::open(&location, rules).await.expect("store opens");
    Opened {
        store,
        location,
        _dir: dir,
        _database: database,
    }
}

impl Opened {
    /// Another store on the same data: a second instance on PostgreSQL,
    /// the same owner on SQLite.
    async fn second(&self) -> Store {
        match &self.location {
            Location::Sqlite(_) => self.store.clone(),
            Location::Postgres(_) => Store::open(&self.location, crate::helpers::rules())
                .await
                .unwrap(),
        }
    }
}

fn order_work(order: &str) -> Work {
    Work::MerchantOrder {
        id: MerchantOrderId::parse(order).unwrap(),
    }
}

fn delivery(work: &Work, body: &str) -> NewDelivery {
    let resource = work.resource_id();
    NewDelivery {
        received_at: unix_ms_now(),
        account: "default".into(),
        kind: Kind::Ipn,
        topic: "merchant_order".into(),
        resource_id: resource.clone(),
        notification_id: None,
        source_news: None,
        query: format!("topic=merchant_order&id={resource}"),
        headers: "{}".into(),
        body: bytes::Bytes::copy_from_slice(body.as_bytes()),
        body_size: None,
        body_sha256: None,
        remote_addr: "127.0.0.1:1".into(),
        fingerprint: fingerprint(
            "default",
            Kind::Ipn,
            "merchant_order",
            &resource,
            body.as_bytes(),
        ),
        signature: SignatureStatus::NotChecked,
        signature_key: None,
        job: Some(NewJob::for_work(work)),
    }
}

/// A release of `order` under `key`, guarded as the rules guard it.
fn release(order: &str, key: &str) -> Effects {
    let id = MerchantOrderId::parse(order).unwrap();
    Effects {
        decisions: vec![Decision {
            subject: format!("merchant_order:{order}"),
            key: key.into(),
            event: EventType::OrderReleased,
            data: json!({"merchant_order_id": order, "key": key}),
            guards: vec![
                Guard::OrderNotReleased(id.clone()),
                Guard::OrderNotBlocked(id.clone()),
            ],
            marks: vec![Mark::OrderReleased(id.clone())],
            slot: Slot::Once,
            reason: "test".into(),
        }],
        orders: vec![OrderSeen {
            order_id: id,
            total_amount: "10.00".into(),
            paid_amount: "10.00".into(),
        }],
        ..Effects::default()
    }
}

async fn a_delivery_and_its_job_commit_together_and_coalesce() {
    let s = open().await;
    let work = order_work("1");
    let first = s.store.ingest(delivery(&work, "a")).await.unwrap();
    let again = s.store.ingest(delivery(&work, "a")).await.unwrap();
    let other = s.store.ingest(delivery(&work, "b")).await.unwrap();
    assert!(!first.duplicate);
    assert!(again.duplicate, "the same bytes again are a duplicate");
    assert!(!other.duplicate);
    assert!(first.job_id.is_some());
    assert_eq!(first.job_id, again.job_id, "one job per key");
    assert_eq!(first.job_id, other.job_id);
    let jobs = s
        .store
        .lease_jobs(unix_ms_now(), 60_000, 10)
        .await
        .unwrap()
        .taken;
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].work.as_ref().unwrap(), &work);
    assert_eq!(jobs[0].attempt, 1);
}

/// Whether the job is created or coalesced into, and whether the jobs'
/// ids run in step with the deliveries' or not, ingest names the job's
/// own id (the one a lease hands out).
async fn the_id_given_for_a_job_is_its_own() {
    let s = open().await;
    let job_of = |order: &'static str, body: &'static str| {
        let store = s.store.clone();
        async move {
            let ingested = store.ingest(delivery(&order_work(order), body)).await;
            ingested.unwrap().job_id
        }
    };
    // In step: delivery 1 creates job 1.
    let mut given = vec![job_of("11", "a").await];
    // Out of step: a delivery that makes no job, then deliveries that do.
    let ignored = NewDelivery {
        job: None,
        ..delivery(&order_work("99"), "ignored")
    };
    let ignored = s.store.ingest(ignored).await.unwrap();
    assert_eq!(ignored.job_id, None);
    given.push(job_of("12", "a").await);
    given.push(job_of("13", "a").await);
    given.push(job_of("14", "a").await);
    assert_ne!(given[1], Some(ignored.delivery_id + 1), "ids out of step");
    // Coalesced into jobs already there.
    assert_eq!(job_of("13", "b").await, given[2]);
    assert_eq!(job_of("12", "b").await, given[1]);

    let mut leased: Vec<(i64, String)> = s
        .store
        .lease_jobs(unix_ms_now(), 60_000, 10)
        .await
        .unwrap()
        .taken
        .into_iter()
        .map(|j| (j.id, j.work.unwrap().resource_id()))
        .collect();
    leased.sort();
    let mut expected: Vec<(i64, String)> = given
        .iter()
        .zip(["11", "12", "13", "14"])
        .map(|(id, order)| (id.expect("a job"), order.to_string()))
        .collect();
    expected.sort();
    assert_eq!(leased, expected);
}

async fn two_stores_never_lease_one_job() {
    let s = open().await;
    const JOBS: usize = 200;
    for i in 0..JOBS {
        let work = order_work(&(1000 + i).to_string());
        s.store.ingest(delivery(&work, "x")).await.unwrap();
    }
    let stores = [s.store.clone(), s.second().await];
    let mut tasks = Vec::new();
    for store in stores.into_iter().cycle().take(4) {
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let leased = store
                    .lease_jobs(unix_ms_now(), 60_000, 7)
                    .await
                    .unwrap()
                    .taken;
                if leased.is_empty() {
                    return mine;
                }
                mine.extend(leased.into_iter().map(|j| j.id));
            }
        }));
    }
    let mut seen = HashSet::new();
    let mut total = 0;
    for t in tasks {
        for id in t.await.unwrap() {
            total += 1;
            assert!(seen.insert(id), "job {id} leased twice");
        }
    }
    assert_eq!(total, JOBS, "every job leased once");
}

async fn a_run_whose_lease_moved_on_records_nothing() {
    let s = open().await;
    s.store
        .ingest(delivery(&order_work("7"), "x"))
        .await
        .unwrap();
    let now = unix_ms_now();
    let stale = s.store.lease_jobs(now, 1, 1).await.unwrap().taken.remove(0);
    // The lease ran out; another run takes the job.
    let fresh = s
        .store
        .lease_jobs(now + 10, 60_000, 1)
        .await
        .unwrap()
        .taken
        .remove(0);
    assert_eq!((stale.id, stale.attempt, fresh.attempt), (fresh.id, 1, 2));
    assert!(
        !s.store
            .renew_lease(stale.clone(), now + 60_000)
            .await
            .unwrap()
    );
    let lost = s
        .store
        .finish_job(
            stale,
            JobOutcome::Done(release("7", "released")),
            Vec::new(),
            now + 20,
        )
        .await
        .unwrap();
    assert!(matches!(lost, Finish::LeaseLost), "{lost:?}");
    assert!(
        s.store
            .list_events(None, None, 10)
            .await
            .unwrap()
            .is_empty(),
        "the stale run decided nothing"
    );
    let order = s
        .store
        .get_order("default".into(), "7".into())
        .await
        .unwrap();
    assert!(
        order.as_ref().is_none_or(|o| o.total_amount.is_none()),
        "the stale run recorded no amounts: {order:?}"
    );
    assert!(
        s.store
            .renew_lease(fresh.clone(), now + 60_000)
            .await
            .unwrap()
    );
    let done = s
        .store
        .finish_job(
            fresh,
            JobOutcome::Done(release("7", "released")),
            Vec::new(),
            now + 30,
        )
        .await
        .unwrap();
    assert!(
        matches!(&done, Finish::Recorded(ids) if ids.len() == 1),
        "{done:?}"
    );
    let order = s
        .store
        .get_order("default".into(), "7".into())
        .await
        .unwrap()
        .expect("the run recorded the order");
    assert_eq!(order.total_amount.as_deref(), Some("10.00"));
    assert!(order.released_at.is_some(), "{order:?}");
}

/// A job notified again while it ran is pending once its run is recorded,
/// and the worker hears of it then (it leased nothing when the
/// notification came, the job being taken).
async fn a_job_notified_while_it_ran_wakes_the_worker_when_it_finishes() {
    let s = open().await;
    let wait = std::time::Duration::from_secs(5);
    s.store
        .ingest(delivery(&order_work("33"), "x"))
        .await
        .unwrap();
    tokio::time::timeout(wait, s.store.job_ready())
        .await
        .expect("woken by the new job");
    let now = unix_ms_now();
    let job = s
        .store
        .lease_jobs(now, 60_000, 1)
        .await
        .unwrap()
        .taken
        .remove(0);
    s.store
        .ingest(delivery(&order_work("33"), "y"))
        .await
        .unwrap();
    tokio::time::timeout(wait, s.store.job_ready())
        .await
        .expect("woken by the notification");
    assert!(
        s.store
            .lease_jobs(now, 60_000, 1)
            .await
            .unwrap()
            .taken
            .is_empty(),
        "running: nothing to lease"
    );
    s.store
        .finish_job(
            job,
            JobOutcome::Done(release("33", "released")),
            Vec::new(),
            now + 10,
        )
        .await
        .unwrap();
    tokio::time::timeout(wait, s.store.job_ready())
        .await
        .expect("woken once the run is recorded");
    let again = s.store.lease_jobs(now + 20, 60_000, 1).await.unwrap().taken;
    assert_eq!(again.len(), 1, "the job runs again");
}

/// Many runs (of different jobs) take the same decision at once: one event.
async fn one_decision_per_key_however_many_runs_race() {
    let s = open().await;
    let second = s.second().await;
    let mut leased = Vec::new();
    for i in 0..8 {
        s.store
            .ingest(delivery(&order_work(&(50 + i).to_string()), "x"))
            .await
            .unwrap();
    }
    leased.extend(
        s.store
            .lease_jobs(unix_ms_now(), 60_000, 8)
            .await
            .unwrap()
            .taken,
    );
    assert_eq!(leased.len(), 8);
    let mut tasks = Vec::new();
    for (i, job) in leased.into_iter().enumerate() {
        let store = if i % 2 == 0 {
            s.store.clone()
        } else {
            second.clone()
        };
        tasks.push(tokio::spawn(async move {
            store
                .finish_job(
                    job,
                    JobOutcome::Done(release("9", "released")),
                    Vec::new(),
                    unix_ms_now(),
                )
                .await
                .unwrap()
        }));
    }
    let mut emitted = 0;
    for t in tasks {
        match t.await.unwrap() {
            Finish::Recorded(ids) => emitted += ids.len(),
            Finish::LeaseLost => panic!("every run held its lease"),
        }
    }
    assert_eq!(emitted, 1);
    assert_eq!(s.store.list_events(None, None, 10).await.unwrap().len(), 1);
}

/// Different keys guarded by "not released yet" on one order, decided at
/// once from two stores: the guard is checked where it is taken, so one
/// release only.
async fn an_order_is_released_once_by_racing_decisions() {
    let s = open().await;
    let second = s.second().await;
    // The order is known first; the racing runs then only decide (an
    // amounts update of their own would lock the order row anyway).
    s.store
        .ingest(delivery(&order_work("99"), "x"))
        .await
        .unwrap();
    let seen = s
        .store
        .lease_jobs(unix_ms_now(), 60_000, 1)
        .await
        .unwrap()
        .taken;
    let mut known = release("99", "none");
    known.decisions.clear();
    s.store
        .finish_job(
            seen[0].clone(),
            JobOutcome::Done(known),
            Vec::new(),
            unix_ms_now(),
        )
        .await
        .unwrap();
    for i in 0..8 {
        s.store
            .ingest(delivery(&order_work(&(70 + i).to_string()), "x"))
            .await
            .unwrap();
    }
    let leased = s
        .store
        .lease_jobs(unix_ms_now(), 60_000, 8)
        .await
        .unwrap()
        .taken;
    let mut tasks = Vec::new();
    for (i, job) in leased.into_iter().enumerate() {
        let store = if i % 2 == 0 {
            s.store.clone()
        } else {
            second.clone()
        };
        tasks.push(tokio::spawn(async move {
            match store
                .finish_job(
                    job,
                    JobOutcome::Done(Effects {
                        orders: Vec::new(),
                        ..release("99", &format!("released-by-{i}"))
                    }),
                    Vec::new(),
                    unix_ms_now(),
                )
                .await
                .unwrap()
            {
                Finish::Recorded(ids) => ids.len(),
                Finish::LeaseLost => panic!("every run held its lease"),
            }
        }));
    }
    let mut emitted = 0;
    for t in tasks {
        emitted += t.await.unwrap();
    }
    assert_eq!(emitted, 1, "released once");
    let order = s
        .store
        .get_order("default".into(), "99".into())
        .await
        .unwrap()
        .unwrap();
    assert!(order.released_at.is_some() && !order.blocked);
}

/// Within one job, a decision's mark holds for the guards of the next
/// (released once, not twice), and an order a job names only in a guard
/// keeps the amounts an earlier job saw.
async fn a_job_sees_its_own_marks_and_keeps_amounts_it_did_not_see() {
    let s = open().await;
    s.store
        .ingest(delivery(&order_work("55"), "x"))
        .await
        .unwrap();
    let job = s
        .store
        .lease_jobs(unix_ms_now(), 60_000, 1)
        .await
        .unwrap()
        .taken;
    let mut twice = release("55", "first");
    twice.decisions.extend(release("55", "second").decisions);
    let finish = s
        .store
        .finish_job(
            job[0].clone(),
            JobOutcome::Done(twice),
            Vec::new(),
            unix_ms_now(),
        )
        .await
        .unwrap();
    assert_eq!(finish, Finish::Recorded(finish_ids(&finish, 1)));

    s.store
        .ingest(delivery(&order_work("55"), "y"))
        .await
        .unwrap();
    let job = s
        .store
        .lease_jobs(unix_ms_now(), 60_000, 1)
        .await
        .unwrap()
        .taken;
    let guard_only = Effects {
        orders: Vec::new(),
        ..release("55", "third")
    };
    let finish = s
        .store
        .finish_job(
            job[0].clone(),
            JobOutcome::Done(guard_only),
            Vec::new(),
            unix_ms_now(),
        )
        .await
        .unwrap();
    assert_eq!(finish, Finish::Recorded(Vec::new()), "released already");
    let order = s
        .store
        .get_order("default".into(), "55".into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (order.total_amount.as_deref(), order.paid_amount.as_deref()),
        (Some("10.00"), Some("10.00"))
    );
    assert!(order.released_at.is_some());
}

/// The ids a `Recorded` finish carries, checked to be `n`.
fn finish_ids(finish: &Finish, n: usize) -> Vec<String> {
    match finish {
        Finish::Recorded(ids) => {
            assert_eq!(ids.len(), n, "{ids:?}");
            ids.clone()
        }
        Finish::LeaseLost => panic!("the run held its lease"),
    }
}

/// The worker sleeps until the time its last lease told: the jobs it just
/// took are not that time (PostgreSQL reads it in the lease's statement,
/// where they are still pending), and a full lease tells nothing.
async fn a_lease_of_fewer_jobs_than_asked_tells_when_the_next_is_due() {
    let s = open().await;
    let t = unix_ms_now();
    for (order, at) in [("1", t), ("2", t + 5_000)] {
        let mut d = delivery(&order_work(order), order);
        d.received_at = at;
        s.store.ingest(d).await.unwrap();
    }
    let early = s.store.lease_jobs(t - 1_000, 60_000, 4).await.unwrap();
    assert!(early.taken.is_empty());
    assert_eq!(early.next_due, Some(t), "the first job's time");
    let first = s.store.lease_jobs(t, 60_000, 4).await.unwrap();
    assert_eq!(first.taken.len(), 1);
    assert_eq!(first.next_due, Some(t + 5_000), "not the job just taken");
    let full = s.store.lease_jobs(t + 5_000, 60_000, 1).await.unwrap();
    assert_eq!(full.taken.len(), 1);
    assert_eq!(full.next_due, None, "a full lease tells nothing");
    let idle = s.store.lease_jobs(t + 6_000, 60_000, 4).await.unwrap();
    assert!(idle.taken.is_empty());
    assert_eq!(idle.next_due, None, "nothing is pending");
}

/// Runs `order`'s job to a release decided at `at`: one event, due then.
async fn release_with_an_event(store: &Store, order: &str, at: i64) {
    store
        .ingest(delivery(&order_work(order), order))
        .await
        .unwrap();
    let job = store
        .lease_jobs(unix_ms_now(), 60_000, 1)
        .await
        .unwrap()
        .taken
        .remove(0);
    let done = store
        .finish_job(
            job,
            JobOutcome::Done(release(order, "released")),
            Vec::new(),
            at,
        )
        .await
        .unwrap();
    assert!(matches!(&done, Finish::Recorded(ids) if ids.len() == 1));
}

/// As for jobs; an event's lease counts too: the outbox wakes when a lease
/// it took runs out unrecorded.
async fn a_lease_of_fewer_events_than_asked_tells_when_the_next_is_due() {
    let s = open().await;
    let t = unix_ms_now();
    for (order, at) in [("11", t), ("12", t + 5_000)] {
        release_with_an_event(&s.store, order, at).await;
    }
    let early = s
        .store
        .lease_events("default", t - 1_000, 60_000, 4)
        .await
        .unwrap();
    assert!(early.taken.is_empty());
    assert_eq!(early.next_due, Some(t), "the first event's time");
    let full = s.store.lease_events("default", t, 60_000, 1).await.unwrap();
    assert_eq!(full.taken.len(), 1);
    assert_eq!(full.next_due, None, "a full lease tells nothing");
    let none = s.store.lease_events("default", t, 60_000, 4).await.unwrap();
    assert!(none.taken.is_empty());
    assert_eq!(
        none.next_due,
        Some(t + 5_000),
        "the second event, not the leased one"
    );
    let last = s
        .store
        .lease_events("default", t + 5_000, 10_000, 4)
        .await
        .unwrap();
    assert_eq!(last.taken.len(), 1);
    assert_eq!(
        last.next_due,
        Some(t + 15_000),
        "the lease just taken runs out first, before the other one"
    );
}

async fn two_stores_never_lease_one_event() {
    let s = open().await;
    const EVENTS: usize = 60;
    for i in 0..EVENTS {
        release_with_an_event(&s.store, &(200 + i).to_string(), unix_ms_now()).await;
    }
    let stores = [s.store.clone(), s.second().await];
    let mut tasks = Vec::new();
    for store in stores.into_iter().cycle().take(4) {
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let leased = store
                    .lease_events("default", unix_ms_now(), 60_000, 5)
                    .await
                    .unwrap()
                    .taken;
                if leased.is_empty() {
                    return mine;
                }
                let outcomes: Vec<EventOutcome> = leased
                    .into_iter()
                    .map(|event| {
                        mine.push(event.id.clone());
                        EventOutcome {
                            event,
                            attempted: Attempted::Delivered { at: unix_ms_now() },
                        }
                    })
                    .collect();
                let n = outcomes.len();
                let recorded = store
                    .record_event_outcomes(
                        "default",
                        outcomes,
                        crate::helpers::healthy(unix_ms_now()),
                    )
                    .await
                    .unwrap();
                assert_eq!(recorded.held, vec![true; n]);
            }
        }));
    }
    let mut seen = HashSet::new();
    for t in tasks {
        for id in t.await.unwrap() {
            assert!(seen.insert(id.clone()), "event {id} leased twice");
        }
    }
    assert_eq!(seen.len(), EVENTS, "every event posted once");
}

/// A store on a database of its own, for a test of PostgreSQL alone
/// (`None`: no PostgreSQL to test against).
async fn postgres_store() -> Option<(std::sync::Arc<crate::backends::TestDatabase>, Store)> {
    let Some(Backend::Postgres(pg)) = Backend::postgres() else {
        return None;
    };
    let s = Store::open(&Location::Postgres(pg.url.clone()), crate::helpers::rules())
        .await
        .unwrap();
    Some((pg, s))
}

/// On a new, empty PostgreSQL database (no statistics yet), the generic
/// plan of the duplicate check is one seek of its own index, not a walk
/// through every delivery of the account.
#[tokio::test]
async fn the_duplicate_check_seeks_its_index_on_a_new_database() {
    let Some((pg, s)) = postgres_store().await else {
        return;
    };
    s.close().await;
    let plan = crate::backends::run(&pg.url, |c| async move {
        c.batch_execute(
            "SET plan_cache_mode = force_generic_plan;
             PREPARE dup(text, text, bytea) AS
                 SELECT id FROM deliveries
                 WHERE account = $1 AND resource_id = $2 AND fingerprint = $3
                 ORDER BY id LIMIT 1",
        )
        .await?;
        let rows = c
            .query("EXPLAIN EXECUTE dup('a', 'b', '\\x00')", &[])
            .await?;
        Ok(rows
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>()
            .join("\n"))
    })
    .unwrap();
    assert!(plan.contains("deliveries_resource"), "{plan}");
    assert!(!plan.contains("Sort"), "{plan}");
}

/// On a new PostgreSQL database, the generic plans of the job lease's two
/// lists are each one seek of an index, read in the list's order: the due
/// pending jobs oldest first, the live lane newest first (its partial
/// index, backwards); no sort of what a backlog holds.
#[tokio::test]
async fn the_lease_lists_seek_their_indexes_on_a_new_database() {
    let Some((pg, s)) = postgres_store().await else {
        return;
    };
    s.close().await;
    let plans = crate::backends::run(&pg.url, |c| async move {
        c.batch_execute(
            "SET plan_cache_mode = force_generic_plan;
             PREPARE due(bigint, bigint) AS
                 SELECT id, run_at FROM jobs WHERE state = 0 AND run_at <= $1
                 ORDER BY run_at LIMIT $2 FOR UPDATE SKIP LOCKED;
             PREPARE live(bigint, bigint) AS
                 SELECT id, run_at FROM jobs WHERE state = 0 AND lane = 0 AND run_at <= $1
                 ORDER BY run_at DESC LIMIT $2 FOR UPDATE SKIP LOCKED;",
        )
        .await?;
        let mut plans = Vec::new();
        for name in ["due", "live"] {
            let rows = c
                .query(&format!("EXPLAIN EXECUTE {name}(1, 8)"), &[])
                .await?;
            plans.push(
                rows.iter()
                    .map(|r| r.get::<_, String>(0))
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
        }
        Ok(plans)
    })
    .unwrap();
    assert!(
        plans[0].contains("Index Scan using jobs_runnable"),
        "{}",
        plans[0]
    );
    assert!(
        plans[1].contains("Index Scan Backward using jobs_live"),
        "{}",
        plans[1]
    );
    for plan in &plans {
        assert!(!plan.contains("Sort"), "{plan}");
    }
}

/// A lone delivery is committed in a transaction of its own statement; an
/// error at its commit (here a deferred check) is still the ingest's error,
/// so nothing refused at commit is acknowledged.
#[tokio::test]
async fn a_delivery_refused_at_its_commit_is_not_acknowledged() {
    let Some((pg, s)) = postgres_store().await else {
        return;
    };
    crate::backends::run(&pg.url, |c| async move {
        c.batch_execute(
            "CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.topic = 'refused-at-commit' THEN RAISE EXCEPTION 'refused at commit'; END IF;
                 RETURN NULL;
             END $$;
             CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON deliveries
                 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_at_commit();",
        )
        .await
    })
    .unwrap();
    let mut refused = delivery(&order_work("35"), "x");
    refused.topic = "refused-at-commit".into();
    let answer = s.ingest(refused).await;
    assert!(answer.is_err(), "acknowledged: {answer:?}");
    s.ingest(delivery(&order_work("36"), "y")).await.unwrap();
    let db = crate::backends::TestDb::Postgres(pg.url.clone());
    let topics = db.rows("SELECT topic FROM deliveries ORDER BY id", &[]);
    assert_eq!(topics.len(), 1, "only the other delivery is stored");
    assert_eq!(topics[0][0].text(), "merchant_order");
    s.close().await;
}

/// Two stores on one fresh PostgreSQL database, as two instances would
/// be, once both listen (a notification sent before would be missed, and
/// only the poll would find its work); `None` (the test skips) without a
/// server.
async fn two_instances() -> Option<(std::sync::Arc<crate::backends::TestDatabase>, Store, Store)> {
    let Some(Backend::Postgres(pg)) = Backend::postgres() else {
        return None;
    };
    let location = Location::Postgres(pg.url.clone());
    let a = Store::open(&location, crate::helpers::rules())
        .await
        .unwrap();
    let b = Store::open(&location, crate::helpers::rules())
        .await
        .unwrap();
    listeners(&pg.url, 2).await;
    Some((pg, a, b))
}

/// The backend pids of the database's `count` listeners, once each has
/// run its last set-up statement.
async fn listeners(url: &str, count: usize) -> Vec<i32> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let db = crate::backends::TestDb::Postgres(url.to_string());
        let pids: Vec<i32> = db
            .rows(
                "SELECT pid FROM pg_stat_activity
                 WHERE datname = current_database() AND application_name = 'pointhook (listener)'
                   AND state = 'idle' AND query = 'SELECT pg_backend_pid()'",
                &[],
            )
            .iter()
            .map(|r| r[0].int() as i32)
            .collect();
        if pids.len() == count {
            return pids;
        }
        assert!(std::time::Instant::now() < deadline, "listeners not ready");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// On PostgreSQL a job or an event queued by one instance wakes the
/// workers and outboxes of the others at once, and the notification is
/// sent by the instance's listener after the commit, not from inside the
/// data's transaction (where it would serialize the commits of every
/// instance behind the database's notification lock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_instances_are_woken_by_the_listener_after_the_commit() {
    use futures_util::StreamExt;
    use std::time::Duration;
    use tokio_postgres::{AsyncMessage, NoTls};

    let Some((pg, a, b)) = two_instances().await else {
        return;
    };
    // A connection of the test's own hears whatever is sent.
    let (watch, mut connection) = tokio_postgres::connect(&pg.url, NoTls).await.unwrap();
    let (heard_tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(m)) = messages.next().await {
            if let AsyncMessage::Notification(n) = m {
                let _ = heard_tx.send((n.channel().to_string(), n.process_id()));
            }
        }
    });
    watch
        .batch_execute("LISTEN pointhook_jobs; LISTEN pointhook_events")
        .await
        .unwrap();
    let listeners = listeners(&pg.url, 2).await;
    let wait = Duration::from_secs(5);
    let mut sender_of = async |channel: &str| loop {
        let (c, pid) = tokio::time::timeout(wait, heard.recv())
            .await
            .unwrap_or_else(|_| panic!("nothing sent on {channel}"))
            .unwrap();
        if c == channel {
            return pid;
        }
    };

    a.ingest(delivery(&order_work("31"), "x")).await.unwrap();
    tokio::time::timeout(wait, b.job_ready())
        .await
        .expect("the other instance's worker is woken");
    let pid = sender_of("pointhook_jobs").await;
    assert!(
        listeners.contains(&pid),
        "sent by {pid}, not a listener {listeners:?}"
    );

    let job = a
        .lease_jobs(unix_ms_now(), 60_000, 1)
        .await
        .unwrap()
        .taken
        .remove(0);
    let done = a
        .finish_job(
            job,
            JobOutcome::Done(release("31", "released")),
            Vec::new(),
            unix_ms_now(),
        )
        .await
        .unwrap();
    finish_ids(&done, 1);
    tokio::time::timeout(wait, b.event_ready())
        .await
        .expect("the other instance's outbox is woken");
    let pid = sender_of("pointhook_events").await;
    assert!(
        listeners.contains(&pid),
        "sent by {pid}, not a listener {listeners:?}"
    );
    a.close().await;
    b.close().await;
}

/// A job an instance lets go of as it stops is taken by another one at
/// once, not at that one's next poll.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_released_at_shutdown_wakes_the_other_instances() {
    let Some((_pg, a, b)) = two_instances().await else {
        return;
    };
    let wait = std::time::Duration::from_secs(5);
    a.ingest(delivery(&order_work("32"), "x")).await.unwrap();
    tokio::time::timeout(wait, b.job_ready())
        .await
        .expect("woken by the new job");
    let job = a
        .lease_jobs(unix_ms_now(), 60_000, 1)
        .await
        .unwrap()
        .taken
        .remove(0);
    a.release_job(job, unix_ms_now()).await.unwrap();
    tokio::time::timeout(wait, b.job_ready())
        .await
        .expect("woken by the released job");
    let taken = b.lease_jobs(unix_ms_now(), 60_000, 1).await.unwrap().taken;
    assert_eq!(taken.len(), 1, "the other instance takes it");
    a.close().await;
    b.close().await;
}

/// One sweeper per deployment: on PostgreSQL the lead goes to one store at
/// a time, and back when it is released or its holder goes away.
#[tokio::test]
async fn one_store_leads_at_a_time() {
    let Some((_pg, a, b)) = two_instances().await else {
        return;
    };
    let lead = a
        .lead()
        .await
        .unwrap()
        .expect("the first asks, the first leads");
    assert!(b.lead().await.unwrap().is_none(), "two leaders");
    lead.release().await;
    let lead = b.lead().await.unwrap().expect("released, it moves on");
    assert!(a.lead().await.unwrap().is_none());
    // Dropped without a release (a pass cancelled mid-way): its session
    // closes and the lock goes with it.
    drop(lead);
    let mut again = None;
    for _ in 0..50 {
        again = a.lead().await.unwrap();
        if again.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    again.expect("a dropped lead is given back").release().await;
    a.close().await;
    b.close().await;
}

#[tokio::test]
async fn the_sole_owner_of_a_sqlite_file_always_leads() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(
        &Location::Sqlite(dir.path().join("lead.db")),
        crate::helpers::rules(),
    )
    .await
    .unwrap();
    let first = s.lead().await.unwrap().expect("leads");
    assert!(s.lead().await.unwrap().is_some());
    first.release().await;
    s.close().await;
}

/// The WAL grows past its 256 MiB bound while a reader holds it, and once
/// it has started over the file is cut back to the bound: it does not stay
/// at the longest it ever was, nor shrink further, so later rounds of the
/// WAL overwrite the file's blocks instead of growing it again.
#[tokio::test]
async fn the_sqlite_wal_file_is_cut_back_once_it_starts_over() {
    // The writer's WAL_KEEP_BYTES.
    const BOUND: u64 = 256 << 20;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wal.db");
    let wal = dir.path().join("wal.db-wal");
    let store = Store::open(&Location::Sqlite(path.clone()), crate::helpers::rules())
        .await
        .unwrap();
    let wal_len = || std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    // A reader holding its snapshot keeps every checkpoint from finishing,
    // so the WAL cannot start over early: it grows past the bound whatever
    // the timing of the checkpoint thread.
    let reader = rusqlite::Connection::open(&path).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let _: i64 = reader
        .query_row("SELECT count(*) FROM deliveries", [], |r| r.get(0))
        .unwrap();
    // 60 KiB bodies: about 16 frames each, so 4,800 of them write ~300 MiB.
    let body = "x".repeat(60 << 10);
    let mut longest = 0;
    for chunk in 0..150 {
        let ingests = (0..32).map(|i| {
            let work = order_work(&format!("{}", 1_000 + chunk * 32 + i));
            store.ingest(delivery(&work, &body))
        });
        for r in futures_util::future::join_all(ingests).await {
            r.unwrap();
        }
        longest = longest.max(wal_len());
    }
    assert!(longest > BOUND, "the WAL reached only {longest} bytes");
    drop(reader);
    // Quiet now: a write after the writer's next look completes the
    // checkpoint, and the one after starts the WAL over.
    let mut n = 0;
    while wal_len() > BOUND {
        assert!(n < 10, "the WAL file stays at {} bytes", wal_len());
        tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
        let work = order_work(&format!("{}", 9_000 + n));
        store.ingest(delivery(&work, "{}")).await.unwrap();
        n += 1;
    }
    // The bound is the smaller of 256 MiB and a quarter of the free space
    // (a disk short of room keeps less).
    let free = rustix::fs::statvfs(dir.path())
        .map(|s| s.f_bavail * s.f_frsize)
        .unwrap_or(u64::MAX);
    if free / 4 >= BOUND {
        assert_eq!(wal_len(), BOUND, "the WAL file is kept at the bound");
    } else {
        assert!(wal_len() <= BOUND, "kept within the bound: {}", wal_len());
    }
    store.close().await;
}

/// A request whose client hung up once its delivery was queued is still
/// committed; its job must wake the worker then, not wait for its poll.
async fn an_ingest_whose_caller_went_away_still_wakes_the_worker() {
    let s = open().await;
    // Whatever wake-up the opening left is taken first.
    let _ = tokio::time::timeout(std::time::Duration::from_millis(100), s.store.job_ready()).await;
    let mut ingest = Box::pin(s.store.ingest(delivery(&order_work("34"), "x")));
    // One poll queues the delivery; the commit (an fsync away) cannot have
    // answered yet. Then the caller goes, as a cancelled request does.
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(ingest.as_mut().poll(cx))).await;
    assert!(first.is_pending());
    drop(ingest);
    tokio::time::timeout(std::time::Duration::from_secs(5), s.store.job_ready())
        .await
        .expect("woken by the committed job");
    let job = s
        .store
        .lease_jobs(unix_ms_now(), 60_000, 1)
        .await
        .unwrap()
        .taken;
    assert_eq!(job.len(), 1, "the delivery was committed with its job");
}

/// Three destinations record the same events at once, their batches each
/// in its own order: no batch fails and every event ends delivered with
/// exact sums. On PostgreSQL two batches that locked the same events' rows
/// in opposite orders deadlocked, and one failed.
async fn destinations_recording_the_same_events_at_once_keep_each_events_sums() {
    use pointhook::domain::verdict::{EventPolicy, Route};
    const NAMES: [&str; 3] = ["a", "b", "c"];
    const EVENTS: usize = 60;
    let routes = NAMES.map(|n| Route {
        destination: n.into(),
        types: EventType::all().collect(),
        accounts: None,
    });
    let s = open_with(pointhook::rules::decision_rules(EventPolicy::new(
        routes.to_vec(),
    )))
    .await;
    let at = unix_ms_now();
    for i in 0..EVENTS {
        release_with_an_event(&s.store, &(700 + i).to_string(), at).await;
    }
    let mut tasks = Vec::new();
    for (n, name) in NAMES.into_iter().enumerate() {
        let store = s.second().await;
        tasks.push(tokio::spawn(async move {
            let leased = store
                .lease_events(name, unix_ms_now(), 60_000, EVENTS)
                .await
                .unwrap()
                .taken;
            assert_eq!(leased.len(), EVENTS, "{name}");
            // The same batches at every destination, each in its own
            // order, all at once.
            let mut batches = tokio::task::JoinSet::new();
            for chunk in leased.chunks(10) {
                let mut batch = chunk.to_vec();
                if n % 2 == 1 {
                    batch.reverse();
                }
                let store = store.clone();
                batches.spawn(async move {
                    let outcomes = batch
                        .into_iter()
                        .map(|event| EventOutcome {
                            event,
                            attempted: Attempted::Delivered { at: unix_ms_now() },
                        })
                        .collect();
                    let health = crate::helpers::healthy(unix_ms_now());
                    store
                        .record_event_outcomes(name, outcomes, health)
                        .await
                        .unwrap_or_else(|e| panic!("{name}: {e}"))
                });
            }
            while let Some(recorded) = batches.join_next().await {
                assert!(recorded.unwrap().held.iter().all(|h| *h));
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let db = match &s.location {
        Location::Sqlite(path) => crate::backends::TestDb::Sqlite(path.clone()),
        Location::Postgres(url) => crate::backends::TestDb::Postgres(url.clone()),
    };
    let sums = db.rows(
        "SELECT state, unfinished, gave_up, attempts, count(*) FROM events
         GROUP BY state, unfinished, gave_up, attempts",
        &[],
    );
    assert_eq!(sums.len(), 1, "every event alike: {sums:?}");
    let r = &sums[0];
    assert_eq!(
        (
            r[0].event_state(),
            r[1].int(),
            r[2].int(),
            r[3].int(),
            r[4].int()
        ),
        (
            pointhook::domain::EventState::Delivered,
            0,
            0,
            3,
            EVENTS as i64
        )
    );
}
