/** The operators' app: the session (signed out, enrolling TOTP, signed in), the sidebar, the page for the path. */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Brand } from '../../src/components/Brand';
import { Icon, type IconName } from '../../src/components/icons';
import { Badge, Link, Loading, NavLinks } from '../../src/components/ui';
import { navigate, useRoute } from '../../src/router';
import { api, http } from './api';
import { allows, AuthContext, known, useAuth, type Auth } from './auth';
import { AccountPage, Accounts } from './pages/Accounts';
import { Audit } from './pages/Audit';
import { Catalog } from './pages/Catalog';
import { Codes } from './pages/Codes';
import { Farming } from './pages/Farming';
import { Keys } from './pages/Keys';
import { Me } from './pages/Me';
import { Operators } from './pages/Operators';
import { Overview } from './pages/Overview';
import { Enrol, SignIn } from './pages/SignIn';
import { ReceiptPage, Usage } from './pages/Usage';
import type { OperatorSession } from './types';

interface NavItem {
  href: string;
  label: string;
  icon: IconName;
  /** The operation the page reads with: the page is listed for the roles that may call it. */
  op: string;
  page: (param: string | undefined) => ComponentChildren;
}

const NAV: NavItem[] = [
  { href: '/', label: 'Overview', icon: 'dashboard', op: 'adminOverview', page: () => <Overview /> },
  {
    href: '/accounts',
    label: 'Accounts',
    icon: 'users',
    op: 'adminListAccounts',
    page: (id) => (id ? <AccountPage id={id} /> : <Accounts />),
  },
  { href: '/keys', label: 'Keys', icon: 'key', op: 'adminListKeys', page: () => <Keys /> },
  { href: '/codes', label: 'Codes', icon: 'gift', op: 'adminListRedemptionCodes', page: () => <Codes /> },
  { href: '/farming', label: 'Farming', icon: 'shield', op: 'adminFarmingReport', page: () => <Farming /> },
  {
    href: '/usage',
    label: 'Usage',
    icon: 'activity',
    op: 'adminListUsage',
    page: (id) => (id ? <ReceiptPage id={id} /> : <Usage />),
  },
  { href: '/catalog', label: 'Catalog', icon: 'box', op: 'adminGetCatalog', page: () => <Catalog /> },
  { href: '/audit', label: 'Audit log', icon: 'list', op: 'adminListAudit', page: () => <Audit /> },
  { href: '/operators', label: 'Operators', icon: 'lock', op: 'adminListOperators', page: () => <Operators /> },
];

/** The page a path shows: "/accounts/42" is the Accounts section with 42. */
function route(path: string): { item: NavItem | null; param?: string; me?: boolean } {
  if (path === '/me') return { item: null, me: true };
  const [, first, param] = path.split('/');
  const item = NAV.find((n) => n.href === `/${first ?? ''}`) ?? null;
  return { item, param: param ? decodeURIComponent(param) : undefined };
}

export function App() {
  const { path } = useRoute();
  const [session, setSession] = useState<OperatorSession | null | undefined>(undefined);

  const signIn = (s: OperatorSession) => {
    http.csrf = s.csrf_token;
    setSession(s);
  };
  const signedOut = () => {
    http.csrf = null;
    setSession(null);
    navigate('/login', { replace: true });
  };
  const signOut = async () => {
    try {
      await api.signOut();
    } catch {
      // the session is gone either way
    }
    signedOut();
  };

  useEffect(() => {
    http.onUnauthorized = signedOut;
    api
      .session()
      .then(signIn)
      .catch(() => setSession(null));
  }, []);

  // Signed-out operators go to /login, those still to enrol to /enrol, signed-in ones away from both.
  useEffect(() => {
    if (session === undefined) return;
    const want = !session ? '/login' : !session.second_factor ? '/enrol' : null;
    if (want && path !== want) navigate(want, { replace: true });
    if (!want && (path === '/login' || path === '/enrol')) navigate('/', { replace: true });
  }, [session, path]);

  const { item, param, me } = route(path);
  useEffect(() => {
    const title =
      path === '/login' ? 'Sign in' : path === '/enrol' ? 'Set up two-factor' : me ? 'Your account' : item?.label;
    document.title = `${title ?? 'Not found'} · Switchyard Admin`;
  }, [path]);

  if (session === undefined) {
    return (
      <div class="boot">
        <Loading label="Loading…" />
      </div>
    );
  }
  if (!session) return <SignIn onDone={signIn} />;
  if (!session.second_factor) return <Enrol session={session} onDone={signIn} onCancel={signOut} />;
  if (path === '/login' || path === '/enrol') return null;

  const auth: Auth = { operator: session.operator, signOut };
  const allowed = item && (!known(item.op) || allows(session.operator.role, item.op));
  return (
    <AuthContext.Provider value={auth}>
      <Shell path={path}>{me ? <Me /> : allowed ? item.page(param) : item ? <Refused /> : <NotFound />}</Shell>
    </AuthContext.Provider>
  );
}

const ROLE_TONE = { owner: 'indigo', admin: 'green', support: 'amber', viewer: 'neutral' } as const;

function Shell({ path, children }: { path: string; children: ComponentChildren }) {
  const { operator, signOut } = useAuth();
  const [open, setOpen] = useState(false);
  useEffect(() => setOpen(false), [path]);
  const section = `/${path.split('/')[1] ?? ''}`;
  const items = NAV.filter((n) => !known(n.op) || allows(operator.role, n.op));
  return (
    <div class={`shell${open ? ' nav-open' : ''}`}>
      <aside class="sidebar">
        <div class="sidebar-top">
          <Link href="/" class="brand-link">
            <Brand />
          </Link>
          <span class="admin-tag">Admin</span>
          <button type="button" class="icon-btn sidebar-close" aria-label="Close menu" onClick={() => setOpen(false)}>
            <Icon name="x" />
          </button>
        </div>
        <NavLinks items={items} current={section} />
        <div class="sidebar-user admin-user">
          <span class="avatar" aria-hidden="true">
            {operator.email.slice(0, 1).toUpperCase()}
          </span>
          <span class="sidebar-who">
            <Link href="/me" class="sidebar-email" title={`${operator.email}: your account`}>
              {operator.email}
            </Link>
            <span data-testid="operator-role">
              <Badge tone={ROLE_TONE[operator.role]}>{operator.role}</Badge>
            </span>
          </span>
          <button type="button" class="icon-btn" title="Sign out" aria-label="Sign out" onClick={() => void signOut()}>
            <Icon name="logout" size={17} />
          </button>
        </div>
      </aside>
      <div class="sidebar-scrim" onClick={() => setOpen(false)} />
      <div class="main-col">
        <header class="topbar">
          <button type="button" class="icon-btn" aria-label="Open menu" onClick={() => setOpen(true)}>
            <Icon name="menu" />
          </button>
          <Link href="/" class="brand-link">
            <Brand />
          </Link>
        </header>
        <main class="content">{children}</main>
      </div>
    </div>
  );
}

function Refused() {
  const { operator } = useAuth();
  return (
    <div class="notfound" data-testid="refused">
      <h1>Not for your role</h1>
      <p>
        This page is not open to the <strong>{operator.role}</strong> role.
      </p>
      <Link href="/" class="btn btn-primary btn-md">
        Go to the overview
      </Link>
    </div>
  );
}

function NotFound() {
  return (
    <div class="notfound">
      <h1>Page not found</h1>
      <p>There is nothing at this address.</p>
      <Link href="/" class="btn btn-primary btn-md">
        Go to the overview
      </Link>
    </div>
  );
}
