/** A small client-side router for the pages under /console (or /admin: the operators' app shares it). */
import { useEffect, useState } from 'preact/hooks';

/** "/console" or "/admin": Vite's `base` of the app being built, so both apps share this router and its links. */
export const BASE = import.meta.env.BASE_URL.replace(/\/+$/, '');

/** The page path without the base: "/", "/keys", "/login"... */
export function currentPath(): string {
  let p = location.pathname;
  if (p.startsWith(BASE)) p = p.slice(BASE.length);
  p = p.replace(/\/+$/, '');
  return p || '/';
}

const listeners = new Set<() => void>();

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  const url = to.startsWith('/') ? `${BASE}${to === '/' ? '/' : to}` : to;
  if (url === location.pathname + location.search) return;
  if (opts.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  window.scrollTo(0, 0);
  listeners.forEach((l) => l());
}

export function useRoute(): { path: string; query: URLSearchParams } {
  const [, force] = useState(0);
  useEffect(() => {
    const update = () => force((n) => n + 1);
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return { path: currentPath(), query: new URLSearchParams(location.search) };
}
