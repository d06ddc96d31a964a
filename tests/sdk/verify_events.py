"""Verifies, with the official Standard Webhooks library from PyPI, the
events pointhook posted to its destinations (tests/it/destinations_sdk.rs
writes them to the file named in POINTHOOK_EVENTS).

Each entry holds the destination's secrets, the headers and the body as
received: every secret must verify it, and a secret of no destination
must not. Prints one line per destination; exits 1 on the first failure.
"""

import json
import os
import sys

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

STRANGER = "whsec_c3RyYW5nZXItc3RyYW5nZXItc3RyYW5nZXItc3RyYW5nZXI="


def main() -> int:
    with open(os.environ["POINTHOOK_EVENTS"], encoding="utf-8") as f:
        entries = json.load(f)
    if not entries:
        print("no events to verify")
        return 1
    seen = {}
    for e in entries:
        for secret in e["secrets"]:
            payload = Webhook(secret).verify(e["body"], e["headers"])
            if payload["id"] != e["headers"]["webhook-id"]:
                print(f"{e['destination']}: the body's id is not the webhook-id")
                return 1
        try:
            Webhook(STRANGER).verify(e["body"], e["headers"])
        except WebhookVerificationError:
            pass
        else:
            print(f"{e['destination']}: a stranger's secret verified")
            return 1
        seen[e["destination"]] = seen.get(e["destination"], 0) + 1
    for name, n in sorted(seen.items()):
        print(f"{name}: {n} events verified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
