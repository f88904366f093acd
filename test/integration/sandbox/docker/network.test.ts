import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { actorFor } from '../../../../src/domain/actor.js';
import type { CommandRunPreview } from '../../../../src/domain/step-record.js';
import { Executor } from '../../../../src/executor/executor.js';
import { dockerAvailable, ensureSandboxImage } from '../../../helpers/docker-engine.js';
import { closeAfter, suiteTeardown } from '../../../helpers/teardown.js';
import { tempSetup } from '../../../helpers/temp-dirs.js';

const hasDocker = dockerAvailable();
const person = actorFor('cli');

// Tries each URL through the proxy from the environment (if any) and directly, printing one line per attempt.
const PROBE = `
import sys, urllib.request
for url in sys.argv[1:]:
    for mode, handler in (("proxy", urllib.request.ProxyHandler()), ("direct", urllib.request.ProxyHandler({}))):
        try:
            body = urllib.request.build_opener(handler).open(url, timeout=3).read().decode()
            print(mode, url, "OK", body)
        except Exception as error:
            print(mode, url, "FAIL", getattr(error, "code", type(error).__name__))
`;

/** Every IPv4 address of this host, plus Docker's default bridge gateway: the ways a container might reach it. */
function hostAddresses(): string[] {
  const addresses = Object.values(os.networkInterfaces())
    .flat()
    .filter((entry): entry is os.NetworkInterfaceInfo => !!entry && entry.family === 'IPv4' && !entry.internal)
    .map((entry) => entry.address);
  return [...new Set([...addresses, '172.17.0.1'])];
}

describe.skipIf(!hasDocker)('sandbox network modes', () => {
  const suite = suiteTeardown();
  let allowedPort = 0;
  let otherPort = 0;

  const canary = async (name: string, host: string) => {
    const server = http.createServer((_request, response) => response.end(name));
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    suite.defer(() => new Promise((resolve) => server.close(resolve)));
    return (server.address() as net.AddressInfo).port;
  };

  beforeAll(async () => {
    await ensureSandboxImage();
    allowedPort = await canary('canary-allowed', '0.0.0.0');
    otherPort = await canary('canary-other', '0.0.0.0');
  }, 300_000);

  async function probe(network: 'none' | 'allowlist', urls: string[], allowHosts: string[] = []) {
    const { dataDir, workspace } = tempSetup({ network: { allowHosts } });
    fs.writeFileSync(path.join(workspace, 'probe.py'), PROBE);
    const executor = closeAfter(Executor.open(dataDir));
    const [record] = await executor.propose(
      { steps: [{ id: 'net', action: 'runCommand', args: { argv: ['python3', 'probe.py', ...urls], network } }] },
      person,
    );
    return { executor, record: record!, preview: record!.preview as CommandRunPreview };
  }

  it('network "none" cannot reach a canary listening on every host address', async () => {
    const urls = hostAddresses().map((address) => `http://${address}:${allowedPort}/`);
    const { preview } = await probe('none', urls);
    const lines = preview.stdout.text.trim().split('\n');
    expect(lines).toHaveLength(urls.length * 2);
    for (const line of lines) expect(line).toMatch(/ FAIL /);
    expect(preview.egress).toEqual([]);
  });

  it('"allowlist" reaches the allowlisted canary through the proxy, not the other one, and nothing directly', async () => {
    const urls = [
      `http://127.0.0.1:${allowedPort}/`,
      `http://127.0.0.1:${otherPort}/`,
      ...hostAddresses().map((address) => `http://${address}:${otherPort}/`),
    ];
    const { executor, preview } = await probe('allowlist', urls, [`127.0.0.1:${allowedPort}`]);
    const lines = preview.stdout.text.trim().split('\n');
    expect(lines[0]).toBe(`proxy http://127.0.0.1:${allowedPort}/ OK canary-allowed`);
    expect(lines[2]).toBe(`proxy http://127.0.0.1:${otherPort}/ FAIL 403`);
    const successes = lines.filter((line) => / OK /.test(line));
    expect(successes).toEqual([lines[0]]);
    expect(preview.egress.filter((request) => request.allowed)).toEqual([
      { method: 'GET', host: '127.0.0.1', port: allowedPort, allowed: true },
    ]);
    expect(preview.egress.some((request) => !request.allowed && request.port === otherPort)).toBe(true);

    // Executed, each proxied request lands in the step's audit record.
    const executed = await executor.approve('net', person);
    expect(executed.status).toBe('executed');
    const event = executor.getAudit({ filters: { stepId: 'net', action: 'step.executed' } }).entries[0];
    const egress = (event?.result as { egress: { host: string; port: number; allowed: boolean }[] }).egress;
    expect(egress.map(({ port, allowed }) => [port, allowed])).toContainEqual([allowedPort, true]);
    expect(egress.map(({ port, allowed }) => [port, allowed])).toContainEqual([otherPort, false]);
  });
});
