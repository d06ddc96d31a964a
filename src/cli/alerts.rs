//! `pointhook alerts test`: a test message to every channel of
//! `[[alerts]]`, each said to be ok or why not, side by side (a dead SMTP
//! server waits out its timeout without delaying the others).

use anyhow::bail;
use clap::Subcommand;

use pointhook::alerts::Channel;
use pointhook::alerts::alerter::test_message;
use pointhook::config::Config;

#[derive(Debug, Subcommand)]
pub enum Alerts {
    /// Send a test message to every channel of [[alerts]] and say how each went.
    Test,
}

pub async fn run(config: Config, cmd: Alerts) -> anyhow::Result<()> {
    let Alerts::Test = cmd;
    let Some(alerting) = config.alerting()? else {
        bail!("no [[alerts]] channel is configured");
    };
    let timeout = alerting.rules.send_timeout();
    let message = test_message(&alerting.public_url);
    let channels = alerting
        .channels
        .iter()
        .map(Channel::build)
        .collect::<Result<Vec<_>, String>>()
        .map_err(anyhow::Error::msg)?;
    let count = channels.len();
    let mut sends = tokio::task::JoinSet::new();
    for (i, c) in channels.into_iter().enumerate() {
        let message = message.clone();
        sends.spawn(async move { (i, c.describe(), c.send(&message, timeout).await) });
    }
    let mut answers = sends.join_all().await;
    answers.sort_by_key(|(i, _, _)| *i);
    let mut failed = 0;
    for (_, what, answer) in answers {
        let what = pointhook_common::text::printable(&what).into_owned();
        match answer {
            Ok(()) => println!("ok     {what}"),
            Err(e) => {
                failed += 1;
                println!(
                    "failed {what}: {}",
                    pointhook_common::text::printable(&e.to_string())
                );
            }
        }
    }
    if failed > 0 {
        bail!("{failed} of {count} channel(s) failed");
    }
    Ok(())
}
