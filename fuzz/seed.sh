#!/usr/bin/env bash
# Builds the seed corpora fuzz/corpus/<target>/ from the project's fixtures.
# Re-runnable: it only adds files (named by content hash). Needs python3
# (jq 1.6 would round ids above 2^53, which the fixtures have on purpose).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
corpus="$here/corpus"
mkdir -p "$corpus"/{classify,signature,money,config_env,sandbox}

python3 - "$root" "$corpus" <<'PY'
import glob, hashlib, json, os, sys

root, corpus = sys.argv[1], sys.argv[2]

def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(corpus, target, name), "wb") as f:
        f.write(data)

# classify: QUERY "\n" BODY, the body as the fixture has it (body_text is
# the exact text of bodies that are not JSON).
n = 0
for path in sorted(glob.glob(os.path.join(root, "fixtures/notifications/*.json"))):
    fx = json.load(open(path))
    query = fx.get("query") or ""
    if fx.get("body_text") is not None:
        body = fx["body_text"]
    elif fx.get("body") is not None:
        body = json.dumps(fx["body"], ensure_ascii=False, separators=(",", ":"))
    else:
        body = ""
    put("classify", query + "\n" + body)
    n += 1
    # The signature target gets each signed webhook's parts too.
    headers = {k.lower(): v for k, v in (fx.get("headers") or {}).items()}
    if "x-signature" in headers:
        data_id = ""
        for part in query.split("&"):
            if part.startswith("data.id="):
                data_id = part[len("data.id="):]
        put("signature", "\n".join([
            "your_secret_key_here_0123456789abcdef", data_id,
            headers.get("x-request-id", ""), headers["x-signature"],
            "1763632800", "300"]))
print(f"classify: {n} notifications")

# signature: SECRETS "\n" DATA_ID "\n" X_REQUEST_ID "\n" X_SIGNATURE "\n"
# NOW "\n" TOLERANCE; an absent part is an empty line (the target reads a
# missing line as absent, an empty one as empty: verify treats both alike).
n = 0
for path in sorted(glob.glob(os.path.join(root, "fixtures/signatures*.json"))):
    doc = json.load(open(path))
    for v in doc["vectors"]:
        secret = v.get("secret", doc.get("secret")) or ""
        tol = v.get("tolerance_seconds", doc.get("tolerance_seconds"))
        fields = [secret, v.get("query_data_id") or "", v.get("x_request_id") or "",
                  v.get("x_signature") or "", str(v.get("now_unix", 0))]
        if tol is not None:
            fields.append(str(tol))
        put("signature", "\n".join(fields))
        n += 1
print(f"signature: {n} vectors")

# money: one amount per line, and JSON values.
amounts = [
    "0", "100", "100.5", "100.50", "-3", "0.1\n0.2", "0.30", "1.125", "1.5e2",
    "1E-2", "  42.00  ", "-0", "-0.00", "0.0000000000000000000000000001",
    "79228162514264337593543950335", "-79228162514264337593543950335",
    "79228162514264337593543950335\n1", "7922816251426433759354395033.5",
    "12345678901234567890.123456789", "1e28", "1e-28", "9.99e27", "abc",
    "\"1.5\"", "[0.1, 0.2, \"0.3\"]", "100.5", "{\"amount\": 1}", "null", "true",
    "1_000", "+5", ".5", "5.", "0x10", "1,5",
]
for a in amounts:
    put("money", a)
# Amounts as the API fixtures write them.
n = 0
for path in sorted(glob.glob(os.path.join(root, "fixtures/api/**/*.json"), recursive=True)):
    text = open(path).read()
    for key in ("transaction_amount", "total_paid_amount", "amount", "total_amount",
                "paid_amount", "refunded_amount", "coverage_amount"):
        needle = f'"{key}":'
        i = text.find(needle)
        while i != -1 and n < 200:
            j = i + len(needle)
            end = j
            while end < len(text) and text[end] not in ",}\n]":
                end += 1
            put("money", text[j:end].strip())
            n += 1
            i = text.find(needle, end)
print(f"money: {len(amounts)} amounts + {n} from fixtures/api")

