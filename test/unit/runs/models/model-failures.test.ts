/**
 * What a model client does when the endpoint misbehaves, against a scripted server on loopback
 * speaking the provider's real wire format (the one allowed fake). Times are measured by the
 * server's clock: it is the server that asked to be left alone.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ExecutorError } from '../../../../src/domain/errors.js';
import type { ModelMessage, ModelSettings } from '../../../../src/runs/model-client.js';
import { createModelClient } from '../../../../src/runs/models/create-model-client.js';
import { startScriptedAnthropicServer } from '../../../helpers/scripted-anthropic-server.js';
import { say, startScriptedOpenAiServer, type ScriptedServer, type ScriptedTurnSource } from '../../../helpers/scripted-openai-server.js';

interface Provider {
  name: 'openai' | 'anthropic';
  start(script: ScriptedTurnSource): Promise<ScriptedServer>;
}
const PROVIDERS: Provider[] = [
  { name: 'openai', start: startScriptedOpenAiServer },
  { name: 'anthropic', start: startScriptedAnthropicServer },
];

const KEY = 'sk-live-Zq81XvTT0pLm4AaBbCcDdEe';
const MESSAGES: ModelMessage[] = [{ role: 'user', content: 'hello' }];
const servers: ScriptedServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

async function failure(promise: Promise<unknown>): Promise<ExecutorError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ExecutorError);
  return error as ExecutorError;
}

function expectNoKey(error: ExecutorError): void {
  const everything = `${error.message}\n${JSON.stringify(error.details ?? {})}\n${JSON.stringify(error.toJSON())}\n${String(error.stack)}`;
  expect(everything).not.toContain(KEY);
  for (let at = 0; at + 6 <= KEY.length; at++) expect(everything).not.toContain(KEY.slice(at, at + 6));
}

for (const provider of PROVIDERS) {
  describe(`${provider.name} client when the endpoint fails`, () => {
    async function setup(script: ScriptedTurnSource, settings: Partial<ModelSettings> = {}) {
      const server = await provider.start(script);
      servers.push(server);
      const client = createModelClient(
        { provider: provider.name, baseUrl: server.baseUrl, model: 'm', maxRetries: 3, timeoutMs: 10_000, ...settings },
        KEY,
      );
      return { server, client };
    }
    const turn = (client: ReturnType<typeof createModelClient>, signal = new AbortController().signal) =>
      client.turn({ messages: MESSAGES, tools: [], signal });

    for (const stream of [false, true]) {
      it(`retries a 429 after at least the Retry-After it asked, in seconds (${stream ? 'streaming' : 'not streaming'})`, async () => {
        const { server, client } = await setup([{ kind: 'error', status: 429, retryAfter: '1' }, say('finally')], { stream });
        const answer = await turn(client);
        expect(answer.text).toBe('finally');
        const [first, second] = server.requests;
        expect(server.requests).toHaveLength(2);
        expect(second!.receivedAt - first!.answeredAt!).toBeGreaterThanOrEqual(1000);
      });
    }

    it('honours Retry-After given as an HTTP date', async () => {
      // An HTTP date has whole seconds: two seconds ahead is at least one second of wait.
      const when = new Date(Date.now() + 2000).toUTCString();
      const { server, client } = await setup([{ kind: 'error', status: 503, retryAfter: when }, say('ok')]);
      expect((await turn(client)).text).toBe('ok');
      expect(server.requests[1]!.receivedAt - server.requests[0]!.answeredAt!).toBeGreaterThanOrEqual(1000);
    });

    it('does not wait out a Retry-After longer than a minute: it says so at once', async () => {
      const { server, client } = await setup([{ kind: 'error', status: 429, retryAfter: '3600' }, say('never')]);
      const error = await failure(turn(client));
      expect(error.code).toBe('MODEL_UNAVAILABLE');
      expect(error.message).toContain('3600 s');
      expect(server.requests).toHaveLength(1);
    });

    it('gives up after the set number of retries of a 500, counting every attempt', async () => {
      const { server, client } = await setup(
        Array.from({ length: 5 }, () => ({ kind: 'error' as const, status: 500, message: 'upstream exploded' })),
        { maxRetries: 2 },
      );
      const error = await failure(turn(client));
      expect(error.code).toBe('MODEL_UNAVAILABLE');
      expect(server.requests).toHaveLength(3);
      expect(error.details).toMatchObject({ status: 500, attempts: 3, endpoint: server.baseUrl });
      expect(error.message).toContain(server.baseUrl);
      expect(error.message).toContain('500');
      expect(error.message).toContain('upstream exploded');
    });

    for (const status of [400, 401, 403, 404]) {
      it(`answers ${status} as MODEL_REFUSED without retrying, naming the endpoint and status but never the key the server echoed`, async () => {
        const { server, client } = await setup([
          { kind: 'error', status, echoAuthorization: true, message: `Incorrect API key provided: sk-live-****DdEe; full ${KEY}` },
          say('x'),
        ]);
        const error = await failure(turn(client));
        expect(error.code).toBe('MODEL_REFUSED');
        expect(server.requests).toHaveLength(1);
        expect(error.message).toContain(server.baseUrl);
        expect(error.message).toContain(String(status));
        expectNoKey(error);
      });
    }

    it('keeps the key out of a 500 echo too, even after retries', async () => {
      const { client } = await setup(
        [
          { kind: 'error', status: 500, echoAuthorization: true },
          { kind: 'error', status: 500, echoAuthorization: true },
        ],
        { maxRetries: 1 },
      );
      const error = await failure(turn(client));
      expect(error.code).toBe('MODEL_UNAVAILABLE');
      expectNoKey(error);
    });

    it('a server that never answers is MODEL_TIMEOUT, and the connection is dropped', async () => {
      const { server, client } = await setup([{ kind: 'hang' }], { timeoutMs: 300 });
      const error = await failure(turn(client));
      expect(error.code).toBe('MODEL_TIMEOUT');
      expect(error.message).toContain(server.baseUrl);
      await server.waitForAbandon(1);
      expect(server.requests).toHaveLength(1);
    });

    it('a stream that falls silent part-way is MODEL_TIMEOUT', async () => {
      const { server, client } = await setup([{ kind: 'hang-mid-stream', text: 'I will now' }], { timeoutMs: 300, stream: true });
      const error = await failure(turn(client));
      expect(error.code).toBe('MODEL_TIMEOUT');
      await server.waitForAbandon(1);
    });

    it('Cancel during the call stops it at once: RUN_CANCELLED, the connection dropped', async () => {
      const { server, client } = await setup([{ kind: 'hang' }]);
      const controller = new AbortController();
      const pending = turn(client, controller.signal);
      await server.waitForRequest(1);
      controller.abort();
      const error = await failure(pending);
      expect(error.code).toBe('RUN_CANCELLED');
      await server.waitForAbandon(1);
    });

    it('Cancel during a backoff wait ends it at once, with no further request', async () => {
      const { server, client } = await setup([{ kind: 'error', status: 429, retryAfter: '50' }, say('too late')]);
      const controller = new AbortController();
      const started = Date.now();
      const pending = turn(client, controller.signal);
      await server.waitForRequest(1);
      controller.abort();
      const error = await failure(pending);
      expect(error.code).toBe('RUN_CANCELLED');
      // Fifty seconds were asked; ending long before that shows the wait did not run out.
      expect(Date.now() - started).toBeLessThan(40_000);
      expect(server.requests).toHaveLength(1);
    });

    it('a signal already aborted makes no request', async () => {
      const { server, client } = await setup([say('x')]);
      const controller = new AbortController();
      controller.abort();
      expect((await failure(turn(client, controller.signal))).code).toBe('RUN_CANCELLED');
      expect(server.requests).toHaveLength(0);
    });

    it('an address with nothing listening is MODEL_UNAVAILABLE, saying it could not be reached', async () => {
      const closed = net.createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const port = (closed.address() as net.AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      const client = createModelClient({ provider: provider.name, baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm', maxRetries: 1 }, KEY);
      const error = await failure(turn(client));
      expect(error.code).toBe('MODEL_UNAVAILABLE');
      expect(error.message).toContain('could not be reached');
      expect(error.details).toMatchObject({ attempts: 2 });
    });

    it('a web page where the API was expected is MODEL_UNAVAILABLE, not retried', async () => {
      const { server, client } = await setup([
        { kind: 'raw', status: 200, contentType: 'application/json', body: '<html>router login</html>' },
        say('x'),
      ]);
      const error = await failure(turn(client));
      expect(error.code).toBe('MODEL_UNAVAILABLE');
      expect(server.requests).toHaveLength(1);
    });

    it('an answer without a message (no choices, no content) is MODEL_UNAVAILABLE, not retried', async () => {
      const body =
        provider.name === 'openai'
          ? '{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[]}'
          : '{"id":"msg_1","type":"message","model":"m"}';
      const { server, client } = await setup([{ kind: 'raw', status: 200, contentType: 'application/json', body }, say('x')]);
      const error = await failure(turn(client));
      expect(error.code).toBe('MODEL_UNAVAILABLE');
      expect(error.message).toContain(server.baseUrl);
      expect(server.requests).toHaveLength(1);
    });

    it('writes nothing to the console, even when the SDK is told to log everything', async () => {
      const saved = { openai: process.env.OPENAI_LOG, anthropic: process.env.ANTHROPIC_LOG };
      process.env.OPENAI_LOG = 'debug';
      process.env.ANTHROPIC_LOG = 'debug';
      const written: string[] = [];
      const originals = { log: console.log, info: console.info, warn: console.warn, error: console.error, debug: console.debug };
      for (const name of Object.keys(originals) as Array<keyof typeof originals>)
        console[name] = (...args: unknown[]) => void written.push(args.map(String).join(' '));
      try {
        const { client } = await setup(
          [
            { kind: 'error', status: 500, echoAuthorization: true },
            { kind: 'error', status: 401, echoAuthorization: true },
          ],
          { maxRetries: 1 },
        );
        await failure(turn(client));
      } finally {
        Object.assign(console, originals);
        process.env.OPENAI_LOG = saved.openai;
        process.env.ANTHROPIC_LOG = saved.anthropic;
        if (saved.openai === undefined) delete process.env.OPENAI_LOG;
        if (saved.anthropic === undefined) delete process.env.ANTHROPIC_LOG;
      }
      expect(written.join('\n')).not.toContain(KEY.slice(8, 20));
      expect(written).toEqual([]);
    });
  });
}
