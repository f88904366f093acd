import { useMemo } from 'react';
import {
  capabilityAsks,
  codeLanguageName,
  codeSandboxOf,
  codeTimeoutWords,
  commandTimeoutWords,
  durationText,
  NO_CAPABILITY_WORDS,
  SANDBOX_WORDS,
  type RunTimeLimits,
} from '../../src/domain/run-step-facts.js';
import { commandLineOf, quoteShellWord } from '../../src/domain/shell-quote.js';
import type { CodeExcerpt as CodeExcerptLines } from '../../src/domain/code-excerpt.js';
import type { ActionArgs, Step } from '../../src/domain/step.js';
import { tokenizeCode, tokenLines, type CodeLanguage } from '../code-tokens.js';
import { displayPath } from '../step-text.js';
import { MarkedText } from './marked-text.js';

/*
 * What a runCode or runCommand step will run, where a person decides on it (the queue's detail and
 * the HIGH-risk dialog): the code itself, highlighted, in a box that scrolls, and the facts that
 * bound it. Every character the agent wrote goes through MarkedText, so an invisible or
 * direction-changing one shows as ⟨U+…⟩ and what is shown is what runs.
 */

/** Past these, colouring and numbering cost more than they help: the code is shown plain (still marked). */
const HIGHLIGHT_MAX_CHARS = 100_000;
const HIGHLIGHT_MAX_LINES = 3000;

export function CodeBlock({
  code,
  language,
  label = 'Code to run',
  compact = false,
}: {
  code: string;
  language: CodeLanguage;
  label?: string;
  compact?: boolean;
}) {
  const lines = useMemo(() => {
    if (code.length > HIGHLIGHT_MAX_CHARS) return null;
    const split = tokenLines(tokenizeCode(code, language));
    return split.length > HIGHLIGHT_MAX_LINES ? null : split;
  }, [code, language]);
  return (
    // Focusable so the keyboard can scroll it; a region so its name is announced.
    <div className={`code-frame ${compact ? 'compact' : ''}`} role="region" aria-label={label} tabIndex={0} data-language={language}>
      {lines === null ? (
        <>
          <p className="muted code-note">Long code: shown without colours or line numbers.</p>
          <pre className="code-block plain">
            <MarkedText text={code} />
          </pre>
        </>
      ) : (
        <pre className="code-block">
          <code>
            {lines.map((line, lineIndex) => (
              // The number is drawn by CSS (not copied, not read as part of the code); the text sits in a column of its own so a wrapped line stays right of it.
              <span key={lineIndex} className="code-line">
                <span className="code-text">
                  {line.map((token, tokenIndex) =>
                    token.kind === 'plain' ? (
                      <MarkedText key={tokenIndex} text={token.text} />
                    ) : (
                      <span key={tokenIndex} className={`tok-${token.kind}`}>
                        <MarkedText text={token.text} />
                      </span>
                    ),
                  )}
                </span>
              </span>
            ))}
          </code>
        </pre>
      )}
    </div>
  );
}

/** The first lines of the code, for a queue item: enough to recognise it; the detail has all of it. */
/** A list row's first lines of code (the summary's codeExcerpt, src/domain/code-excerpt.ts). */
export function CodeExcerpt({ excerpt }: { excerpt: CodeExcerptLines }) {
  const more = excerpt.moreLines;
  return (
    <span className="item-code">
      {excerpt.lines.map((line, index) => (
        <span key={index} className="item-code-line">
          <MarkedText text={line} />
        </span>
      ))}
      {more > 0 ? (
        <span className="item-code-more">
          … {more} more line{more === 1 ? '' : 's'}
        </span>
      ) : null}
    </span>
  );
}

function timeWords(requestedMs: number | undefined, words: (limits: RunTimeLimits) => string, limits: RunTimeLimits | undefined): string {
  if (limits) return words(limits);
  return requestedMs === undefined ? "the policy's default" : `${durationText(requestedMs)}, as the policy allows`;
}

/** Language, sandbox, time limit and every capability a runCode step asks for. */
export function CodeFacts({ args, limits }: { args: ActionArgs<'runCode'>; limits: RunTimeLimits | undefined }) {
  const sandbox = SANDBOX_WORDS[codeSandboxOf(args)];
  const asks = capabilityAsks(args.capabilities);
  return (
    <dl className="facts run-facts">
      <dt>Language</dt>
      <dd>{codeLanguageName(args)}</dd>
      <dt>Sandbox</dt>
      <dd>
        <strong>{sandbox.name}</strong> <span className="muted">— {sandbox.isolation}</span>
      </dd>
      <dt>Time limit</dt>
      <dd>{timeWords(args.timeoutMs, (given) => codeTimeoutWords(args, given), limits)}</dd>
      <dt>Asks for</dt>
      <dd>
        {asks.length === 0 ? (
          <span>{NO_CAPABILITY_WORDS}</span>
        ) : (
          <ul className="capabilities">
            {asks.map((ask) => (
              <li key={ask.capability} data-capability={ask.capability}>
                <MarkedText text={ask.words} />
              </li>
            ))}
          </ul>
        )}
      </dd>
    </dl>
  );
}

