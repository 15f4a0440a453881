/**
 * The PolicyReports and ClusterPolicyReport an audit writes, as whole objects: one per namespace, the
 * cluster-scoped objects apart, results ordered refusals first, the summary exact when the results are cut to
 * the bound, and the operator's summary in the annotation.
 */
import assert from 'node:assert/strict';
import { buildReports, type PolicyReport, type ReportResult } from '../../../server/audit/reports.js';
import type { AuditedObject, AuditedStep } from '../../../server/audit/summary.js';

const STEPS: AuditedStep[] = [
  { name: 'team-label', mode: 'warn', failurePolicy: 'Ignore' },
  { name: 'no-latest', mode: 'enforce', failurePolicy: 'Fail' },
];

const TIMESTAMP = new Date('2026-01-02T03:04:05.678Z');
const SECONDS = Math.floor(TIMESTAMP.getTime() / 1000);

const pod = (name: string, namespace: string) => ({ apiVersion: 'v1', kind: 'Pod', name, namespace, uid: `u-${name}` });

const OBJECTS: AuditedObject[] = [
  { ref: pod('web', 'shop'), results: [{ step: 'team-label', result: 'pass' }] },
  {
    ref: pod('db', 'shop'),
    results: [
      { step: 'team-label', result: 'fail', message: 'missing required label: team' },
      { step: 'no-latest', result: 'error', message: 'timeout: no answer within 2000 ms' },
    ],
  },
  { ref: pod('job', 'batch'), results: [{ step: 'no-latest', result: 'pass' }] },
  { ref: pod('quiet', 'batch'), results: [] },
  {
    ref: { apiVersion: 'v1', kind: 'Namespace', name: 'shop', uid: 'u-shop' },
    results: [{ step: 'team-label', result: 'fail', message: 'missing required label: team' }],
  },
];

const result = (
  policy: string,
  outcome: ReportResult['result'],
  resource: ReportResult['resources'][number],
  message?: string,
): ReportResult => {
  const step = STEPS.find((s) => s.name === policy)!;
  return {
    policy,
    rule: 'validate',
    result: outcome,
    ...(message !== undefined ? { message } : {}),
    source: 'admission-gateway',
    scored: true,
    resources: [resource],
    timestamp: { seconds: SECONDS, nanos: 0 },
    properties: { mode: step.mode, failurePolicy: step.failurePolicy },
  };
};

const metadata = (namespace: string | undefined, summary: string, extra: Record<string, string> = {}) => ({
  name: 'admission-gateway',
  ...(namespace !== undefined ? { namespace } : {}),
  labels: { 'app.kubernetes.io/managed-by': 'admission-gateway' },
  annotations: { 'admissiongateway.io/audit-summary': summary, ...extra },
});

describe('audit reports', function () {
  it('writes one PolicyReport per namespace with results and a ClusterPolicyReport, refusals first', function () {
    const reports = buildReports(OBJECTS, STEPS, { timestamp: TIMESTAMP, maxResults: 100, cutShort: [] });
    const expected: { namespaced: PolicyReport[]; cluster: PolicyReport } = {
      namespaced: [
        {
          apiVersion: 'wgpolicyk8s.io/v1alpha2',
          kind: 'PolicyReport',
          metadata: metadata(
            'batch',
            'no-latest (mode enforce): 1 object checked, 1 pass, 0 fail, 0 error: enforced; every existing object passes',
          ),
          summary: { pass: 1, fail: 0, warn: 0, error: 0, skip: 0 },
          results: [result('no-latest', 'pass', pod('job', 'batch'))],
        },
        {
          apiVersion: 'wgpolicyk8s.io/v1alpha2',
          kind: 'PolicyReport',
          metadata: metadata(
            'shop',
            [
              'team-label (mode warn): 2 objects checked, 1 pass, 1 fail, 0 error: switching it to enforce would refuse 1 object',
              'no-latest (mode enforce): 1 object checked, 0 pass, 0 fail, 1 error: enforced; every existing object passes; 1 object could not be checked (error)',
            ].join('\n'),
          ),
          summary: { pass: 1, fail: 1, warn: 0, error: 1, skip: 0 },
          results: [
            result('team-label', 'fail', pod('db', 'shop'), 'missing required label: team'),
            result('no-latest', 'error', pod('db', 'shop'), 'timeout: no answer within 2000 ms'),
            result('team-label', 'pass', pod('web', 'shop')),
          ],
        },
      ],
      cluster: {
        apiVersion: 'wgpolicyk8s.io/v1alpha2',
        kind: 'ClusterPolicyReport',
        metadata: metadata(
          undefined,
          'team-label (mode warn): 1 object checked, 0 pass, 1 fail, 0 error: switching it to enforce would refuse 1 object',
        ),
        summary: { pass: 0, fail: 1, warn: 0, error: 0, skip: 0 },
        results: [
          result(
            'team-label',
            'fail',
            { apiVersion: 'v1', kind: 'Namespace', name: 'shop', uid: 'u-shop' },
            'missing required label: team',
          ),
        ],
      },
    };
    assert.deepEqual(reports, expected);
  });

  it('keeps at most maxResults results, refusals first, with the summary still counting all and saying so', function () {
    const many: AuditedObject[] = Array.from({ length: 5 }, (_, i) => ({
      ref: pod(`p${i}`, 'big'),
      results: [
        i % 2 === 0
          ? { step: 'team-label', result: 'pass' as const }
          : { step: 'team-label', result: 'fail' as const, message: 'missing required label: team' },
      ],
    }));
    const { namespaced, cluster } = buildReports(many, STEPS, {
      timestamp: TIMESTAMP,
      maxResults: 3,
      cutShort: ['audit.maxObjects (5) reached at pods'],
    });
    assert.equal(cluster, undefined);
    const [big] = namespaced;
    assert.deepEqual(big!.summary, { pass: 3, fail: 2, warn: 0, error: 0, skip: 0 });
    assert.deepEqual(
      big!.results.map((r) => [r.result, r.resources[0]!.name]),
      [
        ['fail', 'p1'],
        ['fail', 'p3'],
        ['pass', 'p0'],
      ],
    );
    assert.deepEqual(
      big!.metadata,
      metadata(
        'big',
        [
          'team-label (mode warn): 5 objects checked, 3 pass, 2 fail, 0 error: switching it to enforce would refuse 2 objects',
          'audit cut short: audit.maxObjects (5) reached at pods',
        ].join('\n'),
        { 'admissiongateway.io/results-omitted': '2 of 5 results not listed' },
      ),
    );
  });

  it('writes no report where no step applied to any object', function () {
    assert.deepEqual(
      buildReports([{ ref: pod('quiet', 'batch'), results: [] }], STEPS, {
        timestamp: TIMESTAMP,
        maxResults: 10,
        cutShort: [],
      }),
      { namespaced: [], cluster: undefined },
    );
  });
});
