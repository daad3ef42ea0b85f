/** What Progress writes to: process.stderr, or a fake terminal in tests. */
export interface ProgressStream {
  readonly isTTY?: boolean;
  readonly columns?: number;
  write(chunk: string): unknown;
}

export interface ProgressOptions {
  /** Default process.stderr. */
  readonly stream?: ProgressStream;
  /** When the stream is not a terminal: print each new status as a plain line (default: nothing). */
  readonly verbose?: boolean;
  /** Milliseconds; default Date.now (tests pass a clock). */
  readonly now?: () => number;
}

const CLEAR_LINE = "\r\x1b[2K";

/**
 * Progress of a long operation. On a terminal: one status line, rewritten in place, with the
 * time elapsed. Not a terminal (piped, CI, a log file): nothing, or with `verbose` one plain
 * line per status change, so machine-readable output elsewhere stays clean.
 */
export class Progress {
  private readonly stream: ProgressStream;
  private readonly tty: boolean;
  private readonly verbose: boolean;
  private readonly now: () => number;
  private readonly startedAt: number;
  private status = "";
  private shown = false;
  private lastPlain = "";

  constructor(opts: ProgressOptions = {}) {
    this.stream = opts.stream ?? process.stderr;
    this.tty = this.stream.isTTY === true;
    this.verbose = opts.verbose ?? false;
    this.now = opts.now ?? Date.now;
    this.startedAt = this.now();
  }

  /** Whether anything is written at all. */
  get active(): boolean {
    return this.tty || this.verbose;
  }

  /** The current status (`initialized 120/500 nodes`). */
  update(status: string): void {
    this.status = status;
    if (this.tty) this.draw();
    else if (this.verbose && status !== this.lastPlain) {
      this.lastPlain = status;
      this.stream.write(`${status}\n`);
    }
  }

  /**
   * Runs `write` (output to another stream sharing the terminal, e.g. stdout) with the status
   * line out of the way, then shows it again below.
   */
  around(write: () => void): void {
    if (!this.tty || !this.shown) {
      write();
      return;
    }
    this.stream.write(CLEAR_LINE);
    this.shown = false;
    write();
    this.draw();
  }

  /** Removes the status line (the operation is over); a final plain line with `verbose`. */
  done(final?: string): void {
    if (this.tty && this.shown) this.stream.write(CLEAR_LINE);
    this.shown = false;
    if (final !== undefined && !this.tty && this.verbose) this.stream.write(`${final}\n`);
    this.status = "";
  }

  private draw(): void {
    if (this.status === "") return;
    const seconds = ((this.now() - this.startedAt) / 1000).toFixed(1);
    let line = `${this.status} (${seconds} s)`;
    // Longer than the terminal is wide, the line would wrap and \r would not reach its start.
    const width = this.stream.columns ?? 0;
    if (width > 1 && line.length > width - 1) line = `${line.slice(0, width - 2)}…`;
    this.stream.write(`${CLEAR_LINE}${line}`);
    this.shown = true;
  }
}
