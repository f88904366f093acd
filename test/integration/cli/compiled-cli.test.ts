import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { suiteTeardown, type Teardown } from '../../helpers/teardown.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * What ships: bin/executor.js runs the compiled dist/ when it matches src/, the TypeScript sources
 * through tsx only when it does not. Each test works on its own copy of the project (bin, src,
 * scripts, package.json, the tsconfigs; node_modules as links to this checkout's packages), so it
 * can edit sources, break the build and take tsx away without touching the checkout the other tests run.
 */

const REPO = path.resolve(import.meta.dirname, '../../..');
const MODULES = fs.realpathSync(path.join(REPO, 'node_modules'));
const MARKER = 'EXECUTOR-RAN-FROM-DIST';

interface Copy {
  root: string;
  bin: string;
  /** Runs `node bin/executor.js ...args` in the copy. */
  run(args: string[], options?: { env?: NodeJS.ProcessEnv; nodeArgs?: string[]; timeoutMs?: number }): SpawnSyncReturns<string>;
  build(): SpawnSyncReturns<string>;
  /** Takes tsx away (its link in node_modules): only dist/ can run then. */
  removeTsx(): void;
  /** Makes dist/cli/main.js announce itself on stderr, so a test sees which code ran. It does not change src/, so dist stays fresh. */
  markDist(): void;
}

function copyProject(teardown?: Teardown): Copy {
  const root = tempDir('executor-compiled-', teardown);
  for (const entry of ['bin', 'src', 'scripts', 'package.json', 'tsconfig.json', 'tsconfig.build.json']) {
    fs.cpSync(path.join(REPO, entry), path.join(root, entry), { recursive: true });
  }
  fs.mkdirSync(path.join(root, 'node_modules'));
  for (const name of fs.readdirSync(MODULES)) {
    if (name === '.bin' || name.startsWith('.')) continue;
    fs.symlinkSync(path.join(MODULES, name), path.join(root, 'node_modules', name), 'dir');
  }
  const bin = path.join(root, 'bin', 'executor.js');
  const copy: Copy = {
    root,
    bin,
    run: (args, { env, nodeArgs = [], timeoutMs = 90_000 } = {}) =>
      spawnSync(process.execPath, [...nodeArgs, bin, ...args], {
        cwd: root,
        encoding: 'utf8',
        env: { ...process.env, ...env },
        timeout: timeoutMs,
      }),
    build: () =>
      spawnSync(process.execPath, [path.join(root, 'scripts', 'build-cli.js')], { cwd: root, encoding: 'utf8', timeout: 90_000 }),
    removeTsx: () => fs.rmSync(path.join(root, 'node_modules', 'tsx')),
    markDist: () => {
      const main = path.join(root, 'dist', 'cli', 'main.js');
      fs.writeFileSync(main, `process.stderr.write(${JSON.stringify(`${MARKER}\n`)});\n${fs.readFileSync(main, 'utf8')}`);
    },
  };
  return copy;
}

/** Sets a file's mtime one second on, as an editor saving it would: same bytes, new time. */
function touch(file: string): void {
  const { mtimeMs } = fs.statSync(file);
  const later = new Date(mtimeMs + 1000);
  fs.utimesSync(file, later, later);
}

describe('bin/executor.js and the compiled CLI', () => {
  it('runs dist/ when it matches src/ (without tsx installed), and the sources through tsx once a source changed', () => {
    const copy = copyProject();
    expect(copy.build().status).toBe(0);
    copy.markDist();

    const fresh = copy.run(['--help']);
    expect(fresh.status).toBe(0);
    expect(fresh.stderr).toContain(MARKER);
    expect(fresh.stdout).toContain('Usage: executor');

    // An edit in src/: the compiled main.js (marked) must not run; the edited source must.
    const mainSource = path.join(copy.root, 'src', 'cli', 'main.ts');
    fs.writeFileSync(
      mainSource,
      fs.readFileSync(mainSource, 'utf8').replace("description('Stands between", "description('EDITED IN SRC. Stands between"),
    );
    const stale = copy.run(['--help']);
    expect(stale.status).toBe(0);
    expect(stale.stderr).not.toContain(MARKER);
    expect(stale.stdout).toContain('EDITED IN SRC');

    // Rebuilt: dist/ is the new code and runs again, without tsx.
    expect(copy.build().status).toBe(0);
    copy.markDist();
    copy.removeTsx();
    const rebuilt = copy.run(['--help']);
    expect(rebuilt.stderr).toContain(MARKER);
    expect(rebuilt.stdout).toContain('EDITED IN SRC');
  });

  it('counts as stale any source touched, added or removed since the build, and a build without its stamp', () => {
    const copy = copyProject();
    expect(copy.build().status).toBe(0);
    copy.markDist();
    const ranDist = () => {
      const result = copy.run(['--help']);
      expect(result.status, result.stderr).toBe(0);
      return result.stderr.includes(MARKER);
    };
    expect(ranDist()).toBe(true);

    // Same bytes, newer time (a checkout, a save): stale.
    touch(path.join(copy.root, 'src', 'domain', 'risk.ts'));
    expect(ranDist()).toBe(false);
    expect(copy.build().status).toBe(0);
    copy.markDist();
    expect(ranDist()).toBe(true);

    // A new source file, even one nothing imports yet.
    const added = path.join(copy.root, 'src', 'domain', 'added-later.ts');
    fs.writeFileSync(added, 'export const ADDED = 1;\n');
    expect(ranDist()).toBe(false);
    fs.rmSync(added);
    expect(ranDist()).toBe(true);

    // A source removed since the build (its .js still in dist/): whatever imported it changed too,
    // and the sources alone say what runs. Here the sources fail (tsx cannot find it), which is
    // what the sources say; the compiled copy does not run in their place.
    const removed = path.join(copy.root, 'src', 'domain', 'plan-parse.ts');
    const text = fs.readFileSync(removed);
    fs.rmSync(removed);
    expect(copy.run(['--help']).stderr).not.toContain(MARKER);
    fs.writeFileSync(removed, text);
    expect(ranDist()).toBe(false);
    expect(copy.build().status).toBe(0);
    copy.markDist();
    expect(ranDist()).toBe(true);

    // A non-TypeScript source that dist/ holds a copy of (the light sandbox's worker).
    touch(path.join(copy.root, 'src', 'sandbox', 'light', 'worker.cjs'));
    expect(ranDist()).toBe(false);
    expect(copy.build().status).toBe(0);
    copy.markDist();
    expect(ranDist()).toBe(true);

    // A build that stopped before its end leaves no stamp: never trusted.
    fs.rmSync(path.join(copy.root, 'dist', 'build-stamp.json'));
    expect(ranDist()).toBe(false);
    fs.writeFileSync(path.join(copy.root, 'dist', 'build-stamp.json'), '{"sources": nonsense');
    expect(ranDist()).toBe(false);
  });

  it('three builds at once leave one whole dist/ that runs, and no staging directories', async () => {
    const copy = copyProject();
    const builds = Array.from({ length: 3 }, () => {
      const child = spawn(process.execPath, [path.join(copy.root, 'scripts', 'build-cli.js')], {
        cwd: copy.root,
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      return new Promise<{ code: number | null; stderr: string }>((resolve) => child.once('exit', (code) => resolve({ code, stderr })));
    });
    for (const build of await Promise.all(builds)) expect(build, build.stderr).toMatchObject({ code: 0 });
    expect(fs.readdirSync(copy.root).filter((name) => name.startsWith('.dist-build-'))).toEqual([]);
    copy.markDist();
    copy.removeTsx();
    const ran = copy.run(['--help']);
    expect(ran.stderr).toContain(MARKER);
    expect(ran.status).toBe(0);
  });

  it('says what to run when dist/ is stale or missing and tsx is not installed', () => {
    const copy = copyProject();
    copy.removeTsx();
    const missing = copy.run(['--help']);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/compiled CLI .* is missing.*npm run build:cli/s);
    expect(missing.stdout).toBe('');

    fs.symlinkSync(path.join(MODULES, 'tsx'), path.join(copy.root, 'node_modules', 'tsx'), 'dir');
    expect(copy.build().status).toBe(0);
    copy.removeTsx();
    touch(path.join(copy.root, 'src', 'cli', 'main.ts'));
    const stale = copy.run(['--help']);
    expect(stale.status).toBe(2);
    expect(stale.stderr).toMatch(/older than the sources in src\/.*npm run build:cli/s);
  });

  it('builds whole or not at all: a source that does not compile leaves the previous dist/ and its stamp in place', () => {
    const copy = copyProject();
    // What a build killed half-way leaves (no process has this id: Linux pids stop at 2^22).
    fs.mkdirSync(path.join(copy.root, '.dist-build-999999999-x', 'cli'), { recursive: true });
    expect(copy.build().status).toBe(0);
    expect(fs.readdirSync(copy.root).filter((name) => name.startsWith('.dist-build-'))).toEqual([]);
    const stampBefore = fs.readFileSync(path.join(copy.root, 'dist', 'build-stamp.json'), 'utf8');
    const broken = path.join(copy.root, 'src', 'domain', 'risk.ts');
    fs.appendFileSync(broken, '\nexport const = ;\n');
    const failed = copy.build();
    expect(failed.status).toBe(1);
    expect(failed.stderr).toMatch(/build:cli: /);
    expect(fs.readFileSync(path.join(copy.root, 'dist', 'build-stamp.json'), 'utf8')).toBe(stampBefore);
    expect(fs.readdirSync(copy.root).filter((name) => name.startsWith('.dist-build-'))).toEqual([]);
    // As `prepare` runs it: the install goes on, and says why there is no fresh build.
    const prepared = spawnSync(process.execPath, [path.join(copy.root, 'scripts', 'build-cli.js'), '--if-possible'], {
      cwd: copy.root,
      encoding: 'utf8',
    });
    expect(prepared.status).toBe(0);
    expect(prepared.stderr).toMatch(/build:cli: skipped .*tsx/);
  });

  it('as `prepare`, skips with a reason instead of failing the install when the compiler cannot be found (tsx, which brings esbuild, missing)', () => {
    const copy = copyProject();
    copy.removeTsx();
    const prepared = spawnSync(process.execPath, [path.join(copy.root, 'scripts', 'build-cli.js'), '--if-possible'], {
      cwd: copy.root,
      encoding: 'utf8',
    });
    expect(prepared.status).toBe(0);
    expect(prepared.stderr).toMatch(/build:cli: skipped \(.*tsx/);
    expect(fs.existsSync(path.join(copy.root, 'dist', 'build-stamp.json'))).toBe(false);
    expect(
      spawnSync(process.execPath, [path.join(copy.root, 'scripts', 'build-cli.js')], { cwd: copy.root, encoding: 'utf8' }).status,
    ).toBe(1);
  });
});

/*
 * The compiled CLI on its own: tsx is gone, so every module, worker and asset must come from
 * dist/. One copy for the block (building costs a few seconds on a busy machine).
 */
describe('the compiled CLI without tsx', () => {
  let copy: Copy;
  let base: string;
  const suite = suiteTeardown();

  beforeAll(() => {
    copy = copyProject(suite);
    expect(copy.build().status).toBe(0);
    copy.removeTsx();
    base = copy.root;
  });

  function setup(policy: Record<string, unknown> = {}) {
    const dir = fs.mkdtempSync(path.join(base, 'case-'));
    const dataDir = path.join(dir, 'data');
    const workspace = path.join(dir, 'workspace');
    fs.mkdirSync(dataDir);
    fs.mkdirSync(workspace);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace], ...policy }));
    return { dir, dataDir, workspace };
  }

  it('runs steps (a file write, code in the light sandbox from the copied worker.cjs) and verifies the log with its worker threads', () => {
    const { dir, dataDir, workspace } = setup({ autoApprove: 'HIGH' });
    const plan = path.join(dir, 'plan.json');
    fs.writeFileSync(
      plan,
      JSON.stringify({
        steps: [
          { id: 'write', action: 'writeFile', args: { path: path.join(workspace, 'f.txt'), content: 'from dist\n' } },
          { id: 'code', action: 'runCode', args: { code: 'return [1, 2, 3].reduce((a, b) => a + b);' } },
        ],
      }),
    );
    const proposed = copy.run(['--data-dir', dataDir, '--json', 'propose', plan]);
    expect(proposed.stderr).toBe('');
    const outcomes = JSON.parse(proposed.stdout) as { stepId: string; status: string; result?: { value?: unknown } }[];
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['executed', 'executed']);
    expect(outcomes[1]!.result?.value).toBe(6);
    expect(fs.readFileSync(path.join(workspace, 'f.txt'), 'utf8')).toBe('from dist\n');

    const verified = copy.run(['--data-dir', dataDir, '--json', 'audit', 'verify', '--workers', '2']);
    expect(verified.stderr).toBe('');
    expect(verified.status).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true });
  });

  it('runs the host on a worker thread from dist/ipc/host/host-thread-worker.js and verifies with worker threads from dist/audit/verify/verify-worker.js, as plain Node', () => {
    const { dir, dataDir, workspace } = setup({ autoApprove: 'HIGH' });
    // What the Electron main and the window's Verify button do, from the compiled modules alone.
    const script = path.join(dir, 'threads.mjs');
    fs.writeFileSync(
      script,
      [
        `import { startHostThread } from ${JSON.stringify(path.join(copy.root, 'dist/ipc/host/host-line.js'))};`,
        `import { connectToHost } from ${JSON.stringify(path.join(copy.root, 'dist/ipc/transports/node-client.js'))};`,
        `import { verifyDataDir } from ${JSON.stringify(path.join(copy.root, 'dist/audit/verify/audit-verifier.js'))};`,
        `import { FileKeyStore } from ${JSON.stringify(path.join(copy.root, 'dist/audit/keys/key-store.js'))};`,
        `const dataDir = ${JSON.stringify(dataDir)};`,
        `const thread = await startHostThread({ dataDir, workerUrl: new URL(${JSON.stringify(pathToFileURL(path.join(copy.root, 'dist/ipc/host/host-thread-worker.js')).href)}), credentials: [] });`,
        `const agent = await connectToHost(dataDir, 'agent');`,
        `import { proposeAndAwaitPreparation } from ${JSON.stringify(path.join(copy.root, 'dist/ipc/client/preparation-wait.js'))};`,
        // The host answers at once; the write runs in the background, so wait for the plan to come to rest.
        `const { records } = await proposeAndAwaitPreparation(agent, { steps: [{ action: 'writeFile', args: { path: ${JSON.stringify(path.join(workspace, 't.txt'))}, content: 'thread' } }] });`,
        `agent.close();`,
        `await thread.close();`,
        `const report = await verifyDataDir(dataDir, { keyStore: new FileKeyStore(dataDir), workers: 2, parallelFrom: 0 });`,
        `console.log(JSON.stringify({ statuses: records.map((r) => r.status), ok: report.ok, problems: report.problems }));`,
      ].join('\n'),
    );
    const ran = spawnSync(process.execPath, [script], { cwd: copy.root, encoding: 'utf8', timeout: 90_000 });
    expect(ran.stderr).toBe('');
    expect(JSON.parse(ran.stdout)).toMatchObject({ ok: true });
    expect(fs.readFileSync(path.join(workspace, 't.txt'), 'utf8')).toBe('thread');
  });

  it('serves, and a CLI proposal goes through the running host', async () => {
    const { dir, dataDir, workspace } = setup();
    const serve = spawn(process.execPath, [copy.bin, '--data-dir', dataDir, '--json', 'serve'], {
      cwd: copy.root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        let out = '';
        let err = '';
        serve.stdout!.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('"socketPath"') && out.trimEnd().endsWith('}')) resolve();
        });
        serve.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
        serve.once('exit', (code) => reject(new Error(`serve exited (${code}): ${err}`)));
      });
      const plan = path.join(dir, 'plan.json');
      fs.writeFileSync(
        plan,
        JSON.stringify({ steps: [{ id: 'one', action: 'writeFile', args: { path: path.join(workspace, 'f.txt'), content: 'x' } }] }),
      );
      const proposed = copy.run(['--data-dir', dataDir, '--json', 'propose', plan]);
      expect(proposed.stderr).toBe('');
      expect(proposed.status).toBe(1);
      const [outcome] = JSON.parse(proposed.stdout) as { status: string }[];
      // Through the host: it holds the lock, so a direct open would have failed with DATA_DIR_LOCKED.
      expect(['evaluated', 'awaiting_consent']).toContain(outcome!.status);
    } finally {
      const exited = new Promise((resolve) => serve.once('exit', resolve));
      serve.kill('SIGTERM');
      await exited;
    }
  });

  it('prints the MCP config and its help', () => {
    const config = copy.run(['--data-dir', '/tmp/x', 'mcp', '--print-config']);
    expect(config.status).toBe(0);
    expect(config.stdout).toContain('"mcpServers"');
    const mcpHelp = copy.run(['mcp', '--help']);
    expect(mcpHelp.stdout).toContain('(default 120)');
  });
});

