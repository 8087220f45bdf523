// Internal: the package version, kept equal to deno.json's by a test.

/** The version of `@partner-api/client`. */
export const VERSION = "0.4.0";
