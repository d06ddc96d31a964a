//! Decisions and their events on PostgreSQL, written with the job's
//! completion: the same as SQLite's (`rules::kernel` answers, this writes),
//! with what several instances need on top. A job locks every merchant
//! order its effects name before deciding (`upsert_orders`, in order of id,
//! so two instances never wait on each other in a circle); its guards then
//! read those flags as its own marks change them. Decisions stay unique by
//! their key; a final slot taken by a concurrent run is asked again.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use deadpool_postgres::Transaction;

use super::prepared::prepared;
use crate::domain::verdict::{Context, DecisionRules, Record, Verdict};
use crate::domain::{
    Decision, DestinationState, Effects, EventState, EventType, Guard, GuardFacts, Mark,
    OrderFlags, ReviewMark, Slot,
};
use crate::store::StoreError;

/// How far back blocks by unauthenticated alerts are counted.
const BLOCK_WINDOW_MS: i64 = 3_600_000;

/// The flags of the orders a job locked, by id; its marks update them.
pub type Locked = std::collections::HashMap<String, OrderFlags>;

/// Applies `effects`; returns the ids of the events queued. `locked`: the
/// flags of the orders they name, when the caller has locked them already.
pub async fn apply(
    tx: &Transaction<'_>,
    account: &str,
    job_id: Option<i64>,
    effects: &Effects,
    now: i64,
    rules: &DecisionRules,
    locked: Option<Locked>,
) -> Result<Vec<String>, StoreError> {
    let mut orders = match locked {
        Some(flags) => flags,
        None => lock_orders(tx, account, effects, now).await?,
    };
    if !effects.order_payments.is_empty() {
        // In order of payment id, as the orders are locked: two jobs never
        // wait on each other's rows in opposite orders.
        let mut rows: Vec<(&str, &str)> = effects
            .order_payments
            .iter()
            .map(|p| (p.payment.as_str(), p.order.as_str()))
            .collect();
        rows.sort_unstable();
        let (payments, orders_of): (Vec<&str>, Vec<&str>) = rows.into_iter().unzip();
        tx.execute(
            "INSERT INTO order_payments (account, payment_id, platform_order)
             SELECT $1, * FROM unnest($2::text[], $3::text[]) ON CONFLICT DO NOTHING",
            &[&account, &payments, &orders_of],
        )
        .await?;
    }
    crate::store::order_refs::keep_pg(tx, account, &effects.refs).await?;
    let mut emitted = Vec::new();
    for d in &effects.decisions {
        if let Some(id) = decide(tx, account, job_id, d, now, rules, &mut orders).await? {
            emitted.push(id);
        }
    }
    Ok(emitted)
}

/// What `upsert_orders` binds: every order the effects name, in order of
/// id, with the amounts seen (none for an order only a guard or a mark
/// names).
pub struct OrderRows<'a> {
    pub ids: Vec<&'a str>,
    pub totals: Vec<Option<&'a str>>,
    pub paid: Vec<Option<&'a str>>,
}

