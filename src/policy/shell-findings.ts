/** What the command policy could not name in a line, by kind (each described beside its consequence below). */
export const UNKNOWABLE_KINDS = [
  /** The parser cannot read the line (syntax error, too deep, parser not loaded). */
  'unparsable',
  /** The program's name is computed: a substitution, variable, glob, brace or tilde expansion in command position. */
  'computed-name',
  /** Code the line does not show runs: `eval`, `source`, `trap`, a shell or interpreter fed code. */
  'runs-code',
  /** A program that starts another program named in its arguments: `timeout`, `xargs`, `find -exec`, `exec`, `sudo` … */
  'wrapper',
  /** A multi-call binary (`busybox`, `toybox`) whose first argument picks the program. */
  'multi-call',
  /** Something that changes which program a name runs: `alias`, functions, `PATH=`, `hash -p`, `enable` … */
  'changes-lookup',
  /** A program run by a path outside the system's program directories: a file whose content the line does not show. */
  'file-by-path',
  /** An action of a program on files the command line does not name (`find -delete`). */
  'unseen-effect',
  /** The shells the line may run under (bash, busybox ash, dash) read its words as different commands (`$'rm' x`). */
  'shell-dependent',
] as const;

export type UnknowableKind = (typeof UNKNOWABLE_KINDS)[number];

/**
 * What each kind means for the person deciding, in words they can act on: the detail ("arithmetic
 * names `PATH`…") tells how the analysis knows, this tells what could happen. Clauses finish
 * "This command could run any program: …".
 */
export const UNKNOWABLE_CONSEQUENCES: Readonly<Record<UnknowableKind, string>> = {
  unparsable: 'Executor cannot read the line, so it cannot name what it runs',
  'computed-name': 'the name of a program it runs is worked out only as it runs',
  'runs-code': 'it runs code that is not shown here',
  wrapper: 'it starts programs named in its arguments',
  'multi-call': 'one program in it stands for many others, picked by its first argument',
  'changes-lookup': 'it can change which program a name runs, so its commands may not run the programs they name',
  'file-by-path': 'it runs a file from disk whose content is not shown here',
  'unseen-effect': 'it deletes or writes files the line does not name',
  'shell-dependent': 'different shells would run it as different commands',
};

/**
 * Kinds that send a step to the person whatever the policy's lists: the analysis cannot say what
 * the line runs at all, or the answer depends on which shell the image has.
 */
export const ALWAYS_ASK_KINDS: ReadonlySet<UnknowableKind> = new Set(['unparsable', 'shell-dependent']);

export interface Unknowable {
  kind: UnknowableKind;
  /** How the analysis knows, in its terms: the detail after the consequence. */
  reason: string;
}
