import assert from 'node:assert/strict';
import { resolveProvider, type AdmissionProvider } from '../../../server/kube/admission-provider.js';
import {
  GATEWAY_FIELD_MANAGER,
  REFERENCED_FINALIZER,
  decideFinalizer,
  finalizerFacts,
  forceDeleteRequested,
  ownsFinalizer,
  type FinalizerFacts,
} from '../../../server/kube/provider-finalizer.js';

const facts = (change: Partial<FinalizerFacts>): FinalizerFacts => ({
  optIn: true,
  referenced: 2,
  forced: false,
  deleting: false,
  present: false,
  owned: false,
  ...change,
});

describe('decideFinalizer() (admissiongateway.io/referenced)', () => {
  it('sets the finalizer on an opt-in provider namespaces reference, once', () => {
    assert.deepEqual(decideFinalizer(facts({})), { action: 'add', held: false, forcedRelease: false });
    assert.deepEqual(decideFinalizer(facts({ present: true, owned: true })), {
      action: 'none',
      held: false,
      forcedRelease: false,
    });
  });

  it('holds a deletion while namespaces reference it, and gives the finalizer up when the last reference goes', () => {
    assert.deepEqual(decideFinalizer(facts({ deleting: true, present: true, owned: true })), {
      action: 'none',
      held: true,
      forcedRelease: false,
    });
    assert.deepEqual(decideFinalizer(facts({ referenced: 0, deleting: true, present: true, owned: true })), {
      action: 'remove',
      held: false,
      forcedRelease: false,
    });
  });

  it('gives the finalizer up at once with the force annotation, saying so', () => {
    assert.deepEqual(decideFinalizer(facts({ forced: true, deleting: true, present: true, owned: true })), {
      action: 'remove',
      held: false,
      forcedRelease: true,
    });
    assert.equal(decideFinalizer(facts({ forced: true })).action, 'none', 'and never sets it while annotated');
  });

  it('gives it up when the provider is no longer opt-in or no longer referenced', () => {
    assert.equal(decideFinalizer(facts({ optIn: false, present: true, owned: true })).action, 'remove');
    assert.equal(decideFinalizer(facts({ referenced: 0, present: true, owned: true })).action, 'remove');
    assert.equal(decideFinalizer(facts({ optIn: false })).action, 'none', 'an Always provider never gets it');
  });

  it("adds nothing to a provider being deleted, and never removes someone else's finalizer of the same name", () => {
    assert.deepEqual(decideFinalizer(facts({ deleting: true })), { action: 'none', held: false, forcedRelease: false });
    assert.equal(decideFinalizer(facts({ referenced: 0, present: true, owned: false })).action, 'none');
  });
});

const provider = (metadata: Partial<AdmissionProvider['metadata']>): AdmissionProvider => ({
  metadata: { name: 'scanner', ...metadata },
});

describe('ownsFinalizer() and forceDeleteRequested()', () => {
  const applied = (manager: string, operation: string, finalizer = REFERENCED_FINALIZER) => ({
    manager,
    operation,
    fieldsV1: { 'f:metadata': { 'f:finalizers': { [`v:${JSON.stringify(finalizer)}`]: {} } } },
  });

  it("reads managedFields: the gateway's field manager applied the finalizer", () => {
    assert.ok(ownsFinalizer(provider({ managedFields: [applied(GATEWAY_FIELD_MANAGER, 'Apply')] })));
    assert.ok(!ownsFinalizer(provider({ managedFields: [applied('kubectl', 'Apply')] })));
    assert.ok(!ownsFinalizer(provider({ managedFields: [applied(GATEWAY_FIELD_MANAGER, 'Update')] })));
    assert.ok(!ownsFinalizer(provider({ managedFields: [applied(GATEWAY_FIELD_MANAGER, 'Apply', 'example.com/x')] })));
    assert.ok(!ownsFinalizer(provider({})));
    assert.ok(!ownsFinalizer(provider({ managedFields: [{ manager: GATEWAY_FIELD_MANAGER, operation: 'Apply' }] })));
  });

  it('takes only "true" as the force annotation', () => {
    assert.ok(forceDeleteRequested(provider({ annotations: { 'admissiongateway.io/force-delete': 'true' } })));
    assert.ok(!forceDeleteRequested(provider({ annotations: { 'admissiongateway.io/force-delete': 'yes' } })));
    assert.ok(!forceDeleteRequested(provider({})));
  });
});

describe('finalizerFacts() (what the decision reads of a provider)', () => {
  const referencing = { count: 2, first: ['team-a', 'team-b'] };
  const withSpec = (spec: unknown, metadata: Partial<AdmissionProvider['metadata']> = {}): AdmissionProvider => ({
    metadata: { name: 'scanner', ...metadata },
    spec,
  });
  const facts = (resource: AdmissionProvider, namespaces = referencing) =>
    finalizerFacts(resource, resolveProvider(resource, new Set()), namespaces);

  it('has none until the namespace cache synced: no finalizer is decided on counts not read yet', () => {
    const resource = withSpec({ url: 'https://scanner.example/', attach: 'OptIn' });
    assert.equal(finalizerFacts(resource, resolveProvider(resource, new Set()), undefined), undefined);
  });

  it('reads opt-in from the valid spec, and from the attach field as written while the spec is invalid', () => {
    assert.equal(facts(withSpec({ url: 'https://scanner.example/', attach: 'OptIn' }))?.optIn, true);
    assert.equal(facts(withSpec({ url: 'https://scanner.example/' }))?.optIn, false, 'Always by default');
    assert.equal(facts(withSpec({ url: 'http://not-https/', attach: 'OptIn' }))?.optIn, true, 'invalid spec');
    assert.equal(facts(withSpec({ url: 'http://not-https/', attach: 'optin' }))?.optIn, false);
  });

  it('reads the count, deletion, the force annotation and the finalizer from the resource', () => {
    const resource = withSpec(
      { url: 'https://scanner.example/', attach: 'OptIn' },
      {
        finalizers: ['example.com/other', REFERENCED_FINALIZER],
        annotations: { 'admissiongateway.io/force-delete': 'true' },
      },
    );
    (resource.metadata as Record<string, unknown>).deletionTimestamp = '2026-11-22T10:00:00Z';
    assert.deepEqual(facts(resource), {
      optIn: true,
      referenced: 2,
      forced: true,
      deleting: true,
      present: true,
      owned: false,
    });
  });
});
