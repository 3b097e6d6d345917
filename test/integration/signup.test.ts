/**
 * Sign-up that cannot be farmed, with mail through a real SMTP server on loopback (test/fakes/smtp.ts): credits wait
 * for a confirmed address and are paid once per mailbox (`+tag`, Gmail dots); referrals need a confirmed referrer of
 * another mailbox and stop at the monthly cap; disposable domains are refused; the link can be sent again (old ones
 * stop working; 3 an hour); a password reset by mail is single use, expires, ends every session, and tells nobody
 * which addresses have accounts; low-balance alerts are mailed once per crossing.
 */
import http from 'node:http';
import { ConsoleClient, PASSWORD } from '../helpers/console';
import { startGateway, type TestGateway } from '../helpers/app';
import { FakeSmtp } from '../fakes/smtp';
import { verifyLedger } from '../../src/billing/verify';
import { post } from '../../src/db/ledger';
import { checkLowBalances } from '../../src/services/alerts';

const ADMIN_TOKEN = 'admin-token-for-signup-tests-0123';
let smtp: FakeSmtp;
let gw: TestGateway;

beforeAll(async () => {
  smtp = await new FakeSmtp().start();
  gw = await startGateway(
    `
mail: { smtp_url: "${smtp.url}", from: "Switchyard <no-reply@switchyard.test>" }
console: { public_url: "https://console.switchyard.test", registrations_per_address: 0, referrals_per_month: 2, login_attempts_per_email: 100 }
providers: { local: { type: mock } }
models: [ { id: m, kind: chat, routes: [ { provider: local } ] } ]
`,
    { ...process.env, ADMIN_TOKEN },
  );
});

afterAll(async () => {
  await gw?.close();
  await smtp?.close();
});

const unique = () => Math.random().toString(36).slice(2, 10);
const balance = async (c: ConsoleClient) => (await c.get('/console/api/account')).body.balance_usd as string;

/** Registers without opening the link; returns the client. */
async function signUp(email: string, referral?: string): Promise<ConsoleClient> {
  const c = new ConsoleClient(gw.url);
  const r = await c.register(email, PASSWORD, referral, { verify: false });
  if (r.status !== 201) throw new Error(`register ${r.status} ${JSON.stringify(r.body)}`);
  return c;
}

/** Opens the newest confirmation link mailed to `email`, as its owner would. */
async function confirm(email: string): Promise<number> {
  const token = smtp.token(email.toLowerCase(), '/console/verify');
  if (!token) throw new Error(`no link mailed to ${email}`);
  return (await new ConsoleClient(gw.url).post('/console/api/verify-email', { token })).status;
}

test('the confirmation link comes by mail; the starter credits come with it, not before', async () => {
  const email = `ada-${unique()}@example.com`;
  const c = await signUp(email);
  expect(await balance(c)).toBe('0.000000');
  const mail = smtp.messages.at(-1)!;
  expect(mail.to).toEqual([email]);
  expect(mail.from).toBe('no-reply@switchyard.test');
  expect(mail.raw).toMatch(/^Subject: Confirm your Switchyard address$/m);
  expect(await confirm(email)).toBe(200);
  expect(await balance(c)).toBe('1.000000');
  expect((await c.get('/console/api/account')).body.email_verified).toBe(true);
});

test('one mailbox, one starter credit: +tags and Gmail dots do not make another', async () => {
  const name = `farmer${unique()}`;
  const first = await signUp(`${name}@gmail.com`);
  expect(await confirm(`${name}@gmail.com`)).toBe(200);
  expect(await balance(first)).toBe('1.000000');
  for (const alias of [
    `${name}+1@gmail.com`,
    `${name.slice(0, 3)}.${name.slice(3)}@googlemail.com`,
    `${name}+x@GMAIL.com`,
  ]) {
    const c = await signUp(alias);
    expect(await confirm(alias)).toBe(200);
    expect(await balance(c)).toBe('0.000000');
  }
  // elsewhere only the +tag is ignored: dots make another mailbox
  const other = await signUp(`${name}.x@example.com`);
  expect(await confirm(`${name}.x@example.com`)).toBe(200);
  expect(await balance(other)).toBe('1.000000');
  const tagged = await signUp(`${name}.x+2@example.com`);
  expect(await confirm(`${name}.x+2@example.com`)).toBe(200);
  expect(await balance(tagged)).toBe('0.000000');
});

