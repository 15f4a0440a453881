/**
 * A list read in pages (`limit` and `continue`, as client-go's pager reads one) and weighed after each page, so a
 * list too big to keep is given up after the page that shows it, never held whole: what the apiserver sends is
 * chosen by whoever may create the objects.
 */
import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';

/** Objects asked for per page: at most this many of the largest objects the apiserver stores are held at once. */
export const PARAM_PAGE_LIMIT = 32;

/** One page: `token` is the previous page's `metadata.continue` (undefined for the first). */
export type FetchPage<T extends KubernetesObject> = (
  limit: number,
  token: string | undefined,
) => Promise<KubernetesListObject<T>>;

/** The list whole, or what weighing it came to when it was given up. */
export type PagedList<T extends KubernetesObject, R> =
  { readonly list: KubernetesListObject<T> } | { readonly refused: R };

/** The next page's token: typed lists (client-node knows the kind) spell it `_continue`, others as sent. */
function continueOf(list: KubernetesListObject<KubernetesObject>): string | undefined {
  const meta: { _continue?: string; continue?: string } | undefined = list.metadata;
  return meta?._continue ?? meta?.continue;
}

/**
 * Reads the pages one after another; `weigh` is handed each page's objects in turn (it keeps its own sum), and its
 * answer (anything but undefined) gives the list up before the next page is asked for.
 */
export async function listInPages<T extends KubernetesObject, R>(
  fetchPage: FetchPage<T>,
  weigh: (page: readonly T[]) => R | undefined,
  limit = PARAM_PAGE_LIMIT,
): Promise<PagedList<T, R>> {
  const items: T[] = [];
  let token: string | undefined;
  let last: KubernetesListObject<T> | undefined;
  do {
    last = await fetchPage(limit, token);
    // The apiserver may send more than asked (a resource that does not page): weighed all the same.
    const page = last.items ?? [];
    items.push(...page);
    const refused = weigh(page);
    if (refused !== undefined) return { refused };
    token = continueOf(last) || undefined;
  } while (token);
  // Every page of one list is read at the resourceVersion of its first: the watch starts from the last's.
  return { list: { ...last, items } };
}
