/**
 * What a call carries besides its body (providers/provider-client.ts writes them): `?timeout=`, the time
 * granted in whole milliseconds, and the settings header, the entry's settings as one line of ASCII JSON.
 * test/integration/openapi.test.ts holds these to what the gateway sends.
 */
import { Type } from 'typebox';
import { component, mapOf } from './schema-kit.js';

/** The header's name as HTTP spells it; lower-case on the wire through undici. */
export const SETTINGS_HEADER_NAME = 'X-Admission-Gateway-Settings';

export const SettingsSchema = component(
  'Settings',
  mapOf(Type.String(), {
    minProperties: 1,
    description:
      "The registration's settings: a map of strings, sent as one line of JSON with every character beyond " +
      'ASCII escaped as \\uXXXX. The header is left out when there are none.',
  }),
);

export const TimeoutSchema = Type.String({
  pattern: '^[1-9][0-9]*ms$',
  description:
    "The time granted to this call in whole milliseconds: the step's timeoutSeconds or what is left of the " +
    "review's budget, whichever is smaller. An answer after it is discarded.",
});
