//! How the operator's commands print: a table or `name  value` lines for a
//! person, JSON with `--json`; states in colour on a terminal (`anstream`
//! drops the colour when stdout is not one, under `NO_COLOR`, or with
//! `CLICOLOR=0`). Whatever came from outside is escaped cell by cell
//! before any colour is added, so no control character reaches the
//! terminal but ours.

use std::io::Write;

use anstyle::{AnsiColor, Style};
use clap::Args;
use serde::Serialize;

use pointhook_common::text::{for_terminal, json_for_terminal, printable};

/// `--json`, for every command that shows something.
#[derive(Debug, Clone, Args)]
pub struct Format {
    /// JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Prints `value` as JSON or as `human` says. `human` escapes what it did
/// not make itself (`table` and `fields` do).
pub fn print<T: Serialize>(
    format: &Format,
    value: &T,
    human: impl FnOnce(&T) -> String,
) -> anyhow::Result<()> {
    if format.json {
        let json = serde_json::to_string_pretty(value)?;
        say(&format!("{}\n", json_for_terminal(&json)))
    } else {
        say(&human(value))
    }
}

/// Writes `text` to stdout, its colours kept only where they show.
pub fn say(text: &str) -> anyhow::Result<()> {
    let mut out = anstream::stdout();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Text from outside, whole (a body): control characters escaped, line
/// feeds kept.
pub fn verbatim(s: &str) -> String {
    for_terminal(s).into_owned()
}

/// JSON from outside, pretty and escaped.
pub fn json(value: &serde_json::Value) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    json_for_terminal(&text).into_owned()
}

/// The colour a state is shown in: red for what needs a person, yellow for
/// what waits, green for what is finished well, dim for what is set aside.
fn state_style(state: &str) -> Style {
    let colour = match state {
        "dead"
        | "disabled"
        | "invalid"
        | "failed"
        | "refused"
        | "blocked"
        | "at_risk"
        | "released_before_fraud_alert" => AnsiColor::Red,
        "pending" | "running" | "held" | "paused" | "failing" | "started" | "unverified"
        | "awaiting_shipment" => AnsiColor::Yellow,
        "done" | "delivered" | "confirmed" | "enabled" | "valid" | "released" => AnsiColor::Green,
        "stored" | "dismissed" | "rejected" | "unsigned" | "not_checked" => {
            return Style::new().dimmed();
        }
        _ => return Style::new(),
    };
    colour.on_default()
}

/// `text` (already escaped) in its state's colour.
pub fn state(text: &str) -> String {
    let style = state_style(text.trim());
    format!("{style}{text}{style:#}")
}

/// Left-aligned columns, two spaces apart; a column headed `STATE` is
/// coloured by its value.
pub fn table(headers: &[&str], rows: Vec<Vec<String>>) -> String {
    if rows.is_empty() {
        return "(none)\n".into();
    }
    // A cell stays on its line.
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|row| row.iter().map(|c| printable(c).into_owned()).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let coloured = headers.iter().position(|h| *h == "STATE");
    let line = |cells: &[String], colour: bool| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            let text = if i + 1 == cells.len() {
                cell.clone()
            } else {
                format!("{cell:<w$}  ")
            };
            if colour && Some(i) == coloured {
                // Coloured after padding: the escape codes take no width.
                let pad = text.len() - cell.len();
                s.push_str(&state(cell));
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str(&text);
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let header: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    let mut out = line(&header, false);
    for row in &rows {
        out.push_str(&line(row, true));
    }
    out
}

/// `name  value` lines, aligned; a `state` value is coloured.
pub fn fields(pairs: &[(&str, String)]) -> String {
    let width = pairs.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    pairs
        .iter()
        .map(|(k, v)| {
            let v = printable(v);
            let v = if *k == "state" {
                state(&v)
            } else {
                v.into_owned()
            };
            format!("{k:<width$}  {v}\n")
        })
        .collect()
}

pub fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        s.chars().take(max - 1).collect::<String>() + "…"
    }
}

/// Events as a table (a list, an order's history).
pub fn event_table(rows: &[pointhook::store::EventSummary]) -> String {
    table(
        &[
            "ID",
            "TYPE",
            "SUBJECT",
            "AT",
            "STATE",
            "ATTEMPTS",
            "CREATED",
            "LAST ERROR",
        ],
        rows.iter()
            .map(|e| {
                vec![
                    e.id.clone(),
                    e.event_type.clone(),
                    e.subject.clone(),
                    // In a list of one state, the destination the entry is
                    // about.
                    e.at().map(|a| a.words()).unwrap_or_default(),
                    e.where_(),
                    e.attempts_at(),
                    e.created_at.clone(),
                    clip(e.last_error.as_deref().unwrap_or(""), 50),
                ]
            })
            .collect(),
    )
}

/// API calls as a table (a job's, an order's).
pub fn fetch_table(rows: &[pointhook::store::views::FetchView]) -> String {
    table(
        &["AT", "JOB", "ENDPOINT", "RESOURCE", "STATUS", "MS"],
        rows.iter()
            .map(|f| {
                vec![
                    f.at.clone(),
                    f.job_id.to_string(),
                    f.endpoint.clone(),
                    f.resource_id.clone(),
                    if f.status == 0 {
                        "no answer".into()
                    } else {
                        f.status.to_string()
                    },
                    f.elapsed_ms.to_string(),
                ]
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_coloured_state_keeps_its_column_aligned() {
        let t = table(
            &["ID", "STATE", "KEY"],
            vec![
                vec!["1".into(), "dead".into(), "a".into()],
                vec!["22".into(), "done".into(), "b".into()],
            ],
        );
        let plain = anstream::adapter::strip_str(&t).to_string();
        assert_eq!(plain, "ID  STATE  KEY\n1   dead   a\n22  done   b\n");
        assert!(t.contains("\u{1b}[31mdead\u{1b}[0m"), "{t:?}");
    }

    #[test]
    fn what_came_from_outside_cannot_colour_the_terminal() {
        let t = table(&["STATE"], vec![vec!["\u{1b}[31mdead".into()]]);
        assert!(!t.contains("\u{1b}[31m\u{1b}"), "{t:?}");
        assert!(t.contains("\\u{1b}"), "{t:?}");
    }
}
