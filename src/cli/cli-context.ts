import type { Command } from 'commander';
import { actorFor } from '../domain/actor.js';
import { Executor } from '../executor/executor.js';
import { defaultDataDir } from '../store/data-dir.js';

interface GlobalOptions {
  dataDir?: string;
  json?: boolean;
}

export const CLI_ACTOR = actorFor('cli');

export function globals(command: Command): { dataDir: string; json: boolean } {
  const options = command.optsWithGlobals<GlobalOptions>();
  return { dataDir: options.dataDir ?? defaultDataDir(), json: options.json === true };
}

export function print(json: boolean, value: unknown, text: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${text()}\n`);
}

/** Opens the Executor for one command and always releases the data-directory lock afterwards. */
export async function withExecutor<T>(dataDir: string, work: (executor: Executor) => Promise<T>): Promise<T> {
  const executor = Executor.open(dataDir);
  try {
    return await work(executor);
  } finally {
    executor.close();
  }
}
