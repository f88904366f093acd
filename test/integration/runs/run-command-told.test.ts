import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { callTool, messageText, say } from '../../helpers/scripted-openai-server.js';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { useScriptedRunHosts } from '../../helpers/scripted-run-host.js';
import { ended, waitForRun } from '../../helpers/run-waits.js';

/*
 * What the model reads after run_command: how the command ended, which files it changed and its output,
 * in a few tokens; never the sandbox's bookkeeping (image digest, run id, oomKilled, egress). Real host,
 * real Docker sandbox; the model is a scripted server on loopback.
 */

const { setup } = useScriptedRunHosts();
const docker = dockerAvailable();

describe.skipIf(!docker)('run_command as the model is told it', { timeout: 240_000 }, () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 600_000);

  it('says exit status, files changed and output, without the result JSON', async () => {
    const { workspace, api, model, server } = await setup([
      callTool('run_command', { command: 'echo made > made.txt; echo to-stdout; echo to-stderr >&2; exit 3' }, 'call_c1'),
      say('Saw it.'),
    ]);
    const started = await api.startRun({ task: 'Run one command', model });
    const waiting = await waitForRun(api, started.id, (run) => run.status === 'awaiting_consent', 'consent');
    const stepId = waiting.waitingStepId!;
    // Its dry run is the preview the approval binds to.
    const ready = await expect
      .poll(async () => (await api.getStep({ stepId })).status, { timeout: 180_000 })
      .toBe('awaiting_consent')
      .then(() => api.getStep({ stepId }));
    await api.approve({ stepId, previewHash: ready.previewHash });
    const done = await waitForRun(api, started.id, ended, 'the end');
    expect(done.status).toBe('completed');
    expect(fs.readFileSync(path.join(workspace, 'made.txt'), 'utf8')).toBe('made\n');

    const told = server.requests[1]!.body!.messages.filter((message) => message.role === 'tool').map((message) =>
      messageText(message.content),
    );
    expect(told).toHaveLength(1);
    const text = told[0]!;
    expect(text).toMatch(/^EXECUTED: exit 3 after [\d.]+ (ms|s); files changed: made\.txt \(added\)/);
    expect(text).toContain('stdout:\nto-stdout');
    expect(text).toContain('stderr:\nto-stderr');
    for (const bookkeeping of ['digest', 'sha256:', 'runId', 'oomKilled', 'egress', '"exitCode"', '{'])
      expect(text, bookkeeping).not.toContain(bookkeeping);
    expect(text.length).toBeLessThan(200);
  });
});
