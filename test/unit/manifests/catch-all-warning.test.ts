import assert from 'node:assert/strict';
import { catchAllFailWarnings, coversEveryResource } from '../../../server/manifests/catch-all-warning.js';
import type { RenderStep } from '../../../server/manifests/render.js';
import type { RuleWithOperations } from '../../../server/plugin-api/types.js';

const EVERYTHING: RuleWithOperations = {
  operations: ['CREATE', 'UPDATE'],
  apiGroups: ['*'],
  apiVersions: ['*'],
  resources: ['*'],
};
const PODS: RuleWithOperations = { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] };

function step(name: string, phase: RenderStep['phase'], policy: RenderStep['failurePolicy'], rule: RuleWithOperations) {
  const s: RenderStep = {
    name,
    phase,
    match: { rules: [rule] },
    failurePolicy: policy,
    timeoutMs: 10_000,
    sideEffects: 'None',
    reinvocationPolicy: 'Never',
  };
  return s;
}

const AVOID =
  '  To avoid it, give those steps failurePolicy: Ignore (or mode: warn), or narrow their match.rules to the ' +
  'resources they need (a provider without match sees every request)';

describe('catchAllFailWarnings()', () => {
  it('warns about a Fail mutating step that matches every resource, naming it for both', () => {
    const warnings = catchAllFailWarnings([step('default-labels', 'mutate', 'Fail', EVERYTHING)], false);

    assert.deepEqual(warnings, [
      'WARNING: mutate.admissiongateway.io (/mutate) is rendered failurePolicy Fail with rules that match every ' +
        'resource: while the gateway is unreachable, the apiserver refuses every CREATE/UPDATE of any resource in ' +
        'the namespaces it selects, and of any cluster-scoped resource (namespaceSelector does not filter those).\n' +
        '  failurePolicy Fail because of: default-labels\n' +
        "  every resource because of: default-labels (operations ['CREATE', 'UPDATE'], apiGroups ['*'], resources ['*'])\n" +
        `${AVOID}.`,
    ]);
  });

  it('names the step that makes the webhook Fail and the one that makes it match everything, when they differ', () => {
    const warnings = catchAllFailWarnings(
      [step('labels', 'mutate', 'Ignore', EVERYTHING), step('pod-defaults', 'mutate', 'Fail', PODS)],
      false,
    );

    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /^ {2}failurePolicy Fail because of: pod-defaults$/m);
    assert.match(warnings[0]!, /^ {2}every resource because of: labels \(operations/m);
  });

  it('warns about the validate-fail webhook of a provider left with the default match, and no cluster-scoped clause for Namespaced rules', () => {
    const provider = step('scanner', 'validate', 'Fail', {
      operations: ['*'],
      apiGroups: ['*'],
      apiVersions: ['*'],
      resources: ['*/*'],
      scope: 'Namespaced',
    });

    const [warning] = catchAllFailWarnings([provider], false);

    assert.ok(
      warning?.startsWith(
        'WARNING: validate-fail.admissiongateway.io (/validate/fail) is rendered failurePolicy Fail with rules that ' +
          'match every resource: while the gateway is unreachable, the apiserver refuses every ' +
          'CREATE/UPDATE/DELETE/CONNECT of any resource in the namespaces it selects.\n',
      ),
      warning,
    );
  });

  it('stays silent when the webhook is Ignore or its rules are narrow', () => {
    assert.deepEqual(
      catchAllFailWarnings(
        [
          step('labels', 'mutate', 'Ignore', EVERYTHING),
          step('pod-defaults', 'mutate', 'Ignore', PODS),
          step('require', 'validate', 'Ignore', EVERYTHING),
          step('pods-only', 'validate', 'Fail', PODS),
        ],
        false,
      ),
      [],
    );
  });

  it('with --all-resources, warns about the Fail route rendered for AdmissionProviders added at run time', () => {
    const warnings = catchAllFailWarnings([], true);

    assert.deepEqual(warnings, [
      'WARNING: validate-fail.admissiongateway.io (/validate/fail) is rendered failurePolicy Fail with rules that ' +
        'match every resource: while the gateway is unreachable, the apiserver refuses every ' +
        'CREATE/UPDATE/DELETE/CONNECT of any resource in the namespaces it selects, and of any cluster-scoped ' +
        'resource (namespaceSelector does not filter those).\n' +
        '  failurePolicy Fail because of: AdmissionProviders added at run time with failurePolicy Fail ' +
        '(--all-resources renders this route for them)\n' +
        '  every resource because of: --all-resources\n' +
        `${AVOID}, or render without --all-resources.`,
    ]);
  });
});

describe('coversEveryResource()', () => {
  it('is true for every group with `*` or `*/*`, and false otherwise', () => {
    assert.equal(coversEveryResource(EVERYTHING), true);
    assert.equal(coversEveryResource({ ...EVERYTHING, resources: ['*/*'] }), true);
    assert.equal(coversEveryResource({ ...EVERYTHING, resources: ['pods'] }), false);
    assert.equal(coversEveryResource({ ...EVERYTHING, apiGroups: ['', 'apps'] }), false);
    assert.equal(coversEveryResource({ ...EVERYTHING, resources: ['*/status'] }), false);
  });
});
