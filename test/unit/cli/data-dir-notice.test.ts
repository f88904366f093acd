import { describe, expect, it } from 'vitest';
import { dataDirNotice, dataDirSource, dataDirText, type DataDirReport } from '../../../src/cli/data-dir-notice.js';

const base: DataDirReport = {
  dataDir: '/home/me/.local/share/executor',
  source: 'default',
  isDefault: true,
  served: true,
  defaultDataDir: '/home/me/.local/share/executor',
  defaultServed: null,
};

describe('what the CLI says about its data directory', () => {
  it('names where the directory came from', () => {
    expect(dataDirSource('/x', { EXECUTOR_DATA_DIR: '/y' })).toBe('flag');
    expect(dataDirSource(undefined, { EXECUTOR_DATA_DIR: '/y' })).toBe('env');
    expect(dataDirSource(undefined, {})).toBe('default');
  });

  it('one line when a window serves it', () => {
    expect(dataDirNotice(base)).toBe(
      'executor: data directory /home/me/.local/share/executor (the default); a running window (the app or `executor serve`) shows these steps.',
    );
  });

  it('how to open a window when none serves it', () => {
    expect(dataDirNotice({ ...base, served: false })).toContain('no window serves it: open one with `executor serve` or `npm start`.');
  });

  it('says plainly when the open window serves another directory, and how to see this one', () => {
    const stray: DataDirReport = {
      ...base,
      dataDir: "/tmp/it's here",
      source: 'env',
      isDefault: false,
      served: false,
      defaultServed: true,
    };
    const said = dataDirNotice(stray);
    expect(said.split('\n')).toHaveLength(2);
    expect(said).toContain(
      "(from EXECUTOR_DATA_DIR); no window serves it: open one with `executor --data-dir '/tmp/it'\\''s here' serve`.",
    );
    expect(said).toContain('the window that is open serves the default data directory /home/me/.local/share/executor, not this one');
    expect(said).toContain('Drop EXECUTOR_DATA_DIR');
    expect(dataDirText(stray)).toContain('Default         /home/me/.local/share/executor has a running window');
  });
});
