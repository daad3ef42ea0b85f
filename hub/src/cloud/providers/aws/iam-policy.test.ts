// The IAM policy of docs/providers/aws.md names exactly the actions the AWS provider calls: every SDK command
// (or paginator) it imports, by service, plus ec2:CreateTags where it tags on create. A new call
// without its permission fails here instead of with AccessDenied in a user's account.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "@jest/globals";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, "..", "..", "..", "..", "..");
/** Source directory of the provider (tests run from src through ts-jest). */
const SOURCES = readdirSync(HERE).filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"));

const SERVICE_OF: Record<string, string> = {
  "@aws-sdk/client-ec2": "ec2",
  "@aws-sdk/client-elastic-load-balancing": "elasticloadbalancing",
  "@aws-sdk/client-elastic-load-balancing-v2": "elasticloadbalancing",
  "@aws-sdk/client-sts": "sts",
};

/** IAM actions of the SDK commands and paginators each source file imports. */
function actionsCalled(): Set<string> {
  const out = new Set<string>();
  for (const file of SOURCES) {
    const text = readFileSync(join(HERE, file), "utf8");
    for (const m of text.matchAll(
      /import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*"(@aws-sdk\/client-[a-z0-9-]+)"/g,
    )) {
      const service = SERVICE_OF[m[2] ?? ""];
      if (service === undefined) continue;
      for (const raw of (m[1] ?? "").split(",")) {
        const name = raw.trim().replace(/^type\s+/, "");
        const op = /^paginate([A-Z]\w+)$/.exec(name)?.[1] ?? /^([A-Z]\w+)Command$/.exec(name)?.[1];
        if (op !== undefined) out.add(`${service}:${op}`);
      }
    }
    // Tags given at creation (TagSpecifications) need ec2:CreateTags as well.
    if (text.includes("TagSpecifications:")) out.add("ec2:CreateTags");
  }
  return out;
}

/** The actions of the documented policy for the accounts' keys or role, and of the assume-role grant. */
function documentedPolicy(): { actions: Set<string>; assumeRole: boolean } {
  const aws = readFileSync(join(ROOT, "docs", "providers", "aws.md"), "utf8");
  const block = /^### IAM policy\n[\s\S]*?```json\n([\s\S]*?)```/m.exec(aws)?.[1] ?? "";
  const policy = JSON.parse(block) as { Statement: { Action: string[] }[] };
  return {
    actions: new Set(policy.Statement.flatMap((s) => s.Action)),
    assumeRole: /"Action": "sts:AssumeRole"/.test(aws),
  };
}

test("the documented IAM policy is exactly the actions the provider calls", () => {
  const called = actionsCalled();
  const { actions, assumeRole } = documentedPolicy();
  // sts:AssumeRole is the keys' principal's grant, documented beside the policy, not in it.
  expect(called.has("sts:AssumeRole")).toBe(true);
  expect(assumeRole).toBe(true);
  called.delete("sts:AssumeRole");
  expect([...actions].sort()).toEqual([...called].sort());
});

test("the check sees the provider's calls (a change to how they are imported must not empty it)", () => {
  const called = actionsCalled();
  expect(called.size).toBeGreaterThan(40);
  for (const a of ["ec2:DescribeInstances", "elasticloadbalancing:DescribeTags", "ec2:CreateRoute"])
    expect(called).toContain(a);
});
