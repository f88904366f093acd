import fc from 'fast-check';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { startHost, type Host } from '../../../src/ipc/host/host.js';
import { randomToken } from '../../../src/ipc/protocol/protocol.js';
import { openRawSession, SOCKET_TRANSPORT, WEB_TRANSPORT, type RawSession, type TransportUnderTest } from '../../helpers/ipc-harness.js';
import { storedRows } from '../../helpers/stored-rows.js';
import { suiteTeardown } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/** protocol.ts's PURPOSE.request: the raw frames below are signed over their exact bytes, as the server's fast path checks them. */
const REQUEST_PURPOSE = 'executor-ipc-request\n';

/**
 * A correctly signed request whose params (or an envelope field) are raw JSON text: 1e400, 5000
 * levels of brackets. No canonicalizer is involved, so the test can send what no JS value holds.
 */
async function signedRaw(session: RawSession, method: string, paramsText: string, ts = String(Date.now())): Promise<string> {
  const body = `{"id":"${randomToken(8)}","kid":"${session.kid}","method":${JSON.stringify(method)},"nonce":"${randomToken(18)}","params":${paramsText},"ts":${ts},"v":1}`;
  const sig = await session.mac.sign(REQUEST_PURPOSE, body);
  return `${body.slice(0, -1)},"sig":"${sig}"}`;
}

const deepArrays = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
const deepObjects = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

/**
 * JSON texts that no position in a plan or in params accepts. `breaks` says which limits of
 * json-limits.ts they cross: every request's, only a plan's (wide arrays, lone surrogates), or none (wrong types).
 */
const hostileValue = fc.oneof(
  fc.integer({ min: 70, max: 6000 }).map((levels) => ({ text: deepArrays(levels), breaks: 'all' })),
  fc.integer({ min: 70, max: 6000 }).map((levels) => ({ text: deepObjects(levels), breaks: 'all' })),
  fc.integer({ min: 70, max: 3000 }).map((levels) => ({ text: `{"x":[${deepObjects(levels)},${deepArrays(levels)}]}`, breaks: 'all' })),
  fc
    .constantFrom('1e400', '-1e400', '1e309', '-9.9e999', '9007199254740993', '[1e400]', '{"n":-1e400}')
    .map((text) => ({ text, breaks: 'all' })),
  fc.integer({ min: 10_001, max: 15_000 }).map((count) => ({ text: `[${new Array(count).fill('0').join(',')}]`, breaks: 'plan' })),
  fc.constantFrom('"\\ud800"', '"text \\udfff here"', '{"\\ud83d":1}', '["ok","\\udc00"]').map((text) => ({ text, breaks: 'plan' })),
  fc.jsonValue({ maxDepth: 3 }).map((value) => ({ text: JSON.stringify({ unexpected: value }), breaks: 'none' })),
);

/** Where in a request a hostile value lands: a plan's many places, other methods' params, the envelope. */
function hostileRequest(workspace: string) {
  const file = JSON.stringify(path.join(workspace, 'a.txt'));
  interface Placed {
    method: string;
    params: string;
    /** Raw JSON text for the envelope's ts, when the hole is there. */
    ts?: string;
    inPlan: boolean;
  }
  const planAt =
    (make: (hole: string) => string) =>
    (hole: string): Placed => ({ method: 'propose', params: `{"plan":${make(hole)}}`, inPlan: true });
  const other =
    (method: string, make: (hole: string) => string) =>
    (hole: string): Placed => ({ method, params: make(hole), inPlan: false });
  const places: ((hole: string) => Placed)[] = [
    planAt((hole) => `{"steps":${hole}}`),
    planAt((hole) => `{"steps":[${hole}]}`),
    planAt((hole) => `{"steps":[{"action":"writeFile","args":{"path":${file},"content":${hole}}}]}`),
    planAt((hole) => `{"steps":[{"action":"writeFile","args":{"path":${file},"content":"x"},"meta":{"confidence":${hole}}}]}`),
    planAt((hole) => `{"steps":[{"action":"writeFile","args":{"path":${file},"content":"x","extra":${hole}}}]}`),
    planAt((hole) => `{"purpose":${hole},"steps":[{"action":"writeFile","args":{"path":${file},"content":"x"}}]}`),
    planAt((hole) => `{"steps":[{"action":"runCode","args":{"code":"1","timeoutMs":${hole}}}]}`),
    planAt((hole) => `{"steps":[{"action":"runCommand","args":{"argv":["ls"],"env":{"A":${hole}}}}]}`),
    other('approveAndRemember', (hole) => `{"stepId":"step-x","rule":${hole},"lifetime":"hour"}`),
    other('setPolicy', (hole) => `{"policy":${hole}}`),
    other('evaluateStep', (hole) => `{"step":${hole}}`),
    other('listSteps', (hole) => `{"limit":${hole}}`),
    other('reject', (hole) => `{"stepId":"step-x","reason":${hole}}`),
    (hole: string) => ({ method: 'listSteps', params: '{}', ts: hole, inPlan: false }),
  ];
  return fc.tuple(fc.integer({ min: 0, max: places.length - 1 }), hostileValue).map(([index, hole]) => {
    const request = places[index]!(hole.text);
    return { ...request, overLimit: hole.breaks === 'all' || (hole.breaks === 'plan' && request.inPlan) };
  });
}

