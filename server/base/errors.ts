/**
 * Every error the gateway raises on purpose, each with a stable code (fastify/opossum style). Startup
 * errors stop the process with exit code 2; request-path errors become in-protocol answers.
 */
/** A line and column in a file, from 1 (as editors count them). */
export interface SourcePosition {
  readonly line: number;
  readonly col: number;
}

/**
 * Invalid configuration: names the file, where in it when known (`gateway.yaml:14:7`), the field path, and
 * what was expected.
 */
export class ConfigError extends Error {
  readonly code = 'GW_ERR_CONFIG';
  constructor(
    readonly file: string,
    readonly path: string,
    readonly expected: string,
    readonly position?: SourcePosition,
  ) {
    const where = position ? `${file}:${position.line}:${position.col}` : file;
    // With a position the root needs no name: the position says where.
    const field = path || (position ? '' : '(root)');
    super(`${where}: ${field ? `${field}: ` : ''}${expected}`);
    this.name = 'ConfigError';
  }

  /** The same error at `position`. */
  at(position: SourcePosition): ConfigError {
    return new ConfigError(this.file, this.path, this.expected, position);
  }
}

/** A plugin list that cannot be used: duplicate or invalid names, missing handlers. */
export class PluginRegistrationError extends Error {
  readonly code = 'GW_ERR_PLUGIN_REGISTRATION';
  constructor(message: string) {
    super(message);
    this.name = 'PluginRegistrationError';
  }
}

/** Why a step failed (as opposed to denying): the reason label in metrics and messages. */
export const FAILURE_REASONS = [
  'error',
  'timeout',
  'invalid_patch',
  'write_outside_supplies',
  'connection',
  'tls',
  'http_status',
  'invalid_response',
  'breaker_open',
  'cost_exceeded',
] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

/** A step failed to decide: thrown, timed out, or answered something unusable. failurePolicy applies. */
export class StepFailedError extends Error {
  readonly code: string = 'GW_ERR_STEP_FAILED';
  constructor(
    readonly reason: FailureReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StepFailedError';
  }
}

/**
 * A remote provider call that did not produce a usable answer; `reason` classifies why. It is the provider
 * step's failure as it stands (the step settles it through its failurePolicy like any other).
 */
export class ProviderCallError extends StepFailedError {
  override readonly code: string = 'GW_ERR_PROVIDER_CALL';
  constructor(
    override readonly reason: Exclude<FailureReason, 'error' | 'invalid_patch'>,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(reason, message, options);
    this.name = 'ProviderCallError';
  }
}

/** A JSON patch that cannot be applied to the working copy. */
export class PatchApplyError extends Error {
  readonly code = 'GW_ERR_PATCH_APPLY';
  constructor(
    message: string,
    readonly index: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PatchApplyError';
  }
}

/** Text of any thrown value, never `{}` (pepr's JSON.stringify(err) bug). */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === 'string') return err;
  try {
    return JSON.stringify(err) ?? String(err);
  } catch {
    return String(err);
  }
}
