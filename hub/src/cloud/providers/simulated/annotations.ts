import { parseRange, range } from "../../annotation-bounds.js";
import type { VendorLbSettings } from "../../provider.js";
import { ANNOTATION_PREFIX } from "./convert.js";

const IDLE_TIMEOUT = `${ANNOTATION_PREFIX}load-balancer-idle-timeout`;
/**
 * The simulated cloud's listener idleTimeoutSeconds takes 1 to 4000 (sim/src/cloud/lb-store.ts);
 * the unified idle-timeout key's 3600 bounds it here, so both keys take the same values.
 */
const IDLE_BOUND = range(1, 3600, "seconds");

/** The simulated cloud's one vendor key that stands for a unified setting: its idle timeout. */
export function simulatedLbSettings(a: Readonly<Record<string, string>>): VendorLbSettings {
  const idle = a[IDLE_TIMEOUT];
  return idle === undefined ? {} : { idleTimeoutSeconds: parseRange(IDLE_TIMEOUT, idle, IDLE_BOUND) };
}
