import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import inspector from 'node:inspector';
import net from 'node:net';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { detectIsolation, wrapperFor } from '../../../../src/sandbox/light/isolation.js';
import { launchFor } from '../../../../src/sandbox/light/light-sandbox.js';
import { suiteTeardown } from '../../../helpers/teardown.js';
import { tempDir } from '../../../helpers/temp-dirs.js';
import { policyOf, run, sandboxFor } from './sandbox-fixture.js';

/**
 * Hostile payloads against the real worker, with the static guard OFF so every one meets the walls
 * behind it. Each payload tries to read a canary file outside any root, read a canary environment
 * variable of this (host) process, connect to a canary listener on 127.0.0.1, spawn a process or
 * write a file. The suite checks the canaries themselves: a payload that merely errors proves nothing.
 */

const FILE_TOKEN = `file-canary-${crypto.randomUUID()}`;
const ENV_TOKEN = `env-canary-${crypto.randomUUID()}`;
const ENV_NAME = 'EXECUTOR_ESCAPE_CANARY';
// The file's, not a test's: every test's payloads go for the same canaries until the file is done.
const file = suiteTeardown();
const canaryDir = tempDir('executor-canary-', file);
const workspace = tempDir('executor-escape-ws-', file);
const canaryFile = path.join(canaryDir, 'canary.txt');
const spawnMarker = path.join(canaryDir, 'spawned');
const writeMarker = path.join(canaryDir, 'written');
let connections = 0;
let port = 0;
const server = net.createServer((socket) => {
  connections += 1;
  socket.end(`${FILE_TOKEN}\n`);
});

const sandbox = file.closeAfter(sandboxFor({ staticGuard: false }));

beforeAll(async () => {
  fs.writeFileSync(canaryFile, FILE_TOKEN);
  fs.writeFileSync(path.join(workspace, 'notes.txt'), 'harmless');
  fs.symlinkSync(canaryFile, path.join(workspace, 'link-to-canary'));
  fs.symlinkSync(canaryDir, path.join(workspace, 'dir-link'));
  process.env[ENV_NAME] = ENV_TOKEN;
  file.defer(() => delete process.env[ENV_NAME]);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  file.defer(() => new Promise<void>((resolve) => server.close(() => resolve())));
  port = (server.address() as net.AddressInfo).port;
});

const fill = (code: string) =>
  code
    .replaceAll('CANARY_FILE', JSON.stringify(canaryFile))
    .replaceAll('CANARY_PORT', () => String(port))
    .replaceAll('ENV_NAME', JSON.stringify(ENV_NAME))
    .replaceAll('SPAWN_MARKER', JSON.stringify(spawnMarker))
    .replaceAll('WRITE_MARKER', JSON.stringify(writeMarker));

/** Tries every door with whatever handle `h` it obtained, and returns what it found. */
const USE = `
  const out = [];
  const tryIt = async (label, fn) => { try { out.push(label + ':' + JSON.stringify(await fn())); } catch (e) { out.push(label + '!' + String(e && e.message)); } };
  const use = async (h) => {
    await tryIt('env', () => h.env && h.env[ENV_NAME]);
    await tryIt('fs', () => h.readFileSync && h.readFileSync(CANARY_FILE, 'utf8'));
    await tryIt('write', () => h.writeFileSync && h.writeFileSync(WRITE_MARKER, 'x'));
    await tryIt('spawn', () => h.execSync && String(h.execSync('touch ' + SPAWN_MARKER)));
    await tryIt('net', () => h.connect && new Promise((res) => { const s = h.connect(CANARY_PORT, '127.0.0.1'); s.on('data', (d) => res(String(d))); s.on('error', (e) => res(String(e))); }));
  };
`;

interface Payload {
  name: string;
  code: string;
  grants?: Record<string, unknown>;
  policy?: Record<string, unknown>;
}

const payload = (name: string, body: string, extra: Omit<Payload, 'name' | 'code'> = {}): Payload => ({
  name,
  code: `${USE}\n${body}\nreturn out;`,
  ...extra,
});

