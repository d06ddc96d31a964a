"""Drives a pointhook sandbox through the official Python SDK (PyPI
`mercadopago`) as an online shop and a point-of-sale integration would:
a Checkout Pro preference created, read, changed and searched; the
site's payment methods and identification types listed; a store and a
point of sale set up, read, changed, searched (and the POS removed); a
customer with a saved card; and, once the preference is paid by the
sandbox's control API (a buyer on the checkout page), its payment read
with the fields a shop reads (payer, transaction_details, date_approved,
money_release_date, fee_details, collector_id, order).

The SDK has no client for stores and points of sale; they are called
through the SDK's own request machinery (`MPBase`, the class every SDK
resource extends), as a shop extending the SDK would.

Run by `crates/sandbox/tests/sandbox/sdk/checkout.rs`. Environment:
POINTHOOK_SANDBOX_URL, POINTHOOK_SANDBOX_TOKEN. Prints one JSON line of
what it made; exits 1 with the reason on the first answer that is not
the platform's.
"""

import json
import os
import urllib.request

from mercadopago.core import MPBase

from sandbox_sdk import check, expect
from sandbox_sdk import sdk as sandbox_sdk

BASE = os.environ["POINTHOOK_SANDBOX_URL"].rstrip("/")
TOKEN = os.environ["POINTHOOK_SANDBOX_TOKEN"]


class InStore(MPBase):
    """Stores and points of sale, through the SDK's request machinery."""

    def create_store(self, user_id, body):
        return self._post(uri=f"/users/{user_id}/stores", data=body)

    def get_store(self, user_id, store_id):
        return self._get(uri=f"/users/{user_id}/stores/{store_id}")

    def update_store(self, user_id, store_id, body):
        return self._put(uri=f"/users/{user_id}/stores/{store_id}", data=body)

    def search_stores(self, user_id, filters):
        return self._get(uri=f"/users/{user_id}/stores/search", filters=filters)

    def create_pos(self, body):
        return self._post(uri="/pos", data=body)

    def get_pos(self, pos_id):
        return self._get(uri=f"/pos/{pos_id}")

    def update_pos(self, pos_id, body):
        return self._put(uri=f"/pos/{pos_id}", data=body)

    def search_pos(self, filters):
        return self._get(uri="/pos", filters=filters)

    def delete_pos(self, pos_id):
        return self._delete(uri=f"/pos/{pos_id}")


def control(path, body):
    """The sandbox's control API (what a buyer does on the checkout page)."""
    req = urllib.request.Request(
        f"{BASE}/sandbox/{path}", data=json.dumps(body).encode(), method="POST",
        headers={"authorization": f"Bearer {TOKEN}", "content-type": "application/json"})
    with urllib.request.urlopen(req) as res:
        return json.load(res)


def preferences(sdk):
    pref = expect(sdk.preference().create({
        "items": [{"id": "item-001", "title": "Point Mini", "quantity": 2,
                   "unit_price": 29.40, "currency_id": "ARS"}],
        "payer": {"name": "Test", "surname": "User", "email": "test_user@testuser.com"},
        "back_urls": {"success": "http://127.0.0.1:9/shop/success",
                      "pending": "http://127.0.0.1:9/shop/pending",
                      "failure": "http://127.0.0.1:9/shop/failure"},
        "auto_return": "approved",
        "notification_url": "http://127.0.0.1:9/shop/notifications",
        "external_reference": "SDK-PY-1",
        "expires": True,
        "expiration_date_from": "2020-01-01T00:00:00.000-03:00",
        "expiration_date_to": "2099-12-31T23:59:59.000-03:00",
        "payment_methods": {"excluded_payment_types": [{"id": "ticket"}], "installments": 6},
    }), 201, "create a preference")
    check(pref["init_point"].startswith(BASE) and pref["sandbox_init_point"],
          f"init points on the sandbox: {pref}")
    got = expect(sdk.preference().get(pref["id"]), 200, "get the preference")
    check(got["items"][0]["title"] == "Point Mini" and got["back_urls"]["success"],
          f"read back: {got}")
    changed = expect(sdk.preference().update(pref["id"], {"external_reference": "SDK-PY-2"}),
                     200, "update the preference")
    check(changed["external_reference"] == "SDK-PY-2", f"updated: {changed}")
    found = expect(sdk.preference().search({"external_reference": "SDK-PY-2"}),
                   200, "search preferences")
    check(found["total"] == 1 and found["elements"][0]["id"] == pref["id"], f"found: {found}")
    return pref


def catalog(sdk):
    methods = expect(sdk.payment_methods().list_all(), 200, "list payment methods")
    check(any(m["id"] == "visa" and m["payment_type_id"] == "credit_card" for m in methods),
          f"methods: {methods}")
    types = expect(sdk.identification_type().list_all(), 200, "list identification types")
    check(any(t["id"] == "DNI" for t in types), f"types: {types}")
    return len(methods), len(types)


