/**
 * The case being reviewed, as what answers for it sees it: the providers' stand-ins (provider-doubles.ts) ask
 * it which response the case's call gets in the phase being run, and note a call that has none; the reviewer
 * asks it for the namespace's labels. Cases are reviewed one at a time, and a phase's steps all belong to it,
 * so one case and one phase are in play at any time.
 */
import type { Phase } from '../admission/types.js';
import type { NamespaceLabelSource } from '../dispatch/reviewer.js';
import type { ProviderResponse, TestCase, TestSuite } from './suite.js';

/** The label Kubernetes gives every namespace: its name. */
const NAME_LABEL = 'kubernetes.io/metadata.name';

export class CaseInPlay implements NamespaceLabelSource {
  private current: TestCase | undefined;
  private missing: string[] = [];
  /** The phase whose steps are running: set by each provider step before it calls (recorded-answers.ts). */
  phase: Phase = 'mutate';

  constructor(private readonly suite: TestSuite) {}

  begin(testCase: TestCase): void {
    this.current = testCase;
    this.missing = [];
    this.phase = 'mutate';
  }

  /** The calls of the case that had no answer, each in words; the case is over. */
  end(): string[] {
    this.current = undefined;
    return this.missing;
  }

  /** The uid of the case's request (what a recording's answers are found by). */
  get uid(): string | undefined {
    return this.current?.request.uid;
  }

  /**
   * What `provider` answers the case's call in the current phase: its answer for the case, else its default;
   * undefined, the call noted as missing, when there is neither.
   */
  answer(provider: string): ProviderResponse | undefined {
    const testCase = this.current;
    if (!testCase) return undefined;
    const double = this.suite.providers.get(provider);
    const found = double?.answers.get(testCase.name)?.[this.phase] ?? double?.default?.[this.phase];
    if (found) return found;
    const note =
      `provider "${provider}" was called in the ${this.phase} phase and has no answer for case "${testCase.name}": ` +
      `give it providers.${provider}.answers["${testCase.name}"]${double?.from ? ' (the recording has none)' : ''}, ` +
      `or providers.${provider}.default`;
    if (!this.missing.includes(note)) this.missing.push(note);
    return undefined;
  }

  labels(namespace: string): Readonly<Record<string, string>> {
    return { ...this.current?.namespaceLabels, [NAME_LABEL]: namespace };
  }
}
