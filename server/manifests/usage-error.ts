/**
 * A mistake in the `manifests` command's flags, or between them and the configuration: the CLI prints its
 * message, which names the flag, what was expected and what was given, and exits 2.
 */
export class ManifestsUsageError extends Error {}
