//! The `pointhook` binary: the receiver's commands (`serve`, `migrate`, the
//! operator's reads and repairs), and the ones that bring the receiver and
//! the sandbox together (`sandbox`, `demo`, the tester commands).

mod cli;
mod demo;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}

// The ack path allocates a handful of small buffers per request on two
// threads; with mimalloc's per-thread free lists docs/perf.md's benchmark
// acked more per second than with the system allocator in every round.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
