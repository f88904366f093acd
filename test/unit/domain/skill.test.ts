import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  assertSkillTransition,
  normaliseCode,
  schemaOutsideSubset,
  skillCapabilitiesHash,
  SkillProposalSchema,
  SKILL_STATES,
} from '../../../src/domain/skill.js';

/** Code as tokens an agent might write: words, numbers, punctuation and string literals (with spaces inside). */
const token = fc.oneof(
  fc.constantFrom('return', 'const', 'x', 'input', 'text', 'map', 'w', 'toUpperCase', '=>', '(', ')', '{', '}', '.', ';', ',', '=', '+'),
  fc.integer({ min: 0, max: 999 }).map(String),
  fc.constantFrom('" a  b "', "'x // not a comment'", '`t /* kept */`'),
);
const layout = fc.constantFrom(' ', '  ', '\n', '\t', ' // note\n', ' /* note */ ', '\n\n  ');

describe('normaliseCode: the same code written again with other layout or comments counts as the same', () => {
  it('is unchanged by any layout and comments between tokens, and keeps string literals whole', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(token, layout), { minLength: 1, maxLength: 30 }), (parts) => {
        const plain = parts.map(([t]) => t).join(' ');
        const laidOut = parts.map(([t, l]) => t + l).join('');
        expect(normaliseCode(laidOut)).toBe(normaliseCode(plain));
        for (const [t] of parts) if (/^["'`]/.test(t)) expect(normaliseCode(laidOut)).toContain(t);
      }),
    );
  });

  it('is idempotent, and different code stays different', () => {
    fc.assert(
      fc.property(fc.string(), (code) => {
        expect(normaliseCode(normaliseCode(code))).toBe(normaliseCode(code));
      }),
    );
    expect(normaliseCode('return a+b')).not.toBe(normaliseCode('return a-b'));
    expect(normaliseCode('return "a b"')).not.toBe(normaliseCode('return "a  b"'));
    expect(normaliseCode('return x')).not.toBe(normaliseCode('returnx'));
  });
});

describe('the JSON Schema subset a skill accepts', () => {
  it('accepts the subset, nested', () => {
    expect(
      schemaOutsideSubset({
        type: 'object',
        properties: { a: { type: 'array', items: { type: ['string', 'null'], maxLength: 3 } }, b: { enum: [1, 2] } },
        required: ['a'],
        additionalProperties: false,
      }),
    ).toBeUndefined();
  });

  it('names every keyword outside it with its JSON path', () => {
    for (const keyword of ['$ref', 'oneOf', 'anyOf', 'allOf', 'not', 'pattern', 'format', 'if', 'patternProperties', '$defs']) {
      expect(schemaOutsideSubset({ type: 'object', properties: { deep: { items: { [keyword]: {} } } } })).toBe(
        `$.properties.deep.items uses "${keyword}", which skills do not accept (accepted: type, properties, required, items, enum, const, minimum, maximum, minLength, maxLength, minItems, maxItems, additionalProperties, description, title)`,
      );
    }
    expect(schemaOutsideSubset({ type: 'date' })).toBe('$.type "date" is not a JSON type');
    expect(schemaOutsideSubset([])).toBe('$ is not a JSON Schema object');
  });

  it('a proposal with a schema outside it, a non-object input or too few examples is refused with a clear message', () => {
    const base = {
      name: 'ok_name',
      purpose: 'p',
      code: 'return 1;',
      inputSchema: { type: 'object' },
      outputSchema: { type: 'number' },
      examples: [{}, {}, {}],
    };
    expect(SkillProposalSchema.safeParse(base).success).toBe(true);
    const messages = (input: unknown) => {
      const parsed = SkillProposalSchema.safeParse(input);
      return parsed.success ? [] : parsed.error.issues.map((issue) => issue.message);
    };
    expect(messages({ ...base, outputSchema: { type: 'number', multipleOf: 2 } })).toEqual([expect.stringContaining('"multipleOf"')]);
    expect(messages({ ...base, inputSchema: { type: 'string' } })).toEqual([expect.stringContaining('a skill takes an object')]);
    expect(messages({ ...base, examples: [{}] })).toEqual(['give at least 3 example inputs']);
    expect(messages({ ...base, name: 'Bad-Name' })).toEqual([expect.stringContaining('lowercase letters')]);
  });
});

describe('pins and states', () => {
  it('the capabilities hash ignores host order and case, and sees every other change', () => {
    const budget = { timeMs: 1000, calls: 2 };
    const one = skillCapabilitiesHash({ fetch: { hosts: ['a.example', 'B.example'] } }, budget);
    expect(skillCapabilitiesHash({ fetch: { hosts: ['b.example', 'a.example'] } }, budget)).toBe(one);
    expect(skillCapabilitiesHash({ fetch: { hosts: ['a.example'] } }, budget)).not.toBe(one);
    expect(skillCapabilitiesHash({ fetch: { hosts: ['a.example', 'b.example'] }, readFile: true }, budget)).not.toBe(one);
    expect(skillCapabilitiesHash({ fetch: { hosts: ['a.example', 'b.example'] } }, { ...budget, calls: 3 })).not.toBe(one);
  });

  it('a rejected skill goes nowhere, and nothing reaches trial but through the owner or a rollback', () => {
    for (const to of SKILL_STATES) expect(() => assertSkillTransition('rejected', to)).toThrow(/cannot go from rejected/);
    const intoTrial = SKILL_STATES.filter((from) => {
      try {
        assertSkillTransition(from, 'trial');
        return true;
      } catch {
        return false;
      }
    });
    expect(intoTrial).toEqual(['awaiting_owner', 'disabled', 'superseded']);
  });
});
