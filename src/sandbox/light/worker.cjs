'use strict';
// The light sandbox's worker. Plain JavaScript on purpose: Node's permission model lets this process
// read this one file and nothing else, so it cannot load TypeScript tooling. CommonJS because it
// boots measurably faster than an ES module (the pool refills sooner); strict from the first line,
// so the module wrapper itself is a strict function and no frame of ours exposes `.caller`,
// `.arguments` (which would hold `require`) or a CallSite function.
// One process runs one snippet, then the host kills it.
const net = require('node:net');
const vm = require('node:vm');
const { format } = require('node:util');

// Under plain Node the host talks on descriptor 3, a socket pair, one JSON line per frame both ways
// (not Node's IPC channel: the host parses our lines itself, defensively). In an Electron utility
// process there is no descriptor 3; the host talks on process.parentPort instead, one JSON text per
// message, parsed by the host just as defensively. Either way it is captured here, in a local that
// no user code can name, before `process` is stripped.
const parentPort = process.parentPort;
const channel = parentPort ? null : new net.Socket({ fd: 3, readable: true, writable: true });

// Everything the worker itself needs is captured before user code could tamper with a global.
const onProcess = process.on.bind(process);
const exitNow = (process.reallyExit ?? process.exit).bind(process);
const stringify = JSON.stringify;
const parse = JSON.parse;
const byteLength = (text) => Buffer.byteLength(text, 'utf8');
const bufferFrom = Buffer.from;
const compileFunction = vm.compileFunction;
const defineProperty = Object.defineProperty;
const freeze = Object.freeze;
const create = Object.create;
const PromiseCtor = Promise;
const StringCtor = String;
const WeakMapCtor = WeakMap;
const weakMapGet = WeakMap.prototype.get;
const weakMapSet = WeakMap.prototype.set;
const weakMapHas = WeakMap.prototype.has;
const reflectApply = Reflect.apply;
const postToHost = parentPort ? parentPort.postMessage.bind(parentPort) : null;
const send = (frame) => (postToHost ? postToHost(stringify(frame)) : channel.write(stringify(frame) + '\n'));

// Code from strings: plain Node refuses it by flag (--disallow-code-generation-from-strings). A
// utility process does not apply Node's flags, so where the runtime still allows it the worker
// takes away every way to it itself: eval and Function go with the other globals below, and the
// constructors reachable from any function's prototype chain refuse.
let codeFromStrings = true;
try {
  new Function('');
} catch {
  codeFromStrings = false;
}
if (codeFromStrings) {
  const refuse = function () {
    throw new EvalError('Code generation from strings is disallowed in the light sandbox');
  };
  const samples = [function () {}, async function () {}, function* () {}, async function* () {}];
  for (const sample of samples) {
    defineProperty(Object.getPrototypeOf(sample), 'constructor', {
      value: refuse,
      writable: false,
      enumerable: false,
      configurable: false,
    });
  }
}

// Removed before user code runs, non-configurably, so nothing can put them back. `process` goes
// entirely: it is the door to bindings, env, signals, the IPC descriptor and the inspector.
const REMOVED_GLOBALS = [
  'process',
  'require',
  'module',
  'exports',
  '__filename',
  '__dirname',
  'fetch',
  'WebSocket',
  'EventSource',
  'Request',
  'Response',
  'Headers',
  'FormData',
  'Worker',
  'BroadcastChannel',
  'MessageChannel',
  'MessagePort',
  'MessageEvent',
  'navigator',
  ...(codeFromStrings ? ['eval', 'Function'] : []),
];
for (const name of REMOVED_GLOBALS) {
  try {
    delete globalThis[name];
  } catch {
    /* already non-configurable: overwritten below */
  }
  defineProperty(globalThis, name, { value: undefined, writable: false, enumerable: false, configurable: false });
}
// CallSite objects hand out functions of sloppy frames; there are none of ours, and user code may not install a hook.
defineProperty(Error, 'prepareStackTrace', { value: undefined, writable: false, configurable: false });

let limits = { maxResultBytes: 32 * 1024, maxLogBytes: 32 * 1024, maxToolArgsBytes: 64 * 1024, maxValueDepth: 32 };
let logBytes = 0;
let logsTruncated = false;
const logs = [];
let nextCallId = 1;
const pendingCalls = new Map();
let started = false;

function cut(text, maxBytes) {
  if (byteLength(text) <= maxBytes) return text;
  const sliced = bufferFrom(text, 'utf8').subarray(0, maxBytes).toString('utf8');
  return sliced.endsWith('\uFFFD') ? sliced.slice(0, -1) : sliced;
}

function capture(level, args) {
  if (logsTruncated) return;
  let line;
  try {
    line = format(...args);
  } catch (error) {
    line = `[${level}: unprintable value]`;
  }
  if (level !== 'log' && level !== 'info') line = `[${level}] ${line}`;
  const room = limits.maxLogBytes - logBytes;
  const size = byteLength(line) + 1;
  if (size > room) {
    if (room > 0) logs.push(cut(line, room - 1));
    logsTruncated = true;
    logBytes = limits.maxLogBytes;
    return;
  }
  logs.push(line);
  logBytes += size;
}

const sandboxConsole = freeze({
  log: (...args) => capture('log', args),
  info: (...args) => capture('info', args),
  warn: (...args) => capture('warn', args),
  error: (...args) => capture('error', args),
  debug: (...args) => capture('debug', args),
});
defineProperty(globalThis, 'console', { value: sandboxConsole, writable: false, configurable: false });

