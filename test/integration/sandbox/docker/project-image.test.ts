import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Executor } from '../../../../src/executor/executor.js';
import { sandboxImageTag } from '../../../../src/sandbox/docker/sandbox-image.js';
import { dockerAvailable, ensureSandboxImage } from '../../../helpers/docker-engine.js';
import { runCliAsync, shownPreviewHash } from '../../../helpers/run-cli.js';
import { proposeCommandStep, removeProjectImagesBuiltFor } from '../../../helpers/project-images.js';
import { tempSetup } from '../../../helpers/temp-dirs.js';

const hasDocker = dockerAvailable();
const FIXTURE = path.resolve(import.meta.dirname, '../../../fixtures/devcontainer-project');

interface ShownStep {
  status: string;
  preview: {
    kind: string;
    exitCode: number | null;
    stdout: { text: string };
    stderr: { text: string };
    image: { tag: string; digest: string };
  } | null;
}

/**
 * The fixture project as a workspace root, its dev container built FROM this machine's default image; node_modules
 * copied in. The images built for it are removed after the test: the fixture's build is a new image whenever the
 * default image is rebuilt (every CI run), and a test that changes a file of the build (a tool, devcontainer.json)
 * makes one more, so each run left three on the engine.
 */
function projectSetup(): { dataDir: string; workspace: string } {
  const setup = tempSetup({ sandbox: { ignore: ['.git/**'] } });
  removeProjectImagesBuiltFor(setup.workspace);
  fs.cpSync(FIXTURE, setup.workspace, { recursive: true });
  const devcontainer = path.join(setup.workspace, '.devcontainer/devcontainer.json');
  fs.writeFileSync(devcontainer, fs.readFileSync(devcontainer, 'utf8').replace('executor-sandbox:latest', sandboxImageTag()));
  return setup;
}

/**
 * A Dockerfile line no earlier run wrote: project images are cached on the engine by content, so a test
 * that needs a build to be refused (or consented) must not find the image an earlier run built (one
 * whose test was killed before its cleanup). projectSetup() removes the images this test builds.
 */
function freshBuild(): string {
  return `# this run: ${randomUUID()}\n`;
}

const proposeCommand = (dataDir: string, planId: string, command: string) => proposeCommandStep<ShownStep>(dataDir, planId, command);

/** The reason the step's preview could not be made, as its audit record keeps it (what the decision shows). */
function previewErrorOf(dataDir: string, stepId: string): string {
  const executor = Executor.open(dataDir, { resumeUnfinished: false });
  try {
    const entries = executor.getAudit({ filters: { stepId } }).entries;
    for (const entry of entries) {
      const found = JSON.stringify([entry.args, entry.result]).match(/"previewError":("(?:[^"\\]|\\.)*")/);
      if (found) return JSON.parse(found[1]!) as string;
    }
    return '';
  } finally {
    executor.close();
  }
}

