import { Command } from 'commander';
import { ExecutorError, toErrorShape } from '../domain/errors.js';
import { visibleJson, visibleLine } from '../domain/visible-text.js';
import { wordsForStates } from '../domain/status-words.js';
import { registerAuditCommands } from './commands/audit.js';
import { registerKeyCommands } from './commands/keys.js';
import { registerMcpCommands } from './commands/mcp.js';
import { registerConnectCommands } from './commands/connect.js';
import { registerModelCommands } from './commands/model.js';
import { registerPauseCommands } from './commands/pause.js';
import { registerSkillCommands } from './commands/skills.js';
import { registerSandboxCommands } from './commands/sandbox.js';
import { registerRunCommands } from './commands/runs.js';
import { registerServeCommands } from './commands/serve.js';
import { registerStepCommands } from './commands/steps.js';
import { registerSessionCommands } from './commands/sessions.js';
import { registerWatchCommands } from './commands/watch.js';
import { registerWhereCommands } from './commands/where.js';
import { registerWitnessCommands } from './commands/witness.js';
import { setPrivateUmask } from '../fs/file-modes.js';
import { defaultDataDir } from '../store/data-dir.js';
import { databaseCorruption } from '../store/storage-errors.js';
import path from 'node:path';

// Also when main.ts is run without bin/executor.js (tsx src/cli/main.ts): files Executor creates are private.
setPrivateUmask();

const program = new Command()
  .name('executor')
  .description('Stands between AI agents and your machine: every step is risk-rated, previewed, consented, backed up and audited.')
  .option('--data-dir <dir>', 'data directory (default: EXECUTOR_DATA_DIR or the OS app-data folder)')
  .option('--json', 'machine-readable output')
  .showHelpAfterError();

// One registration per command group; a new group is one line here and its own file in commands/.
registerStepCommands(program);
registerAuditCommands(program);
registerKeyCommands(program);
registerSandboxCommands(program);
registerServeCommands(program);
registerMcpCommands(program);
registerModelCommands(program);
registerWhereCommands(program);
registerWitnessCommands(program);
registerRunCommands(program);
registerPauseCommands(program);
registerSkillCommands(program);
registerConnectCommands(program);
registerWatchCommands(program);
registerSessionCommands(program);

// A reader that stops early (`executor runs show RUN | head`) closes the pipe: that ends the command
// quietly, as it ends `cat`, instead of an unhandled EPIPE with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // A damaged database met anywhere (a read, verify, an export) names its file and what to do.
  const dataDir = path.resolve(program.opts<{ dataDir?: string }>().dataDir ?? defaultDataDir());
  const shaped = toErrorShape(databaseCorruption(error, dataDir));
  const json = process.argv.includes('--json');
  // An error message can quote a step's path or an agent's words: escaped like everything else printed.
  if (json) process.stdout.write(`${visibleJson(JSON.stringify({ error: shaped }, null, 2))}\n`);
  // Raw state names in a message ("is awaiting_consent") in the words `steps list` uses; --json keeps the message as sent.
  else process.stderr.write(`executor: ${visibleLine(shaped.code)}: ${visibleLine(wordsForStates(shaped.message))}\n`);
  if (!(error instanceof ExecutorError) && process.env.EXECUTOR_DEBUG) console.error(error);
  process.exitCode = 2;
}
