// Shared by tests/process/edge_serve_test.ts and tests/edge_cold_start_bench.ts:
// `deno serve` of a module as examples/edge_function.ts's header runs it,
// on 127.0.0.1 (the fake's host).

/** A free port on 127.0.0.1, for a server started in another process. */
export function freePort(): number {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = probe.addr.port;
  probe.close();
  return port;
}

/** The arguments of `deno serve` of `module` on 127.0.0.1:`port`. */
export function denoServeArgs(module: string, port: number): string[] {
  return [
    "serve",
    "--quiet",
    "--unstable-kv",
    "--unstable-no-legacy-abort",
    "--host=127.0.0.1",
    `--port=${port}`,
    "--allow-env=PARTNER_API_*",
    "--allow-net=127.0.0.1",
    module,
  ];
}
