// The README's quick start, against a real environment.
//
//   deno run --allow-env=PARTNER_API_CLIENT_ID,PARTNER_API_CLIENT_SECRET \
//     --allow-net=idp.sandbox.partner.example,sandbox.partner.example examples/quick_start.ts

import { createClient, defineEnvironment } from "@partner-api/client";

const client = createClient({
  environment: defineEnvironment({
    baseUrl: "https://sandbox.partner.example/api/",
    pciBaseUrl: "https://pci.sandbox.partner.example/api/",
    tokenUrl: "https://idp.sandbox.partner.example/oauth/token",
    audience: "https://sandbox.partner.example",
  }),
  clientId: Deno.env.get("PARTNER_API_CLIENT_ID")!,
  clientSecret: Deno.env.get("PARTNER_API_CLIENT_SECRET")!,
});
for await (
  const organization of client.list("organizations", { maxItems: 10 })
) {
  console.log(organization);
}
console.log(client.tokenProvider.quota?.buckets); // the token quota left
