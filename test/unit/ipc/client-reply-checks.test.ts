import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { createExecutorClient, SignedRpc, type ClientTransport } from '../../../src/ipc/client/client.js';
import { nodeMac } from '../../../src/ipc/protocol/message-mac-node.js';
import { webCryptoMac } from '../../../src/ipc/protocol/message-mac-web.js';
import { signText, type MessageMac } from '../../../src/ipc/protocol/protocol.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * The client against a server that misbehaves on purpose. A real host never sends a forged or
 * malformed reply, so the far end here is a transport double that signs what the test says.
 */
const key = new Uint8Array(32).fill(3);
const forgerKey = new Uint8Array(32).fill(4);

function replyingTransport(signer: MessageMac, result: (id: string) => unknown): ClientTransport {
  return {
    async request(text: string) {
      const { id } = JSON.parse(text) as { id: string };
      return signText(signer, 'response', { v: 1, id, ok: true, result: result(id) });
    },
    onEvent: () => undefined,
    onClose: () => undefined,
    close: () => undefined,
  };
}

/** Step records as a real Executor lists them: 60 proposed writes with their diff previews. */
function realStepRecords() {
  const { dataDir, workspace } = tempSetup();
  const executor = Executor.open(dataDir);
  try {
    const steps = Array.from({ length: 60 }, (_, index) => ({
      action: 'writeFile',
      args: { path: path.join(workspace, `f${index}.txt`), content: 'changed line\n'.repeat(120) },
    }));
    return executor
      .propose({ steps }, actorFor('cli'))
      .then(() => JSON.parse(JSON.stringify(executor.listSteps())) as unknown[])
      .finally(() => executor.close());
  } catch (error) {
    executor.close();
    throw error;
  }
}

// Large enough (over 64 KiB) that the MAC is checked off-thread while the reply is parsed and validated.
const notSteps = () => Array.from({ length: 3000 }, (_, index) => ({ index, note: `not a step record ${index}` }));

describe('the client checks every reply before trusting it', () => {
  for (const [label, makeMac] of [
    ['Node MAC', async (bytes: Uint8Array) => nodeMac(bytes)],
    ['WebCrypto MAC', webCryptoMac],
  ] as const) {
    it(`${label}: a forged large reply is IPC_BAD_SIGNATURE even when its result is also malformed`, async () => {
      const client = createExecutorClient(
        new SignedRpc(replyingTransport(nodeMac(forgerKey), notSteps), { kid: 'k', channel: 'cli', mac: await makeMac(key) }),
      );
      await expect(client.listSteps()).rejects.toMatchObject({ code: 'IPC_BAD_SIGNATURE' });
    });

    it(`${label}: a genuine large reply that breaks the method table is IPC_INVALID_RESULT`, async () => {
      const client = createExecutorClient(
        new SignedRpc(replyingTransport(nodeMac(key), notSteps), { kid: 'k', channel: 'cli', mac: await makeMac(key) }),
      );
      await expect(client.listSteps()).rejects.toMatchObject({ code: 'IPC_INVALID_RESULT' });
    });

    it(`${label}: a genuine large reply is returned as checked`, async () => {
      const records = (await realStepRecords()) as { step: { id: string } }[];
      const client = createExecutorClient(
        new SignedRpc(
          replyingTransport(nodeMac(key), () => records),
          { kid: 'k', channel: 'cli', mac: await makeMac(key) },
        ),
      );
      const listed = await client.listSteps();
      expect(JSON.stringify(records).length).toBeGreaterThan(64 * 1024);
      expect(listed.map((record) => record.step.id)).toEqual(records.map((record) => record.step.id));
    });
  }
});
