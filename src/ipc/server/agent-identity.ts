import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../../fs/atomic-write.js';
import { ExecutorError } from '../../domain/errors.js';

/*
 * Agent identities, issued by the host. Every agent session (the mcp channel) is given a fresh
 * identity when it opens; the session learns it, with a credential that proves it, from the
 * agentIdentity method. An MCP process that reconnects (the host restarted, the connection dropped)
 * presents that credential to be the same agent again, so it keeps seeing its own steps. The name
 * an MCP client gives in its handshake is a label and never an identity: two clients that give the
 * same name are two agents.
 *
 * A credential is `<agentId>.<HMAC(key, agentId)>`: nobody but the host can make one, and the host
 * keeps nothing per agent but this one key, which outlives restarts (AGENT_IDENTITY_KEY_FILE).
 */

export const AGENT_IDENTITY_KEY_FILE = 'agent-identity.key';
const KEY_BYTES = 32;
const AGENT_ID = /^agent-[A-Za-z0-9_-]{16,64}$/;
/** A family's id: 16 random bytes, base64url (22 characters); its sessions' agent ids are `agent-F<family><22 more>` (familyOfAgent in remembered-rule.ts). */
const FAMILY_ID = /^[A-Za-z0-9_-]{22}$/;

/** What an agent session asks of agentIdentity: to be an earlier agent again, a new agent of a family, or of a new family. */
export interface IdentityRequest {
  resume?: string;
  /** A family credential an earlier session of the same client and folder kept. */
  family?: string;
  /** Start a family (a client in a folder seen for the first time). */
  newFamily?: true;
}

export interface IssuedIdentity extends AgentCredential {
  /** The family credential, when the agent belongs to one: kept by the hook for the client's next sessions in that folder. */
  family?: string;
}

export interface AgentCredential {
  agentId: string;
  /** Proves agentId to the host on a later session; the MCP process keeps it in memory only. */
  credential: string;
}

export class AgentIdentities {
  private constructor(private readonly key: Buffer) {}

  /** Identities that last as long as this process (tests, an in-process client). */
  static ephemeral(): AgentIdentities {
    return new AgentIdentities(randomBytes(KEY_BYTES));
  }

  /**
   * The data directory's identity key, made on first use: 32 random bytes, 0600, written whole or
   * not at all. A key file that is damaged is replaced, which only means earlier agents are new
   * agents to the host (their steps stay the person's to see).
   */
  static forDataDir(dataDir: string): AgentIdentities {
    const file = path.join(dataDir, AGENT_IDENTITY_KEY_FILE);
    try {
      const stored = fs.readFileSync(file);
      if (stored.length === KEY_BYTES) return new AgentIdentities(stored);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new ExecutorError(
          'STORAGE_FAILED',
          `Cannot read the agent identity key ${file}: ${(error as Error).message}. Check its owner and permissions, or delete it (agents then start as new agents).`,
          { file },
        );
      }
    }
    const key = randomBytes(KEY_BYTES);
    try {
      writeFileAtomic(file, key, 0o600);
    } catch (error) {
      throw new ExecutorError('STORAGE_FAILED', `Cannot write the agent identity key ${file}: ${(error as Error).message}.`, { file });
    }
    return new AgentIdentities(key);
  }

  /** A new agent: an id nobody had before, and its credential. */
  issue(): AgentCredential {
    return this.credentialFor(`agent-${randomBytes(16).toString('base64url')}`);
  }

  /** The agent a credential proves, or null when this host did not issue it (or its key was replaced since). */
  verify(credential: string): string | null {
    if (typeof credential !== 'string' || credential.length > 256) return null;
    const dot = credential.lastIndexOf('.');
    if (dot < 0) return null;
    const agentId = credential.slice(0, dot);
    if (!AGENT_ID.test(agentId)) return null;
    const given = Buffer.from(credential.slice(dot + 1), 'utf8');
    const expected = Buffer.from(this.mac(agentId), 'utf8');
    return given.length === expected.length && timingSafeEqual(given, expected) ? agentId : null;
  }

  /**
   * The identity a session asks for. A family groups the sessions of one client in one folder (a
   * hook session each): its sessions are separate agents (their own steps), and a remembered rule
   * binds to the family, so it holds in that client's next sessions there. Only a holder of the
   * family credential joins a family; anyone may start a new one, which reaches nothing earlier.
   */
  identify(current: string, request: IdentityRequest): IssuedIdentity {
    if (request.resume !== undefined) {
      const agentId = this.verify(request.resume);
      if (!agentId) {
        throw new ExecutorError(
          'AGENT_CREDENTIAL_INVALID',
          "This agent credential was not issued by this Executor (or its identity key was replaced since). The session keeps the new identity it was given; the earlier identity's steps stay with the person.",
        );
      }
      return this.withFamily(agentId);
    }
    let familyId: string | null = null;
    if (request.family !== undefined) {
      familyId = this.verifyFamily(request.family);
      if (!familyId)
        throw new ExecutorError(
          'AGENT_CREDENTIAL_INVALID',
          'This family credential was not issued by this Executor (or its identity key was replaced since); start a new family.',
        );
    } else if (request.newFamily) familyId = randomBytes(16).toString('base64url');
    if (familyId === null) return this.withFamily(current);
    return this.withFamily(`agent-F${familyId}${randomBytes(16).toString('base64url')}`);
  }

  private withFamily(agentId: string): IssuedIdentity {
    const familyId = /^agent-F([A-Za-z0-9_-]{22})[A-Za-z0-9_-]{22}$/.exec(agentId)?.[1];
    return { ...this.credentialFor(agentId), ...(familyId ? { family: `family-${familyId}.${this.mac(`family\u0000${familyId}`)}` } : {}) };
  }

  private verifyFamily(credential: string): string | null {
    if (typeof credential !== 'string' || credential.length > 256 || !credential.startsWith('family-')) return null;
    const dot = credential.lastIndexOf('.');
    const familyId = credential.slice('family-'.length, dot);
    if (dot < 0 || !FAMILY_ID.test(familyId)) return null;
    const given = Buffer.from(credential.slice(dot + 1), 'utf8');
    const expected = Buffer.from(this.mac(`family\u0000${familyId}`), 'utf8');
    return given.length === expected.length && timingSafeEqual(given, expected) ? familyId : null;
  }

  credentialFor(agentId: string): AgentCredential {
    return { agentId, credential: `${agentId}.${this.mac(agentId)}` };
  }

  private mac(agentId: string): string {
    return createHmac('sha256', this.key).update(`executor agent identity\u0000${agentId}`, 'utf8').digest('base64url');
  }
}
