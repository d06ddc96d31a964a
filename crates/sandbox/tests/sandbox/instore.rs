//! Stores and points of sale as a point-of-sale integration sets them up,
//! the catalogs per site, customers and their saved cards.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::*;

async fn user_id(sb: &RunningSandbox) -> i64 {
    let (status, me) = sb.call(Method::GET, "/users/me", None).await;
    assert_eq!(status, 200, "{me}");
    me["id"].as_i64().unwrap()
}

#[tokio::test]
async fn a_store_and_its_points_of_sale_are_set_up_found_changed_and_removed() {
    let (sb, _clock) = on_manual_clock(vec![account(None)]).await;
    let user = user_id(&sb).await;
    let stores = format!("/users/{user}/stores");
    let body = json!({"name": "Sucursal Instore", "external_id": "SUC001",
        "business_hours": {"monday": [{"open": "08:00", "close": "13:00"}]},
        "location": {"street_number": "3039", "street_name": "Caseros", "city_name": "Belgrano",
                     "state_name": "Capital Federal", "latitude": -32.8897322, "longitude": -68.8443275, "reference": "3er Piso"}});
    let (status, store) = sb.call(Method::POST, &stores, Some(body.clone())).await;
    assert_eq!(status, 201, "{store}");
    assert_eq!(
        store["location"]["address_line"],
        "Caseros 3039, Belgrano, Capital Federal"
    );
    let (status, e) = sb.call(Method::POST, &stores, Some(body)).await;
    assert_eq!(
        (status, e["error"].as_str()),
        (400, Some("VALIDATION_ERROR")),
        "an external_id is one store's"
    );
    let (status, _) = sb
        .call(Method::POST, "/users/1/stores", Some(json!({"name": "x"})))
        .await;
    assert_eq!(status, 403, "another user's stores");
    let (status, e) = sb
        .call(
            Method::POST,
            &stores,
            Some(json!({"name": "x", "location": {}, "color": "red"})),
        )
        .await;
    assert_eq!((status, e["error"].as_str()), (400, Some("UNKNOWN_FIELD")));

    let (_, found) = sb
        .call(
            Method::GET,
            &format!("{stores}/search?external_id=SUC001"),
            None,
        )
        .await;
    assert_eq!(found["paging"]["total"], 1);
    assert_eq!(found["results"][0]["id"], store["id"]);
    let docs: Value = serde_json::from_str(
        &std::fs::read_to_string(
            crate::runner::workspace().join("fixtures/api/checkout/store-search-docs.json"),
        )
        .unwrap(),
    )
    .unwrap();
    for k in docs[0]["results"][0].as_object().unwrap().keys() {
        assert!(found["results"][0].get(k).is_some(), "{k} in {found}");
    }
    let (status, changed) = sb
        .call(
            Method::PUT,
            &format!("{stores}/{}", store["id"]),
            Some(json!({"name": "Sucursal Centro"})),
        )
        .await;
    assert_eq!((status, &changed["name"]), (200, &json!("Sucursal Centro")));
    assert_eq!(changed["external_id"], "SUC001");

    // A POS, as the reference's request makes it (its store by external id).
    let mut pos_body: Value = serde_json::from_str(
        &std::fs::read_to_string(
            crate::runner::workspace().join("fixtures/api/checkout/pos-create-request-docs.json"),
        )
        .unwrap(),
    )
    .unwrap();
    pos_body["store_id"] = store["id"].clone();
    let (status, pos) = sb.call(Method::POST, "/pos", Some(pos_body.clone())).await;
    assert_eq!(status, 201, "{pos}");
    assert_eq!(pos["external_store_id"], "SUC001");
    assert!(pos["qr"]["image"].as_str().unwrap().ends_with(".png"));
    let (status, e) = sb.call(Method::POST, "/pos", Some(pos_body.clone())).await;
    assert_eq!(
        (status, e["error"].as_str()),
        (409, Some("point_of_sale_exists"))
    );
    pos_body["external_id"] = json!("SUC-001");
    let (status, e) = sb.call(Method::POST, "/pos", Some(pos_body.clone())).await;
    assert_eq!(
        (status, e["error"].as_str()),
        (400, Some("INVALID_EXTERNAL_ID"))
    );
    pos_body["external_id"] = json!("SUC001POS002");
    pos_body["external_store_id"] = json!("SUC999");
    let (status, e) = sb.call(Method::POST, "/pos", Some(pos_body)).await;
    assert_eq!(
        (status, e["error"].as_str()),
        (400, Some("INEXISTENT_EXTERNAL_STORE_ID"))
    );

    let (_, found) = sb
        .call(Method::GET, "/pos?external_id=SUC001POS001", None)
        .await;
    assert_eq!(found["paging"]["total"], 1);
    let (_, by_store) = sb
        .call(Method::GET, &format!("/pos?store_id={}", store["id"]), None)
        .await;
    assert_eq!(by_store["results"][0]["id"], pos["id"]);
    let at = format!("/pos/{}", pos["id"]);
    let (status, changed) = sb
        .call(
            Method::PUT,
            &at,
            Some(json!({"name": "Caja 2", "fixed_amount": true})),
        )
        .await;
    assert_eq!(
        (status, &changed["fixed_amount"]),
        (200, &json!(true)),
        "{changed}"
    );

    // A QR order of the Orders API names the POS by its external id.
    let res = sb
        .request(Method::POST, "/v1/orders")
        .header("x-idempotency-key", "qr-1")
        .json(&json!({
            "type": "qr", "total_amount": "10.00", "external_reference": "qr-1",
            "config": {"qr": {"external_pos_id": changed["external_id"], "mode": "dynamic"}},
            "transactions": {"payments": [{"amount": "10.00"}]},
        }))
        .send()
        .await
        .unwrap();
    let (status, order) = answer(res).await;
    assert_eq!(status, 201, "{order}");
    assert_eq!(order["config"]["qr"]["external_pos_id"], "SUC001POS001");

    let res = sb.request(Method::DELETE, &at).send().await.unwrap();
    assert_eq!(res.status(), 204);
    let (status, _) = sb.call(Method::GET, &at, None).await;
    assert_eq!(status, 404);
    sb.stop().await;
}

