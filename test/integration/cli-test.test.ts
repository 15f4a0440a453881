/**
 * `admission-gateway test` end to end in this process (runCli): the shipped example suite passes; a broken
 * expectation fails with its diff; a broken test file exits 2 naming its line and field; the JUnit output is
 * JUnit XML a real XML parser reads back; remote providers are answered from the test file through the
 * provider client (a real provider on 127.0.0.1 is never called), or from a recording by uid; and
 * `--from-recording --write` turns recorded traffic into tests that pass on the config that answered it and
 * fail, with a diff, on a config that answers differently.
 */
import assert from 'node:assert/strict';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DOMParser, type Element } from '@xmldom/xmldom';
import { REPO_ROOT, configFolderPerTest, runCliCaptured, type CliRun } from '../helpers/cli.js';
import { startFakeProvider, type FakeProvider } from '../helpers/fake-provider.js';
import { startHarness, type Harness } from '../helpers/gateway-harness.js';
import { numberedPodCreate } from '../fixtures/reviews/index.js';

const EXAMPLE_CONFIG = join(REPO_ROOT, 'examples/policy-tests/gateway.yaml');

/** The run with each case's duration (which varies) written as `(… ms)`. */
function timeless(run: CliRun): CliRun {
  return { ...run, stdout: run.stdout.replace(/ \(\d+(?:\.\d)? ms\)$/gm, ' (… ms)') };
}

/** A Pod in team-a running `image`. */
function pod(name: string, image: string, labels: Record<string, string> = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'team-a', labels },
    spec: { securityContext: { runAsNonRoot: true }, containers: [{ name: 'app', image }] },
  };
}

/** A test file's text: the header naming `config`, then `body` (providers and cases). */
const testFile = (config: string, body: string): string =>
  `apiVersion: admissiongateway.io/v1alpha1\nkind: AdmissionTest\nconfig: ${config}\n${body}`;

/** The elements named `name` among the children of `parent`. */
function children(parent: Element, name: string): Element[] {
  const found: Element[] = [];
  for (let node = parent.firstChild; node; node = node.nextSibling) {
    if (node.nodeType === node.ELEMENT_NODE && node.nodeName === name) found.push(node as Element);
  }
  return found;
}

/** Parses XML strictly: any error or fatal error throws. */
function parseXml(text: string): Element {
  const parser = new DOMParser({
    onError: (level, message) => {
      if (level !== 'warning') throw new Error(`${level}: ${message}`);
    },
  });
  const root = parser.parseFromString(text, 'text/xml').documentElement;
  assert.ok(root, 'the document has a root element');
  return root;
}

/** Characters XML 1.0 allows (the Char production). */
const XML_CHARS = /^[\t\n\r\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]*$/u;

