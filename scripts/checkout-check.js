// Pays a Checkout Pro preference on the sandbox's checkout page in
// headless Chromium with JavaScript off, as a buyer would: declined (OTHE),
// pending (CONT), then approved (APRO), each time sent back to the shop's
// back URL with the platform's query. Run by scripts/checkout-browser.sh
// with the preference's init_point, the screenshot folder and the shop's
// URL; prints one JSON line: the merchant order and the payments.
const { chromium } = require('playwright-core');
const [initPoint, shots, shop] = process.argv.slice(2);

function check(ok, what) {
  if (!ok) throw new Error(what);
}

(async () => {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 390, height: 844 } });
  const page = await context.newPage();
  const seen = [];
  for (const [holder, status, back] of [['OTHE', 'rejected', 'failure'], ['CONT', 'in_process', 'pending'],
                                        ['APRO', 'approved', 'success']]) {
    await page.goto(initPoint);
    check(await page.locator('#pay').isVisible(), `no pay button at ${initPoint}`);
    if (holder === 'OTHE') await page.screenshot({ path: `${shots}/checkout.png`, fullPage: true });
    await page.getByLabel("Cardholder's name (the test outcome)").fill(holder);
    await Promise.all([page.waitForURL(`${shop}/shop/${back}/?**`), page.locator('#pay').click()]);
    const url = new URL(page.url());
    const q = Object.fromEntries(url.searchParams);
    for (const k of ['collection_id', 'collection_status', 'payment_id', 'status', 'external_reference', 'payment_type',
                     'merchant_order_id', 'preference_id', 'site_id', 'processing_mode', 'merchant_account_id']) {
      check(k in q, `${holder}: ${k} missing from ${page.url()}`);
    }
    check(q.status === status && q.collection_status === status, `${holder}: ${page.url()}`);
    await page.screenshot({ path: `${shots}/back-${back}.png`, fullPage: true });
    seen.push(q);
  }
  check(seen.every((q) => q.merchant_order_id === seen[0].merchant_order_id), 'one merchant order');
  await browser.close();
  console.log(JSON.stringify({ merchant_order: seen[0].merchant_order_id, payments: seen.map((q) => q.payment_id) }));
})().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