def in_store(sdk, user_id):
    api = InStore(sdk.request_options, sdk.http_client)
    store = expect(api.create_store(user_id, {
        "name": "Sucursal Instore", "external_id": "SUCPY1",
        "business_hours": {"monday": [{"open": "08:00", "close": "13:00"}]},
        "location": {"street_number": "3039", "street_name": "Caseros", "city_name": "Belgrano",
                     "state_name": "Capital Federal", "latitude": -32.88, "longitude": -68.84},
    }), 201, "create a store")
    expect(api.get_store(user_id, store["id"]), 200, "get the store")
    changed = expect(api.update_store(user_id, store["id"], {"name": "Sucursal Centro"}),
                     200, "update the store")
    check(changed["name"] == "Sucursal Centro", f"store: {changed}")
    found = expect(api.search_stores(user_id, {"external_id": "SUCPY1"}), 200, "search stores")
    check(found["paging"]["total"] == 1, f"stores: {found}")
    pos = expect(api.create_pos({"name": "Caja 1", "fixed_amount": False, "store_id": store["id"],
                                 "external_store_id": "SUCPY1", "external_id": "SUCPY1POS1",
                                 "category": 621102}), 201, "create a POS")
    check(pos["qr"]["image"] and pos["external_id"] == "SUCPY1POS1", f"pos: {pos}")
    expect(api.get_pos(pos["id"]), 200, "get the POS")
    expect(api.update_pos(pos["id"], {"name": "Caja 2"}), 200, "update the POS")
    found = expect(api.search_pos({"external_id": "SUCPY1POS1"}), 200, "search POS")
    check(found["results"][0]["name"] == "Caja 2", f"pos: {found}")
    gone = api.delete_pos(pos["id"])
    check(gone["status"] == 204, f"delete the POS: {gone}")
    return store["id"], pos["id"]


def customer_with_card(sdk):
    customer = expect(sdk.customer().create({"email": "buyer_py@testuser.com", "first_name": "Ana"}),
                      201, "create a customer")
    found = expect(sdk.customer().search({"email": "buyer_py@testuser.com"}), 200, "search customers")
    check(found["results"][0]["id"] == customer["id"], f"customers: {found}")
    token = expect(sdk.card_token().create({
        "card_number": "5031433215406351", "security_code": "123", "expiration_year": "2030",
        "expiration_month": "11", "cardholder": {"name": "APRO"}}), 201, "a card token")
    card = expect(sdk.card().create(customer["id"], {"token": token["id"]}), 201, "save the card")
    cards = expect(sdk.card().list_all(customer["id"]), 200, "list the cards")
    check(cards[0]["id"] == card["id"] and card["last_four_digits"] == "6351", f"cards: {cards}")
    return customer["id"]


def paid_payment(sdk, pref):
    paid = control(f"preferences/{pref['id']}/pay", {"cardholder_name": "APRO", "installments": 3})
    payment = expect(sdk.payment().get(paid["payment"]["id"]), 200, "get the paid payment")
    check(payment["status"] == "approved", f"approved: {payment}")
    check(payment["payer"]["email"] == "test_user@testuser.com" and payment["payer"]["id"],
          f"payer: {payment['payer']}")
    details = payment["transaction_details"]
    for field in ["net_received_amount", "total_paid_amount", "installment_amount"]:
        check(isinstance(details.get(field), (int, float)), f"{field}: {details}")
    check(details["total_paid_amount"] == 58.8, f"total: {details}")
    for field in ["date_approved", "date_last_updated", "money_release_date", "currency_id"]:
        check(isinstance(payment.get(field), str), f"{field}: {payment.get(field)}")
    check(payment["fee_details"] and payment["fee_details"][0]["type"] == "mercadopago_fee",
          f"fees: {payment['fee_details']}")
    check(isinstance(payment["collector_id"], int), f"collector: {payment['collector_id']}")
    order = payment["order"]
    check(str(order["id"]) == str(paid["merchant_order"]["id"]) and order["type"] == "mercadopago",
          f"order: {order}")
    merchant_order = expect(sdk.merchant_order().get(order["id"]), 200, "get its merchant order")
    check(merchant_order["preference_id"] == pref["id"] and merchant_order["order_status"] == "paid",
          f"merchant order: {merchant_order}")
    return payment["id"], order["id"]


def main():
    sdk = sandbox_sdk(BASE, TOKEN)
    me = expect(sdk.user().get(), 200, "get the user")
    pref = preferences(sdk)
    methods, types = catalog(sdk)
    store, pos = in_store(sdk, me["id"])
    customer = customer_with_card(sdk)
    payment, order = paid_payment(sdk, pref)
    print(json.dumps({"preference": pref["id"], "payment_methods": methods,
                      "identification_types": types, "store": store, "pos": pos,
                      "customer": customer, "payment": payment, "merchant_order": order}))


if __name__ == "__main__":
    main()
