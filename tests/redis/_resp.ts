// A minimal RESP2 client over Deno.connect, so that tests (and the fleet's
// Deno processes) need no Redis package and no permission but net.

/** A connection that sends one command at a time and reads its reply. */
export interface RedisClient {
  command(args: string[]): Promise<unknown>;
  close(): void;
}

/** Connects to a local Redis; commands are queued and answered in order. */
export async function connectRedis(port: number): Promise<RedisClient> {
  const connection = await Deno.connect({ hostname: "127.0.0.1", port });
  const reader = new RespReader(connection.readable.getReader());
  const writer = connection.writable.getWriter();
  let queue: Promise<unknown> = Promise.resolve();
  let closed = false;
  return {
    command(args) {
      const reply = queue.then(async () => {
        if (closed) throw new Error("connection closed");
        await writer.write(encodeCommand(args));
        return await reader.reply();
      });
      queue = reply.catch(() => {});
      return reply;
    },
    close() {
      if (closed) return;
      closed = true;
      try {
        connection.close();
      } catch {
        // Redis closed it first.
      }
    },
  };
}

const encoder = new TextEncoder();

function encodeCommand(args: string[]): Uint8Array {
  const parts = args.map((arg) => {
    const bytes = encoder.encode(arg);
    return `$${bytes.length}\r\n${arg}\r\n`;
  });
  return encoder.encode(`*${args.length}\r\n${parts.join("")}`);
}

/** Reads RESP2 replies: strings, integers, nulls, arrays and errors. */
class RespReader {
  #buffer = new Uint8Array(0);
  readonly #source: ReadableStreamDefaultReader<Uint8Array>;

  constructor(source: ReadableStreamDefaultReader<Uint8Array>) {
    this.#source = source;
  }

  async reply(): Promise<unknown> {
    const line = await this.#line();
    const rest = line.slice(1);
    switch (line[0]) {
      case "+":
        return rest;
      case "-":
        // Redis's own answer: the connection is fine (a dropped one is not).
        throw Object.assign(new Error(rest), { name: "ReplyError" });
      case ":":
        return Number(rest);
      case "$": {
        const length = Number(rest);
        if (length < 0) return null;
        const bytes = await this.#take(length + 2);
        return new TextDecoder().decode(bytes.subarray(0, length));
      }
      case "*": {
        const length = Number(rest);
        if (length < 0) return null;
        const items = [];
        for (let i = 0; i < length; i++) items.push(await this.reply());
        return items;
      }
      default:
        throw new Error(`unexpected reply: ${line}`);
    }
  }

  async #line(): Promise<string> {
    while (true) {
      const end = this.#buffer.findIndex((byte, i) =>
        byte === 13 && this.#buffer[i + 1] === 10
      );
      if (end >= 0) {
        const line = new TextDecoder().decode(this.#buffer.subarray(0, end));
        this.#buffer = this.#buffer.subarray(end + 2);
        return line;
      }
      await this.#fill();
    }
  }

  async #take(length: number): Promise<Uint8Array> {
    while (this.#buffer.length < length) await this.#fill();
    const bytes = this.#buffer.subarray(0, length);
    this.#buffer = this.#buffer.subarray(length);
    return bytes;
  }

  async #fill(): Promise<void> {
    const { value, done } = await this.#source.read();
    if (done) throw new Error("connection closed by Redis");
    const joined = new Uint8Array(this.#buffer.length + value.length);
    joined.set(this.#buffer);
    joined.set(value, this.#buffer.length);
    this.#buffer = joined;
  }
}
