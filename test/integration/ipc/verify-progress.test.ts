import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import { localClient } from '../../../src/ipc/server/local-client.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import type { VerifyProgressEvent } from '../../../src/ipc/protocol/wire-schemas.js';
import { buildMixedLog } from '../../helpers/audit-log-fixture.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempDir } from '../../helpers/temp-dirs.js';

describe('verifyAudit progress over the event stream', () => {
  let host: Host | undefined;

  it('reaches only the session that asked, tagged with its progressId, ending at checked = total', async () => {
    const dataDir = path.join(tempDir(), 'data');
    buildMixedLog(dataDir, 9_000);
    host = closeAfter(await startHost(dataDir));
    const asking = closeAfter(await connectToHost(dataDir, 'cli'));
    const other = closeAfter(await connectToHost(dataDir, 'agent'));
    const heardByAsking: VerifyProgressEvent[] = [];
    const heardByOther: VerifyProgressEvent[] = [];
    await asking.on('verify', (event) => heardByAsking.push(event));
    await other.on('verify', (event) => heardByOther.push(event));

    const report = await asking.verifyAudit({ progressId: 'run-1' });
    expect(report.ok).toBe(true);
    await expect.poll(() => heardByAsking.at(-1)?.checked).toBe(report.records);
    expect(heardByAsking.every((event) => event.progressId === 'run-1' && event.total === report.records)).toBe(true);
    expect(heardByAsking.length).toBeGreaterThan(1);
    expect(heardByOther).toEqual([]);

    // Without a progressId the call is as before: a report, no events.
    heardByAsking.length = 0;
    expect((await asking.verifyAudit()).ok).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(heardByAsking).toEqual([]);
  });

  it('reaches an in-process client too (the CLI without a host)', async () => {
    const dataDir = path.join(tempDir(), 'data');
    buildMixedLog(dataDir, 5_000);
    host = closeAfter(await startHost(dataDir));
    const api = closeAfter(localClient(host.executor, 'cli'));
    const heard: VerifyProgressEvent[] = [];
    await api.on('verify', (event) => heard.push(event));
    const report = await api.verifyAudit({ progressId: 'local' });
    expect(heard.at(-1)).toEqual({ progressId: 'local', checked: report.records, total: report.records });
  });
});
