import type { Command } from 'commander';
import { globals, print, withExecutor } from '../cli-context.js';

/** The Docker side (dockerode and the sandbox modules), loaded by the commands that talk to the engine. */
const dockerModules = async () => {
  const [containerRun, dockerClient, sandboxImage, tempAreas] = await Promise.all([
    import('../../sandbox/docker/container-run.js'),
    import('../../sandbox/docker/docker-client.js'),
    import('../../sandbox/docker/sandbox-image.js'),
    import('../../sandbox/docker/temp-areas.js'),
  ]);
  return { ...containerRun, ...dockerClient, ...sandboxImage, ...tempAreas };
};

/** sandbox image build | status: the Docker sandbox that runs commands and heavy code. */
export function registerSandboxCommands(program: Command): void {
  const sandbox = program.command('sandbox').description('the Docker sandbox that runs commands and heavy code');

  sandbox
    .command('status')
    .description('engine reachability and version, the sandbox image, a test command run in a real container, leftover containers removed')
    .action(async (_options: unknown, command: Command) => {
      const { json } = globals(command);
      const { connectDocker, engineStatus, imageInfo, sandboxImageTag, sweepLeftoverContainers, sweepTempAreas } = await dockerModules();
      const { probeSandbox } = await import('../../sandbox/docker/sandbox-probe.js');
      const client = connectDocker();
      const engine = await engineStatus(client);
      const image = engine.reachable ? await imageInfo(client, sandboxImageTag()) : { tag: sandboxImageTag(), present: false };
      const sweptContainers = engine.reachable ? await sweepLeftoverContainers(client) : [];
      sweepTempAreas();
      // Ready only once a container really started and ran a command: an image present but dead (exit 126) is not ready.
      const probe = engine.reachable && image.present && image.digest ? await probeSandbox(client, image.digest) : null;
      const status = { engine, image, sweptContainers: sweptContainers.length, probe, ready: probe?.ran === true };
      print(json, status, () =>
        [
          engine.reachable
            ? `Engine   reachable at ${engine.endpoint}: Docker ${engine.version} (API ${engine.apiVersion}, ${engine.os})`
            : `Engine   NOT reachable at ${engine.endpoint}: ${engine.error}. Start Docker or set DOCKER_HOST.`,
          image.present
            ? `Image    ${image.tag} ${image.digest} (${Math.round((image.sizeBytes ?? 0) / 1e6)} MB, built by ${image.builtBy ?? 'unknown'})`
            : `Image    ${image.tag} is missing: run \`executor sandbox image build\`.`,
          ...(probe
            ? [
                probe.ran
                  ? `Run      a test command ran in a sandbox container (sh and node answered, ${(probe.durationMs / 1000).toFixed(1)} s)`
                  : `Run      FAILED: ${probe.problem}`,
              ]
            : []),
          ...(sweptContainers.length ? [`Swept    ${sweptContainers.length} leftover container(s) of crashed runs`] : []),
          `Ready    ${status.ready ? 'yes' : 'no'}`,
        ].join('\n'),
      );
      process.exitCode = status.ready ? 0 : 1;
    });

  sandbox
    .command('retry')
    .description('run an approved step again after the sandbox was unavailable')
    .argument('<stepId>')
    .action(async (stepId: string, _options: unknown, command: Command) => {
      const { dataDir, json } = globals(command);
      const { explainOutcome, outcomeOf, summaryLine } = await import('../render.js');
      const record = await withExecutor(dataDir, (api) => api.executeStep({ stepId }));
      print(json, outcomeOf(record), () => [summaryLine(record), explainOutcome(record)].filter(Boolean).join('\n'));
      process.exitCode = record.status === 'executed' ? 0 : 1;
    });

  const image = sandbox.command('image').description('the sandbox image');
  image
    .command('build')
    .description('build the sandbox image for this version (skipped when it exists); offline from this machine by default')
    .option('--dockerfile', 'build from build/sandbox/Dockerfile instead (needs a registry to pull the base image)')
    .option('--force', 'rebuild even if the image exists')
    .action(async (options: { dockerfile?: boolean; force?: boolean }, command: Command) => {
      const { json } = globals(command);
      const { buildSandboxImage, connectDocker } = await dockerModules();
      const result = await buildSandboxImage(connectDocker(), {
        force: options.force,
        prefer: options.dockerfile ? 'dockerfile' : 'offline',
      });
      const how = {
        cached: 'already built; nothing to do',
        'offline-host-rootfs': "assembled offline from this machine's node, busybox and python, then `docker import`",
        dockerfile: 'built from build/sandbox/Dockerfile',
      }[result.path];
      print(json, result, () =>
        [
          `${result.tag} ${result.digest ?? ''}`,
          `Path     ${result.path}: ${how}`,
          `Python   ${result.python ? 'included' : 'not included'}`,
          `Took     ${result.seconds.toFixed(1)} s`,
          ...result.notes.map((note) => `Note     ${note}`),
        ].join('\n'),
      );
    });
}
