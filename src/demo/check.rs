//! Runs one demo scenario against the sandbox (the fixture runner, its
//! steps said as they go) and waits for what it expects: an event
//! pointhook decided (in its store) and, where asked, delivered after the
//! merchant refused it, or an e-mail in the spool. Each event is credited
//! to one scenario only, and a scenario ends once pointhook has run its
//! work and delivered its events to the merchant, so that what the
//! merchant receives is said under the scenario that caused it.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pointhook::domain::JobState;
use pointhook::store;
use pointhook::store::console_views::JobFilter;
use pointhook_common::text::printable;
use pointhook_sandbox::fixture::run::Runner;
use pointhook_sandbox::fixture::{Expect, Fixture, matches};

use super::merchant::Merchant;

/// How long an expectation may take.
const EXPECT_WITHIN: Duration = Duration::from_secs(30);
/// How long a scenario's remaining work may take to settle.
const SETTLE_WITHIN: Duration = Duration::from_secs(10);
/// The merchant's destination, whose deliveries a scenario waits for.
const MERCHANT: &str = "default";

pub struct Checker {
    runner: Runner,
    merchant: Arc<Merchant>,
    store: store::Store,
    spool: PathBuf,
    /// Events credited to a scenario already.
    credited: Mutex<HashSet<String>>,
}

impl Checker {
    pub fn new(
        sandbox: &str,
        token: &str,
        merchant: Arc<Merchant>,
        store: store::Store,
        spool: PathBuf,
    ) -> Checker {
        Checker {
            runner: Runner::new(sandbox, token),
            merchant,
            store,
            spool,
            credited: Mutex::new(HashSet::new()),
        }
    }

    pub async fn run(&self, f: &Fixture) -> anyhow::Result<()> {
        println!("Scenario: {}: {}", f.name, printable(&f.description));
        for e in &f.expect {
            if let (Some(kind), Some(n)) = (&e.event, e.delivered_after_failures) {
                self.merchant.refuse_next(kind, n);
            }
        }
        let ran = self
            .runner
            .run(f, |told| {
                let said = told.say.as_deref().unwrap_or(&told.what);
                println!("  - {}", printable(said));
            })
            .await?;
        for e in &ran.expect {
            self.wait_for(e).await?;
        }
        self.settle().await
    }

    /// Waits until pointhook has no job left to run and the merchant's
    /// destination nothing left to take (another destination may be down
    /// for good: the demo has one that is).
    async fn settle(&self) -> anyhow::Result<()> {
        let deadline = Instant::now() + SETTLE_WITHIN;
        while Instant::now() < deadline {
            let mut busy = false;
            for state in [JobState::Pending, JobState::Running] {
                let page = self
                    .store
                    .job_page(JobFilter {
                        state: Some(state),
                        limit: 1,
                        ..Default::default()
                    })
                    .await?;
                busy |= !page.rows.is_empty();
            }
            let now = store::unix_ms_now();
            busy |= self
                .store
                .destinations(now)
                .await?
                .iter()
                .any(|d| d.name == MERCHANT && d.backlog > 0);
            if !busy {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // Work still going is said under the next scenario; not a failure.
        Ok(())
    }

    /// Credits `id` to the scenario asking; `false` when an earlier one
    /// had it.
    fn credit(&self, id: &str) -> bool {
        self.credited
            .lock()
            .map(|mut c| c.insert(id.to_string()))
            .unwrap_or(true)
    }

    async fn wait_for(&self, e: &Expect) -> anyhow::Result<()> {
        let deadline = Instant::now() + EXPECT_WITHIN;
        loop {
            if let Some(found) = self.check(e).await? {
                println!("  ✓ {found}");
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "nothing matched {e:?} within {} s",
                EXPECT_WITHIN.as_secs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn check(&self, e: &Expect) -> anyhow::Result<Option<String>> {
        if let Some(text) = &e.mail {
            return Ok(self.mail(text));
        }
        let Some(kind) = &e.event else {
            return Ok(None);
        };
        let events = self
            .store
            .list_events(Some(kind.clone()), None, store::MAX_LIMIT)
            .await?;
        for summary in events {
            let Some(detail) = self.store.get_event(summary.id.clone()).await? else {
                continue;
            };
            if !e
                .matching
                .as_ref()
                .is_none_or(|m| matches(m, &detail.body["data"]))
            {
                continue;
            }
            if self.is_credited(&summary.id) {
                continue;
            }
            let Some(failures) = e.delivered_after_failures else {
                self.credit(&summary.id);
                return Ok(Some(format!("{kind} {}", summary.id)));
            };
            let answers = self.merchant.answers(&summary.id);
            let refused = answers.iter().filter(|s| **s >= 500).count() as u32;
            if refused >= failures && answers.iter().any(|s| *s < 300) {
                self.credit(&summary.id);
                return Ok(Some(format!(
                    "{kind} {} delivered after {refused} refusal(s), same id every time",
                    summary.id
                )));
            }
        }
        Ok(None)
    }

    fn is_credited(&self, id: &str) -> bool {
        self.credited
            .lock()
            .map(|c| c.contains(id))
            .unwrap_or(false)
    }

    /// A mail in the spool that contains `text`, by its subject.
    fn mail(&self, text: &str) -> Option<String> {
        std::fs::read_dir(&self.spool)
            .into_iter()
            .flatten()
            .flatten()
            .find_map(|entry| {
                let mail = std::fs::read_to_string(entry.path()).unwrap_or_default();
                mail.contains(text).then(|| {
                    let subject = mail
                        .lines()
                        .find_map(|l| l.strip_prefix("Subject: "))
                        .unwrap_or("");
                    format!("an e-mail in the spool: \"{}\"", printable(subject))
                })
            })
    }
}
