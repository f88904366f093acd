/**
 * Round trip of listSteps over the local socket and the loopback WebSocket, signed (the real
 * protocol: HMAC on request, reply and canonical JSON) against unsigned (the same request, the
 * same dispatcher and handler, the same result check, plain JSON, no MAC) over the same transport
 * in the same run. The host runs in its own process (bench/ipc-server.ts), as it does for every
 * client in the product, so each side's work lands on its own thread. Target: signed ≤ 1.2× unsigned.
 * Then the window's real traffic (open, History, scroll, a proposal arriving), paged summaries and one
 * record, signed against unsigned the same way (at least 1000 rounds each), with each reply's size
 * against 64 KiB, and what the queue's open cost before it listed summaries instead of records.
 *
 *   npx tsx bench/ipc.ts [steps=200] [rounds=300] [only=window]  (window: only the window's traffic)
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import readline from 'node:readline';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { createExecutorClient, openSession, SignedRpc, type ClientTransport, type ExecutorClient } from '../src/ipc/client/client.js';
import { METHODS } from '../src/ipc/protocol/methods.js';
import { connectToHost } from '../src/ipc/transports/node-client.js';
import { deriveSessionKey, nodeMac } from '../src/ipc/protocol/message-mac-node.js';
import { canonicalText, sessionKeyInput } from '../src/ipc/protocol/protocol.js';
import { connectSocket } from '../src/ipc/transports/socket-transport.js';
import { connectWithToken, webSocketTransport, type WebSocketLike } from '../src/ipc/client/web-client.js';

const stepCount = Number(process.argv[2] ?? 200);
const rounds = Number(process.argv[3] ?? 300);
const onlyWindow = process.argv[4] === 'window';

const server = spawn(process.execPath, [...process.execArgv, new URL('./ipc-server.ts', import.meta.url).pathname, String(stepCount)], {
  stdio: ['pipe', 'pipe', 'inherit'],
});
const serverLines = readline.createInterface({ input: server.stdout! })[Symbol.asyncIterator]();
const nextLine = async <T>(): Promise<T> => {
  const next = await serverLines.next();
  if (next.done) throw new Error('bench/ipc-server.ts ended early');
  return JSON.parse(next.value) as T;
};
const where = await nextLine<{ dataDir: string; plainSocketPath: string; plainWsPort: number; webPort: number; origin: string }>();
/** A fresh one-time web token from the server. */
const webToken = async (): Promise<string> => {
  server.stdin!.write('token\n');
  return (await nextLine<{ token: string }>()).token;
};

async function unsignedCall(transport: ClientTransport, id: number): Promise<number> {
  const reply = JSON.parse(
    await transport.request(JSON.stringify({ v: 1, id: String(id), ts: Date.now(), method: 'listSteps', params: {} })),
  ) as { result: unknown };
  return METHODS.listSteps.result.parse(reply.result).length;
}

const origin = where.origin;
const makeSocket = (url: string) => new WebSocket(url, { origin, maxPayload: 1 << 30 }) as unknown as WebSocketLike;

const signedSocket: ExecutorClient = await connectToHost(where.dataDir, 'cli');
// The browser's client signs with WebCrypto (asynchronous, on libuv's thread pool in Node); the
// same protocol with node:crypto shows what the transport and signing cost without that hop.
const signedWebCrypto: ExecutorClient = (await connectWithToken(`ws://127.0.0.1:${where.webPort}/api/ws`, await webToken(), makeSocket))
  .client;
const signedWeb: ExecutorClient = await (async () => {
  const token = new TextEncoder().encode(await webToken());
  const transport = await webSocketTransport(`ws://127.0.0.1:${where.webPort}/api/ws`, makeSocket);
  const session = await openSession(transport, 'web', async (serverNonce, clientNonce) =>
    nodeMac(deriveSessionKey(token, sessionKeyInput(clientNonce, serverNonce))),
  );
  return createExecutorClient(new SignedRpc(transport, session));
})();
const plainSocket = await connectSocket(where.plainSocketPath);
const plainWeb = await webSocketTransport(`ws://127.0.0.1:${where.plainWsPort}/`, makeSocket);

const responseBytes = Buffer.byteLength(JSON.stringify(await signedSocket.listSteps()));

/**
 * Signed and unsigned calls alternate round by round (order flipped each round), so a load spike
 * from other processes on the machine lands on both sides alike instead of on one block.
 */
