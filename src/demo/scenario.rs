//! The demo's scenarios: every bundled trigger (`fixtures/triggers/`),
//! then the demo's own (`fixtures/scenarios/`: what needs its merchant's
//! endpoint or its mail spool), all in the fixture format the sandbox
//! reads (docs/sandbox.md, "Fixtures").

use anyhow::Context;
use pointhook_sandbox::fixture::{Fixture, bundled};

/// The demo's own, built into the binary so `pointhook demo` runs from
/// anywhere.
pub const OWN: &[&str] = &[
    include_str!("../../fixtures/scenarios/merchant-fails-once.json"),
    include_str!("../../fixtures/scenarios/device-event-mail.json"),
    include_str!("../../fixtures/scenarios/fraud-alert-held.json"),
    include_str!("../../fixtures/scenarios/sale-released.json"),
    include_str!("../../fixtures/scenarios/chargeback-after-release.json"),
];

/// Every scenario, in the order the demo runs them.
pub fn all() -> anyhow::Result<Vec<Fixture>> {
    bundled::TRIGGERS
        .iter()
        .map(|(_, text)| *text)
        .chain(OWN.iter().copied())
        .map(|text| Fixture::parse(text).context("a scenario is malformed"))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_scenario_parses_and_every_file_is_built_in() {
        let all = super::all().unwrap();
        let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/scenarios"))
            .unwrap()
            .count();
        assert_eq!(super::OWN.len(), files);
        assert_eq!(
            all.len(),
            files + pointhook_sandbox::fixture::bundled::TRIGGERS.len()
        );
    }
}
