/**
 * Serialises rendered objects (webhook configurations, the authorization kubeconfig): YAML documents (with a
 * comment header) or a JSON `v1/List`.
 */
import { Document, isScalar, visit } from 'yaml';
import type { RenderedConfiguration } from './render.js';

/** The longest flow list (`a, b, c`) that still fits in 120 columns at the deepest indentation rendered. */
const FLOW_MAX = 90;

/** One object as YAML; lists of plain values on one line (`[CREATE, UPDATE]`), as people write them. */
function documentText(object: object): string {
  const doc = new Document(object);
  visit(doc, {
    Seq(_, node) {
      // Long lists stay in block style: prettier (printWidth 120) would break them anyway.
      const texts = node.items.map((item) => (isScalar(item) ? String(item.value) : undefined));
      if (texts.every((t) => t !== undefined) && texts.join(', ').length <= FLOW_MAX) node.flow = true;
    },
  });
  // lineWidth 0: a caBundle is one long base64 word, folding it only makes diffs noisy; the rest is what
  // prettier writes, so manifests/webhooks.yaml passes format:check as rendered.
  return doc.toString({ lineWidth: 0, flowCollectionPadding: false, singleQuote: true });
}

/** `---`-separated documents; each header line becomes a `# ` comment at the top. */
export function toYaml(objects: readonly object[], header: readonly string[] = []): string {
  const comments = header.map((line) => `# ${line}`.trimEnd()).join('\n');
  const documents = objects.map(documentText).join('---\n');
  return comments ? `${comments}\n${documents}` : documents;
}

/** One JSON document kubectl applies as is. */
export function toJsonList(objects: readonly RenderedConfiguration[]): string {
  return `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }, null, 2)}\n`;
}
