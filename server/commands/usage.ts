/**
 * The command line's shape: commands, their options and help, and the parse that turns argv into a command
 * with checked options. Mistakes become one UsageError line naming the command, the option and the closest
 * one it knows, plus a pointer to --help (exit code 2), instead of parseArgs' own message.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { closestName, didYouMean } from '../base/did-you-mean.js';
import { ROUTES } from '../http/routes.js';

/** A mistake on the command line (exit code 2): `admission-gateway[ <command>]: <message>`, then `hint`. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: Command,
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

export const COMMANDS = [
  'serve',
  'certs',
  'review',
  'replay',
  'manifests',
  'provider',
  'openapi',
  'audit',
  'test',
  'version',
] as const;
export type Command = (typeof COMMANDS)[number];

/** `review --exit-code`: the request was refused. 1 and 2 already mean failure and bad usage. */
export const EXIT_DENIED = 3;
/**
 * `replay --exit-code`: a replayed review would be answered differently, none of them newly denied. A review
 * denied with another message counts here: it was refused and still is, so nothing admitted is refused.
 */
export const EXIT_CHANGED = 4;

export const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
  config: { type: 'string', short: 'c' },
  port: { type: 'string' },
  'ops-port': { type: 'string' },
  'health-port': { type: 'string' },
  'log-level': { type: 'string' },
  route: { type: 'string' },
  'exit-code': { type: 'boolean' },
  explain: { type: 'boolean' },
  exceptions: { type: 'string', multiple: true },
  ca: { type: 'string' },
  service: { type: 'string' },
  url: { type: 'string' },
  'no-ca-bundle': { type: 'boolean' },
  name: { type: 'string' },
  output: { type: 'string', short: 'o' },
  'namespace-label': { type: 'string', multiple: true },
  'exclude-namespace': { type: 'string', multiple: true },
  'all-resources': { type: 'boolean' },
  'kube-version': { type: 'string' },
  'admission-config': { type: 'string' },
  'admission-client-certificate': { type: 'string' },
  'admission-client-key': { type: 'string' },
  'admission-control-plane-dir': { type: 'string' },
  'authorization-kubeconfig': { type: 'string' },
  'authorization-config': { type: 'string' },
  'authorization-url': { type: 'string' },
  'authorization-mode': { type: 'string' },
  'authorization-webhook-config-file': { type: 'string' },
  'authorization-client-certificate': { type: 'string' },
  'authorization-client-key': { type: 'string' },
  plugin: { type: 'string', multiple: true },
  settings: { type: 'string', multiple: true },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'ca-file': { type: 'string' },
  register: { type: 'boolean' },
  'provider-name': { type: 'string' },
  kubeconfig: { type: 'string' },
  'owner-clusterrolebinding': { type: 'string' },
  order: { type: 'string' },
  'failure-policy': { type: 'string' },
  'timeout-seconds': { type: 'string' },
  step: { type: 'string' },
  'dry-run': { type: 'boolean' },
  offline: { type: 'boolean' },
  'from-recording': { type: 'string' },
  write: { type: 'string' },
} satisfies ParseArgsConfig['options'];

type OptionName = keyof typeof OPTIONS;

export type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

const EVERY_COMMAND: readonly OptionName[] = ['help', 'version', 'config'];

/** The options of `provider` that only mean something with --register. */
export const REGISTRATION_OPTIONS = [
  'provider-name',
  'service',
  'url',
  'kubeconfig',
  'owner-clusterrolebinding',
  'order',
  'failure-policy',
  'timeout-seconds',
] as const satisfies readonly OptionName[];

