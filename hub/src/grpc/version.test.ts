import { agentVersionProblem } from "@fleet-ccm/proto";
import { expect, test } from "@jest/globals";

test("a hub serves agents of its minor release and one older, and says why not otherwise", () => {
  expect(agentVersionProblem("1.5.2", "1.5.0")).toBeUndefined();
  expect(agentVersionProblem("1.5.2", "1.4.9")).toBeUndefined();
  expect(agentVersionProblem("1.5.2", "v1.5.3-rc.1")).toBeUndefined();
  expect(agentVersionProblem("1.5.2", "1.3.0")).toBe(
    "agent 1.3.0 is too old for hub 1.5.2: this hub serves agents 1.4.x and 1.5.x; upgrade the agent",
  );
  expect(agentVersionProblem("1.5.2", "2.0.0")).toContain("upgrade the hub first");
  expect(agentVersionProblem("2.0.0", "1.9.0")).toContain("too old");
  expect(agentVersionProblem("1.5.2", "1.6.0")).toBe(
    "agent 1.6.0 is newer than hub 1.5.2: upgrade the hub first (a hub serves agents of its own minor release and one older)",
  );
  expect(agentVersionProblem("0.1.0", "0.0.7")).toBeUndefined();
  // Development builds are not judged.
  expect(agentVersionProblem("1.5.2", "dev")).toBeUndefined();
  expect(agentVersionProblem("1.5.2", "")).toBeUndefined();
});
