// The `cel` scenario's targets, shared by bench/cel.mjs (which prints PASS/FAIL when run alone) and run.mjs.
// reviewStallMs: the longest one review's expressions may keep every other review waiting (the review's CEL time,
// server/cel/cost.ts, and one look at the clock's worth more).
export const CEL_TARGETS = { validationsCpuUs: 40, cutOffMs: 50, reviewStallMs: 2_600 };
