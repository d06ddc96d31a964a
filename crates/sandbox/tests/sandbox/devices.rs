//! Every account starts with one emulated Point device, listed the same
//! way by the point-of-sale API and by the Orders API's terminal list, and
//! a device added later is listed the same way too.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

/// Each listing's devices as (id, mode, pos_id, store_id as text,
/// external_pos_id).
async fn both_lists(sb: &RunningSandbox) -> (Vec<Value>, Vec<Value>) {
    let (status, legacy) = sb
        .call(Method::GET, "/point/integration-api/devices", None)
        .await;
    assert_eq!(status, 200, "{legacy}");
    let (status, terminals) = sb.call(Method::GET, "/terminals/v1/list", None).await;
    assert_eq!(status, 200, "{terminals}");
    let row = |d: &Value, store: String| {
        json!([
            d["id"],
            d["operating_mode"],
            d["pos_id"],
            store,
            d["external_pos_id"]
        ])
    };
    let legacy = legacy["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            assert!(d["store_id"].is_u64(), "a number on this API: {d}");
            row(d, d["store_id"].to_string())
        })
        .collect();
    let terminals = terminals["data"]["terminals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| row(d, d["store_id"].as_str().unwrap().to_string()))
        .collect();
    (legacy, terminals)
}

#[tokio::test]
async fn a_fresh_account_has_a_device_listed_alike_by_both_apis() {
    let (sb, _clock) = on_manual_clock(vec![account(None)]).await;
    let (legacy, terminals) = both_lists(&sb).await;
    assert_eq!(legacy.len(), 1, "{legacy:?}");
    assert_eq!(legacy, terminals);
    let device = legacy[0][0].as_str().unwrap().to_string();
    assert_eq!(legacy[0][1], "PDV");
    assert!(
        legacy[0][2].is_u64() && legacy[0][4].is_string(),
        "{legacy:?}"
    );

    // An intent can be opened on it at once.
    let (status, intent) = sb
        .call(
            Method::POST,
            &format!("/point/integration-api/devices/{device}/payment-intents"),
            Some(json!({"amount": 1500})),
        )
        .await;
    assert_eq!(status, 201, "{intent}");

    // A device added later, and the virtual terminal once used, are
    // listed the same way by both.
    let (status, _) = sb
        .control("devices", json!({"id": "GERTEC_MP35P__NEW01"}))
        .await;
    assert_eq!(status, 201);
    let (status, _) = sb
        .control(
            "terminals/NEWLAND_N950__SBX0000001",
            json!({"status": "processed"}),
        )
        .await;
    assert_eq!(status, 200);
    let (legacy, terminals) = both_lists(&sb).await;
    assert_eq!(legacy.len(), 3, "{legacy:?}");
    assert_eq!(legacy, terminals);
    assert_eq!(legacy[1][0], "GERTEC_MP35P__NEW01");

    // Each listing filters by the same store and point of sale.
    let (pos, store) = (
        legacy[1][2].clone(),
        legacy[1][3].as_str().unwrap().to_string(),
    );
    let (_, by_store) = sb
        .call(
            Method::GET,
            &format!("/point/integration-api/devices?store_id={store}&pos_id={pos}"),
            None,
        )
        .await;
    let (_, terminal_by_store) = sb
        .call(
            Method::GET,
            &format!("/terminals/v1/list?store_id={store}&pos_id={pos}"),
            None,
        )
        .await;
    assert_eq!(by_store["devices"][0]["id"], "GERTEC_MP35P__NEW01");
    assert_eq!(
        terminal_by_store["data"]["terminals"][0]["id"],
        "GERTEC_MP35P__NEW01"
    );
    assert_eq!(by_store["paging"]["total"], 1);
    assert_eq!(terminal_by_store["paging"]["total"], 1);
    sb.stop().await;
}
