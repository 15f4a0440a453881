/**
 * What the policy steps of one review share, as the apiserver shares them between its policies: the review's
 * values made CEL values once (activation), and one cost budget, so that several policies together cannot
 * spend more than one review may. Kept by the review's request object, so it goes when the review does.
 */
import type { AdmissionRequest, KubeObject } from '../admission/types.js';
import { activation, createCostBudget, type Activation, type CostBudget } from '../cel/index.js';

export interface ReviewCel {
  readonly budget: CostBudget;
  /**
   * The values for `object`; made again only when a step sees another object than the last one, or the same one
   * at another `version` (the mutate phase edits its working copy in place: it passes its count of changes).
   */
  valuesFor(object: KubeObject | undefined, version?: number): Activation;
}

const reviews = new WeakMap<AdmissionRequest, ReviewCel>();
const namespaces = new WeakMap<AdmissionRequest, KubeObject>();

/**
 * The namespace `namespaceObject` reads in this review's expressions (null when it has none: a cluster-scoped
 * object, a Namespace itself, a namespace that could not be read). The reviewer looks it up before the review's
 * phase runs, when one of them reads it; given after the first expression ran, it is not seen.
 */
export function provideNamespaceObject(request: AdmissionRequest, namespace: KubeObject | null): void {
  if (namespace) namespaces.set(request, namespace);
}

/** The request as `request` reads it: without the objects, which have variables of their own. */
export function requestValue(request: AdmissionRequest): Omit<AdmissionRequest, 'object' | 'oldObject'> {
  const { object: _object, oldObject: _oldObject, ...rest } = request;
  return rest;
}

function create(request: AdmissionRequest): ReviewCel {
  let madeFor: KubeObject | null | undefined;
  let madeAt = 0;
  let values: Activation | undefined;
  return {
    budget: createCostBudget(),
    valuesFor(object, version = 0) {
      if (values === undefined || madeFor !== (object ?? null) || madeAt !== version) {
        madeFor = object ?? null;
        madeAt = version;
        // Throws CelValueError for an object nested past what CEL is handed: the step fails with it.
        values = activation({
          object,
          oldObject: request.oldObject,
          request: requestValue(request),
          namespaceObject: namespaces.get(request),
        });
      }
      return values;
    },
  };
}

/** The review's shared CEL state, made by its first policy step. */
export function reviewCel(request: AdmissionRequest): ReviewCel {
  let state = reviews.get(request);
  if (state === undefined) {
    state = create(request);
    reviews.set(request, state);
  }
  return state;
}
