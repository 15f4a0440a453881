/**
 * Guards namespaces labelled `admissiongateway.io/restricted=true`: outside the configured groups, nobody
 * reads their Secrets (get, list, watch — through the authorization webhook, POST /authorize) or opens a
 * session into their Pods (exec, attach, port-forward, proxy — through CONNECT admission, before the
 * apiserver reaches any node). It only forbids: whatever it does not forbid, RBAC decides as before.
 * Namespace labels come from the gateway's cluster-mode cache; without a cluster no namespace is restricted.
 * system:masters is never refused.
 */
import {
  SettingsError,
  allow,
  definePlugin,
  deny,
  on,
  optionalEnum,
  isLabelKey,
  optionalString,
  optionalStringList,
  settingsObject,
  type SelectorRequirement,
} from '../server/plugin-api/index.js';

export const RESTRICTED_LABEL = 'admissiongateway.io/restricted';
const MASTERS = 'system:masters';

export interface AccessGuardSettings {
  /** Groups whose members are not guarded against (e.g. the team owning the namespaces). */
  readonly allowedGroups: ReadonlySet<string>;
  /**
   * Lists and watches of Secrets across all namespaces would show those of restricted namespaces too:
   * `forbid` (the default) refuses them outside the allowed groups, `allow` leaves them to RBAC.
   */
  readonly clusterWideReads: 'forbid' | 'allow';
  /**
   * A label that marks Secrets as shareable (value `true`): a list or watch whose label selector requires it
   * (`-l <label>=true`) can only return such Secrets, so it is left to RBAC, in restricted namespaces and across
   * all of them. Kubernetes 1.34+ sends the selector; older apiservers do not, and such reads stay refused.
   */
  readonly shareableLabel: string | undefined;
}

function parseSettings(raw: unknown): AccessGuardSettings {
  const settings = settingsObject(raw ?? {}, ['allowedGroups', 'clusterWideReads', 'shareableLabel']);
  const groups = optionalStringList(settings, 'allowedGroups') ?? [];
  const empty = groups.indexOf('');
  if (empty !== -1) throw new SettingsError(`allowedGroups[${empty}]`, 'expected a group name, got ""');
  const shareableLabel = optionalString(settings, 'shareableLabel', '');
  if (shareableLabel !== '' && !isLabelKey(shareableLabel)) {
    throw new SettingsError('shareableLabel', `expected a label key, got "${shareableLabel}"`);
  }
  return {
    allowedGroups: new Set(groups),
    clusterWideReads: optionalEnum(settings, 'clusterWideReads', ['forbid', 'allow'] as const, 'forbid'),
    shareableLabel: shareableLabel || undefined,
  };
}

/** Whether a list's or watch's label selector requires `label=true`, so it only returns shareable Secrets. */
const onlyShareable = (selector: readonly SelectorRequirement[], label: string | undefined): boolean =>
  label !== undefined &&
  selector.some(
    (r) => r.key === label && r.operator === 'In' && r.values.length > 0 && r.values.every((v) => v === 'true'),
  );

const allowed = (groups: readonly string[], settings: AccessGuardSettings): boolean =>
  settings.allowedGroups.size > 0 && groups.some((g) => settings.allowedGroups.has(g));

const who = (settings: AccessGuardSettings): string =>
  settings.allowedGroups.size > 0 ? `only members of ${[...settings.allowedGroups].join(', ')} may` : 'nobody may';

/** pods/portforward → "port-forward", as kubectl names it. */
const SESSION: Readonly<Record<string, string>> = {
  'pods/exec': 'exec into',
  'pods/attach': 'attach to',
  'pods/portforward': 'port-forward to',
  'pods/proxy': 'proxy to',
};

export default definePlugin({
  name: 'access-guard',
  description: 'Forbids reading Secrets of, and exec/attach/port-forward/proxy into Pods of, restricted namespaces',
  // CONNECT admission of the Pod sessions, only in restricted namespaces (the webhook's namespaceSelector).
  match: on('pods/exec', 'pods/attach', 'pods/portforward', 'pods/proxy')
    .connect()
    .namespaceSelector({ matchLabels: { [RESTRICTED_LABEL]: 'true' } }),
  authorizeMatch: { verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['secrets'] },
  settings: parseSettings,
  setup: (settings) => ({
    authorize(ctx) {
      if (allowed(ctx.user.groups, settings)) return allow();
      if (onlyShareable(ctx.labelSelector, settings.shareableLabel)) return allow();
      if (ctx.namespace === '') {
        if (settings.clusterWideReads === 'allow') return allow();
        return deny(
          `Secrets cannot be read across all namespaces while namespaces labelled ${RESTRICTED_LABEL}=true exist: ` +
            `${ctx.verb} them one namespace at a time`,
        );
      }
      if (ctx.namespaceLabels?.[RESTRICTED_LABEL] !== 'true') return allow();
      return deny(
        `namespace ${ctx.namespace} is restricted (${RESTRICTED_LABEL}=true): ${who(settings)} read its Secrets`,
      );
    },
    validate({ request }) {
      const groups = request.userInfo.groups ?? [];
      // The apiserver never asks an authorizer about system:masters; admission sees it: exempt it here too, so
      // cluster admins can always get into a Pod to repair it.
      if (groups.includes(MASTERS) || allowed(groups, settings)) return allow();
      const resource = `${request.resource.resource}/${request.subResource ?? ''}`;
      const what = SESSION[resource] ?? 'connect to';
      return deny(
        `namespace ${request.namespace ?? ''} is restricted (${RESTRICTED_LABEL}=true): ${who(settings)} ${what} its Pods`,
      );
    },
  }),
});
