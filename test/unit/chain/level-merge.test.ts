/**
 * Declared steps of one level each run on the object as the level began; their changes are merged in chain
 * order and must give the object serial execution gives. The case that matters most in practice: several steps
 * each adding an annotation (or a field of a map) that the object does not have yet, so each one creates the
 * map on the way to its own lane.
 */
import assert from 'node:assert/strict';
import { buildPluginSteps, createChain } from '../../../server/chain/chain.js';
import { createPluginRegistry } from '../../../server/chain/plugin-registry.js';
import { selectionOf } from '../../../server/http/routes.js';
import { parseConfigText } from '../../../server/config/load.js';
import { definePlugin, type KubeObject } from '../../../server/plugin-api/index.js';
import { requestForObject } from '../../../server/admission/request-for-object.js';
import { chainReviewer } from '../../helpers/chain-reviewer.js';
import { applyPatch, decodePatch } from '../../helpers/patch.js';

const everything = { rules: [{ operations: ['*' as const], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] };

/**
 * Sets `settings.value` at `settings.path` (segments below the object), creating the maps on the way; without
 * a value, removes what is there.
 */
const put = definePlugin({
  name: 'put',
  match: everything,
  settings: (raw) => raw as { path: string[]; value?: string },
  setup: ({ path, value }) => ({
    mutate({ object }) {
      let node = object as unknown as Record<string, unknown>;
      for (const key of path.slice(0, -1)) node = (node[key] ??= {}) as Record<string, unknown>;
      if (value === undefined) delete node[path.at(-1)!];
      else node[path.at(-1)!] = value;
    },
  }),
});

interface Entry {
  readonly name: string;
  readonly path: string[];
  readonly value?: string;
  readonly supplies: string;
}

async function review(object: KubeObject, entries: readonly Entry[], declared: boolean) {
  const chain = entries.map(({ name, path, value, supplies }) => ({
    plugin: 'put',
    name,
    settings: { path, ...(value !== undefined ? { value } : {}) },
    ...(declared ? { supplies: [supplies] } : {}),
  }));
  const config = parseConfigText(JSON.stringify({ chain }), 'gateway.yaml', '/');
  const built = createChain(buildPluginSteps(config.chain, createPluginRegistry([put]), config.file));
  const reviewer = chainReviewer(built);
  const { response } = await reviewer.review(requestForObject(object, { operation: 'CREATE' }), selectionOf('mutate'));
  const { patch: _patch, patchType: _type, uid: _uid, ...rest } = response;
  return { summary: built.summary(), stored: applyPatch(object, decodePatch(response)), rest };
}

const pod = (metadata: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', namespace: 'default', ...metadata },
  spec: { containers: [{ name: 'app', image: 'nginx' }] },
});

describe('merging the steps of one level', () => {
  it('keeps every step’s member of a map that several of them create, as serial execution does', async () => {
    const entries = (name: string, ...path: string[]): Entry => ({
      name,
      path,
      value: name,
      supplies: `/${path.join('/')}`,
    });
    const chain = [
      entries('owner', 'metadata', 'annotations', 'owner'),
      entries('cost', 'metadata', 'annotations', 'cost'),
      entries('non-root', 'spec', 'securityContext', 'runAsNonRoot'),
      entries('group', 'spec', 'securityContext', 'fsGroup'),
    ];
    const declared = await review(pod(), chain, true);
    const serial = await review(pod(), chain, false);

    assert.equal(declared.summary, 'mutate=[{owner,cost,non-root,group}] validate=[]');
    const expected: KubeObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'default', annotations: { owner: 'owner', cost: 'cost' } },
      spec: {
        containers: [{ name: 'app', image: 'nginx' }],
        securityContext: { runAsNonRoot: 'non-root', fsGroup: 'group' },
      },
    };
    assert.deepEqual(serial.stored, expected);
    assert.deepEqual(declared.stored, expected);
    assert.deepEqual(declared.rest, { allowed: true }, 'no patch conflict, no failure');
  });

  it('adds a later step’s member to a map an earlier one removed on the way to its lane, as serial execution does', async () => {
    const chain: Entry[] = [
      { name: 'drop', path: ['metadata', 'annotations'], supplies: '/metadata/annotations/a' },
      { name: 'add-b', path: ['metadata', 'annotations', 'b'], value: 'b', supplies: '/metadata/annotations/b' },
    ];
    const declared = await review(pod({ annotations: { a: 'x' } }), chain, true);
    const serial = await review(pod({ annotations: { a: 'x' } }), chain, false);

    assert.equal(declared.summary, 'mutate=[{drop,add-b}] validate=[]');
    assert.deepEqual(serial.stored, pod({ annotations: { b: 'b' } }));
    assert.deepEqual(declared.stored, serial.stored);
    assert.deepEqual(declared.rest, serial.rest);
  });
});
