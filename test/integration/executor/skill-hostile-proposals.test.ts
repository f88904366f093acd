import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { openExecutor } from '../../helpers/open-executor.js';

const agent = { ...actorFor('mcp', 'test-agent'), agent: 'agent-1' };

function nested(depth: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < depth; i++) schema = { type: 'array', items: schema };
  return schema;
}

describe('hostile proposals', () => {
  it('a schema nested thousands deep is a typed refusal with nothing stored, not a stack overflow', async () => {
    const { executor } = openExecutor();
    for (const depth of [3000, 50_000]) {
      const proposal = {
        name: `deep_${depth}`,
        purpose: 'nest',
        code: 'return "x";',
        inputSchema: { type: 'object', properties: { a: nested(depth) } },
        outputSchema: nested(depth),
        examples: [{}, {}, {}],
      };
      await expect(executor.proposeSkill(proposal, agent)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    }
    expect(executor.listSkills()).toEqual([]);
    const fine = await executor.proposeSkill(
      {
        name: 'shallow',
        purpose: 'p',
        code: 'return "x";',
        inputSchema: { type: 'object' },
        outputSchema: { type: 'string' },
        examples: [{}, {}, {}],
      },
      agent,
    );
    await expect(executor.editSkill(fine.skillId, actorFor('cli'), { outputSchema: nested(3000) })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
    expect(executor.listSkills()).toHaveLength(1);
  });

  it('a property named like a built-in of every object is refused: the schema could not hold it to its type', async () => {
    const { executor } = openExecutor();
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      // As an agent's JSON arrives: "__proto__" an own key.
      const proposal = JSON.parse(
        JSON.stringify({
          name: 'builtin_names',
          purpose: 'p',
          code: 'return Object.keys(input).join(",");',
          inputSchema: { type: 'object', properties: { NAME: { type: 'string' } }, required: ['NAME'] },
          outputSchema: { type: 'string' },
          examples: [{ NAME: 'a' }, { NAME: 'b' }, { NAME: 'c' }],
        }).replaceAll('NAME', name),
      );
      await expect(executor.proposeSkill(proposal, agent)).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        message: expect.stringContaining(`properties.${name}`),
      });
    }
    expect(executor.listSkills()).toEqual([]);
  });
});
