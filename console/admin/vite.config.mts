/**
 * The operators' app: Preact pages built by Vite into console/admin/dist, served by the gateway at /admin
 * (src/http/consoleStatic.ts). It shares the console's components, router and styles (../src), so both look alike.
 * Built with the console (console/vite.config.mts), or alone: `npx vite build -c console/admin/vite.config.mts`.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = path.dirname(fileURLToPath(import.meta.url));

export default defineConfig({
  root,
  base: '/admin/',
  publicDir: path.join(root, '..', 'public'),
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: path.join(root, 'dist'),
    emptyOutDir: true,
    target: 'es2020',
    sourcemap: false,
    reportCompressedSize: false,
  },
  server: {
    // `npx vite -c console/admin/vite.config.mts` while a gateway runs on :8080: the API calls are proxied to it.
    proxy: { '/admin/api': 'http://127.0.0.1:8080' },
  },
});
