import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rootNamedInTask } from '../../../src/domain/run-folder.js';

const ROOTS = ['/home/ada/proj/api', '/home/ada/proj/web', '/home/ada/proj', '/srv/data'];

describe('the folder a task names', () => {
  it.each([
    ['fix the tests in ~/proj/api', '/home/ada/proj/api'],
    ['fix the tests in ~/proj/api/', '/home/ada/proj/api'],
    ['look at `~/proj/web/src/app.ts`.', '/home/ada/proj/web'],
    ['update /home/ada/proj/api/README.md please', '/home/ada/proj/api'],
    ['tidy ~/proj/docs', '/home/ada/proj'],
    ['clean "/srv/data/tmp"', '/srv/data'],
    ['in proj/web, run the linter', '/home/ada/proj/web'],
  ])('%s → %s', (task, root) => {
    expect(rootNamedInTask(task, ROOTS)).toBe(root);
  });

  it.each([['add a CHANGELOG.md'], ['fix /etc/hosts'], ['compare 1/2 and 3/4'], ['go to ~/other/place'], ['see ../proj/api']])(
    'names none: %s',
    (task) => {
      expect(rootNamedInTask(task, ROOTS)).toBeNull();
    },
  );

  it.each([
    ['fix /home/ada/proj/api/../../../../etc/ssh', null],
    ['read /srv/data/../../root/.ssh/id_rsa', null],
    ['look in /home/ada/proj/api/../web/src', '/home/ada/proj/web'],
    ['tidy ~/proj/api/../../secret', null],
    ['tidy ~/proj/./web/lib', '/home/ada/proj/web'],
  ])('a path that climbs out with .. is read where it lands: %s → %s', (task, root) => {
    expect(rootNamedInTask(task, ROOTS)).toBe(root);
  });

  it('picks the deepest root holding any folder named under a root, wherever it stands in the task', () => {
    const part = fc.stringMatching(/^[a-z]{1,6}$/);
    fc.assert(
      fc.property(
        fc.array(part, { minLength: 1, maxLength: 3 }),
        fc.array(part, { maxLength: 3 }),
        fc.string({ maxLength: 20 }),
        (rootParts, inner, before) => {
          const root = `/r/${rootParts.join('/')}`;
          const parent = `/r/${rootParts.slice(0, -1).join('/')}`.replace(/\/$/, '');
          const roots = parent === '/r' ? [root] : [parent, root];
          const named = [root, ...inner].join('/');
          const task = `${before.replace(/[/~]/g, '')} fix ${named} now`;
          expect(rootNamedInTask(task, roots)).toBe(root);
        },
      ),
      { numRuns: 300 },
    );
  });
});
