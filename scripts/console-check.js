// Drives the operator console in headless Chromium; run by
// scripts/console-browser.sh with the admin URL, the screenshot folder
// and the two orders (with their payments) it prepared.
const { chromium } = require('playwright-core');
const [base, shots, order1, pay1, order2, pay2, ref1] = process.argv.slice(2);
const NAME = 'ana';
const PASSWORD = 'a long enough password';

function check(ok, what) {
  if (!ok) throw new Error(what);
}

async function signIn(page) {
  await page.goto(`${base}/`);
  check(page.url().startsWith(`${base}/login`), `not sent to sign in: ${page.url()}`);
  await page.getByLabel('Name').fill(NAME);
  await page.getByLabel('Password').fill(PASSWORD);
  await Promise.all([page.waitForURL(`${base}/`), page.getByRole('button', { name: 'Sign in' }).click()]);
}

// /health read as a person reads it: every line named in a legend, no
// chart text smaller than 9 px or cut by its drawing, no time to the
// millisecond, the window said.
async function healthReads(page, width) {
  await page.goto(`${base}/health`);
  const legends = await page.locator('ul.legend').allTextContents();
  const all = legends.join(' | ');
  check(all.includes('p50') && all.includes('p99'), `/health at ${width} px: no legend for p50 and p99: ${all}`);
  const texts = await page.evaluate(() => Array.from(document.querySelectorAll('svg.chart text')).map((t) => {
    const r = t.getBoundingClientRect();
    const s = t.ownerSVGElement.getBoundingClientRect();
    return { text: t.textContent, h: r.height, inside: r.left >= s.left - 0.5 && r.right <= s.right + 0.5 && r.top >= s.top - 0.5 && r.bottom <= s.bottom + 0.5 };
  }));
  check(texts.length > 0, `/health at ${width} px: no chart text`);
  for (const t of texts) {
    check(t.h >= 9, `/health at ${width} px: "${t.text}" is ${t.h.toFixed(1)} px high`);
    check(t.inside, `/health at ${width} px: "${t.text}" is cut by its chart`);
  }
  const body = await page.locator('main').textContent();
  check(!/\.\d{3}Z/.test(body), `/health at ${width} px shows milliseconds`);
  check(body.includes('(last hour)') || body.includes('(last 6 h)') || body.includes('(last 24 h)'), `/health at ${width} px does not say its window`);
  await page.screenshot({ path: `${shots}/health-${width}.png`, fullPage: true });
}

// An event's page: its attempts grouped under each destination's name.
async function eventNamesDestinations(page, width) {
  await page.goto(`${base}/events`);
  const link = page.locator('a[href^="/events/evt_"]').first();
  check(await link.count() > 0, `/events at ${width} px lists no event`);
  await Promise.all([page.waitForURL(/\/events\/evt_/), link.click()]);
  const main = await page.locator('main').textContent();
  check(main.includes('Delivery attempts, by destination'), `the event page at ${width} px has no attempts by destination`);
  check(!main.includes('the fulfillment URL'), `the event page at ${width} px names "the fulfillment URL"`);
  for (const name of ['default', 'erp']) {
    check(new RegExp(`attempt\\(s\\) at ${name}`).test(main), `the event page at ${width} px has no attempts at ${name}: ${main.slice(0, 600)}`);
  }
  await page.screenshot({ path: `${shots}/event-${width}.png`, fullPage: true });
}

// On the event page just opened: deliver again goes where it failed, not
// to the destination that took it.
async function deliverAgainWhereFailed(page, width) {
  const eventUrl = page.url();
  const erpBefore = (await page.locator('main').textContent()).match(/(\d+) attempt\(s\) at erp/);
  check(erpBefore, `no attempts at erp on ${eventUrl}`);
  const defaultBefore = (await page.locator('main').textContent()).match(/(\d+) attempt\(s\) at default/);
  await Promise.all([page.waitForURL(/done=/), page.getByRole('button', { name: /Deliver again where it gave up or failed/ }).click()]);
  await page.waitForTimeout(2000);
  await page.goto(eventUrl);
  const main = await page.locator('main').textContent();
  const erpAfter = main.match(/(\d+) attempt\(s\) at erp/);
  check(erpAfter && erpAfter[1] === erpBefore[1], `deliver again sent to erp, which took the event: ${erpBefore[1]} then ${erpAfter && erpAfter[1]} attempts`);
  const defaultAfter = main.match(/(\d+) attempt\(s\) at default/);
  check(defaultAfter && Number(defaultAfter[1]) > Number(defaultBefore[1]), `deliver again did not send to default, which failed it`);
  check(main.includes('pending again, same id, at default'), `the audit on the event does not say where it went: ${main.slice(-400)}`);
  await page.screenshot({ path: `${shots}/event-again-${width}.png`, fullPage: true });
}

