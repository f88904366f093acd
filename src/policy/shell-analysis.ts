import type { Node } from 'web-tree-sitter';
import { INTERPRETER, LOOKUP_VARIABLE, MULTI_CALL, RESERVED_WORDS, RUNNER_SUBCOMMANDS, SELF_DESCRIBING, SHELLS, SYSTEM_PROGRAM_DIRS, WRAPPERS, sedRunsCommands, type WrapperSpec } from './program-kinds.js';
import { parseShell } from './shell-parser.js';

/**
 * Which programs a command line can start, read from a real bash parse tree (src/policy/shell-parser.ts).
 * The walk visits the whole tree: lists, pipelines, subshells, groups, if/while/until/for/case,
 * functions, `!`, redirections, here-strings and here-documents, and command and process
 * substitutions wherever they stand (arguments, assignments, redirect targets, expanded here-doc
 * bodies, parameter expansions). It never runs or expands anything.
 *
 * It fails closed: whatever could make the line start a program it cannot name for certain is
 * reported in `unknowable`, in words, and the line then counts as "could run any program". The
 * programs it can still name (a wrapper's inner program, the code of `sh -c '…'`) are reported too,
 * so a deny list can refuse them outright.
 */

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
  | 'unseen-effect';

export interface Unknowable {
  kind: UnknowableKind;
  /** Finishes the sentence "could run any program: …". */
  reason: string;
}

export interface ShellAnalysis {
  /** Every program named for certain, as written (`rm`, `/bin/rm`, `./build.sh`), in the order met. */
  programs: string[];
  /**
   * The words of each simple command, cut before the first word that is not a plain literal (a rule
   * prefix can then never match past a word whose value is unknown).
   */
  commands: string[][];
  /** Why the line could run a program not in `programs`; empty when every program is named. */
  unknowable: Unknowable[];
}

/** Deeper trees are refused rather than walked: the walk is recursive. */
const MAX_TREE_DEPTH = 200;
/** How many times code inside a string (`sh -c '…'`, `eval`, backquotes) is parsed again, nested. */
const MAX_CODE_DEPTH = 8;

function baseName(program: string): string {
  const slash = program.lastIndexOf('/');
  return slash >= 0 ? program.slice(slash + 1) : program;
}

function quoted(text: string): string {
  const short = text.length > 80 ? `${text.slice(0, 77)}…` : text;
  return `\`${short.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)}\``;
}

/** A word's value when it is a plain literal (quotes and escapes removed), else what makes it not one. */
type WordValue = { value: string } | { value: null; why: string };

/** Per character: its value and whether it was quoted (a quoted `*` is no glob). */
interface Piece {
  text: string;
  quoted: boolean;
}

function decodeAnsiC(body: string): string | null {
  const simple: Record<string, string> = { a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\', "'": "'", '"': '"', '?': '?' };
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const next = body[i + 1];
    if (next === undefined) return null;
    if (simple[next] !== undefined) {
      out += simple[next];
      i++;
      continue;
    }
    let match: RegExpExecArray | null;
    if ((match = /^[0-7]{1,3}/.exec(body.slice(i + 1)))) {
      out += String.fromCharCode(parseInt(match[0], 8) & 0xff);
      i += match[0].length;
    } else if ((match = /^x([0-9a-fA-F]{1,2})/.exec(body.slice(i + 1)))) {
      out += String.fromCharCode(parseInt(match[1]!, 16));
      i += match[0].length;
    } else if ((match = /^(u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8})/.exec(body.slice(i + 1)))) {
      const code = parseInt(match[0].slice(1), 16);
      if (code > 0x10ffff) return null;
      out += String.fromCodePoint(code);
      i += match[0].length;
    } else if (next === 'c' && body[i + 2] !== undefined) {
      out += String.fromCharCode(body.charCodeAt(i + 2) & 0x1f);
      i += 2;
    } else {
      // bash keeps an unknown escape as it is written
      out += `\\${next}`;
      i++;
    }
  }
  return out;
}