/** The options each command takes besides --help, --version and --config. */
const COMMAND_OPTIONS: Readonly<Record<Command, readonly OptionName[]>> = {
  serve: ['port', 'ops-port', 'health-port', 'log-level'],
  certs: ['ca'],
  review: ['route', 'exit-code', 'explain', 'output', 'exceptions'],
  replay: ['offline', 'output', 'exit-code', 'exceptions'],
  provider: [
    'port',
    'log-level',
    'plugin',
    'settings',
    'tls-cert',
    'tls-key',
    'ca-file',
    'register',
    ...REGISTRATION_OPTIONS,
  ],
  openapi: [],
  audit: ['step', 'dry-run', 'output', 'exit-code', 'kubeconfig'],
  test: ['output', 'from-recording', 'write'],
  manifests: [
    'ca',
    'service',
    'url',
    'no-ca-bundle',
    'name',
    'output',
    'namespace-label',
    'exclude-namespace',
    'all-resources',
    'kube-version',
    'admission-config',
    'admission-client-certificate',
    'admission-client-key',
    'admission-control-plane-dir',
    'authorization-kubeconfig',
    'authorization-config',
    'authorization-url',
    'authorization-mode',
    'authorization-webhook-config-file',
    'authorization-client-certificate',
    'authorization-client-key',
  ],
  version: [],
};

const CONFIG_OPTION = '  --config FILE       gateway configuration (default: gateway.yaml, env GATEWAY_CONFIG)';

