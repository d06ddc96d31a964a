"""Drives the pointhook sandbox through the official Python SDK (PyPI
`mercadopago`), the way a shop's or a point of sale's software would, and
checks every answer. Run by `crates/sandbox/tests/sandbox/sdk/python.rs`,
which starts the sandbox and then checks what it sent. The SDK is pointed
at the sandbox by `sandbox_sdk.py`.

Environment: POINTHOOK_SANDBOX_URL, POINTHOOK_SANDBOX_TOKEN,
POINTHOOK_SANDBOX_SECRET (the account's webhook secret),
POINTHOOK_SANDBOX_DEVICE (a device of the account, in PDV mode).
Prints one JSON line of the ids it made; exits 1 with the reason on the
first answer that is not the platform's.
"""

import http.server
import json
import os
import sys
import threading
import time
import urllib.parse
import uuid

from mercadopago.config import RequestOptions
from mercadopago.webhook import (
    InvalidWebhookSignatureError,
    WebhookSignatureValidator,
)

from sandbox_sdk import check, expect, wait_for
from sandbox_sdk import sdk as sandbox_sdk


class Hooks(http.server.BaseHTTPRequestHandler):
    """A shop's notification endpoint: keeps every request it gets."""

    received = []

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        Hooks.received.append((self.path, dict(self.headers.items()), body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass





def main():
    base = os.environ["POINTHOOK_SANDBOX_URL"]
    secret = os.environ["POINTHOOK_SANDBOX_SECRET"]
    device = os.environ["POINTHOOK_SANDBOX_DEVICE"]
    sdk = sandbox_sdk(base, os.environ["POINTHOOK_SANDBOX_TOKEN"])
    run = uuid.uuid4().hex[:8]

    hooks = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hooks)
    threading.Thread(target=hooks.serve_forever, daemon=True).start()
    hook_url = f"http://127.0.0.1:{hooks.server_address[1]}/hooks?source_news=webhooks"

    # Payments: create, get, search.
    reference = f"sdk-{run}"
    payment = expect(sdk.payment().create({
        "transaction_amount": 100,
        "token": "card-token-from-the-frontend",
        "description": "SDK flow",
        "installments": 1,
        "payment_method_id": "visa",
        "external_reference": reference,
        "notification_url": hook_url,
        "payer": {"email": "buyer@example.com",
                  "identification": {"type": "DNI", "number": "12345678"}},
    }), 201, "create a payment")
    check(payment["status"] == "approved", f"payment created {payment['status']}")
    pid = payment["id"]
    got = expect(sdk.payment().get(pid), 200, "get the payment")
    check(got["id"] == pid, "get returns the payment")
    found = expect(sdk.payment().search({"external_reference": reference}),
                   200, "search payments")
    check(found["paging"]["total"] == 1 and found["results"][0]["id"] == pid,
          f"search finds the payment by reference: {found}")
    missing = sdk.payment().get(1)
    body = expect(missing, 404, "get a payment that does not exist")
    check(body["error"] == "not_found" and body["status"] == 404
          and body["cause"][0]["code"] == 2000, f"404 body: {body}")

    # Refunds: partial (twice with one key: one refund), the rest, list, get.
    keyed = RequestOptions(custom_headers={"x-idempotency-key": f"refund-{run}"})
    first = expect(sdk.refund().create(pid, {"amount": 30}, keyed), 201,
                   "refund 30")
    again = expect(sdk.refund().create(pid, {"amount": 30}, keyed), 201,
                   "refund 30 again with the same key")
    check(first["id"] == again["id"], "one key, one refund")
    check(first["amount"] == 30, f"refunded {first['amount']}")
    partly = expect(sdk.payment().get(pid), 200, "get the payment refunded in part")
    check(partly["status"] == "approved"
          and partly["status_detail"] == "partially_refunded"
          and partly["transaction_amount_refunded"] == 30,
          f"partly refunded payment: {partly}")
    rest = expect(sdk.refund().create(pid), 201, "refund the rest")
    check(rest["amount"] == 70, f"the rest is 70, got {rest['amount']}")
    refunds = expect(sdk.refund().list_all(pid), 200, "list the refunds")
    check([r["id"] for r in refunds] == [first["id"], rest["id"]],
          f"two refunds, oldest first: {refunds}")
    one = expect(sdk.refund().get(pid, rest["id"]), 200, "get a refund")
    check(one["id"] == rest["id"] and one["payment_id"] == pid, "the refund")
    refunded = expect(sdk.payment().get(pid), 200, "get the refunded payment")
    check(refunded["status"] == "refunded", f"refunded: {refunded['status']}")

    # Merchant orders: create, get, update, search.
    order_ref = f"order-{run}"
    order = expect(sdk.merchant_order().create({
        "external_reference": order_ref,
        "items": [{"id": "sku-1", "title": "Mate", "quantity": 2,
                   "unit_price": 50.5, "currency_id": "ARS"}],
    }), 201, "create a merchant order")
    check(order["total_amount"] == 101, f"order total {order['total_amount']}")
    oid = order["id"]
    got = expect(sdk.merchant_order().get(oid), 200, "get the order")
    check(got["external_reference"] == order_ref, "the order's reference")
    changed = expect(sdk.merchant_order().update(oid, {"items": [{"id": "sku-1", "quantity": 1}]}),
                     200, "update the order")
    check(changed["total_amount"] == 50.5, f"new total {changed['total_amount']}")
    found = expect(sdk.merchant_order().search({"external_reference": order_ref}),
                   200, "search orders")
    check(found["total"] == 1 and found["elements"][0]["id"] == oid,
          f"search finds the order: {found}")

    # Point: devices, an intent that the terminal finishes, one cancelled.
    devices = expect(sdk.point().get_devices(), 200, "list devices")
    mine = [d for d in devices["devices"] if d["id"] == device]
    check(mine and mine[0]["operating_mode"] == "PDV", f"devices: {devices}")
    check(devices["paging"]["total"] == len(devices["devices"]), "paging")
    intent_ref = f"table-{run}"
    intent = expect(sdk.point().create(device, {
        "amount": 1500,
        "description": "table 12",
        "additional_info": {"external_reference": intent_ref,
                            "print_on_terminal": True, "ticket_number": "T-12"},
    }), 201, "create an intent on the device")
    iid = intent["id"]
    check(intent["device_id"] == device and intent["amount"] == 1500, f"intent {intent}")
    states = []

    def finished():
        now = expect(sdk.point().get(iid), 200, "get the intent")
        if not states or states[-1] != now["state"]:
            states.append(now["state"])
        return now if now["state"] == "FINISHED" else None

    done = wait_for("the terminal to finish the intent", finished)
    check(states[-1] == "FINISHED" and "OPEN" not in states[1:],
          f"states seen: {states}")
    paid = expect(sdk.payment().get(done["payment"]["id"]), 200,
                  "get the terminal's payment")
    check(paid["status"] == "approved" and paid["transaction_amount"] == 15
          and paid["external_reference"] == intent_ref, f"terminal payment {paid}")

    second = expect(sdk.point().create(device, {"amount": 900}), 201,
                    "create a second intent")
    cancelled = expect(sdk.point().cancel(device, second["id"]), 200,
                       "cancel the second intent")
    check(cancelled == {"id": second["id"]}, f"cancel answers the id: {cancelled}")
    now = expect(sdk.point().get(second["id"]), 200, "get the cancelled intent")
    check(now["state"] == "CANCELED", f"cancelled intent is {now['state']}")

    # The sandbox's signed webhooks pass the SDK's own validator.
    hooks_for_payment = wait_for(
        "the payment's webhooks",
        lambda: [h for h in Hooks.received if f"data.id={pid}" in h[0]])
    for path, headers, _ in hooks_for_payment:
        query = urllib.parse.parse_qs(urllib.parse.urlparse(path).query)
        lower = {k.lower(): v for k, v in headers.items()}
        WebhookSignatureValidator.validate(
            lower.get("x-signature"), lower.get("x-request-id"),
            query["data.id"][0], secret, tolerance_seconds=300)
        try:
            WebhookSignatureValidator.validate(
                lower.get("x-signature"), lower.get("x-request-id"),
                "1", secret)
        except InvalidWebhookSignatureError:
            pass
        else:
            raise AssertionError("a signature for another payment passed")
    hooks.shutdown()

    print(json.dumps({
        "payment": pid,
        "merchant_order": oid,
        "finished_intent": iid,
        "terminal_payment": done["payment"]["id"],
        "cancelled_intent": second["id"],
        "signed_webhooks_checked": len(hooks_for_payment),
    }))


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"sdk flow: {e}", file=sys.stderr)
        sys.exit(1)
