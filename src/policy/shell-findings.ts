/** What the command policy could not name in a line, by kind, with the reason in words. */
export type UnknowableKind =
  /** The parser cannot read the line (syntax error, too deep, parser not loaded). */
  | 'unparsable'
  /** The program's name is computed: a substitution, variable, glob, brace or tilde expansion in command position. */
  | 'computed-name'
  /** Code the line does not show runs: `eval`, `source`, `trap`, a shell or interpreter fed code. */
  | 'runs-code'
  /** A program that starts another program named in its arguments: `timeout`, `xargs`, `find -exec`, `exec`, `sudo` … */
  | 'wrapper'
  /** A multi-call binary (`busybox`, `toybox`) whose first argument picks the program. */
  | 'multi-call'
  /** Something that changes which program a name runs: `alias`, functions, `PATH=`, `hash -p`, `enable` … */
  | 'changes-lookup'
  /** A program run by a path outside the system's program directories: a file whose content the line does not show. */
  | 'file-by-path'
  /** An action of a program on files the command line does not name (`find -delete`). */
  | 'unseen-effect'
  /** The shells the line may run under (bash, busybox ash, dash) read its words as different commands (`$'rm' x`). */
  | 'shell-dependent';

/**
 * Kinds that send a step to the person whatever the policy's lists: the analysis cannot say what
 * the line runs at all, or the answer depends on which shell the image has.
 */
export const ALWAYS_ASK_KINDS: ReadonlySet<UnknowableKind> = new Set(['unparsable', 'shell-dependent']);

export interface Unknowable {
  kind: UnknowableKind;
  /** Finishes the sentence "could run any program: …". */
  reason: string;
}
