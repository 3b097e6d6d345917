/** Structured JSON logs (pino). Secrets are never logged: no request headers or bodies, keys only by display prefix. */
import pino, { type Logger } from 'pino';

export function createLogger(level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    level,
    base: undefined,
    redact: { paths: ['authorization', '*.authorization', 'api_key', '*.api_key', 'headers'], censor: '[redacted]' },
  });
}
