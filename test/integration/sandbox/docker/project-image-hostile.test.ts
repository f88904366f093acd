import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { sandboxImageTag } from '../../../../src/sandbox/docker/sandbox-image.js';
import { dockerAvailable, ensureSandboxImage } from '../../../helpers/docker-engine.js';
import { proposeCommandStep, removeProjectImagesBuiltFor } from '../../../helpers/project-images.js';
import { runCliAsync } from '../../../helpers/run-cli.js';
import { defer } from '../../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../../helpers/temp-dirs.js';

/*
 * A cloned repository is the agent's ground: its devcontainer.json, Dockerfile and .dockerignore are
 * the project's, not the person's. What they can make Executor do before anyone consents.
 */

const hasDocker = dockerAvailable();

interface ShownStep {
  status: string;
  previewError?: string;
  preview: { exitCode: number | null; stdout: { text: string }; stderr: { text: string } } | null;
}

const proposeCommand = (dataDir: string, planId: string, command: string) => proposeCommandStep<ShownStep>(dataDir, planId, command);

describe.skipIf(!hasDocker)("a hostile project's dev container", () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it("a Dockerfile that COPYs the project (no RUN, so a dry run builds it) gets none of the project's secrets into the image", async () => {
    const { dataDir, workspace } = tempSetup();
    removeProjectImagesBuiltFor(workspace);
    fs.mkdirSync(path.join(workspace, '.devcontainer'));
    fs.mkdirSync(path.join(workspace, '.ssh'));
    fs.mkdirSync(path.join(workspace, '.git'));
    fs.writeFileSync(path.join(workspace, '.env'), 'API_TOKEN=env-secret-1\n');
    fs.writeFileSync(path.join(workspace, '.ssh/id_ed25519'), 'ssh-secret-2\n');
    fs.writeFileSync(path.join(workspace, '.git/config'), '[remote "origin"]\n\turl = https://x:git-secret-3@example.com/r.git\n');
    fs.writeFileSync(path.join(workspace, 'server.pem'), 'pem-secret-4\n');
    fs.writeFileSync(path.join(workspace, 'app.js'), 'console.log("app")\n');
    fs.writeFileSync(path.join(workspace, '.devcontainer/Dockerfile'), `# ${randomUUID()}\nFROM ${sandboxImageTag()}\nCOPY . /src/\n`);
    fs.writeFileSync(
      path.join(workspace, '.devcontainer/devcontainer.json'),
      JSON.stringify({ build: { dockerfile: 'Dockerfile', context: '..' } }),
    );

    const step = await proposeCommand(
      dataDir,
      'leak',
      'cat /src/app.js; cat /src/.env /src/.ssh/id_ed25519 /src/.git/config /src/server.pem; true',
    );
    expect(step.preview?.exitCode, step.previewError).toBe(0);
    // The build did happen and the project's plain files are in it...
    expect(step.preview!.stdout.text).toContain('console.log("app")');
    // ...but what the scratch copy keeps out is kept out of the image too: a dry run's output reaches the agent.
    for (const secret of ['env-secret-1', 'ssh-secret-2', 'git-secret-3', 'pem-secret-4'])
      expect(step.preview!.stdout.text).not.toContain(secret);
  }, 300_000);

  it('a RUN hidden from the consent check by an escape directive the builder does not honour is not run by a dry run', async () => {
    const { dataDir, workspace } = tempSetup();
    removeProjectImagesBuiltFor(workspace);
    fs.mkdirSync(path.join(workspace, '.devcontainer'));
    const marker = `ran-the-projects-code-${randomUUID()}`;
    // After a comment, `# escape=` is a comment to the builder: the backtick ends no line there, and RUN runs.
    fs.writeFileSync(
      path.join(workspace, '.devcontainer/Dockerfile'),
      `# a note first\n# escape=\`\nFROM ${sandboxImageTag()}\nENV A=b\`\nRUN echo ${marker}\n`,
    );
    fs.writeFileSync(path.join(workspace, '.devcontainer/devcontainer.json'), JSON.stringify({ build: { dockerfile: 'Dockerfile' } }));
    const step = await proposeCommand(dataDir, 'hidden', 'true');
    expect(step.preview).toBeNull();
    expect(step.previewError).toContain("building it runs the project's code: RUN echo");
    // Nothing was built: the builder never printed the RUN's output.
    expect(JSON.stringify(step)).not.toMatch(new RegExp(`Running in|\\n${marker}`));
  }, 300_000);

  it("a base image's ONBUILD RUN, and a base not on the engine (pulled with triggers nobody saw), need consent as a RUN does", async () => {
    const { dataDir, workspace } = tempSetup();
    removeProjectImagesBuiltFor(workspace);
    fs.mkdirSync(path.join(workspace, '.devcontainer'));
    fs.writeFileSync(path.join(workspace, '.devcontainer/devcontainer.json'), JSON.stringify({ build: { dockerfile: 'Dockerfile' } }));
    fs.writeFileSync(
      path.join(workspace, '.devcontainer/Dockerfile'),
      `FROM executor-atk-not-here/none:${randomUUID().slice(0, 8)}\nCOPY devcontainer.json /etc/dc.json\n`,
    );
    const pulled = await proposeCommand(dataDir, 'pulled', 'true');
    expect(pulled.preview).toBeNull();
    expect(pulled.previewError).toMatch(/building it runs the project's code: FROM executor-atk-not-here\/none:\S+ \(not on this engine/);

    // Podman builds OCI images, which keep no ONBUILD (buildah drops it with a warning): no such base can be made there.
    if (process.env.EXECUTOR_TEST_ENGINE === 'podman') return;
    // An image the person has locally that carries an ONBUILD RUN (as the old `node:onbuild` images did: `ONBUILD RUN npm install`).
    const marker = `onbuild-ran-${randomUUID()}`;
    const baseTag = `executor-atk-onbuild:${randomUUID().slice(0, 8)}`;
    const baseDir = tempDir();
    fs.writeFileSync(path.join(baseDir, 'Dockerfile'), `FROM ${sandboxImageTag()}\nONBUILD RUN echo ${marker}\n`);
    const made = spawnSync('docker', ['build', '-q', '-t', baseTag, baseDir], {
      encoding: 'utf8',
      env: { ...process.env, DOCKER_BUILDKIT: '0' },
    });
    expect(made.status, made.stderr).toBe(0);
    defer(() => void spawnSync('docker', ['image', 'rm', '-f', baseTag]));

    fs.writeFileSync(path.join(workspace, '.devcontainer/Dockerfile'), `FROM ${baseTag}\nCOPY devcontainer.json /etc/dc.json\n`);
    const step = await proposeCommand(dataDir, 'onbuild', 'true');
    expect(step.preview).toBeNull();
    expect(step.previewError).toContain(`building it runs the project's code: ONBUILD RUN echo ${marker} (from the base image ${baseTag})`);
    expect(JSON.stringify(step)).not.toContain('Running in');
  }, 300_000);

  it('refuses a dev container user in root\'s group (remoteUser "10001:0", containerUser "sandbox:root"): no command runs with gid 0', async () => {
    for (const [field, user] of [
      ['remoteUser', '10001:0'],
      ['containerUser', 'sandbox:root'],
    ] as const) {
      const { dataDir, workspace } = tempSetup();
      fs.writeFileSync(path.join(workspace, '.devcontainer.json'), JSON.stringify({ image: sandboxImageTag(), [field]: user }));
      const step = await proposeCommand(dataDir, `group-${field}`, 'id -g');
      expect(step.preview?.stdout.text.trim(), `${field}: ${user}`).not.toBe('0');
      expect(step.previewError).toContain("whose group is root (gid 0), and Executor never runs a command in root's group");
    }
  }, 300_000);

  it('consent to a build that runs `RUN echo first` is not consent to a Dockerfile changed after the decision was shown', async () => {
    const { dataDir, workspace } = tempSetup();
    removeProjectImagesBuiltFor(workspace);
    fs.mkdirSync(path.join(workspace, '.devcontainer'));
    fs.writeFileSync(path.join(workspace, '.devcontainer/devcontainer.json'), JSON.stringify({ build: { dockerfile: 'Dockerfile' } }));
    const dockerfile = path.join(workspace, '.devcontainer/Dockerfile');
    const id = randomUUID();
    fs.writeFileSync(dockerfile, `FROM ${sandboxImageTag()}\nRUN echo first-${id}\n`);
    const step = await proposeCommand(dataDir, 'swap', 'true');
    expect(step.preview).toBeNull();
    expect(step.previewError).toContain(`RUN echo first-${id}`);

    // After the person read "building it runs the project's code: RUN echo first-…", the Dockerfile changes.
    fs.writeFileSync(dockerfile, `FROM ${sandboxImageTag()}\nRUN echo second-${id}\n`);
    await runCliAsync(['--data-dir', dataDir, 'approve', 'swap-cmd', '--preview-hash', 'none'], { timeoutMs: 240_000 });
    const after = (await runCliAsync(['--data-dir', dataDir, '--json', 'steps', 'show', 'swap-cmd'])).json<ShownStep>();
    // What was approved was a build of `RUN echo first-…`: the other build is shown to the person first, not run.
    expect(after.preview).toBeNull();
    expect(after.previewError).toContain(`RUN echo second-${id}`);
    expect(after.status).toBe('awaiting_consent');
    expect(after.previewError).toMatch(/^The Dockerfile changed since you approved its build; nothing was built or run\./);
    expect(JSON.stringify(after)).not.toContain('Running in');

    // A fresh decision on the build now shown is consent to that build: it is built, and the command runs.
    const again = await runCliAsync(['--data-dir', dataDir, 'approve', 'swap-cmd', '--preview-hash', 'none'], { timeoutMs: 240_000 });
    expect(again.stderr).not.toContain('SANDBOX_');
    const ran = (await runCliAsync(['--data-dir', dataDir, '--json', 'steps', 'show', 'swap-cmd'])).json<ShownStep>();
    expect(ran.preview?.exitCode, ran.previewError).toBe(0);
  }, 300_000);

  it('a devcontainer.json that is a link out of the root is refused, and no byte of its target reaches the step', async () => {
    const { dataDir, workspace, base } = tempSetup();
    const outside = path.join(base, 'credentials');
    fs.writeFileSync(outside, 'AKIAOUTSIDE=secret-outside\n');
    fs.symlinkSync(outside, path.join(workspace, '.devcontainer.json'));
    const step = await proposeCommand(dataDir, 'linked', 'true');
    expect(step.preview).toBeNull();
    expect(step.previewError).toContain('.devcontainer.json is a link that leads out of the workspace root');
    expect(JSON.stringify(step)).not.toContain('AKIAOUTSIDE');
  }, 120_000);

  it('a devcontainer.json that links to /dev/zero is refused at once, not read forever', async () => {
    const { dataDir, workspace } = tempSetup();
    fs.mkdirSync(path.join(workspace, '.devcontainer'));
    fs.symlinkSync('/dev/zero', path.join(workspace, '.devcontainer/devcontainer.json'));
    const step = await proposeCommand(dataDir, 'zero', 'true');
    expect(step.preview).toBeNull();
    expect(step.previewError).toContain('.devcontainer/devcontainer.json is a link that leads out of the workspace root');
  }, 120_000);
});