function callTool(tool, args) {
  return new PromiseCtor((resolve, reject) => {
    let encoded;
    try {
      encoded = stringify(args);
    } catch {
      reject(new TypeError(`tools.${tool}: arguments must be plain JSON values`));
      return;
    }
    if (encoded === undefined || byteLength(encoded) > limits.maxToolArgsBytes) {
      reject(new RangeError(`tools.${tool}: arguments are larger than ${limits.maxToolArgsBytes} bytes`));
      return;
    }
    const id = nextCallId++;
    pendingCalls.set(id, { resolve, reject });
    send({ t: 'call', id, tool, args: parse(encoded) });
  });
}

/** Stubs generated from the host's tool registry: "kb.search" becomes tools.kb.search(...). */
function buildTools(names) {
  const root = create(null);
  for (const name of names) {
    const parts = StringCtor(name).split('.');
    let node = root;
    for (const part of parts.slice(0, -1)) node = node[part] ??= create(null);
    node[parts[parts.length - 1]] = (...args) => callTool(name, args);
  }
  const deepFreeze = (value) => {
    for (const key of Object.keys(value)) if (typeof value[key] === 'object') deepFreeze(value[key]);
    return freeze(value);
  };
  return deepFreeze(root);
}

function describeError(error) {
  try {
    if (error instanceof Error) return { name: StringCtor(error.name), message: StringCtor(error.message) };
    return { name: 'Thrown', message: StringCtor(error) };
  } catch {
    return { name: 'Thrown', message: 'a value that cannot be printed' };
  }
}

let finished = false;
function finish(frame) {
  if (finished) return;
  finished = true;
  send({ ...frame, logs, logsTruncated });
}

async function run(message) {
  limits = { ...limits, ...message.limits };
  let fn;
  try {
    // Strict, in this context, with no dynamic-import callback: import() rejects, and eval/Function
    // are refused by --disallow-code-generation-from-strings.
    fn = compileFunction(`'use strict';\nreturn (async () => {\n${message.code}\n})();`, ['tools', 'console', 'input'], {
      filename: 'runCode.js',
    });
  } catch (error) {
    finish({ t: 'done', ok: false, error: describeError(error) });
    return;
  }
  let value;
  try {
    // A skill's input: parsed here, so it is a value of this context and never code.
    const input = typeof message.inputJson === 'string' ? parse(message.inputJson) : undefined;
    value = await fn(buildTools(message.tools), sandboxConsole, input);
  } catch (error) {
    finish({ t: 'done', ok: false, error: describeError(error) });
    return;
  }
  // Getters and toJSON run here, inside the host's kill timer, never in the host. Containers
  // nested past maxValueDepth become a marker on the way: the record could not hold them, and
  // JSON.stringify would run out of stack on a value nested some thousands deep.
  let json;
  let valueTruncated = false;
  const depths = new WeakMapCtor();
  const maxDepth = limits.maxValueDepth;
  const capDepth = function (key, item) {
    if (item === null || typeof item !== 'object') return item;
    const depth = reflectApply(weakMapHas, depths, [this]) ? reflectApply(weakMapGet, depths, [this]) + 1 : 0;
    if (depth >= maxDepth) {
      valueTruncated = true;
      return `[cut: nested deeper than ${maxDepth} levels]`;
    }
    reflectApply(weakMapSet, depths, [item, depth]);
    return item;
  };
  try {
    json = value === undefined ? 'null' : stringify(value, capDepth);
    if (json === undefined) json = 'null';
  } catch (error) {
    finish({
      t: 'done',
      ok: false,
      error: { name: 'TypeError', message: `The returned value cannot be turned into JSON: ${describeError(error).message}` },
    });
    return;
  }
  const tooLarge = byteLength(json) > limits.maxResultBytes;
  finish({ t: 'done', ok: true, json: tooLarge ? cut(json, limits.maxResultBytes) : json, tooLarge, valueTruncated });
}

function onHostFrame(message) {
  if (message === null || typeof message !== 'object') return;
  if (message.t === 'run' && !started) {
    started = true;
    run(message).catch(() => finish({ t: 'done', ok: false, error: { name: 'Error', message: 'the worker failed to report' } }));
  } else if (message.t === 'reply') {
    const pending = pendingCalls.get(message.id);
    if (!pending) return;
    pendingCalls.delete(message.id);
    if (message.ok) pending.resolve(message.value);
    else pending.reject(new Error(StringCtor(message.error)));
  }
}

function onHostText(text) {
  let frame;
  try {
    frame = parse(text);
  } catch {
    return;
  }
  onHostFrame(frame);
}

let received = '';
if (parentPort) {
  parentPort.on('message', (event) => {
    if (typeof event?.data === 'string') onHostText(event.data);
  });
} else {
  channel.setEncoding('utf8');
  channel.on('data', (chunk) => {
    received += chunk;
    for (let newline = received.indexOf('\n'); newline !== -1; newline = received.indexOf('\n')) {
      const line = received.slice(0, newline);
      received = received.slice(newline + 1);
      onHostText(line);
    }
  });
  // The host is gone: nothing left to answer to. (A utility process dies with the app.)
  channel.on('close', () => exitNow(0));
  channel.on('error', () => exitNow(0));
}
// A throw from a timer callback is the code's error, not a crash of the worker; a rejection nobody
// awaited is only worth a log line (the default would end the process before the result is sent).
onProcess('uncaughtException', (error) => {
  if (started) finish({ t: 'done', ok: false, error: describeError(error) });
});
onProcess('unhandledRejection', (reason) => capture('error', ['Unhandled promise rejection:', describeError(reason).message]));
// Pay the first compile and the first IPC encode while waiting in the pool, not inside a step.
compileFunction(`'use strict';\nreturn (async () => 1)();`, ['tools', 'console'])().then(() => send({ t: 'ready' }));
