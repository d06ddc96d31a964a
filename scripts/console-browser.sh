#!/usr/bin/env bash
# The operator console in headless Chromium (Debian's package, driven by
# playwright-core from npm), against pointhook and the bundled sandbox:
# sign in; a held fraud review found in the inbox and confirmed (the
# sandbox's call log shows one refund; the audit shows who); another
# dismissed after a second question and its order released once paid;
# every review on /fraud-reviews; a group of dead jobs retried at once; an
# order found by its payment id with its timeline; /health at 390 and
# 1,400 px with legends, chart text of 9 px or more inside its drawing, no
# milliseconds; no horizontal scroll at 390 px; sign-in and an action with
# JavaScript off; an action without the CSRF token refused; with two
# destinations (`default` failing, `erp` taking every event) an event's
# attempts under each destination's name; a held order found by its
# external reference; enable after disable keeps the recovery's since.
# Screenshots in ${SHOTS:-target/console-shots}/, at 390 and 1,400 px.
# Installs what is missing; stops what it starts.
set -euo pipefail
cd "$(dirname "$0")/.."
shots=${SHOTS:-$PWD/target/console-shots}
mkdir -p "$shots"

if ! command -v chromium >/dev/null; then
  apt-get update -qq && apt-get install -y -qq chromium >/dev/null
fi
cargo build --quiet
bin=$PWD/target/debug/pointhook

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
listen=127.0.0.1:$(free_port)
admin=127.0.0.1:$(free_port)
token=TEST-console-check
admin_token=console-check-admin-token-0123456789

"$bin" sandbox --listen 127.0.0.1:0 --token "$token" \
  --notification-url "http://$listen/notifications" >"$work/sandbox.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q 'sandbox listening' "$work/sandbox.log" 2>/dev/null && break; sleep 0.1; done
sandbox=$(sed -n 's/^sandbox listening on \(http:[^ ]*\).*/\1/p' "$work/sandbox.log")
[ -n "$sandbox" ] || { cat "$work/sandbox.log"; echo "the sandbox did not start"; exit 1; }

# A destination that takes every event (204).
erp_port=$(free_port)
python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(204); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
' "$erp_port" &
pids+=($!)

cat >"$work/pointhook.toml" <<TOML
[server]
listen = "$listen"
[storage]
path = "$work/pointhook.db"
[api]
base_url = "$sandbox"
timeout_secs = 2
[worker]
max_attempts = 2
[admin]
listen = "$admin"
token = "$admin_token"
[reconcile]
enabled = false
# A destination nothing answers: it fails, so the inbox lists it.
[fulfillment]
url = "http://127.0.0.1:9/events"
unsigned = true
[[destinations]]
name = "erp"
url = "http://127.0.0.1:$erp_port/events"
unsigned = true
[[accounts]]
name = "default"
access_token = "$token"
fraud_unauthenticated = "hold"
TOML
cfg=(--config "$work/pointhook.toml")
"$bin" migrate "${cfg[@]}" >/dev/null
printf 'a long enough password\n' >"$work/pw"
"$bin" operators add ana --password-file "$work/pw" "${cfg[@]}" >/dev/null
"$bin" serve "${cfg[@]}" --log-format json 2>"$work/serve.log" &
pids+=($!)
for _ in $(seq 100); do grep -q '"admin API serving"' "$work/serve.log" 2>/dev/null && break; sleep 0.1; done

ctl() { curl -fsS -X POST -H "authorization: Bearer $token" -H 'content-type: application/json' "$sandbox/sandbox/$1" -d "$2"; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
# Two orders, each half paid (so not released), each with a fraud alert
# that the account holds for a person.
order1=$(ctl merchant_orders '{"total_amount": 480, "external_reference": "shop-1042"}' | field id)
pay1=$(ctl "merchant_orders/$order1/payments" '{"amount": 240}' | field id)
order2=$(ctl merchant_orders '{"total_amount": 100}' | field id)
pay2=$(ctl "merchant_orders/$order2/payments" '{"amount": 50}' | field id)
sleep 2
ctl fraud_alerts "{\"merchant_order\": $order1, \"payment_id\": $pay1}" >/dev/null
ctl fraud_alerts "{\"merchant_order\": $order2, \"payment_id\": $pay2}" >/dev/null
# Three merchant orders the platform fails to answer for (500, more times
# than [worker] max_attempts): three dead jobs of one cause. (An id the
# platform does not know is no longer a dead job: it is read twice, then
# left to reconciliation.)
for id in 990001 990002 990003; do
  ctl faults "{\"path\": \"/merchant_orders/$id\", \"status\": 500, \"times\": 50}" >/dev/null
  curl -fsS -X POST "http://$listen/notifications?topic=merchant_order&id=$id" >/dev/null
done
for _ in $(seq 200); do
  held=$("$bin" fraud list --json "${cfg[@]}" | grep -c '"state": "held"' || true)
  dead=$("$bin" jobs list --state dead --json "${cfg[@]}" | grep -c '"id"' || true)
  [ "$held" -ge 2 ] && [ "$dead" -ge 3 ] && break; sleep 0.2
done
[ "$held" -ge 2 ] && [ "$dead" -ge 3 ] || { echo "held: $held, dead: $dead"; tail -20 "$work/serve.log"; exit 1; }

# Disabled by a person: the failure's start is kept for the recovery,
# through the console's enable.
"$bin" destinations disable default "${cfg[@]}" >/dev/null

(cd "$work" && npm install --silent --no-audit --no-fund playwright-core@1 >/dev/null)
cp scripts/console-check.js "$work/check.js"
(cd "$work" && node check.js "http://$admin" "$shots" "$order1" "$pay1" "$order2" "$pay2" shop-1042)

# The second order is paid in full now: released, its block lifted.
ctl "merchant_orders/$order2/payments" '{"amount": 50}' >/dev/null
for _ in $(seq 100); do
  "$bin" orders show "$order2" --json "${cfg[@]}" | grep -q '"released_at": "' && break; sleep 0.2
done
"$bin" orders show "$order2" --json "${cfg[@]}" | grep -q '"released_at": "' \
  || { echo "the dismissed order was not released once paid"; exit 1; }
refunds() {
  curl -fsS -H "authorization: Bearer $token" "$sandbox/sandbox/requests" \
    | python3 -c 'import json,sys; print(sum(1 for c in json.load(sys.stdin) if c["method"]=="POST" and c["path"].endswith("/refunds")))'
}
for _ in $(seq 100); do [ "$(refunds)" -ge 1 ] && break; sleep 0.2; done
sleep 1
[ "$(refunds)" = 1 ] || { echo "the sandbox saw $(refunds) refunds, not 1"; exit 1; }
echo "console: ok (screenshots in $shots)"
