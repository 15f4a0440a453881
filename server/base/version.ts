/** The gateway's version: package.json's, found from this module whether it runs from server/ or dist/server/. */
import { readFileSync } from 'node:fs';

const PACKAGE_NAME = 'admission-gateway';

/** `version` of the nearest package.json named admission-gateway above this module. */
export function packageVersion(): string {
  // server/base/ in a checkout, dist/server/base/ when built: the package root is two or three levels up.
  for (const up of ['../../package.json', '../../../package.json']) {
    let text: string;
    try {
      text = readFileSync(new URL(up, import.meta.url), 'utf8');
    } catch {
      continue;
    }
    const manifest = JSON.parse(text) as { name?: unknown; version?: unknown };
    if (manifest.name === PACKAGE_NAME && typeof manifest.version === 'string') return manifest.version;
  }
  throw new Error(`cannot find the package.json of ${PACKAGE_NAME} above ${import.meta.url}`);
}
