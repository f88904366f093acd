import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SkillNameSchema, SKILL_STATES, type SkillRecord } from '../../../src/domain/skill.js';
import { parseSkillForm } from '../../../renderer/components/skill-form.js';
import { callsAgainstDeclared, skillNameFrom, skillStateWords } from '../../../renderer/skill-text.js';

const trial = { uses: 12, since: '2026-11-28T10:00:00.000Z', required: 50, untilAt: '2026-11-29T10:00:00.000Z' };
const at = (iso: string) => `<${iso}>`;

describe('a skill state in words', () => {
  it('says where each state stands and, when stopped, why', () => {
    const words = (state: SkillRecord['state'], reason: string | null = null) => skillStateWords({ state, reason, trial }, at);
    expect(words('quarantine')).toBe('in quarantine');
    // A draft says its reason (the stop switch's words), and a new one (no reason, or an empty one) that it is being checked.
    expect(words('draft', '')).toBe('in quarantine');
    // A draft whose check the stop switch stopped is not "in quarantine": the host's words say what happened and what to do.
    expect(words('draft', 'stopped by the stop switch: … Check it again')).toBe('stopped by the stop switch: … Check it again');
    expect(words('awaiting_owner')).toBe('awaiting your approval');
    expect(words('trial')).toBe('in trial: 12 of 50 uses, until <2026-11-29T10:00:00.000Z>');
    expect(words('active')).toBe('active');
    expect(words('disabled', 'trial use use_1 failed (UNDECLARED_CALL): x')).toBe('disabled: trial use use_1 failed (UNDECLARED_CALL): x');
    expect(words('rejected', 'not wanted')).toBe('rejected: not wanted');
    // The pipeline's own rejections are said as the gate that failed, not as the person's.
    expect(words('rejected', 'quarantine: example 2 failed (SCHEMA_MISMATCH): $[0]: expected string')).toBe(
      'failed quarantine: example 2 failed (SCHEMA_MISMATCH): $[0]: expected string',
    );
    expect(words('rejected', 'validation: called tools.fetch')).toBe('failed validation: called tools.fetch');
    expect(words('superseded', 'superseded by v3')).toBe('superseded by v3');
  });

  it('has words for every state, none empty, whatever the reason', () => {
    fc.assert(
      fc.property(fc.constantFrom(...SKILL_STATES), fc.option(fc.string()), (state, reason) => {
        expect(skillStateWords({ state, reason, trial }, at).length).toBeGreaterThan(0);
      }),
    );
  });
});

describe('calls made in quarantine against what the skill declared', () => {
  const result = (calls: { tool: string; target: string }[]) => ({
    input: {},
    ok: true,
    durationMs: 1,
    calls: calls.map((call) => ({ ...call, decision: 'recorded' })),
  });
  it('marks a fetch to a host not declared, counts repeats, and a tool not declared', () => {
    const found = callsAgainstDeclared({
      capabilities: { fetch: { hosts: ['API.example.com'] } },
      exampleResults: [
        result([{ tool: 'fetch', target: 'GET https://api.example.com/a' }]),
        result([
          { tool: 'fetch', target: 'GET https://api.example.com/a' },
          { tool: 'fetch', target: 'POST https://collector.example.net/' },
          { tool: 'readFile', target: '/ws/a.txt' },
        ]),
      ],
    });
    expect(found.declared).toEqual(['fetch api.example.com']);
    expect(found.made).toEqual([
      { call: 'fetch GET https://api.example.com/a', declared: true, times: 2 },
      { call: 'fetch POST https://collector.example.net/', declared: false, times: 1 },
      { call: 'readFile /ws/a.txt', declared: false, times: 1 },
    ]);
  });
});

describe('a new skill name from a purpose', () => {
  it('is always a name the host accepts', () => {
    fc.assert(
      fc.property(fc.option(fc.string({ maxLength: 300 })), (purpose) => {
        expect(SkillNameSchema.safeParse(skillNameFrom(purpose)).success).toBe(true);
      }),
    );
    expect(skillNameFrom('Upper-case the words!')).toBe('upper_case_the_words');
    expect(skillNameFrom('42 ways')).toBe('ways');
    expect(skillNameFrom('')).toBe('saved_code');
  });
});

describe('the skill form', () => {
  const values = {
    name: 'x',
    purpose: 'p',
    code: 'return 1;',
    inputSchema: '{"type":"object"}',
    outputSchema: '{}',
    capabilities: '{}',
    budget: '{"timeMs":100,"calls":0}',
    examples: '[{},{},{}]',
  };
  it('names the field that is not JSON, and sends nothing', () => {
    expect(parseSkillForm({ ...values, outputSchema: '{' })).toEqual({
      ok: false,
      message: expect.stringMatching(/^Output schema is not JSON: /),
    });
    expect(parseSkillForm({ ...values, examples: '{}' })).toEqual({ ok: false, message: expect.stringContaining('a JSON list') });
    expect(parseSkillForm(values)).toEqual({
      ok: true,
      fields: expect.objectContaining({ examples: [{}, {}, {}], budget: { timeMs: 100, calls: 0 } }),
    });
  });
});
