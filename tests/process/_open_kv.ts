// Shared by the rate limiter's fleet workers: opening one KV file from
// several processes at the same moment.

/** Opens the file; processes creating it at the same moment may find it locked. */
export async function openKv(path: string): Promise<Deno.Kv> {
  for (let attempt = 0;; attempt++) {
    try {
      return await Deno.openKv(path);
    } catch (error) {
      if (!/locked/.test(String(error)) || attempt > 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5 + attempt * 5));
    }
  }
}
