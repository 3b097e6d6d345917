/** Turns the contract validator's (Ajv's) errors into one clear 400 that names the offending parameter. */
import type { ErrorObject } from 'ajv';
import { ApiError, errors } from '../errors';

const COMBINATORS = new Set(['anyOf', 'oneOf', 'if', 'not', 'discriminator']);

/** `/requestBody/messages/0/role` → `messages[0].role`. */
export function paramName(instancePath: string): string | null {
  const parts = instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (['requestBody', 'params', 'query', 'headers', 'path'].includes(parts[0])) parts.shift();
  if (!parts.length) return null;
  return parts.reduce((out, p) => (/^\d+$/.test(p) ? `${out}[${p}]` : out ? `${out}.${p}` : p), '');
}

function describe(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'enum':
      return `must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'const':
      return `must be ${JSON.stringify(p.allowedValue)}`;
    case 'type':
      return `must be of type ${[p.type].flat().join(' or ')}`;
    default:
      return e.message ?? 'is invalid';
  }
}

export function validationError(list: ErrorObject[] | null | undefined): ApiError {
  const all = list ?? [];
  if (!all.length) return errors.invalidRequest('The request is invalid', null);
  // A failed anyOf/oneOf reports each branch first: report the union at its own place instead.
  // A failed anyOf/oneOf reports each branch first. A branch whose type matched the value says what is wrong with
  // it (a constraint at the union's place, or a problem deeper inside); if none matched, report the union's types.
  const union = all.find((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf');
  const specific = all.find((e) => !COMBINATORS.has(e.keyword));
  const matched = union
    ? all.find(
        (e) =>
          !COMBINATORS.has(e.keyword) &&
          (e.instancePath === union.instancePath
            ? e.keyword !== 'type'
            : e.instancePath.startsWith(`${union.instancePath}/`)),
      )
    : undefined;
  const chosen =
    union && specific && specific.instancePath === union.instancePath && specific.keyword === 'type'
      ? (matched ?? union)
      : (specific ?? all[0]);
  const at = chosen.instancePath;
  if (chosen.keyword === 'required') {
    const missing = (chosen.params as { missingProperty: string }).missingProperty;
    const param = paramName(`${at}/${missing}`);
    return errors.invalidRequest(`Missing required parameter: '${param}'.`, param, 'missing_required_parameter');
  }
  const param = paramName(at);
  let message: string;
  let wrongType = chosen.keyword === 'type';
  if (chosen === union) {
    const kinds = all
      .filter((e) => e.instancePath === at && e.keyword === 'type')
      .flatMap((e) => [(e.params as { type: string }).type].flat());
    wrongType = kinds.length > 0;
    message = kinds.length
      ? `must be of type ${[...new Set(kinds)].join(' or ')}`
      : 'does not match any of the allowed forms';
  } else if (chosen.keyword === 'additionalProperties') {
    const extra = (chosen.params as { additionalProperty: string }).additionalProperty;
    return errors.invalidRequest(
      `Unrecognized request argument supplied: ${extra}`,
      paramName(`${at}/${extra}`),
      'unknown_parameter',
    );
  } else {
    message = describe(chosen);
  }
  if (!param) return errors.invalidRequest(`The request body ${message}`, null);
  return errors.invalidRequest(
    `Invalid value for '${param}': ${message}`,
    param,
    wrongType ? 'invalid_type' : 'invalid_value',
  );
}
