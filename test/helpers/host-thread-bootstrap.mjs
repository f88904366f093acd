// Loads the TypeScript worker entry in a worker thread for tests (the app runs the built .js).
import { register } from 'tsx/esm/api';

register();
await import('../../src/ipc/host/host-thread-worker.ts');
