/**
 * A token bucket per account: `ratePerSecond` tokens flow in continuously, up to `burst`.
 * A rate of 0 means unlimited.
 */
export class TokenBucket {
  private tokens: number;
  private lastMs: number;

  constructor(
    private ratePerSecond: number,
    private burst: number,
    nowMs: number,
  ) {
    this.tokens = burst;
    this.lastMs = nowMs;
  }

  configure(ratePerSecond: number, burst: number, nowMs: number): void {
    this.refill(nowMs);
    // Coming from unlimited, the bucket starts full; otherwise it keeps what it had.
    this.tokens = this.ratePerSecond <= 0 ? burst : Math.min(this.tokens, burst);
    this.ratePerSecond = ratePerSecond;
    this.burst = burst;
  }

  /** Takes one token. Returns 0 when taken, else the ms until one will be there. */
  take(nowMs: number): number {
    if (this.ratePerSecond <= 0) return 0;
    this.refill(nowMs);
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    // The epsilon keeps float dust (0.998 tokens) from rounding a 1 ms wait up to 2.
    return Math.ceil(((1 - this.tokens) * 1000) / this.ratePerSecond - 1e-9);
  }

  private refill(nowMs: number): void {
    const elapsedMs = Math.max(0, nowMs - this.lastMs);
    this.lastMs = nowMs;
    this.tokens = Math.min(this.burst, this.tokens + (elapsedMs * this.ratePerSecond) / 1000);
  }
}

export function defaultBurst(ratePerSecond: number): number {
  return Math.max(1, ratePerSecond);
}
