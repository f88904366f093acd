import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { functionResponses, runGemini, startScriptedGemini } from '../../helpers/gemini-cli.js';
import { runCli } from '../../helpers/run-cli.js';
import { connectedWorkspace, person, waitingStep } from '../../helpers/connected-client.js';
import { closeAfter } from '../../helpers/teardown.js';

/*
 * The real Gemini CLI, connected with `executor connect gemini-cli --project`, against a scripted
 * Gemini model (the turns are scripted in the Gemini API's real SSE format) and a real
 * `executor serve`. The person decides through the CLI's host session.
 */

const hasDocker = dockerAvailable();

describe('Gemini CLI through executor hook', () => {
  it('a write_file approved by the person is made by Executor once, is in History under the session, and reverts', async () => {
    const { dataDir, workspace } = await connectedWorkspace('gemini-cli');
    const target = path.join(workspace, 'notes.md');
    const model = closeAfter(await startScriptedGemini([{ name: 'write_file', args: { file_path: target, content: '# Notes\n' } }]));
    const run = runGemini(workspace, model);
    const api = await person(dataDir);
    const stepId = await waitingStep(api);
    expect(fs.existsSync(target)).toBe(false);
    const record = await api.getStep({ stepId });
    expect(record.step.action).toBe('writeFile');
    expect(record.step.args).toMatchObject({ path: target, content: '# Notes\n' });
    expect(record.step.meta.client).toMatch(/^Gemini CLI · session [\w-]{1,8} · folder /);
    await api.approve({ stepId });
    const finished = await run;
    expect(finished.code, finished.stderr).toBe(0);
    expect(fs.readFileSync(target, 'utf8')).toBe('# Notes\n');
    const [result] = functionResponses(model);
    expect(result!.name).toBe('write_file');
    expect(result!.text).toContain(`DONE by Executor, not an error: ${target} now holds the content you asked for (step ${stepId}`);
    const history = await api.listSteps({});
    expect(history.map((entry) => entry.step.id)).toEqual([stepId]);
    expect(history[0]!.status).toBe('executed');
    const reverted = runCli(['--data-dir', dataDir, 'revert', stepId]);
    expect(reverted.status, reverted.stderr).toBe(0);
    expect(fs.existsSync(target)).toBe(false);
  }, 240_000);

  it("a replace whose old text is not in the file is denied in Gemini CLI's own words, and nothing is proposed", async () => {
    const { dataDir, workspace } = await connectedWorkspace('gemini-cli');
    const target = path.join(workspace, 'app.js');
    fs.writeFileSync(target, 'const answer = 42;\n');
    const model = closeAfter(
      await startScriptedGemini([
        {
          name: 'replace',
          args: { file_path: target, instruction: 'bump', old_string: 'const answer = 41;', new_string: 'const answer = 43;' },
        },
      ]),
    );
    const finished = await runGemini(workspace, model);
    expect(finished.code, finished.stderr).toBe(0);
    const [edit] = functionResponses(model);
    expect(edit!.text).toContain(`Tool execution blocked: Could not find an exact match for 'old_string' in '${target}'`);
    expect(fs.readFileSync(target, 'utf8')).toBe('const answer = 42;\n');
    expect(await (await person(dataDir)).listSteps({})).toEqual([]);
  }, 240_000);

  it('a read_file of a secret is denied with the secret pattern, .env never reaches the model, a plain file is read', async () => {
    const { workspace } = await connectedWorkspace('gemini-cli');
    fs.writeFileSync(path.join(workspace, '.env'), 'TOKEN=abc\n');
    fs.writeFileSync(path.join(workspace, 'deploy.pem'), 'PRIVATE-KEY-BYTES\n');
    fs.writeFileSync(path.join(workspace, 'readme.txt'), 'plain words\n');
    const model = closeAfter(
      await startScriptedGemini([
        { name: 'read_file', args: { file_path: path.join(workspace, '.env') } },
        { name: 'read_file', args: { file_path: path.join(workspace, 'deploy.pem') } },
        { name: 'read_file', args: { file_path: path.join(workspace, 'readme.txt') } },
      ]),
    );
    const finished = await runGemini(workspace, model);
    expect(finished.code, finished.stderr).toBe(0);
    const [env, key, plain] = functionResponses(model);
    // Gemini CLI 0.61 refuses .env files itself, before any hook runs ("Path not in workspace").
    expect(env!.text).not.toContain('TOKEN=abc');
    expect(key!.text).toMatch(
      /^Tool execution blocked: Executor's policy does not let agents read .*deploy\.pem: it matches the secret pattern "\*\.pem"/,
    );
    const sent = JSON.stringify(model.requests.map((request) => request.body));
    expect(sent).not.toContain('TOKEN=abc');
    expect(sent).not.toContain('PRIVATE-KEY-BYTES');
    expect(plain!.text).toContain('plain words');
  }, 240_000);

  it('with the host down every call is denied, naming the one command that starts Executor', async () => {
    const { dataDir, workspace, serve } = await connectedWorkspace('gemini-cli');
    await serve.stop();
    const target = path.join(workspace, 'x.txt');
    const model = closeAfter(await startScriptedGemini([{ name: 'write_file', args: { file_path: target, content: 'x' } }]));
    const finished = await runGemini(workspace, model);
    expect(finished.code, finished.stderr).toBe(0);
    const [result] = functionResponses(model);
    expect(result!.text).toContain('Tool execution blocked: Executor is not running');
    expect(result!.text).toContain(`--data-dir ${JSON.stringify(dataDir)} serve`);
    expect(fs.existsSync(target)).toBe(false);
  }, 240_000);

  it('a person silent past the deadline: the step is withdrawn, nothing is written, and the model is told it was not decided', async () => {
    const { dataDir, workspace } = await connectedWorkspace('gemini-cli', {}, ['--wait-seconds', '3']);
    const target = path.join(workspace, 'late.txt');
    const model = closeAfter(await startScriptedGemini([{ name: 'write_file', args: { file_path: target, content: 'late\n' } }]));
    const finished = await runGemini(workspace, model);
    expect(finished.code, finished.stderr).toBe(0);
    const api = await person(dataDir);
    const steps = await api.listSteps({});
    expect(steps).toHaveLength(1);
    const stepId = steps[0]!.step.id;
    const [result] = functionResponses(model);
    expect(result!.text).toContain(
      `Tool execution blocked: NOT DECIDED: the user did not decide on step ${stepId} within 3 s, so Executor withdrew it; nothing ran.`,
    );
    const record = await api.getStep({ stepId });
    expect(record.status).toBe('rejected');
    // Withdrawn means it can no longer be approved behind the model's back.
    await expect(api.approve({ stepId })).rejects.toThrow();
    expect(fs.existsSync(target)).toBe(false);
  }, 240_000);

  it('a run_shell_command the person rejects is not run, and the model receives their reason', async () => {
    const { dataDir, workspace } = await connectedWorkspace('gemini-cli');
    const model = closeAfter(await startScriptedGemini([{ name: 'run_shell_command', args: { command: 'touch made-by-shell' } }]));
    const run = runGemini(workspace, model);
    const api = await person(dataDir);
    const stepId = await waitingStep(api);
    expect((await api.getStep({ stepId })).step.action).toBe('runCommand');
    await api.reject({ stepId, reason: 'not in this folder, please' });
    const finished = await run;
    expect(finished.code, finished.stderr).toBe(0);
    const [result] = functionResponses(model);
    expect(result!.text).toContain('Tool execution blocked:');
    expect(result!.text).toContain('REJECTED by the user: not in this folder, please');
    expect(fs.existsSync(path.join(workspace, 'made-by-shell'))).toBe(false);
  }, 240_000);

  it.skipIf(!hasDocker)(
    'a run_shell_command approved runs in the sandbox, its changeset is applied, and the model gets its real output',
    async () => {
      await ensureSandboxImage();
      const { dataDir, workspace } = await connectedWorkspace('gemini-cli');
      fs.writeFileSync(path.join(workspace, 'input.txt'), 'one\ntwo\n');
      const model = closeAfter(
        await startScriptedGemini([
          { name: 'run_shell_command', args: { command: 'wc -l < input.txt > count.txt && echo counted; echo warned >&2' } },
        ]),
      );
      const run = runGemini(workspace, model);
      const api = await person(dataDir);
      const stepId = await waitingStep(api);
      expect(fs.existsSync(path.join(workspace, 'count.txt'))).toBe(false);
      await api.approve({ stepId });
      const finished = await run;
      expect(finished.code, finished.stderr).toBe(0);
      const [result] = functionResponses(model);
      expect(result!.text).not.toContain('Tool execution blocked');
      expect(result!.text).toContain('counted');
      expect(result!.text).toContain('warned');
      expect(fs.readFileSync(path.join(workspace, 'count.txt'), 'utf8').trim()).toBe('2');
      expect((await api.getStep({ stepId })).status).toBe('executed');
    },
    420_000,
  );
});
