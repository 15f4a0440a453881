import assert from 'node:assert/strict';
import { applyPatchInPlace } from '../../../server/patch/apply.js';
import { diffWritten } from '../../../server/patch/diff-written.js';
import { trackObject } from '../../../server/patch/tracked-object.js';
import { WorkingCopy } from '../../../server/patch/working-copy.js';

interface Pod {
  metadata: { name: string; labels: Record<string, string> };
  spec: {
    containers: Array<{ name: string; image: string; resources?: Record<string, unknown> }>;
    volumes: Array<{ name: string; configMap: { name: string } }>;
  };
  data?: Record<string, string>;
}

const pod = (): Pod => ({
  metadata: { name: 'web', labels: { app: 'web' } },
  spec: {
    containers: [
      { name: 'a', image: 'nginx:1' },
      { name: 'b', image: 'busybox:1' },
    ],
    volumes: [{ name: 'config', configMap: { name: 'web' } }],
  },
});

describe('WorkingCopy', () => {
  it('takes the edits of several steps while the request object stays exactly as it was', () => {
    const original = pod();
    const before = structuredClone(original);
    const copy = new WorkingCopy(original);
    const first = trackObject(copy, 'labels');
    first.view.metadata.labels.team = 'a';
    first.close();
    const second = trackObject(copy, 'resources');
    second.view.spec.containers[1]!.resources = { requests: { cpu: '100m' } };
    second.view.spec.containers.push({ name: 'c', image: 'c:1' });
    second.close();

    assert.deepEqual(original, before);
    assert.deepEqual(copy.root, {
      ...before,
      metadata: { name: 'web', labels: { app: 'web', team: 'a' } },
      spec: {
        ...before.spec,
        containers: [
          { name: 'a', image: 'nginx:1' },
          { name: 'b', image: 'busybox:1', resources: { requests: { cpu: '100m' } } },
          { name: 'c', image: 'c:1' },
        ],
      },
    });
    const patch = diffWritten(original, copy.root, [...first.writes, ...second.writes]);
    const applied = structuredClone(original);
    applyPatchInPlace(applied, patch);
    assert.deepEqual(applied, copy.root);
  });

  describe('a container a step put at more than one place: between steps each place has its own', function () {
    interface Doc {
      src?: { v: number };
      x?: { v: number };
      y?: { v: number };
      list?: Array<{ n: string; seen?: boolean }>;
    }

    /** Runs `steps` on a working copy of `original`, then returns the copy's root and the patch. */
    function run(original: Doc, ...steps: Array<(doc: Doc) => void>) {
      const copy = new WorkingCopy(original);
      const writes: string[] = [];
      for (const step of steps) {
        const session = trackObject(copy, 'step');
        step(session.view);
        assert.equal(session.close(), undefined);
        writes.push(...session.writes);
      }
      return { root: copy.root, patch: diffWritten(original, copy.root, writes) };
    }

    it('copied to a second place (a.x = a.src): a later edit through one place leaves the other', function () {
      const original = { src: { v: 1 } };
      const { root, patch } = run(
        original,
        (d) => (d.x = d.src),
        (d) => (d.x!.v = 2),
      );
      assert.deepEqual(root, { src: { v: 1 }, x: { v: 2 } });
      assert.deepEqual(patch, [{ op: 'add', path: '/x', value: { v: 2 } }]);
    });

    it('moved to two places with its source removed: the same', function () {
      const original = { src: { v: 1 } };
      const { root, patch } = run(
        original,
        (d) => {
          d.x = d.src;
          d.y = d.src;
          delete d.src;
        },
        (d) => (d.y!.v = 2),
      );
      assert.deepEqual(root, { x: { v: 1 }, y: { v: 2 } });
      const applied = structuredClone(original);
      applyPatchInPlace(applied, patch);
      assert.deepEqual(applied, root);
    });

    it('moved within its array (a sort): later edits land where the element now is', function () {
      const original = { list: [{ n: 'b' }, { n: 'a' }] };
      const { root, patch } = run(
        original,
        (d) => d.list!.sort((p, q) => p.n.localeCompare(q.n)),
        (d) => (d.list![0]!.seen = true),
      );
      assert.deepEqual(root, { list: [{ n: 'a', seen: true }, { n: 'b' }] });
      const applied = structuredClone(original);
      applyPatchInPlace(applied, patch);
      assert.deepEqual(applied, root);
    });
  });

  it('copies only the containers a view reached: the rest stays shared with the request object', () => {
    const original = pod();
    const copy = new WorkingCopy(original);
    const session = trackObject(copy, 'step');
    assert.equal(session.view.spec.containers[0]!.image, 'nginx:1');
    session.close();

    assert.notEqual(copy.root, original);
    assert.notEqual(copy.root.spec, original.spec);
    assert.notEqual(copy.root.spec.containers, original.spec.containers);
    assert.notEqual(copy.root.spec.containers[0], original.spec.containers[0]);
    assert.equal(copy.root.spec.containers[1], original.spec.containers[1]);
    assert.equal(copy.root.spec.volumes, original.spec.volumes);
    assert.equal(copy.root.metadata, original.metadata);
  });

  it('copies a container once: a later step sees, and edits, what an earlier one left', () => {
    const original = pod();
    const copy = new WorkingCopy(original);
    const first = trackObject(copy, 'first');
    const labels = first.view.metadata.labels;
    labels.x = '1';
    first.close();
    const second = trackObject(copy, 'second');
    assert.equal(second.view.metadata.labels.x, '1');
    second.view.metadata.labels.y = '2';
    second.close();
    assert.deepEqual(copy.root.metadata.labels, { app: 'web', x: '1', y: '2' });
    assert.deepEqual(original.metadata.labels, { app: 'web' });
  });

  it("rolls back a failed step's edits in the copy and never touches the request object", () => {
    const original = pod();
    const before = structuredClone(original);
    const copy = new WorkingCopy(original);
    const ok = trackObject(copy, 'ok');
    ok.view.metadata.labels.team = 'a';
    ok.close();
    const failed = trackObject(copy, 'failed');
    delete (failed.view.metadata.labels as Record<string, string | undefined>).app;
    failed.view.spec.containers.splice(0, 1);
    failed.view.spec.volumes[0]!.configMap.name = 'other';
    failed.close();
    failed.rollback();
    assert.deepEqual(original, before);
    assert.equal(
      JSON.stringify(copy.root),
      JSON.stringify({ ...before, metadata: { name: 'web', labels: { app: 'web', team: 'a' } } }),
    );
  });
});

