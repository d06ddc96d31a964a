//! Progress of a long command (`prune`, `reconcile --since`, `backup`,
//! `copy-store`) on stderr: a bar with its total on a terminal
//! (`indicatif`), and where stderr is not one (a journal, a cron mail) a
//! plain line now and then, so a long run is never silent.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// How often a plain line is written at most.
const EVERY: Duration = Duration::from_secs(5);

pub struct Progress {
    what: &'static str,
    unit: &'static str,
    shown: Shown,
}

enum Shown {
    Bar(ProgressBar),
    /// When the last plain line was written.
    Lines(Mutex<Option<Instant>>),
}

impl Progress {
    /// `what` is being done to `unit`s (e.g. "pruning", "rows").
    pub fn new(what: &'static str, unit: &'static str) -> anyhow::Result<Progress> {
        let shown = if std::io::stderr().is_terminal() {
            let style = ProgressStyle::with_template(&format!(
                "{{prefix}} [{{bar:40}}] {{pos}}/{{len}} {unit}{{msg}}, {{eta}} left"
            ))?
            .progress_chars("=> ");
            Shown::Bar(
                ProgressBar::new(0)
                    .with_style(style)
                    .with_prefix(what.to_string()),
            )
        } else {
            Shown::Lines(Mutex::new(None))
        };
        Ok(Progress { what, unit, shown })
    }

    /// `done` of `total` so far; `note` says where (a table, an account).
    pub fn set(&self, done: u64, total: u64, note: &str) {
        match &self.shown {
            Shown::Bar(bar) => {
                bar.set_length(total.max(done));
                bar.set_position(done);
                bar.set_message(noted(note));
            }
            Shown::Lines(last) => {
                let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
                if last.is_none_or(|at| at.elapsed() >= EVERY) {
                    *last = Some(Instant::now());
                    eprintln!(
                        "{}: {done} of {total} {}{}",
                        self.what,
                        self.unit,
                        noted(note)
                    );
                }
            }
        }
    }

    /// Clears the bar; the command prints its own summary.
    pub fn finish(&self) {
        if let Shown::Bar(bar) = &self.shown {
            bar.finish_and_clear();
        }
    }
}

/// Where it is, after the unit: " (payments)", or nothing when nothing is
/// said (not a dangling "rows , ").
fn noted(note: &str) -> String {
    if note.is_empty() {
        String::new()
    } else {
        format!(" ({note})")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_empty_note_leaves_nothing_behind() {
        assert_eq!(super::noted(""), "");
        assert_eq!(super::noted("deliveries"), " (deliveries)");
    }
}
