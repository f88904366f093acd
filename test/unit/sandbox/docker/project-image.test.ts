import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PolicySchema } from '../../../../src/policy/policy-file.js';
import {
  baseImagesOf,
  codeRunningInstructions,
  consentedBuildDigestOf,
  imageSourceFor,
} from '../../../../src/sandbox/docker/project-image.js';
import { sandboxImageTag } from '../../../../src/sandbox/docker/sandbox-image.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

describe('what a Dockerfile runs while it builds', () => {
  it('finds RUN (also continued over lines, lower-case, after comments) and ONBUILD RUN, and nothing in a Dockerfile without them', () => {
    const text = [
      '# syntax comment',
      'FROM base',
      'COPY . /app',
      'run npm ci \\',
      '  # a comment inside the continuation',
      '  && npm run build',
      'ONBUILD RUN make',
      'ENV RUN=1',
      'LABEL note="RUN is a word here"',
    ].join('\n');
    expect(codeRunningInstructions(text)).toEqual(['RUN npm ci    && npm run build', 'ONBUILD RUN make']);
    expect(codeRunningInstructions('FROM a\nCOPY x /x\nUSER 1000\n')).toEqual([]);
  });

  it('reads the escape directive: with ` a backslash ends no line', () => {
    expect(codeRunningInstructions('# escape=`\nFROM a\nRUN dir `\n  c:\\\\\n')).toEqual(['RUN dir    c:\\\\']);
  });

  it('finds a RUN that a misplaced escape directive would hide: the builder reads a directive after a comment as a comment', () => {
    // Docker reads `# escape=` only at the very top; here the backslash stays the escape, so RUN is its own instruction.
    for (const before of ['# a note first\n', '\n', 'FROM a\n', '# unknown=1\n'])
      expect(codeRunningInstructions(`${before}# escape=\`\nFROM a\nENV A=b\`\nRUN echo ran\n`)).toEqual(['RUN echo ran']);
    // And where a backslash would end a line the backtick reading keeps open: either reading's RUN asks.
    expect(codeRunningInstructions('# escape=`\nFROM a\nENV A=b \\\nRUN echo ran\n')).not.toEqual([]);
  });

  it('names the base images with ARGs and build args substituted, but not earlier stages or scratch', () => {
    const text = 'ARG BASE=node:20\nARG OTHER\nFROM ${BASE} AS build\nFROM --platform=linux/amd64 $OTHER\nFROM build\nFROM scratch\n';
    expect(baseImagesOf(text, {})).toEqual(['node:20', '']);
    expect(baseImagesOf(text, { BASE: 'mine:1', OTHER: 'x:2' })).toEqual(['mine:1', 'x:2']);
  });
});

describe('where a root gets its image', () => {
  function root(files: Record<string, string> = {}): string {
    const dir = tempDir();
    for (const [relative, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dir, relative)), { recursive: true });
      fs.writeFileSync(path.join(dir, relative), text);
    }
    return dir;
  }
  const policy = (sandbox: Record<string, unknown> = {}) => PolicySchema.parse({ sandbox });

  it('the policy first, then the dev container, then a Dockerfile the policy names, else the default', () => {
    const dir = root({ '.devcontainer/devcontainer.json': '{"image": "dev:1"}', 'tools/Dockerfile': 'FROM a\n' });
    expect(imageSourceFor(dir, policy({ image: { [dir]: 'pinned:2' } }))).toMatchObject({ kind: 'policy-image', image: 'pinned:2' });
    expect(imageSourceFor(dir, policy({ image: { '/elsewhere': 'other:1' } }))).toMatchObject({
      kind: 'devcontainer-image',
      image: 'dev:1',
    });
    fs.rmSync(path.join(dir, '.devcontainer'), { recursive: true });
    expect(imageSourceFor(dir, policy({ dockerfile: { [dir]: 'tools/Dockerfile' } }))).toMatchObject({
      kind: 'policy-dockerfile',
      build: { dockerfile: path.join(dir, 'tools/Dockerfile'), context: path.join(dir, 'tools') },
    });
    expect(imageSourceFor(dir, policy())).toMatchObject({ kind: 'default', image: sandboxImageTag() });
  });

  it('refuses a build context or Dockerfile outside the root, by real path', () => {
    const dir = root({
      '.devcontainer/devcontainer.json': '{"build": {"dockerfile": "Dockerfile", "context": "../.."}}',
      '.devcontainer/Dockerfile': 'FROM a\n',
    });
    expect(() => imageSourceFor(dir, policy())).toThrow(/lies outside the workspace root/);
    const linked = root({ '.devcontainer/devcontainer.json': '{"build": {"dockerfile": "../outside/Dockerfile"}}' });
    fs.symlinkSync('/etc', path.join(linked, 'outside'));
    expect(() => imageSourceFor(linked, policy())).toThrow(/lies outside the workspace root|does not exist/);
  });

  it('refuses an image setting that is no image reference at policy load', () => {
    expect(() => policy({ image: 'Not An Image!' })).toThrow();
    expect(() => policy({ image: { relative: 'a:1' } })).toThrow();
    expect(policy({ image: 'registry.example:5000/team/img:1.2' }).sandbox.image).toBe('registry.example:5000/team/img:1.2');
  });
});

describe("the build a step's preview error asked consent for", () => {
  const digest = 'ab'.repeat(32);
  const opening = `This project's sandbox image (build sha256:${digest}) is built from .devcontainer/Dockerfile`;

  it('is the digest at the opening of the words, also after the line that says the approved build changed', () => {
    expect(consentedBuildDigestOf(`${opening}, and building it runs the project's code: RUN make.`)).toBe(digest);
    const changed = consentedBuildDigestOf(
      `The Dockerfile changed since you approved its build; nothing was built or run. The build that would run now is below: approve the step again to consent to it, or reject it.\n${opening}`,
    );
    expect(changed).toBe(digest);
    expect(consentedBuildDigestOf(undefined)).toBeUndefined();
    expect(consentedBuildDigestOf(`This project's sandbox image (build sha256:${digest.slice(1)}) is`)).toBeUndefined();
  });

  it("is never read from further on: a RUN's text (the project's) or a wrapper before the words names no build", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), (before) => {
        fc.pre(!opening.startsWith(before));
        expect(consentedBuildDigestOf(`${before}${opening}`)).toBeUndefined();
        expect(consentedBuildDigestOf(`${before}\n${opening}`)).toBeUndefined();
      }),
    );
    expect(consentedBuildDigestOf(`Executor could not prepare this step's preview: ${opening}`)).toBeUndefined();
  });
});
