// Drives a pointhook sandbox through the official Node SDK (npm
// `mercadopago`, the version `.ci/run` pins) as an online shop and a
// point-of-sale integration would: a Checkout Pro preference created,
// read, changed and searched; the site's payment methods and
// identification types listed; a store and a point of sale set up, read,
// changed, searched and the POS removed; and, once the preference is paid
// by the sandbox's control API (a buyer on the checkout page), its
// payment read with the fields a shop reads. Run by
// `crates/sandbox/tests/sandbox/sdk/checkout.rs`.
//
// The SDK has no client for stores and points of sale: they are called
// through the SDK's own `RestClient.fetch`, which every SDK client uses.
//
// Environment: POINTHOOK_SANDBOX_URL, POINTHOOK_SANDBOX_TOKEN (and
// NODE_PATH to the node_modules holding the SDK). Prints one JSON line;
// exits 1 with the reason on the first answer that is not the platform's.

'use strict';

const { AppConfig } = require('mercadopago/dist/utils/config');
const { RestClient } = require('mercadopago/dist/utils/restClient');
const { MercadoPagoConfig, Preference, PaymentMethod, IdentificationType, Payment, MerchantOrder } = require('mercadopago');

const BASE = process.env.POINTHOOK_SANDBOX_URL.replace(/\/$/, '');
const TOKEN = process.env.POINTHOOK_SANDBOX_TOKEN;

function check(cond, what) {
	if (!cond) {
		throw new Error(what);
	}
}

// A call through the SDK's request machinery, with the account's token.
function api(path, method, body) {
	const init = { method, headers: { Authorization: `Bearer ${TOKEN}` }, retries: 0 };
	if (body !== undefined) {
		init.body = JSON.stringify(body);
	}
	return RestClient.fetch(path, init);
}

async function control(path, body) {
	const res = await fetch(`${BASE}/sandbox/${path}`, {
		method: 'POST',
		headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
		body: JSON.stringify(body),
	});
	check(res.ok, `control ${path}: ${res.status} ${await res.clone().text()}`);
	return res.json();
}

async function main() {
	AppConfig.BASE_URL = BASE;
	const client = new MercadoPagoConfig({ accessToken: TOKEN, options: { timeout: 10000, retries: 0 } });

	// A preference, as a shop's checkout makes it.
	const preference = new Preference(client);
	const pref = await preference.create({
		body: {
			items: [{ id: 'item-001', title: 'Point Mini', quantity: 2, unit_price: 29.4, currency_id: 'ARS' }],
			payer: { name: 'Test', surname: 'User', email: 'test_user_node@testuser.com' },
			back_urls: { success: 'http://127.0.0.1:9/shop/success', failure: 'http://127.0.0.1:9/shop/failure',
				pending: 'http://127.0.0.1:9/shop/pending' },
			auto_return: 'approved',
			notification_url: 'http://127.0.0.1:9/shop/notifications',
			external_reference: 'SDK-NODE-1',
			payment_methods: { excluded_payment_methods: [{ id: 'amex' }], installments: 3 },
		},
	});
	check(pref.init_point.startsWith(BASE) && pref.sandbox_init_point, `init points: ${JSON.stringify(pref)}`);
	const got = await preference.get({ preferenceId: pref.id });
	check(got.items[0].title === 'Point Mini' && got.external_reference === 'SDK-NODE-1', `read: ${JSON.stringify(got)}`);
	const changed = await preference.update({ id: pref.id, updatePreferenceRequest: { external_reference: 'SDK-NODE-2', items: got.items } });
	check(changed.external_reference === 'SDK-NODE-2', `updated: ${JSON.stringify(changed)}`);
	const found = await preference.search({ options: { external_reference: 'SDK-NODE-2' } });
	check(found.total === 1 && found.elements[0].id === pref.id, `found: ${JSON.stringify(found)}`);

	// The site's catalogs.
	const methods = await new PaymentMethod(client).get();
	check(methods.some((m) => m.id === 'master'), `methods: ${JSON.stringify(methods)}`);
	const types = await new IdentificationType(client).list();
	check(types.some((t) => t.id === 'DNI'), `types: ${JSON.stringify(types)}`);

	// A store and a POS.
	const me = await api('/users/me', 'GET');
	const stores = `/users/${me.id}/stores`;
	const store = await api(stores, 'POST', {
		name: 'Sucursal Node', external_id: 'SUCNODE1',
		location: { street_number: '3039', street_name: 'Caseros', city_name: 'Belgrano', state_name: 'Capital Federal',
			latitude: -32.88, longitude: -68.84 },
	});
	check((await api(`${stores}/${store.id}`, 'GET')).external_id === 'SUCNODE1', 'get the store');
	check((await api(`${stores}/${store.id}`, 'PUT', { name: 'Sucursal Centro' })).name === 'Sucursal Centro', 'update the store');
	check((await api(`${stores}/search?external_id=SUCNODE1`, 'GET')).paging.total === 1, 'search stores');
	const pos = await api('/pos', 'POST', { name: 'Caja 1', fixed_amount: true, external_store_id: 'SUCNODE1',
		external_id: 'SUCNODE1POS1', category: 621102 });
	check(pos.store_id === store.id && pos.qr.image, `pos: ${JSON.stringify(pos)}`);
	check((await api(`/pos/${pos.id}`, 'GET')).external_id === 'SUCNODE1POS1', 'get the POS');
	check((await api(`/pos/${pos.id}`, 'PUT', { name: 'Caja 2' })).name === 'Caja 2', 'update the POS');
	check((await api('/pos?external_store_id=SUCNODE1', 'GET')).results[0].id === pos.id, 'search POS');
	await api(`/pos/${pos.id}`, 'DELETE');
	check((await api('/pos?external_store_id=SUCNODE1', 'GET')).paging.total === 0, 'the POS removed');

	// The preference paid, its payment read.
	const paid = await control(`preferences/${pref.id}/pay`, { cardholder_name: 'APRO', installments: 3 });
	const payment = await new Payment(client).get({ id: paid.payment.id });
	check(payment.status === 'approved' && payment.payer.email === 'test_user_node@testuser.com' && payment.payer.id,
		`payer: ${JSON.stringify(payment.payer)}`);
	const details = payment.transaction_details;
	check(details.total_paid_amount === 58.8 && details.installment_amount === 19.6 && details.net_received_amount > 0,
		`details: ${JSON.stringify(details)}`);
	check(payment.date_approved && payment.money_release_date && payment.date_last_updated && payment.currency_id === 'ARS',
		`dates: ${JSON.stringify(payment)}`);
	check(payment.fee_details[0].type === 'mercadopago_fee' && Number.isInteger(payment.collector_id), 'fees, collector');
	check(String(payment.order.id) === String(paid.merchant_order.id), `order: ${JSON.stringify(payment.order)}`);
	const order = await new MerchantOrder(client).get({ merchantOrderId: payment.order.id });
	check(order.preference_id === pref.id && order.order_status === 'paid', `merchant order: ${JSON.stringify(order)}`);

	console.log(JSON.stringify({ preference: pref.id, store: store.id, pos: pos.id, payment: payment.id, merchant_order: order.id }));
}

main().catch((e) => {
	console.error(e && e.stack ? e.stack : e);
	if (e && e.cause) {
		console.error(JSON.stringify(e.cause));
	}
	process.exit(1);
});
