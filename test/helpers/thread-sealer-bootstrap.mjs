// Loads the TypeScript thread-sealer test worker in a worker thread (tsx's loader, as host-thread-bootstrap.mjs).
import { register } from 'tsx/esm/api';

register();
await import('./thread-sealer-worker.ts');
