// `deno task check`: the version means one thing everywhere (issue 48).
// deno.json's version (what JSR publishes), the version `deno task build`
// writes to dist/package.json (what npm users install), the one the CLI
// prints (`partner-api --version`) and the latest release CHANGELOG.md
// describes must agree. It exits 1 and says which differ.
//
//   deno run --allow-read=deno.json,CHANGELOG.md tools/versions.ts

import { VERSION } from "../src/core/_version.ts";

/**
 * The latest release a Keep a Changelog text describes: its first
 * `## [x.y.z]` heading (`## [Unreleased]` is not a release; `## [0.4.0] -
 * Unreleased` is the release being prepared).
 */
export function latestRelease(changelog: string): string | undefined {
  return /^## \[(\d+\.\d+\.\d+[^\]]*)\]/m.exec(changelog)?.[1];
}

/** Each place's version, by the place's name. */
export type Versions = Record<string, string | undefined>;

/** Lines naming each place whose version is not deno.json's. */
export function versionProblems(versions: Versions): string[] {
  const expected = versions["deno.json"];
  if (expected === undefined) return ["deno.json has no version"];
  return Object.entries(versions)
    .filter(([, version]) => version !== expected)
    .map(([place, version]) =>
      `${place}: ${version ?? "no version"}, deno.json: ${expected}`
    );
}

if (import.meta.main) {
  // Loaded here: build.ts reads deno.json as it loads, and tests of the
  // functions above run without that permission.
  const { packageJson } = await import("./build.ts");
  const config = JSON.parse(await Deno.readTextFile("deno.json"));
  const versions: Versions = {
    "deno.json": config.version,
    "dist/package.json (tools/build.ts)": packageJson(config).version as string,
    "partner-api --version (src/core/_version.ts)": VERSION,
    "CHANGELOG.md's latest release": latestRelease(
      await Deno.readTextFile("CHANGELOG.md"),
    ),
  };
  const problems = versionProblems(versions);
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) Deno.exit(1);
  console.log(
    `versions: ${config.version} in each of ${
      Object.keys(versions).join(", ")
    }`,
  );
}
