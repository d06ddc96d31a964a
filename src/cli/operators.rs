//! `pointhook operators add|list|remove|reset`: who may sign in to the
//! console. A password comes from a prompt (not echoed, asked twice; the
//! `rpassword` crate reads the terminal) or from `--password-file` (its
//! first line), and only its argon2id hash is stored. Removing an operator
//! or resetting a password ends their sessions. Also the CLI's way of
//! acting through `pointhook::actions`, as the OS user.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Subcommand;

use pointhook::actions::{Acted, Actions, Done};
use pointhook::operators::{self, check_name};
use pointhook::store::{Store, unix_ms_now};

#[derive(Debug, Subcommand)]
pub enum Operators {
    /// Add a person who may sign in to the console.
    Add {
        name: String,
        /// Read the password from the first line of FILE instead of asking.
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
    },
    /// Every operator, with their open sessions.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove an operator (their sessions end).
    Remove { name: String },
    /// Set a new password (their sessions end).
    Reset {
        name: String,
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
    },
}

/// The password, from the file or the terminal.
fn password(file: Option<&PathBuf>) -> anyhow::Result<String> {
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        return Ok(text.lines().next().unwrap_or("").to_string());
    }
    // rpassword reads the controlling terminal; without one (a pipe, a
    // script, cron) say how to give the password instead.
    let ask = |prompt: &str| {
        rpassword::prompt_password(prompt).map_err(|_| {
            anyhow::anyhow!(
                "no terminal to ask for the password on: give it with --password-file FILE (its first line)"
            )
        })
    };
    let first = ask("Password: ")?;
    let again = ask("Again: ")?;
    if first != again {
        bail!("the two passwords differ");
    }
    Ok(first)
}

async fn hashed(file: Option<&PathBuf>) -> anyhow::Result<String> {
    let password = password(file)?;
    Ok(tokio::task::spawn_blocking(move || operators::hash(&password)).await??)
}

pub async fn run(store: &Store, cmd: Operators) -> anyhow::Result<()> {
    match cmd {
        Operators::Add {
            name,
            password_file,
        } => {
            check_name(&name)?;
            let hash = hashed(password_file.as_ref()).await?;
            if !store
                .add_operator(name.clone(), hash, unix_ms_now())
                .await?
            {
                bail!("an operator named {name} exists already (reset their password instead)");
            }
            println!("operator {name} added: they sign in at the admin listener's /login");
        }
        Operators::List { json } => {
            let rows = store.operators().await?;
            if json {
                super::render::print(&super::render::Format { json: true }, &rows, |_| {
                    String::new()
                })?;
            } else if rows.is_empty() {
                println!("(none: add one with `pointhook operators add NAME`)");
            } else {
                for o in rows {
                    println!(
                        "{}  added {}  changed {}  {} session(s)",
                        pointhook_common::text::printable(&o.name),
                        o.created_at,
                        o.updated_at,
                        o.sessions
                    );
                }
            }
        }
        Operators::Remove { name } => {
            if !store.remove_operator(name.clone()).await? {
                bail!(
                    "no operator named {}",
                    pointhook_common::text::printable(&name)
                );
            }
            println!("operator {name} removed; their sessions ended");
        }
        Operators::Reset {
            name,
            password_file,
        } => {
            check_name(&name)?;
            let hash = hashed(password_file.as_ref()).await?;
            if !store
                .reset_operator(name.clone(), hash, unix_ms_now())
                .await?
            {
                bail!("no operator named {name}");
            }
            println!("operator {name} has a new password; their sessions ended");
        }
    }
    Ok(())
}

/// Acting from the command line.
pub fn acting(store: &Store) -> Actions {
    Actions {
        store: store.clone(),
        clock: std::sync::Arc::new(pointhook_common::clock::SystemClock),
    }
}

/// What was done, or a failure saying why not.
pub fn finished<T>(acted: Acted<T>) -> anyhow::Result<T> {
    match acted.done {
        Done::Done(t) => Ok(t),
        Done::Refused(why) | Done::Unknown(why) => bail!("{why}"),
    }
}
