// Imported first by edge_serve_test.ts's served module: says on stderr when anything first reads a global Node timer
// (Deno 2.9 loads node:timers then, about 8 ms of an isolate's cold start), keeping each a getter as Deno defines it.

for (
  const name of ["setTimeout", "setInterval", "clearTimeout", "clearInterval"]
) {
  const own = Object.getOwnPropertyDescriptor(globalThis, name);
  if (own?.get === undefined) continue;
  Object.defineProperty(globalThis, name, {
    ...own,
    get() {
      console.error(`node timer read: ${name}`);
      return own.get!.call(this);
    },
  });
}
