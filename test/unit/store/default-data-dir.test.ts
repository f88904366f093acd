import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultDataDir } from '../../../src/store/data-dir.js';

describe('the default data directory', () => {
  it('is absolute whatever folder a command runs in: an empty or relative XDG_DATA_HOME counts as unset', () => {
    expect(defaultDataDir({ EXECUTOR_DATA_DIR: '/x/y' })).toBe(path.resolve('/x/y'));
    // The XDG rule is Linux's; macOS and Windows have their own folders.
    if (process.platform !== 'linux') return;
    const home = os.homedir();
    const expected = path.join(home, '.local', 'share', 'executor');
    expect(defaultDataDir({})).toBe(expected);
    expect(defaultDataDir({ XDG_DATA_HOME: '' })).toBe(expected);
    expect(defaultDataDir({ XDG_DATA_HOME: 'relative/share' })).toBe(expected);
    expect(defaultDataDir({ XDG_DATA_HOME: '/srv/share' })).toBe('/srv/share/executor');
  });
});
