"""Drives the sandbox's Orders API through the official Python SDK (PyPI
`mercadopago`, its `order()` methods: create, get, search, cancel, refund),
the way a point of sale's software would, and checks every answer. Run by
`tests/it/sdk_orders.rs`, which starts the sandbox and pointhook and then
checks what pointhook told the merchant about each order.

The SDK is pointed at the sandbox by `sandbox_sdk.py`. The terminals'
outcomes and the dropped notification are set on the sandbox's
control API (`/sandbox/…`), which is no part of the platform, with plain
HTTP.

Environment: POINTHOOK_SANDBOX_URL, POINTHOOK_SANDBOX_TOKEN,
POINTHOOK_SANDBOX_TERMINALS (eight terminals of the account, in PDV mode,
comma-separated; each flow has its own so that their presets do not meet).
One QR order is cancelled while created; searches page with the SDK's own
iterator too.
Prints one JSON line naming each order it made and what it expects of it;
exits 1 with the reason on the first answer that is not the platform's.
"""

import datetime
import json
import os
import sys
import time
import urllib.request
import uuid

from mercadopago.config import RequestOptions
from sandbox_sdk import check, expect
from sandbox_sdk import sdk as sandbox_sdk





def refused(result, status, error, what):
    body = expect(result, status, what)
    check(body.get("error") == error and body.get("status") == status,
          f"{what}: expected the platform's {error}, got {body}")
    return body


