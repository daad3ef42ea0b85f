// Watch event lines written to their HTTP responses once per turn of the event loop.
//
// kube-apiserver flushes after every event; so did this simulator, which cost one chunk, one
// writev and one read on the client per event per watcher. Lines committed in the same turn (a
// burst of creates, patches from many connections read in one poll) are now written as one
// chunk per watch at the end of the turn: the bytes of the stream are the same, only the chunk
// boundaries differ, which no watch client may depend on; the delay is that of the turn.

import type { ServerResponse } from "node:http";
import type { WatchSink } from "./watch.js";

/** The sinks of one server's watches, flushed together by one setImmediate per turn. */
export class WatchWrites {
  private readonly dirty = new Set<BatchedSink>();
  private scheduled = false;

  sink(res: ServerResponse, render: (line: string) => string): WatchSink {
    return new BatchedSink(res, render, (s) => this.mark(s));
  }

  private mark(s: BatchedSink): void {
    this.dirty.add(s);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const sinks = [...this.dirty];
      this.dirty.clear();
      for (const d of sinks) d.flush();
    });
  }
}

class BatchedSink implements WatchSink {
  private pending: string[] = [];

  constructor(
    private readonly res: ServerResponse,
    private readonly render: (line: string) => string,
    private readonly onPending: (s: BatchedSink) => void,
  ) {}

  write(line: string): void {
    if (this.res.writableEnded) return;
    if (this.pending.length === 0) this.onPending(this);
    this.pending.push(this.render(line));
  }

  /** Writes what is pending first: an ERROR line before the end, as it was written. */
  end(): void {
    this.flush();
    if (!this.res.writableEnded) this.res.end();
  }

  flush(): void {
    if (this.pending.length === 0) return;
    const chunk = this.pending.length === 1 ? this.pending[0] : this.pending.join("");
    this.pending = [];
    if (chunk !== undefined && !this.res.writableEnded) this.res.write(chunk);
  }
}
