/**
 * The provider SDK as the package exports it (`admission-gateway/provider`): serve plugin modules — the same
 * ones the gateway compiles in — as a remote provider, and register it as an AdmissionProvider.
 *
 * ```ts
 * import { KubeConfig } from '@kubernetes/client-node';
 * import { definePlugin, serveProvider } from 'admission-gateway/provider';
 *
 * const kubeConfig = new KubeConfig();
 * kubeConfig.loadFromDefault(); // KUBECONFIG, ~/.kube/config, or the Pod's service account
 * await serveProvider({
 *   plugins: [{ plugin: myPlugin, settings: { … } }],
 *   tls: { cert: readFileSync('/tls/tls.crt'), key: readFileSync('/tls/tls.key') },
 *   register: { kubeConfig, name: 'my-plugin', service: { namespace: 'tools', name: 'my-plugin' }, ca },
 * });
 * ```
 */
export { serveProvider } from './serve-provider.js';
export type { ProvidedPlugin, ProviderHandler, ProviderServer, ProviderServerOptions } from './serve-provider.js';
export {
  DEFAULTS_FIELD_MANAGER,
  REGISTRATION_FIELD_MANAGER,
  checkRegistrationOptions,
  registerProvider,
} from './registration.js';
export type { Registration, RegistrationFailure, RegistrationOptions, RegistrationState } from './registration.js';
export { RegistrationOptionsError } from './registration-spec.js';
export type { ProviderLocation, RegistrationDefaults, ServiceReference } from './registration-spec.js';
export { definePlugin } from '../plugin-api/index.js';
