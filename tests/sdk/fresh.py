"""Drives a fresh pointhook sandbox (one account, nothing set up on it)
through the official Python SDK (PyPI `mercadopago`), as a tester's first
minutes would: card tokens of the platform's test cards, and a payment
with each documented test cardholder name coming to the documented
outcome; the Point device every account starts with, listed, and an
intent opened on it. Run by `crates/sandbox/tests/sandbox/sdk/python.rs`.

Environment: POINTHOOK_SANDBOX_URL, POINTHOOK_SANDBOX_TOKEN.
Prints one JSON line of what it made; exits 1 with the reason on the
first answer that is not the platform's.
"""

import json
import os

from sandbox_sdk import check, expect
from sandbox_sdk import sdk as sandbox_sdk

# The test cardholder names and the payment each makes (docs/sandbox.md,
# "Test cards").
OUTCOMES = {
    "APRO": ("approved", "accredited"),
    "CONT": ("in_process", "pending_contingency"),
    "OTHE": ("rejected", "cc_rejected_other_reason"),
    "CALL": ("rejected", "cc_rejected_call_for_authorize"),
    "FUND": ("rejected", "cc_rejected_insufficient_amount"),
    "SECU": ("rejected", "cc_rejected_bad_filled_security_code"),
    "EXPI": ("rejected", "cc_rejected_bad_filled_date"),
    "FORM": ("rejected", "cc_rejected_bad_filled_other"),
}


def main():
    sdk = sandbox_sdk(os.environ["POINTHOOK_SANDBOX_URL"],
                      os.environ["POINTHOOK_SANDBOX_TOKEN"])

    # Card tokens, as the SDK's own test makes them, and payments with them.
    payments = {}
    for holder, (status, detail) in OUTCOMES.items():
        token = expect(sdk.card_token().create({
            "card_number": "5031433215406351",
            "security_code": "123",
            "expiration_year": "2030",
            "expiration_month": "11",
            "cardholder": {"name": holder,
                           "identification": {"type": "CPF",
                                              "number": "19119119100"}},
        }), 201, f"a card token for {holder}")
        check(token["status"] == "active" and token["last_four_digits"] == "6351"
              and token["cardholder"]["name"] == holder, f"token: {token}")
        again = expect(sdk.card_token().get(token["id"]), 200, "get the token")
        check(again == token, f"the token as created: {again}")
        payment = expect(sdk.payment().create({
            "token": token["id"],
            "installments": 1,
            "transaction_amount": 58.80,
            "description": "Point Mini",
            "payment_method_id": "master",
            "payer": {"email": "test_user_123456@testuser.com",
                      "identification": {"number": "19119119100",
                                         "type": "CPF"}},
        }), 201, f"a payment of {holder}")
        check(payment["status"] == status and payment["status_detail"] == detail,
              f"{holder}: {payment['status']} {payment['status_detail']}, "
              f"not {status} {detail}")
        got = expect(sdk.payment().get(payment["id"]), 200, "get the payment")
        check(got["status_detail"] == detail, f"{holder}: read back {got}")
        payments[holder] = payment["id"]

    # The device a fresh account has, and an intent on it.
    devices = expect(sdk.point().get_devices(), 200, "list the devices")
    check(devices["paging"]["total"] >= 1 and devices["devices"],
          f"a fresh account has a device: {devices}")
    device = devices["devices"][0]
    check(device["operating_mode"] == "PDV", f"in PDV mode: {device}")
    intent = expect(sdk.point().create(device["id"], {
        "amount": 1500,
        "description": "first intent",
        "additional_info": {"external_reference": "fresh-1",
                            "print_on_terminal": True},
    }), 201, "open an intent on it")
    check(intent["device_id"] == device["id"], f"intent: {intent}")
    read = expect(sdk.point().get(intent["id"]), 200, "read the intent")
    check(read["id"] == intent["id"], f"read: {read}")

    print(json.dumps({"payments": payments, "device": device["id"],
                      "intent": intent["id"]}))


if __name__ == "__main__":
    main()
