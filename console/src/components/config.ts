/** GET /console/api/config, asked once per page load and shared: the amounts and words the pages state. */
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import type { ConsoleConfig } from '../types';

let pending: Promise<ConsoleConfig | null> | null = null;

export function useConsoleConfig(): ConsoleConfig | null {
  const [config, setConfig] = useState<ConsoleConfig | null>(null);
  useEffect(() => {
    pending ??= api.config().catch(() => {
      pending = null; // asked again by the next page that needs it
      return null;
    });
    void pending.then(setConfig);
  }, []);
  return config;
}
