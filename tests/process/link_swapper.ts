// Run by sync_safety_process_test.ts as another user would: swaps `<copy>`
// with the link `<copy>.swap-link` (made beforehand with `ln -s`) and back,
// by renames, as fast as it can until killed. Usage: link_swapper.ts COPY

const copy = Deno.args[0];
if (copy === undefined) Deno.exit(2);
const link = `${copy}.swap-link`;
const file = `${copy}.swap-file`;
console.log("swapping");
for (;;) {
  Deno.renameSync(copy, file);
  Deno.renameSync(link, copy);
  Deno.renameSync(copy, link);
  Deno.renameSync(file, copy);
}
