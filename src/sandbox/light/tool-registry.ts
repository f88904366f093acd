import { readRegularFile } from '../../fs/regular-file.js';
import type { Policy } from '../../policy/policy-file.js';
import { guardPath } from '../../policy/path-guard.js';
import { absoluteForMatching, filesystemIgnoresCase } from '../../policy/path-patterns.js';
import { matchingSecretGlob } from '../../policy/secret-paths.js';
import { guardPathLexically } from './lexical-path.js';
import type { KbEntry } from '../../domain/kb-entry.js';

/** What a step was granted. Names match the step's `capabilities` field. */
export interface CodeCapabilities {
  fetch?: { hosts: string[] };
  readFile?: true;
  kbSearch?: true;
}

export interface ToolEnvironment {
  policy: Policy;
  dataDir: string;
  grants: CodeCapabilities;
  kbSearch(query: string, limit: number): KbEntry[];
  /** Aborted when the run settles: a call still in flight must not outlive its worker. */
  signal: AbortSignal;
}

export type ToolDecision = { ok: true; target: string; perform(): Promise<unknown> } | { ok: false; target: string; reason: string };

export interface ToolDefinition {
  /** The name sandboxed code calls: "kb.search" becomes `tools.kb.search(...)`. */
  name: string;
  capability: keyof CodeCapabilities;
  /** A network tool is not performed in a dry run: its request is recorded instead. */
  network: boolean;
  /**
   * What a read answers in a skill's quarantine (BridgeMode 'quarantine'): nothing from the machine,
   * so nothing the proposing agent hears back can carry a file's or the KB's contents. A tool
   * without it (the network ones) is recorded there instead.
   */
  withoutData?: unknown;
  decide(args: unknown[], env: ToolEnvironment): ToolDecision;
  /**
   * How a call is judged in quarantine when `decide` would look at the machine to judge it (a read
   * follows links): from its arguments and the policy alone, so the verdict and its target say
   * nothing of what the machine holds. Never performed.
   */
  decideWithoutData?(args: unknown[], env: ToolEnvironment): ToolDecision;
}

/** Exact names, or "*.example.com" for any subdomain (not the bare domain). */
export function hostAllowed(hostname: string, patterns: readonly string[]): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return patterns.some((raw) => {
    const pattern = raw.toLowerCase();
    return pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1 : host === pattern;
  });
}

const FETCH_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);

interface FetchInit {
  method: string;
  headers: Record<string, string>;
  body?: string;
}

function fetchInitOf(raw: unknown): FetchInit | string {
  if (raw === undefined || raw === null) return { method: 'GET', headers: {} };
  if (typeof raw !== 'object' || Array.isArray(raw)) return 'init must be an object';
  const init = raw as Record<string, unknown>;
  const unknownKey = Object.keys(init).find((key) => !['method', 'headers', 'body'].includes(key));
  if (unknownKey) return `init.${unknownKey} is not supported (method, headers, body are)`;
  const method = init.method === undefined ? 'GET' : String(init.method).toUpperCase();
  if (!FETCH_METHODS.has(method)) return `method ${method} is not allowed`;
  const headers: Record<string, string> = {};
  if (init.headers !== undefined) {
    if (typeof init.headers !== 'object' || init.headers === null || Array.isArray(init.headers))
      return 'init.headers must be an object of strings';
    for (const [name, value] of Object.entries(init.headers)) {
      if (typeof value !== 'string') return `header ${name} must be a string`;
      headers[name] = value;
    }
  }
  if (init.body !== undefined && typeof init.body !== 'string') return 'init.body must be a string';
  return { method, headers, body: init.body as string | undefined };
}

async function readCapped(response: Response, maxBytes: number): Promise<{ body: string; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  const reader = response.body?.getReader();
  if (reader) {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = maxBytes - size;
      if (value.byteLength > room) {
        chunks.push(Buffer.from(value.subarray(0, room)));
        truncated = true;
        await reader.cancel().catch(() => {});
        break;
      }
      chunks.push(Buffer.from(value));
      size += value.byteLength;
    }
  }
  return { body: Buffer.concat(chunks).toString('utf8'), truncated };
}

