// The deadline of the process tests whose work is CPU-bound (a build, tsc,
// deno check): on a machine whose cores are shared by more runnable tasks
// than it has, that work takes longer in proportion, and a fixed 60 s
// deadline then fails a check that was only waiting for a core (a tsc run
// of 3 s idle took over 60 s with its build beside two CPU-bound
// processes). The deadline here is still there to name a hang, but it
// counts the machine's time per runnable task, not the wall's: DEADLINE
// times the load per core (the larger of the 1- and 5-minute load
// averages, so that load that has just come or gone does not shorten it).
// Needs --allow-sys=loadavg.

import { DEADLINE, withinDeadline } from "../_processes.ts";

/**
 * {@linkcode DEADLINE} stretched by the runnable tasks per core
 * (`loads`: the 1-, 5- and 15-minute load averages), never shorter.
 */
export function scaledDeadline(
  loads: readonly number[],
  cores: number,
): number {
  const load = Math.max(loads[0] ?? 0, loads[1] ?? 0);
  return Math.ceil(DEADLINE * Math.max(1, load / Math.max(1, cores)));
}

/**
 * `Deno.test` under {@linkcode withinDeadline} with the
 * {@linkcode scaledDeadline} of the load when the test starts: a hang
 * still fails, naming the processes still running.
 */
export function cpuBoundTest(
  name: string,
  fn: () => Promise<void>,
): void {
  Deno.test(name, () =>
    withinDeadline(
      fn,
      scaledDeadline(Deno.loadavg(), navigator.hardwareConcurrency),
    ));
}
