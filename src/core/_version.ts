/** The version of `@partner-api/client`, kept equal to deno.json's by `deno task check`. */
export const VERSION = "0.4.0";
