import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultDataDir } from '../../../src/store/data-dir.js';

describe.runIf(process.platform === 'linux')('the default data directory (Linux)', () => {
  it('is absolute whatever folder a command runs in: an empty or relative XDG_DATA_HOME counts as unset', () => {
    const home = os.homedir();
    const expected = path.join(home, '.local', 'share', 'executor');
    expect(defaultDataDir({})).toBe(expected);
    expect(defaultDataDir({ XDG_DATA_HOME: '' })).toBe(expected);
    expect(defaultDataDir({ XDG_DATA_HOME: 'relative/share' })).toBe(expected);
    expect(defaultDataDir({ XDG_DATA_HOME: '/srv/share' })).toBe('/srv/share/executor');
    expect(defaultDataDir({ EXECUTOR_DATA_DIR: '/x/y' })).toBe('/x/y');
  });
});
