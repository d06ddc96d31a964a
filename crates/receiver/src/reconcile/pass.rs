//! One reconciliation pass over one account and one window: list what the
//! platform changed, and for each change pointhook does not know, record a
//! delivery of kind `reconcile` with the job a notification would have made.

use std::collections::{BTreeMap, HashMap};

use jiff::Timestamp;
use serde::Serialize;

use super::change::{Change, delivery, instant, payment_work, retrying, sighting};
use crate::api::ApiClient;
use crate::api::endpoint::stamp;
use crate::api::error::{ApiError, ErrorClass};
use crate::domain::{IntentId, IntentState, PaymentId, Work};
use crate::store::{Store, StoreError};
use pointhook_common::clock::Clock;

/// Results per page asked of the searches (the payments search's most).
const PAGE: u64 = 50;
/// The payments search serves no page past this offset: a window with more
/// changes than that is split in two.
const MAX_OFFSET: u64 = 10_000;
/// Longest span of days one intent-events call may cover.
const INTENT_DAYS: i64 = 30;
/// Longest span of days one search of the Orders API may cover.
const PLATFORM_ORDER_DAYS: u16 = 30;

#[derive(Debug, thiserror::Error)]
pub enum PassError {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a pass is for.
#[derive(Debug, Clone, Copy)]
pub enum Mode {
    /// The sweeper: a change is missed only once its grace has passed
    /// (before, its notification may still be on its way).
    Sweep { grace_ms: i64 },
    /// `pointhook reconcile`: every unknown change is enqueued, or with
    /// `dry_run` only counted.
    Backfill { dry_run: bool },
}

/// What a pass found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// Changes listed by the searches.
    pub found: u64,
    /// Of those, already known (a read saw that version, or its job waits).
    pub known: u64,
    /// Unknown but within their grace: looked at again next pass.
    pub waiting: u64,
    /// Unknown: enqueued (or, on a dry run, would be), by topic.
    pub enqueued: BTreeMap<&'static str, u64>,
    /// Search pages read.
    pub pages: u64,
    /// Changes the searches said they hold so far: what `found` counts toward.
    #[serde(skip)]
    pub listed: u64,
}

impl Report {
    pub fn missed(&self) -> u64 {
        self.enqueued.values().sum()
    }
}

/// Called after each page: the report so far.
pub type Progress<'a> = &'a (dyn Fn(&Report) + Sync);

pub struct Pass<'a> {
    pub store: &'a Store,
    pub api: &'a ApiClient,
    /// What "now" is: when a change counts as missed, and what a sighting
    /// is stamped with.
    pub clock: &'a dyn Clock,
    pub account: &'a str,
    pub mode: Mode,
    /// Counts each enqueued change (the sweeper's metric).
    pub on_missed: &'a (dyn Fn(&str, &'static str) + Sync),
    pub progress: Option<Progress<'a>>,
    /// When each unknown intent state was first listed: intent events carry
    /// a day, not an instant, so their grace runs from then (sweeper only).
    pub intents_first_seen: Option<&'a mut HashMap<(String, String), i64>>,
}

