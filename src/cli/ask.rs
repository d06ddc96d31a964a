//! Asking a person before money moves: the command says what will happen
//! and waits for a yes on a terminal; where nobody can answer (a script, a
//! pipe) it does nothing unless `--yes` was given.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::bail;

/// Asks `question` (what will happen, in words) and returns only on a yes.
/// `unasked` is the one line said when nobody can be asked.
pub fn confirm(question: &str, unasked: &str) -> anyhow::Result<()> {
    if !std::io::stdin().is_terminal() {
        bail!("{unasked}: add --yes where nobody can be asked");
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
