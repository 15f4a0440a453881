import assert from 'node:assert/strict';
import { applyPatchInPlace, checkPatchShape, diffPatch } from '../../../server/patch/apply.js';
import { diffWritten } from '../../../server/patch/diff-written.js';
import { trackObject } from '../../../server/patch/tracked-object.js';
import { PatchApplyError } from '../../../server/base/errors.js';

describe('applyPatchInPlace()', () => {
  it('applies every operation to the document', () => {
    const doc = { metadata: { labels: { a: '1' } }, spec: { list: [1, 2] } };
    applyPatchInPlace(doc, [
      { op: 'add', path: '/metadata/labels/b', value: '2' },
      { op: 'replace', path: '/spec/list/0', value: 9 },
      { op: 'remove', path: '/metadata/labels/a' },
      { op: 'copy', from: '/spec/list', path: '/spec/copy' },
      { op: 'test', path: '/spec/copy/1', value: 2 },
    ]);
    assert.deepEqual(doc, { metadata: { labels: { b: '2' } }, spec: { list: [9, 2], copy: [9, 2] } });
  });

  it('names the failing operation', () => {
    assert.throws(
      () => applyPatchInPlace({ a: 1 }, [{ op: 'remove', path: '/missing' }]),
      (err: unknown) =>
        err instanceof PatchApplyError &&
        err.index === 0 &&
        err.message.startsWith('operation 0 (remove /missing) does not apply: '),
    );
  });

  it('can be rolled back through a tracked view when it fails part-way', () => {
    const doc = { metadata: { labels: { a: '1' } } };
    const session = trackObject(doc, 'provider');
    assert.throws(() =>
      applyPatchInPlace(session.view, [
        { op: 'add', path: '/metadata/labels/b', value: '2' },
        { op: 'test', path: '/metadata/labels/a', value: 'other' },
      ]),
    );
    session.close();
    session.rollback();
    assert.deepEqual(doc, { metadata: { labels: { a: '1' } } });
  });

  const forbidden: Array<[string, unknown]> = [
    ['__proto__ in a path', [{ op: 'add', path: '/__proto__/polluted', value: true }]],
    ['constructor/prototype in a path', [{ op: 'add', path: '/constructor/prototype/polluted', value: true }]],
    ['__proto__ in a from', [{ op: 'copy', from: '/__proto__', path: '/x' }]],
    ['the root path', [{ op: 'replace', path: '', value: {} }]],
    ['a path without a leading slash', [{ op: 'add', path: 'metadata', value: {} }]],
    ['an unknown op', [{ op: 'merge', path: '/a', value: 1 }]],
    ['an add without a value', [{ op: 'add', path: '/a' }]],
    ['a non-array patch', { op: 'add', path: '/a', value: 1 }],
  ];
  for (const [name, patch] of forbidden) {
    it(`refuses ${name} before applying anything`, () => {
      const doc = { a: 1 };
      assert.throws(() => checkPatchShape(patch), PatchApplyError);
      assert.deepEqual(doc, { a: 1 });
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });
  }
});

describe('diffPatch()', () => {
  it('is empty for equal documents and applies back to the target otherwise', () => {
    const original = { metadata: { labels: { a: '1' } }, spec: { x: [1, 2, 3] } };
    const current = { metadata: { labels: { a: '1', b: '2' } }, spec: { x: [1, 3] } };
    assert.deepEqual(diffPatch(original, structuredClone(original)), []);
    const patch = diffPatch(original, current);
    const applied = structuredClone(original);
    applyPatchInPlace(applied, patch);
    assert.deepEqual(applied, current);
  });
});