def keyed(key, **headers):
    return RequestOptions(custom_headers={"x-idempotency-key": key, **headers})


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class Run:
    def __init__(self):
        self.base = os.environ["POINTHOOK_SANDBOX_URL"].rstrip("/")
        self.token = os.environ["POINTHOOK_SANDBOX_TOKEN"]
        self.terminals = os.environ["POINTHOOK_SANDBOX_TERMINALS"].split(",")
        check(len(self.terminals) == 8, "eight terminals")
        self.sdk = sandbox_sdk(self.base, self.token)
        self.orders = self.sdk.order()
        self.run = uuid.uuid4().hex[:8]
        self.made = []

    def control(self, path, body):
        """A call to the sandbox's control API (not the platform's)."""
        req = urllib.request.Request(
            f"{self.base}/sandbox/{path}", data=json.dumps(body).encode(),
            method="POST",
            headers={"authorization": f"Bearer {self.token}",
                     "content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as res:
            check(200 <= res.status < 300, f"control {path}: {res.status}")
            return json.loads(res.read() or b"null")

    def preset(self, terminal, **outcome):
        got = self.control(f"terminals/{terminal}", outcome)
        check(got.get("status") == outcome["status"], f"preset {got}")

    def body(self, terminal, name, amount, **extra):
        return {
            "type": "point",
            "external_reference": f"{name}-{self.run}",
            "description": f"SDK orders: {name}",
            "transactions": {"payments": [{"amount": amount}]},
            "config": {"point": {"terminal_id": terminal,
                                 "print_on_terminal": "no_ticket"}},
            **extra,
        }

    def create(self, terminal, name, amount, key=None, **extra):
        body = self.body(terminal, name, amount, **extra)
        order = expect(self.orders.create(body, keyed(key or uuid.uuid4().hex)),
                       201, f"create the {name} order")
        check(order["status"] == "created" and order["type"] == "point"
              and order["external_reference"] == body["external_reference"]
              and order["config"]["point"]["terminal_id"] == terminal,
              f"the {name} order as created: {order}")
        check(order["id"].startswith("ORD") and len(order["id"]) == 29
              and order["id"] == order["id"].upper(), f"an order id: {order['id']}")
        self.made.append(order["id"])
        return order

    def wait(self, order_id, statuses, seconds=30.0):
        """Polls the order (SDK get) until its status is one of `statuses`;
        the statuses seen on the way, and the order."""
        seen = []
        deadline = time.monotonic() + seconds
        while True:
            now = expect(self.orders.get(order_id), 200, f"get {order_id}")
            check(now["id"] == order_id, "get answers the order asked for")
            if not seen or seen[-1] != now["status"]:
                seen.append(now["status"])
            if now["status"] in statuses:
                return seen, now
            check(time.monotonic() < deadline,
                  f"{order_id} never reached {statuses}: {seen}")
            time.sleep(0.01)


def payment_ids(order):
    return [p["reference_id"] for p in order["transactions"]["payments"]
            if p.get("reference_id")]


def main():
    r = Run()
    t = dict(zip(["paid", "canceled", "failed", "expired", "confirmed",
                  "refused", "cancel_api", "dropped"], r.terminals))
    summary = {}

    # Paid on the terminal, then refunded in full; its key replayed; its
    # terminal busy meanwhile.
    key = f"create-paid-{r.run}"
    paid = r.create(t["paid"], "paid", "24.00", key=key)
    again = expect(r.orders.create(r.body(t["paid"], "paid", "24.00"), keyed(key)),
                   201, "the same create with the same key")
    check(again["id"] == paid["id"], f"one key, one order: {again['id']} {paid['id']}")
    refused(r.orders.create(r.body(t["paid"], "paid", "25.00"), keyed(key)),
            409, "idempotency_key_already_used", "the same key with another body")
    refused(r.orders.create(r.body(t["paid"], "busy", "10.00"), keyed(uuid.uuid4().hex)),
            409, "already_queued_order_for_terminal", "a second order on a busy terminal")
    seen, processed = r.wait(paid["id"], {"processed"})
    check(processed["status_detail"] == "processed"
          and processed["total_paid_amount"] == "24.00"
          and processed["transactions"]["payments"][0]["status_detail"] == "accredited",
          f"the paid order: {processed}")
    check(set(seen[:-1]) <= {"created", "at_terminal"},
          f"created, on the terminal, processed: {seen}")
    refund_key = f"refund-{r.run}"
    refunded = expect(r.orders.refund(paid["id"], None, keyed(refund_key)), 201,
                      "refund the paid order in full")
    check(refunded["status"] == "refunded"
          and [x["amount"] for x in refunded["transactions"]["refunds"]] == ["24.00"],
          f"refunded in full: {refunded}")
    replay = expect(r.orders.refund(paid["id"], None, keyed(refund_key)), 201,
                    "the same refund with the same key")
    check(replay == refunded, "one key, one refund")
    refused(r.orders.refund(paid["id"], None, keyed(uuid.uuid4().hex)), 409,
            "order_already_refunded", "a second refund")
    summary["paid"] = {"id": paid["id"], "payment_ids": payment_ids(processed),
                       "external_reference": paid["external_reference"]}

    # Each outcome a terminal can give, on a terminal of its own.
    r.preset(t["canceled"], status="canceled")
    r.preset(t["failed"], status="failed")
    r.preset(t["expired"], status="expired")
    r.preset(t["confirmed"], status="action_required", payment_status="approved")
    r.preset(t["refused"], status="action_required", payment_status="rejected")
    made = {
        "canceled": r.create(t["canceled"], "canceled", "11.00"),
        "failed": r.create(t["failed"], "failed", "12.00"),
        # Unpaid on the terminal; expires after 30 platform seconds.
        "expired": r.create(t["expired"], "expired", "13.00", expiration_time="PT30S"),
        "confirmed": r.create(t["confirmed"], "confirmed", "14.00"),
        "refused": r.create(t["refused"], "refused", "15.00"),
    }
    final = {"canceled": "canceled", "failed": "failed", "expired": "expired",
             "confirmed": "action_required", "refused": "action_required"}
    for name, order in made.items():
        seen, now = r.wait(order["id"], {final[name]})
        check(now["status"] == final[name], f"{name}: {now}")
        check("processed" not in seen, f"{name} went through processed: {seen}")
        if final[name] == "action_required":
            check(now["transactions"]["payments"][0]["status_detail"]
                  == "check_on_terminal", f"{name}: {now}")
            ids = payment_ids(now)
            check(len(ids) == 1, f"{name} names its payment: {now}")
            classic = expect(r.sdk.payment().get(int(ids[0])), 200,
                             f"the payment behind {name}")
            want = "approved" if name == "confirmed" else "rejected"
            check(classic["status"] == want, f"{name}'s payment is {classic['status']}")
        summary[name] = {"id": order["id"], "payment_ids": payment_ids(now),
                         "external_reference": order["external_reference"]}

    # Cancelled through the API while on the terminal: 409 without the
    # header, 202 with it, then canceled once the terminal confirms. (The
    # terminal is preset to leave its orders unpaid, so the order waits.)
    r.preset(t["cancel_api"], status="expired")
    on_terminal = r.create(t["cancel_api"], "cancel-api", "16.00")
    r.wait(on_terminal["id"], {"at_terminal"})
    refused(r.orders.cancel(on_terminal["id"], keyed(uuid.uuid4().hex)), 409,
            "cannot_cancel_order", "cancel on the terminal without the header")
    accepted = expect(
        r.orders.cancel(on_terminal["id"],
                        keyed(uuid.uuid4().hex,
                              **{"x-allow-cancelable-status": "at_terminal"})),
        202, "cancel on the terminal with x-allow-cancelable-status")
    check(accepted["status"] == "at_terminal", f"still on the terminal: {accepted}")
    seen, now = r.wait(on_terminal["id"], {"canceled", "expired"})
    check(now["status"] == "canceled", f"the terminal confirmed the cancel: {seen}")
    refused(r.orders.cancel(on_terminal["id"], keyed(uuid.uuid4().hex)), 409,
            "order_already_canceled", "cancel a canceled order")
    summary["cancel_api"] = {"id": on_terminal["id"], "payment_ids": [],
                             "external_reference": on_terminal["external_reference"]}

    # A QR order cancelled while still created: 200, canceled at once.
    qr_body = {
        "type": "qr",
        "total_amount": "18.00",
        "external_reference": f"cancel-created-{r.run}",
        "config": {"qr": {"external_pos_id": "SBXPOS00001", "mode": "dynamic"}},
        "transactions": {"payments": [{"amount": "18.00"}]},
    }
    qr = expect(r.orders.create(qr_body, keyed(uuid.uuid4().hex)), 201,
                "create a QR order")
    check(qr["status"] == "created" and qr["type"] == "qr", f"the QR order: {qr}")
    r.made.append(qr["id"])
    canceled = expect(r.orders.cancel(qr["id"], keyed(uuid.uuid4().hex)), 200,
                      "cancel the QR order while created")
    check(canceled["status"] == "canceled", f"canceled at once: {canceled}")
    got = expect(r.orders.get(qr["id"]), 200, "get the canceled QR order")
    check(got["status"] == "canceled", f"the QR order stays canceled: {got}")
    summary["cancel_created"] = {"id": qr["id"], "payment_ids": [],
                                 "external_reference": qr["external_reference"]}

    # Search: by reference, and every order of the run (the replayed
    # create and the refused ones made none).
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
    end = start + datetime.timedelta(hours=2)
    window = {"begin_date": iso(start), "end_date": iso(end)}
    found = expect(r.orders.search({**window, "external_reference": paid["external_reference"]}),
                   200, "search by reference")
    check(int(found["paging"]["total"]) == 1 and found["data"][0]["id"] == paid["id"]
          and found["data"][0]["status"] == "refunded", f"search by reference: {found}")
    everything = expect(r.orders.search({**window, "limit": 100}), 200, "search all")
    listed = sorted(o["id"] for o in everything["data"])
    check(listed == sorted(r.made) and int(everything["paging"]["total"]) == len(r.made),
          f"search lists the orders made, once each: {listed} {r.made}")

    paged = [o["id"] for o in r.orders.search_auto_paging_iter(window, limit=3)]
    check(sorted(paged) == sorted(r.made),
          f"the SDK's paging, three a page, lists each order once: {paged} {r.made}")

    # Last, with nothing else moving: the next order notification is
    # dropped, so only the sweeper can find this order paid.
    r.control("faults", {"drop_notifications": 1, "topic": "order"})
    dropped = r.create(t["dropped"], "dropped", "17.00")
    seen, now = r.wait(dropped["id"], {"processed"})
    summary["dropped"] = {"id": dropped["id"], "payment_ids": payment_ids(now),
                          "external_reference": dropped["external_reference"]}

    print(json.dumps(summary))


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"sdk orders: {e}", file=sys.stderr)
        sys.exit(1)
