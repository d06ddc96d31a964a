//! `GET` of one resource, as the platform serves it to its owner: absent
//! while the eventual-consistency quirk hides it.

use serde_json::Value;

use super::quirk_effects;
use super::sandbox::Sandbox;
use crate::error::HttpError;
use crate::model::AccountRow;
use crate::state::{StateError, resources};

/// The resource, when `account` owns it and nothing hides it.
pub async fn visible(
    sb: &Sandbox,
    account: &AccountRow,
    kind: &'static str,
    id: &str,
) -> Result<Option<Value>, StateError> {
    let (name, id, now) = (account.name.clone(), id.to_string(), sb.now());
    sb.db
        .call(move |tx| {
            if quirk_effects::hidden(tx, kind, &id, now)? {
                return Ok(None);
            }
            Ok(resources::get(tx, kind, &id)?
                .filter(|(owner, _)| *owner == name)
                .map(|(_, body)| body))
        })
        .await
}

/// `visible`, or the platform's 404 with cause 2000 and `missing`.
pub async fn fetch(
    sb: &Sandbox,
    account: &AccountRow,
    kind: &'static str,
    id: &str,
    missing: &'static str,
) -> Result<Value, HttpError> {
    visible(sb, account, kind, id)
        .await?
        .ok_or_else(|| HttpError::not_found(missing))
}