test('referral credits: only once the referred address is confirmed, only from a confirmed referrer of another mailbox, at most referrals_per_month', async () => {
  const referrerEmail = `ref-${unique()}@example.com`;
  const referrer = await signUp(referrerEmail);
  const code = (await referrer.get('/console/api/account')).body.referral_code;
  // an unconfirmed referrer earns nothing, and neither does the account it referred
  const early = await signUp(`early-${unique()}@example.com`, code);
  expect(await confirm(early.account.email)).toBe(200);
  expect(await balance(early)).toBe('1.000000');
  expect(await confirm(referrerEmail)).toBe(200);
  expect(await balance(referrer)).toBe('1.000000');
  // its own mailbox under a +tag: no referral
  const self = await signUp(referrerEmail.replace('@', '+again@'), code);
  expect(await confirm(self.account.email)).toBe(200);
  expect(await balance(self)).toBe('0.000000');
  expect(await balance(referrer)).toBe('1.000000');
  // two real referrals (the cap here), then the third gets the starter credits only
  const referred: ConsoleClient[] = [];
  for (let i = 0; i < 3; i++) referred.push(await signUp(`friend${i}-${unique()}@example.com`, code));
  expect(await balance(referred[0])).toBe('0.000000'); // not before confirming
  for (const c of referred) expect(await confirm(c.account.email)).toBe(200);
  expect(await Promise.all(referred.map(balance))).toEqual(['21.000000', '21.000000', '1.000000']);
  expect(await balance(referrer)).toBe('41.000000');
  expect((await verifyLedger(gw.app.db)).problems).toEqual([]);
});

test('disposable-mail domains are refused at registration', async () => {
  const r = await new ConsoleClient(gw.url).register(`x-${unique()}@mailinator.com`, PASSWORD, undefined, {
    verify: false,
  });
  expect(r.status).toBe(400);
  expect(r.body.error).toMatchObject({ param: 'email', code: 'disposable_email' });
  expect(
    (await new ConsoleClient(gw.url).register(`x-${unique()}@eu.yopmail.com`, PASSWORD, undefined, { verify: false }))
      .status,
  ).toBe(400);
});

test('the link can be sent again: the old one stops working; 3 an hour; a confirmed address is a 409', async () => {
  const email = `again-${unique()}@example.com`;
  const c = await signUp(email);
  const old = smtp.token(email, '/console/verify')!;
  const sent = await c.post('/console/api/verify-email/resend');
  expect(sent).toMatchObject({ status: 202, body: { sent: true } });
  const fresh = smtp.token(email, '/console/verify')!;
  expect(fresh).not.toBe(old);
  expect((await new ConsoleClient(gw.url).post('/console/api/verify-email', { token: old })).status).toBe(400);
  expect((await c.post('/console/api/verify-email/resend')).status).toBe(202);
  expect((await c.post('/console/api/verify-email/resend')).status).toBe(202);
  const limited = await c.post('/console/api/verify-email/resend');
  expect(limited.status).toBe(429);
  expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(await confirm(email)).toBe(200);
  expect(await balance(c)).toBe('1.000000');
  const again = new ConsoleClient(gw.url);
  await again.login(email);
  expect((await again.post('/console/api/verify-email/resend')).status).toBe(409);
});

