import type { Node } from 'web-tree-sitter';
import { mayRunOtherPrograms, runsOtherPrograms, type RunnerFinding } from '../domain/program-runners.js';
import { LOOKUP_VARIABLE, NUMERIC_SHELL_VARIABLE, RESERVED_WORDS, SHELL_WRITTEN_VARIABLE } from './program-kinds.js';
import { parseShell } from './shell-parser.js';
import { DIALECTS, agreedValue, ansiCEnd, unescapeBackquoted, wordReadings, type WordReadings } from './shell-words.js';
import type { Unknowable, UnknowableKind } from './shell-findings.js';
import { baseName, programWords, quoted } from './program-readers.js';

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
 *
 * Besides its own reading of shells, wrappers and a few programs' options, every command is also
 * checked against the rule-prefix table (src/domain/program-runners.ts): a program that table says
 * can run another one (`linux32`, `run-parts`, `nc -e`, `git clone`) is never taken for one that
 * runs only itself.
 */

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
  /**
   * Every file a redirection writes to (`>`, `>>`, `>|`, `&>`, `>&file`, `{fd}>`), as written; null
   * when its name is computed. A remembered rule never covers a line that writes anything but /dev/null.
   */
  redirectWrites: (string | null)[];
}

/** Deeper trees are refused rather than walked: the walk is recursive. */
const MAX_TREE_DEPTH = 200;
/** How many times code inside a string (`sh -c '…'`, `eval`, backquotes) is parsed again, nested. */
const MAX_CODE_DEPTH = 8;

/** `[[ a -eq b ]]` reads both sides as arithmetic. */
const ARITHMETIC_TESTS = new Set(['-eq', '-ne', '-lt', '-le', '-gt', '-ge']);

/** Redirection operators that open a file for writing (`>&` only when its target is no file descriptor). */
const WRITING_REDIRECTS = new Set(['>', '>>', '>|', '&>', '&>>', '<>', '>&']);

class Walk {
  readonly programs: string[] = [];
  readonly commands: string[][] = [];
  readonly unknowable: Unknowable[] = [];
  readonly redirectWrites: (string | null)[] = [];
  private readonly seen = new Set<string>();
  /** How many times flag() was called, repeats included: tells a command that raised nothing. */
  private flagCalls = 0;
  /** Variables read by arithmetic, and how the line writes variables: see finish(). */
  private readonly arithmeticReads = new Set<string>();
  private readonly numericWrites = new Set<string>();
  readonly textWrites = new Set<string>();
  /** Per code level: where the substitutions the walk read stand in the text. */
  private readonly substitutionRanges: [number, number][][] = [];

  flag(kind: UnknowableKind, reason: string): void {
    this.flagCalls++;
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
    if (text.includes('\0')) {
      // No shell can be handed a NUL: the program that receives the line ends it there, or refuses it.
      // Both what stands before it and the line without it are read, so a denied program is still named.
      this.flag('unparsable', 'the command line holds a NUL character, which ends the line for the program that receives it');
      this.code(text.slice(0, text.indexOf('\0')), codeDepth);
      this.code(text.replace(/\0/g, ''), codeDepth);
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
      this.checkDescriptorsRead(root);
      this.checkWordBreaks(text, root);
      this.checkEscapedBlanks(text, root);
      this.checkAnsiCStrings(text, root);
      this.fdVariables(text);
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
      this.flag(
        'unparsable',
        `the parser did not read ${quoted(text.slice(at, at + 20))} as a substitution, though the shell would run it`,
      );
      return;
    }
  }