// A held order found by its external reference (the merchant's own name).
async function foundByReference(page, width) {
  await page.goto(`${base}/`);
  await page.getByLabel('Find an order by any id').fill(ref1);
  await Promise.all([page.waitForURL(new RegExp(`/orders/${order1}`)), page.getByRole('button', { name: 'Find' }).click()]);
  await page.screenshot({ path: `${shots}/found-by-reference-${width}.png`, fullPage: true });
}

async function noSideways(page, path) {
  await page.goto(`${base}${path}`);
  const [scroll, client] = await page.evaluate(() => [
    document.documentElement.scrollWidth,
    document.documentElement.clientWidth,
  ]);
  check(scroll <= client, `${path} scrolls sideways at 390 px: ${scroll} > ${client}`);
}

(async () => {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const page = await phone.newPage();
  await signIn(page);
  await page.screenshot({ path: `${shots}/inbox.png`, fullPage: true });
  await foundByReference(page, 390);
  await eventNamesDestinations(page, 390);

  // Disabled, then enabled here: the recover form keeps the failure's
  // start as its since.
  await page.goto(`${base}/destinations/default`);
  await Promise.all([page.waitForLoadState(), page.locator('#enable-default').click()]);
  await page.goto(`${base}/destinations/default`);
  const since = await page.locator('#since-default').inputValue();
  check(/^\d{4}-\d\d-\d\d/.test(since), `after enable the recover form's since is "${since}"`);
  await page.screenshot({ path: `${shots}/destination-recover-390.png`, fullPage: true });
  await page.goto(`${base}/`);

  // The first held review, found in the inbox: what confirming does, the
  // second confirmation naming the refund, then done.
  const review1 = page.locator('section', { hasText: `merchant order ${order1}` }).first();
  check(await review1.isVisible(), `no held review for order ${order1} in the inbox`);
  const does = await review1.locator('.confirm-does').textContent();
  check(does.includes('refund 240') && does.includes('cannot be undone'), `confirming says: ${does}`);
  await Promise.all([page.waitForLoadState(), review1.getByRole('button', { name: /Confirm/ }).click()]);
  const second = await page.locator('#second-confirmation').textContent();
  check(second.includes('Refund 240'), `the second confirmation says: ${second}`);
  await page.screenshot({ path: `${shots}/confirm.png`, fullPage: true });
  await Promise.all([page.waitForURL(/done=/), page.getByRole('button', { name: /Yes, refund/ }).click()]);
  check((await page.locator('#review-state').textContent()) === 'confirmed', 'the review is not confirmed');
  await page.goto(`${base}/audit`);
  const audit = await page.locator('ul.audit').textContent();
  check(audit.includes(NAME) && audit.includes('confirm'), `the audit does not show who confirmed: ${audit}`);

  // The second, dismissed.
  await page.goto(`${base}/`);
  // Dismissing can release goods: it asks again, naming the order.
  const review2 = page.locator('section', { hasText: `merchant order ${order2}` }).first();
  await Promise.all([page.waitForLoadState(), review2.getByRole('button', { name: /Dismiss/ }).click()]);
  const lift = await page.locator('#second-confirmation').textContent();
  check(lift.includes(`merchant order ${order2}`) && lift.includes('released'), `dismissing asks: ${lift}`);
  await Promise.all([page.waitForURL(/done=/), page.getByRole('button', { name: /Yes, lift the block/ }).click()]);
  check((await page.locator('#review-state').textContent()) === 'dismissed', 'the review is not dismissed');
  // Every review, decided ones too, on a page of its own.
  await page.goto(`${base}/fraud-reviews`);
  const reviews = await page.locator('ul.items').textContent();
  check(reviews.includes('confirmed') && reviews.includes('dismissed'), `/fraud-reviews lists: ${reviews}`);
  await page.screenshot({ path: `${shots}/fraud-reviews-390.png`, fullPage: true });

  // The dead jobs, one group, retried at once.
  await page.goto(`${base}/`);
  const group = page.locator('section.group', { hasText: 'on merchant_order' }).first();
  const button = group.getByRole('button', { name: /Retry all 3/ });
  check(await button.isVisible(), 'no group of 3 dead jobs');
  await Promise.all([page.waitForURL(/done=/), button.click()]);
  const outcome = await page.locator('#outcome').textContent();
  check(outcome.includes('3 of 3 pending again'), `the group retry says: ${outcome}`);

  // An order found by its payment id, with its timeline.
  await page.getByLabel('Find an order by any id').fill(pay2);
  await Promise.all([page.waitForURL(new RegExp(`/orders/${order2}`)), page.getByRole('button', { name: 'Find' }).click()]);
  const timeline = await page.locator('#timeline').textContent();
  for (const text of ['Notification', 'API answer', 'Decision', 'fraud_alert.dismissed']) {
    check(timeline.includes(text), `the timeline lacks ${text}: ${timeline.slice(0, 400)}`);
  }
  check(await page.locator('#timeline .reason').count() > 0, 'no decision on the timeline says why');
  await page.screenshot({ path: `${shots}/order.png`, fullPage: true });

  // No page scrolls sideways on a phone.
  for (const path of ['/', `/orders/${order1}`, '/orders?state=blocked', '/deliveries', '/jobs',
                      '/jobs?state=done', '/events', '/audit', '/health', `/search?q=${pay1}`,
                      '/destinations', '/destinations/default']) {
    await noSideways(page, path);
  }
  await healthReads(page, 390);
  await noSideways(page, '/fraud-reviews');

  // The destination nothing answers is in the inbox, failing.
  await page.goto(`${base}/`);
  const dest = await page.locator('#destinations').textContent();
  check(dest.includes('Destinations that need you'), `the inbox has no destinations: ${dest}`);
  await page.goto(`${base}/destinations/default`);
  await page.screenshot({ path: `${shots}/destination.png`, fullPage: true });

  // An action without the session's CSRF token is refused.
  const forged = await page.request.post(`${base}/jobs/1/retry`, { form: { back: '/' } });
  check(forged.status() === 403, `a form without the token answered ${forged.status()}`);

  // Without JavaScript: sign in, and one action.
  const plain = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 390, height: 844 } });
  const p2 = await plain.newPage();
  await signIn(p2);
  await p2.goto(`${base}/jobs?state=dead`);
  const first = p2.locator('ul.items li').first();
  await Promise.all([p2.waitForURL(/done=/), first.getByRole('button', { name: 'Retry' }).click()]);
  const said = await p2.locator('#outcome').textContent();
  check(said.includes('done'), `the retry without JavaScript says: ${said}`);
  await p2.screenshot({ path: `${shots}/no-javascript.png`, fullPage: true });

  const desk = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const d = await desk.newPage();
  await signIn(d);
  await d.screenshot({ path: `${shots}/inbox-1400.png`, fullPage: true });
  await d.goto(`${base}/orders/${order1}`);
  await d.screenshot({ path: `${shots}/order-desktop.png`, fullPage: true });
  await foundByReference(d, 1400);
  await eventNamesDestinations(d, 1400);
  await deliverAgainWhereFailed(d, 1400);
  await d.goto(`${base}/destinations/default`);
  await d.screenshot({ path: `${shots}/destination-1400.png`, fullPage: true });
  await healthReads(d, 1400);
  await d.goto(`${base}/fraud-reviews`);
  await d.screenshot({ path: `${shots}/fraud-reviews-1400.png`, fullPage: true });
  console.log('console: signed in, confirmed, dismissed (asked twice), listed the reviews, retried a group, searched (by payment and external reference), attempts by destination, deliver again only where it failed, since kept after enable, /health readable at 390 and 1400 px, fits 390 px, works without JavaScript, refuses a forged form');
  await browser.close();
})().catch((e) => { console.error(e.message); process.exit(1); });
