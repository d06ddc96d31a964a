//! TLS to the database, when the URL asks for it with `sslmode=require`:
//! rustls, with the certificate checked against the system's trusted ones
//! (a private CA goes into the system store). Otherwise plain TCP, which
//! the default `sslmode=prefer` allows: a certificate is never trusted
//! without a check.

use tokio::task::JoinHandle;
use tokio_postgres::config::SslMode;
use tokio_postgres::{Client, Config, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::store::StoreError;

/// The connector `config` asks for: `None` for plain TCP.
pub fn connector(config: &Config) -> Result<Option<MakeRustlsConnect>, StoreError> {
    match config.get_ssl_mode() {
        SslMode::Require => {
            use rustls_platform_verifier::ConfigVerifierExt;
            pointhook_common::tls::install_default_provider();
            let tls = rustls::ClientConfig::with_platform_verifier().map_err(|e| {
                StoreError::Unavailable(format!("cannot set up TLS to the database: {e}"))
            })?;
            Ok(Some(MakeRustlsConnect::new(tls)))
        }
        _ => Ok(None),
    }
}

/// One connection of its own, polled on a task until the client is dropped
/// (or the handle aborted).
pub async fn connect(config: &Config) -> Result<(Client, JoinHandle<()>), StoreError> {
    Ok(match connector(config)? {
        Some(tls) => {
            let (client, connection) = config.connect(tls).await?;
            (
                client,
                tokio::spawn(async move {
                    let _ = connection.await;
                }),
            )
        }
        None => {
            let (client, connection) = config.connect(NoTls).await?;
            (
                client,
                tokio::spawn(async move {
                    let _ = connection.await;
                }),
            )
        }
    })
}
