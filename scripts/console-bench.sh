#!/usr/bin/env bash
# Times each console page on a store of a million deliveries (release
# build), on SQLite and then on PostgreSQL: seeds the store with SQL
# (deliveries over 22 hours, their jobs with some dead, decisions and
# events, orders, API calls, held reviews, a day of chart samples), starts
# pointhook on it, signs in, and prints the median of 5 requests per page.
# Usage: scripts/console-bench.sh [sqlite|postgres|both] (default both);
# POSTGRES (default postgres://postgres@127.0.0.1:5432/postgres) is where
# a database `console_bench` is made and dropped.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-both}
pg=${POSTGRES:-postgres://postgres@127.0.0.1:5432/postgres}
cargo build --release --quiet
bin=$PWD/target/release/pointhook
work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
now=$(($(date +%s) * 1000))
n=1000000

seed_sql() {  # $1: sqlite or postgres
  local series blob
  if [ "$1" = sqlite ]; then
    series="WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < @N@) SELECT i FROM s"
    blob="randomblob(32)"
  else
    series="SELECT generate_series(1, @N@) AS i"
    blob="sha256(i::text::bytea)"
  fi
  local gen="${series/@N@/$n}" half="${series/@N@/$((n / 2))}" day="${series/@N@/1440}"
  cat <<SQL
INSERT INTO deliveries (received_at, account, kind, topic, resource_id, query, headers, body,
    remote_addr, fingerprint, signature, job_key)
SELECT $now - ($n - i) * 80, 'default',
       CASE WHEN i % 500 = 0 THEN 4 WHEN i % 3 = 0 THEN 2 ELSE 1 END,
       CASE WHEN i % 2 = 0 THEN 'payment' ELSE 'merchant_order' END,
       CAST(1000000000 + i / 2 AS TEXT), 'topic=payment', '{}', NULL, '127.0.0.1', $blob, 0,
       CASE WHEN i % 2 = 0 THEN 'payment:' ELSE 'merchant_order:' END || CAST(1000000000 + i / 2 AS TEXT)
FROM ($gen) g;
INSERT INTO jobs (account, job_key, kind, resource_id, state, attempts, run_at, last_error,
    created_at, updated_at, work)
SELECT 'default', CASE WHEN i % 2 = 0 THEN 'payment:' ELSE 'merchant_order:' END || CAST(1000000000 + i AS TEXT),
       CASE WHEN i % 2 = 0 THEN 1 ELSE 2 END, CAST(1000000000 + i AS TEXT),
       CASE WHEN i % 1000 = 0 THEN 3 WHEN i % 5000 = 1 THEN 0 ELSE 2 END,
       CASE WHEN i % 1000 = 0 THEN 12 ELSE 1 END, $now - ($n / 2 - i) * 160,
       CASE WHEN i % 1000 = 0 THEN 'after 12 attempts: payment ' || i || ': the platform answered 500: boom' END,
       $now - ($n / 2 - i) * 160, $now - ($n / 2 - i) * 160, NULL
FROM ($half) g;
INSERT INTO orders (account, order_id, total_amount, paid_amount, released_at, blocked_at, at_risk_at, updated_at)
SELECT 'default', CAST(1000000000 + i AS TEXT), '100.00', '100.00',
       CASE WHEN i % 50 <> 0 THEN $now - ($n / 2 - i) * 160 END,
       CASE WHEN i % 50 = 0 THEN $now - ($n / 2 - i) * 160 END,
       CASE WHEN i % 2000 = 1 THEN $now - ($n / 2 - i) * 160 END, $now
FROM ($half) g WHERE i % 2 = 1;
INSERT INTO decisions (account, subject, key, event_type, event_id, job_id, created_at)
SELECT 'default', 'merchant_order:' || CAST(1000000000 + i AS TEXT), 'order.released',
       'order.released', 'evt_' || i, i, $now - ($n / 2 - i) * 160
FROM ($half) g WHERE i % 2 = 1;
INSERT INTO events (id, account, type, subject, body, job_id, created_at, state, attempts,
    next_attempt_at, last_error, delivered_at)
SELECT 'evt_' || i, 'default', 'order.released', 'merchant_order:' || CAST(1000000000 + i AS TEXT),
       '{"id":"evt_' || i || '","type":"order.released","data":{"merchant_order_id":"' || CAST(1000000000 + i AS TEXT) || '","external_reference":"ref-' || i || '"}}',
       i, $now - ($n / 2 - i) * 160, CASE WHEN i % 3001 = 0 THEN 2 ELSE 1 END, 1,
       $now - ($n / 2 - i) * 160, NULL, $now - ($n / 2 - i) * 160
FROM ($half) g WHERE i % 2 = 1;
INSERT INTO fetches (job_id, account, endpoint, resource_id, status, elapsed_ms, at)
SELECT i, 'default', CASE WHEN i % 2 = 0 THEN 'payment' ELSE 'merchant_order' END,
       CAST(1000000000 + i AS TEXT), 200, 12, $now - ($n / 2 - i) * 160
FROM ($half) g;
INSERT INTO fraud_reviews (account, job_key, alert, merchant_order, payment, reason, state, created_at)
SELECT 'default', 'fraud:' || CAST(1000000000 + i AS TEXT) || ':' || CAST(2000000000 + i AS TEXT),
       'fraud_alert:' || CAST(1000000000 + i AS TEXT) || ':' || CAST(2000000000 + i AS TEXT),
       CAST(1000000000 + i AS TEXT), CAST(2000000000 + i AS TEXT), 'the alert is not authenticated', 1, $now
FROM ($half) g WHERE i <= 5;
INSERT INTO samples (minute, instance, series, value)
SELECT $now - $now % 60000 - i * 60000, 'bench', 'notifications.ipn', 700 FROM ($day) g;
INSERT INTO samples (minute, instance, series, value)
SELECT $now - $now % 60000 - i * 60000, 'bench', 'ack.p99_us', 1600 FROM ($day) g;
INSERT INTO samples (minute, instance, series, value)
SELECT $now - $now % 60000 - i * 60000, 'bench', 'decisions', 350 FROM ($day) g;
SQL
}

run() {  # $1: sqlite or postgres
  local store cfg=$work/$1.toml
  if [ "$1" = sqlite ]; then
    store="path = \"$work/bench.db\""
  else
    psql -q "$pg" -c 'DROP DATABASE IF EXISTS console_bench' -c 'CREATE DATABASE console_bench'
    store="url = \"${pg%/*}/console_bench\""
  fi
  cat >"$cfg" <<TOML
[server]
listen = "127.0.0.1:18380"
[storage]
$store
[api]
base_url = "http://127.0.0.1:9"
[worker]
enabled = false
[admin]
listen = "127.0.0.1:18381"
token = "console-bench-admin-token-0123456789"
[reconcile]
enabled = false
[[accounts]]
name = "default"
access_token = "t"
TOML
  "$bin" migrate --config "$cfg" >/dev/null
  local t0=$SECONDS
  if [ "$1" = sqlite ]; then
    seed_sql sqlite | sqlite3 "$work/bench.db"
  else
    seed_sql postgres | psql -q "${pg%/*}/console_bench"
    psql -q "${pg%/*}/console_bench" -c 'VACUUM ANALYZE'
  fi
  echo "$1: seeded in $((SECONDS - t0)) s"
  printf 'a long enough password\n' >"$work/pw"
  "$bin" operators add bench --password-file "$work/pw" --config "$cfg" >/dev/null
  RUST_LOG=warn "$bin" serve --config "$cfg" 2>"$work/$1.log" &
  pid=$!
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:18381/login" && break; sleep 0.1; done
  local base=http://127.0.0.1:18381 jar=$work/jar
  local csrf
  csrf=$(curl -s -c "$jar" "$base/login" | sed -n 's/.*name="csrf" value="\([^"]*\)".*/\1/p')
  curl -s -b "$jar" -c "$jar" -o /dev/null "$base/login" \
    --data-urlencode name=bench --data-urlencode 'password=a long enough password' \
    --data-urlencode "csrf=$csrf"
  for page in / "/orders" "/orders?state=blocked" "/orders?state=at_risk" \
      "/orders/1000000001" "/search?q=1000000001" "/search?q=ref-1001" \
      "/deliveries" "/deliveries?kind=reconcile" "/deliveries?topic=nothing-has-this" \
      "/deliveries/500000" "/jobs" "/jobs?state=done" "/jobs?state=done&kind=chargeback" \
      "/jobs/1000" "/events" "/events?state=delivered" "/events?state=dead" "/events/evt_1001" \
      "/fraud-reviews/1" "/audit" "/health"; do
    local times=()
    for _ in 1 2 3 4 5; do
      times+=("$(curl -s -b "$jar" -o /dev/null -w '%{http_code} %{time_total}' "$base$page")")
    done
    printf '%s\n' "${times[@]}" | sort -k2 -n | sed -n 3p | awk -v p="$page" '{printf "%-40s %s %6.1f ms\n", p, $1, $2 * 1000}'
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
  [ "$1" = postgres ] && psql -q "$pg" -c 'DROP DATABASE console_bench'
  return 0
}

case $which in
  sqlite|postgres) run "$which" ;;
  both) run sqlite; run postgres ;;
esac
