import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { parseConfigText } from '../../../server/config/load.js';
import { DEFAULT_EXCLUSIONS } from '../../../server/authorization/exclusions.js';
import {
  checkAuthorizationConfig,
  writeAuthorizationKubeconfig,
} from '../../../server/manifests/authorization-command.js';
import {
  parseAuthorizationOptions,
  type AuthorizationOptions,
} from '../../../server/manifests/authorization-options.js';
import { ManifestsUsageError } from '../../../server/manifests/options.js';

function authorization(extra: Record<string, string> = {}): AuthorizationOptions {
  const options = parseAuthorizationOptions({ 'authorization-kubeconfig': 'authz.kubeconfig', ...extra });
  assert.ok(options);
  return options;
}

const config = (text: string) => parseConfigText(text, 'gateway.yaml', '/srv/gw');
const CLIENT = {
  'authorization-client-certificate': '/etc/kubernetes/pki/gw-client.crt',
  'authorization-client-key': '/etc/kubernetes/pki/gw-client.key',
};

function refusal(run: () => void): string {
  try {
    run();
  } catch (err) {
    assert.ok(err instanceof ManifestsUsageError, String(err));
    return err.message;
  }
  assert.fail('accepted');
}

describe('checkAuthorizationConfig()', () => {
  it('accepts the serving files without client certificates, and client certificates when the gateway asks', () => {
    checkAuthorizationConfig(authorization(), { kind: 'serving' }, config('kube: { enabled: false }\n'));
    checkAuthorizationConfig(
      authorization(CLIENT),
      { kind: 'file', file: 'ca.crt' },
      config('server: { tls: { clientCAFile: client-ca.crt } }\n'),
    );
  });

  it("refuses the server.tls files' CA when the gateway serves a Secret's certificate, naming the Secret and how to get its CA", () => {
    const secret = config(
      'kube: { certificate: { secretName: gw-tls } }\nserver: { service: { namespace: gw-system } }\n',
    );
    assert.equal(
      refusal(() => checkAuthorizationConfig(authorization(), { kind: 'serving' }, secret)),
      '--authorization-kubeconfig: the gateway serves the certificate of the Secret gw-system/gw-tls ' +
        "(kube.certificate.secretName), not the server.tls files; pass --ca with that Secret's ca.crt: " +
        "kubectl -n gw-system get secret gw-tls -o jsonpath='{.data.ca\\.crt}' | base64 -d > gateway-ca.crt",
    );
    checkAuthorizationConfig(authorization(), { kind: 'file', file: 'gateway-ca.crt' }, secret);
  });

  it('requires the client certificate when server.tls.clientCAFile is set', () => {
    assert.equal(
      refusal(() =>
        checkAuthorizationConfig(
          authorization(),
          { kind: 'serving' },
          config('server: { tls: { clientCAFile: client-ca.crt } }\n'),
        ),
      ),
      '--authorization-kubeconfig: server.tls.clientCAFile is set, so the gateway refuses clients without a ' +
        'certificate; pass --authorization-client-certificate and --authorization-client-key (absolute paths on ' +
        'the control plane of a certificate that CA signed, and its key)',
    );
  });

  it('refuses a client certificate the gateway would not ask for', () => {
    assert.equal(
      refusal(() =>
        checkAuthorizationConfig(authorization(CLIENT), { kind: 'serving' }, config('log: { level: info }\n')),
      ),
      '--authorization-client-certificate: the gateway asks for no client certificate (server.tls.clientCAFile ' +
        'is empty); leave out --authorization-client-certificate and --authorization-client-key',
    );
  });
});

