import assert from 'node:assert/strict';
import { replayExitCode } from '../../../server/commands/replay.js';
import { EXIT_CHANGED, EXIT_DENIED } from '../../../server/commands/usage.js';
import {
  describeRequest,
  diffAnswers,
  renderReport,
  summarise,
  type ReplayReport,
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

  it('a review denied both times for more or other reasons is a changed denial with both messages', () => {
    const was = 'require-labels: missing required label: team';
    const now = `${was}; pod-security: spec.containers[0]: must run as non-root`;
    assert.deepEqual(
      diffAnswers(
        { allowed: false, code: 403, message: was, warnings: ['pod-security: must run as non-root (mode warn)'] },
        { allowed: false, code: 403, message: now },
      ),
      [
        { kind: 'denial_changed', was, wasCode: 403, message: now, code: 403 },
        { kind: 'warnings_changed', added: [], removed: ['pod-security: must run as non-root (mode warn)'] },
      ],
    );
  });

  it('a denial with the same message and another code is a changed denial', () => {
    assert.deepEqual(
      diffAnswers({ allowed: false, code: 403, message: 'no' }, { allowed: false, code: 500, message: 'no' }),
      [{ kind: 'denial_changed', was: 'no', wasCode: 403, message: 'no', code: 500 }],
    );
  });

  it('compares no patch of two denials with the same message and code', () => {
    assert.deepEqual(
      diffAnswers(
        { allowed: false, code: 403, message: 'a', patch: [label('a', '1')] },
        { allowed: false, code: 403, message: 'a', patch: [label('b', '2')] },
      ),
      [],
    );
  });
});

describe('replayExitCode()', () => {
  const report = (changes: ReviewDifference['changes']): ReplayReport => {
    const differences = [{ line: 1, route: 'validate', uid: 'u', request: 'CREATE Pod a/b', changes }];
    return {
      recording: 'r',
      config: 'c',
      offline: false,
      reviews: 2,
      summary: summarise(2, differences),
      differences,
      notRecorded: [],
    };
  };

  it('counts a changed denial as a review answered differently (4), a new denial as newly denied (3)', () => {
    const changed = report([{ kind: 'denial_changed', was: 'a', message: 'a; b' }]);
    const denied = report([{ kind: 'newly_denied', message: 'b' }]);
    assert.deepEqual(
      [replayExitCode(changed, true), replayExitCode(denied, true), replayExitCode(changed, false)],
      [EXIT_CHANGED, EXIT_DENIED, 0],
    );
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
      {
        line: 8,
        route: 'validate',
        uid: 'u8',
        request: 'CREATE Pod team-a/web',
        changes: [
          { kind: 'denial_changed', was: 'a: no', wasCode: 403, message: 'a: no; b: no', code: 403 },
          { kind: 'warnings_changed', added: [], removed: ['b: no (mode warn: not enforced)'] },
        ],
      },
      {
        line: 9,
        route: 'validate',
        uid: 'u9',
        request: 'CREATE Pod team-a/api',
        changes: [{ kind: 'denial_changed', was: 'a: no', wasCode: 403, message: 'a: failed', code: 500 }],
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
1 newly denied, 1 newly allowed, 2 with the denial changed, 1 with the patch changed, 2 with the warnings changed, 4 unchanged

newly denied:
  line 2: CREATE Pod team-a/bare (validate)
    require-labels: missing required label: team

newly allowed:
  line 7: DELETE ConfigMap x/y (validate/fail)
    was denied: no

with the denial changed:
  line 8: CREATE Pod team-a/web (validate)
    was: a: no
    now: a: no; b: no
  line 9: CREATE Pod team-a/api (validate)
    was: a: no (code 403)
    now: a: failed (code 500)

with the patch changed:
  line 5: CREATE Deployment.apps team-a/checkout (mutate)
    + add /metadata/labels/tier "web"
    - remove /spec/replicas

with the warnings changed:
  line 5: CREATE Deployment.apps team-a/checkout (mutate)
    + w: new
  line 8: CREATE Pod team-a/web (validate)
    - b: no (mode warn: not enforced)

not recorded (offline: these provider steps allowed):
  checker: lines 2, 3
`,
    );
  });

  it('names a request by operation, kind with its group, namespace and name', () => {
    assert.equal(describeRequest(requestOf(deploymentCreate())), 'CREATE Deployment.apps team-a/checkout');
  });
});
