/**
 * The `partner-api` command-line tool: get a token, read the quota, page through lists, configured by `PARTNER_API_*`
 * environment variables. `demo` runs all of it against an in-process fake, with no credentials and no network.
 *
 * ```sh
 * deno add --jsr @partner-api/client   # once; then the ./cli entry runs by name
 * deno run --allow-net=<token host>,<api host> \
 *   --allow-env='PARTNER_API_*,XDG_CACHE_HOME,HOME' \
 *   --allow-read=$HOME/.cache/partner-api --allow-write=$HOME/.cache/partner-api \
 *   @partner-api/client/cli list transactions --sort-by creationDate --sort-direction DESC
 * deno run --allow-net=127.0.0.1 @partner-api/client/cli demo
 * ```
 *
 * The token, the quota and any quota block are cached between runs in an encrypted file (see `--help`), so repeated
 * runs cost one token per token lifetime. Without permission on the cache folder the tool runs uncached, says so once,
 * and never prompts. More: docs/cli.md.
 *
 * @example Reading the quota from code, against the fake
 * ```ts
 * import { main } from "@partner-api/client/cli";
 * import { startFakePartnerApi } from "@partner-api/client/testing";
 * import { equal } from "node:assert/strict";
 *
 * await using api = await startFakePartnerApi({ quota: { perHour: 10 } });
 * const variables: Record<string, string> = {
 *   PARTNER_API_BASE_URL: api.environment.baseUrl.href,
 *   PARTNER_API_PCI_BASE_URL: api.environment.pciBaseUrl.href,
 *   PARTNER_API_TOKEN_URL: api.environment.tokenUrl.href,
 *   PARTNER_API_AUDIENCE: api.environment.audience,
 *   PARTNER_API_CLIENT_ID: api.credentials.clientId,
 *   PARTNER_API_CLIENT_SECRET: api.credentials.clientSecret,
 * };
 * let out = "";
 * const writer = { isTerminal: false, write: (text: string) => void (out += text) };
 * const io = { env: (name: string) => variables[name], stdout: writer, stderr: writer };
 * const code = await main(["quota", "--format", "json"], io);
 * equal(code, 0);
 * equal(JSON.parse(out).buckets[0].remaining, 9);
 * ```
 *
 * @module
 */

import { main, runAsProgram } from "./main.ts";

export { main };
export type { CliIo, CliWriter } from "./io.ts";

// Run as the program (`deno task cli`, the installed command): the process's own I/O, Ctrl-C and exit code.
if (import.meta.main) await runAsProgram();
