import type { Command } from 'commander';
import { ExecutorError } from '../../domain/errors.js';
import type { EngineAccess } from '../../sandbox/docker/docker-client.js';
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
    .description(
      'engine reachability and version, the sandbox image and what it holds, a test command run in a real container, leftover containers removed',
    )
    .option('--root <dir>', "also say which image this workspace root's commands run in (policy, dev container, Dockerfile or default)")
    .action(async (options: { root?: string }, command: Command) => {
      const { json, dataDir } = globals(command);
      const { connectDocker, engineStatus, imageInfo, sandboxImageTag, sweepLeftoverContainers, sweepTempAreas } = await dockerModules();
      const { probeSandbox } = await import('../../sandbox/docker/sandbox-probe.js');
      const connected = connectOrRefusal(connectDocker);
      if ('refused' in connected) {
        // The address or its certificates are wrong, or the engine would be reached without verified TLS: nothing is asked of it.
        const { refused } = connected;
        print(
          json,
          { engine: { reachable: false, error: refused.message, errorCode: refused.code, ...refused.details }, ready: false },
          () => [`Engine   REFUSED (${refused.code}): ${refused.message}`, 'Ready    no'].join('\n'),
        );
        process.exitCode = 1;
        return;
      }
      const client = connected.client;
      const engine = await engineStatus(client);
      const image = engine.reachable ? await imageInfo(client, sandboxImageTag()) : { tag: sandboxImageTag(), present: false };
      const sweptContainers = engine.reachable ? await sweepLeftoverContainers(client) : [];
      sweepTempAreas();
      // Ready only once a container really started and ran a command: an image present but dead (exit 126) is not ready.
      const probe = engine.reachable && image.present && image.digest ? await probeSandbox(client, image.digest) : null;
      const root = options.root ? await rootImageStatus(options.root, dataDir) : undefined;
      const status = {
        engine,
        image,
        ...(root ? { root } : {}),
        sweptContainers: sweptContainers.length,
        probe,
        ready: probe?.ran === true,
      };
      print(json, status, () =>
        [
          engine.reachable
            ? `Engine   reachable at ${engine.endpoint}: ${engine.engine?.label ?? `Docker ${engine.version}`} (API ${engine.apiVersion}, ${engine.os})`
            : `Engine   NOT reachable at ${engine.endpoint}${engine.errorCode ? ` (${engine.errorCode})` : ''}: ${engine.error}${engine.errorCode === 'ENGINE_TLS_FAILED' ? '' : ' Start Docker or set DOCKER_HOST.'}`,
          ...(engine.access ? accessLines(engine.access) : []),
          // An engine not reached says nothing about its images.
          ...(engine.reachable
            ? [
                image.present
                  ? `Image    ${image.tag} ${image.digest} (${Math.round((image.sizeBytes ?? 0) / 1e6)} MB, built by ${image.builtBy ?? 'unknown'})`
                  : `Image    ${image.tag} is missing: run \`executor sandbox image build\`.`,
              ]
            : []),
          ...(probe
            ? [
                probe.ran
                  ? `Run      a test command ran in a sandbox container (sh and node answered, ${(probe.durationMs / 1000).toFixed(1)} s)`
                  : `Run      FAILED: ${probe.problem}`,
              ]
            : []),
          ...('tools' in image && image.tools ? [`Holds    ${image.tools}`] : []),
          ...(root
            ? [
                `Root     ${root.root}: ${root.source.kind === 'default' ? 'the default image' : `${root.source.image ?? root.source.build?.dockerfile} (${root.source.from})`}${root.source.user ? `, as user ${root.source.user}` : ''}`,
                ...root.source.notes.map((note) => `Note     ${note}`),
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
      const { resolveId } = await import('../id-prefix.js');
      const record = await withExecutor(dataDir, async (api) => api.executeStep({ stepId: await resolveId(api, 'step', stepId) }));
      print(json, outcomeOf(record), () => [summaryLine(record), explainOutcome(record)].filter(Boolean).join('\n'));
      process.exitCode = record.status === 'executed' ? 0 : 1;
    });

  const image = sandbox.command('image').description('the sandbox image');
  image
    .command('build')
    .description('build the sandbox image for this version (skipped when it exists); offline from this machine by default')
    .option('--dockerfile', 'build from build/sandbox/Dockerfile instead (needs a registry to pull the base image)')
    .option('--force', 'rebuild even if the image exists')
    .option(
      '--root <dir>',
      "build this workspace root's own image (its devcontainer.json or the Dockerfile the policy names), with progress; you running it is the consent to its RUN lines",
    )
    .action(async (options: { dockerfile?: boolean; force?: boolean; root?: string }, command: Command) => {
      const { json, dataDir } = globals(command);
      const { buildSandboxImage, connectDocker } = await dockerModules();
      if (options.root) {
        const built = await buildRootImage(options.root, dataDir, json);
        print(json, built, () =>
          [
            `${built.tag} ${built.digest}`,
            `From     ${built.source.kind} (${built.source.from})`,
            `User     ${built.user.name ?? 'none named'}: runs as ${built.user.uid}:${built.user.gid}`,
            `Built    ${built.built ? `now, in ${built.seconds.toFixed(1)} s` : 'already, by the same content digest; nothing to do'}`,
            ...built.notes.map((note) => `Note     ${note}`),
          ].join('\n'),
        );
        return;
      }
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

/** connectDocker's typed refusal (bad address, missing certificates, TCP without verified TLS) as a value for the status to print. */
function connectOrRefusal<C>(connect: () => C): { client: C } | { refused: ExecutorError } {
  try {
    return { client: connect() };
  } catch (error) {
    if (error instanceof ExecutorError) return { refused: error };
    throw error;
  }
}

/** How the engine is reached and trusted, and where the workspace goes: a remote engine without verified TLS is said loudly. */
function accessLines(access: EngineAccess): string[] {
  const how = {
    'local-socket': `a socket on this machine (${access.transport})`,
    'tls-verified': `TCP with TLS verified: the engine's certificate checked against ${access.certDir}/ca.pem, this client's cert.pem presented`,
    ssh: 'SSH, host key checked against known_hosts, engine reached with `docker system dial-stdio`',
    insecure: 'WITHOUT VERIFIED TLS',
  }[access.security];
  return [
    `Access   ${how}`,
    `Files    ${
      access.workspace === 'bind-mount'
        ? 'the scratch copy is bind-mounted'
        : access.engineMachine
          ? `the scratch copy travels as archives: the socket leads to an engine on "${access.engineMachine}", not this machine`
          : 'the scratch copy travels to the engine and back as archives (remote engine)'
    }`,
    ...(access.warning ? [`WARNING  ${access.warning}`] : []),
  ];
}

/** The policy of the data directory (its workspace roots and sandbox settings), and the root named as its real path. */
async function policyAndRoot(rootArgument: string, dataDir: string) {
  const [{ default: fs }, { default: path }, { loadPolicy }] = await Promise.all([
    import('node:fs'),
    import('node:path'),
    import('../../policy/policy-file.js'),
  ]);
  const root = fs.realpathSync.native(path.resolve(rootArgument));
  return { policy: loadPolicy(dataDir), root };
}

async function rootImageStatus(rootArgument: string, dataDir: string) {
  const { imageSourceFor } = await import('../../sandbox/docker/project-image.js');
  const { policy, root } = await policyAndRoot(rootArgument, dataDir);
  return { root, source: imageSourceFor(root, policy) };
}

/** Builds a root's own image with its progress on stderr as it comes (JSON output stays one object on stdout). */
async function buildRootImage(rootArgument: string, dataDir: string, json: boolean) {
  const [{ ensureProjectImage }, { connectDocker }] = await Promise.all([
    import('../../sandbox/docker/project-image.js'),
    import('../../sandbox/docker/docker-client.js'),
  ]);
  const { policy, root } = await policyAndRoot(rootArgument, dataDir);
  const started = performance.now();
  const built = await ensureProjectImage(connectDocker(), root, policy, {
    codeBuildConsented: true,
    onProgress: (line) => process.stderr.write(`${json ? '' : 'build    '}${line}\n`),
  });
  return { ...built, buildLog: undefined, seconds: (performance.now() - started) / 1000 };
}
