//! `pointhook sandbox trigger NAME|FILE`: runs a fixture (a bundled one by
//! name, or a tester's file) against a running sandbox as one of its
//! accounts, says each step, and what the merchant should then hear from
//! a receiver; `--list` names the bundled ones.

use std::path::Path;

use anyhow::Context;
use clap::Args;
use serde_json::{Value, json};

use pointhook_common::text::printable;
use pointhook_sandbox::fixture::run::Runner;
use pointhook_sandbox::fixture::{Fixture, bundled};

#[derive(Debug, Args)]
pub struct TriggerArgs {
    /// A bundled fixture's name, or a fixture file.
    #[arg(required_unless_present = "list")]
    target: Option<String>,
    /// Name the bundled fixtures, with what each does.
    #[arg(long, conflicts_with = "target")]
    list: bool,
    /// The sandbox to drive.
    #[arg(
        long,
        env = "POINTHOOK_SANDBOX_URL",
        default_value = "http://127.0.0.1:8090"
    )]
    url: String,
    /// One of its accounts' access tokens.
    #[arg(
        long,
        env = "POINTHOOK_SANDBOX_TOKEN",
        required_unless_present = "list"
    )]
    token: Option<String>,
    /// One JSON line at the end (the answers kept, the expectations
    /// resolved) instead of words.
    #[arg(long)]
    json: bool,
}

pub async fn run(args: TriggerArgs) -> anyhow::Result<()> {
    if args.list {
        for (name, text) in bundled::TRIGGERS {
            let f = Fixture::parse(text).with_context(|| format!("bundled fixture {name}"))?;
            println!("{name:<36} {}", printable(&f.description));
        }
        return Ok(());
    }
    let target = args.target.unwrap_or_default();
    let text = match bundled::find(&target) {
        Some(t) => t.to_string(),
        None if Path::new(&target).exists() => {
            std::fs::read_to_string(&target).with_context(|| format!("cannot read {target}"))?
        }
        None => anyhow::bail!(
            "{target:?} is neither a bundled fixture (pointhook sandbox trigger --list) nor a file"
        ),
    };
    let fixture = Fixture::parse(&text).with_context(|| format!("{target} is not a fixture"))?;
    let runner = Runner::new(&args.url, args.token.as_deref().unwrap_or_default());
    let quiet = args.json;
    if !quiet {
        println!("{}: {}", fixture.name, printable(&fixture.description));
    }
    let ran = runner
        .run(&fixture, |told| {
            if !quiet {
                let say = told.say.as_deref().unwrap_or("");
                println!(
                    "  {}. {} ({})",
                    told.n,
                    printable(say),
                    printable(&told.what)
                );
            }
        })
        .await?;
    if quiet {
        let answers: serde_json::Map<String, Value> = ran.answers.into_iter().collect();
        println!(
            "{}",
            json!({"name": fixture.name, "answers": answers, "expect": ran.expect})
        );
        return Ok(());
    }
    if !ran.expect.is_empty() {
        println!("a receiver should tell the merchant:");
    }
    for e in &ran.expect {
        let fields: Vec<String> = e
            .matching
            .iter()
            .flatten()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect();
        match (&e.event, &e.mail) {
            (Some(event), _) => println!("  {} {}", printable(event), printable(&fields.join(" "))),
            (None, Some(mail)) => println!("  an e-mail naming {}", printable(mail)),
            (None, None) => {}
        }
    }
    Ok(())
}
