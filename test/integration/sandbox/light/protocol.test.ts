import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_LOG_BYTES } from '../../../../src/sandbox/light/limits.js';
import type { LightSandbox } from '../../../../src/sandbox/light/light-sandbox.js';
import { forkChild, type SandboxChild } from '../../../../src/sandbox/light/spawn-child.js';
import { closeAfter } from '../../../helpers/teardown.js';
import { tempDir } from '../../../helpers/temp-dirs.js';
import { run, sandboxFor } from './sandbox-fixture.js';

/**
 * A worker that has broken out of its JavaScript walls can still only talk on its descriptor.
 * These fakes are real processes speaking to the real host side, each misbehaving one way.
 */
function hostileSandbox(onRun: string): { sandbox: LightSandbox; children: SandboxChild[] } {
  const script = path.join(tempDir(), 'hostile-worker.cjs');
  fs.writeFileSync(
    script,
    `const net = require('net');
     const channel = new net.Socket({ fd: 3, readable: true, writable: true });
     const send = (frame) => channel.write(JSON.stringify(frame) + '\\n');
     const done = (extra) => send({ t: 'done', ok: true, json: '1', tooLarge: false, logs: [], logsTruncated: false, ...extra });
     channel.on('data', () => { ${onRun} });
     send({ t: 'ready' });`,
  );
  const children: SandboxChild[] = [];
  const sandbox = sandboxFor({
    spawnChild: (launch) => {
      const child = forkChild({ ...launch, wrapper: [], nodeArgs: [], script });
      children.push(child);
      return child;
    },
  });
  closeAfter(sandbox);
  return { sandbox, children };
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('host side of the worker protocol', () => {
  it('survives raw junk on the channel: the run ends as a crash, the host keeps going', async () => {
    const { sandbox } = hostileSandbox('channel.write(\'this is not json\\n{"t":"done"\\n\');');
    const { result } = await run(sandbox, 'return 1');
    expect(result).toMatchObject({ ok: false, code: 'EXECUTION_CRASHED', message: expect.stringContaining('outside the protocol') });
  });

  it('settles once on the first result, ignores everything after it, and kills the worker', async () => {
    const { sandbox, children } = hostileSandbox(
      "done({ json: '\"first\"' }); done({ json: '\"second\"' }); setInterval(() => { send({ t: 'call', id: 1, tool: 'readFile', args: ['/etc/passwd'] }); done({ json: '\"later\"' }); }, 1);",
    );
    const { result, audited } = await run(sandbox, 'return 1', { grants: { readFile: true } });
    expect(result).toMatchObject({ ok: true, value: 'first' });
    expect(audited).toEqual([]);
    const used = children[0]!;
    await expect.poll(() => isAlive(used.pid!), { timeout: 15_000, interval: 20 }).toBe(false);
  });

  it('stops a frame that grows past the cap instead of buffering it', async () => {
    const { sandbox } = hostileSandbox("const chunk = 'x'.repeat(64 * 1024); for (let i = 0; i < 64; i++) channel.write(chunk);");
    const { result } = await run(sandbox, 'return 1');
    expect(result).toMatchObject({ ok: false, code: 'EXECUTION_CRASHED' });
  });

  it('rejects a frame carrying extra keys such as __proto__, without polluting the host', async () => {
    const { sandbox } = hostileSandbox(
      `channel.write('{"t":"done","ok":true,"json":"1","tooLarge":false,"logs":[],"logsTruncated":false,"__proto__":{"polluted":"yes"}}\\n');`,
    );
    const { result } = await run(sandbox, 'return 1');
    expect(result).toMatchObject({ ok: false, code: 'EXECUTION_CRASHED' });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('caps a value and logs again on the host side when the worker lies about their size', async () => {
    const big = await run(hostileSandbox("done({ json: JSON.stringify('v'.repeat(100000)) });").sandbox, 'return 1');
    expect(big.result).toMatchObject({ ok: false, code: 'OUTPUT_TOO_LARGE', truncated: true });
    const chatty = await run(hostileSandbox("done({ logs: Array.from({ length: 50 }, () => 'l'.repeat(4000)) });").sandbox, 'return 1');
    expect(chatty.result).toMatchObject({ ok: true, value: 1, truncated: true });
    expect(chatty.result.logs.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0)).toBeLessThanOrEqual(MAX_LOG_BYTES);
  });

  it('reports a worker that exits mid-run as a crash with what it printed', async () => {
    const { sandbox } = hostileSandbox("process.stderr.write('fatal: something broke\\n'); process.exit(7);");
    const { result } = await run(sandbox, 'return 1');
    expect(result).toMatchObject({ ok: false, code: 'EXECUTION_CRASHED', message: expect.stringContaining('exit code 7') });
    if (!result.ok) expect(result.message).toContain('fatal: something broke');
  });
});
