/**
 * The objects the e2e files create: Pods and Deployments of one pause container, which no controller
 * runs here anyway. Each file adds the labels, pod and container fields its steps look at.
 */
import type { V1Container, V1Deployment, V1Pod, V1PodSpec } from '@kubernetes/client-node';

export const PAUSE_IMAGE = 'registry.k8s.io/pause:3.9';

export interface PodParts {
  /** Merged into the pod spec (volumes, securityContext, …). */
  readonly pod?: Partial<V1PodSpec>;
  /** Merged into the one container. */
  readonly container?: Partial<V1Container>;
}

function podSpec(parts: PodParts): V1PodSpec {
  return { ...parts.pod, containers: [{ name: 'app', image: PAUSE_IMAGE, ...parts.container }] };
}

/** A Pod of one pause container named `app`. */
export function pausePod(name: string, labels: Record<string, string> = {}, parts: PodParts = {}): V1Pod {
  return { metadata: { name, labels }, spec: podSpec(parts) };
}

/** A Deployment (label on its pods: app=<name>) of one pause container named `app`, running as non-root. */
export function pauseDeployment(name: string, labels: Record<string, string>, parts: PodParts = {}): V1Deployment {
  return {
    metadata: { name, labels },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: podSpec({ ...parts, pod: { securityContext: { runAsNonRoot: true }, ...parts.pod } }),
      },
    },
  };
}

/** A Pod of two containers: `web` (nginx:1.25, no resources) and `agent` (its own cpu request and limit). */
export function webAndAgentPod(name: string, labels: Record<string, string>): V1Pod {
  return {
    metadata: { name, labels },
    spec: {
      containers: [
        { name: 'web', image: 'nginx:1.25' },
        {
          name: 'agent',
          image: 'quay.io/acme/agent:v2',
          resources: { requests: { cpu: '250m' }, limits: { cpu: '500m' } },
        },
      ],
    },
  };
}