test('password reset by mail: the same answer for unknown addresses, single use, ends every session, expires', async () => {
  const email = `reset-${unique()}@example.com`;
  const c = await signUp(email);
  const before = smtp.messages.length;
  expect(
    await new ConsoleClient(gw.url).post('/console/api/password-reset', { email: `nobody-${unique()}@example.com` }),
  ).toMatchObject({ status: 202, body: { sent: true } });
  expect(smtp.messages.length).toBe(before); // nothing mailed, nothing told
  expect(
    (await new ConsoleClient(gw.url).post('/console/api/password-reset', { email: email.toUpperCase() })).status,
  ).toBe(202);
  const token = smtp.token(email, '/console/reset')!;
  expect(smtp.messages.at(-1)!.raw).toMatch(/^Subject: Reset your Switchyard password$/m);
  const weak = await new ConsoleClient(gw.url).post('/console/api/password-reset/confirm', {
    token,
    password: 'short',
  });
  expect(weak.status).toBe(400);
  expect(weak.body.error.param).toBe('password');
  // a password refused as too weak leaves the link working: the owner tries another one with the same link
  const token2 = token;
  const done = await new ConsoleClient(gw.url).post('/console/api/password-reset/confirm', {
    token: token2,
    password: 'a brand new horse 7',
  });
  expect(done).toMatchObject({ status: 200, body: { password_reset: true } });
  expect((await c.get('/console/api/session')).status).toBe(401); // the old session ended
  expect((await new ConsoleClient(gw.url).login(email, PASSWORD)).status).toBe(401);
  const back = new ConsoleClient(gw.url);
  expect((await back.login(email, 'a brand new horse 7')).status).toBe(200);
  expect((await back.get('/console/api/account')).body).toMatchObject({
    email_verified: true,
    balance_usd: '1.000000',
  }); // the link reached the address
  expect(
    (
      await new ConsoleClient(gw.url).post('/console/api/password-reset/confirm', {
        token: token2,
        password: 'yet another horse 8',
      })
    ).status,
  ).toBe(400);
  // an expired link
  expect((await new ConsoleClient(gw.url).post('/console/api/password-reset', { email })).status).toBe(202);
  const token3 = smtp.token(email, '/console/reset')!;
  await gw.app
    .db('email_tokens')
    .where({ purpose: 'reset' })
    .whereNull('used_at')
    .update({ expires_at: Date.now() - 1 });
  const expired = await new ConsoleClient(gw.url).post('/console/api/password-reset/confirm', {
    token: token3,
    password: 'yet another horse 8',
  });
  expect(expired.status).toBe(400);
  expect(expired.body.error.code).toBe('invalid_token');
});

test('low-balance alert: set in the console, mailed once when the balance falls below it, again only after it was back above', async () => {
  const email = `alert-${unique()}@example.com`;
  const c = await signUp(email);
  expect(await confirm(email)).toBe(200); // 1 USD
  const set = await c.patch('/console/api/account', { low_balance_usd: '0.50' });
  expect(set.status).toBe(200);
  expect(set.body.low_balance_usd).toBe('0.500000');
  const alerts = () =>
    smtp.messages.filter((m) => m.to.includes(email) && /^Subject: Your Switchyard balance is low$/m.test(m.raw))
      .length;
  const check = () => checkLowBalances(gw.app.db, gw.app.mailer, null);
  await check();
  expect(alerts()).toBe(0); // 1.00 is above 0.50
  const accountId = c.account.id;
  await post(gw.app.db, { accountId, kind: 'adjustment', amountMicros: -700_000, note: 'spent' }); // 0.30 left
  // the SMTP server is away at the first check: not lost, sent at the next one
  const send = gw.app.mailer.send;
  gw.app.mailer.send = async () => {
    throw new Error('connect ECONNREFUSED');
  };
  const failures: string[] = [];
  expect(await checkLowBalances(gw.app.db, gw.app.mailer, null, (e) => failures.push(e.message))).toBe(0);
  gw.app.mailer.send = send;
  expect(failures).toContain('connect ECONNREFUSED');
  await check();
  await check(); // once per crossing, however often it is checked
  expect(alerts()).toBe(1);
  expect(smtp.messages.at(-1)!.text).toContain('Your balance is 0.300000 USD, below the 0.500000 USD');
  await post(gw.app.db, { accountId, kind: 'grant', amountMicros: 1_000_000 }); // back above: armed again
  await check();
  expect(alerts()).toBe(1);
  await post(gw.app.db, { accountId, kind: 'adjustment', amountMicros: -1_000_000, note: 'spent' });
  await check();
  expect(alerts()).toBe(2);
  expect((await c.patch('/console/api/account', { low_balance_usd: null })).body.low_balance_usd).toBeNull();
  expect((await c.patch('/console/api/account', { low_balance_usd: 'ten' })).status).toBe(400);
});