impl<'a> OrderRows<'a> {
    pub fn of(effects: Option<&'a Effects>) -> OrderRows<'a> {
        let mut amounts: BTreeMap<&str, (Option<&str>, Option<&str>)> = BTreeMap::new();
        if let Some(effects) = effects {
            for d in &effects.decisions {
                let named = d.guards.iter().filter_map(Guard::order);
                for o in named.chain(d.marks.iter().filter_map(Mark::order)) {
                    amounts.insert(o.as_str(), (None, None));
                }
            }
            for o in &effects.orders {
                amounts.insert(
                    o.order_id.as_str(),
                    (Some(o.total_amount.as_str()), Some(o.paid_amount.as_str())),
                );
            }
        }
        OrderRows {
            ids: amounts.keys().copied().collect(),
            totals: amounts.values().map(|a| a.0).collect(),
            paid: amounts.values().map(|a| a.1).collect(),
        }
    }
}

/// Records the amounts seen and locks every order named, creating missing
/// rows, in a fixed order; an order with no amounts keeps its own. Returns
/// each order's flags as locked, for the guards. `params` numbers the
/// account, the three arrays of `OrderRows` and the time; `gate` may hold
/// it back.
pub fn upsert_orders(params: [&str; 5], gate: &str) -> String {
    let [account, ids, totals, paid, now] = params;
    format!(
        "INSERT INTO orders AS o (account, order_id, total_amount, paid_amount, updated_at)
         SELECT {account}, t.order_id, t.total, t.paid, {now}
         FROM unnest({ids}::text[], {totals}::text[], {paid}::text[]) AS t (order_id, total, paid)
         {gate}
         ORDER BY t.order_id
         ON CONFLICT (account, order_id) DO UPDATE SET
             total_amount = coalesce(excluded.total_amount, o.total_amount),
             paid_amount = coalesce(excluded.paid_amount, o.paid_amount),
             updated_at = CASE WHEN excluded.total_amount IS NULL
                               THEN o.updated_at ELSE excluded.updated_at END
         RETURNING order_id, released_at IS NOT NULL AS released, blocked_at IS NOT NULL AS blocked"
    )
}

/// `upsert_orders` on its own, for effects recorded outside a job's finish.
static LOCK_ORDERS: LazyLock<String> =
    LazyLock::new(|| upsert_orders(["$1", "$2", "$3", "$4", "$5"], ""));

async fn lock_orders(
    tx: &Transaction<'_>,
    account: &str,
    effects: &Effects,
    now: i64,
) -> Result<Locked, StoreError> {
    let orders = OrderRows::of(Some(effects));
    if orders.ids.is_empty() {
        return Ok(Locked::new());
    }
    let rows = tx
        .query(
            &prepared(tx, &LOCK_ORDERS).await?,
            &[&account, &orders.ids, &orders.totals, &orders.paid, &now],
        )
        .await?;
    rows.iter()
        .map(|r| {
            Ok((
                r.try_get(0)?,
                OrderFlags {
                    released: r.try_get(1)?,
                    blocked: r.try_get(2)?,
                },
            ))
        })
        .collect()
}

/// Records a decision and queues its event (only if the decision is new).
const DECIDE: &str = "WITH dec AS (
                 INSERT INTO decisions (account, subject, key, event_type, event_id, job_id, created_at, reason)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $12)
                 ON CONFLICT (account, subject, key) DO NOTHING
                 RETURNING 1
             )
             , ev AS (
                 INSERT INTO events (id, account, type, subject, body, job_id, created_at, state,
                                     next_attempt_at, unfinished)
                 SELECT $5::text, $1::text, $4::text, $2::text, $8::text, $6::bigint, $7::bigint, $9::int2,
                        $7::bigint, cardinality($13::text[])
                 WHERE EXISTS (SELECT 1 FROM dec) AND $5::text IS NOT NULL
                 RETURNING id
             )
             -- A queue row per destination: paused where it is disabled.
             , queued AS (
                 INSERT INTO outbox (event_id, destination, state, next_attempt_at, created_at, queued_at)
                 SELECT ev.id, d.name,
                        CASE WHEN EXISTS (SELECT 1 FROM destinations x
                                          WHERE x.name = d.name AND x.state = $15::int2)
                             THEN $14::int2 ELSE $9::int2 END,
                        $7::bigint, $7::bigint, $7::bigint
                 FROM ev, unnest($13::text[]) AS d (name)
             )
             -- The decision's marks on its orders (released, at risk), in
             -- the same statement: only when it was recorded now.
             , marked AS (
                 UPDATE orders SET
                     released_at = CASE WHEN order_id = ANY($10::text[])
                                        THEN coalesce(released_at, $7) ELSE released_at END,
                     at_risk_at = CASE WHEN order_id = ANY($11::text[])
                                       THEN coalesce(at_risk_at, $7) ELSE at_risk_at END,
                     updated_at = $7
                 WHERE account = $1 AND order_id = ANY($10::text[] || $11::text[])
                   AND EXISTS (SELECT 1 FROM dec)
             )
             SELECT EXISTS (SELECT 1 FROM dec)";

