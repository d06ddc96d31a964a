//! One integration-test binary: every capability, through real HTTP to a
//! real pointhook on 127.0.0.1:0 and real SQLite files.

#[macro_use]
mod backends;
mod campaign;
mod helpers;
mod platform;

mod cli;
mod coalescing;
mod copy;
mod durability;
mod errors;
mod forgery;
mod fraud;
mod ingest;
mod limits;
mod operations;
mod operator;
mod platform_orders;
mod priority;
mod processing;
mod protections;
mod reconcile;
mod robustness;
mod sandbox;
mod sandbox_orders;
mod sandbox_quirks;
mod sandbox_sdk;
mod signatures;
mod store;
mod tools;
mod workspace;