describe('admission-gateway test', function () {
  this.timeout(30_000);
  // What a case starts (a provider it must never reach, a gateway that records), closed before its folder goes.
  let gateway: Harness | undefined;
  let provider: FakeProvider | undefined;
  afterEach(async () => {
    await gateway?.close();
    await provider?.close();
    gateway = provider = undefined;
  });
  const folder = configFolderPerTest('admission-gateway-test-');

  it('runs the example suite under examples/: every case passes', async () => {
    const run = timeless(await runCliCaptured(['test', 'examples/policy-tests']));
    assert.deepEqual(run, {
      code: 0,
      stdout: `examples/policy-tests/pods.test.yaml (config examples/policy-tests/gateway.yaml)
  PASS  a pod is labelled and given resource defaults (… ms)
  PASS  a latest tag is refused (… ms)
  PASS  a vulnerable image is refused by the scanner (… ms)
  PASS  production pods need a team label (… ms)
  PASS  a test namespace may run anything (… ms)

1 test file, 5 cases
5 passed, 0 failed
`,
      stderr: '',
    });
  });

  it('fails a case whose expectations the answer does not meet, with a diff of each, exit 1', async () => {
    await writeFile(
      join(folder.dir, 'broken.test.yaml'),
      testFile(
        EXAMPLE_CONFIG,
        `providers:
  image-scanner:
    default: { allowed: true }
cases:
  - name: latest is refused
    object: ${JSON.stringify(pod('web', 'nginx:latest'))}
    expect:
      allowed: false
      message: /tag :?latest is forbidden/
      warnings: [non-root]
  - name: labelled
    object: ${JSON.stringify(pod('web', 'nginx:1.25.3', { app: 'web' }))}
    expect:
      allowed: true
      patched: { metadata: { labels: { app: web, team: payments } }, spec: { containers: [{ image: 'nginx:1.25.3' }] } }
      patch: [{ op: add, path: /metadata/labels/team, value: payments }]
  - name: as expected
    object: ${JSON.stringify(pod('web', 'nginx:1.25.3'))}
    expect: { allowed: true, warnings: [] }
`,
      ),
    );
    const run = timeless(await runCliCaptured(['test', 'broken.test.yaml'], { cwd: folder.dir }));
    assert.deepEqual(run, {
      code: 1,
      stdout: `broken.test.yaml (config ${EXAMPLE_CONFIG})
  FAIL  latest is refused (… ms)
        message
          - to match /tag :?latest is forbidden/
          + "image-policy: spec.containers[0] image \\"nginx:latest\\": tag latest is not allowed"
        warnings
          - a warning to contain "non-root"
  FAIL  labelled (… ms)
        patch
          - {"op":"add","path":"/metadata/labels/team","value":"payments"}
          + {"op":"add","path":"/metadata/labels/admissiongateway.io~1admitted","value":"true"}
          + {"op":"add","path":"/spec/containers/0/resources","value":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"memory":"512Mi"}}}
        patched /metadata/labels/team
          - "payments"
          + (absent)
  PASS  as expected (… ms)

1 test file, 3 cases
1 passed, 2 failed
`,
      stderr: '',
    });
  });

  const brokenFiles: ReadonlyArray<{ what: string; body: string; message: string }> = [
    {
      what: 'a value of the wrong type',
      body: `cases:\n  - name: one\n    object: { apiVersion: v1, kind: Pod, metadata: { name: a } }\n    expect:\n      allowed: "yes"\n`,
      message: 'broken.test.yaml:8:7: cases[0].expect.allowed: expected true or false, got "yes"',
    },
    {
      what: 'a misspelt field',
      body: `cases:\n  - name: one\n    object: { apiVersion: v1, kind: Pod, metadata: { name: a } }\n    expect: { alowed: true }\n`,
      message: 'broken.test.yaml:7:15: cases[0].expect.alowed: unknown field (did you mean "allowed"?)',
    },
    {
      what: 'an expectation that says nothing',
      body: `cases:\n  - name: one\n    object: { apiVersion: v1, kind: Pod, metadata: { name: a } }\n    expect: { warningsMatch: whole }\n`,
      message:
        'broken.test.yaml:7:5: cases[0].expect: says nothing to check: give at least one of allowed, code, message, warnings, auditAnnotations, patch, patched',
    },
    {
      what: 'a regular expression that does not compile',
      body: `cases:\n  - name: one\n    object: { apiVersion: v1, kind: Pod, metadata: { name: a } }\n    expect: { message: /(unclosed/ }\n`,
      message:
        'broken.test.yaml:7:15: cases[0].expect.message: not a regular expression: Invalid regular expression: /(unclosed/: Unterminated group',
    },
    {
      what: 'an answer for a case the file does not have',
      body: `providers:\n  image-scanner:\n    answers:\n      labeled pod: { allowed: false }\ncases:\n  - name: labelled pod\n    object: { apiVersion: v1, kind: Pod, metadata: { name: a } }\n    expect: { allowed: true }\n`,
      message:
        'broken.test.yaml:7:7: providers.image-scanner.answers.labeled pod: no case is named "labeled pod" (did you mean "labelled pod"?)',
    },
    {
      what: 'a provider the config does not have',
      body: `providers:\n  image-scaner:\n    default: { allowed: true }\ncases:\n  - name: one\n    object: { apiVersion: v1, kind: Pod, metadata: { name: a } }\n    expect: { allowed: true }\n`,
      message: `broken.test.yaml:5:3: providers.image-scaner: the chain of ${EXAMPLE_CONFIG} has no provider "image-scaner" (did you mean "image-scanner"?)`,
    },
    {
      what: 'an UPDATE without the old object',
      body: `cases:\n  - name: one\n    operation: UPDATE\n    object: { apiVersion: v1, kind: Pod, metadata: { name: a } }\n    expect: { allowed: true }\n`,
      message: 'broken.test.yaml:5:5: cases[0].oldObject: is required for an UPDATE',
    },
    {
      what: 'two cases of one name',
      body: `cases:\n  - name: one\n    object: { apiVersion: v1, kind: Pod, metadata: { name: a } }\n    expect: { allowed: true }\n  - name: one\n    object: { apiVersion: v1, kind: Pod, metadata: { name: b } }\n    expect: { allowed: true }\n`,
      message: 'broken.test.yaml:8:5: cases[1].name: "one" is already the name of cases[0]',
    },
    {
      what: 'an empty path among its policies',
      body: `policies: [policies/, '']\ncases: []\n`,
      message: 'broken.test.yaml:4:23: policies[1]: expected a file or folder',
    },
  ];
  for (const { what, body, message } of brokenFiles) {
    it(`exits 2 before running anything for a test file with ${what}, naming its line and field`, async () => {
      await writeFile(
        join(folder.dir, 'good.test.yaml'),
        testFile(
          EXAMPLE_CONFIG,
          'cases:\n  - name: fine\n    object: { apiVersion: v1, kind: Pod, metadata: { name: a } }\n    expect: { allowed: true }\n',
        ),
      );
      await writeFile(join(folder.dir, 'broken.test.yaml'), testFile(EXAMPLE_CONFIG, body));
      const run = await runCliCaptured(['test'], { cwd: folder.dir });
      assert.deepEqual(run, { code: 2, stdout: '', stderr: `admission-gateway: ${message}\n` });
    });
  }

  it('names the test file and line of a config that is not there', async () => {
    await writeFile(
      join(folder.dir, 'a.test.yaml'),
      testFile(
        'missing.yaml',
        'cases:\n  - name: one\n    object: { apiVersion: v1, kind: Pod, metadata: { name: a } }\n    expect: { allowed: true }\n',
      ),
    );
    const run = await runCliCaptured(['test', 'a.test.yaml'], { cwd: folder.dir });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /^admission-gateway: a\.test\.yaml:3:1: config: cannot read the config file: ENOENT/);
  });

  it('-o junit writes JUnit XML: a testsuite per file, a testcase per case, a failure with the diff', async () => {
    // Control characters and a bidirectional override in a name: XML 1.0 cannot carry the first at all.
    const hostile = 'refused \u0007\u202e <tag> & "quotes"';
    await writeFile(
      join(folder.dir, 'a.test.yaml'),
      testFile(
        EXAMPLE_CONFIG,
        `providers:\n  image-scanner: { default: { allowed: true } }
cases:
  - name: ${JSON.stringify(hostile)}
    object: ${JSON.stringify(pod('web', 'nginx:latest'))}
    expect: { allowed: true }
  - name: passes
    object: ${JSON.stringify(pod('web', 'nginx:1.25.3'))}
    expect: { allowed: true }
`,
      ),
    );
    await writeFile(
      join(folder.dir, 'b.test.yaml'),
      testFile(
        EXAMPLE_CONFIG,
        `providers:\n  image-scanner: { default: { allowed: true } }\ncases:\n  - name: also passes\n    object: ${JSON.stringify(pod('db', 'postgres:16'))}\n    expect: { allowed: true }\n`,
      ),
    );
    const run = await runCliCaptured(['test', '-o', 'junit'], { cwd: folder.dir });
    assert.equal(run.code, 1);
    assert.equal(run.stderr, '');
    assert.match(run.stdout, XML_CHARS);
    // Every duration is seconds to the millisecond; the rest is the whole document.
    assert.match(run.stdout, /time="\d+\.\d{3}"/);
    assert.equal(
      run.stdout.replace(/ time="\d+\.\d{3}"/g, ' time="…"'),
      `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="admission-gateway test" tests="3" failures="1" errors="0" time="…">
  <testsuite name="a.test.yaml" tests="2" failures="1" errors="0" skipped="0" time="…">
    <properties>
      <property name="config" value="${EXAMPLE_CONFIG}"/>
    </properties>
    <testcase name="refused \\u0007\u202e &lt;tag&gt; &amp; &quot;quotes&quot;" classname="a.test.yaml" time="…">
      <failure message="allowed: expected true, got false" type="ExpectationFailed">allowed
  - true
  + false</failure>
    </testcase>
    <testcase name="passes" classname="a.test.yaml" time="…"/>
  </testsuite>
  <testsuite name="b.test.yaml" tests="1" failures="0" errors="0" skipped="0" time="…">
    <properties>
      <property name="config" value="${EXAMPLE_CONFIG}"/>
    </properties>
    <testcase name="also passes" classname="b.test.yaml" time="…"/>
  </testsuite>
</testsuites>
`,
    );
    // And a real XML parser reads it back as written.
    const root = parseXml(run.stdout);
    assert.equal(root.nodeName, 'testsuites');
    const [failed] = children(children(root, 'testsuite')[0]!, 'testcase');
    assert.equal(failed!.getAttribute('name'), 'refused \\u0007\u202e <tag> & "quotes"');
    assert.equal(children(failed!, 'failure')[0]!.textContent, 'allowed\n  - true\n  + false');
  });

  it('-o json gives the counts, and each case with its failures and answer', async () => {
    await writeFile(
      join(folder.dir, 'a.test.yaml'),
      testFile(
        EXAMPLE_CONFIG,
        `providers:\n  image-scanner: { default: { allowed: true } }\ncases:\n  - name: latest\n    object: ${JSON.stringify(pod('web', 'nginx:latest'))}\n    expect: { code: 400 }\n`,
      ),
    );
    const run = await runCliCaptured(['test', 'a.test.yaml', '-o', 'json'], { cwd: folder.dir });
    assert.equal(run.code, 1);
    assert.equal(run.stderr, '');
    // Durations vary: each is a number of milliseconds, compared as "…"; the rest is the whole report.
    assert.match(run.stdout, /"ms": \d/);
    const report = JSON.parse(run.stdout.replace(/"ms": \d+(?:\.\d+)?/g, '"ms": "…"')) as unknown;
    assert.deepEqual(report, {
      summary: { files: 1, cases: 1, passed: 0, failed: 1, errors: 0 },
      files: [
        {
          file: 'a.test.yaml',
          config: EXAMPLE_CONFIG,
          ms: '…',
          cases: [
            {
              name: 'latest',
              field: 'cases[0]',
              passed: false,
              ms: '…',
              failures: [{ field: 'code', expected: ['400'], actual: ['403'] }],
              answer: {
                allowed: false,
                code: 403,
                message: 'image-policy: spec.containers[0] image "nginx:latest": tag latest is not allowed',
                warnings: [],
                auditAnnotations: {},
                // The mutate phase ran and patched before the validate phase refused.
                patch: [
                  { op: 'add', path: '/metadata/labels/admissiongateway.io~1admitted', value: 'true' },
                  {
                    op: 'add',
                    path: '/spec/containers/0/resources',
                    value: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } },
                  },
                ],
              },
            },
          ],
        },
      ],
    });
  });

  describe('policies and exceptions the test file names', () => {
    const SCANNER = 'providers:\n  image-scanner:\n    default: { allowed: true }\n';
    const REGISTRY = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: { name: own-registry }
spec:
  matchConstraints:
    resourceRules: [{ operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods] }]
  validations:
    - expression: "object.spec.containers.all(c, c.image.startsWith('registry.example.com/'))"
      message: images come from registry.example.com
      reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: { name: own-registry }
spec: { policyName: own-registry, validationActions: [Deny] }
`;

    it('adds the native policies under policies: after the config’s chain, refusing in the apiserver’s words', async () => {
      await writeFile(join(folder.dir, 'registry.yaml'), REGISTRY);
      await writeFile(
        join(folder.dir, 'native.test.yaml'),
        testFile(
          EXAMPLE_CONFIG,
          `policies: [registry.yaml]\n${SCANNER}cases:
  - name: an image of the own registry
    object: ${JSON.stringify(pod('web', 'registry.example.com/web:1.0'))}
    expect: { allowed: true }
  - name: an image of another registry
    object: ${JSON.stringify(pod('web', 'nginx:1.25.3'))}
    expect:
      allowed: false
      code: 403
      message: "ValidatingAdmissionPolicy 'own-registry' with binding 'own-registry' denied request: images come from registry.example.com"
`,
        ),
      );

      const run = timeless(await runCliCaptured(['test', 'native.test.yaml'], { cwd: folder.dir }));

      assert.deepEqual(run, {
        code: 0,
        stderr: '',
        stdout: `native.test.yaml (config ${EXAMPLE_CONFIG})
  PASS  an image of the own registry (… ms)
  PASS  an image of another registry (… ms)

1 test file, 2 cases
2 passed, 0 failed
`,
      });
    });

    it('applies the exceptions under exceptions:, beside the config’s: an exempted step lets the case through', async () => {
      const expiresAt = new Date(Date.now() + 30 * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');
      await writeFile(
        join(folder.dir, 'legacy.yaml'),
        `apiVersion: admissiongateway.io/v1alpha1
kind: AdmissionException
metadata: { name: legacy-latest, namespace: team-a }
spec:
  steps: [image-policy]
  match: { names: [legacy] }
  expiresAt: '${expiresAt}'
  reason: the legacy app moves to pinned tags next sprint
  mode: Exempt
`,
      );
      const latest = (name: string) => JSON.stringify(pod(name, 'nginx:latest'));
      await writeFile(
        join(folder.dir, 'legacy.test.yaml'),
        testFile(
          EXAMPLE_CONFIG,
          `exceptions: [legacy.yaml]\n${SCANNER}cases:
  - name: the excepted pod may use latest
    object: ${latest('legacy')}
    expect: { allowed: true }
  - name: any other pod may not
    object: ${latest('web')}
    expect: { allowed: false, message: latest }
`,
        ),
      );

      const withException = timeless(await runCliCaptured(['test', 'legacy.test.yaml'], { cwd: folder.dir }));
      await writeFile(
        join(folder.dir, 'legacy.test.yaml'),
        (await readFile(join(folder.dir, 'legacy.test.yaml'), 'utf8')).replace('exceptions: [legacy.yaml]\n', ''),
      );
      const without = await runCliCaptured(['test', 'legacy.test.yaml'], { cwd: folder.dir });

      assert.deepEqual(withException, {
        code: 0,
        stderr: '',
        stdout: `legacy.test.yaml (config ${EXAMPLE_CONFIG})
  PASS  the excepted pod may use latest (… ms)
  PASS  any other pod may not (… ms)

1 test file, 2 cases
2 passed, 0 failed
`,
      });
      assert.equal(without.code, 1, 'without the exception the first case fails');
    });

    it('exits 2 for a policy file with a mistake, naming that file, its line and field', async () => {
      await writeFile(join(folder.dir, 'registry.yaml'), REGISTRY.replace('[Deny]', '[Refuse]'));
      await writeFile(
        join(folder.dir, 'native.test.yaml'),
        testFile(
          EXAMPLE_CONFIG,
          `policies: [registry.yaml]\n${SCANNER}cases:\n  - name: one\n    object: ${JSON.stringify(pod('a', 'nginx:1'))}\n    expect: { allowed: true }\n`,
        ),
      );

      const run = await runCliCaptured(['test', 'native.test.yaml'], { cwd: folder.dir });

      assert.equal(run.code, 2);
      assert.equal(run.stdout, '');
      assert.match(run.stderr, /^admission-gateway: .*registry\.yaml:\d+:\d+: .*validationActions/);
    });
  });

  describe('remote providers', () => {
    it('answers them from the test file through the provider client, and never calls them', async () => {
      // A real provider that would deny and patch otherwise: the test file's answers must be what counts.
      provider = await startFakeProvider({
        discovery: { document: { handlers: [{ name: 'scan', phase: 'validate' }] } },
      });
      await folder.config(`
chain:
  - provider: labeller
    url: ${provider.url('/patch')}
    caBundle: ${provider.caBundle}
    phases: [mutate, validate]
  - provider: scanner
    url: ${provider.url('/hooks')}
    caBundle: ${provider.caBundle}
    discovery: true
`);
      const base64 = Buffer.from(
        JSON.stringify([{ op: 'add', path: '/metadata/labels/scanned', value: 'yes' }]),
      ).toString('base64');
      await writeFile(
        join(folder.dir, 'providers.test.yaml'),
        testFile(
          'gateway.yaml',
          `providers:
  labeller:
    default:
      mutate: { allowed: true, patch: [{ op: add, path: /metadata/labels/owner, value: platform }] }
      validate: { allowed: true, warnings: [looked at it], auditAnnotations: { seen: 'yes' } }
    answers:
      base64 patch:
        mutate: { allowed: true, patch: ${base64} }
        validate: { allowed: true }
  scanner:
    discovery: { handlers: [{ name: scan, phase: validate }] }
    default: { allowed: true }
    answers:
      refused by the scanner: { allowed: false, status: { code: 422, message: CVE-2024-0001 } }
cases:
  - name: patched and warned
    object: ${JSON.stringify(pod('web', 'nginx:1.25.3'))}
    expect:
      allowed: true
      patch: [{ op: add, path: /metadata/labels/owner, value: platform }]
      warnings: ['labeller: looked at it']
      warningsMatch: whole
      auditAnnotations: { labeller.seen: 'yes' }
      auditAnnotationsMatch: whole
  - name: base64 patch
    object: ${JSON.stringify(pod('web', 'nginx:1.25.3'))}
    expect: { allowed: true, patched: { metadata: { labels: { scanned: 'yes' } } }, warnings: [] }
  - name: refused by the scanner
    object: ${JSON.stringify(pod('web', 'nginx:1.25.3'))}
    expect: { allowed: false, code: 422, message: 'scan.scanner: CVE-2024-0001' }
  - name: only the validate route
    route: validate
    object: ${JSON.stringify(pod('web', 'nginx:1.25.3'))}
    expect: { allowed: true, patch: [], warnings: ['labeller: looked at it'] }
`,
        ),
      );
      const run = timeless(await runCliCaptured(['test'], { cwd: folder.dir }));
      assert.deepEqual(run, {
        code: 0,
        stdout: `providers.test.yaml (config gateway.yaml)
  PASS  patched and warned (… ms)
  PASS  base64 patch (… ms)
  PASS  refused by the scanner (… ms)
  PASS  only the validate route (… ms)

1 test file, 4 cases
4 passed, 0 failed
`,
        stderr: '',
      });
      assert.equal(provider.calls.length, 0);
    });

    it('answers each case alike whatever the cases before it: a breaker never opens on their failures', async () => {
      await folder.config(`
chain:
  - provider: checker
    url: https://checker.example/validate
    phases: [validate]
    failurePolicy: Ignore
    circuitBreaker: { volumeThreshold: 2 }
`);
      // A validating provider may not patch: each call fails (invalid_response), and fails open.
      const cases = Array.from(
        { length: 4 },
        (_, i) =>
          `  - name: case ${i}\n    object: ${JSON.stringify(pod('web', 'nginx:1.25.3'))}\n    expect:\n      warnings: ['/^checker: failed open \\(invalid_response\\)/']\n`,
      );
      await writeFile(
        join(folder.dir, 'a.test.yaml'),
        testFile(
          'gateway.yaml',
          `providers:\n  checker:\n    default: { allowed: true, patch: [{ op: add, path: /x, value: 1 }] }\ncases:\n${cases.join('')}`,
        ),
      );
      const run = await runCliCaptured(['test', 'a.test.yaml', '-o', 'json'], { cwd: folder.dir });
      const report = JSON.parse(run.stdout) as { summary: unknown };
      assert.deepEqual(report.summary, { files: 1, cases: 4, passed: 4, failed: 0, errors: 0 });
      assert.equal(run.code, 0);
    });

    it('fails a case that calls a provider the test file has no answer for, naming both', async () => {
      provider = await startFakeProvider();
      await folder.config(`
chain:
  - provider: scanner
    url: ${provider.url('/allow')}
    caBundle: ${provider.caBundle}
    phases: [validate]
    match: { rules: [{ operations: [CREATE], apiGroups: [''], apiVersions: ['*'], resources: [pods] }] }
`);
      await writeFile(
        join(folder.dir, 'a.test.yaml'),
        testFile(
          'gateway.yaml',
          `cases:
  - name: a pod
    object: ${JSON.stringify(pod('web', 'nginx:1.25.3'))}
    expect: { allowed: true }
  - name: a config map (the scanner is not called)
    object: { apiVersion: v1, kind: ConfigMap, metadata: { name: c, namespace: team-a } }
    expect: { allowed: true }
`,
        ),
      );
      const run = timeless(await runCliCaptured(['test', 'a.test.yaml'], { cwd: folder.dir }));
      assert.deepEqual(run, {
        code: 1,
        stdout: `a.test.yaml (config gateway.yaml)
  FAIL  a pod (… ms)
        provider answers
          provider "scanner" was called in the validate phase and has no answer for case "a pod": give it providers.scanner.answers["a pod"], or providers.scanner.default
  PASS  a config map (the scanner is not called) (… ms)

1 test file, 2 cases
1 passed, 1 failed
`,
        stderr: '',
      });
      assert.equal(provider.calls.length, 0);
    });
  });

  describe('recordings', () => {
    /** The chain recorded: a labeller (patches) and a checker (denies) as providers, and require-labels. */
    const chain = (p: FakeProvider, checkerMode: string, label: string) => `
chain:
  - provider: labeller
    url: ${p.url('/patch')}
    caBundle: ${p.caBundle}
    phases: [mutate]
  - provider: checker
    url: ${p.url('/deny')}
    caBundle: ${p.caBundle}
    phases: [validate]
    mode: ${checkerMode}
  - plugin: require-labels
    settings: { labels: [${label}] }
`;

    /**
     * A gateway recording every review answers a labelled and a bare Pod on both routes, then stops, and so does
     * the provider; its folder, and the chain with a checker mode and a required label of one's choosing.
     */
    async function record(): Promise<{ dir: string; chain: (checkerMode: string, label: string) => string }> {
      const p = (provider = await startFakeProvider());
      gateway = await startHarness({
        yaml: `record: { path: recording.ndjson, sampleRate: 1 }\n${chain(p, 'warn', 'team')}`,
      });
      for (const [n, name, labels] of [
        [1, 'web', { team: 'payments' }],
        [2, 'bare', {}],
      ] as const) {
        await gateway.review('/mutate', numberedPodCreate(n, name, labels));
        await gateway.review('/validate', numberedPodCreate(n, name, labels));
      }
      await gateway.gateway.close();
      await p.close();
      provider = undefined;
      return { dir: gateway.dir, chain: (checkerMode, label) => chain(p, checkerMode, label) };
    }

    it('answers providers from a recording for the cases of a recorded uid', async () => {
      const { dir } = await record();
      const uid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
      await writeFile(
        join(dir, 'recorded.test.yaml'),
        testFile(
          'gateway.yaml',
          `providers:
  labeller: { from: recording.ndjson }
  checker: { from: recording.ndjson }
cases:
  - name: the recorded answers of web
    uid: ${uid(1)}
    object: ${JSON.stringify(pod('web', 'nginx:1.25.3', { team: 'payments' }))}
    expect:
      allowed: true
      patch: [{ op: add, path: /metadata/labels/provider, value: patched }]
      warnings: ['checker: denied by fake (mode warn: not enforced)']
      warningsMatch: whole
  - name: a uid the recording does not have
    object: ${JSON.stringify(pod('web', 'nginx:1.25.3', { team: 'payments' }))}
    expect: { allowed: true }
`,
        ),
      );
      const run = timeless(await runCliCaptured(['test', 'recorded.test.yaml'], { cwd: dir }));
      assert.deepEqual(run, {
        code: 1,
        stdout: `recorded.test.yaml (config gateway.yaml)
  PASS  the recorded answers of web (… ms)
  FAIL  a uid the recording does not have (… ms)
        provider answers
          provider "labeller" was called in the mutate phase and has no answer for case "a uid the recording does not have": give it providers.labeller.answers["a uid the recording does not have"] (the recording has none), or providers.labeller.default
        provider answers
          provider "checker" was called in the validate phase and has no answer for case "a uid the recording does not have": give it providers.checker.answers["a uid the recording does not have"] (the recording has none), or providers.checker.default

1 test file, 2 cases
1 passed, 1 failed
`,
        stderr: '',
      });
    });

    it('--from-recording --write pins what the config answers; a config answering otherwise fails them', async () => {
      const { dir, chain: candidate } = await record();
      const written = await runCliCaptured(
        ['test', '--from-recording', 'recording.ndjson', '--write', 'pinned', '--config', 'gateway.yaml'],
        { cwd: dir },
      );
      assert.deepEqual(written, {
        code: 0,
        stdout: 'wrote 4 cases pinning the answers of gateway.yaml into pinned/recording.test.yaml\n',
        stderr: '',
      });
      assert.deepEqual(await readdir(join(dir, 'pinned')), ['recording.test.yaml']);
      const text = await readFile(join(dir, 'pinned/recording.test.yaml'), 'utf8');
      assert.match(text, /^config: \.\.\/gateway\.yaml$/m);
      assert.match(text, /^ {2}labeller:\n {4}from: \.\.\/recording\.ndjson$/m);

      const passing = timeless(await runCliCaptured(['test', 'pinned'], { cwd: dir }));
      assert.deepEqual(passing, {
        code: 0,
        stdout: `pinned/recording.test.yaml (config gateway.yaml)
  PASS  line 1: CREATE Pod team-a/web on mutate (… ms)
  PASS  line 2: CREATE Pod team-a/web on validate (… ms)
  PASS  line 3: CREATE Pod team-a/bare on mutate (… ms)
  PASS  line 4: CREATE Pod team-a/bare on validate (… ms)

1 test file, 4 cases
4 passed, 0 failed
`,
        stderr: '',
      });

      // Written again into the same folder: refused before anything is written, the files as they were.
      const again = await runCliCaptured(
        ['test', '--from-recording', 'recording.ndjson', '--write', 'pinned', '--config', 'gateway.yaml'],
        { cwd: dir },
      );
      assert.deepEqual(again, {
        code: 2,
        stdout: '',
        stderr: `admission-gateway test: --write: ${join(dir, 'pinned/recording.test.yaml')} already exists: remove it, or write into another folder\n`,
      });
      assert.equal(await readFile(join(dir, 'pinned/recording.test.yaml'), 'utf8'), text);

      // The candidate enforces the checker and no longer requires a team: two answers change.
      await writeFile(join(dir, 'candidate.yaml'), candidate('enforce', 'app'));
      const failing = timeless(await runCliCaptured(['test', 'pinned', '--config', 'candidate.yaml'], { cwd: dir }));
      assert.equal(failing.stderr, '');
      assert.equal(failing.code, 1);
      assert.equal(
        failing.stdout,
        `pinned/recording.test.yaml (config candidate.yaml)
  PASS  line 1: CREATE Pod team-a/web on mutate (… ms)
  FAIL  line 2: CREATE Pod team-a/web on validate (… ms)
        allowed
          - true
          + false
        warnings
          - a warning to contain "checker: denied by fake (mode warn: not enforced)"
  PASS  line 3: CREATE Pod team-a/bare on mutate (… ms)
  FAIL  line 4: CREATE Pod team-a/bare on validate (… ms)
        message
          - to contain "require-labels: missing required label: team"
          + "checker: denied by fake; require-labels: missing required label: app"
        warnings
          - a warning to contain "checker: denied by fake (mode warn: not enforced)"

1 test file, 4 cases
2 passed, 2 failed
`,
      );
    });
  });
});
