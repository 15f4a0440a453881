/** PROVISIONAL (replaced by the CLI branch's module at merge): a bare object wrapped as an AdmissionRequest. */
import { randomUUID } from 'node:crypto';
import type { AdmissionRequest, KubeObject, Operation, UserInfo } from '../plugin-api/types.js';

export interface RequestForObjectOptions {
  readonly operation?: Operation;
  readonly oldObject?: KubeObject;
  readonly namespace?: string;
  readonly userInfo?: UserInfo;
  readonly dryRun?: boolean;
  readonly subResource?: string;
}

export function requestForObject(object: KubeObject, options: RequestForObjectOptions = {}): AdmissionRequest {
  const apiVersion = object.apiVersion ?? 'v1';
  const slash = apiVersion.indexOf('/');
  const group = slash === -1 ? '' : apiVersion.slice(0, slash);
  const version = slash === -1 ? apiVersion : apiVersion.slice(slash + 1);
  const kind = object.kind ?? 'Unknown';
  const resource = `${kind.toLowerCase()}s`;
  const operation = options.operation ?? 'CREATE';
  const namespace = options.namespace ?? object.metadata?.namespace;
  return {
    uid: randomUUID(),
    kind: { group, version, kind },
    resource: { group, version, resource },
    ...(options.subResource ? { subResource: options.subResource } : {}),
    ...(object.metadata?.name ? { name: object.metadata.name } : {}),
    ...(namespace ? { namespace } : {}),
    operation,
    userInfo: options.userInfo ?? { username: 'test-user', groups: ['system:authenticated'] },
    object: operation === 'DELETE' ? null : object,
    oldObject: options.oldObject ?? null,
    dryRun: options.dryRun ?? false,
  };
}
