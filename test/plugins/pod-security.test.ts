import assert from 'node:assert/strict';
import { POD_SPEC_RESOURCES } from '../helpers/pod-resources.js';
import plugin from '../../plugins/pod-security.js';
import { on, type AdmissionRequest } from '../../server/plugin-api/index.js';
import { matches, runPlugin, settingsOf } from '../../server/plugin-testing/index.js';
import {
  cronjobCreate,
  deploymentCreate,
  edited,
  podCreate,
  podDelete,
  podUpdate,
  requestOf,
  setAt,
} from '../fixtures/reviews/index.js';

const denial = (message: string) => ({ message: `pod-security: ${message}`, code: 403 });
const NON_ROOT_HINT = 'must run as non-root: set securityContext.runAsNonRoot: true or a non-zero runAsUser';

/** The Pod fixture made compliant (pod-level runAsNonRoot), then edited at each `path: value`. */
function pod(values: Readonly<Record<string, unknown>> = {}): AdmissionRequest {
  const request = requestOf(podCreate());
  request.object = edited(request.object, { 'spec.securityContext': { runAsNonRoot: true }, ...values });
  return request;
}

describe('pod-security', () => {
  describe('settings', () => {
    it('forbids everything it checks by default, except adding NET_BIND_SERVICE', () => {
      assert.deepEqual(settingsOf(plugin, undefined), {
        allowPrivileged: false,
        allowPrivilegeEscalation: false,
        allowHostPath: false,
        allowHostNamespaces: false,
        requireRunAsNonRoot: true,
        allowedCapabilities: new Set(['NET_BIND_SERVICE']),
      });
    });

    it('normalises capability names the way runtimes accept them', () => {
      const parsed = settingsOf(plugin, { allowedCapabilities: ['cap_net_admin', 'SYS_PTRACE'] });
      assert.deepEqual(parsed.allowedCapabilities, new Set(['NET_BIND_SERVICE', 'NET_ADMIN', 'SYS_PTRACE']));
    });

    const refusals: ReadonlyArray<[string, unknown, string]> = [
      ['a non-boolean switch', { allowPrivileged: 'yes' }, 'allowPrivileged: expected true or false, got string "yes"'],
      [
        'a capability name with a space',
        { allowedCapabilities: ['NET_ADMIN', 'net admin'] },
        'allowedCapabilities[1]: expected a capability name such as NET_ADMIN, got "net admin"',
      ],
      [
        'capabilities given as one string',
        { allowedCapabilities: 'NET_ADMIN' },
        'allowedCapabilities: expected a list of strings, got string "NET_ADMIN"',
      ],
      [
        'a misspelt setting',
        { allowHostPID: true },
        'allowHostPID: unknown setting (known: allowPrivileged, allowPrivilegeEscalation, allowHostPath,' +
          ' allowHostNamespaces, requireRunAsNonRoot, allowedCapabilities)',
      ],
    ];
    for (const [description, raw, message] of refusals) {
      it(`refuses ${description}`, () => {
        assert.throws(() => settingsOf(plugin, raw), {
          name: 'ConfigError',
          message: `gateway.yaml: chain[0].settings.${message}`,
        });
      });
    }
  });

  describe('default match', () => {
    it('sees CREATE and UPDATE of pods, ephemeral containers, workloads and pod templates', () => {
      assert.deepEqual(plugin.match, {
        rules: [
          {
            operations: ['CREATE', 'UPDATE'],
            apiGroups: ['', 'apps', 'batch'],
            apiVersions: ['*'],
            resources: [...POD_SPEC_RESOURCES, 'pods/ephemeralcontainers'],
          },
        ],
      });
    });

    it('does not see a DELETE', () => {
      assert.equal(matches(plugin, requestOf(podDelete())), false);
    });
  });

  describe('given the Pod fixture', () => {
    it('refuses the sidecar that sets neither runAsNonRoot nor runAsUser', async () => {
      const request = requestOf(podCreate());
      const result = await runPlugin(plugin, request);
      assert.deepEqual(result, {
        allowed: false,
        denial: denial(`spec.containers[1]: ${NON_ROOT_HINT}`),
        warnings: [],
        annotations: {},
        patch: [],
        object: request.object,
        steps: [{ phase: 'validate', outcome: 'denied' }],
      });
    });
  });

  describe('given a compliant Pod', () => {
    it('allows it', async () => {
      const result = await runPlugin(plugin, pod());
      assert.equal(result.allowed, true, result.denial?.message);
    });
  });

  describe('given one violation at a time', () => {
    const cases: ReadonlyArray<[string, Record<string, unknown>, string, Record<string, unknown>]> = [
      [
        'the host network',
        { 'spec.hostNetwork': true },
        "spec.hostNetwork: sharing the host's namespaces is not allowed",
        { allowHostNamespaces: true },
      ],
      [
        'the host PID namespace',
        { 'spec.hostPID': true },
        "spec.hostPID: sharing the host's namespaces is not allowed",
        { allowHostNamespaces: true },
      ],
      [
        'the host IPC namespace',
        { 'spec.hostIPC': true },
        "spec.hostIPC: sharing the host's namespaces is not allowed",
        { allowHostNamespaces: true },
      ],
      [
        'a hostPath volume',
        { 'spec.volumes[1]': { name: 'logs', hostPath: { path: '/var/log', type: 'Directory' } } },
        'spec.volumes[1].hostPath: hostPath volumes are not allowed (volume "logs")',
        { allowHostPath: true },
      ],
      [
        'a privileged container',
        { 'spec.containers[0].securityContext.privileged': true },
        'spec.containers[0].securityContext.privileged: privileged containers are not allowed',
        { allowPrivileged: true },
      ],
      [
        'privilege escalation',
        { 'spec.containers[0].securityContext.allowPrivilegeEscalation': true },
        'spec.containers[0].securityContext.allowPrivilegeEscalation: privilege escalation is not allowed',
        { allowPrivilegeEscalation: true },
      ],
      [
        'an added capability',
        { 'spec.containers[0].securityContext.capabilities.add': ['NET_ADMIN', 'NET_BIND_SERVICE'] },
        'spec.containers[0].securityContext.capabilities.add: capability NET_ADMIN is not allowed',
        { allowedCapabilities: ['NET_ADMIN'] },
      ],
      [
        'a container running as root',
        { 'spec.containers[0].securityContext.runAsUser': 0 },
        'spec.containers[0].securityContext.runAsUser: running as root (user 0) is not allowed',
        { requireRunAsNonRoot: false },
      ],
    ];
    for (const [description, values, message, relaxed] of cases) {
      describe(`given ${description}`, () => {
        it('refuses it with the path of the field', async () => {
          const result = await runPlugin(plugin, pod(values));
          assert.deepEqual(result.denial, denial(message));
        });

        it(`allows it with ${JSON.stringify(relaxed)}`, async () => {
          const result = await runPlugin(plugin, pod(values), { settings: relaxed });
          assert.equal(result.allowed, true, result.denial?.message);
        });
      });
    }
  });

  describe('given a Pod with every violation', () => {
    const request = (): AdmissionRequest =>
      pod({
        'spec.hostNetwork': true,
        'spec.hostPID': true,
        'spec.volumes[0]': { name: 'docker-sock', hostPath: { path: '/var/run/docker.sock', type: 'Socket' } },
        'spec.containers[1].securityContext': {
          privileged: true,
          allowPrivilegeEscalation: true,
          runAsUser: 0,
          capabilities: { add: ['SYS_ADMIN', 'NET_BIND_SERVICE', 'CAP_NET_RAW'] },
        },
      });

    it('lists every violation with its path, pod-level first', async () => {
      const result = await runPlugin(plugin, request());
      assert.deepEqual(
        result.denial,
        denial(
          [
            "spec.hostNetwork: sharing the host's namespaces is not allowed",
            "spec.hostPID: sharing the host's namespaces is not allowed",
            'spec.volumes[0].hostPath: hostPath volumes are not allowed (volume "docker-sock")',
            'spec.containers[1].securityContext.privileged: privileged containers are not allowed',
            'spec.containers[1].securityContext.allowPrivilegeEscalation: privilege escalation is not allowed',
            'spec.containers[1].securityContext.capabilities.add: capabilities SYS_ADMIN, CAP_NET_RAW are not allowed',
            'spec.containers[1].securityContext.runAsUser: running as root (user 0) is not allowed',
          ].join('; '),
        ),
      );
    });

    it('allows it when every check is relaxed, matching capability names however they are written', async () => {
      const result = await runPlugin(plugin, request(), {
        settings: {
          allowPrivileged: true,
          allowPrivilegeEscalation: true,
          allowHostPath: true,
          allowHostNamespaces: true,
          requireRunAsNonRoot: false,
          allowedCapabilities: ['CAP_SYS_ADMIN', 'net_raw'],
        },
      });
      assert.equal(result.allowed, true, result.denial?.message);
    });
  });

  describe('running as non-root', () => {
    it('reports a pod-level runAsUser 0 once, where it is set, for all the containers inheriting it', async () => {
      const request = pod({
        'spec.securityContext': { runAsUser: 0 },
        'spec.initContainers': [{ name: 'init', image: 'busybox:1.36' }],
      });
      const result = await runPlugin(plugin, request);
      assert.deepEqual(
        result.denial,
        denial('spec.securityContext.runAsUser: running as root (user 0) is not allowed'),
      );
    });

    it('lets a container override a pod-level runAsUser 0 with its own user', async () => {
      const request = pod({
        'spec.securityContext': { runAsUser: 0 },
        'spec.containers[1].securityContext': { runAsUser: 1000 },
      });
      const result = await runPlugin(plugin, request);
      assert.equal(result.allowed, true, result.denial?.message);
    });

    it('accepts a non-zero pod-level runAsUser for every container', async () => {
      const result = await runPlugin(plugin, pod({ 'spec.securityContext': { runAsUser: 1000 } }));
      assert.equal(result.allowed, true, result.denial?.message);
    });

    it('refuses a container that turns the pod-level runAsNonRoot off', async () => {
      const result = await runPlugin(plugin, pod({ 'spec.containers[1].securityContext': { runAsNonRoot: false } }));
      assert.deepEqual(result.denial, denial(`spec.containers[1]: ${NON_ROOT_HINT}`));
    });
  });

  describe('given init and ephemeral containers', () => {
    it('checks them like the others', async () => {
      const request = pod({
        'spec.initContainers': [{ name: 'setup', image: 'busybox:1.36', securityContext: { privileged: true } }],
        'spec.ephemeralContainers': [
          { name: 'debug', image: 'busybox:1.36', securityContext: { capabilities: { add: ['SYS_PTRACE'] } } },
        ],
      });
      const result = await runPlugin(plugin, request);
      assert.deepEqual(
        result.denial,
        denial(
          'spec.initContainers[0].securityContext.privileged: privileged containers are not allowed; ' +
            'spec.ephemeralContainers[0].securityContext.capabilities.add: capability SYS_PTRACE is not allowed',
        ),
      );
    });
  });

  describe('given workloads', () => {
    it('allows the Deployment fixture, which runs as a non-root user', async () => {
      const result = await runPlugin(plugin, requestOf(deploymentCreate()));
      assert.equal(result.allowed, true, result.denial?.message);
    });

    it('reports the batch/v1beta1 CronJob container by its template path', async () => {
      const result = await runPlugin(plugin, requestOf(cronjobCreate()));
      assert.deepEqual(result.denial, denial(`spec.jobTemplate.spec.template.spec.containers[0]: ${NON_ROOT_HINT}`));
    });
  });

  describe('given an UPDATE', () => {
    it('allows an existing violation the request does not introduce (a label change on an old Pod)', async () => {
      const request = requestOf(podUpdate());
      for (const object of [request.object, request.oldObject]) {
        setAt(object, 'spec.containers[0].securityContext.privileged', true);
      }
      const result = await runPlugin(plugin, request);
      assert.equal(result.allowed, true, result.denial?.message);
    });

    it('refuses a violation the request introduces, and only that one', async () => {
      const request = requestOf(deploymentCreate());
      request.operation = 'UPDATE';
      setAt(request.object, 'spec.template.spec.containers[0].securityContext.runAsUser', 0);
      request.oldObject = structuredClone(request.object);
      setAt(request.object, 'spec.template.spec.hostNetwork', true);
      const result = await runPlugin(plugin, request);
      assert.deepEqual(
        result.denial,
        denial("spec.template.spec.hostNetwork: sharing the host's namespaces is not allowed"),
      );
    });
  });

  describe('given a DELETE, under an entry match that includes it', () => {
    it('allows it, whatever the stored object holds', async () => {
      const request = requestOf(podDelete());
      setAt(request.oldObject, 'spec.hostNetwork', true);
      const result = await runPlugin(plugin, request, { match: on('pods').delete().toMatch() });
      assert.deepEqual(
        { allowed: result.allowed, steps: result.steps },
        { allowed: true, steps: [{ phase: 'validate', outcome: 'allowed' }] },
      );
    });
  });

  describe('given malformed objects', () => {
    it('treats null fields as absent', async () => {
      const request = pod({
        'spec.hostNetwork': null,
        'spec.volumes': [{ name: 'empty', hostPath: null }],
        'spec.containers[0].securityContext': null,
        'spec.containers[1].securityContext': { capabilities: { add: null }, runAsUser: null, runAsNonRoot: null },
      });
      const result = await runPlugin(plugin, request);
      assert.equal(result.allowed, true, result.denial?.message);
    });

    it('reads a null pod-level securityContext as an empty one', async () => {
      const result = await runPlugin(plugin, pod({ 'spec.securityContext': null }));
      assert.deepEqual(result.denial, denial(`spec.containers[1]: ${NON_ROOT_HINT}`));
    });

    it('skips volume and capability lists that are not lists', async () => {
      const request = pod({
        'spec.volumes': { name: 'logs', hostPath: { path: '/var/log' } },
        'spec.containers[1].securityContext': { capabilities: { add: 'SYS_ADMIN' } },
      });
      const result = await runPlugin(plugin, request);
      assert.equal(result.allowed, true, result.denial?.message);
    });

    it('allows a Pod without spec, with a null one, or with containers that are null or not a list', async () => {
      for (const values of [
        { spec: undefined },
        { spec: null },
        { 'spec.containers': null },
        { 'spec.containers': 'web' },
      ]) {
        const result = await runPlugin(plugin, pod(values));
        assert.deepEqual({ values, allowed: result.allowed }, { values, allowed: true });
      }
    });
  });
});
