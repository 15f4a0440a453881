/** How the gateway writes a request's kind and resource wherever it names them: logs, traces, spans. */
import type { AdmissionRequest, GroupVersionKind } from './types.js';

/** `group/version/Kind`, the core group without a prefix: `v1/Pod`, `apps/v1/Deployment`. */
export const kindName = ({ group, version, kind }: GroupVersionKind): string =>
  `${group ? `${group}/` : ''}${version}/${kind}`;

/** `group/version/resource[/subresource]`, the core group without a prefix: `v1/pods/exec`. */
export function resourceName(request: AdmissionRequest): string {
  const { group, version, resource } = request.resource;
  return `${group ? `${group}/` : ''}${version}/${resource}${request.subResource ? `/${request.subResource}` : ''}`;
}