/** The pieces of one word node, or why it is not a plain literal. */
function piecesOf(node: Node, pieces: Piece[]): string | null {
  switch (node.type) {
    case 'word':
    case 'number': {
      if (node.namedChildCount > 0) return 'an expansion';
      const text = node.text;
      for (let i = 0; i < text.length; i++) {
        if (text[i] === '\\') {
          if (text[i + 1] === '\n') i++;
          else if (i + 1 < text.length) pieces.push({ text: text[++i]!, quoted: true });
        } else pieces.push({ text: text[i]!, quoted: false });
      }
      return null;
    }
    case 'raw_string':
      pieces.push({ text: node.text.slice(1, -1), quoted: true });
      return null;
    case 'ansi_c_string': {
      const decoded = decodeAnsiC(node.text.slice(2, -1));
      if (decoded === null) return 'an ANSI-C quoted string it cannot decode';
      pieces.push({ text: decoded, quoted: true });
      return null;
    }
    case 'string': {
      for (const child of node.namedChildren) if (child && child.type !== 'string_content') return describeExpansion(child);
      const body = node.text.slice(1, -1);
      pieces.push({ text: body.replace(/\\([$`"\\\n])/g, (_m, c: string) => (c === '\n' ? '' : c)), quoted: true });
      return null;
    }
    case 'concatenation':
      for (const child of node.namedChildren) {
        if (!child) continue;
        const why = piecesOf(child, pieces);
        if (why) return why;
      }
      return null;
    default:
      return describeExpansion(node);
  }
}

function describeExpansion(node: Node): string {
  switch (node.type) {
    case 'simple_expansion':
    case 'expansion':
      return 'a variable expansion';
    case 'command_substitution':
      return 'a command substitution';
    case 'process_substitution':
      return 'a process substitution';
    case 'arithmetic_expansion':
      return 'an arithmetic expansion';
    case 'brace_expression':
      return 'a brace expansion';
    case 'extglob_pattern':
      return 'a glob pattern';
    case 'translated_string':
      return 'a $"…" string, which the locale may translate';
    default:
      return `a ${node.type.replace(/_/g, ' ')}`;
  }
}

/** A word node's literal value, or what keeps it from having one (expansions, unquoted globs, braces, a tilde). */
export function wordValue(node: Node): WordValue {
  const pieces: Piece[] = [];
  const why = piecesOf(node, pieces);
  if (why) return { value: null, why };
  // Only unquoted characters are pattern syntax: mask the quoted ones before looking.
  const active = pieces.map((piece) => (piece.quoted ? '_'.repeat(piece.text.length) : piece.text)).join('');
  if (/[*?]/.test(active) || /\[.*\]/s.test(active) || /[@!+]\(/.test(active)) return { value: null, why: 'a glob pattern' };
  if (/\{[^}]*(,|\.\.)[^}]*\}/s.test(active)) return { value: null, why: 'a brace expansion' };
  if (active.startsWith('~')) return { value: null, why: 'a tilde expansion' };
  return { value: pieces.map((piece) => piece.text).join('') };
}

/** POSIX: inside backquotes a backslash quotes only `$`, `` ` `` and `\`; the rest is parsed again as code. */
function unescapeBackquoted(text: string): string {
  return text.replace(/\\([$`\\])/g, '$1');
}

/** The first argument that is not an option, after options that take a value. */
function skipOptions(args: readonly (string | null)[], valueOptions: readonly string[] = []): number {
  let i = 0;
  while (i < args.length) {
    const word = args[i];
    if (word === null || word === undefined) return i;
    if (word === '--') return i + 1;
    if (!word.startsWith('-') || word === '-') return i;
    if (valueOptions.includes(word)) i += 2;
    else i += 1;
  }
  return i;
}

class Walk {
  readonly programs: string[] = [];
  readonly commands: string[][] = [];
  readonly unknowable: Unknowable[] = [];
  private readonly seen = new Set<string>();
  /** Per code level: where the substitutions the walk read stand in the text. */
  private readonly substitutionRanges: [number, number][][] = [];

  flag(kind: UnknowableKind, reason: string): void {
    const key = `${kind}\u0000${reason}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.unknowable.push({ kind, reason });
  }

  /** Analyses shell code given as text (`sh -c`, `eval`, backquotes): parsed again, one level deeper. */
  code(text: string, codeDepth: number): void {
    if (codeDepth > MAX_CODE_DEPTH) {
      this.flag('unparsable', `shell code is nested more than ${MAX_CODE_DEPTH} levels deep inside strings`);
      return;
    }
    const parsed = parseShell(text);
    if (!parsed.ok) {
      this.flag('unparsable', parsed.reason);
      return;
    }
    try {
      const root = parsed.tree.rootNode;
      if (root.hasError) {
        this.flag('unparsable', `the shell parser cannot read ${quoted(text)} (a syntax error, or a construct it does not know)`);
        return;
      }
      this.checkLineJoins(text, root);
      this.substitutionRanges.push([]);
      this.node(root, 0, codeDepth);
      this.checkSubstitutionsRead(text, root, this.substitutionRanges.pop()!);
    } finally {
      parsed.tree.delete();
    }
  }

  /**
   * Every `$(`, `<(`, `>(` and backquote of the text that the shell would run must lie in a
   * substitution the walk read. The grammar skips some (backquotes inside `${…}`): those are refused.
   */
  private checkSubstitutionsRead(text: string, root: Node, ranges: readonly [number, number][]): void {
    const opener = /\$\(|[<>]\(|`/g;
    for (let match = opener.exec(text); match; match = opener.exec(text)) {
      const at = match.index;
      let backslashes = 0;
      while (text[at - 1 - backslashes] === '\\') backslashes++;
      if (backslashes % 2 === 1) continue;
      if (ranges.some(([start, end]) => at >= start && at < end)) continue;
      if (this.inLiteralText(root, at, match[0] === '`')) continue;
      if (match[0] !== '`' && match[0] !== '$(' && !this.processSubstitutionPossible(root, at)) continue;
      this.flag('unparsable', `the parser did not read ${quoted(text.slice(at, at + 20))} as a substitution, though the shell would run it`);
      return;
    }
  }

  private inLiteralText(root: Node, at: number, backquote: boolean): boolean {
    for (let inside: Node | null = root.descendantForIndex(at, at + 1); inside; inside = inside.parent) {
      if (['raw_string', 'ansi_c_string', 'comment'].includes(inside.type)) return true;
      if (inside.type === 'heredoc_body') {
        const start = inside.parent?.children.find((child) => child?.type === 'heredoc_start');
        // A quoted here-document is text; an unquoted one's backquotes were read by backquotesIn.
        return !start || /['"\\]/.test(start.text) || backquote;
      }
    }
    return false;
  }

  /** `<(`/`>(` is no process substitution inside double quotes, here-documents, arithmetic or `[[ ]]`. */
  private processSubstitutionPossible(root: Node, at: number): boolean {
    for (let inside: Node | null = root.descendantForIndex(at, at + 1); inside; inside = inside.parent) {
      if (['string', 'heredoc_body', 'arithmetic_expansion', 'test_command'].includes(inside.type)) return false;
    }
    return true;
  }

  /**
   * A backslash-newline inside a word joins its two halves in the shell (`r\⏎m` is `rm`), but the
   * grammar splits the word there. Between words it is plain layout; inside quotes and comments it
   * is text. Anywhere else it is refused.
   */
  private checkLineJoins(text: string, root: Node): void {
    for (let at = text.indexOf('\\\n'); at >= 0; at = text.indexOf('\\\n', at + 2)) {
      const before = text[at - 1];
      const after = text[at + 2];
      if (before === undefined || after === undefined || /\s/.test(before) || /\s/.test(after)) continue;
      let inside: Node | null = root.descendantForIndex(at, at + 1);
      let literal = false;
      while (inside) {
        if (['raw_string', 'string', 'ansi_c_string', 'heredoc_body', 'comment'].includes(inside.type)) {
          literal = true;
          break;
        }
        inside = inside.parent;
      }
      if (!literal) this.flag('unparsable', 'a backslash-newline joins the halves of a word, which the parser reads as two words');
    }
  }

  node(node: Node, depth: number, codeDepth: number): void {
    if (depth > MAX_TREE_DEPTH) {
      this.flag('unparsable', `the command is nested more than ${MAX_TREE_DEPTH} levels deep`);
      return;
    }
    switch (node.type) {
      case 'comment':
      case 'heredoc_start':
      case 'heredoc_end':
        return;
      case 'command':
        this.command(node, depth, codeDepth);
        return;
      case 'declaration_command':
      case 'unset_command':
        this.declaration(node, depth, codeDepth);
        return;
      case 'variable_assignment':
        this.assignment(node);
        break;
      case 'function_definition': {
        const name = node.childForFieldName('name')?.text ?? '';
        this.flag('changes-lookup', `it defines a shell function ${quoted(name)}, so that name no longer says which program runs`);
        break;
      }
      case 'heredoc_body': {
        // The grammar reads `$(…)` in an expanded here-document but skips backquotes; find those here.
        const start = node.parent?.children.find((child) => child?.type === 'heredoc_start');
        if (start && !/['"\\]/.test(start.text)) this.backquotesIn(node.text, codeDepth);
        break;
      }
      case 'process_substitution':
      case 'arithmetic_expansion':
        this.substitutionRanges.at(-1)?.push([node.startIndex, node.endIndex]);
        break;
      case 'command_substitution':
        this.substitutionRanges.at(-1)?.push([node.startIndex, node.endIndex]);
        if (node.text.startsWith('`')) {
          // Backquotes are parsed again after their own unescaping; the grammar's children miss
          // nested backquotes (`` `echo \`rm x\`` ``).
          this.code(unescapeBackquoted(node.text.slice(1, -1)), codeDepth + 1);
          return;
        }
        break;
    }
    for (const child of node.namedChildren) if (child) this.node(child, depth + 1, codeDepth);
  }

  private backquotesIn(text: string, codeDepth: number): void {
    for (let i = 0; i < text.length; i++) {
      if (text[i] === '\\') i++;
      else if (text[i] === '`') {
        let end = i + 1;
        while (end < text.length && text[end] !== '`') end += text[end] === '\\' ? 2 : 1;
        if (end >= text.length) {
          this.flag('unparsable', 'a here-document opens a backquote that never closes');
          return;
        }
        this.code(unescapeBackquoted(text.slice(i + 1, end)), codeDepth + 1);
        i = end;
      }
    }
  }

  private assignment(node: Node): void {
    const name = node.childForFieldName('name');
    const variable = name?.type === 'subscript' ? name.childForFieldName('name')?.text : name?.text;
    if (variable) this.variable(variable);
  }

  variable(name: string): void {
    if (LOOKUP_VARIABLE.test(name)) this.flag('changes-lookup', `it sets ${quoted(name)}, which changes which program a name runs or makes programs run other code`);
  }

  private declaration(node: Node, depth: number, codeDepth: number): void {
    const keyword = node.child(0)?.text ?? '';
    const words: (string | null)[] = [keyword];
    for (const child of node.namedChildren) {
      if (!child) continue;
      if (child.type === 'word' || child.type === 'raw_string' || child.type === 'string' || child.type === 'concatenation') {
        const value = wordValue(child).value;
        words.push(value);
        if (value !== null && /^-[a-zA-Z]*n/.test(value)) this.flag('changes-lookup', `\`${keyword} -n\` makes a name refer to another variable, which could be PATH`);
        if (value !== null && /^[A-Za-z_][A-Za-z0-9_]*$/.test(value) && keyword === 'unset') this.variable(value);
      } else if (child.type === 'variable_name') {
        words.push(child.text);
        if (keyword === 'unset') this.variable(child.text);
      } else if (child.type === 'variable_assignment') {
        words.push(wordValue(child).value ?? (child.text.includes('$') || child.text.includes('`') ? null : child.text));
      }
      this.node(child, depth + 1, codeDepth);
    }
    this.programs.push(keyword);
    this.commands.push(literalPrefix(words));
  }

  private command(node: Node, depth: number, codeDepth: number): void {
    let program: string | null | undefined;
    let reservedAsName = false;
    const args: (string | null)[] = [];
    for (let i = 0; i < node.childCount; i++) {
      const child = node.child(i);
      if (!child?.isNamed) continue;
      const field = node.fieldNameForChild(i);
      if (field === 'name') {
        const word = child.namedChildCount === 1 ? child.namedChild(0)! : child;
        if (word.type === 'word' && RESERVED_WORDS.has(word.text)) {
          this.flag('unparsable', `the parser read the reserved word ${quoted(word.text)} as a program`);
          reservedAsName = true;
        }
        const value = wordValue(word);
        if (value.value === null) this.flag('computed-name', `the program's name ${quoted(child.text)} is computed from ${value.why}`);
        program = value.value;
      } else if (field === 'argument') {
        args.push(wordValue(child).value);
      }
      this.node(child, depth + 1, codeDepth);
    }
    if (program === undefined) return;
    this.simpleCommand([program, ...args], codeDepth, 0);
    // What follows the misread word is most likely the command the shell runs: still name it.
    if (reservedAsName && args.length > 0) this.simpleCommand(args, codeDepth, 1);
  }

  /**
   * One simple command, its words known or not (null): records its program and, by what the program
   * is, what else it could start. `wrapDepth` counts wrappers around it (`sudo timeout 5 rm`).
   */
  simpleCommand(argv: readonly (string | null)[], codeDepth: number, wrapDepth: number): void {
    if (wrapDepth === 0) this.commands.push(literalPrefix(argv));
    const program = argv[0];
    if (program === null || program === undefined) {
      if (wrapDepth > 0) this.flag('computed-name', 'a program it starts has a name computed from an expansion');
      return;
    }
    if (wrapDepth > MAX_CODE_DEPTH) {
      this.flag('unparsable', 'wrappers are nested too deeply to follow');
      return;
    }
    const args = argv.slice(1);
    // `time ! rm x`: a negation inside a wrapper's words is no program; the command after it is.
    if (program === '!' && wrapDepth > 0) return this.simpleCommand(args, codeDepth, wrapDepth + 1);
    this.programs.push(program);
    const base = baseName(program);
    if (program.includes('/')) {
      const dir = program.slice(0, program.lastIndexOf('/')) || '/';
      const clean = !program.split('/').some((part) => part === '..' || part === '.');
      if (!clean || !SYSTEM_PROGRAM_DIRS.has(dir.replace(/\/+/g, '/'))) {
        this.flag('file-by-path', `it runs ${quoted(program)}, a file chosen by its path, whose content the command line does not show`);
      }
    }
    if (SHELLS.has(base)) return this.shell(base, args, codeDepth);
    if (INTERPRETER.test(base)) {
      if (args.length > 0 && args.every((arg) => arg !== null && SELF_DESCRIBING.has(arg))) return;
      this.flag('runs-code', `${quoted(base)} runs code that the command line does not show`);
      return;
    }
    if (MULTI_CALL.has(base)) {
      const start = skipOptions(args);
      this.flag('multi-call', `${quoted(base)} is a multi-call program: its first argument picks the program it runs`);
      if (start < args.length) this.simpleCommand(args.slice(start), codeDepth, wrapDepth + 1);
      return;
    }
    switch (base) {
      case 'eval':
        this.flag('runs-code', '`eval` runs its arguments as shell code');
        if (args.every((arg) => arg !== null)) this.code(args.join(' '), codeDepth + 1);
        return;
      case 'source':
      case '.':
        this.flag('runs-code', `${quoted(base)} runs the shell code in ${args[0] ? quoted(args[0]) : 'a file'}`);
        return;
      case 'trap': {
        const action = args[0];
        if (args.length === 0 || action === '-l' || action === '-p' || action === '-' || action === '') return;
        this.flag('runs-code', '`trap` stores shell code to run later');
        const code = action === '--' ? args[1] : action;
        if (typeof code === 'string') this.code(code, codeDepth + 1);
        return;
      }
      case 'fc':
        if (!args.includes('-l')) this.flag('runs-code', '`fc` runs commands again from the history');
        return;
      case 'compgen':
      case 'complete':
      case 'mapfile':
      case 'readarray':
        if (args.some((arg) => arg === null || /^-[a-zA-Z]*[CF]/.test(arg))) this.flag('runs-code', `${quoted(base)} -C/-F runs a command or function it is given`);
        this.assignsNames(base, args);
        return;
      case 'read':
      case 'getopts':
      case 'printf':
        this.assignsNames(base, args);
        return;
      case 'alias':
        if (args.some((arg) => arg === null || arg.includes('='))) this.flag('changes-lookup', '`alias` makes a name run other code');
        return;
      case 'hash':
        if (args.some((arg) => arg === null || /^-[a-zA-Z]*p/.test(arg))) this.flag('changes-lookup', '`hash -p` makes a name run another file');
        return;
      case 'enable':
        if (args.length > 0) this.flag('changes-lookup', '`enable` loads or switches off builtins, which changes which program a name runs');
        return;
      case 'command':
        if (args.some((arg) => arg === '-v' || arg === '-V')) return;
        break;
      case 'find':
        this.find(args, codeDepth, wrapDepth);
        return;
      case 'git':
        this.git(args);
        return;
      case 'tar':
      case 'bsdtar':
        if (args.some((arg) => arg === null || /^(--to-command|--use-compress-program|--checkpoint-action|--info-script|--new-volume-script|--rsh-command|-I|-F)/.test(arg) || /^-[a-zA-Z]*[IF]/.test(arg)))
          this.flag('runs-code', '`tar` is given a command to run (--to-command, -I, --checkpoint-action …)');
        return;
      case 'rsync':
        if (args.some((arg) => arg === null || /^(-e|--rsh|--rsync-path)/.test(arg) || /^-[a-zA-Z]*e/.test(arg))) this.flag('runs-code', '`rsync -e/--rsh` runs a command it is given');
        return;
      case 'zip':
        if (args.some((arg) => arg === null || /^(-TT|--unzip-command)/.test(arg))) this.flag('runs-code', '`zip -TT` runs a command it is given');
        return;
      case 'make':
      case 'gmake':
        if (args.some((arg) => arg === null || /^[A-Za-z_][A-Za-z0-9_]*\+?:?=/.test(arg) || arg === '--eval' || arg.startsWith('--eval='))) {
          this.flag('runs-code', '`make` is given variables or code on its command line (SHELL=, --eval), which can run any program');
        }
        return;
      case 'sed':
      case 'gsed':
        this.sed(args);
        return;
    }
    const runner = RUNNER_SUBCOMMANDS[base];
    if (runner && (runner.length === 0 || (args[0] !== undefined && (args[0] === null || runner.includes(args[0]))))) {
      this.flag('wrapper', `${quoted(`${base}${runner.length ? ` ${args[0] ?? ''}` : ''}`)} runs a program given in its arguments`);
      const start = runner.length ? 1 + skipOptions(args.slice(1)) : skipOptions(args);
      if (start < args.length) this.simpleCommand(args.slice(start), codeDepth, wrapDepth + 1);
      return;
    }
    const wrapper = WRAPPERS[base];
    if (wrapper) this.wrapper(base, wrapper, args, codeDepth, wrapDepth);
  }

  private assignsNames(base: string, args: readonly (string | null)[]): void {
    for (let i = 0; i < args.length; i++) {
      const arg = args[i];
      if (arg === null || arg === undefined) continue;
      if (base === 'printf' && arg === '-v' && typeof args[i + 1] === 'string') this.variable(args[i + 1]!);
      else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(arg) && base !== 'printf') this.variable(arg);
    }
  }

  private shell(base: string, args: readonly (string | null)[], codeDepth: number): void {
    let dashC = false;
    let script: string | null | undefined;
    let i = 0;
    for (; i < args.length; i++) {
      const word = args[i];
      if (word === null || word === undefined) {
        script = null;
        break;
      }
      if (word === '--' || word === '-') {
        i++;
        break;
      }
      if (/^[-+][oO]$/.test(word) || word === '--rcfile' || word === '--init-file') {
        i++;
        continue;
      }
      if (/^-[a-zA-Z]*c/.test(word)) dashC = true;
      if (!/^[-+]/.test(word)) break;
    }
    if (script === undefined) script = args[i];
    if (args.length > 0 && args.every((arg) => arg !== null && SELF_DESCRIBING.has(arg))) return;
    if (dashC) {
      this.flag('runs-code', `it feeds code to ${quoted(`${base} -c`)}`);
      if (typeof script === 'string') this.code(script, codeDepth + 1);
    } else if (typeof script === 'string') {
      this.flag('runs-code', `${quoted(base)} runs the script ${quoted(script)}, whose content the command line does not show`);
    } else {
      this.flag('runs-code', `${quoted(base)} runs code from its input (a pipe, a here-document, a here-string or a file)`);
    }
  }

  private wrapper(base: string, spec: WrapperSpec, args: readonly (string | null)[], codeDepth: number, wrapDepth: number): void {
    let i = 0;
    let leading = spec.leadingWords ?? 0;
    let code: string | null | undefined;
    while (i < args.length) {
      const word = args[i];
      if (word === null || word === undefined) break;
      if (word === '--') {
        i++;
        break;
      }
      const [option, attached] = word.startsWith('--') && word.includes('=') ? [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)] : [word, undefined];
      if (spec.codeOptions?.includes(option)) {
        code = attached ?? args[i + 1];
        i += attached === undefined ? 2 : 1;
        continue;
      }
      if (spec.codeOptions?.some((short) => short.length === 2 && word.startsWith(short) && word.length > 2 && !word.startsWith('--'))) {
        code = word.slice(2);
        i++;
        continue;
      }
      if (word.startsWith('-') && word !== '-') {
        i += spec.valueOptions?.includes(option) && attached === undefined ? 2 : 1;
        continue;
      }
      if (base === 'env' && /^[A-Za-z_][A-Za-z0-9_]*=/.test(word)) {
        this.variable(word.slice(0, word.indexOf('=')));
        i++;
        continue;
      }
      if (base === 'nice' && /^-?\d+$/.test(word)) {
        i++;
        continue;
      }
      if (leading > 0) {
        leading--;
        i++;
        continue;
      }
      break;
    }
    const inner = args.slice(i);
    if (code !== undefined) {
      this.flag('runs-code', `it feeds code to ${quoted(base)}`);
      if (typeof code === 'string') this.code(code, codeDepth + 1);
    }
    if (inner.length === 0) {
      // `exec >log` only redirects; `env` alone prints; `command`/`builtin` alone do nothing.
      if (code === undefined && !['exec', 'env', 'command', 'builtin', 'time'].includes(base)) this.flag('wrapper', `${quoted(base)} runs a program it is given`);
      return;
    }
    if (spec.joinsIntoCode) {
      this.flag('runs-code', `${quoted(base)} runs its arguments as shell code`);
      if (inner.every((word) => word !== null)) this.code(inner.join(' '), codeDepth + 1);
      return;
    }
    const innerName = inner[0];
    this.flag('wrapper', `${quoted(base)} starts ${innerName ? `the program ${quoted(innerName)}` : 'a program'} given in its arguments`);
    this.simpleCommand(inner, codeDepth, wrapDepth + 1);
  }

  private find(args: readonly (string | null)[], codeDepth: number, wrapDepth: number): void {
    for (let i = 0; i < args.length; i++) {
      const word = args[i];
      if (word === null || word === undefined) continue;
      if (['-exec', '-execdir', '-ok', '-okdir'].includes(word)) {
        let end = i + 1;
        while (end < args.length && args[end] !== ';' && args[end] !== '+') end++;
        const inner = args.slice(i + 1, end);
        this.flag('wrapper', `\`find ${word}\` runs ${inner[0] ? quoted(inner[0]) : 'a program'} on each file it finds`);
        if (inner.length > 0) this.simpleCommand(inner, codeDepth, wrapDepth + 1);
        i = end;
      } else if (word === '-delete') {
        this.flag('unseen-effect', '`find -delete` deletes every file it finds, which the command line does not name');
      } else if (/^-f?(print|printf|ls|fprint0)$/.test(word) && word.startsWith('-f')) {
        this.flag('unseen-effect', `\`find ${word}\` writes to a file`);
      }
    }
  }

  private git(args: readonly (string | null)[]): void {
    const say = (why: string) => this.flag('runs-code', `\`git\` ${why}`);
    let i = 0;
    while (i < args.length) {
      const word = args[i];
      if (word === null || word === undefined) return say('is given a word the policy cannot read, which could be an option that runs a command');
      if (word === '-c' || word.startsWith('--config-env') || word.startsWith('-c')) return say('is given configuration on its command line (-c), which can make it run any program');
      if (word === '--exec-path' || word.startsWith('--exec-path=')) return say('is told where its own programs are (--exec-path)');
      if (['-C', '--git-dir', '--work-tree', '--namespace'].includes(word)) i += 2;
      else if (word.startsWith('-')) i++;
      else break;
    }
    const sub = args[i];
    const rest = args.slice(i + 1);
    if (sub === 'submodule' && rest.includes('foreach')) return say('`submodule foreach` runs a command in each submodule');
    if (sub === 'bisect' && rest[0] === 'run') return say('`bisect run` runs a command');
    if (sub === 'rebase' && rest.some((arg) => arg === null || arg === '-x' || arg.startsWith('--exec') || /^-[a-zA-Z]*x/.test(arg))) return say('`rebase --exec` runs a command');
    if (sub === 'filter-branch' || sub === 'filter-repo') return say(`\`${sub}\` runs commands it is given`);
    if (sub === 'difftool' && rest.some((arg) => arg === null || arg === '-x' || arg.startsWith('--extcmd'))) return say('`difftool -x` runs a command');
    if (sub === 'config' && !rest.some((arg) => arg !== null && /^(--get|--get-all|--get-regexp|-l|--list|--get-urlmatch|get|list)$/.test(arg))) {
      return say('`config` can set aliases, hooks or helpers that run commands later');
    }
  }

  /** GNU sed runs commands with `e` and the `s///e` flag; sed scripts from files are unseen. */
  private sed(args: readonly (string | null)[]): void {
    const scripts: (string | null)[] = [];
    let explicit = false;
    for (let i = 0; i < args.length; i++) {
      const word = args[i];
      if (word === null || word === undefined) {
        scripts.push(null);
        continue;
      }
      if (word === '-e' || word === '--expression') {
        explicit = true;
        scripts.push(args[i + 1] ?? null);
        i++;
      } else if (word.startsWith('--expression=')) {
        explicit = true;
        scripts.push(word.slice('--expression='.length));
      } else if (word === '-f' || word.startsWith('--file') || /^-[a-zA-Z]*f/.test(word)) {
        this.flag('runs-code', '`sed -f` runs a script from a file, which could use its `e` command');
        return;
      } else if (!word.startsWith('-') && !explicit && scripts.length === 0) {
        scripts.push(word);
      }
    }
    if (scripts.some((script) => script === null || sedRunsCommands(script))) this.flag('runs-code', '`sed` is given a script that can run commands (its `e` command or `s///e`)');
  }
}

function literalPrefix(words: readonly (string | null)[]): string[] {
  const literal: string[] = [];
  for (const word of words) {
    if (word === null) break;
    literal.push(word);
  }
  return literal;
}

/** Everything the analysis can say about a command line run by a shell (`sh -c line`). */
export function analyseCommandLine(text: string): ShellAnalysis {
  const walk = new Walk();
  walk.code(text, 0);
  return { programs: walk.programs, commands: walk.commands, unknowable: walk.unknowable };
}

/** The same for an argv run directly (no shell): argv[0] is the program, wrappers and interpreters in it are followed. */
export function analyseArgv(argv: readonly string[]): ShellAnalysis {
  const walk = new Walk();
  walk.simpleCommand(argv, 0, 0);
  return { programs: walk.programs, commands: walk.commands, unknowable: walk.unknowable };
}

/** Variables a step sets for its command (runCommand's `env`) get the same check as `NAME=value` on the line. */
export function analyseEnvironment(names: readonly string[]): Unknowable[] {
  const walk = new Walk();
  for (const name of names) walk.variable(name);
  return walk.unknowable;
}
