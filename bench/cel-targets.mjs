// The `cel` scenario's targets, shared by bench/cel.mjs (which prints PASS/FAIL when run alone) and run.mjs.
export const CEL_TARGETS = { validationsCpuUs: 40, cutOffMs: 50 };
