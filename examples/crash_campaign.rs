//! The crash campaign, large: `cargo run --release --example crash_campaign
//! -- [--kills 50] [--orders 200] [--seed N] [--instances 3 --postgres URL]`
//! (the URL names an empty database the campaign may fill). The real binary (built beside
//! this example: `cargo build --release` first) under notifications from the
//! sandbox, killed with SIGKILL at random moments and restarted; then every
//! invariant is checked (see tests/it/campaign.rs).

#[path = "../tests/it/backends.rs"]
#[macro_use]
#[allow(dead_code, unused_macros)]
mod backends;
#[path = "../tests/it/campaign.rs"]
mod campaign;

use std::time::Duration;

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mut settings = campaign::Settings {
        binary: std::env::current_exe()
            .expect("this example's path")
            .parent()
            .and_then(|examples| examples.parent())
            .expect("target/<profile>/examples")
            .join("pointhook"),
        kills: 50,
        orders: 200,
        api_delay: Duration::from_millis(60),
        kill_every_ms: (150, 600),
        seed: 1,
        instances: 1,
        postgres: None,
    };
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        if flag == "--postgres" {
            settings.postgres = Some(value);
            continue;
        }
        let n: u64 = value
            .parse()
            .unwrap_or_else(|_| panic!("{flag} takes a number"));
        match flag.as_str() {
            "--kills" => settings.kills = n as usize,
            "--orders" => settings.orders = n as usize,
            "--seed" => settings.seed = n,
            "--instances" => settings.instances = n as usize,
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(
        settings.binary.exists(),
        "{} is missing: cargo build --release first",
        settings.binary.display()
    );
    let report = campaign::run(settings).await;
    println!("{}; every invariant held", report.summary());
}
