// Drives a fresh pointhook sandbox through the official Node SDK (npm
// `mercadopago`, the version `.ci/run` pins), as a tester's first minutes
// would: card tokens of the platform's test cards and a payment with each
// documented test cardholder name coming to its documented outcome; the
// Point device every account starts with, listed, and an intent opened on
// it; one Orders API order created and read. Run by
// `crates/sandbox/tests/sandbox/sdk/node.rs`.
//
// The SDK takes its base URL from its own configuration class
// (`AppConfig.BASE_URL`, https://api.mercadopago.com); the script points
// it at the sandbox there, and changes nothing else of the SDK.
//
// Environment: POINTHOOK_SANDBOX_URL, POINTHOOK_SANDBOX_TOKEN (and
// NODE_PATH to the node_modules holding the SDK). Prints one JSON line of
// what it made; exits 1 with the reason on the first answer that is not
// the platform's (the SDK throws on those).

'use strict';

const { AppConfig } = require('mercadopago/dist/utils/config');
const { MercadoPagoConfig, CardToken, Payment, Point, Order } = require('mercadopago');

// The test cardholder names and the payment each makes (docs/sandbox.md,
// "Test cards").
const OUTCOMES = {
	APRO: ['approved', 'accredited'],
	CONT: ['in_process', 'pending_contingency'],
	OTHE: ['rejected', 'cc_rejected_other_reason'],
	CALL: ['rejected', 'cc_rejected_call_for_authorize'],
	FUND: ['rejected', 'cc_rejected_insufficient_amount'],
	SECU: ['rejected', 'cc_rejected_bad_filled_security_code'],
	EXPI: ['rejected', 'cc_rejected_bad_filled_date'],
	FORM: ['rejected', 'cc_rejected_bad_filled_other'],
};

function check(cond, what) {
	if (!cond) {
		throw new Error(what);
	}
}

async function main() {
	AppConfig.BASE_URL = process.env.POINTHOOK_SANDBOX_URL.replace(/\/$/, '');
	const client = new MercadoPagoConfig({
		accessToken: process.env.POINTHOOK_SANDBOX_TOKEN,
		options: { timeout: 10000, retries: 0 },
	});
	const cardToken = new CardToken(client);
	const payment = new Payment(client);

	// Card tokens, as the SDK's own end-to-end test makes them, and a
	// payment with each.
	const payments = {};
	for (const [holder, [status, detail]] of Object.entries(OUTCOMES)) {
		const token = await cardToken.create({
			body: {
				card_number: '5031433215406351',
				security_code: '123',
				expiration_year: '2030',
				expiration_month: '11',
				cardholder: { name: holder, identification: { type: 'CPF', number: '01234567890' } },
			},
		});
		check(token.status === 'active' && token.last_four_digits === '6351', `token: ${JSON.stringify(token)}`);
		const again = await cardToken.get({ id: token.id });
		check(again.id === token.id && again.cardholder.name === holder, `get the token: ${JSON.stringify(again)}`);
		const made = await payment.create({
			body: {
				transaction_amount: 110.0,
				token: token.id,
				installments: 1,
				payment_method_id: 'master',
				description: 'Point Mini',
				payer: { email: 'test_user_123@testuser.com', identification: { type: 'CPF', number: '01234567890' } },
			},
		});
		check(made.status === status && made.status_detail === detail,
			`${holder}: ${made.status} ${made.status_detail}, not ${status} ${detail}`);
		const got = await payment.get({ id: made.id });
		check(got.status_detail === detail, `${holder}: read back ${JSON.stringify(got)}`);
		payments[holder] = made.id;
	}

	// The device a fresh account has, and an intent on it.
	const point = new Point(client);
	const devices = await point.getDevices({ request: {} });
	check(devices.paging.total >= 1 && devices.devices.length >= 1, `a device: ${JSON.stringify(devices)}`);
	const device = devices.devices[0];
	check(device.operating_mode === 'PDV', `in PDV mode: ${JSON.stringify(device)}`);
	const intent = await point.createPaymentIntent({
		device_id: device.id,
		request: {
			amount: 1500,
			description: 'first intent',
			additional_info: { external_reference: 'node-sdk-intent', print_on_terminal: true },
		},
	});
	check(intent.device_id === device.id, `intent: ${JSON.stringify(intent)}`);
	const found = await point.searchPaymentIntent({ payment_intent_id: intent.id });
	check(found.id === intent.id, `read the intent: ${JSON.stringify(found)}`);

	// One Orders API order on the platform's virtual terminal.
	const orders = new Order(client);
	const order = await orders.create({
		body: {
			type: 'point',
			external_reference: 'node-sdk-order',
			transactions: { payments: [{ amount: '24.00' }] },
			config: { point: { terminal_id: 'NEWLAND_N950__SBX0000001', print_on_terminal: 'no_ticket' } },
		},
	});
	check(order.id.startsWith('ORD') && order.status === 'created', `order: ${JSON.stringify(order)}`);
	const read = await orders.get({ id: order.id });
	check(read.id === order.id && read.external_reference === 'node-sdk-order', `read the order: ${JSON.stringify(read)}`);

	console.log(JSON.stringify({ payments, device: device.id, intent: intent.id, order: order.id }));
}

main().catch((e) => {
	console.error(e && e.stack ? e.stack : e);
	if (e && e.cause) {
		console.error(JSON.stringify(e.cause));
	}
	process.exit(1);
});
