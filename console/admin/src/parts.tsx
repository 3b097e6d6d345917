/** Pieces the operators' pages share besides the console's: pages of a cursor-paged list, a confirmation, a result. */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { Alert, Button, Modal, useLoader } from '../../src/components/ui';
import type { Page } from './types';

/**
 * A cursor-paged list: the page at the end of `cursors` (the first page has none), reloaded when `deps` change;
 * `Previous` and `Next` walk the stack.
 */
export function usePaged<P extends Page<unknown>>(load: (cursor: string | undefined) => Promise<P>, deps: unknown[]) {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const page = useLoader(() => load(cursor), [cursor, ...deps]);
  const pager = (
    <Pager
      n={cursors.length + 1}
      busy={page.loading}
      prev={cursors.length > 0 ? () => setCursors(cursors.slice(0, -1)) : null}
      next={page.data?.next_cursor ? () => setCursors([...cursors, page.data!.next_cursor!]) : null}
    />
  );
  const rows = (page.data?.data ?? []) as P['data'];
  return { ...page, rows, pager, reset: () => setCursors([]) };
}

function Pager({
  n,
  busy,
  prev,
  next,
}: {
  n: number;
  busy: boolean;
  prev: (() => void) | null;
  next: (() => void) | null;
}) {
  if (!prev && !next) return null;
  return (
    <div class="pager">
      <span class="muted">Page {n}</span>
      <div class="pager-btns">
        <Button size="sm" disabled={!prev || busy} onClick={() => prev?.()}>
          Previous
        </Button>
        <Button size="sm" disabled={!next || busy} onClick={() => next?.()}>
          Next
        </Button>
      </div>
    </div>
  );
}

/** An action's outcome under the page head: what was done, or why the server refused it (its message, as it is). */
export type Outcome = { kind: 'success' | 'error'; text: string } | null;

export function OutcomeAlert({ outcome, onClose }: { outcome: Outcome; onClose: () => void }) {
  if (!outcome) return null;
  return (
    <div data-testid={outcome.kind === 'error' ? 'action-error' : 'action-done'}>
      <Alert kind={outcome.kind} onClose={onClose}>
        {outcome.text}
      </Alert>
    </div>
  );
}

/** Runs an action and reports its outcome: `done` names what happened, a refusal shows the server's message. */
export function useAction(setOutcome: (o: Outcome) => void) {
  const [busy, setBusy] = useState<string | null>(null);
  const run = async <T,>(name: string, act: () => Promise<T>, done: (r: T) => string): Promise<T | null> => {
    setBusy(name);
    setOutcome(null);
    try {
      const r = await act();
      setOutcome({ kind: 'success', text: done(r) });
      return r;
    } catch (e) {
      setOutcome({ kind: 'error', text: (e as Error).message });
      return null;
    } finally {
      setBusy(null);
    }
  };
  return { busy, run };
}

/** Asks before an action that is not easily undone. */
export function Confirm({
  title,
  children,
  action,
  danger,
  busy,
  onConfirm,
  onClose,
}: {
  title: string;
  children: ComponentChildren;
  action: string;
  danger?: boolean;
  busy?: boolean;
  onConfirm: () => void;
  onClose: () => void;
}) {
  return (
    <Modal
      title={title}
      onClose={onClose}
      footer={
        <>
          <Button variant="ghost" onClick={onClose}>
            Cancel
          </Button>
          <Button variant={danger ? 'danger' : 'primary'} loading={busy} onClick={onConfirm}>
            {action}
          </Button>
        </>
      }
    >
      <div class="modal-text">{children}</div>
    </Modal>
  );
}

/** Saves `text` as a file the browser downloads (a batch of codes shown once is not on the server to fetch again). */
export function saveFile(name: string, text: string, type = 'text/csv'): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** A CSV field, quoted when it must be (RFC 4180), and never read as a formula by a spreadsheet. */
export function csvField(v: unknown): string {
  let s = v === null || v === undefined ? '' : String(v);
  if (/^[=+\-@\t\r]/.test(s) && !/^-?\d+(\.\d+)?$/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** JSON as it is, for the parts of a record with no fixed shape (an audit record's before and after, a receipt). */
export function Json({ value }: { value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}
