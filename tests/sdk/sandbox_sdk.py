"""What the SDK scripts of this folder share: the official Python SDK
(PyPI `mercadopago`) pointed at a pointhook sandbox, and checks that stop
a script with the reason on the first answer that is not the platform's.

The SDK has no setting for its API base URL (`Config.api_base_url` is a
read-only property over a private class attribute), so it is given,
through its documented `http_client` parameter, an `HttpClient` subclass
that sends each request to the sandbox instead of
https://api.mercadopago.com. Nothing else of the SDK is changed.
"""

import time

import mercadopago
from mercadopago.http import HttpClient

PLATFORM = "https://api.mercadopago.com"


class SandboxHttpClient(HttpClient):
    """The SDK's own client, pointed at the sandbox."""

    def __init__(self, base):
        self.base = base.rstrip("/")

    def request(self, method, url, maxretries=None, retry_on=None,
                backoff_factor=None, **kwargs):
        if not url.startswith(PLATFORM):
            raise AssertionError(f"the SDK called {url}, outside the platform")
        return super().request(method, self.base + url[len(PLATFORM):],
                               maxretries=maxretries, retry_on=retry_on,
                               backoff_factor=backoff_factor, **kwargs)


def sdk(base, token):
    """The official SDK, as the account of `token`, talking to the sandbox."""
    return mercadopago.SDK(token, http_client=SandboxHttpClient(base))


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def expect(result, status, what):
    check(result["status"] == status,
          f"{what}: expected {status}, got {result['status']} {result['response']}")
    return result["response"]


def wait_for(what, probe, seconds=30.0):
    deadline = time.monotonic() + seconds
    while True:
        value = probe()
        if value:
            return value
        check(time.monotonic() < deadline, f"timed out waiting for {what}")
        time.sleep(0.05)
