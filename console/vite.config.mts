/** The web console: Preact pages built by Vite into console/dist, served by the gateway at /console (src/http/consoleStatic.ts). */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = path.dirname(fileURLToPath(import.meta.url));

export default defineConfig({
  root,
  base: '/console/',
  publicDir: path.join(root, 'public'),
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: path.join(root, 'dist'),
    emptyOutDir: true,
    target: 'es2020',
    sourcemap: false,
    reportCompressedSize: false,
  },
  server: {
    // `npx vite -c console/vite.config.ts` while a gateway runs on :8080 (make run): the API calls are proxied to it.
    proxy: { '/console/api': 'http://127.0.0.1:8080' },
  },
});
