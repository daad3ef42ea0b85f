import { expect, test } from "@jest/globals";
import { NatsMessageDropper } from "./nats-drop.js";

async function through(d: NatsMessageDropper, chunks: readonly string[]): Promise<string> {
  const out: Buffer[] = [];
  d.on("data", (b: Buffer) => out.push(b));
  for (const c of chunks) d.write(Buffer.from(c, "latin1"));
  d.end();
  await new Promise((r) => d.once("end", r));
  return Buffer.concat(out).toString("latin1");
}

const INFO = 'INFO {"server_id":"x","max_payload":1048576}\r\n';
const msg = (subject: string, payload: string) => `MSG ${subject} 1 ${payload.length}\r\n${payload}\r\n`;
const hmsg = (subject: string, headers: string, payload: string) =>
  `HMSG ${subject} 2 ${headers.length} ${headers.length + payload.length}\r\n${headers}${payload}\r\n`;

test("takes out the next matching messages whole, however the bytes are split, and passes the rest as it came", async () => {
  const d = new NatsMessageDropper();
  d.loseNext(2, (subject) => subject.startsWith("fleet.v1.a."));
  // A payload holding CRLF and text that looks like a frame: only the byte count says where it ends.
  const tricky = "x\r\nMSG fleet.v1.b.d 1 3\r\nabc";
  const headers = "NATS/1.0\r\nK: v\r\n\r\n";
  const stream =
    INFO +
    msg("fleet.v1.b.desired", "keep-1") +
    msg("fleet.v1.a.desired", tricky) +
    "PING\r\n" +
    hmsg("fleet.v1.a.desired", headers, "lost-2") +
    msg("fleet.v1.a.desired", "keep-3") +
    "+OK\r\n";
  // Every split point, one byte at a time at the worst.
  const chunks = [...stream];
  const out = await through(d, chunks);
  expect(out).toBe(
    INFO + msg("fleet.v1.b.desired", "keep-1") + "PING\r\n" + msg("fleet.v1.a.desired", "keep-3") + "+OK\r\n",
  );
  expect(d.dropped).toBe(2);
});

test("a message is told by its payload as well", async () => {
  const d = new NatsMessageDropper();
  d.loseNext(1, (_s, payload) => payload.includes("node-2"));
  const out = await through(d, [msg("s", "node-1") + msg("s", "node-2") + msg("s", "node-2")]);
  expect(out).toBe(msg("s", "node-1") + msg("s", "node-2"));
});

test("with nothing to lose every byte passes, in whole chunks", async () => {
  const d = new NatsMessageDropper();
  const stream = INFO + msg("s", "p") + "PONG\r\n";
  expect(await through(d, [stream.slice(0, 10), stream.slice(10)])).toBe(stream);
  expect(d.dropped).toBe(0);
});
