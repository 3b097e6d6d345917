/** The console's building blocks: buttons, links, cards, fields, alerts, dialogs, empty and loading states. */
import type { ButtonHTMLAttributes, ComponentChildren } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { BASE, navigate } from '../router';
import { Icon, type IconName } from './icons';

export function Link({
  href,
  children,
  class: cls,
  title,
  'aria-current': current,
}: {
  href: string;
  children: ComponentChildren;
  class?: string;
  title?: string;
  'aria-current'?: 'page';
}) {
  return (
    <a
      href={`${BASE}${href === '/' ? '/' : href}`}
      class={cls}
      onClick={(e) => {
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(href);
      }}
      title={title}
      aria-current={current}
    >
      {children}
    </a>
  );
}

type ButtonProps = {
  variant?: 'primary' | 'secondary' | 'ghost' | 'danger';
  size?: 'sm' | 'md';
  loading?: boolean;
  icon?: IconName;
  children?: ComponentChildren;
} & ButtonHTMLAttributes<HTMLButtonElement>;

/** The sidebar's links, the current one marked (the console's and /admin's). */
export function NavLinks({
  items,
  current,
}: {
  items: { href: string; label: string; icon: IconName }[];
  current: string;
}) {
  return (
    <nav class="nav" aria-label="Main">
      {items.map((n) => (
        <Link
          key={n.href}
          href={n.href}
          class={`nav-item${current === n.href ? ' is-active' : ''}`}
          aria-current={current === n.href ? 'page' : undefined}
        >
          <Icon name={n.icon} />
          <span>{n.label}</span>
        </Link>
      ))}
    </nav>
  );
}

export function Button({
  variant = 'secondary',
  size = 'md',
  loading,
  icon,
  children,
  disabled,
  type = 'button',
  class: cls,
  ...rest
}: ButtonProps) {
  return (
    <button
      type={type}
      class={`btn btn-${variant} btn-${size}${loading ? ' is-loading' : ''}${cls ? ` ${cls}` : ''}`}
      disabled={disabled || loading}
      aria-busy={loading ? 'true' : undefined}
      {...rest}
    >
      {loading ? <Spinner small /> : icon ? <Icon name={icon} size={size === 'sm' ? 15 : 17} /> : null}
      {children}
    </button>
  );
}

export function Spinner({ small }: { small?: boolean }) {
  return <span class={`spinner${small ? ' spinner-sm' : ''}`} role="status" aria-label="Loading" />;
}

export function Card({
  title,
  subtitle,
  actions,
  children,
  class: cls,
  pad = true,
}: {
  title?: ComponentChildren;
  subtitle?: ComponentChildren;
  actions?: ComponentChildren;
  children?: ComponentChildren;
  class?: string;
  pad?: boolean;
}) {
  return (
    <section class={`card${cls ? ` ${cls}` : ''}`}>
      {(title || actions) && (
        <header class="card-head">
          <div>
            {title && <h2 class="card-title">{title}</h2>}
            {subtitle && <p class="card-sub">{subtitle}</p>}
          </div>
          {actions && <div class="card-actions">{actions}</div>}
        </header>
      )}
      <div class={pad ? 'card-body' : 'card-flush'}>{children}</div>
    </section>
  );
}

export function PageHeader({
  title,
  description,
  actions,
}: {
  title: string;
  description?: ComponentChildren;
  actions?: ComponentChildren;
}) {
  return (
    <div class="page-head">
      <div>
        <h1>{title}</h1>
        {description && <p class="page-desc">{description}</p>}
      </div>
      {actions && <div class="page-actions">{actions}</div>}
    </div>
  );
}

