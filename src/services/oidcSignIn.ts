/**
 * Who an OpenID sign-in makes the user here (oidc.ts did the protocol): the operator linked to the identity (or of
 * its email, then linked; or a new one, without a password), with the role its groups give at this sign-in. The
 * provider owns the second factor (its MFA policy), so the session is past it, as a password and a TOTP code are.
 * Every OpenID sign-in and every refusal is recorded in the audit log, with the user's groups.
 */
import {
  createOperatorSession,
  findOidcOperator,
  OperatorError,
  publicOperator,
  rememberOperatorAddress,
  roleAllows,
  saveOidcOperator,
  type OidcIdentity,
  type Operator,
  type OperatorSecrets,
} from '../accounts/operators';
import type { OperatorRole } from '../contract';
import { errors, type ApiError } from '../errors';
import type { App } from './app';
import { operatorActor, recordAudit } from './audit';
import { addressKey } from './consoleLimits';
import type { OidcClaims, OidcSignIn } from './oidc';
import { OPERATOR_SESSION_MS, operatorView } from './views';

/** The action OpenID sign-ins and their refusals are recorded as: the callback's operationId. */
const ACTION = 'finishOperatorOidcSignIn';

/**
 * The role a user's groups give: the most powerful of the roles its groups map to (`admin.oidc.roles`), whatever
 * the order of the groups; null when none maps.
 */
export function roleOfGroups(groups: string[], roles: Record<string, OperatorRole>): OperatorRole | null {
  let best: OperatorRole | null = null;
  for (const g of groups) {
    const role = Object.hasOwn(roles, g) ? roles[g] : undefined;
    if (role && (best === null || roleAllows(role, best))) best = role;
  }
  return best;
}

/**
 * Finishes an OpenID sign-in: verifies the provider's answer (`params`, the callback's query) for the browser of
 * `cookie`, and opens a session of the operator it makes the user. A refusal is recorded and thrown (403).
 */
export async function signInWithOidc(
  app: App,
  oidc: OidcSignIn,
  o: { cookie: string | undefined; params: URLSearchParams; address: string },
): Promise<{ operator: Operator; session: { id: string; csrfToken: string } }> {
  const claims = await oidc.verify(app.db, o.cookie, o.params);
  const refuse = refusal(app, claims, o.address);
  if (!claims.email)
    throw await refuse(null, 'no_email', 'The OpenID provider sent no email address: it must release the email claim');
  if (claims.emailVerified === false)
    throw await refuse(null, 'email_unverified', `The OpenID provider says ${claims.email} is not verified`);
  const identity: OidcIdentity = { issuer: claims.issuer, subject: claims.subject, email: claims.email };
  let found: OperatorSecrets | null;
  try {
    found = await findOidcOperator(app.db, identity);
  } catch (e) {
    if (e instanceof OperatorError) throw await refuse(null, 'identity_conflict', `${e.message}: ask an owner`);
    throw e;
  }
  if (found?.disabled) throw await refuse(found, 'operator_disabled', `The operator ${found.email} is disabled here`);
  const role = roleOfGroups(claims.groups, oidc.settings.roles);
  if (!role) throw await refuse(found, 'no_role', noRoleMessage(claims.groups));
  const before = found ? operatorView(publicOperator(found)) : null;
  const operator = await saveOidcOperator(app.db, identity, role, found);
  await rememberOperatorAddress(app.db, operator.id, addressKey(o.address));
  const session = await createOperatorSession(app.db, operator.id, true, OPERATOR_SESSION_MS);
  await recordAudit(app.db, {
    actor: operatorActor(operator),
    address: o.address,
    action: ACTION,
    target: `operator:${operator.id}`,
    before,
    after: { ...operatorView(operator), oidc: oidcPart(claims) },
  });
  return { operator, session };
}

const oidcPart = (c: OidcClaims) => ({ issuer: c.issuer, subject: c.subject, groups: c.groups });

function noRoleMessage(groups: string[]): string {
  const named = groups.length ? `(${groups.slice(0, 20).join(', ')}${groups.length > 20 ? ', …' : ''})` : '(none)';
  return `None of your groups at the OpenID provider ${named} is given a role here: an owner maps groups to roles in admin.oidc.roles`;
}

/** A refusal, recorded in the audit log (as the identity the provider vouched for), as the 403 to throw. */
function refusal(app: App, claims: OidcClaims, address: string) {
  return async (operator: OperatorSecrets | null, why: string, message: string): Promise<ApiError> => {
    await recordAudit(app.db, {
      actor: `oidc:${claims.email ?? claims.subject}`,
      address,
      action: ACTION,
      target: operator ? `operator:${operator.id}` : null,
      before: null,
      after: { refused: why, email: claims.email, ...oidcPart(claims) },
    });
    return errors.oidcForbidden(message, why === 'operator_disabled' ? 'operator_disabled' : `oidc_${why}`);
  };
}
