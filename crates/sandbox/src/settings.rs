//! How a sandbox is set up: its accounts (from flags or a `--config`
//! file), its time scale, where its state and its device e-mails go. Read
//! once at start; nothing here changes while it runs.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

/// Every event group an account can select.
pub const EVENT_GROUPS: &[&str] = &[
    "payment",
    "merchant_orders",
    "chargebacks",
    "point_integration_ipn",
    "delivery_cancellation",
];

/// The Point device every account starts with, beside those its settings
/// name and the platform's virtual terminals.
pub const FIRST_DEVICE: &str = "PAX_A910__SMARTPOS0000000001";

/// One account of the emulated platform.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountSpec {
    pub name: String,
    pub token: String,
    /// The account's IPN URL, as set in the dashboard.
    #[serde(default)]
    pub notification_url: Option<String>,
    /// Where payment-intent webhooks go; setting it activates Point
    /// Integrations events.
    #[serde(default)]
    pub webhook_url: Option<String>,
    /// Sign webhooks (`x-signature`) with this secret.
    #[serde(default)]
    pub webhook_secret: Option<String>,
    #[serde(default)]
    pub email: Option<String>,
    /// Event groups sent to `notification_url`; all when absent.
    #[serde(default)]
    pub groups: Option<Vec<String>>,
    #[serde(default)]
    pub devices: Vec<String>,
}

/// `pointhook sandbox --config FILE`: the same settings as the flags, and
/// several accounts.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxFile {
    #[serde(default)]
    pub listen: Option<SocketAddr>,
    #[serde(default)]
    pub time_scale: Option<f64>,
    #[serde(default)]
    pub state: Option<PathBuf>,
    #[serde(default)]
    pub accounts: Vec<AccountSpec>,
}

#[derive(Debug, Clone)]
pub struct SandboxSettings {
    /// 1.0 is real time; 0.01 makes 15 minutes 9 seconds (windows too).
    pub time_scale: f64,
    /// `None`: in memory.
    pub state: Option<PathBuf>,
    pub accounts: Vec<AccountSpec>,
    /// Run the dispatcher loop (off: tests call `run_due`).
    pub dispatch_loop: bool,
    /// How device e-mails leave.
    pub mail: MailSettings,
    /// Send retries with the first attempt's signature instead of signing
    /// each anew (to test a receiver's timestamp tolerance).
    pub resend_first_signature: bool,
    /// Whom it may be reached by and may notify.
    pub reach: Reach,
}

/// Whom a sandbox may be reached by and may notify. On a tester's machine
/// it serves made-up tokens and sends notifications wherever it is told:
/// by default only loopback talks to it and hears from it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Reach {
    /// Notification URLs must be loopback, and requests must name a
    /// loopback host (`Host`), which a DNS-rebinding page cannot.
    #[default]
    Loopback,
    /// `--public`: any notification URL, any `Host`.
    Public,
}

impl Reach {
    /// Whether the sandbox may send notifications to `url`.
    pub fn may_notify(self, url: &url::Url) -> bool {
        self == Reach::Public || url.host().is_some_and(|h| loopback_host(&h))
    }
}

/// `localhost`, or an address of 127.0.0.0/8 or `::1`.
pub fn loopback_host<S: AsRef<str>>(host: &url::Host<S>) -> bool {
    match host {
        url::Host::Domain(d) => d.as_ref().eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    }
}

/// How device e-mails leave.
#[derive(Debug, Clone)]
pub enum MailSettings {
    /// Write `.eml` files here.
    Spool(PathBuf),
    /// Send through this SMTP server (plain, as to a local relay).
    Smtp { host: String, port: u16 },
}
