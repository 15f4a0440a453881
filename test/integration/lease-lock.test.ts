/**
 * The Lease calls of leader election on the wire (server/kube/lease-lock.ts through client-node), against the
 * stand-in apiserver: the paths, the bodies (MicroTime with six fractional digits, as the apiserver parses it; the
 * resourceVersion read, for optimistic concurrency; the object's other fields kept), and what each answer becomes —
 * 404 on a read is no Lease, 409 on a write a conflict, anything else an error. The real apiserver's verdict on
 * the same calls is test/e2e/leader-election.e2e.ts.
 */
import assert from 'node:assert/strict';
import { createLeaseLock, type LeaseLock, type LeaseRecord } from '../../server/kube/lease-lock.js';
import { startStandInApiserver, status, type StandInApiserver } from '../helpers/stand-in-apiserver.js';

const PATH = '/apis/coordination.k8s.io/v1/namespaces/gw-system/leases';

/** A Lease as the apiserver answers it. */
const stored = (resourceVersion: string, holderIdentity: string) => ({
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: {
    name: 'admission-gateway',
    namespace: 'gw-system',
    resourceVersion,
    labels: { team: 'platform' },
  },
  spec: {
    holderIdentity,
    leaseDurationSeconds: 15,
    acquireTime: '2030-01-01T00:00:00.000000Z',
    renewTime: '2030-01-01T00:00:04.500000Z',
    leaseTransitions: 3,
  },
});

const record: LeaseRecord = {
  holderIdentity: 'gw-0_1234',
  leaseDurationSeconds: 15,
  acquireTime: new Date('2030-01-01T00:00:10.125Z'),
  renewTime: new Date('2030-01-01T00:00:12.25Z'),
  leaseTransitions: 4,
};

/** `record` as the apiserver gets it: MicroTime with six fractional digits. */
const SENT_SPEC = {
  holderIdentity: 'gw-0_1234',
  leaseDurationSeconds: 15,
  acquireTime: '2030-01-01T00:00:10.125000Z',
  renewTime: '2030-01-01T00:00:12.250000Z',
  leaseTransitions: 4,
};

describe('createLeaseLock() on the wire', function () {
  let api: StandInApiserver;
  let lock: LeaseLock;
  const signal = new AbortController().signal;

  before(async function () {
    api = await startStandInApiserver();
    lock = createLeaseLock(api.kubeConfig(), { namespace: 'gw-system', name: 'admission-gateway' });
  });

  after(async function () {
    await api.close();
  });

  it('reads the Lease: its record (times parsed from MicroTime) and resourceVersion; 404 is no Lease', async function () {
    api.answerWith(() => ({ status: 200, body: stored('41', 'gw-1_5678') }));
    const read = await lock.get(signal);
    assert.deepEqual(
      [read?.record, read?.resourceVersion],
      [
        {
          holderIdentity: 'gw-1_5678',
          leaseDurationSeconds: 15,
          acquireTime: new Date('2030-01-01T00:00:00Z'),
          renewTime: new Date('2030-01-01T00:00:04.5Z'),
          leaseTransitions: 3,
        },
        '41',
      ],
    );
    assert.deepEqual(
      { method: api.requests.at(-1)!.method, path: api.requests.at(-1)!.path },
      { method: 'GET', path: `${PATH}/admission-gateway` },
    );
    api.answerWith(() => status(404, 'NotFound', 'leases.coordination.k8s.io "admission-gateway" not found'));
    assert.equal(await lock.get(signal), undefined);
  });

  it('creates the Lease with the record, times in MicroTime; 409 AlreadyExists is a conflict', async function () {
    api.answerWith(() => ({ status: 201, body: stored('42', 'gw-0_1234') }));
    const created = await lock.create(record, signal);
    assert.equal(created === 'conflict' ? created : created.resourceVersion, '42');
    const sent = api.requests.at(-1)!;
    assert.deepEqual(
      [sent.method, sent.path, sent.body],
      [
        'POST',
        PATH,
        {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: 'admission-gateway', namespace: 'gw-system' },
          spec: SENT_SPEC,
        },
      ],
    );
    api.answerWith(() => status(409, 'AlreadyExists', 'leases.coordination.k8s.io "admission-gateway" already exists'));
    assert.equal(await lock.create(record, signal), 'conflict');
  });

  it('updates over the resourceVersion it read, keeping the rest of the object; 409 Conflict is a conflict', async function () {
    api.answerWith(() => ({ status: 200, body: stored('41', 'gw-1_5678') }));
    const read = (await lock.get(signal))!;
    api.answerWith(() => ({ status: 200, body: stored('43', 'gw-0_1234') }));
    const written = await lock.update(read, record, signal);
    assert.equal(written === 'conflict' ? written : written.record.holderIdentity, 'gw-0_1234');
    const sent = api.requests.at(-1)!;
    assert.deepEqual(
      [sent.method, sent.path, sent.body],
      [
        'PUT',
        `${PATH}/admission-gateway`,
        {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: {
            name: 'admission-gateway',
            namespace: 'gw-system',
            resourceVersion: '41',
            labels: { team: 'platform' },
          },
          spec: SENT_SPEC,
        },
      ],
    );
    api.answerWith(() =>
      status(409, 'Conflict', 'Operation cannot be fulfilled on leases.coordination.k8s.io "admission-gateway"'),
    );
    assert.equal(await lock.update(read, record, signal), 'conflict');
  });

  it('passes any other refusal on as the error client-node raises', async function () {
    api.answerWith(() => status(403, 'Forbidden', 'leases.coordination.k8s.io "admission-gateway" is forbidden'));
    await assert.rejects(lock.get(signal), (err: { code?: number }) => err.code === 403);
    await assert.rejects(lock.create(record, signal), (err: { code?: number }) => err.code === 403);
  });
});