export const HELP: Readonly<Record<Command | 'main', string>> = {
  main: `admission-gateway — an admission webhook gateway for Kubernetes

usage: admission-gateway <command> [options]

commands:
  serve     run the webhook (HTTPS) and operations (HTTP) servers (default)
  certs     generate the CA and serving certificate if missing, print the caBundle
  review    run an AdmissionReview or a Kubernetes object through the configured chain offline
  replay    run a recording's reviews through a candidate chain and print what would be answered differently
  manifests render the webhook configurations for the configured chain
  provider  serve plugins as a remote provider (a handler per phase, discovery), registered if asked
  openapi   print the OpenAPI 3.1 document of the remote provider protocol
  audit     run the validating steps over the cluster's existing objects, write PolicyReports
  test      run policy tests (test files of cases and expected answers) through the configured chain offline
  version   print the version (also --version, -v)

Run "admission-gateway <command> --help" for a command's options.
Exit codes: 0 ok, 1 runtime failure or a failed test case (test), 2 bad usage or invalid config or test file,
3 refused (review, audit --exit-code) or newly denied (replay --exit-code), 4 answered differently (replay
--exit-code).`,
  serve: `usage: admission-gateway serve [--config FILE] [--port N] [--ops-port N] [--health-port N] [--log-level LEVEL]

${CONFIG_OPTION}
  --port N            webhook HTTPS port (overrides server.port)
  --ops-port N        operations HTTP port (overrides server.opsPort)
  --health-port N     probes' HTTP port, /healthz and /readyz (overrides server.healthPort)
  --log-level LEVEL   debug, info, warn, error or silent (overrides log.level)`,
  certs: `usage: admission-gateway certs [--config FILE] [--ca FILE]

Generates a CA and serving certificate at server.tls.certFile/keyFile when both are missing (as serve
does), then prints the caBundle (base64 of the CA certificate) for a webhook configuration's
clientConfig.caBundle. Standard error says which files were generated or reused.

${CONFIG_OPTION}
  --ca FILE           CA certificate to print (default: ca.crt next to the serving certificate)`,
  provider: `usage: admission-gateway provider [--plugin NAME [--settings NAME=JSON]]... | [--config FILE]
                                  [--tls-cert FILE --tls-key FILE] [--ca-file FILE] [--port N] [--log-level LEVEL]
                                  [--register (--service [NAMESPACE/]NAME[:PORT] | --url https://HOST[:PORT])
                                   [--provider-name NAME] [--kubeconfig FILE] [--owner-clusterrolebinding NAME]
                                   [--order N] [--failure-policy Fail|Ignore] [--timeout-seconds N]]

Serves plugins as a remote provider: an AdmissionReview handler per phase each plugin has work in at
/<handler>, GET /discovery listing them, GET /healthz, GET /registration. The same plugin modules the
gateway compiles in, with the same settings, give the same answers.

  --plugin NAME       serve this shipped plugin (repeatable); without it, the config's plugin entries
  --settings NAME=JSON
                      settings of --plugin NAME, as its chain entry's settings
${CONFIG_OPTION}
                      (its server.host, server.port, server.tls and log.level apply)
  --tls-cert FILE, --tls-key FILE
                      the serving certificate and key (e.g. a mounted Secret); default server.tls,
                      generated when missing as serve does
  --ca-file FILE      the CA registered as caBundle (default: ca.crt beside the certificate, if there)
  --port N            HTTPS port (overrides server.port)
  --log-level LEVEL   debug, info, warn, error or silent (overrides log.level)

Self-registration: once serving, ensure the AdmissionProvider exists and says where the provider is
(server-side apply, field manager admission-gateway-provider: url or service, caBundle, discovery: true,
phases). Its other fields are the operator's and never touched; --order, --failure-policy and
--timeout-seconds are set only when the registration is created. Retried with backoff (1 s to 60 s) while
the apiserver is unreachable or refuses (RBAC, missing CRD); serving never waits for it.
  --register          register as an AdmissionProvider
  --service [NAMESPACE/]NAME[:PORT]
                      the Service the provider runs behind (namespace default: env POD_NAMESPACE; port 443)
  --url https://HOST[:PORT]
                      the provider's URL instead
  --provider-name NAME
                      the AdmissionProvider's name (default: the Service's name)
  --kubeconfig FILE   credentials (default: KUBECONFIG, ~/.kube/config, then the in-cluster service account)
  --owner-clusterrolebinding NAME
                      the ClusterRoleBinding the registration is deleted with (garbage collection)
  --order N, --failure-policy Fail|Ignore, --timeout-seconds N
                      defaults for a registration this start creates`,
  openapi: `usage: admission-gateway openapi

Prints, as JSON, the OpenAPI 3.1 document of the remote provider protocol: what the gateway POSTs to a
provider (AdmissionReview v1 and v1beta1, the authorize phase's SubjectAccessReview, ?timeout= and the
X-Admission-Gateway-Settings header), the answers it accepts, and the discovery document. The ops server
serves the same document at /openapi/v3. Needs no configuration.`,
  audit: `usage: admission-gateway audit [--config FILE] [--step NAME] [--dry-run] [--output text|json] [--exit-code]
                              [--kubeconfig FILE]

Runs the configured chain's validating steps over the objects that already exist in the cluster and writes
the results as PolicyReports (wgpolicyk8s.io/v1alpha2, one named admission-gateway per namespace) and a
ClusterPolicyReport for cluster-scoped objects: what enforcing each step would refuse. Each object is
reviewed as the CREATE of it would be now (a dry run, by admission-gateway:audit); a step in warn or audit
mode that denies is a fail, a step that fails is an error, an allowed object a pass; a step whose rules or
selectors leave the object out has no result for it. The resources listed are those the steps' rules select
(CREATE rules; subresources never), found through the apiserver's discovery. Bounded by audit.maxObjects,
audit.maxObjectsPerResource and audit.timeoutSeconds; a bound that stopped the audit is said in the summary.
Reports of namespaces without results any more are deleted (only after a complete audit). Needs the
PolicyReport CRDs (manifests/policy-reports/) and RBAC to list the audited resources.

${CONFIG_OPTION}
  --step NAME         only this validating step
  --dry-run           print, write nothing
  --output, -o FORMAT text (default: the summary) or json (the summary and the reports)
  --exit-code         exit ${EXIT_DENIED} when an object fails or errors in a step
  --kubeconfig FILE   credentials (default: kube.kubeconfig, KUBECONFIG, ~/.kube/config, then the in-cluster
                      service account)

Exit codes: 0 audited, 1 incomplete (a resource not listed, a bound reached, a report not written) or a
runtime failure, 2 bad usage or config, ${EXIT_DENIED} some object fails (with --exit-code).`,
  review: `usage: admission-gateway review <file|-> [--config FILE] [--route ROUTE] [--exit-code]
                                       [--explain] [--output text|json] [--exceptions FILE]...

Runs an AdmissionReview, or a Kubernetes object (JSON or YAML; "-" reads standard input), through the
configured chain without a cluster and prints, as JSON, each phase's AdmissionReview response and its
decoded patch; logs go to standard error. An object is reviewed as the CREATE the apiserver would send:
kind, resource, name and namespace (metadata.namespace, else "default" for a namespaced built-in kind)
are inferred. With the default route "all" it does what the apiserver does: the mutate phase, then the
validate phase on the mutated object.

${CONFIG_OPTION}
  --route ROUTE       all (default), ${ROUTES.join(', ')}
  --exit-code         exit ${EXIT_DENIED} when the request is refused (a phase denies or fails closed), to gate CI
  --explain           print each phase's decision trace instead: every step in order, matched or skipped and
                      why (the rule or selector), its verdict, message, warnings, patch operations, conflicts,
                      time and the deadline it had left
  --output, -o FORMAT without --explain, json (the answers, as by default); with --explain, text (default) or
                      json (the traces as GET /explain/<uid> serves them)
  --exceptions FILE   AdmissionExceptions and ClusterAdmissionExceptions (YAML) applied besides those of
                      exceptions.files, judged at the current time (repeatable)

Exit codes: 0 reviewed (whatever the answer, without --exit-code), 1 runtime failure, 2 bad usage, config
or input, ${EXIT_DENIED} refused (with --exit-code).`,
  replay: `usage: admission-gateway replay <recording> [--config CANDIDATE.yaml] [--offline] [--output text|json]
                                [--exit-code] [--exceptions FILE]...

Runs every review of a recording (the NDJSON file record: writes) through the candidate configuration's
chain on the route that answered it, and prints what would be answered differently: reviews newly denied,
newly allowed, denied with another message or code (both messages), whose patch changed (operations added +,
removed -) or whose warnings changed. Remote
providers are called as serve calls them; logs go to standard error.

${CONFIG_OPTION}
  --offline           do not call remote providers: each provider step answers what the recording says that
                      step answered for the review; one the recording has no answer of allows, and is listed
                      under "not recorded"
  --output, -o FORMAT text (default) or json
  --exit-code         exit ${EXIT_DENIED} when a review would be newly denied, else ${EXIT_CHANGED} when any would be answered
                      differently (a changed denial included), to gate CI
  --exceptions FILE   AdmissionExceptions and ClusterAdmissionExceptions (YAML) applied besides those of the
                      candidate's exceptions.files, judged at the time each review was recorded (repeatable)

Exit codes: 0 replayed (whatever the differences, without --exit-code), 1 runtime failure, 2 bad usage,
config or recording (the message names the line), ${EXIT_DENIED} newly denied, ${EXIT_CHANGED} answered differently (with
--exit-code).`,
  test: `usage: admission-gateway test [PATH...] [--config FILE] [--output text|junit|json]
       admission-gateway test --from-recording RECORDING --write DIR [--config FILE]

Runs policy tests: a test file (kind AdmissionTest, docs/policy-tests.md) names a config, what its remote
providers answer and its cases, each a request and what is expected of the answer. Every case is reviewed
through the config's chain as serve reviews it, both phases as the apiserver calls them (mutate, the patch
applied, then validate) unless the case names one route; remote providers are answered from the test file
(inline or from a recording), never called. A PATH is a test file, or a folder searched for *.test.yaml
(default: the current folder).

  --config FILE       run every test file against this config instead of the one it names
  --output, -o FORMAT text (default: PASS or FAIL per case, a diff for each failure), junit (JUnit XML) or json
  --from-recording RECORDING --write DIR
                      instead of running tests, write test files into DIR pinning today's decisions: a case per
                      review of the recording (record:), on the route that answered it, its providers answering
                      what the recording says, expecting what the config (--config, env GATEWAY_CONFIG, default
                      gateway.yaml) answers now

Exit codes: 0 every case passed (or the files were written), 1 a case failed, 2 bad usage, or a test file,
config or recording that cannot be used (the message names the file, its line and the field).`,
  manifests: `usage: admission-gateway manifests [--config FILE] [--service NAMESPACE/NAME[:PORT] | --url https://HOST[:PORT]]
                                   [--ca FILE | --no-ca-bundle] [--name NAME] [--output yaml|json]
                                   [--namespace-label KEY=VALUE]... [--exclude-namespace NAME]... [--all-resources]
                                   [--kube-version VERSION]
                                   [--admission-config FILE --admission-client-certificate PATH
                                    --admission-client-key PATH [--admission-control-plane-dir DIR]]
                                   [--authorization-kubeconfig FILE [--authorization-config FILE]
                                    [--authorization-url https://HOST[:PORT]]
                                    [--authorization-mode MODES] [--authorization-webhook-config-file PATH]
                                    [--authorization-client-certificate PATH --authorization-client-key PATH]]

Prints the MutatingWebhookConfiguration and ValidatingWebhookConfiguration that send the apiserver's
requests to the gateway for the configured chain (pipe into "kubectl apply -f -"):
  - mutate.admissiongateway.io on /mutate: the whole mutate phase in one webhook (split by failure policy
    it would run out of chain order); failurePolicy Fail if any mutate step is Fail, else Ignore;
    reinvocationPolicy IfNeeded if any mutate step is.
  - validate-fail.admissiongateway.io on /validate/fail and validate-ignore.admissiongateway.io on
    /validate/ignore: the validating steps of each failure policy.
  A webhook whose route has no step is left out. rules: the union of its steps' rules (equal operations,
  groups, versions and scope merged; rules and resources another rule covers dropped). timeoutSeconds: the
  largest step timeout plus server.deadlineMarginMs, rounded up, at most 30. sideEffects: NoneOnDryRun when
  a step declares sideEffects Some (the gateway skips it on dry-run), else None. Excluded, so the gateway
  can never lock the cluster out: kube-system, kube-node-lease, the gateway's namespace and namespaces
  labelled admissiongateway.io/exclude — from Kubernetes 1.30 by matchConditions (Leases too, wherever
  they are) and the label, on 1.21-1.29 by namespaceSelector, before 1.21 only by the label (label those
  namespaces). Step selectors are evaluated by the gateway itself.
A webhook that is failurePolicy Fail and matches every resource is rendered with a warning on stderr
naming the steps responsible: while the gateway is unreachable it refuses every such write.
AdmissionProviders added at run time only see what these rules send: with kube.watchProviders on, a note
says so on stderr; --all-resources renders every route with a catch-all rule instead.
--config also takes the ConfigMap that carries gateway.yaml (manifests/config.yaml).

  --config FILE             gateway configuration (default: gateway.yaml, env GATEWAY_CONFIG)
  --service NS/NAME[:PORT]  call this Service (default: server.service of the config, port 443)
  --url https://HOST[:PORT] call this URL instead (e.g. a gateway outside the cluster)
  --ca FILE                 CA certificate for caBundle (default: ca.crt next to server.tls.certFile,
                            generated with the serving certificate when both are missing, as certs does)
  --no-ca-bundle         leave caBundle out: the gateway in cluster mode patches it in, and re-applying
                         the output keeps what it patched (apply never removes a field it did not set)
  --name NAME               metadata.name of both configurations (default: admission-gateway)
  --output, -o FORMAT       yaml (default: documents with a comment header) or json (a v1 List)
  --namespace-label K=V     only select namespaces with this label (repeatable)
  --exclude-namespace NAME  exclude this namespace too (repeatable)
  --all-resources           catch-all rules on every route, for AdmissionProviders added at run time
  --kube-version VERSION    the Kubernetes version to render for, such as 1.30 or 1.37.2 (default: 1.37,
                            the newest tested)

kube-apiserver presenting a client certificate to the webhooks (the gateway asks for one when
server.tls.clientCAFile is set), with --admission-config: writes the AdmissionConfiguration for
kube-apiserver's --admission-control-config-file and, beside it, the kubeconfig it names
(admission-webhooks.kubeconfig: the certificate, under the webhooks' server name), and prints the flag.
  --admission-config FILE   write the AdmissionConfiguration to FILE
  --admission-client-certificate PATH, --admission-client-key PATH
                            the certificate and key kube-apiserver presents, absolute paths on the control plane
  --admission-control-plane-dir DIR
                            where both files go on the control plane (default: /etc/kubernetes/admission-gateway)

The gateway as kube-apiserver's authorization webhook (POST /authorize: it may forbid, never allow), with
--authorization-kubeconfig: writes the kubeconfig kube-apiserver's --authorization-webhook-config-file reads
(the caBundle above as certificate-authority-data) and prints on stderr the apiserver flags to add and why
(docs/authorization-webhook.md). kube-apiserver runs on the host network and usually cannot resolve a
Service's DNS name: without --authorization-url it calls --url, else the Service's name, with a warning.
  --authorization-kubeconfig FILE
                            write the kubeconfig to FILE (it needs the caBundle: not with --no-ca-bundle)
  --authorization-config FILE
                            Kubernetes 1.32+: also write an AuthorizationConfiguration for kube-apiserver's
                            --authorization-config (instead of the --authorization-mode and webhook flags):
                            the authorizers of --authorization-mode with the gateway's webhook in its place,
                            failurePolicy NoOpinion, and matchConditions that send it only the requests an
                            authorize step matches, never those of the identities it never judges
  --authorization-url https://HOST[:PORT]
                            the gateway as the control plane reaches it (/authorize is appended); the serving
                            certificate must name HOST (server.tls.dnsNames, server.tls.ipAddresses)
  --authorization-mode MODES
                            kube-apiserver's current --authorization-mode (default: Node,RBAC); Webhook is
                            placed before the first authorizer that is not Node
  --authorization-webhook-config-file PATH
                            where the kubeconfig will be on the control plane (default:
                            /etc/kubernetes/admission-gateway/authorization-webhook.kubeconfig)
  --authorization-client-certificate PATH, --authorization-client-key PATH
                            the client certificate and key kube-apiserver presents, absolute paths on the
                            control plane: required when server.tls.clientCAFile is set, refused otherwise`,
  version: `usage: admission-gateway version (also --version, -v)

Prints "admission-gateway <version>".`,
};

