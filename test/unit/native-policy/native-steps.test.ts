import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseConfigText } from '../../../server/config/load.js';
import type { NativePoliciesEntry } from '../../../server/config/types.js';
import { buildNativeSteps } from '../../../server/native-policy/native-steps.js';
import type { Step } from '../../../server/steps/step.js';

const POLICY = (expression: string) => `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: p
spec:
  matchConstraints:
    resourceRules:
      - { operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] }
  validations:
    - expression: ${expression}
`;

const BINDING = (actions: string) => `---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: { name: b }
spec: { policyName: p, validationActions: ${actions} }
`;

describe('admissionPolicies entries: what their files may hold', function () {
  let dir: string;

  beforeEach(async function () {
    dir = await mkdtemp(path.join(os.tmpdir(), 'native-steps-'));
  });

  afterEach(async function () {
    await rm(dir, { recursive: true, force: true });
  });

  /** The steps of an entry reading `text` from dir/policies.yaml. */
  async function steps(text: string): Promise<Step[]> {
    await writeFile(path.join(dir, 'policies.yaml'), text);
    const config = parseConfigText(
      'chain:\n  - admissionPolicies: native\n    files: [policies.yaml]\n    timeoutSeconds: 3\n',
      path.join(dir, 'gateway.yaml'),
      dir,
    );
    return buildNativeSteps(config.chain[0] as NativePoliciesEntry, config.file);
  }

  /** Where `/chain` says a policy or binding of dir/policies.yaml came from. */
  const fromFile = () => ({ source: 'file', file: path.join(dir, 'policies.yaml') });

  /** The steps' names and modes, or the error's message. */
  async function build(text: string): Promise<string> {
    try {
      return (await steps(text)).map((s) => `${s.name} ${s.mode}`).join(', ');
    } catch (err) {
      return (err as Error).message.replace(`${dir}/`, '');
    }
  }

  it('makes one step per binding, its mode from the binding’s validationActions', async function () {
    assert.equal(await build(POLICY("object.metadata.name != 'x'") + BINDING('[Warn, Audit]')), 'native/p/b warn');
  });

  it('shows a step in /chain with its policy, binding and placement', async function () {
    const policy = POLICY("object.metadata.name != 'x'").replace(
      '  validations:',
      '  matchConditions:\n    - { name: named, expression: "has(object.metadata.name)" }\n  validations:',
    );
    const [step] = await steps(policy + BINDING('[Deny, Audit]'));
    assert.deepEqual(step?.describe(), {
      name: 'native/p/b',
      source: 'admissionPolicies',
      admissionPolicies: 'native',
      policy: 'p',
      binding: 'b',
      origin: { policy: fromFile(), binding: fromFile() },
      validationActions: ['Deny', 'Audit'],
      phase: 'validate',
      order: 10,
      mode: 'enforce',
      failurePolicy: 'Fail',
      timeoutSeconds: 3,
      sideEffects: 'None',
      reinvocationPolicy: 'Never',
      match: { rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }] },
      matchConditions: [{ name: 'named', expression: 'has(object.metadata.name)' }],
      validations: 1,
    });
  });

  it('refuses an expression that does not compile, naming the policy file, line and field', async function () {
    assert.equal(
      await build(POLICY("object.metadata.name.nope('x')") + BINDING('[Deny]')),
      "policies.yaml:10:7: spec.validations[0].expression: found no matching overload for 'dyn.nope(string)' (at column 1 of the expression)",
    );
  });

  it('refuses a binding with both Deny and Warn, as the apiserver does', async function () {
    assert.match(
      await build(POLICY('1 == 1') + BINDING('[Deny, Warn]')),
      /^policies\.yaml:\d+:\d+: spec\.validationActions: must not contain both Deny and Warn/,
    );
  });

  /** A MutatingAdmissionPolicy of `version` with `spec` lines after its matchConstraints, and its binding. */
  const MUTATING = (
    version: string,
    spec: string,
    operations = '[CREATE]',
  ) => `apiVersion: admissionregistration.k8s.io/${version}
kind: MutatingAdmissionPolicy
metadata: { name: m }
spec:
  matchConstraints:
    resourceRules:
      - { operations: ${operations}, apiGroups: [''], apiVersions: [v1], resources: [pods] }
${spec}---
apiVersion: admissionregistration.k8s.io/${version}
kind: MutatingAdmissionPolicyBinding
metadata: { name: mb }
spec: { policyName: m }
`;
  const MUTATIONS = `  reinvocationPolicy: IfNeeded
  mutations:
    - patchType: ApplyConfiguration
      applyConfiguration: { expression: 'Object{metadata: Object.metadata{labels: {"a": "b"}}}' }
`;

  it('makes a mutate step of each MutatingAdmissionPolicy binding, v1 and v1beta1, before the validate steps', async function () {
    const both = MUTATING('v1beta1', MUTATIONS) + '---\n' + POLICY('1 == 1') + BINDING('[Deny]');
    assert.deepEqual(
      (await steps(both)).map((s) => `${s.name} ${s.phase} ${s.reinvocationPolicy}`),
      ['native/m/mb mutate IfNeeded', 'native/p/b validate Never'],
    );
    const [step] = await steps(MUTATING('v1', MUTATIONS));
    assert.deepEqual(step?.describe(), {
      name: 'native/m/mb',
      source: 'admissionPolicies',
      admissionPolicies: 'native',
      policy: 'm',
      binding: 'mb',
      origin: { policy: fromFile(), binding: fromFile() },
      phase: 'mutate',
      order: 10,
      mode: 'enforce',
      failurePolicy: 'Fail',
      timeoutSeconds: 3,
      sideEffects: 'None',
      reinvocationPolicy: 'IfNeeded',
      match: { rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }] },
      mutations: ['ApplyConfiguration'],
    });
  });

  it('refuses a MutatingAdmissionPolicy as the apiserver does: without mutations, reinvocationPolicy, or for DELETE', async function () {
    assert.match(
      await build(MUTATING('v1', '  reinvocationPolicy: Never\n')),
      /^policies\.yaml:\d+:\d+: spec\.mutations: is required \(at least one mutation\)/,
    );
    assert.match(
      await build(MUTATING('v1', MUTATIONS.replace('  reinvocationPolicy: IfNeeded\n', ''))),
      /^policies\.yaml:\d+:\d+: spec\.reinvocationPolicy: is required \(Never or IfNeeded\)/,
    );
    assert.match(
      await build(MUTATING('v1', MUTATIONS, '[CREATE, DELETE]')),
      /^policies\.yaml:7:\d+: spec\.matchConstraints\.resourceRules\[0\]\.operations\[1\]: expected one of \*, CREATE, UPDATE/,
    );
    assert.match(
      await build(
        MUTATING('v1', MUTATIONS).replace(
          'spec: { policyName: m }',
          'spec: { policyName: m, validationActions: [Deny] }',
        ),
      ),
      /^policies\.yaml:\d+:\d+: spec\.validationActions: unknown field/,
    );
  });

  it('takes fromCluster: true, with or without files, and still wants files without it', function () {
    const entry = (fields: string) =>
      parseConfigText(`chain:\n  - admissionPolicies: native\n${fields}`, 'gateway.yaml', dir).chain[0];
    assert.deepEqual(
      [entry('    fromCluster: true\n'), entry('    files: [p]\n    fromCluster: true\n')].map((e) =>
        e?.kind === 'admissionPolicies' ? [e.fromCluster, e.files] : e,
      ),
      [
        [true, []],
        [true, [path.join(dir, 'p')]],
      ],
    );
    assert.throws(
      () => entry('    fromCluster: false\n'),
      /gateway\.yaml:2:5: chain\[0\]\.files: expected the YAML files or folders that hold the policies \(or fromCluster: true\)/,
    );
  });
});
