// One process of a fleet: waits for the common start moment, gets a token,
// prints {pid, token (a hash, never the token), ms to first token}. With
// "call", it then calls the API once and adds the answer's `status`.
//
//   deno run --allow-net=127.0.0.1 --allow-env='PARTNER_API_*' \
//     --allow-read=<dir> --allow-write=<dir> fleet_worker.ts <kv file or -> <start epoch ms> <lease ms> [call]

import { createTokenProvider } from "../../src/token/mod.ts";
import { createKvTokenStore } from "../../src/store/kv.ts";
import { createClient } from "../../src/client/mod.ts";
import { configFromEnv } from "../../src/core/config.ts";

const [kvPath, startAt, leaseMs, call] = Deno.args;
const env = (name: string) => Deno.env.get(`PARTNER_API_${name}`)!;
/** Opens the file; processes creating it at the same moment may find it locked. */
async function openKv(path: string): Promise<Deno.Kv> {
  for (let attempt = 0;; attempt++) {
    try {
      return await Deno.openKv(path);
    } catch (error) {
      if (!/locked/.test(String(error)) || attempt > 50) throw error;
      await new Promise((resolve) =>
        setTimeout(resolve, 5 + Math.random() * 20)
      );
    }
  }
}

const kv = kvPath === undefined || kvPath === "-"
  ? undefined
  : await openKv(kvPath);
const store = kv && createKvTokenStore(kv, {
  leaseDuration: Number(leaseMs),
  holderId: String(Deno.pid),
  pollInterval: 20,
});
const provider = createTokenProvider({
  tokenUrl: env("TOKEN_URL"),
  audience: env("AUDIENCE"),
  clientId: env("CLIENT_ID"),
  clientSecret: env("CLIENT_SECRET"),
  ...(store === undefined ? {} : { store }),
});
await new Promise((resolve) =>
  setTimeout(resolve, Math.max(0, Number(startAt) - Date.now()))
);
const token = await provider.getToken();
let status: number | undefined;
if (call === "call") {
  const { environment } = configFromEnv();
  const client = createClient({ environment, tokenProvider: provider });
  const response = await client.fetch("organizations");
  await response.body?.cancel();
  status = response.status;
}
const digest = await crypto.subtle.digest(
  "SHA-256",
  new TextEncoder().encode(token.accessToken),
);
const hash = Array.from(
  new Uint8Array(digest).slice(0, 8),
  (b) => b.toString(16).padStart(2, "0"),
)
  .join("");
console.log(
  JSON.stringify({
    pid: Deno.pid,
    token: hash,
    ms: Date.now() - Number(startAt),
    status,
  }),
);
kv?.close();
