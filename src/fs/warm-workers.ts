import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

export interface PooledWorker {
  worker: Worker;
  idleTimer: NodeJS.Timeout | undefined;
}

/**
 * Worker threads kept warm between jobs (starting one costs a thread and the loader): idle ones do not
 * keep the process alive and end after `idleMs`. The worker's code is the built `<name>.js` beside
 * `moduleUrl`, or, run from source through tsx, `<name>.ts`, which registers tsx itself (loader flags
 * do not reach worker threads). Shared by the audit verifier and the big-preview workers.
 */
export function warmWorkerPool(
  moduleUrl: string,
  name: string,
  idleMs: number,
): { take(): PooledWorker; giveBack(pooled: PooledWorker): void } {
  const idle: PooledWorker[] = [];
  const entry = (): { entry: URL | string; eval: boolean } => {
    const js = new URL(`./${name}.js`, moduleUrl);
    if (fs.existsSync(js)) return { entry: js, eval: false };
    const ts = new URL(`./${name}.ts`, moduleUrl).href;
    const tsxRoot = path.dirname(createRequire(moduleUrl).resolve('tsx/package.json'));
    const tsxApi = pathToFileURL(path.join(tsxRoot, 'dist/esm/api/index.mjs')).href;
    return {
      entry: `import(${JSON.stringify(tsxApi)}).then(({ tsImport }) => tsImport(${JSON.stringify(ts)}, ${JSON.stringify(ts)}))`,
      eval: true,
    };
  };
  return {
    take() {
      const pooled = idle.pop();
      if (pooled) {
        clearTimeout(pooled.idleTimer);
        pooled.worker.ref();
        return pooled;
      }
      const { entry: code, eval: isEval } = entry();
      return { worker: new Worker(code, { eval: isEval }), idleTimer: undefined };
    },
    giveBack(pooled) {
      pooled.worker.removeAllListeners('message');
      pooled.worker.removeAllListeners('error');
      pooled.worker.removeAllListeners('exit');
      pooled.worker.unref();
      pooled.idleTimer = setTimeout(() => {
        const at = idle.indexOf(pooled);
        if (at !== -1) idle.splice(at, 1);
        void pooled.worker.terminate();
      }, idleMs);
      pooled.idleTimer.unref();
      idle.push(pooled);
    },
  };
}
