// A shim for src/client/_config.ts, which still names the old home: the
// ledger lives in ledger.ts. Delete once the client imports from there.
export { renewalLedger } from "./ledger.ts";
