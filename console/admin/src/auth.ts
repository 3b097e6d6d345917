/**
 * The signed-in operator, shared with every page, and what their role may do. Who may call what comes from the
 * contract (each operation's `x-switchyard.role`, derived into src/contract.ts), so a page hides or disables what
 * the server would refuse without a list of its own; the server refuses it anyway.
 */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { ENDPOINTS, OPERATOR_ROLES, type Endpoint } from '../../../src/contract';
import type { Operator, OperatorRole } from './types';

export interface Auth {
  operator: Operator;
  signOut: () => Promise<void>;
}

export const AuthContext = createContext<Auth | null>(null);

export function useAuth(): Auth {
  const a = useContext(AuthContext);
  if (!a) throw new Error('useAuth outside a signed-in page');
  return a;
}

/** The least role an operation needs, from the contract; an operation it does not have (yet) needs an owner. */
export function roleFor(operationId: string): OperatorRole {
  const e = (ENDPOINTS as Record<string, Endpoint>)[operationId];
  return e?.caller === 'admin' ? e.role : 'owner';
}

/** True when `role` may call the operation (OPERATOR_ROLES is ordered most powerful first). */
export function allows(role: OperatorRole, operationId: string): boolean {
  return OPERATOR_ROLES.indexOf(role) <= OPERATOR_ROLES.indexOf(roleFor(operationId));
}

/** True when the contract has the operation (the pages of operations still to come are shown to every role). */
export const known = (operationId: string): boolean => operationId in ENDPOINTS;

/** May the signed-in operator call `operationId`? */
export function useCan(): (operationId: string) => boolean {
  const { operator } = useAuth();
  return (op) => allows(operator.role, op);
}
