import { defineConfig } from 'vite';

// Served by the gateway at /console (gateway/src/console.ts); hashed assets land in dist/assets.
export default defineConfig({
  base: '/console/',
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false },
  oxc: { jsx: { runtime: 'automatic' } },
});
