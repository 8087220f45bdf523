// Internal: `partner-api demo`, loaded only when asked for, so the published ./cli does not load the fake for real runs.

import { startFakePartnerApi } from "../testing/mod.ts";
import { plan } from "./_plan.ts";
import { NAME } from "./_help.ts";
import { counted } from "./_render.ts";
import { execute, type SessionPlan } from "./_commands.ts";
import { openSession, type RunIo } from "./_session.ts";

const NEWEST = "list transactions --sort-by creationDate --sort-direction DESC";
const DEMO_STEPS = [
  "token",
  "quota",
  `${NEWEST} --max-items 5 --format table`,
  `${NEWEST} --limit 40 --concurrency 2 --format jsonl`,
].map((line) => line.split(" "));

/** Runs token, quota and list against a fake in this process: no credentials, no cache. */
export async function runDemo(io: RunIo): Promise<void> {
  const started = Date.now();
  await using api = await startFakePartnerApi({
    quota: { perHour: 10, perDay: 50 },
    items: { transactions: 240 },
    latency: 15,
  });
  // One session for every step, as one long-running service would have.
  const session = await openSession(io, {
    environment: api.environment,
    ...api.credentials,
  }, { cache: false, verbose: false, envFile: undefined });
  const discard = { isTerminal: false, write: () => {} };
  io.stdout.write(
    `${NAME} demo: the real flow against an in-process fake of the service\n`,
  );
  for (const [i, args] of DEMO_STEPS.entries()) {
    const last = i === DEMO_STEPS.length - 1;
    io.stdout.write(
      `\n$ ${NAME} ${args.join(" ")}${last ? " > /dev/null" : ""}\n`,
    );
    const step = last
      ? { ...session, io: { ...session.io, stdout: discard } }
      : session;
    await execute(step, plan(args) as SessionPlan, last);
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const requests = counted(api.tokenRequests, "token request");
  const left = session.provider.quota?.buckets
    .map((b) => `${b.bucket} ${b.remaining}/${b.limit}`).join(", ");
  io.stdout.write(
    `\nsummary: ${api.apiRequests} API requests, ${requests} (quota left: ${left}), ${seconds} s\n`,
  );
}
