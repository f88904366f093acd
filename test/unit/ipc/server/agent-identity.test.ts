import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AGENT_IDENTITY_KEY_FILE, AgentIdentities } from '../../../../src/ipc/server/agent-identity.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

describe('AgentIdentities', () => {
  it('issues a new random identity each time, and verifies only credentials it issued', () => {
    const identities = AgentIdentities.ephemeral();
    const first = identities.issue();
    const second = identities.issue();
    expect(first.agentId).not.toBe(second.agentId);
    expect(identities.verify(first.credential)).toBe(first.agentId);
    const mac = first.credential.slice(first.agentId.length + 1);
    const forged = [
      `${second.agentId}.${mac}`, // another id under this one's MAC
      `${first.agentId}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`,
      first.agentId,
      `${first.agentId}.`,
      `.${mac}`,
      `not-an-agent.${mac}`,
      `${first.agentId}.${mac}.${mac}`,
      'x'.repeat(300),
      '',
    ];
    for (const credential of forged) expect(identities.verify(credential), credential).toBeNull();
    // Another host's key (or a replaced one) issued it: not this host's agent.
    expect(AgentIdentities.ephemeral().verify(first.credential)).toBeNull();
  });

  it("keeps the data directory's key across restarts in a 0600 file, and replaces a damaged one", () => {
    const dataDir = tempDir();
    const issued = AgentIdentities.forDataDir(dataDir).issue();
    const file = path.join(dataDir, AGENT_IDENTITY_KEY_FILE);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(AgentIdentities.forDataDir(dataDir).verify(issued.credential)).toBe(issued.agentId);
    fs.writeFileSync(file, 'short');
    const replaced = AgentIdentities.forDataDir(dataDir);
    expect(replaced.verify(issued.credential)).toBeNull();
    expect(fs.statSync(file).size).toBe(32);
    expect(fs.readdirSync(dataDir)).toEqual([AGENT_IDENTITY_KEY_FILE]);
  });
});

describe('client-and-folder families (hook sessions)', () => {
  it('sessions of one family are separate agents whose rules bind to the family; only the family credential joins it', async () => {
    const { ruleAgentOf, proposerOf } = await import('../../../../src/domain/remembered-rule.js');
    const identities = AgentIdentities.ephemeral();
    const plain = identities.issue();
    const founder = identities.identify(plain.agentId, { newFamily: true });
    expect(founder.family).toMatch(/^family-/);
    const joined = identities.identify(identities.issue().agentId, { family: founder.family! });
    expect(joined.agentId).not.toBe(founder.agentId);
    expect(ruleAgentOf(joined.agentId)).toBe(ruleAgentOf(founder.agentId));
    expect(proposerOf({ meta: { origin: 'agent', agent: joined.agentId } })).toEqual({
      kind: 'agent',
      agentId: ruleAgentOf(founder.agentId),
    });
    // Resuming a family session keeps its family (the hook's next call in the same session).
    expect(identities.identify(plain.agentId, { resume: joined.credential })).toEqual(joined);
    // Another new family reaches nothing of the first; an MCP agent is its own.
    expect(ruleAgentOf(identities.identify(plain.agentId, { newFamily: true }).agentId)).not.toBe(ruleAgentOf(founder.agentId));
    expect(ruleAgentOf(plain.agentId)).toBe(plain.agentId);
    expect(identities.identify(plain.agentId, {})).toEqual({ agentId: plain.agentId, credential: plain.credential });
    // A family credential of another host, or edited, is refused with a typed error.
    const other = AgentIdentities.ephemeral().identify(plain.agentId, { newFamily: true }).family!;
    for (const forged of [other, `${founder.family!}x`, founder.family!.replace('family-', 'family-A'), 'family-', plain.credential])
      expect(() => identities.identify(plain.agentId, { family: forged })).toThrow(
        expect.objectContaining({ code: 'AGENT_CREDENTIAL_INVALID' }),
      );
  });
});
