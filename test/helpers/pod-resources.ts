/**
 * The resources whose objects carry a PodSpec (groups '', apps, batch), spelled out here rather than
 * imported from plugins/lib/pod-spec.ts, so the tests check what the plugins match instead of reading it.
 */
export const POD_SPEC_RESOURCES = [
  'pods',
  'deployments',
  'replicasets',
  'statefulsets',
  'daemonsets',
  'jobs',
  'cronjobs',
  'replicationcontrollers',
  'podtemplates',
];
