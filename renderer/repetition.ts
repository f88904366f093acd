import { useEffect, useState } from 'react';
import { normaliseCode } from '../src/domain/code-normal-form.js';
import type { RepetitionNotice } from '../src/domain/skill.js';
import type { Step } from '../src/domain/step.js';
import type { ExecutorClient } from '../src/ipc/client/client.js';

/*
 * "Seen N times from this agent: save as a skill?" beside a runCode step (the queue's detail, History's).
 * The host counts repeats (listSkills' notices, by the sha256 of the normalised code and the agent);
 * the window finds the notice of the step it shows by the same normal form, hashed here with WebCrypto.
 */

/** The agent a step counts under: an MCP session's issued identity, or one agent run ("run <id>"), as the host groups them. */
export function repetitionAgentOf(step: Pick<Step, 'meta'>): string | null {
  const meta = step.meta as { agent?: string; client?: string };
  return meta.agent ?? (meta.client?.startsWith('run ') ? meta.client : null);
}

async function sha256Hex(text: string): Promise<string | null> {
  const subtle = globalThis.crypto?.subtle;
  // Outside a secure context there is no WebCrypto: no hint, which hides nothing the person needs.
  if (!subtle) return null;
  const digest = await subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** The host's notices, read again when a step or a skill changes (a run finished, a skill was saved). */
export function useRepetitionNotices(api: ExecutorClient): RepetitionNotice[] {
  const [notices, setNotices] = useState<RepetitionNotice[]>([]);
  useEffect(() => {
    let alive = true;
    let pending = false;
    let again = false;
    const load = () => {
      if (pending) {
        again = true;
        return;
      }
      pending = true;
      api
        .listSkills({})
        .then(
          (listed) => alive && setNotices(listed.notices),
          () => undefined,
        )
        .finally(() => {
          pending = false;
          if (again && alive) {
            again = false;
            load();
          }
        });
    };
    load();
    const offs: Promise<() => void>[] = [api.on('skill', load), api.on('step', load)];
    return () => {
      alive = false;
      for (const off of offs)
        void off.then(
          (unsubscribe) => unsubscribe(),
          () => undefined,
        );
    };
  }, [api]);
  return notices;
}

/** The notice for this step's code from this step's agent, once its hash is known; null when the code is not a repeat. */
export function useRepetitionOf(step: Step, notices: readonly RepetitionNotice[]): RepetitionNotice | null {
  const code = step.action === 'runCode' ? (step.args as { code?: string }).code : undefined;
  const [hash, setHash] = useState<string | null>(null);
  useEffect(() => {
    let alive = true;
    setHash(null);
    if (typeof code !== 'string') return;
    void sha256Hex(normaliseCode(code)).then((found) => alive && setHash(found));
    return () => {
      alive = false;
    };
  }, [code]);
  const agent = repetitionAgentOf(step);
  if (!hash || !agent) return null;
  return notices.find((notice) => notice.codeHash === hash && notice.agent === agent) ?? null;
}
