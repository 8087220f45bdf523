// Everything the CLI prints, in every outcome, is scanned for the client
// secret and for any token the fake has issued.

import { ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { configFor } from "../_cli_helpers.ts";
import { cliCommand } from "./_cli_process.ts";
import { processTest } from "../_processes.ts";

processTest("nothing the CLI prints holds the secret or a token", async () => {
  await using api = await startFakePartnerApi();
  const config = configFor(api);
  const runs: [string[], Record<string, string>][] = [
    [["token"], config],
    [["quota"], config],
    [["list", "transactions", "--max-items", "60", "--format", "json"], config],
    [["list", "nothing"], config],
    [["token"], {
      ...config,
      PARTNER_API_CLIENT_SECRET: `${config.PARTNER_API_CLIENT_SECRET}x`,
    }],
    [["token"], {
      ...config,
      PARTNER_API_TOKEN_URL: "http://example.com/token",
    }],
    [["demo"], {}],
  ];
  let printed = "";
  for (const [args, env] of runs) {
    const output = await cliCommand(
      ["--allow-net=127.0.0.1", "--allow-env=PARTNER_API_*"],
      args,
      env,
    ).output();
    const decoder = new TextDecoder();
    printed += decoder.decode(output.stdout) + decoder.decode(output.stderr);
  }
  ok(printed.includes("token valid until"), "the runs did print");
  ok(!printed.includes(api.credentials.clientSecret), "the secret was printed");
  const tokenShaped = printed.match(/[A-Za-z0-9_-]{43}/g) ?? [];
  ok(
    !tokenShaped.some((candidate) => api.isValidToken(candidate)),
    "a token was printed",
  );
});
