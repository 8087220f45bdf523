// The scenario on Node or Bun, from the bundles the test task builds:
//
//   node tests/runtimes/node_runner.mjs .test-tmp/runtimes
//   bun  tests/runtimes/node_runner.mjs .test-tmp/runtimes
//
// The fake service runs in this process behind node:http. Prints one line
// per check and exits 1 if any failed.

import { createServer } from "node:http";
import { inspect } from "node:util";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { scenario } from "./scenario.mjs";
import { describeFake, remoteFake, withControl } from "./control.mjs";

const bundles = pathToFileURL(resolve(process.argv[2] ?? ".test-tmp/runtimes"));
const lib = await import(`${bundles.href}/partner-api.mjs`);
const { createFakePartnerService } = await import(`${bundles.href}/fake.mjs`);

/** node:http in front of a Web handler. */
function listen(handle) {
  const server = createServer(async (incoming, outgoing) => {
    const chunks = [];
    for await (const chunk of incoming) chunks.push(chunk);
    const hasBody = incoming.method !== "GET" && incoming.method !== "HEAD";
    const response = await handle(
      new Request(`http://${incoming.headers.host}${incoming.url}`, {
        method: incoming.method,
        headers: Object.entries(incoming.headers).flatMap(([name, value]) =>
          [value].flat().map((one) => [name, one])
        ),
        ...(hasBody ? { body: Buffer.concat(chunks) } : {}),
      }),
    );
    outgoing.writeHead(response.status, Object.fromEntries(response.headers));
    outgoing.end(Buffer.from(await response.arrayBuffer()));
  });
  return new Promise((done) =>
    server.listen(0, "127.0.0.1", () => done(server))
  );
}

const service = createFakePartnerService({ quota: { perHour: 100 } });
const main = await listen(withControl(service));
const pci = await listen(service.handlePci);
const origin = (server) => `http://127.0.0.1:${server.address().port}`;
const fake = remoteFake(describeFake(service, origin(main), origin(pci)));
const results = await scenario(lib, fake, { inspect });
for (const { name, ok, detail } of results) {
  console.log(ok ? `ok - ${name}` : `not ok - ${name}\n  ${detail}`);
}
service.close();
await Promise.all([main, pci].map((server) =>
  new Promise((done) => {
    server.close(done);
    server.closeAllConnections(); // keep-alive sockets would hold it open
  })
));
process.exitCode = results.every((result) => result.ok) ? 0 : 1;
