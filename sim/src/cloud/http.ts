import type { IncomingMessage } from "node:http";
import { readJsonBody as readKitJsonBody } from "../fake-kit/http.js";

export { sendJson, sleep } from "../fake-kit/http.js";

/** Admin bodies can be big (batch creation of 25k instances); the public API's are small. */
const MAX_ADMIN_BODY_BYTES = 64 * 1024 * 1024;

export function readJsonBody(req: IncomingMessage): Promise<unknown> {
  return readKitJsonBody(req, MAX_ADMIN_BODY_BYTES);
}