const PAYLOADS: Payload[] = [
  // The process object and its doors
  payload('process.env directly', 'await use(process);'),
  payload('process via globalThis and a computed name', "await use(globalThis['pro' + 'cess']);"),
  payload('process via String.fromCharCode', 'await use(globalThis[String.fromCharCode(112,114,111,99,101,115,115)]);'),
  payload('process.binding("fs")', "await use(process.binding('fs'));"),
  payload(
    'process.mainModule.require',
    "await use(process.mainModule.require('fs')); await use(process.mainModule.require('child_process'));",
  ),
  payload('process._debugProcess on the parent', 'process._debugProcess(process.ppid); await use(process);'),
  payload('process.kill of the parent', 'process.kill(process.ppid, "SIGKILL");'),
  payload('SIGUSR1 to the parent', 'process.kill(process.ppid, "SIGUSR1");'),
  payload('process.dlopen', 'process.dlopen({ exports: {} }, "/lib/x86_64-linux-gnu/libc.so.6");'),
  payload('restore process by assignment', 'globalThis.process = 1; out.push(typeof process);'),
  payload('delete the stripped global and look again', 'delete globalThis.process; out.push(typeof process);'),
  payload('redefine the stripped global', 'Object.defineProperty(globalThis, "require", { value: 1 });'),
  // require, module, import()
  payload('require directly', "await use(require('fs')); await use(require('child_process')); await use(require('net'));"),
  payload('unicode-escaped require', "await use(\\u0072equire('fs')); await use(\\u0072equire('child_process'));"),
  payload('module.constructor._load', "await use(module.constructor._load('fs')); await use(module.constructor._load('child_process'));"),
  payload('dynamic import of fs', "await use(await import('fs'));"),
  payload('dynamic import of child_process with spaces', "await use(await import ( 'node:child_process' ));"),
  payload('dynamic import of net', "await use(await import('node:net'));"),
  payload('dynamic import of a data: URL', "await use((await import('data:text/javascript,export default process')).default);"),
  payload('dynamic import through a computed specifier', "const m = ['f','s'].join(''); await use(await import(m));"),
  payload('import.meta', 'out.push(String(import.meta.url));'),
  // Code from strings: constructor chains to Function
  payload('Function constructor', "await use(Function('return process')());"),
  payload('constructor.constructor chain from an object', "await use(({}).constructor.constructor('return process')());"),
  payload('constructor chain from an array', "await use([].constructor.constructor('return process')());"),
  payload('AsyncFunction constructor', "await use(await (async () => {}).constructor('return process')());"),
  payload('GeneratorFunction constructor', "await use((function* () {}).constructor('yield process')().next().value);"),
  payload('constructor chain from a tool stub', "await use(tools.fetch.constructor('return process')());"),
  payload('constructor chain from console.log', "await use(console.log.constructor('return process')());"),
  payload('constructor chain from setTimeout', "await use(setTimeout.constructor('return process')());"),
  payload(
    'constructor chain through a computed key',
    "const c = 'constructor'; await use(tools[c] ? 1 : (()=>{})[c][c]('return process')());",
  ),
  payload('Reflect.construct(Function)', "await use(Reflect.construct(Function, ['return process'])());"),
  payload('direct eval', "await use(eval('process'));"),
  payload('indirect eval', "await use((0, eval)('process'));"),
  payload('eval by a computed name', "await use(globalThis['ev' + 'al']('process'));"),
  payload('unicode-escaped eval', "await use(\\u0065val('process'));"),
  payload(
    'setTimeout with a string',
    "setTimeout('globalThis.x = process', 0); await new Promise((r) => setTimeout(r, 20)); await use(globalThis.x);",
  ),
  payload(
    'WebAssembly compiled from bytes',
    'const m = await WebAssembly.compile(new Uint8Array([0,97,115,109,1,0,0,0])); out.push(String(WebAssembly.Module.imports(m).length));',
  ),
  // Stack and caller tricks
  payload(
    'arguments.callee.caller',
    'const f = function () { return arguments.callee.caller; }; const caller = f(); await use(caller && caller.arguments && caller.arguments[1]);',
  ),
  payload(
    'Function.prototype.caller',
    'function g() { return g.caller; } const c = g(); out.push(String(c)); await use(c && c.arguments && c.arguments[1]);',
  ),
  payload(
    'Error.prepareStackTrace CallSites',
    'Error.prepareStackTrace = (e, sites) => sites.map((s) => s.getFunction()); const fns = new Error().stack; for (const fn of fns || []) if (fn && fn.arguments) await use(fn.arguments[1]);',
  ),
  payload(
    'defineProperty on Error.prepareStackTrace',
    "Object.defineProperty(Error, 'prepareStackTrace', { value: (e, s) => s }); out.push(new Error().stack.length);",
  ),
  payload('Error.captureStackTrace with a getter', 'const o = {}; Error.captureStackTrace(o); out.push(typeof o.stack);'),
  // Proxy, Symbol, inspect hooks, serialization traps
  payload(
    'Proxy thrown to the host',
    "throw new Proxy(new Error('x'), { get(t, k) { if (k === 'message') { while (true) {} } return Reflect.get(t, k); } });",
  ),
  payload(
    'Proxy returned as the value',
    "return new Proxy({}, { ownKeys() { return ['a']; }, getOwnPropertyDescriptor() { return { value: 1, enumerable: true, configurable: true }; }, get() { return process; } });",
  ),
  payload('toJSON reaching for process', 'return { toJSON() { return process.env[ENV_NAME]; } };'),
  payload(
    'Symbol.toPrimitive on an error message',
    'throw { message: { [Symbol.toPrimitive]() { return String(process.env[ENV_NAME]); } } };',
  ),
  payload(
    'util.inspect.custom hook receives inspect',
    "console.log({ [Symbol.for('nodejs.util.inspect.custom')](depth, options, inspect) { out.push(Object.keys(options).join()); return String(inspect && inspect.constructor('return process')); } });",
  ),
  payload('getter on a logged object', 'console.log({ get x() { return process.env[ENV_NAME]; } });'),
  // Prototype pollution aimed at the host's IPC handler
  payload(
    'pollute Object.prototype before the result frame',
    "Object.prototype.t = 'ready'; Object.prototype.polluted = 'yes'; Object.prototype.toJSON = function () { return { t: 'call', id: 1, tool: 'kb.search', args: ['x'], polluted: 'yes' }; }; return 1;",
  ),
  payload(
    '__proto__ key in the returned value',
    'return JSON.parse(\'{"__proto__": {"polluted": "yes"}, "constructor": {"prototype": {"polluted": "yes"}}}\');',
  ),
  payload('__proto__ key in tool arguments', 'await tools.kb.search(JSON.parse(\'{"__proto__": {"polluted": "yes"}}\'));', {
    grants: { kbSearch: true },
  }),
  payload(
    'Array.prototype pollution before logs are sent',
    "Array.prototype.toJSON = function () { return 'forged'; }; console.log('a'); return [1];",
  ),
  // Shared memory, blocking
  payload('SharedArrayBuffer with Atomics.wait forever', 'Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);'),
  // Web APIs that would reach the network
  payload('fetch to the canary listener', "await use({ connect: () => fetch('http://127.0.0.1:' + CANARY_PORT) });"),
  payload('WebSocket to the canary listener', "new WebSocket('ws://127.0.0.1:' + CANARY_PORT);"),
  payload('Worker thread', "new Worker('data:text/javascript,1');"),
  payload('BroadcastChannel and MessageChannel', "new MessageChannel(); new BroadcastChannel('x');"),
  // Brokered tools used against the policy
  payload(
    'tools.fetch to the canary, host not granted',
    "out.push(await tools.fetch('http://127.0.0.1:' + CANARY_PORT + '/').catch(String));",
    { grants: { fetch: { hosts: ['example.com'] } }, policy: { network: { allowHosts: ['example.com'] } } },
  ),
  payload(
    'tools.fetch with credentials pointing at the canary',
    "out.push(await tools.fetch('http://example.com@127.0.0.1:' + CANARY_PORT + '/').catch(String));",
    { grants: { fetch: { hosts: ['example.com'] } }, policy: { network: { allowHosts: ['example.com'] } } },
  ),
  payload('tools.fetch to a hex-encoded loopback', "out.push(await tools.fetch('http://0x7f000001:' + CANARY_PORT + '/').catch(String));", {
    grants: { fetch: { hosts: ['example.com'] } },
    policy: { network: { allowHosts: ['example.com'] } },
  }),
  payload(
    'tools.fetch granted by the step but not by the policy',
    "out.push(await tools.fetch('http://127.0.0.1:' + CANARY_PORT + '/').catch(String));",
    { grants: { fetch: { hosts: ['127.0.0.1'] } } },
  ),
  payload(
    'tools.fetch without the capability at all',
    "out.push(await tools.fetch('http://127.0.0.1:' + CANARY_PORT + '/').catch(String));",
    { policy: { network: { allowHosts: ['127.0.0.1'] } } },
  ),
  payload('tools.readFile of the canary by absolute path', 'out.push(await tools.readFile(CANARY_FILE).catch(String));', {
    grants: { readFile: true },
    policy: { workspaceRoots: [workspace] },
  }),
  payload(
    'tools.readFile with ../ traversal',
    "out.push(await tools.readFile('../' + CANARY_FILE.split('/').slice(-2).join('/')).catch(String));",
    { grants: { readFile: true }, policy: { workspaceRoots: [workspace] } },
  ),
  payload(
    'tools.readFile through a symlink to the canary',
    "out.push(await tools.readFile('link-to-canary').catch(String)); out.push(await tools.readFile('dir-link/canary.txt').catch(String));",
    { grants: { readFile: true }, policy: { workspaceRoots: [workspace] } },
  ),
  payload(
    'tools.readFile of /proc/self/environ and the parent environ',
    "out.push(await tools.readFile('/proc/self/environ').catch(String)); out.push(await tools.readFile('/proc/' + 1 + '/environ').catch(String));",
    { grants: { readFile: true }, policy: { workspaceRoots: [workspace] } },
  ),
  payload('tools.readFile with a NUL byte', "out.push(await tools.readFile('notes.txt\\u0000/../../' + CANARY_FILE).catch(String));", {
    grants: { readFile: true },
    policy: { workspaceRoots: [workspace] },
  }),
  payload(
    'a flood of tool calls',
    "await Promise.all(Array.from({ length: 500 }, () => tools.kb.search('x').catch(() => null))); out.push('flooded');",
    { grants: { kbSearch: true } },
  ),
  payload('tool stubs are frozen', "tools.readFile = async () => 'replaced'; out.push(await tools.readFile(CANARY_FILE).catch(String));", {
    grants: { readFile: true },
    policy: { workspaceRoots: [workspace] },
  }),
];

