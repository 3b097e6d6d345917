/**
 * The web console: Preact pages built by Vite into console/dist, served by the gateway at /console
 * (src/http/consoleStatic.ts). Building it builds the operators' app too (console/admin, into console/admin/dist,
 * served at /admin), so `npm run build:console` and `make build` make both.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, defineConfig, type Plugin } from 'vite';

const root = path.dirname(fileURLToPath(import.meta.url));

/** After the console's bundle is written, the operators' app from its own configuration (its own base and output). */
function alsoBuildAdmin(): Plugin {
  return {
    name: 'switchyard-build-admin',
    apply: 'build',
    async closeBundle() {
      await build({ configFile: path.join(root, 'admin', 'vite.config.mts'), logLevel: 'warn' });
    },
  };
}

export default defineConfig({
  root,
  base: '/console/',
  publicDir: path.join(root, 'public'),
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  plugins: [alsoBuildAdmin()],
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
