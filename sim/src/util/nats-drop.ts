import { Transform, type TransformCallback } from "node:stream";

const CRLF = Buffer.from("\r\n");

/**
 * What a NATS server writes to a client, with chosen messages taken out: a message lost between
 * the server and one subscriber (a broken route, a slow-consumer drop) while the connection
 * itself stays up. Everything else (INFO, PING, PONG, +OK, -ERR) passes as it came, so the
 * client notices nothing. Plain-text NATS only (no TLS).
 */
export class NatsMessageDropper extends Transform {
  private pending: Buffer = Buffer.alloc(0);
  private toDrop = 0;
  private match: (subject: string, payload: Buffer) => boolean = () => true;
  /** Messages taken out so far. */
  dropped = 0;

  /** The next `count` messages that `match` (subject, and payload with any headers) are not delivered. */
  loseNext(count: number, match: (subject: string, payload: Buffer) => boolean = () => true): void {
    this.toDrop = count;
    this.match = match;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    let start = 0;
    for (;;) {
      const eol = this.pending.indexOf(CRLF, start);
      if (eol < 0) break;
      const line = this.pending.toString("latin1", start, eol);
      const frameEnd = frameLength(line, eol + 2);
      if (frameEnd === undefined) {
        this.push(this.pending.subarray(start, eol + 2));
        start = eol + 2;
        continue;
      }
      if (this.pending.length < frameEnd) break;
      const lost =
        this.toDrop > 0 && this.match(line.split(" ")[1] ?? "", this.pending.subarray(eol + 2, frameEnd - 2));
      if (lost) {
        this.toDrop--;
        this.dropped++;
      } else {
        this.push(this.pending.subarray(start, frameEnd));
      }
      start = frameEnd;
    }
    this.pending = this.pending.subarray(start);
    done();
  }
}

/**
 * Where a MSG or HMSG frame whose control line ends before `payloadStart` ends (its payload's
 * byte count is the line's last field, then CRLF); undefined for any other line.
 */
function frameLength(line: string, payloadStart: number): number | undefined {
  if (!line.startsWith("MSG ") && !line.startsWith("HMSG ")) return undefined;
  const size = Number(line.slice(line.lastIndexOf(" ") + 1));
  return Number.isInteger(size) && size >= 0 ? payloadStart + size + 2 : undefined;
}
