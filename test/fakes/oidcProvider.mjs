/**
 * A real OpenID provider (oidc-provider, the certified one) for the operators' OIDC sign-in tests, run in a child
 * process because it is an ES module only. Its own development pages are off; in their place a login form that
 * takes the user as the test posts it (`sub`, `email`, `groups` comma-separated): the account's claims are whatever
 * its last sign-in said, so a test moves a user between groups by signing in again with other groups. Consent is
 * not asked (the gateway is a first-party client): every scope asked for is granted.
 *
 *   node test/fakes/oidcProvider.mjs PORT REDIRECT_URI CLIENT_ID CLIENT_SECRET
 *
 * prints `ready <issuer>` once it listens on 127.0.0.1:PORT.
 */
import http from 'node:http';
import Provider from 'oidc-provider';

const [port, redirectUri, clientId, clientSecret] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;

/** The claims of each account, by subject, as its last sign-in posted them. */
const accounts = new Map();

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    },
  ],
  scopes: ['openid', 'email', 'profile', 'groups'],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
  features: { devInteractions: { enabled: false } },
  cookies: { keys: ['test-cookie-key-not-a-secret-0123456789'] },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  async findAccount(_ctx, sub) {
    const a = accounts.get(sub);
    return a && { accountId: sub, claims: () => ({ sub, ...a }) };
  },
  // A first-party client: whatever it asks for is granted, with no consent page.
  async loadExistingGrant(ctx) {
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope(ctx.oidc.requestParamScopes ? [...ctx.oidc.requestParamScopes].join(' ') : 'openid');
    await grant.save();
    return grant;
  },
});

/** The form of an interaction (GET), and its submission (POST): the user it names is signed in. */
async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<form method="post" action="/interaction/${details.uid}">sub, email, groups</form>`);
    return;
  }
  let body = '';
  for await (const chunk of req) body += chunk;
  const form = new URLSearchParams(body);
  const sub = form.get('sub');
  const claims = { email: form.get('email'), email_verified: form.get('email_verified') !== 'false', name: sub };
  if (form.has('groups')) claims.groups = form.get('groups') ? form.get('groups').split(',') : [];
  accounts.set(sub, claims);
  await provider.interactionFinished(req, res, { login: { accountId: sub } }, { mergeWithLastSubmission: false });
}

const callback = provider.callback();
http
  .createServer((req, res) => {
    if (req.url.startsWith('/interaction/'))
      interaction(req, res).catch((e) => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(e));
      });
    else callback(req, res);
  })
  .listen(Number(port), '127.0.0.1', () => console.log(`ready ${issuer}`));