test('the admin sees suspected farming and takes back free credits not yet spent, never paid money', async () => {
  const admin = (method: string, path: string) =>
    fetch(`${gw.url}${path}`, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as any,
    }));
  const boss = `boss-${unique()}@example.com`;
  const referrer = await signUp(boss);
  expect(await confirm(boss)).toBe(200);
  const code = (await referrer.get('/console/api/account')).body.referral_code;
  const puppets: ConsoleClient[] = [];
  for (let i = 0; i < 3; i++) puppets.push(await signUp(`puppet${i}-${unique()}@example.com`, code));
  expect(await confirm(puppets[0].account.email)).toBe(200);
  const report = await admin('GET', '/admin/api/farming');
  expect(report.status).toBe(200);
  expect(report.body.referrers).toContainEqual({
    account_id: referrer.account.id,
    email: boss,
    referred: 3,
    confirmed: 1,
    earned_usd: '20.000000',
  });
  // every account here registered from 127.0.0.1: one network
  expect(report.body.networks.find((n: any) => n.network === '127.0.0.1').accounts).toBeGreaterThanOrEqual(4);
  expect(report.body.unconfirmed.map((u: any) => u.account_id)).toEqual(
    expect.arrayContaining([puppets[1].account.id, puppets[2].account.id]),
  );
  // the referrer: 21 USD of free credits, 5 USD paid by it (a grant stands for a top-up), 2 USD spent
  await post(gw.app.db, {
    accountId: referrer.account.id,
    kind: 'topup',
    amountMicros: 5_000_000,
    ref: `test_topup_${referrer.account.id}`,
  });
  await post(gw.app.db, {
    accountId: referrer.account.id,
    kind: 'usage',
    amountMicros: -2_000_000,
    ref: `test_usage_${referrer.account.id}`,
  });
  const revoked = await admin('POST', `/admin/api/accounts/${referrer.account.id}/revoke-free-credits`);
  expect(revoked.body).toEqual({ account_id: referrer.account.id, revoked_usd: '19.000000', balance_usd: '5.000000' }); // 21 free − 2 spent; the 5 paid stay
  expect((await admin('POST', `/admin/api/accounts/${referrer.account.id}/revoke-free-credits`)).body.revoked_usd).toBe(
    '0.000000',
  );
  expect(await balance(referrer)).toBe('5.000000');
  expect((await admin('POST', '/admin/api/accounts/987654321/revoke-free-credits')).status).toBe(404);
  expect((await verifyLedger(gw.app.db)).problems).toEqual([]);
});