/** The canary side effects after a payload: the only evidence that counts. */
function breaches(result: unknown): string[] {
  const text = JSON.stringify(result);
  const found: string[] = [];
  if (text.includes(FILE_TOKEN)) found.push('read the canary file (or the listener answered)');
  if (text.includes(ENV_TOKEN)) found.push('read the host environment variable');
  if (connections > 0) found.push(`connected to the canary listener ${connections} time(s)`);
  if (fs.existsSync(spawnMarker)) found.push('spawned a process');
  if (fs.existsSync(writeMarker)) found.push('wrote a file');
  if ((Object.prototype as Record<string, unknown>).polluted !== undefined) found.push("polluted the host's Object.prototype");
  if ((Array.prototype as unknown as Record<string, unknown>).toJSON !== undefined) found.push("polluted the host's Array.prototype");
  if (inspector.url() !== undefined) found.push("opened the host's inspector");
  return found;
}

describe('escape suite: hostile payloads against the light sandbox', () => {
  it('holds at least 50 payloads', () => {
    expect(PAYLOADS.length).toBeGreaterThanOrEqual(50);
  });

  it('control: the canary check does see a token that comes back (a file the policy lets it read)', async () => {
    fs.writeFileSync(path.join(workspace, 'copy.txt'), FILE_TOKEN);
    const { result } = await run(sandbox, "return await tools.readFile('copy.txt');", {
      grants: { readFile: true },
      policy: { workspaceRoots: [workspace] },
    });
    fs.rmSync(path.join(workspace, 'copy.txt'));
    expect(breaches(result)).toEqual(['read the canary file (or the listener answered)']);
  });

  it.each(PAYLOADS.map((p) => [p.name, p] as const))('%s: reaches no canary', async (_name, p) => {
    const { result, audited } = await run(sandbox, fill(p.code), { timeoutMs: 1500, grants: p.grants as never, policy: p.policy });
    if (process.env.ESCAPE_SUITE_VERBOSE) console.log(p.name, JSON.stringify(result).slice(0, 600));
    expect(breaches(result), JSON.stringify(result).slice(0, 2000)).toEqual([]);
    // Every brokered call the payload made was audited, and none that touched a canary was allowed.
    for (const record of audited) {
      if (record.decision !== 'denied') expect(String(record.target)).not.toContain(canaryDir);
      if (record.tool === 'fetch') expect(record.decision).toBe('denied');
    }
    expect(audited.length).toBeLessThanOrEqual(policyOf().lightSandbox.maxCallsPerStep + 1);
  });

  it('the host is alive and unsignalled after the suite: its inspector is closed', async () => {
    expect(inspector.url()).toBeUndefined();
    const { result } = await run(sandbox, 'return "still answering";');
    expect(result).toMatchObject({ ok: true, value: 'still answering' });
  });
});

