// A secret pasted into the wrong variable, as the tool prints what the IdP
// quoted back: real runs against a loopback token endpoint.

import { equal, ok } from "node:assert/strict";
import { startFakePartnerApi } from "../../src/testing/mod.ts";
import { configFor } from "../_cli_helpers.ts";
import { cli } from "./_cli_process.ts";
import { processTest } from "../_processes.ts";

const FLAGS = ["--allow-net=127.0.0.1", "--allow-env=PARTNER_API_*"];

function hex(text: string): string {
  return Array.from(
    new TextEncoder().encode(text),
    (byte) => byte.toString(16).padStart(2, "0"),
  ).join("");
}

processTest(
  "a secret pasted into PARTNER_API_AUDIENCE or PARTNER_API_CLIENT_ID is never printed when the IdP quotes it back",
  async (t) => {
    await using api = await startFakePartnerApi();
    const pasted = "Zx9-very-secret-value-123";
    const idps = {
      // Auth0 names the audience it does not know.
      PARTNER_API_AUDIENCE: (value: string) =>
        Response.json({
          error: "access_denied",
          error_description: `Service not found: ${value}`,
        }, { status: 403 }),
      // Azure AD names the client id it does not know.
      PARTNER_API_CLIENT_ID: (value: string) =>
        Response.json({
          error: "unauthorized_client",
          error_description:
            `AADSTS700016: Application with identifier '${value}' was not found in the directory 'partner'.`,
        }, { status: 400 }),
    };
    const forms = [pasted, pasted.toUpperCase(), hex(pasted)];
    for (const [variable, answer] of Object.entries(idps)) {
      for (const form of forms) {
        await t.step(`${variable}, quoted as ${form}`, async () => {
          await using idp = Deno.serve(
            { hostname: "127.0.0.1", port: 0, onListen() {} },
            () => answer(form),
          );
          const run = await cli(FLAGS, ["token", "--no-cache", "--verbose"], {
            ...configFor(api),
            PARTNER_API_TOKEN_URL: `http://127.0.0.1:${idp.addr.port}/token`,
            [variable]: pasted,
          });
          equal(run.code, 1, run.stderr);
          ok(run.stderr.length > 0);
          for (const shown of [pasted, form]) {
            ok(!run.stdout.includes(shown), run.stdout);
            ok(!run.stderr.includes(shown), run.stderr);
          }
        });
      }
    }
  },
);
