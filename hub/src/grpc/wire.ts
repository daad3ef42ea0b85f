import { AgentMessage, BinaryReader, HubService, type StringCache, sharedStrings } from "@fleet-ccm/proto";

/** A message the session refuses before reading it: undecodable, or over the size limit. */
export interface Malformed {
  readonly malformed: "decode" | "size";
  readonly error: string;
}

export function isMalformed(m: AgentMessage | Malformed): m is Malformed {
  return typeof (m as Partial<Malformed>).malformed === "string";
}

/**
 * The transport's own bound on a message, a multiple of limits.maxMessageBytes. Between the
 * two, the session refuses the message with a status, a reason and a metric; above it grpc-js
 * ends the stream itself (RESOURCE_EXHAUSTED) before buffering the message, which nothing
 * counts (the handler sees only a cancellation).
 */
export const TRANSPORT_SIZE_FACTOR = 2;

/**
 * HubService with a decoder that never throws: grpc-js answers a throwing decoder with a bare
 * INTERNAL, which says nothing to the agent and counts nowhere. A stack overflow from deeply
 * nested unknown groups is caught like any other decoding error.
 */
export function guardedHubService(maxMessageBytes: number) {
  return {
    ...HubService,
    sync: {
      ...HubService.sync,
      requestDeserialize: (bytes: Buffer): AgentMessage | Malformed => {
        if (bytes.length > maxMessageBytes)
          return {
            malformed: "size",
            error: `message of ${bytes.length} bytes; the limit is ${maxMessageBytes} (limits.maxMessageBytes)`,
          };
        try {
          return AgentMessage.decode(new CachingReader(bytes, sharedStrings));
        } catch (err) {
          const message = err instanceof Error ? err.message : String(err);
          return { malformed: "decode", error: message.slice(0, 200) };
        }
      },
    },
  } as const;
}

/**
 * Reads an agent's strings through the hub's string cache: what the hub keeps of a Node (its
 * label values, conditions, address types) then shares one copy with every other node saying the
 * same, and a repeated value costs no new string. Anything but short ASCII is decoded as before.
 */
export class CachingReader extends BinaryReader {
  constructor(
    private readonly source: Buffer,
    private readonly strings: StringCache,
  ) {
    super(source);
  }

  override string(strict?: boolean): string {
    const at = this.pos;
    const len = this.uint32();
    const from = this.pos;
    const end = from + len;
    if (end <= this.len) {
      const s = this.strings.ascii(this.source, from, end);
      if (s !== undefined) {
        this.pos = end;
        return s;
      }
    }
    // Not ASCII, too long, or past the end: the reader's own decoding (and its errors).
    this.pos = at;
    return super.string(strict);
  }
}