test("mailed links point at console.public_url, never at a host the requester wrote (a reset link to someone else's address)", async () => {
  const email = `victim-${unique()}@example.com`;
  await signUp(email);
  // fetch will not send another Host: node:http will, as any script can
  const status = await new Promise<number>((resolve, reject) => {
    const body = JSON.stringify({ email });
    const req = http.request(
      `${gw.url}/console/api/password-reset`,
      {
        method: 'POST',
        headers: {
          host: 'attacker.example',
          'x-forwarded-host': 'attacker.example',
          'x-forwarded-proto': 'https',
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
  expect(status).toBe(202);
  const mail = smtp.messages.filter((m) => m.to.includes(email)).at(-1)!;
  expect(mail.text).toMatch(/https:\/\/console\.switchyard\.test\/console\/reset\?token=/);
  expect(mail.text).not.toContain('attacker.example');
  expect(smtp.messages.filter((m) => m.to.includes(email))[0].text).toMatch(
    /https:\/\/console\.switchyard\.test\/console\/verify\?token=/,
  );
});

test('confirmations at the same moment: the monthly cap is not overshot, one mailbox gets one starter credit, and nobody gets a 500', async () => {
  const referrerEmail = `racer-${unique()}@example.com`;
  const referrer = await signUp(referrerEmail);
  expect(await confirm(referrerEmail)).toBe(200);
  const code = (await referrer.get('/console/api/account')).body.referral_code;
  // the cap here is 2: four referred accounts confirm at once
  const friends = await Promise.all(
    Array.from({ length: 4 }, (_, i) => signUp(`racefriend${i}-${unique()}@example.com`, code)),
  );
  const statuses = await Promise.all(friends.map((f) => confirm(f.account.email)));
  expect(statuses).toEqual([200, 200, 200, 200]);
  expect(await balance(referrer)).toBe('41.000000'); // 1 + 2 × 20
  expect((await Promise.all(friends.map(balance))).sort()).toEqual(['1.000000', '1.000000', '21.000000', '21.000000']);
  // one mailbox, four spellings, confirmed at once: one starter credit, every address confirmed
  const name = `twin${unique()}`;
  const spellings = [
    `${name}@gmail.com`,
    `${name}+a@gmail.com`,
    `${name.slice(0, 2)}.${name.slice(2)}@gmail.com`,
    `${name}+b@googlemail.com`,
  ];
  const twins = await Promise.all(spellings.map((e) => signUp(e)));
  expect(await Promise.all(spellings.map((e) => confirm(e)))).toEqual([200, 200, 200, 200]);
  expect((await Promise.all(twins.map(balance))).sort()).toEqual(['0.000000', '0.000000', '0.000000', '1.000000']);
  for (const t of twins) expect((await t.get('/console/api/account')).body.email_verified).toBe(true);
  expect((await verifyLedger(gw.app.db)).problems).toEqual([]);
});

test('a confirmation link opened again on a confirmed address says it is confirmed, and pays nothing twice', async () => {
  const email = `twice-${unique()}@example.com`;
  const c = await signUp(email);
  const token = smtp.token(email, '/console/verify')!;
  const first = await new ConsoleClient(gw.url).post('/console/api/verify-email', { token });
  expect(first).toMatchObject({ status: 200, body: { email_verified: true, already_verified: false } });
  const again = await new ConsoleClient(gw.url).post('/console/api/verify-email', { token });
  expect(again).toMatchObject({ status: 200, body: { email_verified: true, already_verified: true } });
  expect(await balance(c)).toBe('1.000000');
  // a made-up token is still refused
  const forged = await new ConsoleClient(gw.url).post('/console/api/verify-email', { token: 'x'.repeat(43) });
  expect(forged.status).toBe(400);
  expect(forged.body.error.code).toBe('invalid_token');
});

test('a reset link can be checked as the page opens without using it up; used and expired ones are refused', async () => {
  const email = `check-${unique()}@example.com`;
  await signUp(email);
  const anon = new ConsoleClient(gw.url);
  expect((await anon.post('/console/api/password-reset', { email })).status).toBe(202);
  const token = smtp.token(email, '/console/reset')!;
  expect(await anon.post('/console/api/password-reset/check', { token })).toMatchObject({
    status: 200,
    body: { valid: true },
  });
  expect((await anon.post('/console/api/password-reset/check', { token })).status).toBe(200); // not used up
  const done = await anon.post('/console/api/password-reset/confirm', { token, password: 'a brand new horse 7' });
  expect(done).toMatchObject({ status: 200, body: { password_reset: true, email } });
  const used = await anon.post('/console/api/password-reset/check', { token });
  expect(used.status).toBe(400);
  expect(used.body.error).toMatchObject({ code: 'invalid_token', param: 'token' });
  expect((await anon.post('/console/api/password-reset', { email })).status).toBe(202);
  const next = smtp.token(email, '/console/reset')!;
  await gw.app
    .db('email_tokens')
    .where({ purpose: 'reset' })
    .whereNull('used_at')
    .update({ expires_at: Date.now() - 1 });
  expect((await anon.post('/console/api/password-reset/check', { token: next })).status).toBe(400);
  // a confirmation token is not a reset token
  const other = `other-${unique()}@example.com`;
  await signUp(other);
  const verifyToken = smtp.token(other, '/console/verify')!;
  expect((await anon.post('/console/api/password-reset/check', { token: verifyToken })).status).toBe(400);
});

test('password strength: the estimate the server applies, as the page shows it; bounded and limited per address', async () => {
  const anon = new ConsoleClient(gw.url);
  const weak = await anon.post('/console/api/password-strength', { password: 'password123' });
  expect(weak.status).toBe(200);
  expect(weak.body.ok).toBe(false);
  expect(weak.body.score).toBeLessThan(3);
  expect(typeof weak.body.warning === 'string' || weak.body.suggestions.length > 0).toBe(true);
  const strong = await anon.post('/console/api/password-strength', { password: 'violet tram sings 1987 quietly' });
  expect(strong.body).toMatchObject({ ok: true });
  expect(strong.body.score).toBeGreaterThanOrEqual(3);
  // the email's words count as known: a password built from the address scores lower than alone
  const own = await anon.post('/console/api/password-strength', {
    password: 'zebulonquartz',
    email: 'zebulonquartz@example.com',
  });
  expect(own.body.ok).toBe(false);
  const long = await anon.post('/console/api/password-strength', { password: 'a'.repeat(201) });
  expect(long.status).toBe(400);
  expect(long.body.error.param).toBe('password');
  let last = 200;
  for (let i = 0; i < 125 && last === 200; i++)
    last = (await anon.post('/console/api/password-strength', { password: `try ${i}` })).status;
  expect(last).toBe(429);
});

test('the console config states the amounts the pages promise and where codes come from', async () => {
  const r = await new ConsoleClient(gw.url).get('/console/api/config');
  expect(r.body).toEqual({
    captcha: null,
    starter_credits_usd: '1.000000',
    referral_credits_usd: '20.000000',
    topup_note: null,
  });
});
