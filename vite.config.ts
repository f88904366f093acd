import react from '@vitejs/plugin-react';
import path from 'node:path';
import { defineConfig } from 'vite';

/**
 * The renderer build. `executor serve` and the Electron window load dist-renderer/ under a CSP
 * without inline scripts or styles, so CSS is emitted as files and no module preload polyfill is inlined.
 */
export default defineConfig({
  root: path.resolve(import.meta.dirname, 'renderer'),
  base: './',
  plugins: [react()],
  build: {
    outDir: path.resolve(import.meta.dirname, 'dist-renderer'),
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    cssCodeSplit: false,
    sourcemap: true,
    chunkSizeWarningLimit: 2000,
  },
});
