//! The `pointhook` binary: the receiver's commands (`serve`, `migrate`, the
//! operator's reads and repairs), and the ones that bring the receiver and
//! the sandbox together (`sandbox`, `demo`, the tester commands).

mod cli;
mod demo;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