/**
 * The layers one at a time, as if the JavaScript walls had fallen: a process under the same wrapper
 * with full access to `process` and `require` still cannot reach the host, its loopback or its files.
 */
describe('escape suite: the layers under the JavaScript walls', () => {
  const support = detectIsolation();
  const requireNamespaces = process.env.CI === 'true' || support.namespaces;

  it.runIf(requireNamespaces)(
    'a process in the worker namespaces cannot signal the host, see it in /proc, open its inspector or reach its loopback',
    () => {
      expect(support.namespaces).toBe(true);
      const wrapper = wrapperFor(support, 1024);
      const script = `
      const net = require('net');
      const out = { env: process.env[${JSON.stringify(ENV_NAME)}] ?? null };
      try { process.kill(${process.pid}, 0); out.signal = 'reached'; } catch (e) { out.signal = e.code; }
      try { process._debugProcess(${process.pid}); out.debug = 'reached'; } catch (e) { out.debug = e.code || e.message; }
      const fs = require('fs');
      out.procPids = fs.readdirSync('/proc').filter((name) => /^[0-9]+$/.test(name)).length;
      try { out.hostEnviron = fs.readFileSync('/proc/${process.pid}/environ', 'utf8'); } catch (e) { out.hostEnviron = e.code; }
      const s = net.connect(${port}, '127.0.0.1');
      s.on('connect', () => { out.net = 'connected'; console.log(JSON.stringify(out)); process.exit(0); });
      s.on('error', (e) => { out.net = e.code; console.log(JSON.stringify(out)); process.exit(0); });
    `;
      const before = connections;
      const child = spawnSync(wrapper[0]!, [...wrapper.slice(1), process.execPath, '-e', script], {
        encoding: 'utf8',
        env: {},
        timeout: 20_000,
      });
      const out = JSON.parse(child.stdout.trim()) as Record<string, string | number | null>;
      expect(out.env).toBeNull();
      expect(out.hostEnviron).toBe('ENOENT');
      expect(out.procPids).toBeLessThanOrEqual(2);
      expect(out.signal).toBe('ESRCH');
      expect(out.debug).not.toBe('reached');
      expect(out.net).not.toBe('connected');
      expect(connections).toBe(before);
      expect(inspector.url()).toBeUndefined();
    },
  );

  it('the host ignores SIGUSR1 once the sandbox is in use: even an unconfined process cannot open its inspector', async () => {
    await run(sandbox, 'return 1');
    const child = spawnSync(process.execPath, ['-e', `process._debugProcess(${process.pid})`], {
      encoding: 'utf8',
      env: {},
      timeout: 20_000,
    });
    expect(child.status).toBe(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(inspector.url()).toBeUndefined();
  });

  it('the permission model alone refuses files, writes, child processes and worker threads', () => {
    const launch = launchFor(support, policyOf().lightSandbox);
    const script = `
      const tryIt = (f) => { try { f(); return 'allowed'; } catch (e) { return e.code || e.message; } };
      console.log(JSON.stringify({
        read: tryIt(() => require('fs').readFileSync(${JSON.stringify(canaryFile)}, 'utf8')),
        write: tryIt(() => require('fs').writeFileSync(${JSON.stringify(writeMarker)}, 'x')),
        spawn: tryIt(() => require('child_process').execSync('touch ' + ${JSON.stringify(spawnMarker)})),
        worker: tryIt(() => new (require('worker_threads').Worker)('1', { eval: true })),
      }));
    `;
    const flags = launch.nodeArgs.filter(
      (flag) => !flag.startsWith('--allow-fs-read') && flag !== '--disallow-code-generation-from-strings',
    );
    const child = spawnSync(process.execPath, [...flags, '-e', script], { encoding: 'utf8', env: {}, timeout: 20_000 });
    const out = JSON.parse(child.stdout.trim()) as Record<string, string>;
    expect(out).toEqual({ read: 'ERR_ACCESS_DENIED', write: 'ERR_ACCESS_DENIED', spawn: 'ERR_ACCESS_DENIED', worker: 'ERR_ACCESS_DENIED' });
    expect(fs.existsSync(writeMarker)).toBe(false);
    expect(fs.existsSync(spawnMarker)).toBe(false);
  });
});
