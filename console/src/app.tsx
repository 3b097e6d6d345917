/** The shell: the session, the account shown in the sidebar, the page for the current path. */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, setCsrf, setUnauthorizedHandler } from './api';
import { Icon, type IconName } from './components/icons';
import { Link, Loading, NavLinks } from './components/ui';
import { usd } from './format';
import { currentPath, navigate, useRoute } from './router';
import { useConsoleConfig } from './components/config';
import type { Account, AccountDetails, Session } from './types';
import { AuthContext, useAuth, type Auth } from './auth';
import { Brand } from './components/Brand';
import { Dashboard } from './pages/Dashboard';
import { Keys } from './pages/Keys';
import { Forgot, Login, Register, Reset, Verify } from './pages/Auth';
import { TopUp } from './pages/TopUp';
import { Usage } from './pages/Usage';

const PUBLIC = ['/login', '/register', '/forgot', '/reset'];

export function App() {
  const { path } = useRoute();
  const [account, setAccount] = useState<Account | null | undefined>(undefined);
  const [details, setDetails] = useState<AccountDetails | null>(null);

  const refresh = async () => {
    try {
      setDetails(await api.account());
    } catch {
      // the page that asked shows its own error; the sidebar keeps the last balance
    }
  };

  const signIn = (s: Session) => {
    setCsrf(s.csrf_token);
    setAccount(s.account);
    setDetails(s.account);
  };

  const signOut = async () => {
    try {
      await api.logout();
    } catch {
      // the session is gone either way
    }
    setCsrf(null);
    setAccount(null);
    setDetails(null);
    navigate('/login');
  };

  useEffect(() => {
    setUnauthorizedHandler(() => {
      setCsrf(null);
      setAccount(null);
      setDetails(null);
      navigate(`/login?next=${encodeURIComponent(currentPath() + location.search)}`, { replace: true });
    });
    api
      .session()
      .then(signIn)
      .catch(() => setAccount(null));
  }, []);

  // Redirects: signed-out visitors to /login, signed-in ones away from the login and register pages.
  useEffect(() => {
    if (account === undefined || path === '/verify') return; // the mailed link works signed in or not
    // the page asked for comes back after log-in (Login checks it is a console path)
    if (!account && !PUBLIC.includes(path))
      navigate(
        path === '/' && !location.search ? '/login' : `/login?next=${encodeURIComponent(path + location.search)}`,
        {
          replace: true,
        },
      );
    if (account && PUBLIC.includes(path)) navigate('/', { replace: true });
  }, [account, path]);

  useEffect(() => {
    const titles: Record<string, string> = {
      '/': 'Dashboard',
      '/keys': 'API keys',
      '/topup': 'Top up',
      '/usage': 'Usage',
      '/login': 'Log in',
      '/register': 'Create account',
      '/verify': 'Confirm your address',
      '/forgot': 'Reset your password',
      '/reset': 'Choose a new password',
    };
    document.title = `${titles[path] ?? 'Not found'} · Switchyard`;
  }, [path]);

  if (account === undefined) {
    return (
      <div class="boot">
        <Loading label="Loading your console…" />
      </div>
    );
  }

  if (path === '/verify') return <Verify signedIn={!!account} />;
  if (!account) {
    if (path === '/register') return <Register onDone={signIn} />;
    if (path === '/forgot') return <Forgot />;
    if (path === '/reset') return <Reset />;
    return <Login onDone={signIn} />;
  }
  if (PUBLIC.includes(path)) return null;

  const auth: Auth = { account, details, refresh, signIn, signOut };
  let page: ComponentChildren;
  switch (path) {
    case '/':
      page = <Dashboard />;
      break;
    case '/keys':
      page = <Keys />;
      break;
    case '/topup':
      page = <TopUp />;
      break;
    case '/usage':
      page = <Usage />;
      break;
    default:
      page = <NotFound />;
  }
  return (
    <AuthContext.Provider value={auth}>
      <Shell path={path}>{page}</Shell>
    </AuthContext.Provider>
  );
}

const NAV: { href: string; label: string; icon: IconName }[] = [
  { href: '/', label: 'Dashboard', icon: 'dashboard' },
  { href: '/keys', label: 'API keys', icon: 'key' },
  { href: '/usage', label: 'Usage', icon: 'chart' },
  { href: '/topup', label: 'Top up', icon: 'wallet' },
];

function Shell({ path, children }: { path: string; children: ComponentChildren }) {
  const { account, details, signOut, refresh } = useAuth();
  const [open, setOpen] = useState(false);
  useEffect(() => {
    setOpen(false);
    void refresh();
  }, [path]);
  const initial = account.email.slice(0, 1).toUpperCase();
  return (
    <div class={`shell${open ? ' nav-open' : ''}`}>
      <aside class="sidebar">
        <div class="sidebar-top">
          <Link href="/" class="brand-link">
            <Brand />
          </Link>
          <button type="button" class="icon-btn sidebar-close" aria-label="Close menu" onClick={() => setOpen(false)}>
            <Icon name="x" />
          </button>
        </div>
        <NavLinks items={NAV} current={path} />
        <div class="sidebar-balance">
          <div class="sidebar-balance-label">Balance</div>
          <div class="sidebar-balance-value" data-testid="sidebar-balance">
            {details ? usd(details.balance_usd) : '—'}
          </div>
          <Link href="/topup" class="sidebar-balance-link">
            Add credits <Icon name="arrowRight" size={14} />
          </Link>
        </div>
        <div class="sidebar-user">
          <span class="avatar" aria-hidden="true">
            {initial}
          </span>
          <span class="sidebar-email" title={account.email}>
            {account.email}
          </span>
          <button type="button" class="icon-btn" title="Log out" aria-label="Log out" onClick={() => void signOut()}>
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
          <span class="topbar-balance">{details ? usd(details.balance_usd) : ''}</span>
        </header>
        <main class="content">
          {details && !details.email_verified && <ConfirmBanner email={details.email} />}
          {children}
        </main>
      </div>
    </div>
  );
}

/** Until the address is confirmed: where the link went, and a way to send it again. */
function ConfirmBanner({ email }: { email: string }) {
  const [state, setState] = useState<'idle' | 'sent' | string>('idle');
  const config = useConsoleConfig();
  const resend = async () => {
    try {
      await api.resendVerification();
      setState('sent');
    } catch (err) {
      setState((err as Error).message);
    }
  };
  return (
    <div class="banner" role="status" data-testid="confirm-banner">
      <span>
        Confirm your address: we sent a link to <strong>{email}</strong>. Your sign-up credits
        {config ? ` (${usd(config.starter_credits_usd)})` : ''} arrive when you open it.
      </span>
      {state === 'sent' ? (
        <span class="muted">Sent again.</span>
      ) : (
        <button type="button" class="btn btn-ghost btn-sm" onClick={() => void resend()}>
          Send the link again
        </button>
      )}
      {state !== 'idle' && state !== 'sent' && <span class="muted">{state}</span>}
    </div>
  );
}

function NotFound() {
  return (
    <div class="notfound">
      <h1>Page not found</h1>
      <p>There is nothing at this address.</p>
      <Link href="/" class="btn btn-primary btn-md">
        Go to the dashboard
      </Link>
    </div>
  );
}
