import { describe, expect, it } from 'vitest';
import { ExecutorError } from '../../../src/domain/errors.js';
import { parsePlan } from '../../../src/domain/plan-parse.js';
import { planFromSteps, PROPOSE_PLAN_INPUT, PROPOSING_TOOLS, stepFromTool } from '../../../src/mcp/tools.js';

describe('proposing tools', () => {
  it('turn write_file, delete_file and kb_add into steps the host accepts', () => {
    const steps = [
      stepFromTool('write_file', { path: '/w/a.txt', content: 'x', purpose: 'why' }),
      stepFromTool('delete_file', { path: '/w/b.txt', purpose: 'why' }),
      stepFromTool('kb_add', { title: 'T', content: 'C', tags: ['t'] }),
    ];
    const plan = parsePlan({ steps }, { origin: 'agent', client: 'c 1' });
    expect(plan.steps.map((step) => step.action)).toEqual(['writeFile', 'deleteFile', 'createKBEntry']);
    expect(plan.steps[0]!.meta).toEqual({ origin: 'agent', client: 'c 1', purpose: 'why' });
  });

  it('map run_command to runCommand with exactly one of command or argv, and network to the allowlist mode', () => {
    expect(stepFromTool('run_command', { command: 'npm test', cwd: '/w', network: true, purpose: 'p' })).toEqual({
      action: 'runCommand',
      args: { command: 'npm test', cwd: '/w', network: 'allowlist' },
      meta: { purpose: 'p' },
    });
    expect(stepFromTool('run_command', { argv: ['ls'], network: false, purpose: 'p' }).args).toEqual({ argv: ['ls'] });
    expect(() => stepFromTool('run_command', { purpose: 'p' })).toThrow(ExecutorError);
    expect(() => stepFromTool('run_command', { command: 'a', argv: ['a'], purpose: 'p' })).toThrow(/exactly one/);
  });

  it('map run_code to runCode, keeping only the capabilities asked for', () => {
    const step = stepFromTool('run_code', {
      code: 'print(1)',
      language: 'python',
      capabilities: { readFile: true, kbSearch: false },
      purpose: 'p',
    });
    expect(step).toEqual({
      action: 'runCode',
      args: { code: 'print(1)', purpose: 'p', language: 'python', capabilities: { readFile: true } },
      meta: { purpose: 'p' },
    });
  });

  it('refuse, naming them, arguments no tool knows, at every level (the tools, their nested objects, propose_plan and its steps)', () => {
    const extra = { unexpected: 1, ['x'.repeat(500)]: 2 };
    const cases: [
      { safeParse(value: unknown): { success: boolean; error?: { issues: { message: string }[] } } },
      Record<string, unknown>,
      RegExp,
    ][] = [
      [
        PROPOSING_TOOLS.write_file.input,
        { path: '/a', content: '!!', encoding: 'base64', purpose: 'p' },
        /write_file does not take "encoding"/,
      ],
      [PROPOSING_TOOLS.delete_file.input, { path: '/a', purpose: 'p', recursive: true }, /delete_file does not take "recursive"/],
      [PROPOSING_TOOLS.run_command.input, { command: 'ls', purpose: 'p', env: { A: '1' } }, /run_command does not take "env"/],
      [PROPOSING_TOOLS.run_code.input, { code: '1', purpose: 'p', sandbox: 'docker' }, /run_code does not take "sandbox"/],
      [
        PROPOSING_TOOLS.run_code.input,
        { code: '1', purpose: 'p', capabilities: { fetch: { hosts: ['a.org'], all: true } } },
        /capabilities\.fetch does not take "all"/,
      ],
      [PROPOSING_TOOLS.open_url.input, { url: 'https://a.org/', purpose: 'p', ...extra }, /open_url does not take "unexpected", "x{64}"; /],
      [PROPOSING_TOOLS.kb_add.input, { title: 't', content: 'c', purpose: 'p' }, /kb_add does not take "purpose"/],
      [
        PROPOSE_PLAN_INPUT,
        { purpose: 'p', steps: [{ tool: 'kb_add', args: { title: 't', content: 'c' } }], atomic: true },
        /propose_plan does not take "atomic"/,
      ],
      [
        PROPOSE_PLAN_INPUT,
        { purpose: 'p', steps: [{ tool: 'kb_add', args: { title: 't', content: 'c' }, when: 'now' }] },
        /a propose_plan step does not take "when"/,
      ],
    ];
    for (const [schema, args, message] of cases) {
      const parsed = schema.safeParse(args);
      expect(parsed.success, JSON.stringify(args).slice(0, 100)).toBe(false);
      expect(parsed.error!.issues.map((issue) => issue.message).join('; ')).toMatch(message);
    }
  });

  it('refuse an empty purpose: the person needs a reason to decide', () => {
    expect(PROPOSING_TOOLS.write_file.input.safeParse({ path: '/a', content: '', purpose: '  ' }).success).toBe(false);
  });
});

describe('planFromSteps', () => {
  it('checks every step against its own tool and names each problem by position', () => {
    const input = PROPOSE_PLAN_INPUT.parse({
      purpose: 'p',
      steps: [
        { tool: 'write_file', args: { path: '/w/a', content: 'x', purpose: 'ok' } },
        { tool: 'delete_file', args: {} },
        { tool: 'run_command', args: { purpose: 'q' } },
      ],
    });
    try {
      planFromSteps(input);
      throw new Error('expected a refusal');
    } catch (error) {
      expect(error).toBeInstanceOf(ExecutorError);
      expect((error as ExecutorError).message).toMatch(
        /steps\.1\.args\.path \(delete_file\): .*steps\.2 \(run_command\): run_command needs exactly one/,
      );
    }
  });

  it("refuses an argument a step's tool does not know, naming it, instead of dropping it", () => {
    const input = PROPOSE_PLAN_INPUT.parse({
      purpose: 'p',
      steps: [
        { tool: 'write_file', args: { path: '/w/a', content: '!!', encoding: 'base64', purpose: 'p' } },
        {
          tool: 'run_code',
          args: { code: '1', purpose: 'p', capabilities: { fetch: { hosts: ['a.org'], methods: ['POST'] }, env: true } },
        },
      ],
    });
    expect(() => planFromSteps(input)).toThrow(
      /steps\.0\.args \(write_file\): write_file does not take "encoding"; it takes only path, content, purpose.*steps\.1\.args\.capabilities\.fetch \(run_code\): capabilities\.fetch does not take "methods".*steps\.1\.args\.capabilities \(run_code\): run_code capabilities does not take "env"/,
    );
  });

  it('keeps the order of the steps', () => {
    const plan = planFromSteps(
      PROPOSE_PLAN_INPUT.parse({
        purpose: 'p',
        steps: [
          { tool: 'kb_add', args: { title: 'a', content: 'a' } },
          { tool: 'kb_add', args: { title: 'b', content: 'b' } },
        ],
      }),
    );
    expect(plan.steps.map((step) => step.args.title)).toEqual(['a', 'b']);
  });
});
