import assert from 'node:assert/strict';
import type { AdmissionRequest } from '../../../server/admission/types.js';
import { buildPluginEntries, createChain, type Chain } from '../../../server/chain/chain.js';
import { parseExtensionReferences, NO_REFERENCES } from '../../../server/extensions/extension-references.js';
import { createPluginRegistry } from '../../../server/chain/plugin-registry.js';
import {
  namespaceOfReferences,
  objectReferenceValue,
  resolveReferences,
  whyNotApplies,
  type ResolvedReferences,
} from '../../../server/extensions/review-references.js';
import { parseConfigText } from '../../../server/config/load.js';
import { allow, definePlugin } from '../../../server/plugin-api/index.js';
import { namespaceCreate, podCreate, podDelete, podUpdate, requestOf } from '../../fixtures/reviews/index.js';

const everything = { rules: [{ operations: ['*' as const], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] };
const mutator = definePlugin({ name: 'mutator', match: everything, setup: () => ({ mutate: () => undefined }) });
const validator = definePlugin({ name: 'validator', match: everything, setup: () => ({ validate: () => allow() }) });
const guard = definePlugin({
  name: 'guard',
  match: everything,
  authorizeMatch: { verbs: ['get'], apiGroups: [''], resources: ['secrets'] },
  setup: () => ({ authorize: () => undefined }),
});

/**
 * scanner-a and scanner-b (conflict group scanners) and labels are OptIn mutators; audit is an OptIn
 * validator of Deployments only, team-only one of namespaces labelled team=yes; defaults runs always; guard
 * has an authorize step only; policy-a and policy-b (conflict group policies) are OptIn validators.
 */
const CHAIN = `
chain:
  - { plugin: mutator, name: labels, attach: OptIn }
  - { plugin: mutator, name: scanner-a, attach: OptIn, conflictGroup: scanners }
  - { plugin: mutator, name: scanner-b, attach: OptIn, conflictGroup: scanners }
  - plugin: validator
    name: audit
    attach: OptIn
    match: { rules: [{ operations: [CREATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments] }] }
  - plugin: validator
    name: team-only
    attach: OptIn
    match:
      rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }]
      namespaceSelector: { matchLabels: { team: 'yes' } }
  - { plugin: mutator, name: defaults }
  - { plugin: guard, name: guard }
  - { plugin: validator, name: policy-a, attach: OptIn, conflictGroup: policies }
  - { plugin: validator, name: policy-b, attach: OptIn, conflictGroup: policies }
`;

function chainOf(yaml: string): Chain {
  const config = parseConfigText(yaml, 'gateway.yaml', '/');
  const built = buildPluginEntries(config.chain, createPluginRegistry([mutator, validator, guard]), config.file);
  return createChain(built.steps, built.authorize);
}

const chain = chainOf(CHAIN);

/** The request with the object's (or, on DELETE, the old object's) annotation set to `value`. */
function referencing(request: AdmissionRequest, value: string | undefined): AdmissionRequest {
  const object = request.object ?? request.oldObject;
  if (value !== undefined) (object!.metadata ??= {}).annotations = { 'admissiongateway.io/extensions': value };
  return request;
}

function resolve(
  request: AdmissionRequest,
  objectValue: string | undefined,
  namespaceValue?: string,
  { warn = true, labels = {}, unchanged }: { warn?: boolean; labels?: Record<string, string>; unchanged?: string } = {},
): ResolvedReferences {
  const withReferences = referencing(request, objectValue);
  return resolveReferences({
    request: withReferences,
    chain: chain.extensions,
    sources: {
      object: parseExtensionReferences(objectReferenceValue(withReferences)),
      unchanged: unchanged === undefined ? undefined : parseExtensionReferences(unchanged),
      namespaceName: namespaceOfReferences(withReferences),
      namespace: namespaceValue === undefined ? NO_REFERENCES : parseExtensionReferences(namespaceValue),
    },
    namespaceLabels: labels,
    warn,
  });
}

const podCreateRequest = () => requestOf(podCreate());

describe('the references of a review (review-references.ts)', () => {
  describe('what runs', () => {
    it('references what the object and its namespace name, entries of the chain only', () => {
      const resolved = resolve(podCreateRequest(), 'labels, nope', 'scanner-a');
      assert.deepEqual([...resolved.referenced].sort(), ['labels', 'scanner-a']);
      assert.equal(resolved.refusal, undefined);
    });

    it("reads a DELETE's references from the old object, a Namespace's own annotation as the object's", () => {
      assert.equal(objectReferenceValue(referencing(requestOf(podDelete()), 'labels')), 'labels');
      const namespace = requestOf(namespaceCreate());
      assert.equal(namespaceOfReferences(namespace), undefined);
      assert.equal(namespaceOfReferences(podCreateRequest()), 'team-a');
    });

    it("lets the object's choice in a conflict group win over its namespace's, and says so", () => {
      const resolved = resolve(podCreateRequest(), 'scanner-a', 'scanner-b,labels');
      assert.deepEqual([...resolved.referenced].sort(), ['labels', 'scanner-a']);
      assert.equal(resolved.refusal, undefined);
      assert.deepEqual(resolved.warnings, [
        'namespace "team-a" references "scanner-b", which is not applied: the object references "scanner-a" of ' +
          'the same conflict group "scanners", and the object\'s choice wins',
      ]);
    });
  });

  describe('conflict groups', () => {
    it('refuses a write whose object names two entries of one group, with code 400 and what to do', () => {
      const resolved = resolve(podCreateRequest(), 'scanner-a,labels,scanner-b');
      assert.deepEqual(resolved.refusal, {
        allowed: false,
        code: 400,
        message:
          'the object\'s annotation admissiongateway.io/extensions references "scanner-a" and "scanner-b", both ' +
          'of conflict group "scanners", and one object may use only one entry of a conflict group: keep one of ' +
          "them in the object's admissiongateway.io/extensions",
      });
    });

    it('refuses one whose namespace names two, unless the object names the one to use', () => {
      assert.equal(
        resolve(podCreateRequest(), undefined, 'scanner-a,scanner-b').refusal?.message,
        'the annotation admissiongateway.io/extensions of namespace "team-a" references "scanner-a" and ' +
          '"scanner-b", both of conflict group "scanners", and one object may use only one entry of a conflict ' +
          "group: keep one of them in the namespace's admissiongateway.io/extensions, or name the one to use in " +
          "the object's own",
      );
      const chosen = resolve(podCreateRequest(), 'scanner-b', 'scanner-a,scanner-b');
      assert.equal(chosen.refusal, undefined);
      assert.deepEqual([...chosen.referenced], ['scanner-b']);
    });

    it('never keeps an object from going away: a DELETE or an object being deleted runs neither, with a warning', () => {
      const deleted = resolve(requestOf(podDelete()), 'policy-a,policy-b');
      assert.equal(deleted.refusal, undefined);
      const reason = 'conflict group "policies": the object references "policy-a" and "policy-b"';
      assert.deepEqual(
        [...deleted.setAside],
        [
          ['policy-a', reason],
          ['policy-b', reason],
        ],
      );
      assert.deepEqual(deleted.warnings, [
        'the object references "policy-a" and "policy-b", both of conflict group "policies": none of them runs for a DELETE',
      ]);

      const finalizing = requestOf(podUpdate());
      finalizing.object!.metadata!.deletionTimestamp = '2026-11-25T10:00:00Z';
      const update = resolve(finalizing, 'scanner-a,scanner-b');
      assert.equal(update.refusal, undefined);
      assert.match(update.warnings[0] ?? '', /none of them runs for an object being deleted$/);
    });

    it('refuses nothing when neither entry applies to the request (nothing of theirs would run)', () => {
      const chainWithDeploymentScanners = chainOf(`
chain:
  - plugin: mutator
    name: dep-a
    attach: OptIn
    conflictGroup: g
    match: { rules: [{ operations: [CREATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments] }] }
  - plugin: mutator
    name: dep-b
    attach: OptIn
    conflictGroup: g
    match: { rules: [{ operations: [CREATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments] }] }
`);
      const resolved = resolveReferences({
        request: podCreateRequest(),
        chain: chainWithDeploymentScanners.extensions,
        sources: { object: NO_REFERENCES, namespaceName: 'team-a', namespace: parseExtensionReferences('dep-a,dep-b') },
        namespaceLabels: undefined,
        warn: true,
      });
      assert.equal(resolved.refusal, undefined);
      assert.deepEqual(resolved.warnings, [], "a namespace's reference that does not apply to a Pod is no news");
    });

    it('still refuses when asked for no warnings (a route that does not give them)', () => {
      const resolved = resolve(podCreateRequest(), 'scanner-a,scanner-b', undefined, { warn: false });
      assert.equal(resolved.refusal?.code, 400);
      assert.deepEqual(resolved.warnings, []);
    });
  });

  describe('warnings: never a silent no-op', () => {
    it('names an unknown name with the closest entry, the first four of a source, and counts the rest', () => {
      const resolved = resolve(podCreateRequest(), 'lables,x1,x2,x3,x4,x5');
      assert.deepEqual(resolved.warnings, [
        'the object references "lables", which is no entry of the gateway\'s chain (did you mean "labels"?): nothing runs for it',
        'the object references "x1", which is no entry of the gateway\'s chain: nothing runs for it',
        'the object references "x2", which is no entry of the gateway\'s chain: nothing runs for it',
        'the object references "x3", which is no entry of the gateway\'s chain: nothing runs for it',
        "the object references 2 more names that are no entry of the gateway's chain: nothing runs for them",
      ]);
    });

    it("quotes what cannot be read as names, at most five, the namespace's too", () => {
      const resolved = resolve(podCreateRequest(), 'A,B,C,D,E,F,G', 'Labels');
      assert.deepEqual(resolved.warnings, [
        'the object\'s annotation holds what cannot be read as entry names, ignored: "A", "B", "C", "D", "E" ' +
          '(and 2 more); it is read as at most 16 comma-separated names of lower-case letters, digits and "-"',
        'the annotation of namespace "team-a" holds what cannot be read as entry names, ignored: "Labels"; it is ' +
          'read as at most 16 comma-separated names of lower-case letters, digits and "-"',
      ]);
    });

    it('tells that an entry with only an authorize step takes part in no admission', () => {
      assert.deepEqual(resolve(podCreateRequest(), 'guard').warnings, [
        'the object references "guard", which has no mutate or validate step: it takes part in no admission',
      ]);
    });

    it("says in words why an object's reference does not apply, and that one to an Always entry changes nothing", () => {
      assert.deepEqual(resolve(podCreateRequest(), 'audit,team-only,defaults', undefined, { labels: {} }).warnings, [
        'the object references "audit", which does not apply to this request: its rules do not select CREATE of v1 pods',
        'the object references "team-only", which does not apply to this request: its namespaceSelector does not ' +
          'select namespace "team-a"',
        'the object references "defaults", which runs for every request it matches (attach: Always): the reference ' +
          'changes nothing',
      ]);
      assert.deepEqual(resolve(podCreateRequest(), 'team-only', undefined, { labels: { team: 'yes' } }).warnings, []);
      assert.deepEqual(resolve(requestOf(podUpdate()), 'audit,labels', undefined, { unchanged: 'labels' }).warnings, [
        'the object references "audit", which does not apply to this request: its rules do not select UPDATE of v1 pods',
      ]);
    });

    it('tells that when the reference is written, not on every later UPDATE nor on a DELETE', () => {
      assert.deepEqual(
        resolve(requestOf(podUpdate()), 'audit,defaults', undefined, { unchanged: 'audit,defaults' }).warnings,
        [],
      );
      assert.deepEqual(resolve(requestOf(podDelete()), 'labels,defaults').warnings, []);
      // A name that can never work is told whenever it is read.
      assert.deepEqual(resolve(requestOf(podDelete()), 'nope').warnings, [
        'the object references "nope", which is no entry of the gateway\'s chain: nothing runs for it',
      ]);
    });

    it("says nothing of a namespace's references that are entries, whether or not they apply", () => {
      assert.deepEqual(resolve(podCreateRequest(), undefined, 'audit,defaults,labels').warnings, []);
    });

    it('computes none when asked for none', () => {
      assert.deepEqual(resolve(podCreateRequest(), 'nope,Bad', 'nope', { warn: false }).warnings, []);
    });
  });

  describe('whyNotApplies()', () => {
    it("gives each of an extension's reasons once, and nothing when one of its steps applies", () => {
      const twoPhases = chainOf(`
chain:
  - plugin: mutator
    name: m
    match: { rules: [{ operations: [CREATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments] }] }
  - plugin: validator
    name: m2
    match:
      rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }]
      objectSelector: { matchLabels: { scanned: 'yes' } }
`).extensions;
      const dryRun = { ...podCreateRequest(), dryRun: true };
      assert.equal(whyNotApplies(twoPhases.get('m')!, dryRun, undefined), 'its rules do not select CREATE of v1 pods');
      assert.equal(
        whyNotApplies(twoPhases.get('m2')!, podCreateRequest(), undefined),
        "its objectSelector does not select the object's labels",
      );
      assert.equal(whyNotApplies(chain.extensions.get('labels')!, podCreateRequest(), undefined), undefined);
    });
  });
});
