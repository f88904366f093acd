import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runClaude, toolCallScript, toolResults } from '../../helpers/claude-code.js';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { runCli } from '../../helpers/run-cli.js';
import { startScriptedAnthropicServer } from '../../helpers/scripted-anthropic-server.js';
import { connectedWorkspace, person, waitingStep } from '../../helpers/connected-client.js';
import { closeAfter } from '../../helpers/teardown.js';

/*
 * The real Claude Code, connected with `executor connect claude-code --project`, against a scripted
 * model (a remote model cannot run here; the turns are scripted in Anthropic's real SSE format) and a
 * real `executor serve`. The person decides through the CLI's host session.
 */

const hasDocker = dockerAvailable();

describe('Claude Code through executor hook', () => {
  it('a Write approved by the person is made by Executor once, is in History under the session, and reverts', async () => {
    const { dataDir, workspace } = await connectedWorkspace('claude-code');
    const target = path.join(workspace, 'notes.md');
    const model = closeAfter(
      await startScriptedAnthropicServer(toolCallScript([{ name: 'Write', input: { file_path: target, content: '# Notes\n' } }])),
    );
    const run = runClaude(workspace, model);
    const api = await person(dataDir);
    const stepId = await waitingStep(api);
    expect(fs.existsSync(target)).toBe(false);
    const record = await api.getStep({ stepId });
    expect(record.step.action).toBe('writeFile');
    expect(record.step.meta.client).toMatch(/^Claude Code · session [\w-]{8} · folder /);
    await api.approve({ stepId });
    const finished = await run;
    expect(finished.code).toBe(0);
    expect(fs.readFileSync(target, 'utf8')).toBe('# Notes\n');
    const [result] = toolResults(model);
    expect(result!.text).toContain(`DONE by Executor, not an error: ${target} now holds the content you asked for (step ${stepId}`);
    expect((await api.getStep({ stepId })).status).toBe('executed');
    const reverted = runCli(['--data-dir', dataDir, 'revert', stepId]);
    expect(reverted.status, reverted.stderr).toBe(0);
    expect(fs.existsSync(target)).toBe(false);
  }, 240_000);

  it("an Edit whose old text is not in the file is denied in Claude Code's own words, and nothing is proposed", async () => {
    const { dataDir, workspace } = await connectedWorkspace('claude-code');
    const target = path.join(workspace, 'app.js');
    fs.writeFileSync(target, 'const answer = 42;\n');
    const model = closeAfter(
      await startScriptedAnthropicServer(
        toolCallScript([
          { name: 'Read', input: { file_path: target } },
          { name: 'Edit', input: { file_path: target, old_string: 'const answer = 41;', new_string: 'const answer = 43;' } },
        ]),
      ),
    );
    expect((await runClaude(workspace, model)).code).toBe(0);
    const [read, edit] = toolResults(model);
    expect(read!.isError).toBe(false);
    expect(read!.text).toContain('const answer = 42;');
    expect(edit!.isError).toBe(true);
    expect(edit!.text).toContain('String to replace not found in file.');
    expect(fs.readFileSync(target, 'utf8')).toBe('const answer = 42;\n');
    expect(await (await person(dataDir)).listSteps({})).toEqual([]);
  }, 240_000);

  it('a read of .env is denied with the secret pattern, and a read outside the roots too', async () => {
    const { workspace, base } = await connectedWorkspace('claude-code');
    fs.writeFileSync(path.join(workspace, '.env'), 'TOKEN=abc\n');
    fs.writeFileSync(path.join(base, 'outside.txt'), 'outside\n');
    const model = closeAfter(
      await startScriptedAnthropicServer(
        toolCallScript([
          { name: 'Read', input: { file_path: path.join(workspace, '.env') } },
          { name: 'Read', input: { file_path: path.join(base, 'outside.txt') } },
        ]),
      ),
    );
    expect((await runClaude(workspace, model)).code).toBe(0);
    const [secret, outside] = toolResults(model);
    expect(secret!.isError).toBe(true);
    expect(secret!.text).toMatch(/does not let agents read .*\.env: it matches the secret pattern/);
    expect(secret!.text).not.toContain('TOKEN=abc');
    expect(outside!.isError).toBe(true);
    expect(outside!.text).toContain('does not let agents read');
  }, 240_000);

  it('a tool Executor does not know is asked, never let through (headless Claude Code then refuses it)', async () => {
    const { workspace } = await connectedWorkspace('claude-code');
    const model = closeAfter(
      await startScriptedAnthropicServer(toolCallScript([{ name: 'WebSearch', input: { query: 'executor hooks' } }])),
    );
    expect((await runClaude(workspace, model)).code).toBe(0);
    const [result] = toolResults(model);
    expect(result!.isError).toBe(true);
    expect(result!.text).toContain('Executor does not know the tool WebSearch');
  }, 240_000);

  it('with the host down every call is denied, naming the one command that starts Executor', async () => {
    const { dataDir, workspace, serve } = await connectedWorkspace('claude-code');
    await serve.stop();
    const target = path.join(workspace, 'x.txt');
    const model = closeAfter(
      await startScriptedAnthropicServer(toolCallScript([{ name: 'Write', input: { file_path: target, content: 'x' } }])),
    );
    expect((await runClaude(workspace, model)).code).toBe(0);
    const [result] = toolResults(model);
    expect(result!.isError).toBe(true);
    expect(result!.text).toContain('Executor is not running');
    expect(result!.text).toContain(`--data-dir ${JSON.stringify(dataDir)} serve`);
    expect(fs.existsSync(target)).toBe(false);
  }, 240_000);

  it('a Bash command the person rejects is not run, and the model receives their reason', async () => {
    const { dataDir, workspace } = await connectedWorkspace('claude-code');
    const model = closeAfter(
      await startScriptedAnthropicServer(toolCallScript([{ name: 'Bash', input: { command: 'touch made-by-bash' } }])),
    );
    const run = runClaude(workspace, model);
    const api = await person(dataDir);
    const stepId = await waitingStep(api);
    expect((await api.getStep({ stepId })).step.action).toBe('runCommand');
    await api.reject({ stepId, reason: 'not in this folder, please' });
    expect((await run).code).toBe(0);
    const [result] = toolResults(model);
    expect(result!.isError).toBe(true);
    expect(result!.text).toContain('REJECTED by the user: not in this folder, please');
    expect(fs.existsSync(path.join(workspace, 'made-by-bash'))).toBe(false);
  }, 240_000);

  it.skipIf(!hasDocker)(
    'a Bash command approved runs in the sandbox, its changeset is applied, and the model gets its real output',
    async () => {
      await ensureSandboxImage();
      const { dataDir, workspace } = await connectedWorkspace('claude-code');
      fs.writeFileSync(path.join(workspace, 'input.txt'), 'one\ntwo\n');
      const model = closeAfter(
        await startScriptedAnthropicServer(
          toolCallScript([{ name: 'Bash', input: { command: 'wc -l < input.txt > count.txt && echo counted; echo warned >&2' } }]),
        ),
      );
      const run = runClaude(workspace, model);
      const api = await person(dataDir);
      const stepId = await waitingStep(api);
      expect(fs.existsSync(path.join(workspace, 'count.txt'))).toBe(false);
      await api.approve({ stepId });
      expect((await run).code).toBe(0);
      const [result] = toolResults(model);
      expect(result!.isError).toBe(false);
      expect(result!.text).toContain('counted');
      expect(result!.text).toContain('warned');
      expect(fs.readFileSync(path.join(workspace, 'count.txt'), 'utf8').trim()).toBe('2');
      expect((await api.getStep({ stepId })).status).toBe('executed');
    },
    420_000,
  );
});
