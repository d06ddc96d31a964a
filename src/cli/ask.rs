//! Asking a person before money moves: the command says what will happen
//! and waits for a yes on a terminal; where nobody can answer (a script, a
//! pipe) it does nothing unless `--yes` was given.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::bail;

/// Whether a person can be asked (standard input is a terminal).
pub fn can_ask() -> bool {
    std::io::stdin().is_terminal()
}

/// Nothing done because nobody can be asked: `what` and how to go ahead.
pub fn unasked(what: &str) -> anyhow::Error {
    anyhow::anyhow!("{what}: add --yes where nobody can be asked")
}

/// Asks `question` (what will happen, in words) and returns only on a yes.
/// `what` is the one line said when nobody can be asked.
pub fn confirm(question: &str, what: &str) -> anyhow::Result<()> {
    if !can_ask() {
        return Err(unasked(what));
    }
    let mut err = std::io::stderr();
    write!(err, "{question}\nConfirm? [y/N] ")?;
    err.flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        bail!("not confirmed: nothing was done");
    }
    Ok(())
}