const fetchTool: ToolDefinition = {
  name: 'fetch',
  capability: 'fetch',
  network: true,
  decide(args, env) {
    let url: URL;
    try {
      url = new URL(String(args[0]));
    } catch {
      return { ok: false, target: String(args[0]).slice(0, 300), reason: 'not a valid URL' };
    }
    const init = fetchInitOf(args[1]);
    const target = `${typeof init === 'string' ? 'GET' : init.method} ${url.href}`;
    if (typeof init === 'string') return { ok: false, target, reason: init };
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, target, reason: `${url.protocol} URLs are not allowed` };
    if (url.username || url.password) return { ok: false, target, reason: 'credentials in the URL are not allowed' };
    if (!hostAllowed(url.hostname, env.grants.fetch?.hosts ?? [])) {
      return { ok: false, target, reason: `${url.hostname} is not among the hosts this step asked for` };
    }
    if (!hostAllowed(url.hostname, env.policy.network.allowHosts)) {
      return { ok: false, target, reason: `${url.hostname} is not on the policy's network allowlist` };
    }
    const limits = env.policy.lightSandbox;
    return {
      ok: true,
      target,
      async perform() {
        // Redirects are returned, not followed: following one could leave the allowlist.
        const response = await fetch(url, {
          method: init.method,
          headers: init.headers,
          body: init.body,
          redirect: 'manual',
          signal: AbortSignal.any([env.signal, AbortSignal.timeout(limits.fetchTimeoutMs)]),
        });
        const { body, truncated } = await readCapped(response, limits.maxFetchBytes);
        return { status: response.status, headers: Object.fromEntries(response.headers), body, truncated };
      },
    };
  },
};

const readFileTool: ToolDefinition = {
  name: 'readFile',
  capability: 'readFile',
  network: false,
  withoutData: '',
  decide(args, env) {
    const requested = String(args[0]);
    const target = requested.slice(0, 4096);
    const verdict = guardPath(requested, env.policy.workspaceRoots, env.dataDir);
    if (!verdict.ok) return { ok: false, target, reason: verdict.reason };
    const matchOptions = { caseInsensitive: filesystemIgnoresCase(verdict.root) };
    // Above the root counts too: with a root inside ~/.aws, "credentials" is still ~/.aws/credentials.
    const secretGlob =
      matchingSecretGlob(verdict.relativePath, env.policy.secretGlobs, matchOptions) ??
      matchingSecretGlob(absoluteForMatching(verdict.realPath), env.policy.secretGlobs, matchOptions);
    if (secretGlob)
      return {
        ok: false,
        target,
        reason: `${verdict.relativePath} matches the secret pattern "${secretGlob}": secrets are never read back to code`,
      };
    const maxBytes = env.policy.lightSandbox.maxReadFileBytes;
    return {
      ok: true,
      target: verdict.realPath,
      async perform() {
        // A FIFO, device, socket or directory gets a typed refusal at once: the open is non-blocking
        // and only a regular file is read, up to the cap (src/fs/regular-file.ts says why).
        return (await readRegularFile(verdict.realPath, { maxBytes, displayPath: requested.slice(0, 300) })).toString('utf8');
      },
    };
  },
  decideWithoutData(args, env) {
    const requested = String(args[0]);
    const target = requested.slice(0, 4096);
    const verdict = guardPathLexically(requested, env.policy.workspaceRoots, env.dataDir);
    if (!verdict.ok) return { ok: false, target, reason: verdict.reason };
    const matchOptions = { caseInsensitive: filesystemIgnoresCase(verdict.root) };
    const secretGlob =
      matchingSecretGlob(verdict.relativePath, env.policy.secretGlobs, matchOptions) ??
      matchingSecretGlob(absoluteForMatching(verdict.absolutePath), env.policy.secretGlobs, matchOptions);
    if (secretGlob)
      return {
        ok: false,
        target,
        reason: `${verdict.relativePath} matches the secret pattern "${secretGlob}": secrets are never read back to code`,
      };
    return {
      ok: true,
      target: verdict.absolutePath,
      perform: () => Promise.reject(new Error('a read in quarantine is never performed')),
    };
  },
};

const kbSearchTool: ToolDefinition = {
  name: 'kb.search',
  capability: 'kbSearch',
  network: false,
  withoutData: [],
  decide(args, env) {
    const query = String(args[0] ?? '');
    if (query.length > 1000) return { ok: false, target: query.slice(0, 100), reason: 'the query is longer than 1000 characters' };
    return {
      ok: true,
      target: query,
      async perform() {
        return env
          .kbSearch(query, 20)
          .map((entry) => ({ entryId: entry.entryId, title: entry.title, content: entry.content.slice(0, 4000), tags: entry.tags }));
      },
    };
  },
};

/** Every host-side tool. The worker's `tools` object is generated from these names: adding a tool is one entry. */
export const TOOL_REGISTRY: readonly ToolDefinition[] = [fetchTool, readFileTool, kbSearchTool];
