import fs from 'node:fs';
import path from 'node:path';

/** What ran: recorded in every audit record, so a reviewer knows which build and sandbox produced it. */
export interface ExecutorEnv {
  appVersion: string;
  platform: string;
  node: string;
  electron: string | null;
  /** The sandbox the record's step runs in; null for a record without a step. */
  sandbox: { kind: string; imageDigest: string | null } | null;
}

let cachedVersion: string | undefined;

function appVersion(): string {
  if (cachedVersion !== undefined) return cachedVersion;
  try {
    const pkg = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../../package.json'), 'utf8')) as { version?: string };
    cachedVersion = pkg.version ?? 'unknown';
  } catch {
    cachedVersion = 'unknown';
  }
  return cachedVersion;
}

export function currentExecutorEnv(sandbox: ExecutorEnv['sandbox'] = null): ExecutorEnv {
  return {
    appVersion: appVersion(),
    platform: `${process.platform}-${process.arch}`,
    node: process.versions.node,
    electron: process.versions.electron ?? null,
    sandbox,
  };
}
