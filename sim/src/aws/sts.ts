/**
 * STS (2011-06-15) operations of the fake: AssumeRole issues temporary keys of the role's
 * account, for a caller of an account the role trusts, with the role's external id.
 */
import { randomBytes } from "node:crypto";
import { FakeError } from "../fake-kit/index.js";
import type { Handler } from "./ec2.js";
import type { AccessKey, AwsState } from "./state.js";

export function stsHandlers(
  state: AwsState,
  opts: { readonly defaultTtlSeconds: () => number },
): Record<string, Handler> {
  return {
    AssumeRole(input, caller) {
      const arn = String(input.RoleArn ?? "");
      const sessionName = String(input.RoleSessionName ?? "");
      // The model bounds its length; its pattern is STS's own check.
      if (!/^[\w+=,.@-]+$/.test(sessionName))
        throw new FakeError(
          400,
          "ValidationError",
          `1 validation error detected: Value '${sessionName}' at 'roleSessionName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]*`,
        );
      const role = state.roles.get(arn);
      if (
        role === undefined ||
        !role.trustedAccounts.includes(caller.account) ||
        (role.externalId !== undefined && input.ExternalId !== role.externalId)
      )
        throw new FakeError(
          403,
          "AccessDenied",
          `User is not authorized to perform: sts:AssumeRole on resource: ${arn}`,
          { kind: "auth" },
        );
      const duration =
        input.DurationSeconds === undefined ? opts.defaultTtlSeconds() : Number(input.DurationSeconds);
      const expiresAtMs = Math.floor(caller.nowMs / 1000) * 1000 + duration * 1000;
      const key: AccessKey = {
        accessKeyId: `ASIA${randomBytes(8).toString("hex").toUpperCase()}`,
        secretAccessKey: randomBytes(30).toString("base64"),
        sessionToken: randomBytes(48).toString("base64"),
        accountId: role.accountId,
        expiresAtMs,
        roleArn: arn,
      };
      state.keys.set(key.accessKeyId, key);
      const roleName = arn.slice(arn.lastIndexOf("/") + 1);
      return {
        Credentials: {
          AccessKeyId: key.accessKeyId,
          SecretAccessKey: key.secretAccessKey,
          SessionToken: key.sessionToken,
          Expiration: new Date(expiresAtMs),
        },
        AssumedRoleUser: {
          AssumedRoleId: `AROA${role.accountId}:${sessionName}`,
          Arn: `arn:aws:sts::${role.accountId}:assumed-role/${roleName}/${sessionName}`,
        },
      };
    },
  };
}
