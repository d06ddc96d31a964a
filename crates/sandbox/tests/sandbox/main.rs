//! The sandbox's own tests: real HTTP to a real sandbox on 127.0.0.1:0,
//! on a manual clock or in scaled real time, with receivers that answer
//! what a test says; the official SDKs driving it (`sdk`). How pointhook
//! fares against it is pointhook's own tests' business (`tests/it`).

mod cards;
mod checkout_pro;
mod devices;
mod instore;
mod orders;
mod quirks;
mod replay;
mod running;
mod safety;
mod schedule;
mod sdk;
mod support;

#[path = "../../../../tests/sdk/runner.rs"]
mod runner;
