import assert from 'node:assert/strict';
import { resolveProvider, type AdmissionProvider } from '../../../server/kube/admission-provider.js';
import { desiredStatus, sameStatus } from '../../../server/kube/provider-status.js';
import type { ProviderStatus } from '../../../server/providers/provider-runtime.js';

const T0 = '2026-11-22T10:00:00.000Z';
const T1 = '2026-11-22T11:00:00.000Z';
const resource = (status?: AdmissionProvider['status']): AdmissionProvider => ({
  metadata: { name: 'scanner', generation: 2 },
  spec: { url: 'https://scanner.example/' },
  ...(status ? { status } : {}),
});
const ok = resolveProvider(resource(), new Set());
const running: ProviderStatus = {
  name: 'scanner',
  ready: true,
  discovered: undefined,
  handlers: [],
  breaker: 'closed',
  versions: [
    { step: 'scanner', phase: 'mutate', version: 'v1' },
    { step: 'scanner', phase: 'validate', version: 'v1' },
  ],
};

describe('desiredStatus()', () => {
  it('is Ready with a closed breaker for a running provider', () => {
    assert.deepEqual(desiredStatus(resource(), ok, running, T0), {
      observedGeneration: 2,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'InChain',
          message: 'the provider is part of the chain',
          lastTransitionTime: T0,
          observedGeneration: 2,
        },
        {
          type: 'Discovered',
          status: 'True',
          reason: 'NotRequired',
          message: 'discovery is off; the configured phases are served',
          lastTransitionTime: T0,
          observedGeneration: 2,
        },
        {
          type: 'CircuitOpen',
          status: 'False',
          reason: 'Closed',
          message: 'calls go to the provider',
          lastTransitionTime: T0,
          observedGeneration: 2,
        },
        {
          type: 'Deprecated',
          status: 'False',
          reason: 'CurrentVersions',
          message: 'calls are made in admission.k8s.io/v1',
          lastTransitionTime: T0,
          observedGeneration: 2,
        },
      ],
      handlers: [],
      breaker: 'closed',
    });
  });

  it('is Deprecated=True while a step is called in admission.k8s.io/v1beta1, naming the steps, until when it is spoken and what to do', () => {
    const discovered: ProviderStatus = {
      ...running,
      discovered: true,
      handlers: [
        { name: 'labels', phase: 'mutate', path: '/labels', apiVersion: 'admissiongateway.io/v1alpha1' },
        { name: 'scan', phase: 'validate', path: '/scan', apiVersion: 'admissiongateway.io/v1alpha1' },
      ],
      versions: [
        { step: 'labels.scanner', phase: 'mutate', version: 'v1beta1' },
        { step: 'scan.scanner', phase: 'validate', version: 'v1' },
      ],
    };
    const status = desiredStatus(resource(), ok, discovered, T0);
    assert.deepEqual(
      status.conditions!.find((c) => c.type === 'Deprecated'),
      {
        type: 'Deprecated',
        status: 'True',
        reason: 'DeprecatedVersion',
        message:
          'labels.scanner (mutate) called in admission.k8s.io/v1beta1 is deprecated since admission-gateway 0.1.0 ' +
          'and spoken until at least 0.4.0: serve admission.k8s.io/v1 and list v1 first in admissionReviewVersions',
        lastTransitionTime: T0,
        observedGeneration: 2,
      },
    );
    assert.deepEqual(status.handlers, [
      { name: 'labels', phase: 'mutate', path: '/labels', admissionReviewVersion: 'admission.k8s.io/v1beta1' },
      { name: 'scan', phase: 'validate', path: '/scan', admissionReviewVersion: 'admission.k8s.io/v1' },
    ]);
  });

  it('keeps lastTransitionTime while a condition keeps its status, so an unchanged provider is not rewritten', () => {
    const first = desiredStatus(resource(), ok, running, T0);
    const second = desiredStatus(resource(first), ok, running, T1);
    assert.ok(sameStatus(first, second));
  });

  it('moves lastTransitionTime when the breaker opens', () => {
    const first = desiredStatus(resource(), ok, running, T0);
    const opened = desiredStatus(resource(first), ok, { ...running, breaker: 'open' }, T1);
    const circuit = opened.conditions!.find((c) => c.type === 'CircuitOpen')!;
    assert.deepEqual([circuit.status, circuit.reason, circuit.lastTransitionTime], ['True', 'Open', T1]);
    assert.equal(opened.breaker, 'open');
    assert.equal(opened.conditions!.find((c) => c.type === 'Ready')!.lastTransitionTime, T0);
  });

  it('reports an invalid spec as Ready=False with its reason, saying the last valid spec keeps running', () => {
    const status = desiredStatus(
      resource(),
      { error: { reason: 'InvalidSpec', message: 'spec.caBundle: expected base64 of PEM certificates' } },
      running,
      T0,
    );
    assert.deepEqual(status.conditions![0], {
      type: 'Ready',
      status: 'False',
      reason: 'InvalidSpec',
      message: 'spec.caBundle: expected base64 of PEM certificates. The last valid spec keeps running.',
      lastTransitionTime: T0,
      observedGeneration: 2,
    });
    assert.equal(status.lastError, 'spec.caBundle: expected base64 of PEM certificates');
  });

  it('reports a provider that is not discovered yet', () => {
    const status = desiredStatus(
      resource(),
      ok,
      { ...running, ready: false, discovered: false, versions: [], lastError: 'answered HTTP 500' },
      T0,
    );
    assert.deepEqual(
      status.conditions!.map((c) => [c.type, c.status, c.reason, c.message]),
      [
        ['Ready', 'False', 'NotDiscovered', 'answered HTTP 500'],
        ['Discovered', 'False', 'DiscoveryFailed', 'answered HTTP 500'],
        ['CircuitOpen', 'False', 'Closed', 'calls go to the provider'],
        ['Deprecated', 'Unknown', 'NotDiscovered', 'the versions its handlers speak are known once discovery succeeds'],
      ],
    );
  });

  it('is Pending before the provider has a runtime', () => {
    const status = desiredStatus(resource(), ok, undefined, T0);
    assert.deepEqual(
      status.conditions!.map((c) => c.reason),
      ['Pending'],
    );
  });
});