/*
 * What a command loads, as the compiled CLI runs it: a loader hook logs every ES module and the
 * CommonJS cache is logged at exit (dockerode and jsdiff are required lazily, which no ESM hook sees).
 */
describe('what the compiled CLI loads', () => {
  let copy: Copy;
  const suite = suiteTeardown();

  beforeAll(() => {
    copy = copyProject(suite);
    expect(copy.build().status).toBe(0);
    copy.removeTsx();
    fs.writeFileSync(
      path.join(copy.root, 'load-hooks.mjs'),
      "import fs from 'node:fs';\nexport async function load(url, context, next) {\n  fs.appendFileSync(process.env.EXECUTOR_TEST_LOAD_LOG, `${url}\\n`);\n  return next(url, context);\n}\n",
    );
    fs.writeFileSync(
      path.join(copy.root, 'load-log.mjs'),
      "import fs from 'node:fs';\nimport { createRequire, register } from 'node:module';\nregister('./load-hooks.mjs', import.meta.url);\nconst require = createRequire(import.meta.url);\nprocess.on('exit', () => fs.appendFileSync(process.env.EXECUTOR_TEST_LOAD_LOG, Object.keys(require.cache).map((file) => `file://${file}\\n`).join('')));\n",
    );
  });

  let runs = 0;
  /** Runs the CLI and returns what it loaded: package names, and our modules as paths under dist/. */
  function loads(args: string[]): { status: number | null; stdout: string; packages: Set<string>; ours: string[] } {
    const log = path.join(copy.root, `load-${(runs += 1)}.log`);
    const result = copy.run(args, { nodeArgs: ['--import', path.join(copy.root, 'load-log.mjs')], env: { EXECUTOR_TEST_LOAD_LOG: log } });
    const urls = fs.readFileSync(log, 'utf8').split('\n').filter(Boolean);
    const packages = new Set(
      urls.map((url) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1]).filter((name): name is string => name !== undefined),
    );
    const ours = urls.map((url) => /\/dist\/(.+)$/.exec(url)?.[1]).filter((file): file is string => file !== undefined);
    return { status: result.status, stdout: result.stdout, packages, ours };
  }

  it('`executor --help` and every `executor <command> --help` load commander and the command definitions, nothing heavy', () => {
    // Every command path the help lists, found by walking the help itself: a new command is covered without editing this test.
    const checked: string[] = [];
    const walk = (prefix: string[]) => {
      const loaded = loads([...prefix, '--help']);
      const name = prefix.join(' ') || '(none)';
      expect(loaded.status, name).toBe(0);
      expect([...loaded.packages], name).toEqual(['commander']);
      expect(
        loaded.ours.filter(
          (file) =>
            !/^(cli|domain)\//.test(file) &&
            ![
              'store/data-dir.js',
              'audit/keys/key-store.js',
              'fs/atomic-write.js',
              // atomic-write's small writes: its threads start at the first write, never at import.
              'fs/disk-thread.js',
              'fs/created-directories.js',
              'fs/file-modes.js',
              'fs/free-space.js',
              'store/storage-errors.js',
              'mcp/host-link.js',
              // connect's settings plan: node:fs and domain/ only.
              'hooks/client-settings.js',
            ].includes(file),
        ),
        name,
      ).toEqual([]);
      checked.push(prefix.join(' '));
      const commands = loaded.stdout.split('\n\nCommands:\n')[1] ?? '';
      for (const [, sub] of commands.matchAll(/^ {2}([a-z][\w-]*)/gm)) if (sub !== 'help') walk([...prefix, sub!]);
    };
    walk([]);
    // The walk found the command groups (a broken parse would make this test pass vacuously).
    expect(checked).toEqual(expect.arrayContaining(['', 'propose', 'steps list', 'audit verify', 'sandbox image build', 'serve', 'mcp']));
  });

  it('a one-step `propose` to a running host loads the client side only: no Executor, database, Docker client, jsdiff, MCP SDK or shell parser', async () => {
    const dir = fs.mkdtempSync(path.join(copy.root, 'case-'));
    const dataDir = path.join(dir, 'data');
    const workspace = path.join(dir, 'workspace');
    fs.mkdirSync(dataDir);
    fs.mkdirSync(workspace);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace] }));
    const serve = spawn(process.execPath, [copy.bin, '--data-dir', dataDir, '--json', 'serve'], {
      cwd: copy.root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        let out = '';
        serve.stdout!.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('"socketPath"') && out.trimEnd().endsWith('}')) resolve();
        });
        serve.once('exit', (code) => reject(new Error(`serve exited (${code})`)));
      });
      const plan = path.join(dir, 'plan.json');
      fs.writeFileSync(
        plan,
        JSON.stringify({ steps: [{ action: 'writeFile', args: { path: path.join(workspace, 'f.txt'), content: 'x' } }] }),
      );
      for (const output of [['--json'], []]) {
        const loaded = loads(['--data-dir', dataDir, ...output, 'propose', plan]);
        expect(loaded.stdout).toMatch(/awaiting_consent|evaluated|Waiting for you|Evaluated/);
        // The client: commander, the zod schemas of the wire, picomatch (step summaries name paths).
        for (const heavy of [
          'dockerode',
          'diff',
          '@modelcontextprotocol/sdk',
          'better-sqlite3',
          'web-tree-sitter',
          'ws',
          'tsx',
          'esbuild',
        ]) {
          expect(loaded.packages.has(heavy), heavy).toBe(false);
        }
        expect(loaded.ours).toContain('ipc/transports/socket-transport.js');
        expect(
          loaded.ours.filter((file) =>
            /^(executor\/|store\/database|ipc\/(host\/|server\/(server|handlers|dispatch)\.js|transports\/web-server\.js)|mcp\/mcp-server)/.test(
              file,
            ),
          ),
        ).toEqual([]);
      }
    } finally {
      const exited = new Promise((resolve) => serve.once('exit', resolve));
      serve.kill('SIGTERM');
      await exited;
    }
  });
});