  /**
   * Whether `at` starts a node of `type`, or lies in text where it means nothing: quotes, a comment,
   * a here-document's body (bash expands only `$name`, `$(…)` and backquotes there).
   */
  private insideText(node: Node | null, type: string, at: number): boolean {
    for (let inside = node; inside; inside = inside.parent) {
      if (inside.type === type && inside.startIndex === at) return true;
      if (['command_substitution', 'process_substitution'].includes(inside.type)) return false;
      if (['raw_string', 'string', 'ansi_c_string', 'comment', 'translated_string', 'heredoc_body'].includes(inside.type)) return true;
    }
    return false;
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
   * The parser takes a vertical tab, a form feed and a carriage return for blanks between words; the
   * shells take them for characters of a word (`rm\rx` runs the program `rm\rx`). Outside quotes
   * the two readings differ, so the line is refused.
   */
  private checkWordBreaks(text: string, root: Node): void {
    const breaker = /[\v\f\r]/g;
    for (let match = breaker.exec(text); match; match = breaker.exec(text)) {
      let inside: Node | null = root.descendantForIndex(match.index, match.index + 1);
      while (inside && !['raw_string', 'string', 'ansi_c_string'].includes(inside.type)) inside = inside.parent;
      if (inside) continue;
      this.flag(
        'unparsable',
        `the line holds ${quoted(match[0])} outside quotes, which the parser reads as a space between words but the shell reads as part of a word`,
      );
      return;
    }
  }

  /**
   * A backslash before a space or tab makes it a character of a word (`\ x` runs the program ` x`),
   * but the grammar drops both where a word starts. Each must lie inside a node the walk reads.
   */
  private checkEscapedBlanks(text: string, root: Node): void {
    const escaped = /\\[ \t]/g;
    for (let match = escaped.exec(text); match; match = escaped.exec(text)) {
      let backslashes = 0;
      while (text[match.index - 1 - backslashes] === '\\') backslashes++;
      if (backslashes % 2 === 1) continue;
      const inside = root.descendantForIndex(match.index, match.index + 2);
      if (inside && LITERAL_NODES.has(inside.type) && inside.startIndex <= match.index && inside.endIndex >= match.index + 2) continue;
      this.flag(
        'unparsable',
        `the parser drops the escaped blank in ${quoted(text.slice(match.index, match.index + 20))}, which the shell keeps in a word`,
      );
      return;
    }
  }

  /**
   * `$'…'` strings: the grammar ends one at the wrong quote after an escaped backslash (it reads
   * `$'\\'; rm x; #'` as one string, while bash and ash run `rm x`), and dash, which has no `$'…'`,
   * ends the string at an escaped quote: the line then has other commands in another shell.
   */
  private checkAnsiCStrings(text: string, root: Node): void {
    // Every `$'` and `$"` the shell reads as the start of one must be one to the parser too.
    const opener = /\$['"]/g;
    for (let match = opener.exec(text); match; match = opener.exec(text)) {
      const at = match.index;
      let backslashes = 0;
      while (text[at - 1 - backslashes] === '\\') backslashes++;
      if (backslashes % 2 === 1) continue;
      const inside = root.descendantForIndex(at, at + 2);
      if (this.insideText(inside, match[0] === "$'" ? 'ansi_c_string' : 'translated_string', at)) continue;
      this.flag(
        'unparsable',
        `the parser does not read ${quoted(text.slice(at, at + 20))} as the ${match[0]}…${match[0][1]} string the shell reads there`,
      );
      return;
    }
    for (const node of root.descendantsOfType('ansi_c_string')) {
      if (!node) continue;
      if (ansiCEnd(text, node.startIndex) !== node.endIndex) {
        this.flag('unparsable', `the parser reads the string ${quoted(node.text)} to a different end than the shell does`);
      } else if (node.text.slice(2, -1).includes("'")) {
        this.flag(
          'shell-dependent',
          `dash has no $'…' strings and ends ${quoted(node.text)} at its escaped quote, so it reads the rest of the line as other commands`,
        );
      }
    }
  }

  /**
   * Digits written right before a redirection are its file descriptor to the shell (`0<payload sh`
   * runs `sh` with payload as its input), but the grammar sometimes reads them as a word of their own:
   * the program `0`, or an argument. Such a line is refused.
   */
  private checkDescriptorsRead(root: Node): void {
    for (const redirect of root.descendantsOfType(['file_redirect', 'heredoc_redirect', 'herestring_redirect'])) {
      // `&>` takes no descriptor: a digit before it is a word to the shells too.
      if (!redirect || redirect.childForFieldName('descriptor') || redirect.text.startsWith('&')) continue;
      const before = redirect.startIndex > 0 ? root.descendantForIndex(redirect.startIndex - 1, redirect.startIndex) : null;
      if (!before || before.endIndex !== redirect.startIndex || !/^\d+$/.test(before.text)) continue;
      this.flag(
        'unparsable',
        `the parser reads the file descriptor ${quoted(before.text)} of ${quoted(before.text + redirect.text.slice(0, 20))} as a word, where the shell reads it as part of the redirection`,
      );
      return;
    }
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
      case 'for_statement': {
        // `for PATH in .` and `select PATH in .` write the loop variable.
        const variable = node.childForFieldName('variable');
        if (variable) this.writes(variable.text, 'text');
        break;
      }
      case 'c_style_for_statement':
        for (let i = 0; i < node.childCount; i++) {
          const field = node.fieldNameForChild(i);
          if (field === 'initializer' || field === 'condition' || field === 'update')
            this.arithmetic(node.child(i)!.text, 'a `for ((…))` loop');
        }
        break;
      case 'compound_statement':
        if (node.text.startsWith('((')) {
          this.arithmetic(node.text.slice(2, -2), 'a `((…))` command');
          this.arithmeticCommand(node.text.slice(2, -2), codeDepth);
        }
        break;
      case 'subscript': {
        const index = node.childForFieldName('index');
        if (index && index.text !== '@' && index.text !== '*') this.arithmetic(index.text, 'an array subscript');
        break;
      }
      case 'expansion':
        this.expansion(node);
        break;
      case 'binary_expression':
      case 'unary_expression':
        if (this.insideTest(node)) this.testExpression(node);
        break;
      case 'file_redirect':
        this.redirect(node);
        break;
      case 'redirected_statement': {
        // Words after a redirection belong to the command before it; after `{ …; }` or `( … )` there is none.
        let body = node.childForFieldName('body');
        while (body && STATEMENTS_ENDING_IN_A_COMMAND.has(body.type)) body = body.lastNamedChild;
        if (body?.type !== 'command' && node.namedChildren.some((child) => child !== null && redirectionHoldsWords(child)))
          this.flag('unparsable', `the parser gives words after a redirection in ${quoted(node.text.slice(0, 60))} to no command`);
        break;
      }
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
      case 'concatenation': {
        // The parts of a word must cover it: the grammar drops some characters (`r$""m` loses its `$`).
        let covered = node.startIndex;
        for (const child of node.children) {
          if (!child) continue;
          if (child.startIndex !== covered) {
            this.flag('unparsable', `the parser drops part of the word ${quoted(node.text)}`);
            break;
          }
          covered = child.endIndex;
        }
        if (covered !== node.endIndex) this.flag('unparsable', `the parser drops part of the word ${quoted(node.text)}`);
        break;
      }
      case 'translated_string':
        this.flag(
          'shell-dependent',
          `bash translates ${quoted(node.text)} with a message catalog the line or the image can choose (TEXTDOMAINDIR), and busybox ash and dash read it as \`$\` and a string`,
        );
        break;
      case 'process_substitution':
        this.substitutionRanges.at(-1)?.push([node.startIndex, node.endIndex]);
        break;
      case 'arithmetic_expansion':
        this.substitutionRanges.at(-1)?.push([node.startIndex, node.endIndex]);
        this.arithmetic(node.text.startsWith('$((') ? node.text.slice(3, -2) : node.text.slice(2, -1), 'an arithmetic expansion');
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
    if (!variable) return;
    const value = node.childForFieldName('value');
    const appends = node.children.some((child) => child?.type === '+=');
    // Inside `for ((i = n; …))` the assignment is arithmetic: it stores a number.
    const numeric =
      node.parent?.type === 'c_style_for_statement' || (!appends && (value?.type === 'number' || value?.type === 'arithmetic_expansion'));
    this.writes(variable, numeric ? 'numeric' : 'text');
  }

  variable(name: string): void {
    if (LOOKUP_VARIABLE.test(name))
      this.flag('changes-lookup', `it sets ${quoted(name)}, which changes which program a name runs or makes programs run other code`);
  }

  /** The line writes a variable: a number (arithmetic, a literal integer) or text it chooses. */
  writes(name: string, what: 'numeric' | 'text'): void {
    this.variable(name);
    (what === 'numeric' ? this.numericWrites : this.textWrites).add(name);
  }

  /**
   * Text the shell evaluates as arithmetic. Arithmetic can assign (`PATH=0`, `PATH+=1`), and it
   * evaluates a variable's text as an expression in turn (`x='PATH=0'; : $((x))` sets PATH), so
   * every name it reads is remembered for finish(), and text spliced in by a substitution is refused.
   */
  arithmetic(text: string, where: string): void {
    let rest = text.replace(/\$\{#[A-Za-z_][A-Za-z0-9_]*\}|\$[#?$!]/g, ' 0 ');
    rest = rest.replace(
      /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
      (_m, braced: string | undefined, plain: string | undefined) => ` ${braced ?? plain} `,
    );
    if (/[$`]/.test(rest)) {
      this.flag(
        'changes-lookup',
        `${where} takes part of its text from an expansion or substitution, and arithmetic can assign any variable, PATH included`,
      );
    }
    const token = /\d+#[0-9A-Za-z@_]+|0[xX][0-9A-Fa-f]+|\d+|([A-Za-z_][A-Za-z0-9_]*)/g;
    for (let match = token.exec(rest); match; match = token.exec(rest)) {
      const name = match[1];
      if (name === undefined) continue;
      if (LOOKUP_VARIABLE.test(name))
        this.flag(
          'changes-lookup',
          `${where} names ${quoted(name)}, and arithmetic can assign it (\`${name}=…\`), which changes which program a name runs`,
        );
      this.arithmeticReads.add(name);
      // An assignment operator after the name, or ++/-- around it, stores a number.
      const after = rest.slice(match.index + name.length);
      const before = rest.slice(0, match.index);
      if (/^\s*(\[[^\]]*\]\s*)?([-+*\/%&|^]|<<|>>)?=(?!=)/.test(after) || /^\s*(\+\+|--)/.test(after) || /(\+\+|--)\s*$/.test(before))
        this.numericWrites.add(name);
    }
  }

  /** `${…}`: the forms that write a variable, evaluate arithmetic or run code. */
  private expansion(node: Node): void {
    const text = node.text;
    const match = /^\$\{([!#]?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])?(\[[^\]]*\])?(.*)\}$/s.exec(text);
    if (!match) {
      this.flag('unparsable', `the analysis cannot read the expansion ${quoted(text)}`);
      return;
    }
    const [, prefix, name = '', subscript, operation = ''] = match;
    if (prefix === '!' && !(subscript === '[@]' || subscript === '[*]') && !/^[@*]$/.test(operation)) {
      this.flag(
        'changes-lookup',
        `the indirect expansion ${quoted(text)} reads a variable named by another's value, which can evaluate an array subscript that assigns any variable, PATH included`,
      );
    }
    if (/^@P/.test(operation))
      this.flag(
        'runs-code',
        `the prompt expansion ${quoted(text)} runs the command substitutions in the variable's value, which the command line does not show`,
      );
    if (prefix === '' && /^:?=/.test(operation) && /^[A-Za-z_]/.test(name)) this.writes(name, 'text');
    // `${x:offset:length}` evaluates offset and length as arithmetic.
    if (prefix === '' && /^:[^-=?+]/.test(operation)) this.arithmetic(operation.slice(1), 'a substring expansion');
  }

  private insideTest(node: Node): boolean {
    for (let inside = node.parent; inside; inside = inside.parent) {
      if (inside.type === 'test_command') return true;
      if (inside.type === 'command' || inside.type === 'program') return false;
    }
    return false;
  }

  /** `[[ a -eq b ]]` evaluates both sides as arithmetic; `[[ -v a[i] ]]` evaluates the subscript. */
  private testExpression(node: Node): void {
    const operator = node.childForFieldName('operator')?.text;
    if (node.type === 'binary_expression' && operator !== undefined && ARITHMETIC_TESTS.has(operator)) {
      for (const side of [node.childForFieldName('left'), node.childForFieldName('right')])
        if (side) this.arithmetic(side.text.replace(/["']/g, ''), `the \`[[ … ${operator} … ]]\` test`);
    }
    // dash has no `[[`: it runs `[[` as a program and reads `>` as a redirection that writes the right side.
    if (node.type === 'binary_expression' && operator === '>') {
      const right = node.childForFieldName('right');
      if (right)
        for (const target of new Set(DIALECTS.map((dialect) => wordReadings(right)[dialect].value))) this.redirectWrites.push(target);
    }
    if (node.type === 'unary_expression' && operator === '-v') {
      const operand = node.namedChildren.find((child) => child && child.type !== 'test_operator');
      if (operand) {
        const readings = wordReadings(operand);
        for (const dialect of DIALECTS) this.nameArgument(readings[dialect].value, '`[[ -v … ]]`');
      }
    }
  }

  /**
   * A word given where a variable name goes (`read NAME`, `printf -v NAME`, `[ -v NAME ]`): a
   * write to it when the builtin writes (`write`), a subscript is arithmetic, an unreadable word
   * could be either.
   */
  nameArgument(word: string | null, where: string, write?: 'numeric' | 'text'): void {
    if (word === null) {
      this.flag('changes-lookup', `${where} is given a variable name the analysis cannot read, which could be PATH`);
      return;
    }
    const match = /^([A-Za-z_][A-Za-z0-9_]*)(?:\[(.*)\])?$/s.exec(word);
    if (!match) return;
    if (write) this.writes(match[1]!, write);
    if (match[2] !== undefined && match[2] !== '@' && match[2] !== '*') this.arithmetic(match[2], `the subscript of ${quoted(word)}`);
  }

  private redirect(node: Node): void {
    const operator = node.children.find((child) => child && !child.isNamed)?.type ?? '';
    const destination = node.childForFieldName('destination');
    if (!WRITING_REDIRECTS.has(operator) || !destination) return;
    // Every shell's reading of the target is a file the line may write.
    const readings = wordReadings(destination);
    for (const target of new Set(DIALECTS.map((dialect) => readings[dialect].value))) {
      // `>&2` and `>&-` duplicate or close a descriptor; `>&name` writes the file `name`.
      if (operator === '>&' && target !== null && /^(\d+-?|-)$/.test(target)) continue;
      this.redirectWrites.push(target);
    }
  }

  /**
   * `((…))` is arithmetic to bash only: busybox ash (the default image's shell) and dash read it as two
   * nested subshells and run what stands inside as commands (`((sh<payload))` runs `sh` on a file,
   * `((curl|sh))` a pipeline). The inside is read as code too, so a denied program is named, and the
   * line always goes to the person.
   */
  private arithmeticCommand(inside: string, codeDepth: number): void {
    this.flag(
      'shell-dependent',
      `bash reads ${quoted(`((${inside}))`)} as arithmetic, but busybox ash and dash run what stands inside it as commands in a subshell`,
    );
    this.code(inside, codeDepth + 1);
  }

  /** `exec {NAME}>file` stores a file descriptor's number in NAME (bash): a write to NAME. */
  private fdVariables(text: string): void {
    for (const match of text.matchAll(/\{([A-Za-z_][A-Za-z0-9_]*)\}(?=[<>])/g)) this.writes(match[1]!, 'numeric');
  }

  /**
   * After the walk: arithmetic that reads a variable the line fills with text of its choosing (or the
   * step's env, or one the shell fills from the line, like `$_` or REPLY) evaluates that text as an
   * expression, which can assign PATH. Variables the line never writes hold the sandbox's own values.
   */
  finish(): void {
    for (const name of this.arithmeticReads) {
      const text = this.textWrites.has(name) || SHELL_WRITTEN_VARIABLE.test(name);
      if (!text || NUMERIC_SHELL_VARIABLE.test(name)) continue;
      this.flag(
        'changes-lookup',
        `arithmetic reads ${quoted(name)}, which holds text the command chooses, and evaluates that text as an expression, which can assign PATH`,
      );
    }
  }

  /**
   * `export`, `declare`, `typeset`, `local`, `readonly`, `unset`: each word names a variable, and
   * quoting does not change that (`export 'PATH=.'`). A word the analysis cannot read could name
   * any variable (`export $x=.`), so it counts as a write to PATH. Each shell's reading counts.
   */
  private declaration(node: Node, depth: number, codeDepth: number): void {
    const keyword = node.child(0)?.text ?? '';
    const where = `\`${keyword}\``;
    const words: (string | null)[] = [keyword];
    for (const group of shellWords(node.namedChildren.filter((child): child is Node => child !== null))) {
      const [first] = group;
      if (group.length === 1 && first!.type === 'variable_assignment') {
        // The walk of the child records the write (assignment()).
        words.push(agreedValue(wordReadings(first!)).value);
      } else if (group.length === 1 && first!.type === 'variable_name') {
        words.push(first!.text);
        // `local PATH` empties PATH inside a function, `unset PATH` removes it.
        this.variable(first!.text);
      } else {
        const readings = wordReadings(...group);
        words.push(agreedValue(readings).value);
        for (const dialect of DIALECTS) {
          const value = readings[dialect].value;
          if (value === null) {
            this.flag('changes-lookup', `${where} is given a word the analysis cannot read, which could name PATH (\`export $x=.\`)`);
          } else if (/^[-+][a-zA-Z]+$/.test(value)) {
            if (value.includes('n'))
              this.flag('changes-lookup', `\`${keyword} ${value}\` makes a name refer to another variable, which could be PATH`);
            if (value.includes('i') && keyword !== 'unset')
              this.flag(
                'changes-lookup',
                `\`${keyword} ${value}\` makes every later assignment to the variable arithmetic, which can assign PATH`,
              );
          } else {
            this.declaredWord(value);
          }
        }
      }
      for (const child of group) this.node(child, depth + 1, codeDepth);
    }
    this.programs.push(keyword);
    this.commands.push(literalPrefix(words));
  }

  /** One literal word of a declaration: `NAME`, `NAME=value`, `NAME+=value`, `NAME[i]=value`. */
  private declaredWord(word: string): void {
    const match = /^([A-Za-z_][A-Za-z0-9_]*)(?:\[([^\]]*)\])?(\+?=)?/s.exec(word);
    if (!match) return;
    const [whole, name, subscript, operator] = match;
    if (operator) this.writes(name!, operator === '=' && /^-?\d+$/.test(word.slice(whole.length)) ? 'numeric' : 'text');
    else this.variable(name!);
    if (subscript !== undefined && subscript !== '@' && subscript !== '*') this.arithmetic(subscript, `the subscript of ${quoted(word)}`);
  }

  private command(node: Node, depth: number, codeDepth: number): void {
    let name: WordReadings | undefined;
    let reservedAsName = false;
    const args: WordReadings[] = [];
    // dash has no `&>`: it reads `cmd a &>file b` as `cmd a &` and then `>file b`, which runs `b`.
    let backgroundedAt: string | undefined;
    const afterBackground: WordReadings[] = [];
    this.checkWordsApart(node);
    for (let i = 0; i < node.childCount; i++) {
      const child = node.child(i);
      if (!child?.isNamed) continue;
      const field = node.fieldNameForChild(i);
      if (child.type === 'file_redirect' && !backgroundedAt) {
        const operator = child.children.find((part) => part && !part.isNamed)?.type ?? '';
        if (operator === '&>' || operator === '&>>') backgroundedAt = operator;
      } else if (backgroundedAt && field === 'argument') afterBackground.push(wordReadings(child));
      if (field === 'name') {
        const word = child.namedChildCount === 1 ? child.namedChild(0)! : child;
        if (word.type === 'word' && RESERVED_WORDS.has(word.text)) {
          this.flag('unparsable', `the parser read the reserved word ${quoted(word.text)} as a program`);
          reservedAsName = true;
        }
        name = wordReadings(word);
        for (const dialect of DIALECTS) {
          const reading = name[dialect];
          if (reading.value === null)
            this.flag('computed-name', `the program's name ${quoted(child.text)} is computed from ${reading.why}`);
        }
      } else if (field === 'argument') {
        args.push(wordReadings(child));
      }
      this.node(child, depth + 1, codeDepth);
    }
    if (name === undefined) return;
    // The grammar hands the words after a redirection to the redirection (`env >/dev/null rm x`: its
    // extra "destinations"); the shells give them to the command, as arguments.
    for (const trailing of trailingWords(node)) {
      if (trailing.type === 'file_redirect' || trailing.type === 'heredoc_redirect') {
        const operator = trailing.children.find((part) => part && !part.isNamed)?.type ?? '';
        if (!backgroundedAt && (operator === '&>' || operator === '&>>')) backgroundedAt = operator;
        continue;
      }
      const reading = wordReadings(trailing);
      args.push(reading);
      if (backgroundedAt) afterBackground.push(reading);
    }
    const byDialect = DIALECTS.map((dialect) => [name[dialect].value, ...args.map((arg) => arg[dialect].value)]);
    this.readings(byDialect, node.text, codeDepth);
    if (backgroundedAt && afterBackground.length > 0) {
      this.flag(
        'shell-dependent',
        `dash has no ${quoted(backgroundedAt)}: it runs the command before \`&\` in the background and then ${quoted(afterBackground.map((arg) => arg.dash.value ?? '…').join(' '))} as a command of its own`,
      );
      this.readings([afterBackground.map((arg) => arg.dash.value)], node.text, codeDepth, ['dash']);
    }
    // What follows the misread word is most likely the command the shell runs: still name it.
    if (reservedAsName && args.length > 0) for (const argv of byDialect) this.simpleCommand(argv.slice(1), codeDepth, 1);
  }

  /**
   * The grammar sometimes splits what the shell reads as one word (`export PA$'\0'TH=.` is the word
   * `PATH=.` to bash); between the words of a command there must be a blank, or the line is refused.
   */
  private checkWordsApart(node: Node): void {
    // A bare `$` token among a command's words is the grammar losing a piece of a word (`\$'\0'\$""r`
    // gives the words `\$'\0'`, `$` and `""r`, where bash runs one program, `$\0$r`).
    if (node.children.some((child) => child !== null && !child.isNamed && child.type === '$')) {
      this.flag('unparsable', `the parser drops a \`$\` from the words of ${quoted(node.text.slice(0, 60))}`);
      return;
    }
    const words = node.namedChildren.filter((child): child is Node => child !== null && WORD_NODES.has(child.type));
    for (let i = 1; i < words.length; i++) {
      if (words[i]!.startIndex !== words[i - 1]!.endIndex) continue;
      this.flag('unparsable', `the parser reads ${quoted(words[i - 1]!.text + words[i]!.text)} as two words, where the shell reads one`);
      return;
    }
  }

  /**
   * One simple command as each shell reads its words (bash, busybox ash, dash, in that order). When
   * they agree it is read once. When they do not, every reading is walked, so a program any of them
   * would start is named (and denied if the policy denies it), the words a rule may match stop at the
   * first word they disagree on, and if the readings start different programs the line is
   * shell-dependent: it always goes to the person.
   */
  readings(
    byDialect: readonly (readonly (string | null)[])[],
    shown: string,
    codeDepth: number,
    labels: readonly string[] = DIALECT_NAMES,
  ): void {
    const keys = byDialect.map((argv) => JSON.stringify(argv));
    const distinct = byDialect.filter((_argv, index) => keys.indexOf(keys[index]!) === index);
    this.commands.push(commonLiteralPrefix(distinct));
    if (distinct.length === 1) {
      this.simpleCommand(distinct[0]!, codeDepth, 0);
      return;
    }
    const started = distinct.map((argv) => {
      const from = this.programs.length;
      this.simpleCommand(argv, codeDepth, 0);
      return [...new Set(this.programs.slice(from))];
    });
    const sets = started.map((programs) => [...programs].sort().join('\u0000'));
    if (new Set(sets).size === 1) return;
    const said = byDialect.map((_argv, index) => {
      const programs = started[distinct.indexOf(byDialect.find((_a, i) => keys[i] === keys[index])!)]!;
      return `${labels[index]} starts ${programs.length > 0 ? programs.map(quoted).join(', ') : 'no program it can name'}`;
    });
    this.flag('shell-dependent', `the shells read ${quoted(shown)} as different commands (${said.join('; ')})`);
  }

  /**
   * One simple command, its words known or not (null): records its program and, by what the program
   * is, what else it could start. `wrapDepth` counts wrappers around it (`sudo timeout 5 rm`).
   */
  simpleCommand(argv: readonly (string | null)[], codeDepth: number, wrapDepth: number): void {
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
    const flagsBefore = this.flagCalls;
    const reading = programWords(this, program, args, codeDepth, wrapDepth);
    // Whatever the analysis's own reading missed, the rule-prefix table may know: a command it says
    // can run another program is never taken for one that runs only itself.
    if (reading !== 'read' && this.flagCalls === flagsBefore) {
      const finding = runnerFinding(program, args);
      if (finding) this.flag(finding.word === program ? 'wrapper' : 'runs-code', finding.why);
    }
  }
}

/** The rule-prefix table's reason why this command could run another program; unreadable words count as the worst. */
function runnerFinding(program: string, args: readonly (string | null)[]): RunnerFinding | null {
  if (args.every((arg) => arg !== null)) return runsOtherPrograms([program, ...(args as string[])]);
  const always = runsOtherPrograms([program]);
  if (always) return always;
  if (!mayRunOtherPrograms(program)) return null;
  return {
    word: '…',
    why: `\`${baseName(program)}\` is given a word the analysis cannot read, which could be one that makes it run another program`,
  };
}

/**
 * What follows a command inside its redirected_statement, in order: each redirection, and the words
 * the grammar put inside one that are the command's arguments to the shells (a file redirect's
 * destinations after the first, a here-document redirect's `argument` words).
 */
function trailingWords(command: Node): Node[] {
  const statement = redirectedStatementOf(command);
  if (!statement) return [];
  const found: Node[] = [];
  for (const redirect of statement.namedChildren) {
    if (!redirect || redirect.id === command.id) continue;
    if (redirect.type !== 'file_redirect' && redirect.type !== 'heredoc_redirect') continue;
    found.push(redirect);
    let destinations = 0;
    for (let i = 0; i < redirect.childCount; i++) {
      const child = redirect.child(i);
      const field = redirect.fieldNameForChild(i);
      if (!child) continue;
      if (field === 'destination' && ++destinations > 1) found.push(child);
      else if (field === 'argument') found.push(child);
    }
  }
  return found;
}

/**
 * The redirected_statement whose redirections belong to this command: the grammar hangs them on a whole
 * pipeline, list or `!` (`ls | env >/dev/null rm x`), while the shell gives them to its last command.
 */
function redirectedStatementOf(command: Node): Node | null {
  let inner = command;
  let statement = command.parent;
  while (statement && STATEMENTS_ENDING_IN_A_COMMAND.has(statement.type) && statement.lastNamedChild?.id === inner.id) {
    inner = statement;
    statement = statement.parent;
  }
  if (!statement || statement.type !== 'redirected_statement' || statement.childForFieldName('body')?.id !== inner.id) return null;
  return statement;
}

const STATEMENTS_ENDING_IN_A_COMMAND = new Set(['pipeline', 'list', 'negated_command']);

/** Whether the grammar filed words under a redirection (more than one destination, or arguments). */
function redirectionHoldsWords(redirect: Node): boolean {
  let destinations = 0;
  for (let i = 0; i < redirect.childCount; i++) {
    const field = redirect.fieldNameForChild(i);
    if ((field === 'destination' && ++destinations > 1) || field === 'argument') return true;
  }
  return false;
}

/** Nodes whose text the walk reads as characters of a word, a string or a comment. */
const LITERAL_NODES = new Set([
  'word',
  'string',
  'string_content',
  'raw_string',
  'ansi_c_string',
  'comment',
  'heredoc_body',
  'heredoc_content',
  'number',
  'regex',
  'extglob_pattern',
]);

/** Node types that are (part of) one shell word. */
const WORD_NODES = new Set([
  'command_name',
  'word',
  'number',
  'concatenation',
  'string',
  'raw_string',
  'ansi_c_string',
  'translated_string',
  'simple_expansion',
  'expansion',
  'command_substitution',
  'arithmetic_expansion',
  'variable_name',
  'variable_assignment',
]);

const DIALECT_NAMES: readonly string[] = DIALECTS.map((dialect) => ({ bash: 'bash', ash: 'busybox ash', dash: 'dash' })[dialect]);

/** The parser's nodes grouped into the shell's words: nodes with no blank between them are one word. */
function shellWords(nodes: readonly Node[]): Node[][] {
  const groups: Node[][] = [];
  for (const node of nodes) {
    const last = groups.at(-1);
    if (last && WORD_NODES.has(node.type) && WORD_NODES.has(last.at(-1)!.type) && last.at(-1)!.endIndex === node.startIndex)
      last.push(node);
    else groups.push([node]);
  }
  return groups;
}

/** The words every reading agrees on, up to the first word that is unknown or read differently. */
function commonLiteralPrefix(readings: readonly (readonly (string | null)[])[]): string[] {
  const first = literalPrefix(readings[0] ?? []);
  let length = first.length;
  for (const argv of readings.slice(1)) {
    let same = 0;
    while (same < length && argv[same] === first[same]) same++;
    length = same;
  }
  return first.slice(0, length);
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
export function analyseCommandLine(text: string, presetNames: readonly string[] = []): ShellAnalysis {
  const walk = new Walk();
  // Variables the step sets for the command hold text of its choosing.
  for (const name of presetNames) walk.textWrites.add(name);
  walk.code(text, 0);
  walk.finish();
  return { programs: walk.programs, commands: walk.commands, unknowable: walk.unknowable, redirectWrites: walk.redirectWrites };
}

/** The same for an argv run directly (no shell): argv[0] is the program, wrappers and interpreters in it are followed. */
export function analyseArgv(argv: readonly string[], presetNames: readonly string[] = []): ShellAnalysis {
  const walk = new Walk();
  for (const name of presetNames) walk.textWrites.add(name);
  if (argv.some((word) => word.includes('\0'))) {
    // A NUL cannot reach a program: the word ends there for it, or the start is refused. Both are read.
    walk.flag('unparsable', 'an argument holds a NUL character, which ends the argument for the program that receives it');
    const cut = argv.map((word) => word.split('\0')[0]!);
    walk.readings([cut, argv], argv.join(' '), 0, ['the word cut at the NUL', 'the word as written']);
  } else walk.readings([argv], argv.join(' '), 0);
  walk.finish();
  return { programs: walk.programs, commands: walk.commands, unknowable: walk.unknowable, redirectWrites: walk.redirectWrites };
}

/** Variables a step sets for its command (runCommand's `env`) get the same check as `NAME=value` on the line. */
export function analyseEnvironment(names: readonly string[]): Unknowable[] {
  const walk = new Walk();
  for (const name of names) walk.variable(name);
  return walk.unknowable;
}
