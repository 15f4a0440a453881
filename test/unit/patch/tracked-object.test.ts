import assert from 'node:assert/strict';
import { readOnlyView, trackObject } from '../../../server/patch/tracked-object.js';

interface Doc {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { containers: Array<{ name: string; image: string }> };
}

const doc = (): Doc => ({
  metadata: { name: 'web', labels: { app: 'web' } },
  spec: { containers: [{ name: 'a', image: 'nginx:1' }] },
});

describe('trackObject()', () => {
  describe('given a step that edits the object', () => {
    it('writes through to the document and records JSON pointers in order', () => {
      const target = doc();
      const session = trackObject(target, 'step');
      session.view.metadata.labels!['team/x'] = 'a';
      session.view.spec.containers.push({ name: 'b', image: 'busybox:1' });
      delete session.view.metadata.labels!.app;
      session.close();
      assert.deepEqual(target, {
        metadata: { name: 'web', labels: { 'team/x': 'a' } },
        spec: {
          containers: [
            { name: 'a', image: 'nginx:1' },
            { name: 'b', image: 'busybox:1' },
          ],
        },
      });
      assert.deepEqual(session.writes, ['/metadata/labels/team~1x', '/spec/containers/1', '/metadata/labels/app']);
    });

    it('records nothing for a write of the same value', () => {
      const session = trackObject(doc(), 'step');
      session.view.metadata.name = 'web';
      assert.deepEqual(session.writes, []);
    });

    it('rolls every edit back, nested and in arrays, restoring key order', () => {
      const target = doc();
      const before = JSON.stringify(target);
      const session = trackObject(target, 'step');
      session.view.metadata.labels = { replaced: 'yes' };
      session.view.spec.containers[0]!.image = 'evil:latest';
      session.view.spec.containers.splice(0, 1);
      session.view.spec.containers.push({ name: 'c', image: 'c' });
      delete (session.view as Partial<Doc>).metadata;
      session.close();
      session.rollback();
      assert.equal(JSON.stringify(target), before);
    });

    it('rolls back an array emptied by setting its length, and one shortened by pop()', () => {
      const target = doc();
      target.spec.containers.push({ name: 'b', image: 'busybox:1' });
      const before = JSON.stringify(target);
      const session = trackObject(target, 'step');
      session.view.spec.containers.pop();
      session.view.spec.containers.length = 0;
      session.view.spec.containers.push({ name: 'c', image: 'c' });
      session.close();
      assert.deepEqual(target.spec.containers, [{ name: 'c', image: 'c' }]);
      session.rollback();
      assert.equal(JSON.stringify(target), before);
    });

    it('rolls back an array emptied by setting its length, with no other write', () => {
      const target = doc();
      const before = JSON.stringify(target);
      const session = trackObject(target, 'step');
      session.view.spec.containers.length = 0;
      session.close();
      session.rollback();
      assert.equal(JSON.stringify(target), before);
    });

    it('rolls back a delete from an array of hundreds of thousands of elements', () => {
      // A request may hold such an array; restoring it must not pass every element as an argument.
      const target = { spec: { values: Array.from({ length: 300_000 }, (_, i) => i) } };
      const before = JSON.stringify(target);
      const session = trackObject(target, 'step');
      session.view.spec.values.pop();
      session.view.spec.values[0] = -1;
      session.close();
      session.rollback();
      assert.equal(JSON.stringify(target), before);
    });

    it('stores plain objects, not views, when a view is assigned elsewhere', () => {
      const target = doc();
      const session = trackObject(target, 'step');
      (session.view.spec as Record<string, unknown>).copy = { labels: session.view.metadata.labels };
      session.close();
      assert.equal(structuredClone(target).spec.containers.length, 1);
      assert.equal((target.spec as unknown as { copy: { labels: unknown } }).copy.labels, target.metadata.labels);
    });

    it('refuses writes after the step ended', () => {
      const session = trackObject(doc(), 'late-step');
      const labels = session.view.metadata.labels!;
      session.close();
      assert.throws(() => {
        labels.late = 'x';
      }, /"late-step" modified the object after its step ended/);
    });

    it('refuses a named member of an array, which no JSON patch can say, and records nothing', () => {
      const session = trackObject(doc(), 'step');
      const containers = session.view.spec.containers as unknown as Record<string, unknown>;
      assert.throws(() => Object.assign(containers, { cpu: '1' }), {
        name: 'TypeError',
        message: 'cannot set "cpu" on an array: only its elements and length can be written',
      });
      assert.equal(session.writeCount, 0);
      assert.deepEqual(Object.keys(session.view.spec.containers), ['0']);
    });

    it('refuses defineProperty, which has no JSON meaning', () => {
      const session = trackObject(doc(), 'step');
      assert.throws(() => Object.defineProperty(session.view.metadata, 'x', { get: () => 1 }), TypeError);
    });
  });

  describe('readOnlyView()', () => {
    it('reads like the object', () => {
      const view = readOnlyView(doc(), 'validator')!;
      assert.equal(view.spec.containers[0]!.image, 'nginx:1');
      assert.deepEqual(JSON.parse(JSON.stringify(view)), doc());
    });
    it('throws on any write, naming the step', () => {
      const view = readOnlyView(doc(), 'validator')!;
      assert.throws(() => {
        view.metadata.labels!.x = 'y';
      }, /"validator" may not modify the object in the validate phase/);
      assert.throws(() => {
        delete view.metadata.labels;
      }, TypeError);
    });
    it('is undefined for an absent object', () => {
      assert.equal(readOnlyView(null, 'v'), undefined);
    });
  });
});