export function Alert({
  kind = 'error',
  children,
  onClose,
}: {
  kind?: 'error' | 'success' | 'info';
  children: ComponentChildren;
  onClose?: () => void;
}) {
  return (
    <div class={`alert alert-${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      <Icon name={kind === 'success' ? 'check' : kind === 'info' ? 'info' : 'alert'} size={17} />
      <div class="alert-text">{children}</div>
      {onClose && (
        <button type="button" class="alert-close" aria-label="Dismiss" onClick={onClose}>
          <Icon name="x" size={15} />
        </button>
      )}
    </div>
  );
}

export function Field({
  label,
  hint,
  error,
  children,
  htmlFor,
}: {
  label: string;
  hint?: ComponentChildren;
  error?: string | null;
  children: ComponentChildren;
  htmlFor?: string;
}) {
  const noteId = htmlFor ? `${htmlFor}-${error ? 'error' : 'hint'}` : undefined;
  // The control is a child the caller wrote: link it to its error or hint here, once for every form, so a screen
  // reader reads the error with the field and the field says it is invalid.
  useEffect(() => {
    const control = htmlFor ? document.getElementById(htmlFor) : null;
    if (!control) return;
    if (error || hint) control.setAttribute('aria-describedby', noteId!);
    else control.removeAttribute('aria-describedby');
    if (error) control.setAttribute('aria-invalid', 'true');
    else control.removeAttribute('aria-invalid');
  }, [htmlFor, error, !!hint]);
  return (
    <div class={`field${error ? ' has-error' : ''}`}>
      <label class="field-label" for={htmlFor}>
        {label}
      </label>
      {children}
      {error ? (
        <p class="field-error" id={noteId}>
          {error}
        </p>
      ) : hint ? (
        <p class="field-hint" id={noteId}>
          {hint}
        </p>
      ) : null}
    </div>
  );
}

/** After a failed submit: focus the form's first invalid field (once the error is rendered), so the user lands on it. */
export function focusFirstInvalid(form: HTMLElement | null | undefined): void {
  setTimeout(() => form?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus(), 0);
}

const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea, [tabindex]';

/** Keeps Tab and Shift+Tab inside `root`: a modal's page behind it cannot be reached until the modal is closed. */
function trapTab(e: KeyboardEvent, root: HTMLElement | null): void {
  if (e.key !== 'Tab' || !root) return;
  const items = [...root.querySelectorAll<HTMLElement>(FOCUSABLE)].filter(
    (el) => el.tabIndex >= 0 && el.offsetParent !== null,
  );
  if (!items.length) return;
  const first = items[0];
  const last = items[items.length - 1];
  const inside = root.contains(document.activeElement);
  if (e.shiftKey && (document.activeElement === first || !inside)) {
    e.preventDefault();
    last.focus();
  } else if (!e.shiftKey && (document.activeElement === last || !inside)) {
    e.preventDefault();
    first.focus();
  }
}

export function Empty({
  icon,
  title,
  children,
  action,
}: {
  icon: IconName;
  title: string;
  children?: ComponentChildren;
  action?: ComponentChildren;
}) {
  return (
    <div class="empty">
      <div class="empty-icon">
        <Icon name={icon} size={22} />
      </div>
      <h3>{title}</h3>
      {children && <p>{children}</p>}
      {action && <div class="empty-action">{action}</div>}
    </div>
  );
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <div class="loading">
      <Spinner />
      <span>{label}</span>
    </div>
  );
}

export function Skeleton({ w = '100%', h = 14 }: { w?: string; h?: number }) {
  return <span class="skeleton" style={{ width: w, height: `${h}px` }} />;
}

export function Badge({
  tone = 'neutral',
  children,
}: {
  tone?: 'neutral' | 'green' | 'red' | 'amber' | 'indigo';
  children: ComponentChildren;
}) {
  return <span class={`badge badge-${tone}`}>{children}</span>;
}

export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // Not a secure context, or no permission: select a hidden field and copy the old way.
    const ta = document.createElement('textarea');
    ta.value = text;
    ta.setAttribute('readonly', '');
    ta.style.position = 'fixed';
    ta.style.opacity = '0';
    document.body.appendChild(ta);
    ta.select();
    let ok = false;
    try {
      ok = document.execCommand('copy');
    } catch {
      ok = false;
    }
    ta.remove();
    return ok;
  }
}

export function CopyButton({
  text,
  label = 'Copy',
  size = 'sm',
  variant = 'secondary',
}: {
  text: string;
  label?: string;
  size?: 'sm' | 'md';
  variant?: 'primary' | 'secondary' | 'ghost';
}) {
  const [copied, setCopied] = useState(false);
  useEffect(() => {
    if (!copied) return;
    const t = setTimeout(() => setCopied(false), 1800);
    return () => clearTimeout(t);
  }, [copied]);
  return (
    <Button
      variant={variant}
      size={size}
      icon={copied ? 'check' : 'copy'}
      onClick={async () => setCopied(await copyText(text))}
      class={copied ? 'is-copied' : undefined}
    >
      {copied ? 'Copied' : label}
    </Button>
  );
}

export function Toggle({
  checked,
  onChange,
  disabled,
  label,
}: {
  checked: boolean;
  onChange: (v: boolean) => void;
  disabled?: boolean;
  label: string;
}) {
  return (
    <button
      type="button"
      role="switch"
      aria-checked={checked ? 'true' : 'false'}
      aria-label={label}
      class={`toggle${checked ? ' is-on' : ''}`}
      disabled={disabled}
      onClick={() => onChange(!checked)}
    >
      <span class="toggle-knob" />
    </button>
  );
}

export function Modal({
  title,
  onClose,
  children,
  footer,
  width = 520,
  confirmClose,
}: {
  title: string;
  onClose: () => void;
  children: ComponentChildren;
  footer?: ComponentChildren;
  width?: number;
  /** When set, closing (Escape, ×, the backdrop) first asks, with this warning: something on screen would be lost. */
  confirmClose?: string;
}) {
  const ref = useRef<HTMLDivElement>(null);
  const [asking, setAsking] = useState(false);
  const close = useRef(() => {});
  close.current = confirmClose ? () => setAsking(true) : onClose;
  // A layout effect: the focus moves in and Tab is kept inside as the modal appears. After paint (useEffect) left a
  // moment when the modal was on screen and a Tab still went to the page behind it (from where the modal it replaced,
  // unmounting, gave the focus back): the new key's dialog, replacing the creation form, lost Tab that way.
  useLayoutEffect(() => {
    const prev = document.activeElement as HTMLElement | null;
    const first = ref.current?.querySelector<HTMLElement>('input, select, textarea, button:not(.modal-close)');
    first?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') close.current();
      trapTab(e, ref.current);
    };
    document.addEventListener('keydown', onKey);
    document.body.classList.add('has-modal');
    return () => {
      document.removeEventListener('keydown', onKey);
      document.body.classList.remove('has-modal');
      prev?.focus?.();
    };
  }, []);
  return (
    <div class="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && close.current()}>
      <div
        class="modal"
        role="dialog"
        aria-modal="true"
        aria-label={title}
        ref={ref}
        style={{ maxWidth: `${width}px` }}
      >
        <header class="modal-head">
          <h2>{title}</h2>
          <button type="button" class="modal-close" aria-label="Close" onClick={() => close.current()}>
            <Icon name="x" size={18} />
          </button>
        </header>
        {asking && <CloseConfirm warning={confirmClose!} onKeep={() => setAsking(false)} onClose={onClose} />}
        <div class="modal-body">{children}</div>
        {footer && <footer class="modal-foot">{footer}</footer>}
      </div>
    </div>
  );
}

/** "Close anyway?" inside a modal: the focus goes to the safe choice, keeping it open. */
function CloseConfirm({ warning, onKeep, onClose }: { warning: string; onKeep: () => void; onClose: () => void }) {
  const keep = useRef<HTMLButtonElement>(null);
  useEffect(() => keep.current?.focus(), []);
  return (
    <div class="modal-confirm" role="alertdialog" aria-label="Close this window?" data-testid="close-confirm">
      <p>{warning}</p>
      <div class="modal-confirm-actions">
        <button type="button" class="btn btn-secondary btn-sm" ref={keep} onClick={onKeep}>
          Keep it open
        </button>
        <button type="button" class="btn btn-danger btn-sm" onClick={onClose}>
          Close anyway
        </button>
      </div>
    </div>
  );
}

/** Runs an async loader on mount (and when deps change); keeps data, error and loading together. */
export function useLoader<T>(load: () => Promise<T>, deps: unknown[] = []) {
  const [state, setState] = useState<{ data: T | null; error: string | null; loading: boolean }>({
    data: null,
    error: null,
    loading: true,
  });
  const seq = useRef(0);
  const run = async () => {
    const n = ++seq.current;
    setState((s) => ({ ...s, loading: true, error: null }));
    try {
      const data = await load();
      if (n === seq.current) setState({ data, error: null, loading: false });
    } catch (e) {
      if (n === seq.current) setState((s) => ({ ...s, error: (e as Error).message, loading: false }));
    }
  };
  useEffect(() => {
    void run();
  }, deps);
  return { ...state, reload: run, setData: (data: T) => setState((s) => ({ ...s, data })) };
}
