import assert from 'node:assert/strict';
import {
  describeRequest,
  diffAnswers,
  renderReport,
  summarise,
  type ReviewDifference,
} from '../../../server/recording/review-diff.js';
import { deploymentCreate, requestOf } from '../../fixtures/reviews/index.js';

const label = (key: string, value: string) => ({ op: 'add' as const, path: `/metadata/labels/${key}`, value });

describe('diffAnswers()', () => {
  it('says nothing of the same answer, patch operations compared as JSON whatever their key order', () => {
    assert.deepEqual(
      diffAnswers(
        { allowed: true, patch: [{ op: 'add', path: '/a', value: { x: 1, y: [2] } }], warnings: ['w'] },
        { allowed: true, patch: [{ value: { y: [2], x: 1 }, path: '/a', op: 'add' }], warnings: ['w'] },
      ),
      [],
    );
  });

  it('a newly denied review carries the new message and code; its warnings are not compared', () => {
    assert.deepEqual(
      diffAnswers(
        { allowed: true, warnings: ['require-labels: missing (mode warn: not enforced)'] },
        { allowed: false, code: 403, message: 'require-labels: missing' },
      ),
      [{ kind: 'newly_denied', code: 403, message: 'require-labels: missing' }],
    );
  });

  it('a newly allowed review says what it was denied with', () => {
    assert.deepEqual(
      diffAnswers({ allowed: false, code: 403, message: 'no' }, { allowed: true, patch: [label('a', '1')] }),
      [{ kind: 'newly_allowed', was: 'no' }],
    );
  });

  it('lists the operations added and removed, and the warnings added and removed', () => {
    assert.deepEqual(
      diffAnswers(
        { allowed: true, patch: [label('owner', 'a'), label('tier', 'web')], warnings: ['old', 'kept'] },
        { allowed: true, patch: [label('owner', 'b'), label('tier', 'web')], warnings: ['kept', 'new'] },
      ),
      [
        { kind: 'patch_changed', added: [label('owner', 'b')], removed: [label('owner', 'a')] },
        { kind: 'warnings_changed', added: ['new'], removed: ['old'] },
      ],
    );
  });

  it('compares no patch of two denials', () => {
    assert.deepEqual(diffAnswers({ allowed: false, message: 'a' }, { allowed: false, message: 'b' }), []);
  });
});

describe('renderReport()', () => {
  it('prints the summary, then each kind of change with its reviews, then the steps not recorded', () => {
    const differences: ReviewDifference[] = [
      {
        line: 2,
        route: 'validate',
        uid: 'u2',
        request: 'CREATE Pod team-a/bare',
        changes: [{ kind: 'newly_denied', code: 403, message: 'require-labels: missing required label: team' }],
      },
      {
        line: 5,
        route: 'mutate',
        uid: 'u5',
        request: 'CREATE Deployment.apps team-a/checkout',
        changes: [
          { kind: 'patch_changed', added: [label('tier', 'web')], removed: [{ op: 'remove', path: '/spec/replicas' }] },
          { kind: 'warnings_changed', added: ['w: new'], removed: [] },
        ],
      },
      {
        line: 7,
        route: 'validate/fail',
        uid: 'u7',
        request: 'DELETE ConfigMap x/y',
        changes: [{ kind: 'newly_allowed', was: 'no' }],
      },
    ];
    const text = renderReport({
      recording: 'rec.ndjson',
      config: 'candidate.yaml',
      offline: true,
      reviews: 9,
      summary: summarise(9, differences),
      differences,
      notRecorded: [{ step: 'checker', lines: [2, 3] }],
    });
    assert.equal(
      text,
      `replayed 9 reviews of rec.ndjson on candidate.yaml (offline: providers answered from the recording)
1 newly denied, 1 newly allowed, 1 with the patch changed, 1 with the warnings changed, 6 unchanged

newly denied:
  line 2: CREATE Pod team-a/bare (validate)
    require-labels: missing required label: team

newly allowed:
  line 7: DELETE ConfigMap x/y (validate/fail)
    was denied: no

with the patch changed:
  line 5: CREATE Deployment.apps team-a/checkout (mutate)
    + add /metadata/labels/tier "web"
    - remove /spec/replicas

with the warnings changed:
  line 5: CREATE Deployment.apps team-a/checkout (mutate)
    + w: new

not recorded (offline: these provider steps allowed):
  checker: lines 2, 3
`,
    );
  });

  it('names a request by operation, kind with its group, namespace and name', () => {
    assert.equal(describeRequest(requestOf(deploymentCreate())), 'CREATE Deployment.apps team-a/checkout');
  });
});
