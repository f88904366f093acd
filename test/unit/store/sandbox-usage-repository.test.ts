import { describe, expect, it } from 'vitest';
import { checkBudget } from '../../../src/sandbox/light/budget.js';
import { openDatabase } from '../../../src/store/database.js';
import { SandboxUsageRepository } from '../../../src/store/sandbox-usage-repository.js';
import { tempDir } from '../../helpers/temp-dirs.js';

describe('SandboxUsageRepository', () => {
  it('remembers runs across connections to the same database, and forgets what is older than needed', () => {
    const dataDir = tempDir();
    const first = openDatabase(dataDir);
    const ledger = new SandboxUsageRepository(first);
    ledger.record({ startedAtMs: 1_000, chargedMs: 5 });
    ledger.record({ startedAtMs: 10_000_000, chargedMs: 7 });
    first.close();

    const second = openDatabase(dataDir);
    try {
      const reopened = new SandboxUsageRepository(second);
      expect(reopened.since(0)).toEqual([{ startedAtMs: 10_000_000, chargedMs: 7 }]);
      reopened.record({ startedAtMs: 10_000_500, chargedMs: 3 });
      expect(reopened.since(10_000_000)).toEqual([{ startedAtMs: 10_000_500, chargedMs: 3 }]);
      expect(checkBudget(reopened, { enabled: true, runsPerMinute: 2, cpuSecondsPerHour: 600 }, 10_001_000)).toMatchObject({ ok: false });
    } finally {
      second.close();
    }
  });
});