/** The parsed command line: `command` is undefined when none was named (serve is the default). */
export interface CommandLine {
  readonly command: Command | undefined;
  /** The positional arguments after the command. */
  readonly args: readonly string[];
  readonly values: Values;
}

function isCommand(word: string): word is Command {
  return (COMMANDS as readonly string[]).includes(word);
}

function isOption(name: string): name is OptionName {
  return Object.hasOwn(OPTIONS, name);
}

function hint(command: Command | undefined): string {
  return command
    ? `Run "admission-gateway ${command} --help" for its options.`
    : 'Run "admission-gateway --help" for the commands and their options.';
}

type Token = NonNullable<ReturnType<typeof parseArgs>['tokens']>[number];

/** Why `token` does not fit `command`, or undefined when it does. */
function optionProblem(token: Token & { kind: 'option' }, command: Command | undefined): string | undefined {
  const allowed = [...EVERY_COMMAND, ...COMMAND_OPTIONS[command ?? 'serve']];
  const { name, rawName } = token;
  if (!isOption(name) || !allowed.includes(name)) {
    const owners = isOption(name) ? COMMANDS.filter((c) => COMMAND_OPTIONS[c].includes(name)) : [];
    if (owners.length > 0) return `unknown option ${rawName} (an option of ${owners.join(' and ')})`;
    const closest = closestName(name, allowed);
    return `unknown option ${rawName}${closest ? ` (did you mean --${closest}?)` : ''}`;
  }
  if (OPTIONS[name].type === 'string' && token.value === undefined) return `option ${rawName} needs a value`;
  if (OPTIONS[name].type === 'boolean' && token.inlineValue) return `option ${rawName} takes no value`;
  return undefined;
}

/** Parses argv; throws UsageError for an unknown command, an option the command does not take, or a bad value. */
export function parseCommandLine(argv: readonly string[]): CommandLine {
  // A lenient pass first: it reports unknown options as tokens instead of throwing, so the message can name
  // the command and the closest option.
  const { tokens } = parseArgs({
    args: [...argv],
    options: OPTIONS,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  const first = tokens.find((t) => t.kind === 'positional')?.value;
  const command = first !== undefined && isCommand(first) ? first : undefined;
  for (const token of tokens) {
    const problem = token.kind === 'option' ? optionProblem(token, command) : undefined;
    if (problem) throw new UsageError(problem, command, hint(command));
  }
  if (first !== undefined && command === undefined) {
    throw new UsageError(`unknown command "${first}"${didYouMean(first, COMMANDS)}`, undefined, hint(undefined));
  }
  const { values, positionals } = parseArgs({
    args: [...argv],
    options: OPTIONS,
    allowPositionals: true,
    strict: true,
  });
  return { command, args: positionals.slice(command ? 1 : 0), values };
}
