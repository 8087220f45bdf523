// paginate() over a list that gains items ahead while several pages are in
// flight, answered in any order (fast-check's scheduler): with `dedupeBy`,
// every item that was in the list when the walk began is yielded, and none
// twice (outside review r77 F1: a page answered before the one before it
// missed the item an insert pushed across their boundary: 8 of 1,000 lost
// with the README's own example).

import fc from "fast-check";
import { type PageRequest, paginate } from "../src/client/paginate.ts";

/** Runs per property: more with `-- --deep` (deno task test:deep). */
const RUNS = Deno.args.includes("--deep") ? 2_000 : 300;

function ok(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

Deno.test("paginate with dedupeBy: no item of the list as it began is lost or doubled, however its pages in flight are read and answered while items are inserted ahead, newest first (fewer than a page in all)", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.scheduler(),
      fc.integer({ min: 2, max: 8 }),
      fc.integer({ min: 2, max: 10 }),
      fc.integer({ min: 0, max: 40 }),
      fc.nat({ max: 8 }),
      fc.boolean(),
      async (s, concurrency, limit, size, insertCount, readOnRequest) => {
        const list = Array.from({ length: size }, (_, i) => `old${i}`);
        const before = new Set(list);
        // Newest first: each insert goes ahead of every page.
        const inserts = Math.min(insertCount, limit - 1);
        for (let i = 0; i < inserts; i++) {
          s.schedule(Promise.resolve()).then(() => list.unshift(`new${i}`));
        }
        // A page is read as it is asked, or when the scheduler lets its
        // answer go; answers come in any order either way.
        const read = (page: number) =>
          list.slice((page - 1) * limit, page * limit);
        const fetchPage = ({ page }: PageRequest) => {
          if (readOnRequest) return s.schedule(Promise.resolve(read(page)));
          return s.schedule(Promise.resolve()).then(() => read(page));
        };
        const yielded: string[] = [];
        const walk = (async () => {
          const pages = paginate(fetchPage, {
            limit,
            concurrency,
            dedupeBy: (id) => id,
          });
          for await (const id of pages) yielded.push(id);
        })();
        await s.waitFor(walk);
        await s.waitAll();
        const missing = [...before].filter((id) => !yielded.includes(id));
        ok(missing.length === 0, `missing ${missing.join()}`);
        ok(new Set(yielded).size === yielded.length, "an item twice");
      },
    ),
    { numRuns: RUNS },
  );
});
