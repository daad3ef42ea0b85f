/** KubeRequestError (and client-node's ApiException) carry { code, body: string }; the body is a Status JSON. */
export interface ApiFailure {
  readonly code: number;
  readonly reason: string;
  readonly message: string;
}

export function apiFailure(err: unknown): ApiFailure {
  const e = err as { code?: unknown; body?: unknown; message?: unknown };
  const code = typeof e.code === "number" ? e.code : 0;
  let reason = "";
  let message = typeof e.message === "string" ? e.message : String(err);
  if (typeof e.body === "string") {
    try {
      const status = JSON.parse(e.body) as { reason?: string; message?: string };
      reason = status.reason ?? "";
      message = status.message ?? message;
    } catch {
      message = e.body.slice(0, 500);
    }
  }
  return { code, reason, message: message.slice(0, 1000) };
}
