/**
 * Signing in: email and password, then the 6-digit code of the authenticator app (one call to the server, so a
 * sign-in costs one attempt of the limits); an operator who has not set up an authenticator signs in without a code
 * and is sent to enrolment, which shows the secret as a QR code (drawn by the server) and as text.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Brand } from '../../../src/components/Brand';
import { Icon } from '../../../src/components/icons';
import { Alert, Button, Field, Loading } from '../../../src/components/ui';
import { api, ApiError } from '../api';
import type { OperatorSession, SignInMethods, TotpEnrolment } from '../types';

function AuthLayout({ children }: { children: ComponentChildren }) {
  return (
    <div class="auth">
      <aside class="auth-aside">
        <Brand light />
        <div class="auth-pitch">
          <h2>Run the gateway.</h2>
          <p>Accounts, credits, keys, codes, the catalog and its routes, and who changed what: in one place.</p>
          <ul class="auth-points">
            <li>
              <Icon name="shield" size={17} /> Two-factor sign-in for every operator
            </li>
            <li>
              <Icon name="list" size={17} /> Every change recorded in the audit log
            </li>
            <li>
              <Icon name="users" size={17} /> Roles from viewer to owner
            </li>
          </ul>
        </div>
      </aside>
      <main class="auth-main">
        <div class="auth-card">{children}</div>
      </main>
    </div>
  );
}

/** "in 4 minutes (at 14:05)": when a refused sign-in may be tried again. */
export function retryText(seconds: number): string {
  const at = new Date(Date.now() + seconds * 1000).toLocaleTimeString('en-US', {
    hour: '2-digit',
    minute: '2-digit',
    hour12: false,
  });
  const wait = seconds < 90 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`;
  return `in ${wait} (at ${at})`;
}

/** What a refused sign-in says: a 429 says when to try again. */
function refusal(err: unknown): string {
  if (err instanceof ApiError && err.status === 429) {
    return err.retryAfter
      ? `Too many failed sign-ins. Try again ${retryText(err.retryAfter)}.`
      : `Too many failed sign-ins. ${err.message}`;
  }
  if (err instanceof ApiError && err.status === 401) return 'Wrong email, password or code. Check them and try again.';
  return (err as Error).message;
}

function CodeInput({ id, value, onInput }: { id: string; value: string; onInput: (v: string) => void }) {
  return (
    <input
      id={id}
      name="code"
      class="input mono code-input"
      inputMode="numeric"
      autocomplete="one-time-code"
      pattern="[0-9]{6}"
      maxLength={6}
      placeholder="123456"
      required
      value={value}
      onInput={(e) => onInput(e.currentTarget.value.replace(/\D/g, ''))}
    />
  );
}

export function SignIn({ onDone }: { onDone: (s: OperatorSession) => void }) {
  const [step, setStep] = useState<'password' | 'code'>('password');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [methods, setMethods] = useState<SignInMethods | null>(null);
  useEffect(() => {
    api.methods().then(setMethods, () => setMethods(null)); // unknown: offer the password
  }, []);

  const send = async (withCode: boolean) => {
    setBusy(true);
    setError(null);
    try {
      onDone(await api.signIn({ email: email.trim(), password, ...(withCode && { code }) }));
    } catch (err) {
      setError(refusal(err));
      setCode('');
      setBusy(false);
    }
  };

  return (
    <AuthLayout>
      <h1 class="auth-title">Operator sign-in</h1>
      <p class="auth-sub">
        {step === 'password' ? 'Switchyard Admin' : 'Enter the 6-digit code your authenticator app shows.'}
      </p>
      {error && <Alert>{error}</Alert>}
      {methods?.password === false ? null : step === 'password' ? (
        <form
          class="form"
          onSubmit={(e) => {
            e.preventDefault();
            setError(null);
            setStep('code');
          }}
        >
          <Field label="Email" htmlFor="signin-email">
            <input
              id="signin-email"
              class="input"
              type="email"
              autocomplete="username"
              required
              value={email}
              onInput={(e) => setEmail(e.currentTarget.value)}
            />
          </Field>
          <Field label="Password" htmlFor="signin-password">
            <input
              id="signin-password"
              class="input"
              type="password"
              autocomplete="current-password"
              required
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
          </Field>
          <Button type="submit" variant="primary" class="btn-block">
            Continue
          </Button>
        </form>
      ) : (
        <form
          class="form"
          onSubmit={(e) => {
            e.preventDefault();
            void send(true);
          }}
        >
          <Field label="Authentication code" htmlFor="signin-code" hint={email}>
            <CodeInput id="signin-code" value={code} onInput={setCode} />
          </Field>
          <Button type="submit" variant="primary" class="btn-block" loading={busy} disabled={code.length !== 6}>
            Sign in
          </Button>
          <div class="auth-switch auth-row">
            <button type="button" class="link-btn" onClick={() => setStep('password')}>
              Back
            </button>
            <button type="button" class="link-btn" disabled={busy} onClick={() => void send(false)}>
              No authenticator yet? Set one up
            </button>
          </div>
        </form>
      )}
      {methods?.oidc && (
        <a class="btn btn-secondary btn-md btn-block" href={methods.oidc.url}>
          Sign in with {methods.oidc.label}
        </a>
      )}
    </AuthLayout>
  );
}

/** The secret of an otpauth:// URI, in groups of four for typing into an app by hand. */
function secretOf(uri: string): string {
  const secret = new URL(uri).searchParams.get('secret') ?? '';
  return secret.replace(/(.{4})(?=.)/g, '$1 ');
}

export function Enrol({
  session,
  onDone,
  onCancel,
}: {
  session: OperatorSession;
  onDone: (s: OperatorSession) => void;
  onCancel: () => void;
}) {
  const [enrolment, setEnrolment] = useState<TotpEnrolment | null>(null);
  const [code, setCode] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    api.startTotp().then(setEnrolment, (e: Error) => setError(e.message));
  }, []);

  const confirm = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onDone(await api.confirmTotp(code));
    } catch (err) {
      setError(
        err instanceof ApiError && err.code === 'invalid_code'
          ? 'That code is not right. Check the time on your phone, and enter the code the app shows now.'
          : (err as Error).message,
      );
      setCode('');
      setBusy(false);
    }
  };

  return (
    <AuthLayout>
      <h1 class="auth-title">Set up two-factor sign-in</h1>
      <p class="auth-sub">
        Signed in as {session.operator.email}. Scan the code with an authenticator app, then enter the code it shows.
      </p>
      {error && <Alert>{error}</Alert>}
      {!enrolment ? (
        !error && <Loading label="Making your secret…" />
      ) : (
        <form class="form" onSubmit={confirm}>
          <div class="qr">
            <img
              data-testid="totp-qr"
              src={`data:image/svg+xml;charset=utf-8,${encodeURIComponent(enrolment.qr_svg)}`}
              width={200}
              height={200}
              alt="QR code of your new two-factor secret"
            />
          </div>
          <Field label="Or type this key into the app" hint="Time-based, 6 digits, every 30 seconds.">
            <code class="code-inline totp-secret" data-testid="totp-secret">
              {secretOf(enrolment.otpauth_uri)}
            </code>
          </Field>
          <Field label="Code from the app" htmlFor="enrol-code">
            <CodeInput id="enrol-code" value={code} onInput={setCode} />
          </Field>
          <Button type="submit" variant="primary" class="btn-block" loading={busy} disabled={code.length !== 6}>
            Turn on two-factor
          </Button>
        </form>
      )}
      <p class="auth-switch">
        <button type="button" class="link-btn" onClick={onCancel}>
          Sign out
        </button>
      </p>
    </AuthLayout>
  );
}
