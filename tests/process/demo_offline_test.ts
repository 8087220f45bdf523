// Issue 18: `deno task demo` runs offline on a fresh machine: an empty
// DENO_DIR and an npm registry nobody answers. (`deno task` installs the
// lockfile's npm packages before a task, unless node_modules is "manual",
// which deno.json sets; the test task runs `deno install` itself.)

import { equal, ok } from "node:assert/strict";
import { Command, processTest } from "../_processes.ts";

processTest(
  "`deno task demo` runs with an empty DENO_DIR and an unreachable npm registry",
  async () => {
    await Deno.mkdir(".test-tmp", { recursive: true });
    const denoDir = await Deno.makeTempDir({
      dir: ".test-tmp",
      prefix: "deno-dir-",
    });
    try {
      const { code, stdout, stderr } = await new Command("deno", {
        args: ["task", "--quiet", "demo"],
        env: {
          DENO_DIR: denoDir,
          NPM_CONFIG_REGISTRY: "http://127.0.0.1:9/",
          DENO_NO_UPDATE_CHECK: "1",
        },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const out = new TextDecoder().decode(stdout);
      equal(code, 0, new TextDecoder().decode(stderr));
      ok(out.includes(", 1 token request ("), out);
    } finally {
      await Deno.remove(denoDir, { recursive: true });
    }
  },
);
