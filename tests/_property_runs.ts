// How many cases a property test tries. The quick subset runs on every
// change, so by default each property tries few, enough to reach every kind
// of step its generators make; `-- --deep` (`deno task test:deep`) tries
// many, to search further after a change to what a property covers. Reading
// Deno.args needs no permission.

/** Whether the test run was given `-- --deep`. */
export const DEEP: boolean = Deno.args.includes("--deep");

/** fast-check's `numRuns`: `quick` by default, `deep` under `-- --deep`. */
export function runs(quick: number, deep: number): number {
  return DEEP ? deep : quick;
}