/// Records one decision as the kernel says; returns its event's id when
/// one was queued.
async fn decide(
    tx: &Transaction<'_>,
    account: &str,
    job_id: Option<i64>,
    d: &Decision,
    now: i64,
    rules: &DecisionRules,
    orders: &mut Locked,
) -> Result<Option<String>, StoreError> {
    let mut facts = GuardFacts {
        orders: orders.clone(),
        ..GuardFacts::default()
    };
    facts.holds = crate::store::hold_marks::states_pg(tx, account, &d.guards).await?;
    if d.guards
        .iter()
        .any(|g| matches!(g, Guard::UnauthenticatedBlocksUnder(_)))
    {
        facts.unauthenticated_blocks_last_hour = unauthenticated_blocks(tx, account, now).await?;
    }
    let mut recorded_final = match d.slot {
        Slot::Final => recorded_final(tx, account, &d.subject).await?,
        Slot::Once => None,
    };
    // At most twice: a final slot taken by a concurrent run since it was
    // read is judged again against what that run recorded.
    loop {
        let ctx = Context {
            account,
            now,
            recorded_final,
            facts: &facts,
        };
        match (rules.decide)(d, &ctx, &rules.events) {
            Verdict::Skip => {
                tracing::debug!(job_id, subject = %d.subject, key = %d.key, "decision skipped: a guard does not hold");
                return Ok(None);
            }
            Verdict::Same => return Ok(None),
            Verdict::Conflict { key, reason } => {
                tracing::warn!(
                    job_id, subject = %d.subject, recorded = ?recorded_final, new = %d.event,
                    "conflicting final state: recorded, nothing changed"
                );
                conflict(tx, account, job_id, d, &key, &reason, now).await?;
                return Ok(None);
            }
            Verdict::Record(r) => {
                let id = r.event.as_ref().map(|e| e.id.clone());
                if record(tx, account, job_id, &d.subject, &r, now).await? {
                    for m in &r.marks {
                        mark(tx, account, job_id, m, now, orders).await?;
                    }
                    tracing::info!(job_id, event_id = ?id, event_type = %r.event_type, subject = %d.subject, "decided");
                    return Ok(id);
                }
                if d.slot == Slot::Final && recorded_final.is_none() {
                    recorded_final = self::recorded_final(tx, account, &d.subject).await?;
                    if recorded_final.is_some() {
                        continue;
                    }
                }
                return Ok(None);
            }
        }
    }
}

/// `DECIDE` for one record; `false` when its key was taken already.
async fn record(
    tx: &Transaction<'_>,
    account: &str,
    job_id: Option<i64>,
    subject: &str,
    r: &Record,
    now: i64,
) -> Result<bool, StoreError> {
    let marked = |pick: fn(&Mark) -> Option<&str>| -> Vec<&str> {
        r.marks.iter().filter_map(pick).collect()
    };
    let (id, body, state, destinations) = match &r.event {
        Some(e) => (
            Some(e.id.as_str()),
            Some(e.body.as_str()),
            Some(e.state),
            e.destinations.as_slice(),
        ),
        None => (None, None, None, &[][..]),
    };
    let row = tx
        .query_one(
            &prepared(tx, DECIDE).await?,
            &[
                &account,
                &subject,
                &r.key,
                &r.event_type.as_str(),
                &id,
                &job_id,
                &now,
                &body,
                &state,
                &marked(|m| match m {
                    Mark::OrderReleased(o) => Some(o.as_str()),
                    _ => None,
                }),
                &marked(|m| match m {
                    Mark::OrderAtRisk(o) => Some(o.as_str()),
                    _ => None,
                }),
                &r.reason,
                &destinations,
                &EventState::Paused,
                &DestinationState::Disabled,
            ],
        )
        .await?;
    Ok(row.try_get(0)?)
}

async fn recorded_final(
    tx: &Transaction<'_>,
    account: &str,
    subject: &str,
) -> Result<Option<EventType>, StoreError> {
    let sql =
        "SELECT event_type FROM decisions WHERE account = $1 AND subject = $2 AND key = 'final'";
    Ok(tx
        .query_opt(&prepared(tx, sql).await?, &[&account, &subject])
        .await?
        .and_then(|r| EventType::parse(r.get(0))))
}