describe('diffWritten()', () => {
  /** Edits a copy of `original` through a tracked view and returns the patch from the journal. */
  function journaled(original: Record<string, unknown>, edit: (doc: Record<string, unknown>) => void) {
    const current = structuredClone(original);
    const session = trackObject(current, 'step');
    edit(session.view);
    session.close();
    return { current, patch: diffWritten(original, current, session.writes) };
  }

  const pod = () => ({
    metadata: { name: 'web', labels: { app: 'web', 'a/b~c': 'x' } },
    spec: {
      containers: [
        { name: 'a', image: 'nginx:1', resources: {} },
        { name: 'b', image: 'busybox:1' },
      ],
      volumes: [],
    },
  });

  const edits: Array<[string, (doc: Record<string, unknown>) => void]> = [
    ['adds labels, creating nothing', (d) => ((d.metadata as { labels: Record<string, string> }).labels.team = 'a')],
    ['creates a map and fills it', (d) => ((d.metadata as Record<string, unknown>).annotations = { x: '1' })],
    [
      'creates a map, then writes into it through the view',
      (d) => {
        const meta = d.metadata as Record<string, Record<string, string>>;
        meta.annotations = {};
        meta.annotations.y = '2';
      },
    ],
    [
      'edits containers inside an array and appends one',
      (d) => {
        const containers = (d.spec as { containers: Array<Record<string, unknown>> }).containers;
        containers[0]!.resources = { requests: { cpu: '100m' } };
        containers.push({ name: 'c', image: 'c:1' });
      },
    ],
    ['removes an array element', (d) => (d.spec as { containers: unknown[] }).containers.splice(0, 1)],
    ['truncates an array by setting its length', (d) => ((d.spec as { containers: unknown[] }).containers.length = 1)],
    ['empties an array by setting its length', (d) => ((d.spec as { containers: unknown[] }).containers.length = 0)],
    [
      'deletes and replaces keys with escaped characters',
      (d) => {
        const labels = (d.metadata as { labels: Record<string, string> }).labels;
        delete labels['a/b~c'];
        labels['x~y/z'] = 'new';
      },
    ],
    ['replaces a map with a string', (d) => ((d.spec as Record<string, unknown>).volumes = 'none')],
    ['replaces a list with a map', (d) => ((d.spec as Record<string, unknown>).volumes = {})],
    [
      'reverses an array in place (same length, every element moved)',
      (d) => (d.spec as { containers: unknown[] }).containers.reverse(),
    ],
    [
      'sorts containers and then edits one (same length)',
      (d) => {
        const containers = (d.spec as { containers: Array<Record<string, unknown>> }).containers;
        containers.sort((x, y) => String(y.name).localeCompare(String(x.name)));
        containers[1]!.image = 'nginx:2';
      },
    ],
    [
      'replaces an element and edits its neighbour (same length)',
      (d) => {
        const containers = (d.spec as { containers: Array<Record<string, unknown>> }).containers;
        containers.splice(0, 1, { name: 'z', image: 'z:1' });
        delete containers[1]!.image;
      },
    ],
    [
      'writes a value back unchanged after changing it',
      (d) => {
        const meta = d.metadata as { name: string };
        meta.name = 'other';
        meta.name = 'web';
      },
    ],
  ];
  for (const [name, edit] of edits) {
    it(`${name}: the patch turns the original into the edited object, like a full diff`, () => {
      const original = pod();
      const { current, patch } = journaled(original, edit);
      const applied = structuredClone(original);
      applyPatchInPlace(applied, patch);
      assert.deepEqual(applied, current);
      assert.equal(patch.length === 0, diffPatch(original, current).length === 0);
    });
  }

  it('gives one operation for a field of an element edited in place in a same-length array', () => {
    const { patch } = journaled(pod(), (d) => {
      const containers = (d.spec as { containers: Array<Record<string, unknown>> }).containers;
      containers[1]!.resources = { requests: { cpu: '100m' } };
    });
    assert.deepEqual(patch, [
      { op: 'add', path: '/spec/containers/1/resources', value: { requests: { cpu: '100m' } } },
    ]);
  });

  it('emits nothing for a number written back equal, -0 as 0, as the full diff does', () => {
    const original = JSON.parse('{"spec":{"replicas":-0,"paused":false}}') as Record<string, unknown>;
    const { current, patch } = journaled(original, (d) => {
      const spec = d.spec as Record<string, unknown>;
      spec.replicas = 0;
      spec.paused = false;
    });
    assert.deepEqual(patch, []);
    assert.deepEqual(diffPatch(original, current), []);
  });

  it('emits exactly the operations for the written paths', () => {
    const { patch } = journaled(pod(), (d) => {
      (d.metadata as { labels: Record<string, string> }).labels.team = 'a';
    });
    assert.deepEqual(patch, [{ op: 'add', path: '/metadata/labels/team', value: 'a' }]);
  });
});
