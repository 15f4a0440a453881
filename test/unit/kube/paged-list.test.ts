import assert from 'node:assert/strict';
import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { listInPages } from '../../../server/kube/paged-list.js';

const object = (name: string): KubernetesObject => ({ metadata: { name, namespace: 'team-a' } });

/** A list of `count` objects served `limit` at a time, as typed lists spell it (`_continue`); the pages asked. */
function pagedServer(count: number) {
  const asked: { limit: number; token: string | undefined }[] = [];
  const all = Array.from({ length: count }, (_, i) => object(`p${i}`));
  const fetchPage = (limit: number, token: string | undefined): Promise<KubernetesListObject<KubernetesObject>> => {
    asked.push({ limit, token });
    const from = token ? Number(token) : 0;
    const next = from + limit < all.length ? String(from + limit) : undefined;
    return Promise.resolve({
      apiVersion: 'v1',
      kind: 'ConfigMapList',
      metadata: { resourceVersion: '42', ...(next ? { _continue: next } : {}) },
      items: all.slice(from, from + limit),
    });
  };
  return { asked, fetchPage };
}

describe('listInPages(): a list read page by page and weighed after each', function () {
  it('reads every page with limit and continue, and answers the list whole', async function () {
    const server = pagedServer(5);
    const weighed: number[] = [];
    const read = await listInPages(
      server.fetchPage,
      (page) => {
        weighed.push(page.length);
        return undefined;
      },
      2,
    );
    assert.deepEqual(server.asked, [
      { limit: 2, token: undefined },
      { limit: 2, token: '2' },
      { limit: 2, token: '4' },
    ]);
    assert.deepEqual(weighed, [2, 2, 1]);
    assert.ok('list' in read);
    assert.deepEqual(
      read.list.items.map((o) => o.metadata?.name),
      ['p0', 'p1', 'p2', 'p3', 'p4'],
    );
    assert.equal(read.list.metadata?.resourceVersion, '42');
  });

  it('gives the list up after the page that goes past the bound, asking for no further page', async function () {
    const server = pagedServer(1000);
    let held = 0;
    const read = await listInPages(
      server.fetchPage,
      (page) => {
        held += page.length;
        return held > 5 ? `more than 5` : undefined;
      },
      4,
    );
    assert.deepEqual(read, { refused: 'more than 5' });
    assert.deepEqual(server.asked, [
      { limit: 4, token: undefined },
      { limit: 4, token: '4' },
    ]);
  });

  it('takes the token as an untyped list spells it (continue)', async function () {
    const pages = [
      { metadata: { continue: 'next' }, items: [object('a')] },
      { metadata: { resourceVersion: '7' }, items: [object('b')] },
    ];
    const tokens: (string | undefined)[] = [];
    const read = await listInPages(
      (_limit, token) => {
        tokens.push(token);
        return Promise.resolve(pages[tokens.length - 1] as KubernetesListObject<KubernetesObject>);
      },
      () => undefined,
    );
    assert.deepEqual(tokens, [undefined, 'next']);
    assert.ok('list' in read && read.list.items.length === 2);
  });
});
