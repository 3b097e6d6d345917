/**
 * Operators' OpenID Connect settings (`admin.oidc`): their defaults, each mistake refused at start-up with the
 * setting, the client secret in no message; and the rule that maps a user's groups to a role.
 */
import { ConfigError } from '../../src/config';
import { parseConfig } from '../../src/services/app';
import { roleOfGroups } from '../../src/services/oidcSignIn';

const MODELS = `providers: { local: { type: mock } }
models:
  - { id: m, kind: chat, routes: [ { provider: local } ] }
`;
const SECRET = 'the-client-secret-never-printed-42';

const withOidc = (oidc: string) => `admin:\n  oidc:\n${oidc.replace(/^/gm, '    ')}\n${MODELS}`;
const BASE = `issuer: https://login.example.com/realms/ops
client_id: switchyard
client_secret: \${OIDC_SECRET}
roles: { sy-admins: admin }`;

function configError(text: string, env: NodeJS.ProcessEnv = { OIDC_SECRET: SECRET }): string {
  try {
    parseConfig(text, 'gw.yaml', env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    expect((e as Error).message).not.toContain(SECRET);
    return (e as Error).message;
  }
  throw new Error('expected a ConfigError, but the configuration was accepted');
}

test('without admin.oidc there is none; with it, the defaults are filled in', () => {
  expect(parseConfig(MODELS, 'gw.yaml', {}).admin).toEqual({ oidc: null });
  expect(parseConfig(withOidc(BASE), 'gw.yaml', { OIDC_SECRET: SECRET }).admin.oidc).toEqual({
    issuer: 'https://login.example.com/realms/ops',
    client_id: 'switchyard',
    client_secret: SECRET,
    label: 'login.example.com',
    redirect_url: null,
    scopes: ['openid', 'email', 'profile'],
    groups_claim: 'groups',
    roles: { 'sy-admins': 'admin' },
    allow_password: true,
  });
});

test('each mistake is refused with the setting that is wrong, and never shows the client secret', () => {
  expect(configError(withOidc(BASE.replace('https://', 'http://')))).toMatch(
    /^gw\.yaml:3:13: admin\.oidc\.issuer: must be https:\/\/ \(http:\/\/ only to a provider on a loopback address: 127\.0\.0\.1, localhost, \[::1\]\)$/,
  );
  expect(configError(withOidc(BASE.replace('sy-admins: admin', 'sy-admins: root')))).toMatch(
    /admin\.oidc\.roles\.sy-admins: must be one of owner, admin, support, viewer$/,
  );
  expect(configError(withOidc(BASE.replace('roles: { sy-admins: admin }', 'roles: {}')))).toMatch(
    /admin\.oidc\.roles: must NOT have fewer than 1 properties$/,
  );
  expect(configError(withOidc(`${BASE}\nscopes: [email, groups]`))).toMatch(
    /admin\.oidc\.scopes: must include openid$/,
  );
  expect(configError(withOidc(`${BASE}\ngroup_claim: roles`))).toMatch(/admin\.oidc: unknown setting 'group_claim'$/);
  expect(configError(withOidc(BASE.replace('client_id: switchyard\n', '')))).toMatch(
    /admin\.oidc: missing required setting 'client_id'$/,
  );
  expect(configError(withOidc(`${BASE}\nallow_password: no thanks`))).toMatch(
    /admin\.oidc\.allow_password: must be boolean$/,
  );
  expect(configError(withOidc(BASE), {})).toMatch(
    /admin\.oidc\.client_secret: environment variable OIDC_SECRET is not set$/,
  );
  // a secret that breaks a rule is named by its setting, never shown
  expect(configError(withOidc(BASE.replace('client_secret: ${OIDC_SECRET}', `client_secret: [${SECRET}]`)))).toMatch(
    /admin\.oidc\.client_secret: must be string$/,
  );
});

test('HTTP is allowed only to a provider on a loopback address', () => {
  for (const issuer of ['http://127.0.0.1:9000', 'http://localhost:9000/realm', 'http://[::1]:9000'])
    expect(
      parseConfig(withOidc(BASE.replace(/issuer: .*/, `issuer: ${issuer}`)), null, { OIDC_SECRET: 'x' }).admin.oidc
        ?.issuer,
    ).toBe(issuer);
  for (const issuer of ['http://10.0.0.1', 'http://127.0.0.1.example.com', 'ftp://login.example.com'])
    expect(configError(withOidc(BASE.replace(/issuer: .*/, `issuer: ${issuer}`)))).toMatch(/admin\.oidc\.issuer/);
});

test('the role of a user is the most powerful that its groups map to, whatever their order; none maps: null', () => {
  const roles = {
    'sy-owners': 'owner',
    'sy-admins': 'admin',
    'sy-support': 'support',
    'sy-viewers': 'viewer',
  } as const;
  expect(roleOfGroups(['sy-viewers', 'sy-admins', 'sy-support'], roles)).toBe('admin');
  expect(roleOfGroups(['sy-owners', 'sy-viewers'], roles)).toBe('owner');
  expect(roleOfGroups(['sy-viewers', 'sy-owners'], roles)).toBe('owner');
  expect(roleOfGroups(['engineering', 'sy-support'], roles)).toBe('support');
  expect(roleOfGroups(['engineering'], roles)).toBeNull();
  expect(roleOfGroups([], roles)).toBeNull();
  // names of an object's own machinery are groups like any other, mapped to nothing
  expect(roleOfGroups(['constructor', '__proto__', 'toString'], roles)).toBeNull();
});
