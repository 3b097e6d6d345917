/** The signed-in account, shared with every page. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Account, AccountDetails, Session } from './types';

export interface Auth {
  account: Account;
  /** GET /account: balance, referral link, totals (null until loaded). */
  details: AccountDetails | null;
  refresh: () => Promise<void>;
  signIn: (s: Session) => void;
  signOut: () => Promise<void>;
}

export const AuthContext = createContext<Auth | null>(null);

export function useAuth(): Auth {
  const a = useContext(AuthContext);
  if (!a) throw new Error('useAuth outside a signed-in page');
  return a;
}
