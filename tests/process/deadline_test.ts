// tests/_processes.ts: a process test that hangs fails at its deadline,
// naming each process it started that still runs (command and PID), and
// stops them by PID; a test within its deadline is left alone.

import { equal, match, ok, rejects } from "node:assert/strict";
import {
  Command,
  processTest,
  runningChildren,
  withinDeadline,
} from "../_processes.ts";

/** A deno process that would run for ten minutes. */
const sleeper = () =>
  new Command("deno", {
    args: ["eval", "setTimeout(() => {}, 600_000)"],
    stdout: "null",
    stderr: "null",
  });

processTest(
  "a hung process test fails at its deadline, naming the processes still running by command and PID, which it kills",
  async () => {
    let child!: Deno.ChildProcess;
    await rejects(
      withinDeadline(async () => {
        child = sleeper().spawn();
        await child.status; // hangs: the child never ends by itself
      }, 1500),
      (error: Error) => {
        match(error.message, /did not end within 1\.5 s/);
        match(error.message, new RegExp(`PID ${child.pid}: deno eval `));
        return true;
      },
    );
    const status = await child.status;
    equal(status.signal, "SIGKILL", "stopped by its PID");
    equal(runningChildren().length, 0);
  },
);

processTest(
  "a process test within its deadline ends as it would, its children tracked until they exit",
  async () => {
    const done = await withinDeadline(async () => {
      const output = await new Command("deno", {
        args: ["eval", "console.log('done')"],
      }).output();
      return new TextDecoder().decode(output.stdout).trim();
    }, 30_000);
    equal(done, "done");
    ok(
      runningChildren().every(({ commandLine }) =>
        !commandLine.includes("done")
      ),
    );
  },
);
