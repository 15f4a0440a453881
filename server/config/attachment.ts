/**
 * How a chain entry attaches to requests (README, "Opt-in providers"): `attach: Always` (the default) runs
 * it for every request its match selects; `attach: OptIn` only for those whose object or namespace names it
 * in `admissiongateway.io/extensions`. `conflictGroup` names a group of which one object may reference one
 * entry only. Read alike for gateway.yaml entries and AdmissionProvider specs.
 */
import { isDnsLabel } from './names.js';
import { childPath, type Reader } from './reader.js';

export type Attach = 'Always' | 'OptIn';

export const ATTACH_FIELDS = ['attach', 'conflictGroup'] as const;
export const ATTACH_VALUES: readonly Attach[] = ['Always', 'OptIn'];

export interface Attachment {
  /**
   * `OptIn`: the entry's steps run only for requests whose object or namespace names the entry in the
   * annotation `admissiongateway.io/extensions` (README, "Opt-in providers"). Default `Always`.
   */
  readonly attach?: Attach;
  /** At most one entry of a conflict group may be referenced by one object. */
  readonly conflictGroup?: string;
}

/** The attachment fields of `m` at `path`; only those present are returned. */
export function readAttachment(r: Reader, m: Record<string, unknown>, path: string): Attachment {
  const attach = r.oneOf(m.attach, childPath(path, 'attach'), ATTACH_VALUES);
  const conflictGroup = r.string(m.conflictGroup, childPath(path, 'conflictGroup'));
  if (conflictGroup !== undefined && !isDnsLabel(conflictGroup)) {
    r.fail(childPath(path, 'conflictGroup'), 'expected a lower-case DNS-1123 label', conflictGroup);
  }
  return { ...(attach ? { attach } : {}), ...(conflictGroup !== undefined ? { conflictGroup } : {}) };
}
