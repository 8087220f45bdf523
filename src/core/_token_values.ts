// A shim for modules outside src/token and src/store that still name the
// old home (src/client/mod.ts, src/sync/mod.ts): the types live in
// token_values.ts. Delete once they import from there.
export type { IssuedToken, QuotaSnapshot } from "./token_values.ts";
