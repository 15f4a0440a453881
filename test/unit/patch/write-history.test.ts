import assert from 'node:assert/strict';
import type { JsonPatchOperation } from '../../../server/admission/types.js';
import { trackObject } from '../../../server/patch/tracked-object.js';
import { WorkingCopy } from '../../../server/patch/working-copy.js';
import { WriteHistory } from '../../../server/patch/write-history.js';
import fc from 'fast-check';
import { diffWritten } from '../../../server/patch/diff-written.js';
import { splitByWriter } from '../../../server/patch/split-patch.js';
import { WrittenPaths, type WrittenNode } from '../../../server/patch/written-paths.js';
import { applyPatch } from '../../helpers/patch.js';

type Doc = Record<string, unknown> & {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: { containers: Array<{ name: string; image: string }> };
};

const pod = (): Doc => ({ metadata: { name: 'web' }, spec: { containers: [{ name: 'a', image: 'nginx:1' }] } });

/**
 * Runs each edit as a step on one working copy (a step returning false is rolled back): each step's patch as working
 * back gives it, and the object as JSON before the first step and after each one.
 */
function runSteps(
  original: Doc,
  ...steps: Array<(view: Doc) => boolean | void>
): { patches: Array<readonly JsonPatchOperation[]>; states: Doc[] } {
  const working = new WorkingCopy(original);
  const history = new WriteHistory();
  const states = [structuredClone(working.root)];
  const entries = steps.map((edit, i) => {
    const session = trackObject(working, `step-${i}`);
    const keep = edit(session.view) !== false;
    session.close();
    if (!keep) session.rollback();
    states.push(structuredClone(working.root));
    return history.add(session);
  });
  history.finish(working.root);
  return { patches: entries.map((n) => history.patchOf(n)), states };
}

describe('WriteHistory', () => {
  it('gives each step its own operations, values as it left them, whatever later steps did to them in place', () => {
    const { patches } = runSteps(
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
    const { patches } = runSteps(
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

/** One edit a generated step makes: a label, an annotation, a container's image, a new container, a removal. */
const EDITS: ReadonlyArray<(p: Doc, v: string) => void> = [
  (p, v) => void ((p.metadata.labels ??= {})[`l${v.length % 3}`] = v),
  (p, v) => void (p.metadata.annotations = { ...p.metadata.annotations, [`a${v.length % 2}`]: v }),
  (p, v) => void (p.spec.containers[0]!.image = `nginx:${v}`),
  (p, v) => void p.spec.containers.push({ name: `c${v}`, image: 'busybox:1' }),
  (p) => void delete p.metadata.labels,
  (p, v) => void (p.metadata.labels = { [`only-${v}`]: v }),
  (p) => void (p.spec.containers.length > 1 && p.spec.containers.pop()),
];

describe('WriteHistory given the review patch (split-patch.ts)', () => {
  it('gives each step the same patch as working back does, whenever no step overwrote another (generated chains)', () => {
    let split = 0;
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            edits: fc.array(fc.tuple(fc.nat(EDITS.length - 1), fc.string({ maxLength: 4 })), { maxLength: 3 }),
            rolledBack: fc.boolean(),
          }),
          { minLength: 1, maxLength: 5 },
        ),
        fc.boolean(),
        (steps, labelled) => {
          const original = pod();
          if (labelled) original.metadata.labels = { app: 'web' };
          const working = new WorkingCopy(original);
          const written = new WrittenPaths();
          const workedBack = new WriteHistory();
          const shared = new WriteHistory();
          let overwrote = false;
          const entries = steps.map((step, i) => {
            const session = trackObject(working, `step-${i}`);
            for (const [edit, value] of step.edits) EDITS[edit]!(session.view, value);
            session.close();
            if (step.rolledBack) session.rollback();
            else
              session.forEachWrite((place, key) =>
                written.recordAt(place, key, session.owner, () => (overwrote = true)),
              );
            workedBack.add(session);
            return shared.add(session);
          });
          const places: WrittenNode[] = [];
          const patch = diffWritten(original, working.root, written, places);
          workedBack.finish(working.root);
          shared.finish(working.root, overwrote ? undefined : { patch, places });
          const shares = splitByWriter(patch, places);
          if (!overwrote && shares) split++;
          for (const n of entries) assert.deepEqual(shared.patchOf(n), workedBack.patchOf(n), `step-${n}`);
        },
      ),
      { numRuns: 500, seed: 20261128 },
    );
    // The split is taken often enough for the comparison to mean something.
    assert.ok(split > 100, `split ${split} of 500`);
  });
});

/** EDITS, and two that move containers: the working copy then replaces containers of its own with copies. */
const MOVING_EDITS: ReadonlyArray<(p: Doc, v: string) => void> = [
  ...EDITS,
  (p) => void p.spec.containers.reverse(),
  (p) => void p.spec.containers.push(p.spec.containers[0]!),
];

describe('WriteHistory working back', () => {
  it('gives each step the patch from the object as it found it to the object as it left it, none to one rolled back (generated chains)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            edits: fc.array(fc.tuple(fc.nat(MOVING_EDITS.length - 1), fc.string({ maxLength: 4 })), {
              maxLength: 3,
            }),
            rolledBack: fc.boolean(),
          }),
          { minLength: 1, maxLength: 5 },
        ),
        (steps) => {
          const original = pod();
          const { patches, states } = runSteps(
            original,
            ...steps.map(({ edits, rolledBack }) => (view: Doc) => {
              for (const [edit, value] of edits) MOVING_EDITS[edit]!(view, value);
              return !rolledBack;
            }),
          );
          patches.forEach((patch, i) => {
            if (steps[i]!.rolledBack) assert.deepEqual(patch, [], `step-${i} was rolled back`);
            assert.deepEqual(applyPatch(states[i]!, patch), states[i + 1], `step-${i}`);
          });
          assert.deepEqual(original, pod(), 'the request object is never modified');
        },
      ),
      { numRuns: 500, seed: 20261129 },
    );
  });
});
