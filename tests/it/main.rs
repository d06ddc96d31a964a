//! One integration-test binary: every capability, through real HTTP to a
//! real pointhook on 127.0.0.1:0 and real SQLite files.

mod helpers;

mod cli;
mod coalescing;
mod durability;
mod errors;
mod ingest;
mod protections;
mod signatures;