#[tokio::test]
async fn payment_methods_and_identification_types_follow_the_accounts_site() {
    let (sb, _clock) = on_manual_clock(vec![account(None)]).await;
    let (_, methods) = sb.call(Method::GET, "/v1/payment_methods", None).await;
    let ids: Vec<&str> = methods
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"rapipago") && !ids.contains(&"pix"),
        "MLA: {ids:?}"
    );
    let (_, types) = sb.call(Method::GET, "/v1/identification_types", None).await;
    assert!(types.as_array().unwrap().iter().any(|t| t["id"] == "DNI"));

    let (status, site) = sb.control("site", json!({"site_id": "MLB"})).await;
    assert_eq!(
        (status, &site["currency_id"]),
        (200, &json!("BRL")),
        "{site}"
    );
    let (_, methods) = sb.call(Method::GET, "/v1/payment_methods", None).await;
    assert!(methods.as_array().unwrap().iter().any(|m| m["id"] == "pix"));
    let java: Value = serde_json::from_str(
        &std::fs::read_to_string(
            crate::runner::workspace().join("fixtures/api/checkout/payment-methods-sdk-java.json"),
        )
        .unwrap(),
    )
    .unwrap();
    for k in java[0].as_object().unwrap().keys() {
        assert!(methods[0].get(k).is_some(), "{k}");
    }
    let (_, types) = sb.call(Method::GET, "/v1/identification_types", None).await;
    assert_eq!(types[0]["id"], "CPF");
    let (_, pref) = sb
        .call(
            Method::POST,
            "/checkout/preferences",
            Some(json!({"items": [{"title": "Point Mini", "quantity": 1, "unit_price": 58.8}]})),
        )
        .await;
    assert_eq!(
        (&pref["site_id"], &pref["items"][0]["currency_id"]),
        (&json!("MLB"), &json!("BRL"))
    );
    let (status, _) = sb.control("site", json!({"site_id": "XXX"})).await;
    assert_eq!(status, 400);
    sb.stop().await;
}

#[tokio::test]
async fn a_customer_saves_a_card_from_a_token() {
    let (sb, _clock) = on_manual_clock(vec![account(None)]).await;
    let (status, c) = sb
        .call(
            Method::POST,
            "/v1/customers",
            Some(json!({"email": "ana@example.com", "first_name": "Ana"})),
        )
        .await;
    assert_eq!(status, 201, "{c}");
    let (status, _) = sb
        .call(
            Method::POST,
            "/v1/customers",
            Some(json!({"email": "ANA@example.com"})),
        )
        .await;
    assert_eq!(status, 400, "one customer per e-mail");
    let (_, found) = sb
        .call(
            Method::GET,
            "/v1/customers/search?email=ana@example.com",
            None,
        )
        .await;
    assert_eq!(found["results"][0]["id"], c["id"]);
    let (_, token) = sb
        .call(
            Method::POST,
            "/v1/card_tokens",
            Some(json!({
        "card_number": "4235647728025682", "security_code": "123", "expiration_month": "11",
        "expiration_year": "2030", "cardholder": {"name": "APRO"}})),
        )
        .await;
    let cards = format!("/v1/customers/{}/cards", c["id"].as_str().unwrap());
    let (status, card) = sb
        .call(Method::POST, &cards, Some(json!({"token": token["id"]})))
        .await;
    assert_eq!(status, 201, "{card}");
    assert_eq!(
        (
            card["last_four_digits"].as_str(),
            card["payment_method"]["id"].as_str()
        ),
        (Some("5682"), Some("visa"))
    );
    let (_, list) = sb.call(Method::GET, &cards, None).await;
    assert_eq!(list[0]["id"], card["id"]);
    let (status, gone) = sb
        .call(
            Method::DELETE,
            &format!("{cards}/{}", card["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!((status, &gone["id"]), (200, &card["id"]));
    let (_, list) = sb.call(Method::GET, &cards, None).await;
    assert_eq!(list, json!([]));
    sb.stop().await;
}
