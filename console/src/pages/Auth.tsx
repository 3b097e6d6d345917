/** Log in and Create account: a form beside a short description of the product. */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../api';
import { Brand } from '../components/Brand';
import { useConsoleConfig } from '../components/config';
import { Icon } from '../components/icons';
import { Alert, Button, Field, focusFirstInvalid, Link } from '../components/ui';
import { usd } from '../format';
import { navigate } from '../router';
import type { PasswordStrength, Session } from '../types';

/**
 * Where to go after log-in: `?next=` when it is a console page of this origin (a path, not `//host` or a scheme, and
 * not a log-in page again), else the dashboard. Anything else could send a user who just logged in to another site.
 */
export function safeNext(next: string | null): string {
  if (!next || !/^\/(?![/\\])[^\s]*$/.test(next)) return '/';
  const path = next.split(/[?#]/)[0];
  return ['/login', '/register', '/forgot', '/reset'].includes(path) ? '/' : next;
}

/** The server's words for a field error, in plain words where the server's are for developers. */
function plain(err: ApiError): string {
  if (err.code === 'disposable_email')
    return 'This looks like a throwaway address. Use one you will keep: the confirmation link and any password reset go there.';
  return err.message;
}

/**
 * How hard the password is to guess, as the server rates it (POST /console/api/password-strength), asked 300 ms after
 * the user stops typing: the same estimate registration applies, so "strong enough" here is never refused there.
 */
export function StrengthMeter({ password, email }: { password: string; email?: string }) {
  const [s, setS] = useState<PasswordStrength | null>(null);
  useEffect(() => {
    if (!password) return setS(null);
    let live = true;
    const t = setTimeout(() => {
      api.passwordStrength(password.slice(0, 200), email || undefined).then(
        (r) => live && setS(r),
        () => live && setS(null),
      );
    }, 300);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [password, email]);
  if (!s || !password) return null;
  const words = ['Very weak', 'Weak', 'Fair', 'Strong', 'Very strong'][s.score];
  const advice = [s.warning, ...s.suggestions].filter(Boolean).join(' ');
  return (
    <div class="strength" data-testid="strength" aria-live="polite">
      <div class="strength-bar" data-score={s.score} aria-hidden="true">
        <span />
        <span />
        <span />
        <span />
        <span />
      </div>
      <span>
        <strong>{words}</strong>
        {s.ok ? ': good to use.' : ': too easy to guess.'} {advice}
      </span>
    </div>
  );
}

function AuthLayout({ children }: { children: ComponentChildren }) {
  return (
    <div class="auth">
      <aside class="auth-aside">
        <Brand light />
        <div class="auth-pitch">
          <h2>One key. Every model.</h2>
          <p>
            An OpenAI-compatible gateway to chat and embedding models from many providers, paid from prepaid credits.
          </p>
          <ul class="auth-points">
            <li>
              <Icon name="key" size={17} /> Keys with quotas, model allow-lists and scopes
            </li>
            <li>
              <Icon name="chart" size={17} /> Every request metered to the token, in USD
            </li>
            <li>
              <Icon name="shield" size={17} /> No card needed to start: free starter credits
            </li>
          </ul>
        </div>
        <pre class="auth-code" aria-hidden="true">
          <span class="c-k">const</span> client = <span class="c-k">new</span> OpenAI({'{'}
          {'\n'} baseURL: <span class="c-s">'{location.origin}/v1'</span>,{'\n'} apiKey: <span class="c-s">'sk-…'</span>
          {'\n'}
          {'}'});
        </pre>
      </aside>
      <main class="auth-main">
        <div class="auth-card">{children}</div>
      </main>
    </div>
  );
}

function PasswordInput({
  id,
  value,
  onInput,
  autocomplete,
  invalid,
}: {
  id: string;
  value: string;
  onInput: (v: string) => void;
  autocomplete: string;
  invalid?: boolean;
}) {
  const [shown, setShown] = useState(false);
  return (
    <div class="input-group">
      <input
        id={id}
        name="password"
        class="input"
        type={(shown ? 'text' : 'password') as 'text'}
        value={value}
        onInput={(e) => onInput(e.currentTarget.value)}
        autocomplete={autocomplete}
        required
        aria-invalid={invalid ? 'true' : undefined}
      />
      <button
        type="button"
        class="input-addon"
        onClick={() => setShown(!shown)}
        aria-label={shown ? 'Hide password' : 'Show password'}
      >
        {shown ? 'Hide' : 'Show'}
      </button>
    </div>
  );
}

export function Login({ onDone }: { onDone: (s: Session) => void }) {
  const query = new URLSearchParams(location.search);
  const changed = query.get('reset') === 'done';
  const [email, setEmail] = useState(query.get('email') ?? '');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const s = await api.login({ email: email.trim(), password });
      onDone(s);
      navigate(safeNext(query.get('next')), { replace: true });
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };

  return (
    <AuthLayout>
      <h1 class="auth-title">Welcome back</h1>
      <p class="auth-sub">Log in to manage your keys, credits and usage.</p>
      {changed && !error && (
        <Alert kind="success">
          <span data-testid="password-changed">Your password was changed. Log in with the new one.</span>
        </Alert>
      )}
      {error && <Alert>{error}</Alert>}
      <form onSubmit={submit} class="form" noValidate={false}>
        <Field label="Email" htmlFor="login-email">
          <input
            id="login-email"
            name="email"
            class="input"
            type="email"
            autocomplete="email"
            required
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
        </Field>
        <Field label="Password" htmlFor="login-password">
          <PasswordInput id="login-password" value={password} onInput={setPassword} autocomplete="current-password" />
        </Field>
        <Button type="submit" variant="primary" loading={busy} class="btn-block">
          Log in
        </Button>
      </form>
      <p class="auth-switch">
        New to Switchyard? <Link href={`/register${location.search}`}>Create an account</Link>
      </p>
      <p class="auth-switch">
        <Link href={`/forgot${email.trim() ? `?email=${encodeURIComponent(email.trim())}` : ''}`}>
          Forgot your password?
        </Link>
      </p>
    </AuthLayout>
  );
}

/** /verify?token=…: the link mailed at registration; works signed in or not. */
export function Verify({ signedIn }: { signedIn: boolean }) {
  const token = new URLSearchParams(location.search).get('token') ?? '';
  const [state, setState] = useState<'working' | 'done' | 'already' | string>('working');
  useEffect(() => {
    api.verifyEmail(token).then(
      (r) => setState(r.already_verified ? 'already' : 'done'),
      (err) => setState((err as Error).message),
    );
  }, [token]);
  return (
    <AuthLayout>
      <h1 class="auth-title">Confirm your address</h1>
      {state === 'working' && <p class="auth-sub">Confirming…</p>}
      {state === 'done' && (
        <p class="auth-sub" data-testid="verified">
          Your address is confirmed, and your sign-up credits are in your account.
        </p>
      )}
      {state === 'already' && (
        <p class="auth-sub" data-testid="verified">
          Your address is already confirmed. Nothing more to do here.
        </p>
      )}
      {!['working', 'done', 'already'].includes(state) && <Alert>{state}</Alert>}
      <p class="auth-switch">
        <Link href={signedIn ? '/' : '/login'}>{signedIn ? 'Go to the dashboard' : 'Log in'}</Link>
      </p>
    </AuthLayout>
  );
}

/** /forgot: asks for a reset link (the same answer whether or not the address has an account). */
export function Forgot() {
  const [email, setEmail] = useState(new URLSearchParams(location.search).get('email') ?? '');
  const [sent, setSent] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      await api.requestPasswordReset(email.trim());
      setSent(true);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <AuthLayout>
      <h1 class="auth-title">Reset your password</h1>
      {sent ? (
        <p class="auth-sub" data-testid="reset-sent">
          If an account has this address, a link to set a new password is on its way (valid for an hour).
        </p>
      ) : (
        <form onSubmit={submit} class="form">
          {error && <Alert>{error}</Alert>}
          <Field label="Email" htmlFor="forgot-email">
            <input
              id="forgot-email"
              name="email"
              class="input"
              type="email"
              autocomplete="email"
              required
              value={email}
              onInput={(e) => setEmail(e.currentTarget.value)}
            />
          </Field>
          <Button type="submit" variant="primary" class="btn-block">
            Send the link
          </Button>
        </form>
      )}
      <p class="auth-switch">
        <Link href="/login">Back to log in</Link>
      </p>
    </AuthLayout>
  );
}

/** /reset?token=…: sets a new password with the mailed link. */
export function Reset() {
  const token = new URLSearchParams(location.search).get('token') ?? '';
  const [password, setPassword] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  // A used or expired link is found as the page opens, not after a new password was typed.
  const [link, setLink] = useState<'checking' | 'ok' | 'dead'>('checking');
  const form = useRef<HTMLFormElement>(null);
  useEffect(() => {
    api.checkPasswordReset(token).then(
      () => setLink('ok'),
      (err) => setLink((err as ApiError).code === 'invalid_token' || !token ? 'dead' : 'ok'),
    );
  }, [token]);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const done = await api.confirmPasswordReset(token, password);
      navigate(`/login?reset=done&email=${encodeURIComponent(done.email)}`, { replace: true });
    } catch (err) {
      const apiErr = err instanceof ApiError ? err : new ApiError(0, (err as Error).message);
      if (apiErr.code === 'invalid_token') return setLink('dead');
      setError(apiErr);
      focusFirstInvalid(form.current);
    }
  };
  if (link === 'dead')
    return (
      <AuthLayout>
        <h1 class="auth-title">This link no longer works</h1>
        <Alert>
          <span data-testid="reset-dead">
            This password-reset link was already used or has expired (links work once, for an hour).
          </span>
        </Alert>
        <Link href="/forgot" class="btn btn-primary btn-md btn-block">
          Send me a new link
        </Link>
        <p class="auth-switch">
          <Link href="/login">Back to log in</Link>
        </p>
      </AuthLayout>
    );
  const fieldError = error?.param === 'password' ? error.message : null;
  return (
    <AuthLayout>
      <h1 class="auth-title">Choose a new password</h1>
      {error && !fieldError && <Alert>{error.message}</Alert>}
      <form onSubmit={submit} class="form" ref={form}>
        <Field label="New password" htmlFor="reset-password" error={fieldError}>
          <PasswordInput
            id="reset-password"
            value={password}
            onInput={setPassword}
            autocomplete="new-password"
            invalid={!!fieldError}
          />
          <StrengthMeter password={password} />
        </Field>
        <Button type="submit" variant="primary" class="btn-block">
          Set the password
        </Button>
      </form>
    </AuthLayout>
  );
}

