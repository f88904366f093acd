import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { suiteTeardown } from '../../../helpers/teardown.js';
import { tempSetup } from '../../../helpers/temp-dirs.js';
import { run, sandboxFor } from './sandbox-fixture.js';

const sandbox = suiteTeardown().closeAfter(sandboxFor());

const readAll = (paths: string[]) => `const out = [];
  for (const p of ${JSON.stringify(paths)}) out.push(await tools.readFile(p).then((text) => 'read: ' + text, (e) => e.message));
  return out;`;

describe.runIf(process.platform !== 'win32')('tools.readFile on what is not a regular file', () => {
  it('answers a FIFO with a typed refusal at once, many times over, and the host keeps reading files', async () => {
    const { workspace, dataDir } = tempSetup();
    execFileSync('mkfifo', [path.join(workspace, 'pipe')]);
    fs.mkdirSync(path.join(workspace, 'folder'));
    fs.writeFileSync(path.join(workspace, 'data.txt'), 'hello');
    fs.symlinkSync(path.join(workspace, 'pipe'), path.join(workspace, 'pipe-link'));
    // Eight FIFO reads: twice the four threads of libuv's pool, each of which a blocking open would hold for good.
    const paths = [...Array.from({ length: 8 }, () => 'pipe'), 'pipe-link', 'folder', 'data.txt'];
    const { result, audited } = await run(sandbox, readAll(paths), {
      grants: { readFile: true },
      policy: { workspaceRoots: [workspace] },
      dataDir,
      timeoutMs: 4000,
    });
    expect(result).toMatchObject({ ok: true });
    const outcomes = (result as { value: string[] }).value;
    for (const outcome of outcomes.slice(0, 9))
      expect(outcome).toMatch(/tools\.readFile failed \(PATH_INVALID\): .* is a named pipe \(FIFO\), not a regular file/);
    expect(outcomes[9]).toMatch(/folder is a directory/);
    expect(outcomes[10]).toBe('read: hello');
    expect(audited).toHaveLength(11);
    // The host's own file reads still go through: no pool thread is stuck on the FIFO.
    expect(await fs.promises.readFile(path.join(workspace, 'data.txt'), 'utf8')).toBe('hello');
    const again = await run(sandbox, "return await tools.readFile('data.txt');", {
      grants: { readFile: true },
      policy: { workspaceRoots: [workspace] },
      dataDir,
    });
    expect(again.result).toMatchObject({ ok: true, value: 'hello' });
  });

  it('caps a file at maxReadFileBytes with FILE_TOO_LARGE in the message', async () => {
    const { workspace, dataDir } = tempSetup();
    fs.writeFileSync(path.join(workspace, 'big.txt'), 'b'.repeat(2048));
    const { result } = await run(sandbox, readAll(['big.txt']), {
      grants: { readFile: true },
      policy: { workspaceRoots: [workspace], lightSandbox: { maxReadFileBytes: 1024 } },
      dataDir,
    });
    expect((result as { value: string[] }).value[0]).toMatch(/failed \(FILE_TOO_LARGE\): big\.txt is 2048 bytes; at most 1024/);
  });
});

describe('tools.readFile never reads a credential file back to code', () => {
  it('refuses the well-known credential files, wherever they sit and however they are reached', async () => {
    const { workspace, dataDir } = tempSetup();
    const files = [
      '.npmrc',
      '.git-credentials',
      '.pypirc',
      '.netrc',
      '.aws/credentials',
      'sub/.docker/config.json',
      '.kube/config',
      '.gnupg/secring.gpg',
      'cert.p12',
      'id_ed25519',
      '.pgpass',
      'infra/terraform.tfstate',
    ];
    for (const file of files) {
      fs.mkdirSync(path.dirname(path.join(workspace, file)), { recursive: true });
      fs.writeFileSync(path.join(workspace, file), '//registry.npmjs.org/:_authToken=npm_secret');
    }
    fs.symlinkSync(path.join(workspace, '.npmrc'), path.join(workspace, 'notes.txt'));
    const { result, audited } = await run(sandbox, readAll([...files, 'notes.txt']), {
      grants: { readFile: true },
      policy: { workspaceRoots: [workspace], lightSandbox: { maxCallsPerStep: 50 } },
      dataDir,
    });
    const outcomes = (result as { value: string[] }).value;
    expect(outcomes).toHaveLength(files.length + 1);
    for (const outcome of outcomes) expect(outcome).toMatch(/denied: .* matches the secret pattern .*never read back/);
    expect(audited.every((record) => record.decision === 'denied')).toBe(true);
  });

  it('refuses a credential file when the workspace root itself lies inside the credentials folder', async () => {
    const { base, dataDir } = tempSetup();
    const awsRoot = path.join(base, 'home', '.aws');
    fs.mkdirSync(awsRoot, { recursive: true });
    // `config` alone is no secret's name: only the folder above the root makes it one.
    fs.writeFileSync(path.join(awsRoot, 'config'), 'aws_secret_access_key = x');
    const { result } = await run(sandbox, readAll(['config']), {
      grants: { readFile: true },
      policy: { workspaceRoots: [awsRoot] },
      dataDir,
    });
    expect((result as { value: string[] }).value[0]).toMatch(/secret pattern "\.aws\/\*\*"/);
  });

  it('refuses .NPMRC too where the filesystem ignores case', async () => {
    const { workspace, dataDir } = tempSetup();
    fs.writeFileSync(path.join(workspace, '.NPMRC'), '_authToken=npm_secret');
    // The hard link makes this disk answer the probe the way a case-insensitive one would.
    fs.writeFileSync(path.join(workspace, 'probe'), '');
    fs.linkSync(path.join(workspace, 'probe'), path.join(workspace, 'PROBE'));
    const { result } = await run(sandbox, readAll(['.NPMRC', '.Git-Credentials']), {
      grants: { readFile: true },
      policy: { workspaceRoots: [workspace] },
      dataDir,
    });
    const outcomes = (result as { value: string[] }).value;
    expect(outcomes[0]).toMatch(/secret pattern "\.npmrc"/);
    expect(outcomes[1]).toMatch(/secret pattern "\.git-credentials"/);
  });
});
