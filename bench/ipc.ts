// Request and answer over the Node IPC channel between the benchmark and a worker process it
// forks (the fleet worker, the vendor cloud worker): one typed client, one server loop.

import type { ChildProcess } from "node:child_process";

/** A worker's methods: each one's request and answer (structured-clone-able values). */
export type IpcApi<A> = { [M in keyof A]: { req: unknown; res: unknown } };

export interface RequestMessage {
  readonly id: number;
  readonly method: string;
  readonly params: unknown;
}

export interface ReplyMessage {
  readonly id: number;
  readonly result?: unknown;
  readonly error?: string;
}

export class WorkerClient<A extends IpcApi<A>> {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  /** `name` labels its errors ("fleet worker", "cloud worker"). */
  constructor(
    readonly child: ChildProcess,
    private readonly name: string,
  ) {
    child.on("message", (raw: unknown) => {
      const msg = raw as ReplyMessage;
      const p = this.pending.get(msg.id);
      if (p === undefined) return;
      this.pending.delete(msg.id);
      if (msg.error !== undefined) p.reject(new Error(`${name}: ${msg.error}`));
      else p.resolve(msg.result);
    });
    child.on("error", () => undefined); // a failed send is reported to its caller
    child.on("exit", (code, signal) => {
      for (const p of this.pending.values()) p.reject(new Error(`${name} exited (${code ?? signal})`));
      this.pending.clear();
    });
  }

  call<M extends keyof A & string>(method: M, params: A[M]["req"]): Promise<A[M]["res"]> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (!this.child.connected) {
        reject(new Error(`${this.name} is gone (exit ${this.child.exitCode ?? this.child.signalCode})`));
        return;
      }
      this.pending.set(id, { resolve: (v) => resolve(v as A[M]["res"]), reject });
      this.child.send({ id, method, params } satisfies RequestMessage, (err) => {
        if (err === null) return;
        this.pending.delete(id);
        reject(err);
      });
    });
  }
}

export type IpcHandlers<A extends IpcApi<A>> = {
  [M in keyof A]: (params: A[M]["req"]) => Promise<A[M]["res"]>;
};

/** The worker's side: answers each request with its handler's result or error; exits with its parent. */
export function serveIpc<A extends IpcApi<A>>(handlers: IpcHandlers<A>): void {
  process.on("message", (raw: unknown) => {
    const msg = raw as RequestMessage;
    const handler = handlers[msg.method as keyof A] as ((p: unknown) => Promise<unknown>) | undefined;
    const run =
      handler === undefined ? Promise.reject(new Error(`no method ${msg.method}`)) : handler(msg.params);
    run.then(
      (result) => process.send?.({ id: msg.id, result } satisfies ReplyMessage),
      (err: unknown) =>
        process.send?.({
          id: msg.id,
          error: err instanceof Error ? (err.stack ?? err.message) : String(err),
        } satisfies ReplyMessage),
    );
  });
  process.on("disconnect", () => process.exit(0));
}