export function Register({ onDone }: { onDone: (s: Session) => void }) {
  const ref = new URLSearchParams(location.search).get('ref') ?? '';
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState(ref);
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const [captcha, setCaptcha] = useState<string | null>(null);
  const config = useConsoleConfig();
  const form = useRef<HTMLFormElement>(null);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const s = await api.register({
        email: email.trim(),
        password,
        ...(code.trim() ? { referral_code: code.trim() } : {}),
        ...(captcha ? { captcha_token: captcha } : {}),
      });
      onDone(s);
      navigate('/', { replace: true });
    } catch (err) {
      setError(err instanceof ApiError ? err : new ApiError(0, (err as Error).message));
      setBusy(false);
      focusFirstInvalid(form.current);
    }
  };
  const fieldError = (param: string) => (error?.param === param ? plain(error) : null);
  const general = error && !['email', 'password', 'referral_code'].includes(error.param ?? '') ? error.message : null;

  return (
    <AuthLayout>
      <h1 class="auth-title">Create your account</h1>
      <p class="auth-sub" data-testid="register-sub">
        {config ? `${usd(config.starter_credits_usd)} of free starter credits` : 'Free starter credits'} when you
        confirm your address, no card required. Your first key is a minute away.
      </p>
      {ref && (
        <div class="invite">
          <Icon name="gift" size={18} />
          <span>
            You were invited. With this referral code, you and your friend{' '}
            <strong>both get {config ? usd(config.referral_credits_usd) : 'bonus credits'}</strong> when you confirm
            your address.
          </span>
        </div>
      )}
      {general && <Alert>{general}</Alert>}
      <form onSubmit={submit} class="form" ref={form}>
        <Field label="Email" htmlFor="reg-email" error={fieldError('email')}>
          <input
            id="reg-email"
            name="email"
            class="input"
            type="email"
            autocomplete="email"
            required
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
            aria-invalid={fieldError('email') ? 'true' : undefined}
          />
        </Field>
        <Field
          label="Password"
          htmlFor="reg-password"
          hint="At least 10 characters, with letters and digits or symbols. A passphrase is best."
          error={fieldError('password')}
        >
          <PasswordInput
            id="reg-password"
            value={password}
            onInput={setPassword}
            autocomplete="new-password"
            invalid={!!fieldError('password')}
          />
          <StrengthMeter password={password} email={email.trim()} />
        </Field>
        <Field label="Referral code" htmlFor="reg-ref" hint="Optional" error={fieldError('referral_code')}>
          <input
            id="reg-ref"
            name="referral_code"
            class="input mono"
            autocomplete="off"
            spellcheck={false}
            value={code}
            onInput={(e) => setCode(e.currentTarget.value)}
            aria-invalid={fieldError('referral_code') ? 'true' : undefined}
          />
        </Field>
        <Captcha onToken={setCaptcha} />
        <Button type="submit" variant="primary" loading={busy} class="btn-block">
          Create account
        </Button>
      </form>
      <p class="auth-switch">
        Already have an account? <Link href="/login">Log in</Link>
      </p>
    </AuthLayout>
  );
}

