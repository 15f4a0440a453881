import assert from 'node:assert/strict';
import type { JsonPatchOperation } from '../../../server/admission/types.js';
import { trackObject } from '../../../server/patch/tracked-object.js';
import { WorkingCopy } from '../../../server/patch/working-copy.js';
import { WriteHistory } from '../../../server/patch/write-history.js';

type Doc = Record<string, unknown> & {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: { containers: Array<{ name: string; image: string }> };
};

const pod = (): Doc => ({ metadata: { name: 'web' }, spec: { containers: [{ name: 'a', image: 'nginx:1' }] } });

/** Runs each edit as a step on one working copy (a step returning false is rolled back); each one's patch. */
function patchesOf(
  original: Doc,
  ...steps: Array<(view: Doc) => boolean | void>
): Array<readonly JsonPatchOperation[]> {
  const working = new WorkingCopy(original);
  const history = new WriteHistory();
  const kept = steps.map((edit, i) => {
    const session = trackObject(working, `step-${i}`);
    const keep = edit(session.view) !== false;
    session.close();
    if (!keep) session.rollback();
    return { keep, n: history.add(session) };
  });
  history.finish(working.root);
  return kept.map(({ keep, n }) => (keep ? history.patchOf(n) : []));
}

describe('WriteHistory', () => {
  it('gives each step its own operations, values as it left them, whatever later steps did to them in place', () => {
    const patches = patchesOf(
      pod(),
      (p) => void (p.metadata.labels = { admitted: 'true' }),
      (p) => void (p.metadata.labels!.team = 'platform'),
      (p) => void (p.metadata.labels!.admitted = 'no'),
      (p) => void delete p.metadata.labels,
    );
    assert.deepEqual(patches, [
      [{ op: 'add', path: '/metadata/labels', value: { admitted: 'true' } }],
      [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }],
      [{ op: 'replace', path: '/metadata/labels/admitted', value: 'no' }],
      [{ op: 'remove', path: '/metadata/labels' }],
    ]);
  });

  it('leaves out what a rolled-back step wrote, and sees through the copies the working copy made meanwhile', () => {
    const patches = patchesOf(
      pod(),
      (p) => void (p.spec.containers[0]!.image = 'nginx:2'),
      (p) => {
        // Moved, then given up: the next step to reach the container gets a copy of it in its place.
        p.spec.containers.push({ name: 'b', image: 'busybox:1' });
        p.spec.containers.reverse();
        return false;
      },
      (p) => void (p.spec.containers[0]!.name = 'main'),
    );
    assert.deepEqual(patches, [
      [{ op: 'replace', path: '/spec/containers/0/image', value: 'nginx:2' }],
      [],
      [{ op: 'replace', path: '/spec/containers/0/name', value: 'main' }],
    ]);
  });

  it('gives each step nothing before the phase is over', () => {
    const history = new WriteHistory();
    const session = trackObject(new WorkingCopy(pod()), 'step');
    session.view.metadata.name = 'other';
    session.close();
    assert.deepEqual(history.patchOf(history.add(session)), []);
  });
});