async function measurePaired(
  signedCall: () => Promise<number>,
  unsignedCall: () => Promise<number>,
): Promise<{ signed: number[]; unsigned: number[] }> {
  const signed: number[] = [];
  const unsigned: number[] = [];
  const timed = async (call: () => Promise<number>, into: number[]) => {
    const start = performance.now();
    const count = await call();
    into.push(performance.now() - start);
    if (count !== stepCount) throw new Error(`expected ${stepCount} steps, got ${count}`);
  };
  for (let round = 0; round < rounds; round++) {
    if (round % 2) {
      await timed(signedCall, signed);
      await timed(unsignedCall, unsigned);
    } else {
      await timed(unsignedCall, unsigned);
      await timed(signedCall, signed);
    }
  }
  return { signed, unsigned };
}

const percentile = (times: number[], p: number) => {
  const sorted = [...times].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

let id = 0;
const cases = {
  socket: { signed: () => signedSocket.listSteps().then((r) => r.length), unsigned: () => unsignedCall(plainSocket, ++id) },
  web: { signed: () => signedWeb.listSteps().then((r) => r.length), unsigned: () => unsignedCall(plainWeb, ++id) },
  'web, WebCrypto client': {
    signed: () => signedWebCrypto.listSteps().then((r) => r.length),
    unsigned: () => unsignedCall(plainWeb, ++id),
  },
};

console.log(
  `listSteps round trip: ${stepCount} steps, ${(responseBytes / 1024).toFixed(0)} KiB reply, ${rounds} rounds each (after warm-up)`,
);
for (const [name, pair] of onlyWindow ? [] : Object.entries(cases)) {
  for (let warm = 0; warm < 20; warm++) {
    await pair.signed();
    await pair.unsigned();
  }
  const { signed, unsigned } = await measurePaired(pair.signed, pair.unsigned);
  const row = (label: string, times: number[]) =>
    `${label} p50 ${percentile(times, 50).toFixed(2)} ms  p99 ${percentile(times, 99).toFixed(2)} ms`;
  console.log(
    `${name.padEnd(22)} ${row('signed', signed)} | ${row('unsigned', unsigned)} | ratio p50 ${(percentile(signed, 50) / percentile(unsigned, 50)).toFixed(2)}× p99 ${(percentile(signed, 99) / percentile(unsigned, 99)).toFixed(2)}×`,
  );
}
// The window's real traffic (each reply under 64 KiB): what it asks for when it opens (the queue's first page of
// summaries, its two counts, and the record of the step it shows in detail), when History opens and
// scrolls (a page of summaries, the next page), and when a proposal arrives (the step's record,
// fetched when its summary event comes). Each reply is measured against 64 KiB. Signed and unsigned
// calls alternate round by round (order flipped each round) over many rounds, so the p99 is a tail of
// both under the same noise (other processes on the machine), not a handful of outliers on one side.
{
  const windowRounds = Math.max(rounds, 1000);
  async function unsignedAny(transport: ClientTransport, method: keyof typeof METHODS, params: unknown): Promise<unknown> {
    const reply = JSON.parse(await transport.request(JSON.stringify({ v: 1, id: String(++id), ts: Date.now(), method, params }))) as {
      result: unknown;
    };
    return METHODS[method].result.parse(reply.result);
  }
  type Call = (method: keyof typeof METHODS, params: unknown) => Promise<unknown>;
  const signedCall =
    (client: ExecutorClient): Call =>
    (method, params) =>
      (client[method] as (params: unknown) => Promise<unknown>)(params);
  const unsignedCallOf =
    (transport: ClientTransport): Call =>
    (method, params) =>
      unsignedAny(transport, method, params);
  const waitingStatus = ['proposed', 'evaluated', 'awaiting_consent', 'approved'] as (
    'proposed' | 'evaluated' | 'awaiting_consent' | 'approved'
  )[];
  const waitingParams = { status: waitingStatus, limit: 50 };
  const historyParams = { limit: 50 };
  const firstPage = await signedSocket.listStepSummaries(historyParams);
  const scrollParams = { ...historyParams, cursor: firstPage.nextCursor! };
  const detailParams = { stepId: firstPage.items[0]!.id, maxBytes: 56 * 1024 };
  /**
   * The queue as it opens (renderer/waiting-steps.ts): pages of summaries up to 100 steps, then (more
   * wait than it lists) its two counts, and the record of the step shown in detail.
   */
  const openQueue = async (call: Call) => {
    const first = (await call('listStepSummaries', waitingParams)) as { nextCursor: string | null };
    const second = first.nextCursor
      ? ((await call('listStepSummaries', { ...waitingParams, cursor: first.nextCursor })) as { nextCursor: string | null })
      : null;
    const counts = second?.nextCursor
      ? [
          call('listStepSummaries', { status: waitingStatus, limit: 1 }),
          call('listStepSummaries', { status: ['awaiting_consent'], limit: 1 }),
        ]
      : [];
    await Promise.all([...counts, call('getStep', detailParams)]);
    return 1;
  };
  /** How the queue opened before it listed summaries: pages of summaries up to 100 steps, then each one's record cut at 8 KiB. */
  const openQueueBefore = async (call: Call) => {
    const ids: string[] = [];
    let cursor: string | null | undefined;
    do {
      const page = (await call('listStepSummaries', { ...waitingParams, ...(cursor ? { cursor } : {}) })) as {
        items: { id: string }[];
        nextCursor: string | null;
      };
      ids.push(...page.items.map((item) => item.id));
      cursor = page.nextCursor;
    } while (cursor && ids.length < 100);
    await Promise.all(ids.slice(0, 100).map((stepId) => call('getStep', { stepId, maxBytes: 8 * 1024 })));
    await Promise.all([
      call('listStepSummaries', { status: waitingStatus, limit: 1 }),
      call('listStepSummaries', { status: ['awaiting_consent'], limit: 1 }),
    ]);
    return 1;
  };
  /** Bytes of every reply a scenario receives. */
  const bytesOf = async (scenario: (call: Call) => Promise<number>) => {
    let total = 0;
    let largest = 0;
    await scenario(async (method, params) => {
      const result = await signedCall(signedSocket)(method, params);
      const bytes = Buffer.byteLength(JSON.stringify(result));
      total += bytes;
      largest = Math.max(largest, bytes);
      return result;
    });
    return { total, largest };
  };
  const sizes = {
    'queue page': Buffer.byteLength(JSON.stringify(await signedSocket.listStepSummaries(waitingParams))),
    'history page': Buffer.byteLength(JSON.stringify(firstPage)),
    'next page': Buffer.byteLength(JSON.stringify(await signedSocket.listStepSummaries(scrollParams))),
    'step record': Buffer.byteLength(JSON.stringify(await signedSocket.getStep(detailParams))),
  };
  console.log(
    `\nwindow traffic: replies ${Object.entries(sizes)
      .map(([name, bytes]) => `${name} ${(bytes / 1024).toFixed(1)} KiB`)
      .join(', ')} (limit 64 KiB: ${Object.values(sizes).every((bytes) => bytes < 64 * 1024) ? 'all under' : 'OVER'})`,
  );
  {
    const now = await bytesOf(openQueue);
    const before = await bytesOf(openQueueBefore);
    const timeOf = async (scenario: (call: Call) => Promise<number>) => {
      const times: number[] = [];
      for (let round = 0; round < 30; round++) {
        const start = performance.now();
        await scenario(signedCall(signedSocket));
        times.push(performance.now() - start);
      }
      return percentile(times, 50);
    };
    const [nowTime, beforeTime] = [await timeOf(openQueue), await timeOf(openQueueBefore)];
    console.log(
      `queue open with ${stepCount} waiting: now ${(now.total / 1024).toFixed(1)} KiB in 5 replies (largest ${(now.largest / 1024).toFixed(1)} KiB), p50 ${nowTime.toFixed(1)} ms; ` +
        `before (100 records at 8 KiB) ${(before.total / 1024).toFixed(1)} KiB in 104 replies (largest ${(before.largest / 1024).toFixed(1)} KiB), p50 ${beforeTime.toFixed(1)} ms (signed, socket)`,
    );
  }
  const scenario = (signed: Call, unsigned: Call) => ({
    'open (queue)': { signed: () => openQueue(signed), unsigned: () => openQueue(unsigned) },
    'history page': {
      signed: async () => signed('listStepSummaries', historyParams).then(() => 1),
      unsigned: async () => unsigned('listStepSummaries', historyParams).then(() => 1),
    },
    scroll: {
      signed: async () => signed('listStepSummaries', scrollParams).then(() => 1),
      unsigned: async () => unsigned('listStepSummaries', scrollParams).then(() => 1),
    },
    'proposal arrives': {
      signed: async () => signed('getStep', detailParams).then(() => 1),
      unsigned: async () => unsigned('getStep', detailParams).then(() => 1),
    },
  });
  // Each transport's sessions are opened just before its rounds: a web session left idle while another transport is measured may be gone by then.
  const freshWeb = async (webCrypto: boolean): Promise<[ExecutorClient, ClientTransport]> => {
    const plain = await webSocketTransport(`ws://127.0.0.1:${where.plainWsPort}/`, makeSocket);
    if (webCrypto) return [(await connectWithToken(`ws://127.0.0.1:${where.webPort}/api/ws`, await webToken(), makeSocket)).client, plain];
    const token = new TextEncoder().encode(await webToken());
    const transport = await webSocketTransport(`ws://127.0.0.1:${where.webPort}/api/ws`, makeSocket);
    const session = await openSession(transport, 'web', async (serverNonce, clientNonce) =>
      nodeMac(deriveSessionKey(token, sessionKeyInput(clientNonce, serverNonce))),
    );
    return [createExecutorClient(new SignedRpc(transport, session)), plain];
  };
  const windowCases: Record<string, () => Promise<[ExecutorClient, ClientTransport]>> = {
    socket: async () => [signedSocket, plainSocket],
    web: () => freshWeb(false),
    'web, WebCrypto client (as the window)': () => freshWeb(true),
  };
  console.log(`${windowRounds} rounds each, signed and unsigned alternating (after 50 warm-up rounds)`);
  for (const [transportName, open] of Object.entries(windowCases)) {
    const [client, transport] = await open();
    const steps = scenario(signedCall(client), unsignedCallOf(transport));
    for (const [name, pair] of Object.entries(steps)) {
      for (let warm = 0; warm < 50; warm++) {
        await pair.signed();
        await pair.unsigned();
      }
      const signed: number[] = [];
      const unsigned: number[] = [];
      for (let round = 0; round < windowRounds; round++) {
        const order =
          round % 2
            ? ([
                [pair.signed, signed],
                [pair.unsigned, unsigned],
              ] as const)
            : ([
                [pair.unsigned, unsigned],
                [pair.signed, signed],
              ] as const);
        for (const [call, into] of order) {
          const start = performance.now();
          await call();
          into.push(performance.now() - start);
        }
      }
      const row = (label: string, times: number[]) =>
        `${label} p50 ${percentile(times, 50).toFixed(2)} ms  p99 ${percentile(times, 99).toFixed(2)} ms`;
      console.log(
        `${`${transportName}: ${name}`.padEnd(56)} ${row('signed', signed)} | ${row('unsigned', unsigned)} | ratio p50 ${(percentile(signed, 50) / percentile(unsigned, 50)).toFixed(2)}× p99 ${(percentile(signed, 99) / percentile(unsigned, 99)).toFixed(2)}×  (target ≤ 1.2×)`,
      );
    }
  }
}
// Where the difference goes, measured on the same reply (best of 100: the least disturbed by other load).
{
  const reply = { v: 1, id: 'x', ok: true, result: await signedSocket.listSteps() };
  const text = JSON.stringify(reply);
  const mac = nodeMac(new Uint8Array(32));
  const best = async (work: () => unknown) => {
    let fastest = Infinity;
    for (let round = 0; round < 100; round++) {
      const start = performance.now();
      await work();
      fastest = Math.min(fastest, performance.now() - start);
    }
    return fastest.toFixed(2);
  };
  console.log(
    `per reply, best of 100: JSON.stringify ${await best(() => JSON.stringify(reply))} ms, canonical JSON ${await best(() => canonicalText(reply))} ms, ` +
      `HMAC-SHA256 ${await best(() => mac.sign('x', text))} ms (once to sign, once to verify), JSON.parse ${await best(() => JSON.parse(text))} ms`,
  );
}
console.log(
  `(load average ${os
    .loadavg()
    .map((load) => load.toFixed(1))
    .join(' ')} on ${os.cpus().length} CPUs)`,
);

signedSocket.close();
signedWeb.close();
signedWebCrypto.close();
plainSocket.close();
plainWeb.close();
server.stdin!.end();
await new Promise((resolve) => server.once('exit', resolve));