/**
 * The registration CAPTCHA, when the gateway asks for one (GET /console/api/config): the provider's widget, loaded
 * from the provider (the page's CSP allows it only then), gives a token sent with the registration.
 */
function Captcha({ onToken }: { onToken: (t: string | null) => void }) {
  const [config, setConfig] = useState<{ provider: 'turnstile' | 'hcaptcha'; site_key: string } | null>(null);
  useEffect(() => {
    api.config().then(
      (c) => setConfig(c.captcha),
      () => setConfig(null),
    );
  }, []);
  useEffect(() => {
    if (!config) return;
    const src =
      config.provider === 'turnstile'
        ? 'https://challenges.cloudflare.com/turnstile/v0/api.js?render=explicit'
        : 'https://js.hcaptcha.com/1/api.js?render=explicit';
    const script = document.createElement('script');
    script.src = src;
    script.async = true;
    script.onload = () => {
      const w = window as unknown as Record<string, { render(el: string, o: object): unknown } | undefined>;
      w[config.provider]?.render('#captcha', {
        sitekey: config.site_key,
        callback: (t: string) => onToken(t),
        'expired-callback': () => onToken(null),
      });
    };
    document.head.appendChild(script);
  }, [config]);
  return config ? <div id="captcha" class="captcha" data-testid="captcha" /> : null;
}
