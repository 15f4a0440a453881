// The `policyTests` scenario of `npm run bench`: `admission-gateway test` over a suite of POLICY_TESTS.cases
// cases against the shipped gateway.yaml chain, run as CI runs it (`node dist/server/main.js test FILE -o json`,
// pinned to the server core) and timed from start to exit, node's own start included; POLICY_TESTS.runs runs,
// the best counts (other tenants' load only ever slows a run), and the cases' own time (the report's) is kept. The cases are Pods (labelled, on a latest tag, without a team label), Deployments and Pod
// DELETEs, each with expectations the shipped chain meets: a run that does not pass all of them fails the target
// whatever its time. Then the same suite with the test file's `policies` naming a ValidatingAdmissionPolicy of
// the ten restricted Pod Security rules in CEL (bench/restricted-rules.mjs), bound with Audit so that every rule
// is evaluated on every Pod and the cases' expectations still hold.
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import YAML from 'yaml';
import { CONTAINERS, RULES } from './restricted-rules.mjs';

export const POLICY_TESTS = { cases: 500, runs: 3, limitS: 5, celValidations: 10 };

const pod = (name, image, labels, securityContext = undefined) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'team-a', labels },
  spec: { ...(securityContext ? { securityContext } : {}), containers: [{ name: 'app', image }] },
});

/** Case `i` of the suite: one of five kinds in turn. */
function testCase(i) {
  const name = `web-${i}`;
  switch (i % 5) {
    case 0:
      return {
        name: `case ${i}: a labelled pod is patched and warned about nothing`,
        object: pod(name, `nginx:1.25.${i}`, { team: 'payments' }, { runAsNonRoot: true }),
        expect: {
          allowed: true,
          warnings: [],
          patched: { metadata: { labels: { team: 'payments', 'admissiongateway.io/admitted': 'true' } } },
        },
      };
    case 1:
      return {
        name: `case ${i}: a latest tag is warned about`,
        object: pod(name, 'nginx:latest', { team: 'payments' }),
        expect: { allowed: true, warnings: ['tag latest is not allowed (mode warn: not enforced)'] },
      };
    case 2:
      return {
        name: `case ${i}: a pod without a team label is warned about`,
        object: pod(name, `redis:7.${i}`, { app: 'cache' }),
        expect: { allowed: true, warnings: ['/^require-labels: missing required label: team/'] },
      };
    case 3:
      return {
        name: `case ${i}: a deployment is labelled`,
        object: {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name, namespace: 'team-a', labels: { team: 'payments' } },
          spec: { replicas: 2, template: { spec: { containers: [{ name: 'app', image: `nginx:1.25.${i}` }] } } },
        },
        expect: { allowed: true, patched: { metadata: { labels: { 'admissiongateway.io/admitted': 'true' } } } },
      };
    default:
      return {
        name: `case ${i}: a pod is deleted`,
        operation: 'DELETE',
        oldObject: pod(name, `nginx:1.25.${i}`, { team: 'payments' }),
        expect: { allowed: true, warnings: [] },
      };
  }
}

/** The ten CEL validations as a ValidatingAdmissionPolicy and a binding that audits them (YAML). */
export function restrictedPolicyFile() {
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: 'restricted' },
    spec: {
      matchConstraints: {
        resourceRules: [
          { operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] },
        ],
      },
      variables: [{ name: 'containers', expression: CONTAINERS }],
      validations: RULES.map((expression) => ({ expression })),
    },
  };
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: 'restricted-audit' },
    spec: { policyName: 'restricted', validationActions: ['Audit'] },
  };
  return `${YAML.stringify(policy)}---\n${YAML.stringify(binding)}`;
}

/** The suite's test file, its config `configFile`, with the native policies `policies` when given. */
export function policyTestSuite(configFile, policies = []) {
  return YAML.stringify(
    {
      apiVersion: 'admissiongateway.io/v1alpha1',
      kind: 'AdmissionTest',
      config: configFile,
      ...(policies.length > 0 ? { policies } : {}),
      cases: Array.from({ length: POLICY_TESTS.cases }, (_, i) => testCase(i)),
    },
    { aliasDuplicateObjects: false },
  );
}

const round = (v, digits = 2) => Math.round(v * 10 ** digits) / 10 ** digits;

/**
 * Writes the suite into `dir` and runs it POLICY_TESTS.runs times with `run(args)`, which starts the command
 * (pinned, tracked as run.mjs tracks its children) and resolves with its exit code and standard output.
 */
export async function runPolicyTests({ label, dir, configFile, run, progress }) {
  const plain = await runSuite(path.join(dir, 'policy-bench.test.yaml'), configFile, [], run, progress);
  const policies = path.join(dir, 'restricted-pod-security.yaml');
  fs.writeFileSync(policies, restrictedPolicyFile());
  progress?.(`      with ${POLICY_TESTS.celValidations} CEL validations:\n`);
  const cel = await runSuite(path.join(dir, 'policy-bench-cel.test.yaml'), configFile, [policies], run, progress);
  return { label, cases: POLICY_TESTS.cases, ...plain, cel };
}

/** Writes a suite to `file` and runs it POLICY_TESTS.runs times: each run's time and report, the best. */
async function runSuite(file, configFile, policies, run, progress) {
  fs.writeFileSync(file, policyTestSuite(configFile, policies));
  const runs = [];
  for (let i = 0; i < POLICY_TESTS.runs; i++) {
    const started = performance.now();
    const { code, stdout, stderr } = await run(['test', file, '-o', 'json']);
    const wallS = (performance.now() - started) / 1000;
    let report;
    try {
      report = JSON.parse(stdout);
    } catch {
      report = undefined;
    }
    runs.push({
      wallS: round(wallS),
      casesS: round((report?.files ?? []).reduce((total, f) => total + f.ms, 0) / 1000),
      code,
      summary: report?.summary,
      ...(code !== 0 ? { stderr: stderr.slice(0, 2000) } : {}),
    });
    progress?.(`      run ${i + 1}: ${round(wallS)} s, exit ${code}\n`);
  }
  const failed = runs.find((r) => r.code !== 0 || r.summary?.passed !== POLICY_TESTS.cases);
  return {
    runs,
    bestS: Math.min(...runs.map((r) => r.wallS)),
    ...(failed
      ? {
          error: `a run did not pass all ${POLICY_TESTS.cases} cases: exit ${failed.code}, ${JSON.stringify(failed.summary)} ${failed.stderr ?? ''}`,
        }
      : {}),
  };
}

/** The scenario's lines in the report. */
export function policyTestsReport(r) {
  if (r.error && !r.runs) return [`  failed: ${r.error}`];
  return [
    `  ${r.cases} cases over the gateway.yaml chain, whole runs (node's start included): ${r.runs.map((x) => `${x.wallS} s`).join(', ')}; best ${r.bestS} s`,
    `  the cases alone (reviews and checks, as the report times them): ${r.runs.map((x) => `${x.casesS} s`).join(', ')}`,
    r.cel?.runs
      ? `  plus ${POLICY_TESTS.celValidations} CEL validations (a ValidatingAdmissionPolicy under the file's policies): ${r.cel.runs.map((x) => `${x.wallS} s`).join(', ')}; best ${r.cel.bestS} s${r.cel.error ? ` (${r.cel.error.split('\n')[0]})` : ''}`
      : `  plus ${POLICY_TESTS.celValidations} CEL validations: not measured`,
  ];
}
