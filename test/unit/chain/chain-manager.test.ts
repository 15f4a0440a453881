import assert from 'node:assert/strict';
import { createLogger } from '../../../server/base/log.js';
import type { Chain } from '../../../server/chain/chain.js';
import { createChainManager } from '../../../server/chain/chain-manager.js';
import { parseConfigText } from '../../../server/config/load.js';
import type { NativePoliciesEntry } from '../../../server/config/types.js';
import { nativeStepsOf } from '../../../server/native-policy/native-steps.js';
import { readPolicySet } from '../../../server/native-policy/read-objects.js';
import type { StepSource } from '../../../server/steps/step-source.js';
import type { Step } from '../../../server/steps/step.js';

const config = parseConfigText(
  'chain:\n  - admissionPolicies: first\n    fromCluster: true\n  - admissionPolicies: second\n    fromCluster: true\n',
  'gateway.yaml',
  '/etc/gateway',
);
const [first, second] = config.chain as NativePoliciesEntry[];

/** The steps of `entry` for a ValidatingAdmissionPolicy per name, each with a binding of the same name. */
function stepsOf(entry: NativePoliciesEntry, ...names: string[]): Step[] {
  const documents = names.flatMap((name) => [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name },
      spec: {
        matchConstraints: {
          resourceRules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }],
        },
        validations: [{ expression: 'true' }],
      },
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name },
      spec: { policyName: name, validationActions: ['Deny'] },
    },
  ]);
  return nativeStepsOf(
    entry,
    readPolicySet(documents.map((value) => ({ file: 'memory', value, locate: () => undefined }))),
  );
}

describe('createChainManager(): the steps of entries that change at run time', function () {
  it('swaps an entry’s steps whole, keeps the others, and ignores an entry it does not own', function () {
    const chains: Chain[] = [];
    const manager = createChainManager<StepSource>({
      pluginSteps: [],
      entrySteps: new Map([
        ['first', stepsOf(first!, 'a')],
        ['second', stepsOf(second!, 'z')],
      ]),
      createRuntime: () => Promise.reject(new Error('no providers here')),
      onChain: (chain) => chains.push(chain),
      log: createLogger('silent'),
    });
    const names = () =>
      manager
        .current()
        .stepsOf('validate')
        .map((s) => s.name);
    assert.deepEqual(names(), ['first/a/a', 'second/z/z']);
    manager.setEntrySteps('first', stepsOf(first!, 'b', 'c'));
    assert.deepEqual(names(), ['first/b/b', 'first/c/c', 'second/z/z']);
    manager.setEntrySteps('unknown', stepsOf(first!, 'd'));
    manager.setEntrySteps('second', []);
    assert.deepEqual(names(), ['first/b/b', 'first/c/c']);
    assert.deepEqual(
      chains.map((c) => c.summary()),
      ['mutate=[] validate=[first/b/b,first/c/c,second/z/z]', 'mutate=[] validate=[first/b/b,first/c/c]'],
    );
  });
});
