/**
 * `admission-gateway manifests --authorization-kubeconfig FILE` through runCli in this process: the kubeconfig
 * carries the same caBundle as the webhook configurations, stdout is unchanged, the apiserver flags go to
 * stderr, and mistakes exit 2 before anything is written.
 */
import assert from 'node:assert/strict';
import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { runCliCaptured, configFolderPerTest } from '../helpers/cli.js';

const CHAIN = `
chain:
  - plugin: require-labels
    failurePolicy: Ignore
    settings: { labels: [team] }
`;

interface Kubeconfig {
  clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
  users: { user: Record<string, string> }[];
}

describe('admission-gateway manifests --authorization-kubeconfig', function () {
  this.timeout(30000);
  const folder = configFolderPerTest('gateway-authz-cli-');

  it('writes the kubeconfig with the webhooks caBundle, keeps stdout for the webhooks, prints the flags on stderr', async function () {
    const file = await folder.config(`kube: { enabled: false }\n${CHAIN}`);
    const args = ['manifests', '--config', file, '--url', 'https://192.0.2.10:30443', '-o', 'json'];
    const plain = await runCliCaptured(args, { cwd: folder.dir });
    const run = await runCliCaptured([...args, '--authorization-kubeconfig', 'authz.kubeconfig'], { cwd: folder.dir });

    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, plain.stdout);
    const webhooks = JSON.parse(run.stdout) as { items: { webhooks: { clientConfig: { caBundle: string } }[] }[] };
    const kubeconfig = parse(await readFile(join(folder.dir, 'authz.kubeconfig'), 'utf8')) as Kubeconfig;
    assert.deepEqual(kubeconfig.clusters[0]?.cluster, {
      server: 'https://192.0.2.10:30443/authorize',
      'certificate-authority-data': webhooks.items[0]?.webhooks[0]?.clientConfig.caBundle,
    });
    assert.deepEqual(kubeconfig.users[0]?.user, {});
    assert.ok(
      run.stderr.includes(
        `admission-gateway: wrote ${join(folder.dir, 'authz.kubeconfig')}: the kubeconfig of kube-apiserver's authorization ` +
          'webhook (calls https://192.0.2.10:30443/authorize).\n',
      ),
      run.stderr,
    );
    assert.match(run.stderr, /^ {2}--authorization-mode=Node,Webhook,RBAC$/m);
    assert.match(run.stderr, /^ {2}--authorization-webhook-version=v1$/m);
  });

  it('names the client certificate when the gateway asks for one, and places Webhook in the current modes', async function () {
    await writeFile(
      join(folder.dir, 'client-ca.crt'),
      '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
    );
    const file = await folder.config(
      `kube: { enabled: false }\nserver: { tls: { clientCAFile: client-ca.crt } }\n${CHAIN}`,
    );
    const run = await runCliCaptured(
      [
        'manifests',
        '--config',
        file,
        '--authorization-kubeconfig',
        'authz.kubeconfig',
        '--authorization-url',
        'https://10.96.0.20',
        '--authorization-mode',
        'RBAC',
        '--authorization-client-certificate',
        '/etc/kubernetes/pki/gw-client.crt',
        '--authorization-client-key',
        '/etc/kubernetes/pki/gw-client.key',
      ],
      { cwd: folder.dir },
    );
    assert.equal(run.code, 0, run.stderr);
    const kubeconfig = parse(await readFile(join(folder.dir, 'authz.kubeconfig'), 'utf8')) as Kubeconfig;
    assert.deepEqual(kubeconfig.users[0]?.user, {
      'client-certificate': '/etc/kubernetes/pki/gw-client.crt',
      'client-key': '/etc/kubernetes/pki/gw-client.key',
    });
    assert.match(run.stderr, /^ {2}--authorization-mode=Webhook,RBAC$/m);
  });

  it('writes an AuthorizationConfiguration with --authorization-config: the gateway between Node and RBAC, asked only what a step matches', async function () {
    const file = await folder.config(`kube: { enabled: false }
server: { service: { namespace: gw-system, name: gw } }
chain:
  - plugin: access-guard
    timeoutSeconds: 2
`);
    const run = await runCliCaptured(
      [
        'manifests',
        '--config',
        file,
        '--url',
        'https://192.0.2.10:30443',
        '--authorization-kubeconfig',
        'authz.kubeconfig',
        '--authorization-config',
        'authz-config.yaml',
      ],
      { cwd: folder.dir },
    );
    assert.equal(run.code, 0, run.stderr);
    const written = await readFile(join(folder.dir, 'authz-config.yaml'), 'utf8');
    assert.ok(
      written.startsWith(
        '# Rendered by `admission-gateway manifests --config ' +
          `${file} --url https://192.0.2.10:30443 --authorization-kubeconfig authz.kubeconfig --authorization-config ` +
          'authz-config.yaml`: regenerate it, do not edit it by hand.\n',
      ),
      written,
    );
    const R = 'request.resourceAttributes';
    assert.deepEqual(parse(written), {
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'AuthorizationConfiguration',
      authorizers: [
        { type: 'Node', name: 'node' },
        {
          type: 'Webhook',
          name: 'admission-gateway',
          webhook: {
            // access-guard's 2 s and the deadline margin, rounded up.
            timeout: '3s',
            subjectAccessReviewVersion: 'v1',
            matchConditionSubjectAccessReviewVersion: 'v1',
            failurePolicy: 'NoOpinion',
            authorizedTTL: '5m',
            unauthorizedTTL: '30s',
            connectionInfo: {
              type: 'KubeConfigFile',
              kubeConfigFile: '/etc/kubernetes/admission-gateway/authorization-webhook.kubeconfig',
            },
            matchConditions: [
              {
                expression:
                  "!(request.user in ['system:apiserver', 'system:kube-controller-manager', 'system:kube-scheduler', " +
                  "'system:kube-proxy'] || request.user.startsWith('system:serviceaccount:kube-system:') || " +
                  "request.user.startsWith('system:serviceaccount:gw-system:'))",
              },
              { expression: "!request.groups.exists(g, g in ['system:masters', 'system:nodes'])" },
              {
                expression:
                  `(has(${R}) && ${R}.verb in ['get', 'list', 'watch'] && ${R}.group in [''] && ` +
                  `((${R}.resource == 'secrets' && ${R}.subresource == '')))`,
              },
            ],
          },
        },
        { type: 'RBAC', name: 'rbac' },
      ],
    });
    assert.ok(
      run.stderr.includes(
        'Put both files in /etc/kubernetes/admission-gateway on every control-plane node, and replace the ' +
          '--authorization-mode and --authorization-webhook-* flags of kube-apiserver (they exclude each other) with:\n' +
          '  --authorization-config=/etc/kubernetes/admission-gateway/authorization-config.yaml\n',
      ),
      run.stderr,
    );
    assert.doesNotMatch(run.stderr, /--authorization-mode=/);
  });

  it('writes the AdmissionConfiguration and its kubeconfig with --admission-config when the gateway asks for client certificates', async function () {
    await writeFile(
      join(folder.dir, 'client-ca.crt'),
      '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
    );
    const file = await folder.config(
      `kube: { enabled: false }\nserver: { tls: { clientCAFile: client-ca.crt } }\n${CHAIN}`,
    );
    const args = ['manifests', '--config', file, '--url', 'https://192.0.2.10:30443'];
    const warned = await runCliCaptured(args, { cwd: folder.dir });
    assert.equal(warned.code, 0, warned.stderr);
    assert.match(warned.stderr, /server\.tls\.clientCAFile is set: the gateway refuses every caller without a client/);

    const run = await runCliCaptured(
      [
        ...args,
        '--admission-config',
        'admission-config.yaml',
        '--admission-client-certificate',
        '/etc/kubernetes/pki/gateway-client.crt',
        '--admission-client-key',
        '/etc/kubernetes/pki/gateway-client.key',
      ],
      { cwd: folder.dir },
    );
    assert.equal(run.code, 0, run.stderr);
    const body = (text: string) => text.slice(text.indexOf('\napiVersion:'));
    assert.equal(body(run.stdout), body(warned.stdout), 'the webhook configurations are the same');
    assert.deepEqual(parse(await readFile(join(folder.dir, 'admission-config.yaml'), 'utf8')), {
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'AdmissionConfiguration',
      plugins: ['ValidatingAdmissionWebhook', 'MutatingAdmissionWebhook'].map((name) => ({
        name,
        configuration: {
          apiVersion: 'apiserver.config.k8s.io/v1',
          kind: 'WebhookAdmissionConfiguration',
          kubeConfigFile: '/etc/kubernetes/admission-gateway/admission-webhooks.kubeconfig',
        },
      })),
    });
    assert.deepEqual(parse(await readFile(join(folder.dir, 'admission-webhooks.kubeconfig'), 'utf8')), {
      apiVersion: 'v1',
      kind: 'Config',
      users: [
        {
          name: '192.0.2.10:30443',
          user: {
            'client-certificate': '/etc/kubernetes/pki/gateway-client.crt',
            'client-key': '/etc/kubernetes/pki/gateway-client.key',
          },
        },
      ],
    });
    assert.doesNotMatch(run.stderr, /clientCAFile is set/);
    assert.match(
      run.stderr,
      /^ {2}--admission-control-config-file=\/etc\/kubernetes\/admission-gateway\/admission-config\.yaml$/m,
    );
  });

  it('refuses --admission-config when the gateway asks for no client certificate, writing nothing', async function () {
    const file = await folder.config(`kube: { enabled: false }\n${CHAIN}`);
    const run = await runCliCaptured(
      [
        'manifests',
        '--config',
        file,
        '--admission-config',
        'admission-config.yaml',
        '--admission-client-certificate',
        '/c.crt',
        '--admission-client-key',
        '/c.key',
      ],
      { cwd: folder.dir },
    );
    assert.equal(run.code, 2);
    assert.equal(
      run.stderr,
      'admission-gateway: --admission-config: the gateway asks for no client certificate (server.tls.clientCAFile ' +
        'is empty); set it to the CA that signed --admission-client-certificate, or leave the --admission-* flags out\n',
    );
    await assert.rejects(access(join(folder.dir, 'admission-config.yaml')));
  });

  it('lists its flags in the help', async function () {
    const help = await runCliCaptured(['manifests', '--help']);
    assert.match(help.stdout, /^ {2}--authorization-kubeconfig FILE$/m);
    assert.match(help.stdout, /^ {2}--authorization-url https:\/\/HOST\[:PORT\]$/m);
  });

  describe('refuses with exit code 2, writing nothing', function () {
    const cases: [string, string, string[], string][] = [
      [
        'a companion flag without the file',
        'kube: { enabled: false }\n',
        ['--authorization-mode', 'Node,RBAC'],
        "admission-gateway: --authorization-mode needs --authorization-kubeconfig FILE: it only shapes the authorization webhook's kubeconfig\n",
      ],
      [
        'a gateway that asks for client certificates, without one',
        'kube: { enabled: false }\nserver: { tls: { clientCAFile: client-ca.crt } }\n',
        ['--authorization-kubeconfig', 'authz.kubeconfig'],
        'admission-gateway: --authorization-kubeconfig: server.tls.clientCAFile is set, so the gateway refuses clients ' +
          'without a certificate; pass --authorization-client-certificate and --authorization-client-key (absolute ' +
          'paths on the control plane of a certificate that CA signed, and its key)\n',
      ],
      [
        'a misspelt flag, naming the closest',
        'kube: { enabled: false }\n',
        ['--authorization-kubeconfig', 'authz.kubeconfig', '--authorization-mod', 'RBAC'],
        'admission-gateway manifests: unknown option --authorization-mod (did you mean --authorization-mode?)\n' +
          'Run "admission-gateway manifests --help" for its options.\n',
      ],
    ];
    for (const [what, text, args, message] of cases) {
      it(`given ${what}`, async function () {
        const file = await folder.config(`${text}${CHAIN}`);
        const run = await runCliCaptured(['manifests', '--config', file, ...args], { cwd: folder.dir });
        assert.equal(run.stderr, message);
        assert.equal(run.code, 2);
        assert.equal(run.stdout, '');
        await assert.rejects(access(join(folder.dir, 'authz.kubeconfig')));
        await assert.rejects(access(join(folder.dir, 'certs')));
      });
    }
  });
});