describe('desiredStatus() references and deletion', () => {
  const referencing = { count: 3, first: ['team-a', 'team-b', 'team-c'] };

  it('writes how many namespaces reference the provider, and keeps the stored count until the namespace cache synced', () => {
    assert.deepEqual(desiredStatus(resource(), ok, running, T0, { namespaces: referencing }).references, {
      namespaces: 3,
    });
    assert.deepEqual(desiredStatus(resource(), ok, running, T0, { namespaces: { count: 0, first: [] } }).references, {
      namespaces: 0,
    });
    const stored = resource({ references: { namespaces: 5, objects: 9 } });
    assert.deepEqual(desiredStatus(stored, ok, running, T0).references, { namespaces: 5 }, 'not synced: kept');
    assert.equal(desiredStatus(resource(), ok, running, T0).references, undefined);
  });

  it('says Deleting=True (Referenced) naming the namespaces while the finalizer holds the deletion', () => {
    const status = desiredStatus(resource(), ok, running, T0, { namespaces: referencing, held: true });
    assert.deepEqual(status.conditions!.at(-1), {
      type: 'Deleting',
      status: 'True',
      reason: 'Referenced',
      message:
        'held by the finalizer admissiongateway.io/referenced: 3 namespace(s) reference it in ' +
        'admissiongateway.io/extensions (team-a, team-b, team-c) and it keeps serving them; it is deleted once ' +
        'none does, or at once with the annotation admissiongateway.io/force-delete: "true"',
      lastTransitionTime: T0,
      observedGeneration: 2,
    });
    const notHeld = desiredStatus(resource(), ok, running, T0, { namespaces: referencing });
    assert.equal(
      notHeld.conditions!.some((c) => c.type === 'Deleting'),
      false,
    );
  });

  it('keeps a stored Deleting condition until the namespace cache synced, so a restarting replica does not flap it', () => {
    const held = desiredStatus(resource(), ok, running, T0, { namespaces: referencing, held: true });
    const restarted = desiredStatus(resource(held), ok, running, T1);
    assert.deepEqual(restarted.conditions!.at(-1), held.conditions!.at(-1));
    assert.ok(sameStatus(held, restarted));
    const released = desiredStatus(resource(held), ok, running, T1, { namespaces: { count: 0, first: [] } });
    assert.equal(
      released.conditions!.some((c) => c.type === 'Deleting'),
      false,
    );
  });

  it('names at most the first few namespaces and counts the rest', () => {
    const many = { count: 1234, first: Array.from({ length: 10 }, (_, i) => `ns-${i}`) };
    const deleting = desiredStatus(resource(), ok, running, T0, { namespaces: many, held: true }).conditions!.at(-1)!;
    assert.match(deleting.message, /\(ns-0, ns-1, .*, ns-9 and 1224 more\)/);
  });
});

describe('sameStatus() and the objects served', () => {
  it("ignores the counts the replicas add (objects, windowStart, previousWindowObjects): they are not the status writer's", () => {
    const written = desiredStatus(resource(), ok, running, T0, { namespaces: { count: 2, first: ['a', 'b'] } });
    const stored = {
      ...written,
      references: { namespaces: 2, objects: 40, windowStart: '2026-11-22T10:00:00Z', previousWindowObjects: 3 },
    };
    assert.ok(sameStatus(stored, written));
    assert.ok(!sameStatus({ ...stored, references: { ...stored.references, namespaces: 1 } }, written));
    const countsOnly = { ...desiredStatus(resource(), ok, running, T0), references: { objects: 4 } };
    assert.ok(sameStatus(countsOnly, desiredStatus(resource(), ok, running, T0)));
  });
});
