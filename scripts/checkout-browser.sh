#!/usr/bin/env bash
# Checkout Pro in headless Chromium (Debian's package, driven by
# playwright-core from npm), against the bundled sandbox with pointhook
# receiving: a shop's preference paid on the sandbox's checkout page with
# JavaScript off, declined, pending and approved, the buyer sent back to
# the shop's back URLs each time (scripts/checkout-check.js); pointhook
# hears the notifications and releases the order once, when it is paid in
# full. Screenshots in ${SHOTS:-target/checkout}/. Installs what is
# missing; stops what it starts.
set -euo pipefail
cd "$(dirname "$0")/.."
shots=${SHOTS:-$PWD/target/checkout}
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
shop=http://127.0.0.1:$(free_port)
token=TEST-checkout-check

# The shop's back URLs: plain pages the buyer lands on.
for page in success pending failure; do
  mkdir -p "$work/site/shop/$page" && echo "<h1>shop: $page</h1>" >"$work/site/shop/$page/index.html"
done
python3 -m http.server --bind 127.0.0.1 --directory "$work/site" "${shop##*:}" >"$work/shop.log" 2>&1 &
pids+=($!)

"$bin" sandbox --listen 127.0.0.1:0 --token "$token" --time-scale 0.01 \
  --notification-url "http://$listen/notifications" >"$work/sandbox.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q 'sandbox listening' "$work/sandbox.log" 2>/dev/null && break; sleep 0.1; done
sandbox=$(sed -n 's/^sandbox listening on \(http:[^ ]*\).*/\1/p' "$work/sandbox.log")
[ -n "$sandbox" ] || { cat "$work/sandbox.log"; echo "the sandbox did not start"; exit 1; }

cat >"$work/pointhook.toml" <<TOML
[server]
listen = "$listen"
[storage]
path = "$work/pointhook.db"
[api]
base_url = "$sandbox"
timeout_secs = 2
[reconcile]
enabled = false
[[accounts]]
name = "default"
access_token = "$token"
TOML
cfg=(--config "$work/pointhook.toml")
"$bin" migrate "${cfg[@]}" >/dev/null
"$bin" serve "${cfg[@]}" --log-format json 2>"$work/serve.log" &
pids+=($!)
for _ in $(seq 100); do (exec 3<>"/dev/tcp/${listen%:*}/${listen##*:}") 2>/dev/null && break; sleep 0.1; done

# The shop's preference, with its own notification URL (webhooks only).
pref=$(curl -fsS -X POST -H "authorization: Bearer $token" -H 'content-type: application/json' \
  "$sandbox/checkout/preferences" -d "{
    \"items\": [{\"title\": \"Point Mini\", \"quantity\": 2, \"unit_price\": 29.4}],
    \"back_urls\": {\"success\": \"$shop/shop/success/\", \"pending\": \"$shop/shop/pending/\", \"failure\": \"$shop/shop/failure/\"},
    \"auto_return\": \"all\", \"external_reference\": \"browser-check\",
    \"notification_url\": \"http://$listen/notifications?source_news=webhooks\"}")
init_point=$(printf '%s' "$pref" | python3 -c 'import json,sys; print(json.load(sys.stdin)["init_point"])')

# The page works without JavaScript: its form is in the DOM Chromium loads.
chromium --headless --no-sandbox --disable-gpu --disable-background-networking --dump-dom "$init_point" 2>/dev/null \
  | grep -q 'action="/checkout/v1/pay"' || { echo "the checkout page has no form"; exit 1; }

(cd "$work" && npm install --silent --no-audit --no-fund playwright-core@1 >/dev/null)
cp scripts/checkout-check.js "$work/check.js"
paid=$(cd "$work" && node check.js "$init_point" "$shots" "$shop")
order=$(printf '%s' "$paid" | python3 -c 'import json,sys; print(json.load(sys.stdin)["merchant_order"])')

for _ in $(seq 150); do
  "$bin" orders show "$order" --json "${cfg[@]}" 2>/dev/null | grep -q '"released_at": "' && break; sleep 0.2
done
"$bin" orders show "$order" --json "${cfg[@]}" | grep -q '"released_at": "' \
  || { echo "merchant order $order was not released once paid"; tail -20 "$work/serve.log"; exit 1; }
echo "checkout: ok (merchant order $order released; screenshots in $shots)"
