#!/usr/bin/env bash
# Renders the admin status page in headless Chromium (Debian's package,
# driven by playwright-core from npm), checks what it shows, and clicks the
# retry button of a dead job. Installs what is missing; stops what it starts.
# Writes a screenshot to ${SHOT:-target/status-page.png}.
set -euo pipefail
cd "$(dirname "$0")/.."
shot=${SHOT:-$PWD/target/status-page.png}

if ! command -v chromium >/dev/null; then
  apt-get update -qq && apt-get install -y -qq chromium >/dev/null
fi
cargo build --quiet
bin=$PWD/target/debug/pointhook

work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

token=status-page-check-0123456789abcdef
cat >"$work/pointhook.toml" <<EOF
[server]
listen = "127.0.0.1:0"
[storage]
path = "$work/pointhook.db"
[api]
# Nothing listens here: the job fails and, with one attempt, is dead.
base_url = "http://127.0.0.1:9"
timeout_secs = 1
[worker]
max_attempts = 1
[admin]
listen = "127.0.0.1:0"
token = "$token"
[[accounts]]
name = "default"
access_token = "t"
EOF

"$bin" serve --config "$work/pointhook.toml" --log-format json 2>"$work/log" &
pid=$!
for _ in $(seq 100); do grep -q '"admin API serving"' "$work/log" 2>/dev/null && break; sleep 0.1; done
listen=$(grep '"pointhook serving"' "$work/log" | sed 's/.*"listen":"\([^"]*\)".*/\1/')
admin=$(grep '"admin API serving"' "$work/log" | sed 's/.*"listen":"\([^"]*\)".*/\1/')
curl -fsS -X POST "http://$listen/notifications?topic=merchant_order&id=777" >/dev/null

job=
for _ in $(seq 100); do
  job=$("$bin" jobs list --state dead --json --config "$work/pointhook.toml" | sed -n 's/.*"id": \([0-9]*\).*/\1/p' | head -1)
  [ -n "$job" ] && break; sleep 0.1
done
[ -n "$job" ] || { echo "no dead job to retry"; exit 1; }
calls() { "$bin" jobs show "$job" --json --config "$work/pointhook.toml" | grep -c '"endpoint"'; }
before=$(calls)

(cd "$work" && npm install --silent --no-audit --no-fund playwright-core@1 >/dev/null)
cat >"$work/check.js" <<'EOF'
const { chromium } = require('playwright-core');
const [url, token, shot] = process.argv.slice(2);
(async () => {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ httpCredentials: { username: 'ops', password: token } });
  const page = await context.newPage();
  const res = await page.goto(url);
  if (res.status() !== 200) throw new Error(`status page answered ${res.status()}`);
  await page.screenshot({ path: shot, fullPage: true });
  const body = await page.textContent('body');
  for (const text of ['pointhook status', 'writable', 'dead: 1', 'merchant_order:777']) {
    if (!body.includes(text)) throw new Error(`the page does not show "${text}"`);
  }
  await Promise.all([page.waitForNavigation(), page.click('button[id^="retry-"]')]);
  if (!page.url().startsWith(url)) throw new Error(`the retry did not come back to the page: ${page.url()}`);
  console.log('rendered, retry clicked');
  await browser.close();
})().catch((e) => { console.error(e.message); process.exit(1); });
EOF
(cd "$work" && node check.js "http://$admin/" "$token" "$shot")

# The retry re-queued the job: it runs again (one more API call).
for _ in $(seq 100); do [ "$(calls)" -gt "$before" ] && break; sleep 0.1; done
[ "$(calls)" -gt "$before" ] || { echo "the retry did not run the job again"; exit 1; }
echo "status page: ok (screenshot: $shot)"