async fn unauthenticated_blocks(
    tx: &Transaction<'_>,
    account: &str,
    now: i64,
) -> Result<u32, StoreError> {
    let sql = "SELECT count(*) FROM order_blocks
               WHERE account = $1 AND unauthenticated AND blocked_at > $2";
    let n: i64 = tx
        .query_one(
            &prepared(tx, sql).await?,
            &[&account, &(now - BLOCK_WINDOW_MS)],
        )
        .await?
        .try_get(0)?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

async fn conflict(
    tx: &Transaction<'_>,
    account: &str,
    job_id: Option<i64>,
    d: &Decision,
    key: &str,
    reason: &str,
    now: i64,
) -> Result<(), StoreError> {
    let sql = "INSERT INTO decisions (account, subject, key, event_type, event_id, job_id, created_at, reason)
               VALUES ($1, $2, $3, $4, NULL, $5, $6, $7)
               ON CONFLICT (account, subject, key) DO NOTHING";
    tx.execute(
        &prepared(tx, sql).await?,
        &[
            &account,
            &d.subject,
            &key,
            &d.event.as_str(),
            &job_id,
            &now,
            &reason,
        ],
    )
    .await?;
    Ok(())
}

/// The marks `DECIDE` does not set itself; every mark updates the flags
/// the job's later guards read.
async fn mark(
    tx: &Transaction<'_>,
    account: &str,
    job_id: Option<i64>,
    m: &Mark,
    now: i64,
    orders: &mut Locked,
) -> Result<(), StoreError> {
    match m {
        Mark::OrderReleased(o) => orders.entry(o.to_string()).or_default().released = true,
        Mark::OrderAtRisk(_) => {}
        Mark::OrderBlocked {
            order,
            alert,
            unauthenticated,
        } => {
            let sql =
                "INSERT INTO order_blocks (account, order_id, alert, blocked_at, unauthenticated)
                       VALUES ($1, $2, $3, $4, $5)
                       ON CONFLICT (account, order_id, alert) DO UPDATE SET lifted_at = NULL";
            tx.execute(
                &prepared(tx, sql).await?,
                &[&account, &order.as_str(), alert, &now, unauthenticated],
            )
            .await?;
            let sql = "UPDATE orders SET blocked_at = coalesce(blocked_at, $3), updated_at = $3
                       WHERE account = $1 AND order_id = $2";
            tx.execute(
                &prepared(tx, sql).await?,
                &[&account, &order.as_str(), &now],
            )
            .await?;
            orders.entry(order.to_string()).or_default().blocked = true;
        }
        Mark::Review(r) => review(tx, account, r, job_id, now).await?,
        Mark::Hold(h) => crate::store::hold_marks::place_pg(tx, account, h, job_id, now).await?,
    }
    Ok(())
}

/// A review of one round of an alert: held (it covers each later delivery
/// while it waits) or rejected; a hold takes over a rejection of its round.
async fn review(
    tx: &Transaction<'_>,
    account: &str,
    r: &ReviewMark,
    job_id: Option<i64>,
    now: i64,
) -> Result<(), StoreError> {
    if super::review_join::join_held(tx, account, r).await? {
        if let Some(order) = &r.merchant_order {
            lift_block(tx, account, order.as_str(), &r.alert, now).await?;
        }
        return Ok(());
    }
    crate::store::reviews::place_pg(tx, account, r, job_id, now).await
}

/// Lifts one alert's block; the order is unblocked when none stands.
pub async fn lift_block(
    tx: &Transaction<'_>,
    account: &str,
    order: &str,
    alert: &str,
    now: i64,
) -> Result<(), StoreError> {
    tx.execute(
        &prepared(
            tx,
            "UPDATE order_blocks SET lifted_at = $4
         WHERE account = $1 AND order_id = $2 AND alert = $3 AND lifted_at IS NULL",
        )
        .await?,
        &[&account, &order, &alert, &now],
    )
    .await?;
    tx.execute(
        &prepared(
            tx,
            "UPDATE orders SET blocked_at = NULL, updated_at = $3
         WHERE account = $1 AND order_id = $2 AND NOT EXISTS (
             SELECT 1 FROM order_blocks b
             WHERE b.account = $1 AND b.order_id = $2 AND b.lifted_at IS NULL)",
        )
        .await?,
        &[&account, &order, &now],
    )
    .await?;
    Ok(())
}