impl Pass<'_> {
    pub async fn run(mut self, begin: Timestamp, end: Timestamp) -> Result<Report, PassError> {
        let mut report = Report::default();
        self.payments(begin, end, &mut report).await?;
        self.merchant_orders(begin, end, &mut report).await?;
        self.intents(begin, end, &mut report).await?;
        self.platform_orders(begin, end, &mut report).await?;
        Ok(report)
    }

    async fn payments(
        &mut self,
        begin: Timestamp,
        end: Timestamp,
        report: &mut Report,
    ) -> Result<(), PassError> {
        // Halves of a window too full to page through, oldest first.
        let mut windows = vec![(begin, end)];
        while let Some((begin, end)) = windows.pop() {
            if let Some(mid) = self.payments_in(begin, end, report).await? {
                windows.push((mid, end));
                windows.push((begin, mid));
            }
        }
        Ok(())
    }

    /// Pages through one window; `Some(middle)` instead when it holds more
    /// than the search serves (and can still be split).
    async fn payments_in(
        &mut self,
        begin: Timestamp,
        end: Timestamp,
        report: &mut Report,
    ) -> Result<Option<Timestamp>, PassError> {
        let mut offset = 0;
        loop {
            let page = retrying(|| {
                self.api
                    .search_payments(self.account, begin, end, offset, PAGE)
            })
            .await?;
            report.pages += 1;
            let total = page.paging.total.unwrap_or(0);
            let span = end.as_millisecond() - begin.as_millisecond();
            if offset == 0 && total > MAX_OFFSET + PAGE && span > 1_000 {
                let mid =
                    Timestamp::from_millisecond(begin.as_millisecond() + span / 2).unwrap_or(begin);
                return Ok(Some(mid));
            }
            report.listed += if offset == 0 { total } else { 0 };
            let n = page.results.len() as u64;
            for p in page.results {
                let Some(version) = p.date_last_updated.clone() else {
                    continue;
                };
                if p.may_have_chargeback() {
                    self.chargebacks(&p.id, report).await?;
                }
                let change = Change {
                    topic: "payment",
                    updated_at: instant(&version),
                    sighting: sighting("payment", stamp(&version), payment_work(p.id)),
                };
                self.consider(change, report).await?;
            }
            self.tick(report);
            offset += n;
            if n == 0 || offset >= total || offset > MAX_OFFSET {
                if offset > MAX_OFFSET && offset < total {
                    tracing::warn!(
                        account = %pointhook_common::text::printable(self.account),
                        total,
                        "more payments changed within one second than the search serves"
                    );
                }
                return Ok(None);
            }
        }
    }

    async fn chargebacks(
        &mut self,
        payment: &PaymentId,
        report: &mut Report,
    ) -> Result<(), PassError> {
        let page = retrying(|| self.api.search_chargebacks(self.account, payment)).await?;
        report.pages += 1;
        report.listed += page.results.len() as u64;
        for c in page.results {
            let Some(version) = c.date_last_updated.clone() else {
                continue;
            };
            let change = Change {
                topic: "chargeback",
                updated_at: instant(&version),
                sighting: sighting("chargeback", stamp(&version), Work::Chargeback { id: c.id }),
            };
            self.consider(change, report).await?;
        }
        Ok(())
    }

    async fn merchant_orders(
        &mut self,
        begin: Timestamp,
        end: Timestamp,
        report: &mut Report,
    ) -> Result<(), PassError> {
        let mut offset = 0;
        loop {
            let page = retrying(|| {
                self.api
                    .search_merchant_orders(self.account, begin, end, offset, PAGE)
            })
            .await?;
            report.pages += 1;
            let n = page.elements.len() as u64;
            // A total on the first page; without one, each page's results.
            report.listed += page.total.map_or(n, |t| if offset == 0 { t } else { 0 });
            for o in page.elements {
                let Some(version) = o.last_updated.clone() else {
                    continue;
                };
                let change = Change {
                    topic: "merchant_order",
                    updated_at: instant(&version),
                    sighting: sighting(
                        "merchant_order",
                        stamp(&version),
                        Work::MerchantOrder { id: o.id },
                    ),
                };
                self.consider(change, report).await?;
            }
            self.tick(report);
            offset = match page.next_offset {
                Some(next) if next > offset => next,
                _ => offset + n,
            };
            if n == 0 || page.total.is_some_and(|t| offset >= t) || offset >= MAX_OFFSET {
                return Ok(());
            }
        }
    }

    async fn intents(
        &mut self,
        begin: Timestamp,
        end: Timestamp,
        report: &mut Report,
    ) -> Result<(), PassError> {
        // Days in UTC, one day either side: the docs do not say in which
        // zone the platform reads them, and listing more costs nothing.
        let day = |t: Timestamp| t.to_zoned(jiff::tz::TimeZone::UTC).date();
        let (first, last_day) = (
            day(begin).yesterday().unwrap_or(day(begin)),
            day(end).tomorrow().unwrap_or(day(end)),
        );
        // The last state listed for each intent; only final states are news
        // (one still moving is fetched again by its own job or next pass).
        let mut last: HashMap<IntentId, (String, Option<i64>)> = HashMap::new();
        let mut start = first;
        while start <= last_day {
            let stop = start
                .checked_add(jiff::Span::new().days(INTENT_DAYS - 1))
                .unwrap_or(last_day)
                .min(last_day);
            let list = retrying(|| self.api.intent_events(self.account, start, stop)).await?;
            report.pages += 1;
            for e in list.events {
                let at = e.created_on.as_deref().and_then(instant);
                if at.is_some_and(|at| at < begin.as_millisecond() || at > end.as_millisecond()) {
                    continue;
                }
                last.insert(e.payment_intent_id, (e.status, at));
            }
            match stop.tomorrow() {
                Ok(next) => start = next,
                Err(_) => break,
            }
        }
        let now = pointhook_common::clock::unix_ms(self.clock.now());
        for (id, (status, at)) in last {
            if !IntentState::parse(&status).is_some_and(IntentState::is_final) {
                continue;
            }
            // An event without a time: its grace runs from its first listing.
            let updated_at = at.or_else(|| {
                self.intents_first_seen.as_deref_mut().map(|seen| {
                    *seen
                        .entry((id.as_str().to_string(), status.clone()))
                        .or_insert(now)
                })
            });
            report.listed += 1;
            let change = Change {
                topic: "payment_intent",
                updated_at,
                sighting: sighting("payment_intent", status, Work::PaymentIntent { id }),
            };
            self.consider(change, report).await?;
        }
        self.tick(report);
        Ok(())
    }

    /// Orders of the Orders API, in windows of at most 30 days. Only an
    /// order with an outcome is news: the platform notifies nothing else.
    async fn platform_orders(
        &mut self,
        begin: Timestamp,
        end: Timestamp,
        report: &mut Report,
    ) -> Result<(), PassError> {
        let span = jiff::SignedDuration::from_hours(24 * i64::from(PLATFORM_ORDER_DAYS));
        let mut from = begin;
        while from < end {
            let to = from.checked_add(span).unwrap_or(end).min(end);
            let mut page = 1;
            let mut seen = 0;
            loop {
                let found = match retrying(|| {
                    self.api
                        .search_platform_orders(self.account, from, to, page, PAGE)
                })
                .await
                {
                    Ok(found) => found,
                    // An account (or a platform) without the Orders API.
                    Err(e) if matches!(e.class(), ErrorClass::NotFound) => {
                        tracing::debug!(error = %e, "no Orders API to reconcile");
                        return Ok(());
                    }
                    Err(e) => return Err(e.into()),
                };
                report.pages += 1;
                let n = found.data.len() as u64;
                report.listed += found
                    .paging
                    .total
                    .map_or(n, |t| if page == 1 { t } else { 0 });
                for o in found.data {
                    let Some(version) = o.last_updated_date.clone() else {
                        continue;
                    };
                    if matches!(o.status.as_str(), "created" | "at_terminal" | "processing") {
                        continue;
                    }
                    let change = Change {
                        topic: "platform_order",
                        updated_at: instant(&version),
                        sighting: sighting(
                            "platform_order",
                            stamp(&version),
                            Work::PlatformOrder { id: o.id },
                        ),
                    };
                    self.consider(change, report).await?;
                }
                self.tick(report);
                seen += n;
                if n == 0 || found.paging.total.is_some_and(|t| seen >= t) {
                    break;
                }
                page += 1;
            }
            from = to;
        }
        Ok(())
    }

    async fn consider(&mut self, mut change: Change, report: &mut Report) -> Result<(), PassError> {
        report.found += 1;
        // A dead job that died after this change was working on it: its
        // notification came, so it is neither missed nor run again here.
        change.sighting.changed_at = change.updated_at;
        let account = self.account.to_string();
        if self
            .store
            .known(account.clone(), change.sighting.clone())
            .await?
        {
            report.known += 1;
            return Ok(());
        }
        let now = pointhook_common::clock::unix_ms(self.clock.now());
        match self.mode {
            Mode::Sweep { grace_ms } => {
                let at = change.updated_at.unwrap_or(now);
                if at.saturating_add(grace_ms) > now {
                    report.waiting += 1;
                    return Ok(());
                }
            }
            Mode::Backfill { dry_run: true } => {
                *report.enqueued.entry(change.topic).or_default() += 1;
                return Ok(());
            }
            Mode::Backfill { dry_run: false } => {}
        }
        let ingested = self.store.ingest(delivery(&account, &change, now)).await?;
        tracing::info!(
            account = %pointhook_common::text::printable(&account),
            topic = change.topic,
            resource_id = %pointhook_common::text::printable(&change.sighting.resource_id),
            delivery_id = ingested.delivery_id,
            job_id = ingested.job_id,
            "reconciliation: a change came with no notification; its job is enqueued"
        );
        (self.on_missed)(&account, change.topic);
        *report.enqueued.entry(change.topic).or_default() += 1;
        Ok(())
    }

    fn tick(&self, report: &Report) {
        if let Some(progress) = self.progress {
            progress(report);
        }
    }
}
