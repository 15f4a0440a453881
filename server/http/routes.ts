/**
 * The webhook routes (README "Routes"): each runs a phase's steps, or only those of one effective failure
 * policy, so that two webhooks can be registered split by failure policy.
 */
import type { StepSelection } from '../chain/chain.js';

export const ROUTES = [
  'mutate',
  'mutate/fail',
  'mutate/ignore',
  'validate',
  'validate/fail',
  'validate/ignore',
] as const;
export type Route = (typeof ROUTES)[number];

const SELECTIONS: Readonly<Record<Route, StepSelection>> = {
  mutate: { name: 'mutate', phase: 'mutate' },
  'mutate/fail': { name: 'mutate/fail', phase: 'mutate', failurePolicy: 'Fail' },
  'mutate/ignore': { name: 'mutate/ignore', phase: 'mutate', failurePolicy: 'Ignore' },
  validate: { name: 'validate', phase: 'validate' },
  'validate/fail': { name: 'validate/fail', phase: 'validate', failurePolicy: 'Fail' },
  'validate/ignore': { name: 'validate/ignore', phase: 'validate', failurePolicy: 'Ignore' },
};

/** The steps a route runs. */
export function selectionOf(route: Route): StepSelection {
  return SELECTIONS[route];
}
