// Run by build_test.ts: the build's Node 20 syntax check and rewrite, and its
// removal of the CLI's `if (import.meta.main)` run, on the module at Deno.args[0], in a process of its own because the compiler
// reads its environment when it loads (as in `deno task build`). Prints
// JSON: the `using` declarations found before and after the rewrite,
// whether the build's check threw on each, and the rewrite.
// deno run --allow-env --allow-read=.test-tmp tests/process/node20_syntax_script.ts FILE

import {
  assertNode20Syntax,
  assertNoMainRun,
  forNode20,
  usingDeclarations,
  withoutMainRun,
} from "../../tools/build.ts";

const path = Deno.args[0]!;
const code = await Deno.readTextFile(path);
const lowered = forNode20(code);
const refused = (text: string) => {
  try {
    assertNode20Syntax({ [path]: text });
    return false;
  } catch {
    return true;
  }
};
const mainRunLeft = (text: string) => {
  try {
    assertNoMainRun({ [path]: text });
    return false;
  } catch {
    return true;
  }
};
const withoutMain = withoutMainRun(code);
console.log(JSON.stringify({
  found: usingDeclarations(code),
  refused: refused(code),
  foundAfter: usingDeclarations(lowered),
  refusedAfter: refused(lowered),
  lowered,
  withoutMain,
  mainRunLeft: [mainRunLeft(code), mainRunLeft(withoutMain)],
}));