describe('WorkingCopy with a "__proto__" key (JSON.parse makes it an own key, not a prototype)', () => {
  const text = '{"a":{"__proto__":{"polluted":true},"b":1}}';

  it('keeps it a plain key through copies, writes and a rollback, and never touches the request object', () => {
    const original = JSON.parse(text) as { a: Record<string, unknown> };
    const copy = new WorkingCopy(original);
    const kept = trackObject(copy, 'kept');
    kept.view.a.b = 2;
    kept.close();
    // A delete makes the rollback restore the whole container from a snapshot.
    const failed = trackObject(copy, 'failed');
    delete failed.view.a.b;
    failed.close();
    failed.rollback();

    const a = copy.root.a;
    assert.equal(Object.getPrototypeOf(a), Object.prototype);
    assert.deepEqual(Object.keys(a), ['__proto__', 'b']);
    assert.equal((a as { polluted?: unknown }).polluted, undefined);
    assert.equal(JSON.stringify(copy.root), '{"a":{"__proto__":{"polluted":true},"b":2}}');
    assert.equal(JSON.stringify(original), text);
  });

  it('makes a "__proto__" written through a view an own key, never the prototype', () => {
    const original: { a: Record<string, unknown> } = { a: { b: 1 } };
    const copy = new WorkingCopy(original);
    const session = trackObject(copy, 'step');
    session.view.a['__proto__'] = { polluted: true };
    session.close();
    assert.equal(Object.getPrototypeOf(copy.root.a), Object.prototype);
    assert.equal(JSON.stringify(copy.root), '{"a":{"b":1,"__proto__":{"polluted":true}}}');
    assert.deepEqual(session.writes, ['/a/__proto__']);
  });
});