# config_env: NAME=VALUE lines (the target adds POINTHOOK_); "@sample" first
# applies them to sample-config.toml.
envs = [
    "SERVER_MAX_BODY_BYTES=1024",
    "SERVER_LISTEN=0.0.0.0:9000\nSERVER_PATH=/hook",
    "SERVER_PATH=nope",
    "SERVER_NOPE=1",
    "ACCOUNTS_0_ACCESS_TOKEN=123456",
    "ACCOUNTS_0_WEBHOOK_SECRET=s\nACCOUNTS_0_SIGNATURE_TOLERANCE_SECS=300",
    "ACCOUNTS_0_REQUIRE_SIGNATURE=true",
    "ACCOUNTS_1_NAME=second\nACCOUNTS_1_ACCESS_TOKEN=t2",
    "ACCOUNTS_5_NAME=x",
    "ACCOUNTS_X_NAME=x",
    "ACCOUNTS_0",
    "ACCOUNTS_0_ACCESS_TOKEN_FILE=token",
    "ACCOUNTS_0_WEBHOOK_SECRET_FILE=missing",
    "ADMIN_TOKEN=admintoken\nADMIN_LISTEN=127.0.0.1:8081",
    "ADMIN_TOKEN_FILE=x",
    "FULFILLMENT_URL=http://127.0.0.1:9000/events\nFULFILLMENT_SECRET=whsec_abc",
    "FULFILLMENT_GIVE_UP_AFTER_HOURS=9223372036854775807",
    "STORAGE_RETENTION_DAYS=9223372036854775807",
    "STORAGE_RETENTION_DAYS=3",
    "STORAGE_PATH=",
    "API_BASE_URL=ftp://x",
    "API_BASE_URL=https://api.example.test/v1",
    "API_PAYMENT_INTENT_PATH=/a/{id}/b",
    "API_REQUESTS_PER_SECOND=0",
    "WORKER_ENABLED=false\nWORKER_CONCURRENCY=1\nWORKER_LEASE_SECS=2",
    "WORKER_MAX_ATTEMPTS=-1",
    "LOG_FORMAT=json\nLOG_LEVEL=pointhook=debug,info",
    "LOG_LEVEL=info,[",
    "LOG_LEVEL=[span{field=\"x\"}]=trace",
    "ACCESS_TOKEN=not-config",
    "@sample\nSERVER_MAX_CONNECTIONS=1",
    "@sample\nACCOUNTS_0_FRAUD_UNAUTHENTICATED=hold",
    "@sample\nACCOUNTS_1_NAME=default\nACCOUNTS_1_ACCESS_TOKEN=x",
]
for e in envs:
    put("config_env", e)
print(f"config_env: {len(envs)} override sets")

# sandbox: METHOD " " PATH "\n" BODY. The routes docs/sandbox.md and the
# README list (with the JSON body written beside them, if any), placeholders filled
# with the harness's device and small ids; then fixtures/api bodies sent to
# the routes that create or set resources.
import re
route = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE) (/[^\s`|)\\…]+)(?:`? `(\{[^`]*\})`)?")
kinds = ["payment", "merchant_order", "chargeback", "payment_intent"]
def fill(path):
    if "/devices/{id}" in path:
        path = path.replace("{id}", "FUZZ_DEVICE__0001", 1)
    return re.sub(r"\{[a-z_]+\}", "1", path)
seen = set()
for doc in ("README.md", "docs/sandbox.md"):
    for line in open(os.path.join(root, doc)):
        for m in route.finditer(line):
            method, path, body = m.group(1), m.group(2), m.group(3) or ""
            if path.startswith("/api/") or path in ("/healthz", "/readyz", "/metrics"):
                continue  # pointhook's own admin API, not the sandbox's
            try:
                json.loads(body)
            except ValueError:
                body = ""  # the docs' shorthand ("…", "|") is not JSON
            paths = [path]
            if path.startswith("/sandbox/resources/"):
                paths = [f"/sandbox/resources/{k}/1" for k in kinds]
            for p in paths:
                req = f"{method} {fill(p)}\n{body}"
                if req not in seen:
                    seen.add(req)
                    put("sandbox", req)
n = 0
for path in sorted(glob.glob(os.path.join(root, "fixtures/api/**/*.json"), recursive=True)):
    body = open(path).read()
    name = os.path.basename(path)
    kind = next((k for k in kinds if name.startswith(k.replace("_", "-"))), None)
    if kind:
        put("sandbox", f"PUT /sandbox/resources/{kind}/1\n{body}")
    for target in ("POST /v1/payments", "POST /v1/orders", "POST /merchant_orders"):
        put("sandbox", f"{target}\n{body}")
    n += 1
print(f"sandbox: {len(seen)} routes + {n} fixtures/api bodies")
PY
for t in classify signature money config_env sandbox; do
    echo "$t: $(ls "$corpus/$t" | wc -l) files in corpus/$t"
done
