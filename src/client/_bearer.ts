// Internal: the headers of an API request, with the bearer token.

/**
 * The caller's headers with `Authorization: Bearer <token>` in place of any
 * the caller set. A plain record stays one: a `Headers` object per request
 * costs more than the rest of the client's work.
 */
export function withBearer(
  headers: HeadersInit | undefined,
  accessToken: string,
): HeadersInit {
  const authorization = `Bearer ${accessToken}`;
  if (headers === undefined) return { authorization };
  if (headers instanceof Headers || Array.isArray(headers)) {
    const copy = new Headers(headers);
    copy.set("authorization", authorization);
    return copy;
  }
  const record: Record<string, string> = { authorization };
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() !== "authorization") record[name] = value;
  }
  return record;
}