describe('writeAuthorizationKubeconfig()', () => {
  let dir: string;
  let notes: string[];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gateway-authz-'));
    notes = [];
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const output = (target: Parameters<typeof writeAuthorizationKubeconfig>[1]['target']) => ({
    name: 'admission-gateway',
    target,
    caBundle: 'Q0E=',
    cwd: dir,
    command: 'admission-gateway manifests --authorization-kubeconfig authz.kubeconfig',
    note: (text: string) => notes.push(text),
    authorize: [],
    exclusions: DEFAULT_EXCLUSIONS,
    allRequests: false,
    timeoutSeconds: 11,
  });

  it('writes the kubeconfig (mode 0600) with a header, and prints where it goes and the flags with their reasons', async () => {
    await writeAuthorizationKubeconfig(
      authorization({ 'authorization-url': 'https://10.96.0.20' }),
      output({ kind: 'service', namespace: 'admission-gateway', name: 'admission-gateway', port: 443 }),
    );
    const file = join(dir, 'authz.kubeconfig');
    const text = await readFile(file, 'utf8');
    assert.ok(
      text.startsWith(
        '# Rendered by `admission-gateway manifests --authorization-kubeconfig authz.kubeconfig`: regenerate it, do not edit it by hand.\n' +
          "# The kubeconfig of kube-apiserver's --authorization-webhook-config-file (/etc/kubernetes/admission-gateway/authorization-webhook.kubeconfig):\n" +
          '# it sends each SubjectAccessReview to the gateway, which answers deny or no opinion, never allow\n' +
          '# (docs/authorization-webhook.md in the admission-gateway repository).\n' +
          'apiVersion: v1\n',
      ),
      text,
    );
    assert.deepEqual(parse(text), {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'admission-gateway',
          cluster: { server: 'https://10.96.0.20/authorize', 'certificate-authority-data': 'Q0E=' },
        },
      ],
      users: [{ name: 'kube-apiserver', user: {} }],
      contexts: [{ name: 'admission-gateway', context: { cluster: 'admission-gateway', user: 'kube-apiserver' } }],
      'current-context': 'admission-gateway',
    });
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal(notes.length, 1);
    const lines = (notes[0] ?? '').split('\n');
    assert.deepEqual(lines.slice(0, 8), [
      `wrote ${file}: the kubeconfig of kube-apiserver's authorization webhook (calls https://10.96.0.20/authorize).`,
      'Put it at /etc/kubernetes/admission-gateway/authorization-webhook.kubeconfig on every control-plane node and ' +
        'add these kube-apiserver flags (keep the others; docs/authorization-webhook.md says how, and how to remove them):',
      '  --authorization-mode=Node,Webhook,RBAC',
      '  --authorization-webhook-config-file=/etc/kubernetes/admission-gateway/authorization-webhook.kubeconfig',
      '  --authorization-webhook-version=v1',
      '  --authorization-webhook-cache-authorized-ttl=5m',
      '  --authorization-webhook-cache-unauthorized-ttl=30s',
      'Why:',
    ]);
    assert.equal(lines.length, 13);
  });

  it("calls --url's origin when no --authorization-url is given", async () => {
    await writeAuthorizationKubeconfig(authorization(), output({ kind: 'url', url: 'https://192.0.2.10:30443' }));
    const kubeconfig = parse(await readFile(join(dir, 'authz.kubeconfig'), 'utf8')) as {
      clusters: { cluster: { server: string } }[];
    };
    assert.equal(kubeconfig.clusters[0]?.cluster.server, 'https://192.0.2.10:30443/authorize');
    assert.equal(notes.length, 1);
  });

  it('warns first, on its own, when the apiserver would call a cluster Service name', async () => {
    await writeAuthorizationKubeconfig(
      authorization(),
      output({ kind: 'service', namespace: 'gw-system', name: 'gw', port: 8443 }),
    );
    assert.equal(notes.length, 2);
    assert.equal(
      notes[0],
      'WARNING: the authorization webhook calls https://gw.gw-system.svc:8443/authorize, a cluster Service name. ' +
        "kube-apiserver runs on the host network and resolves it with the host's resolver, which usually does not " +
        'know cluster DNS names; every call would then fail, and a failed call counts as no opinion: the gateway ' +
        "would forbid nothing, without an error anywhere but the apiserver's log.\n" +
        "  Pass --authorization-url https://HOST[:PORT] with an address the control plane reaches (the Service's " +
        'ClusterIP, a NodePort, a load balancer) and that the serving certificate names (server.tls.dnsNames, ' +
        'server.tls.ipAddresses).',
    );
  });

  it('refuses a file it cannot write, naming it', async () => {
    const options = authorization({ 'authorization-kubeconfig': 'missing/authz.kubeconfig' });
    await assert.rejects(
      writeAuthorizationKubeconfig(options, output({ kind: 'url', url: 'https://192.0.2.10' })),
      (err: unknown) =>
        err instanceof ManifestsUsageError &&
        err.message.startsWith(`--authorization-kubeconfig: cannot write "${join(dir, 'missing/authz.kubeconfig')}": `),
    );
  });
});
