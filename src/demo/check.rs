//! Runs one demo scenario against the sandbox (the fixture runner, its
//! steps said as they go) and waits for what it expects: an event
//! pointhook decided (in its store) and, where asked, delivered after the
//! merchant refused it, or an e-mail in the spool.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pointhook::store;
use pointhook_common::text::printable;
use pointhook_sandbox::fixture::run::Runner;
use pointhook_sandbox::fixture::{Expect, Fixture, matches};

use super::merchant::Merchant;

/// How long an expectation may take.
const EXPECT_WITHIN: Duration = Duration::from_secs(30);

pub struct Checker {
    runner: Runner,
    merchant: Arc<Merchant>,
    store: store::Store,
    spool: PathBuf,
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
        Ok(())
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
            let Some(failures) = e.delivered_after_failures else {
                return Ok(Some(format!("{kind} {}", summary.id)));
            };
            let answers = self.merchant.answers(&summary.id);
            let refused = answers.iter().filter(|s| **s >= 500).count() as u32;
            if refused >= failures && answers.iter().any(|s| *s < 300) {
                return Ok(Some(format!(
                    "{kind} {} delivered after {refused} refusal(s), same id every time",
                    summary.id
                )));
            }
        }
        Ok(None)
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
