// Gets a token for a real environment and prints its expiry and the quota.
//
//   deno run --env-file=.env \
//     --allow-env=PARTNER_API_TOKEN_URL,PARTNER_API_AUDIENCE,PARTNER_API_CLIENT_ID,PARTNER_API_CLIENT_SECRET \
//     --allow-net=<token host> examples/get_token.ts

import { createTokenProvider } from "@partner-api/client";

function required(name: string): string {
  const value = Deno.env.get(name);
  if (!value) {
    console.error(`${name} is not set`);
    Deno.exit(2);
  }
  return value;
}

const provider = createTokenProvider({
  tokenUrl: required("PARTNER_API_TOKEN_URL"),
  audience: required("PARTNER_API_AUDIENCE"),
  clientId: required("PARTNER_API_CLIENT_ID"),
  clientSecret: required("PARTNER_API_CLIENT_SECRET"),
});
const token = await provider.getToken();
console.log(`token valid until ${new Date(token.expiresAt).toISOString()}`);
for (const bucket of provider.quota?.buckets ?? []) {
  console.log(
    `${bucket.bucket}: ${bucket.remaining}/${bucket.limit}, resets in ${bucket.resetAfter} s`,
  );
}
