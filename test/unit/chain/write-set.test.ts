import assert from 'node:assert/strict';
import type { JsonPatchOperation } from '../../../server/admission/types.js';
import {
  WriteSet,
  covers,
  firstWriteOutside,
  mergePatch,
  overlaps,
  segmentsOf,
} from '../../../server/steps/write-set.js';

const pod = {
  metadata: { name: 'web', labels: { app: 'web' } },
  spec: { containers: [{ name: 'app', image: 'app:1' }] },
};

describe('write sets', () => {
  describe('segmentsOf()', () => {
    it('unescapes ~1 and ~0, in that order', () => {
      assert.deepEqual(segmentsOf('/metadata/labels/app.kubernetes.io~1name'), [
        'metadata',
        'labels',
        'app.kubernetes.io/name',
      ]);
      assert.deepEqual(segmentsOf('/a/~01'), ['a', '~1']);
    });
  });

  describe('covers()', () => {
    const cases: ReadonlyArray<[string, string, boolean]> = [
      ['/metadata/labels', '/metadata/labels', true],
      ['/metadata/labels', '/metadata/labels/team', true],
      ['/metadata/labels/team', '/metadata/labels', false],
      ['/metadata/labels/team', '/metadata/labels/tier', false],
      ['/spec/containers/*/resources', '/spec/containers/3/resources/limits/cpu', true],
      ['/spec/containers/*/resources', '/spec/containers/3/image', false],
      ['/spec/*', '/spec', false],
    ];
    for (const [pattern, path, expected] of cases) {
      it(`${pattern} ${expected ? 'covers' : 'does not cover'} ${path}`, () => {
        assert.equal(covers(segmentsOf(pattern), segmentsOf(path)), expected);
      });
    }
  });

  describe('overlaps()', () => {
    const cases: ReadonlyArray<[string, string, boolean]> = [
      ['/metadata/labels', '/metadata/labels/team', true],
      ['/metadata/labels/team', '/metadata/labels/tier', false],
      ['/spec/containers/*/resources', '/spec/containers/0', true],
      ['/spec/containers/*/resources', '/spec/containers/0/image', false],
      ['/spec/containers/*/image', '/spec/*/0/image', true],
      ['/metadata/annotations', '/metadata/labels', false],
    ];
    for (const [a, b, expected] of cases) {
      it(`${a} and ${b} ${expected ? 'overlap' : 'do not overlap'}, either way round`, () => {
        assert.equal(overlaps(segmentsOf(a), segmentsOf(b)), expected);
        assert.equal(overlaps(segmentsOf(b), segmentsOf(a)), expected);
      });
    }

    it('names the first overlapping pair of two sets', () => {
      const team = new WriteSet(['/metadata/annotations/x', '/metadata/labels/team']);
      assert.deepEqual(team.overlap(new WriteSet(['/spec', '/metadata/labels'])), [
        '/metadata/labels/team',
        '/metadata/labels',
      ]);
      assert.equal(team.overlap(new WriteSet(['/spec'])), undefined);
    });
  });

  describe('firstWriteOutside()', () => {
    const outside = (patch: JsonPatchOperation[], supplies: string[]) =>
      firstWriteOutside(patch, pod, new WriteSet(supplies));

    it('accepts changes at and below the supplied pointers', () => {
      assert.equal(
        outside([{ op: 'add', path: '/metadata/labels/team', value: 'a' }], ['/metadata/labels/team']),
        undefined,
      );
      assert.equal(
        outside(
          [{ op: 'add', path: '/spec/containers/0/resources', value: { limits: { cpu: '1' } } }],
          ['/spec/containers/*/resources'],
        ),
        undefined,
      );
    });

    it('names the first change outside them', () => {
      assert.equal(
        outside(
          [
            { op: 'add', path: '/metadata/labels/team', value: 'a' },
            { op: 'replace', path: '/spec/containers/0/image', value: 'app:2' },
          ],
          ['/metadata/labels/team'],
        ),
        '/spec/containers/0/image',
      );
    });

    it('accepts a container created on the way to the lane that holds only the lane', () => {
      const bare = { metadata: { name: 'web' } };
      const patch: JsonPatchOperation[] = [{ op: 'add', path: '/metadata/labels', value: { team: 'a' } }];
      assert.equal(firstWriteOutside(patch, bare, new WriteSet(['/metadata/labels/team'])), undefined);
    });

    it('names what a container on the way brings besides the lane', () => {
      const bare = { metadata: { name: 'web' } };
      const patch: JsonPatchOperation[] = [{ op: 'add', path: '/metadata/labels', value: { team: 'a', tier: 'b' } }];
      assert.equal(firstWriteOutside(patch, bare, new WriteSet(['/metadata/labels/team'])), '/metadata/labels/tier');
    });

    it('names a removal on the way that takes more than the lane with it', () => {
      assert.equal(
        outside([{ op: 'remove', path: '/metadata/labels' }], ['/metadata/labels/team']),
        '/metadata/labels/app',
      );
    });

    it('refuses a whole new array element when only a field of each element is supplied', () => {
      assert.equal(
        outside(
          [{ op: 'add', path: '/spec/containers/1', value: { name: 'b', resources: {} } }],
          ['/spec/containers/*/resources'],
        ),
        '/spec/containers/1/name',
      );
    });

    it('refuses everything when nothing is supplied', () => {
      assert.equal(outside([{ op: 'add', path: '/metadata/labels/team', value: 'a' }], []), '/metadata/labels/team');
    });
  });

  describe('mergePatch()', () => {
    it('removes only the lane from a map of hundreds of thousands of keys, one removal a key', () => {
      // Each key leads into the lane; one holds something outside it, so the map itself stays.
      const spec: Record<string, object> = { outside: { kept: 1 } };
      for (let i = 0; i < 300_000; i++) spec[`k${i}`] = { lane: i };
      const applied: JsonPatchOperation[] = [];
      const made = mergePatch([{ op: 'remove', path: '/spec' }], { spec }, new WriteSet(['/spec/*/lane']), (op) =>
        applied.push(op),
      );
      assert.deepEqual(made, []);
      assert.deepEqual(
        applied,
        Array.from({ length: 300_000 }, (_, i) => ({ op: 'remove', path: `/spec/k${i}` })),
      );
    });
  });
});
