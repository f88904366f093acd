import path from 'node:path';
import { defaultDataDir } from '../store/data-dir.js';

/**
 * Which data directory a command uses and whether a window serves it. A demo step proposed into one
 * data directory while the window shows another never appears, and nothing said why: every command
 * that adds or lists steps says it now, in one line on stderr, and `executor where` says it whole.
 */

/** Where the data directory came from: --data-dir, EXECUTOR_DATA_DIR, or the OS default. */
export type DataDirSource = 'flag' | 'env' | 'default';

export interface DataDirReport {
  dataDir: string;
  source: DataDirSource;
  /** Whether it is the directory `npm start`, `executor serve` and the CLI use when none is named. */
  isDefault: boolean;
  /** Whether a host (the desktop app or `executor serve`) runs for it: its window shows these steps. */
  served: boolean;
  /** The default data directory, when this is another one. */
  defaultDataDir: string;
  /** When this one is not the default: whether a host serves the default (its window shows other steps). */
  defaultServed: boolean | null;
}

export function dataDirSource(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): DataDirSource {
  if (flag !== undefined) return 'flag';
  return env.EXECUTOR_DATA_DIR ? 'env' : 'default';
}

/** The OS default, ignoring EXECUTOR_DATA_DIR: what `npm start` opens in a shell where it is not set. */
export const osDefaultDataDir = (): string => defaultDataDir({ ...process.env, EXECUTOR_DATA_DIR: undefined });

/**
 * Whether a host answers on the data directory's socket. Only a connection, no session: it needs no
 * token (the default data directory's tokens are not this command's business) and costs a millisecond.
 */
export async function hostServes(dataDir: string): Promise<boolean> {
  const [{ connectSocket, socketPathFor }] = await Promise.all([import('../ipc/transports/socket-transport.js')]);
  try {
    const transport = await connectSocket(socketPathFor(dataDir));
    transport.close();
    return true;
  } catch {
    return false;
  }
}

export async function describeDataDir(dataDir: string, source: DataDirSource, served?: boolean): Promise<DataDirReport> {
  const resolved = path.resolve(dataDir);
  const osDefault = osDefaultDataDir();
  const isDefault = resolved === osDefault;
  const [servedNow, defaultServed] = await Promise.all([
    served ?? hostServes(resolved),
    isDefault ? Promise.resolve(null) : hostServes(osDefault),
  ]);
  return { dataDir: resolved, source, isDefault, served: servedNow, defaultDataDir: osDefault, defaultServed };
}

const quoted = (dir: string) => (/^[\w@%+=:,./-]+$/.test(dir) ? dir : `'${dir.replaceAll("'", `'\\''`)}'`);

/** How to name this data directory on a command line: nothing for the default. */
export function dataDirFlag(report: Pick<DataDirReport, 'dataDir' | 'isDefault'>): string {
  return report.isDefault ? '' : ` --data-dir ${quoted(report.dataDir)}`;
}

const SOURCE_WORDS: Record<DataDirSource, string> = { flag: 'from --data-dir', env: 'from EXECUTOR_DATA_DIR', default: 'the default' };

/** The one line a step command prints on stderr, plus a second when another window shows other steps. */
export function dataDirNotice(report: DataDirReport): string {
  const where = `executor: data directory ${report.dataDir} (${report.isDefault ? 'the default' : SOURCE_WORDS[report.source]})`;
  const lines = [
    report.served
      ? `${where}; a running window (the app or \`executor serve\`) shows these steps.`
      : `${where}; no window serves it: open one with \`executor${dataDirFlag(report)} serve\`${report.isDefault ? ' or `npm start`' : ''}.`,
  ];
  if (!report.served && report.defaultServed) {
    lines.push(
      `executor: the window that is open serves the default data directory ${report.defaultDataDir}, not this one, so these steps do not appear in it. ` +
        `Drop ${report.source === 'env' ? 'EXECUTOR_DATA_DIR' : '--data-dir'} to use that one, or see these with \`executor${dataDirFlag(report)} serve\`.`,
    );
  }
  return lines.join('\n');
}

/** The whole answer of `executor where`. */
export function dataDirText(report: DataDirReport): string {
  const lines = [
    `Data directory  ${report.dataDir} (${SOURCE_WORDS[report.source]}${report.isDefault || report.source === 'default' ? '' : '; the default is ' + report.defaultDataDir})`,
  ];
  lines.push(
    report.served
      ? 'Window          running (the app or `executor serve`): steps proposed here appear in it; `executor' +
          dataDirFlag(report) +
          ' web-url` prints a fresh browser link when it is `executor serve`'
      : `Window          none: open one with \`executor${dataDirFlag(report)} serve\`${report.isDefault ? ' or `npm start`' : ''}`,
  );
  if (report.defaultServed)
    lines.push(`Default         ${report.defaultDataDir} has a running window; it does not show this directory's steps`);
  return lines.join('\n');
}