const REFUSAL_CODES = ['INVALID_PLAN', 'IPC_INVALID_PARAMS', 'IPC_MALFORMED', 'INVALID_INPUT', 'NOT_FOUND', 'POLICY_INVALID'];

describe.each([SOCKET_TRANSPORT, WEB_TRANSPORT])('bad input over the $name to a real host', (transport: TransportUnderTest) => {
  let host: Host;
  let session: RawSession;
  const suite = suiteTeardown();
  const setup = tempSetup({}, suite);

  beforeAll(async () => {
    host = suite.closeAfter(await startHost(setup.dataDir, { web: {} }));
    session = suite.closeAfter(await openRawSession(host, transport));
  });

  it('answers {"steps": [[[…5000 deep…]]]} with INVALID_PLAN naming the place, signed, and stores nothing', async () => {
    const before = storedRows(setup.dataDir);
    const reply = await session.send(await signedRaw(session, 'propose', `{"plan":{"steps":${deepArrays(5000)}}}`));
    expect(reply.ok).toBe(false);
    const error = reply.error as { code: string; message: string; details: Record<string, unknown> };
    expect(error.code).toBe('INVALID_PLAN');
    expect(error.message).toMatch(/steps(\[0\]){31} is nested deeper than 32 levels/);
    expect(error.details).toMatchObject({ limit: { name: 'maxDepth', value: 32 } });
    // The sender proved its session key over the bytes it sent: the refusal is signed for it.
    expect(reply.sig).not.toBe('');
    expect(storedRows(setup.dataDir)).toEqual(before);
  });

  it('answers "confidence": 1e400 with INVALID_PLAN naming steps[0].meta.confidence', async () => {
    const plan = `{"steps":[{"action":"writeFile","args":{"path":${JSON.stringify(path.join(setup.workspace, 'c.txt'))},"content":"x"},"meta":{"confidence":1e400}}]}`;
    const reply = await session.send(await signedRaw(session, 'propose', `{"plan":${plan}}`));
    expect(reply.error).toMatchObject({ code: 'INVALID_PLAN', message: expect.stringContaining('steps[0].meta.confidence is Infinity') });
  });

  it('answers an unsigned, unknown sender with the same refusal, unsigned', async () => {
    const reply = await session.send(
      `{"v":1,"kid":"nobody","id":"x1","ts":1,"nonce":"${randomToken(18)}","method":"propose","params":{"plan":{"steps":${deepArrays(6000)}}},"sig":"AAAA"}`,
    );
    expect(reply).toMatchObject({ ok: false, id: 'x1', sig: '', error: { code: 'INVALID_PLAN' } });
  });

  it('never answers INTERNAL to generated hostile requests, stores nothing for them, and still serves a normal proposal', async () => {
    const before = storedRows(setup.dataDir);
    const codes = new Set<string>();
    await fc.assert(
      fc.asyncProperty(hostileRequest(setup.workspace), async (request) => {
        const reply = await session.send(await signedRaw(session, request.method, request.params, request.ts));
        expect(reply.ok).toBe(false);
        const error = reply.error as { code: string; message: string; details?: { path?: string; limit?: unknown } };
        expect(REFUSAL_CODES).toContain(error.code);
        // Over a limit: refused before anything walked it, naming the place and the limit.
        if (request.overLimit) expect(error.details).toMatchObject({ path: expect.any(String), limit: expect.anything() });
        codes.add(error.code);
      }),
      { numRuns: 60 },
    );
    expect(storedRows(setup.dataDir)).toEqual(before);
    expect(codes.has('INVALID_PLAN')).toBe(true);

    const normal = await session.send(
      await session.signed('propose', {
        plan: { steps: [{ action: 'writeFile', args: { path: path.join(setup.workspace, 'fine.txt'), content: 'fine\n' } }] },
      }),
    );
    expect(normal.ok).toBe(true);
    expect(storedRows(setup.dataDir).steps).toBe(before.steps + 1);
  });
});