/** The command line as it will run, and where, how long, with which environment and secret files. */
export function CommandFacts({
  args,
  limits,
  roots,
}: {
  args: ActionArgs<'runCommand'>;
  limits: RunTimeLimits | undefined;
  roots: readonly string[];
}) {
  const env = Object.entries(args.env ?? {});
  return (
    <dl className="facts run-facts">
      <dt>Command line</dt>
      <dd>
        <pre className="command-line" tabIndex={0}>
          <MarkedText text={commandLineOf(args)} />
        </pre>
        {args.command !== undefined ? (
          <span className="muted">
            Run by <code>sh -c</code> inside the container.
          </span>
        ) : (
          <span className="muted">Run directly, without a shell; quoted here as a shell would need it.</span>
        )}
      </dd>
      <dt>In</dt>
      <dd>
        <code>
          <MarkedText text={args.cwd ? displayPath(args.cwd, roots) : (roots[0] ?? 'the first workspace root')} />
        </code>{' '}
        <span className="muted">— a copy, in the Docker sandbox</span>
      </dd>
      <dt>Network</dt>
      <dd>{args.network === 'allowlist' ? "Only the hosts on the policy's allowlist" : 'Off'}</dd>
      <dt>Time limit</dt>
      <dd>{timeWords(args.timeoutMs, (given) => commandTimeoutWords(args, given), limits)}</dd>
      {env.length ? (
        <>
          <dt>Environment</dt>
          <dd>
            <ul className="capabilities">
              {env.map(([name, value]) => (
                <li key={name}>
                  <code>
                    <MarkedText text={`${name}=${quoteShellWord(value)}`} />
                  </code>
                </li>
              ))}
            </ul>
          </dd>
        </>
      ) : null}
      {args.allowSecrets?.length ? (
        <>
          <dt>Secret files it sees</dt>
          <dd>
            {args.allowSecrets.map((secret, index) => (
              <span key={secret}>
                {index > 0 ? ', ' : ''}
                <code>
                  <MarkedText text={secret} />
                </code>
              </span>
            ))}
          </dd>
        </>
      ) : null}
    </dl>
  );
}

/** For a step that runs something, what it runs; nothing for other steps. */
export function WhatRuns({
  step,
  limits,
  roots,
  compact = false,
}: {
  step: Step;
  limits: RunTimeLimits | undefined;
  roots: readonly string[];
  compact?: boolean;
}) {
  if (step.action === 'runCode') {
    return (
      <section className="what-runs" aria-label="What will run">
        <CodeFacts args={step.args} limits={limits} />
        <CodeBlock code={step.args.code} language={step.args.language ?? 'javascript'} compact={compact} />
      </section>
    );
  }
  if (step.action === 'runCommand') {
    return (
      <section className="what-runs" aria-label="What will run">
        <CommandFacts args={step.args} limits={limits} roots={roots} />
      </section>
    );
  }
  if (step.action === 'runSkill') {
    return (
      <section className="what-runs" aria-label="What will run">
        <SkillUseFacts args={step.args} />
      </section>
    );
  }
  return null;
}

/** A skill's use: which skill and version, the code hash its approval pinned, and the input it was given. */
function SkillUseFacts({ args }: { args: ActionArgs<'runSkill'> }) {
  const input = JSON.stringify(args.input, null, 2) ?? 'null';
  return (
    <dl className="facts run-facts">
      <dt>Skill</dt>
      <dd>
        <strong>
          <MarkedText text={`${args.skill} v${args.version}`} />
        </strong>{' '}
        <span className="muted">— runs the code you approved, in the light sandbox, with its pinned capabilities and budget</span>
      </dd>
      <dt>Code hash</dt>
      <dd>
        <code>{args.codeHash}</code>
      </dd>
      <dt>Input</dt>
      <dd>
        <pre className="skill-input">
          <MarkedText text={input.length > 4000 ? `${input.slice(0, 4000)}\n… (${input.length} characters)` : input} />
        </pre>
      </dd>
    </dl>
  );
}
