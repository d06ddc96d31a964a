//! One integration-test binary: every capability, through real HTTP to a
//! real pointhook on 127.0.0.1:0 and real SQLite files.

#[macro_use]
mod backends;
mod campaign;
mod helpers;
mod platform;
#[path = "../sdk/runner.rs"]
mod runner;

mod alerter;
mod alerting;
mod alerts;
mod checkout_pro;
mod cli;
mod coalescing;
mod console;
mod console_pages;
mod copy;
mod destinations;
mod destinations_sdk;
mod destinations_walk;
mod disk_full;
mod durability;
mod end_to_end;
mod errors;
mod event_catalog;
mod explain;
mod forgery;
mod fraud;
mod fraud_holds;
mod holds;
mod ingest;
mod items;
mod limits;
mod missed;
mod monitoring;
mod operations;
mod operator;
mod operator_cli;
mod platform_orders;
mod priority;
mod processing;
mod protections;
mod quirks;
mod readme;
mod reconcile;
mod robustness;
mod sdk_orders;
mod search;
mod signatures;
mod smtp;
mod store;
mod storms;
mod strangers;
mod tools;
mod triggers;
mod workspace;