describe.skipIf(!hasDocker)("a project's own sandbox image (devcontainer.json)", () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it("runs `npm test` of a real package with its own node_modules and the tool its dev container's Dockerfile adds", async () => {
    const { dataDir, workspace } = projectSetup();
    const step = await proposeCommand(dataDir, 'npm', 'npm test');
    expect(step.status).toBe('awaiting_consent');
    expect(step.preview?.exitCode, `${step.preview?.stdout.text}\n${step.preview?.stderr.text}`).toBe(0);
    expect(step.preview!.stdout.text).toContain('ms tests passed');
    expect(step.preview!.stdout.text).toContain("hello from the project's own image");
    expect(step.preview!.image.tag).toMatch(/^executor-project:[0-9a-f]{24}$/);

    const status = await runCliAsync(['--data-dir', dataDir, 'sandbox', 'status', '--root', workspace]);
    expect(status.stdout).toMatch(/Holds {4}sh \(busybox [\d.]+, with its tools\), node [\d.]+, npm [\d.]+, npx [\d.]+, git [\d.]+/);
    expect(status.stdout).toContain(
      `Root     ${workspace}: ${path.join(workspace, '.devcontainer/Dockerfile')} (.devcontainer/devcontainer.json), as user 10001`,
    );
  }, 300_000);

  it('rebuilds when a file of the build changes, and reuses the image while nothing does', async () => {
    const { dataDir, workspace } = projectSetup();
    const first = await proposeCommand(dataDir, 'one', 'hello-tool');
    expect(first.preview?.stdout.text).toContain("hello from the project's own image");
    const again = await proposeCommand(dataDir, 'two', 'hello-tool');
    expect(again.preview!.image).toEqual(first.preview!.image);

    fs.writeFileSync(path.join(workspace, '.devcontainer/hello-tool'), '#!/bin/sh\necho "hello, changed"\n', { mode: 0o755 });
    const changed = await proposeCommand(dataDir, 'three', 'hello-tool');
    expect(changed.preview?.stdout.text).toContain('hello, changed');
    expect(changed.preview!.image.digest).not.toBe(first.preview!.image.digest);
    expect(changed.preview!.image.tag).not.toBe(first.preview!.image.tag);
  }, 300_000);

  it("shows the build's own error at the decision when the Dockerfile does not build", async () => {
    const { dataDir, workspace } = projectSetup();
    fs.appendFileSync(path.join(workspace, '.devcontainer/Dockerfile'), 'COPY no-such-file.txt /opt/\n');
    const step = await proposeCommand(dataDir, 'broken', 'npm test');
    expect(step.status).toBe('awaiting_consent');
    expect(step.preview).toBeNull();
    const reason = previewErrorOf(dataDir, 'broken-cmd');
    expect(reason).toContain("The project's sandbox image did not build from .devcontainer/Dockerfile");
    expect(reason).toContain('no-such-file.txt');

    // Kept on the step, where the person decides: `steps show` says it next to the preview hash and in full below.
    const shown = await runCliAsync(['--data-dir', dataDir, 'steps', 'show', 'broken-cmd']);
    expect(shown.stdout).toMatch(
      /^Preview {2}none \(no dry run could be made: The project's sandbox image did not build from \.devcontainer\/Dockerfile .*no-such-file\.txt.*\)$/m,
    );
    const why = shown.stdout.slice(shown.stdout.indexOf('--- why no dry run could be made\n'));
    expect(why).toContain("The project's sandbox image did not build from .devcontainer/Dockerfile");
    expect(why).toContain('COPY no-such-file.txt /opt/');
    const json = (await runCliAsync(['--data-dir', dataDir, '--json', 'steps', 'show', 'broken-cmd'])).json<{ previewError?: string }>();
    expect(json.previewError).toBe(reason);

    // Fixed, and the step previewed again (the person's edit of it): the reason goes with the new preview.
    const dockerfile = path.join(workspace, '.devcontainer/Dockerfile');
    fs.writeFileSync(dockerfile, fs.readFileSync(dockerfile, 'utf8').replace('COPY no-such-file.txt /opt/\n', ''));
    const edited = await runCliAsync(['--data-dir', dataDir, '--json', 'edit', 'broken-cmd', '--command', 'hello-tool'], {
      timeoutMs: 240_000,
    });
    expect(edited.stdout, edited.stderr).not.toBe('');
    const after = edited.json<ShownStep & { previewError?: string }>();
    expect(after.status, edited.stderr).toBe('awaiting_consent');
    expect(after.preview?.stdout.text).toContain("hello from the project's own image");
    expect(after.previewError).toBeUndefined();
    expect((await runCliAsync(['--data-dir', dataDir, 'steps', 'show', 'broken-cmd'])).stdout).not.toContain('no dry run could be made');
  }, 400_000);

  it('a Dockerfile that RUNs code is not built by a dry run: the decision says what it would run, and the person builds it', async () => {
    const { dataDir, workspace } = projectSetup();
    fs.appendFileSync(
      path.join(workspace, '.devcontainer/Dockerfile'),
      freshBuild() + 'USER root\nRUN mkdir -p /opt && echo built-by-run > /opt/marker && \\\n    chmod 644 /opt/marker\nUSER 10001:10001\n',
    );
    const step = await proposeCommand(dataDir, 'runs', 'cat /opt/marker');
    expect(step.preview).toBeNull();
    const reason = previewErrorOf(dataDir, 'runs-cmd');
    expect(reason).toContain("building it runs the project's code: RUN mkdir -p /opt && echo built-by-run > /opt/marker &&");
    expect(reason).toContain(`executor sandbox image build --root ${workspace}`);

    // The person runs the build themselves: its progress comes as it goes, on stderr.
    const built = await runCliAsync(['--data-dir', dataDir, 'sandbox', 'image', 'build', '--root', workspace], { timeoutMs: 240_000 });
    expect(built.status, built.stderr).toBe(0);
    // Docker's builder numbers steps "Step 2/5 : RUN …", Podman's (buildah) "STEP 2/5: RUN …".
    expect(built.stderr).toMatch(/build {4}(?:Step \d+\/\d+ :|STEP \d+\/\d+:) RUN mkdir -p \/opt && echo built-by-run/);
    expect(built.stdout).toContain('From     devcontainer-build (.devcontainer/devcontainer.json)');

    const after = await proposeCommand(dataDir, 'runs2', 'cat /opt/marker && id -u');
    expect(after.preview?.stdout.text).toBe('built-by-run\n10001\n');
  }, 300_000);

  it("the person's approval of a step whose image needs a RUN build is the consent: it builds, runs, shows the real preview, then applies; the records name the project image", async () => {
    const { dataDir, workspace } = projectSetup();
    fs.appendFileSync(
      path.join(workspace, '.devcontainer/Dockerfile'),
      freshBuild() + 'USER root\nRUN mkdir -p /opt && echo consented-build > /opt/marker\nUSER 10001:10001\n',
    );
    const step = await proposeCommand(dataDir, 'consent', 'cat /opt/marker > out.txt');
    expect(step.preview).toBeNull();
    expect(previewErrorOf(dataDir, 'consent-cmd')).toContain('Approve this step to build the image');

    // Approved with no preview: the image is built and the command runs on a copy; nothing is applied yet.
    const first = await runCliAsync(['--data-dir', dataDir, 'approve', 'consent-cmd', '--preview-hash', 'none'], { timeoutMs: 240_000 });
    expect(first.stderr).not.toContain('SANDBOX_');
    const shown = (await runCliAsync(['--data-dir', dataDir, '--json', 'steps', 'show', 'consent-cmd'])).json<ShownStep>();
    expect(shown.status).toBe('awaiting_consent');
    expect(shown.preview?.exitCode).toBe(0);
    expect(fs.existsSync(path.join(workspace, 'out.txt'))).toBe(false);

    const hash = shownPreviewHash(dataDir, 'consent-cmd');
    const applied = await runCliAsync(['--data-dir', dataDir, 'approve', 'consent-cmd', '--preview-hash', hash], { timeoutMs: 240_000 });
    expect(applied.status, applied.stderr).toBe(0);
    expect(fs.readFileSync(path.join(workspace, 'out.txt'), 'utf8')).toBe('consented-build\n');

    // executorEnv of the step's run records names the image it ran in: the project's, not the default.
    const exported = await runCliAsync(['--data-dir', dataDir, 'audit', 'export']);
    const bodies = exported.stdout
      .split('\n')
      .filter((line) => line.includes('"type":"record"'))
      .map(
        (line) =>
          JSON.parse((JSON.parse(line) as { body: string }).body) as {
            action: string;
            stepId: string | null;
            executorEnv: { sandbox: { imageDigest: string | null } | null };
          },
      );
    const executed = bodies.find((body) => body.stepId === 'consent-cmd' && body.action === 'step.executed');
    expect(executed?.executorEnv.sandbox?.imageDigest).toBe(shown.preview!.image.digest);
    expect(shown.preview!.image.tag).toMatch(/^executor-project:/);
  }, 400_000);

  it('refuses an image whose named user is root, saying so', async () => {
    const { dataDir, workspace } = projectSetup();
    const devcontainer = path.join(workspace, '.devcontainer/devcontainer.json');
    fs.writeFileSync(devcontainer, fs.readFileSync(devcontainer, 'utf8').replace('"remoteUser": "10001"', '"remoteUser": "root"'));
    await proposeCommand(dataDir, 'rooted', 'id -u');
    expect(previewErrorOf(dataDir, 'rooted-cmd')).toContain(
      'names the user "root", which is root, and Executor never runs a command as root',
    );
  }, 300_000);
});
