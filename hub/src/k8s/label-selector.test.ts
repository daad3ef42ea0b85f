// Label selectors in their string form, with apimachinery's meaning of each operator.
import { describe, expect, test } from "@jest/globals";
import { LabelSelectorError, parseLabelSelector } from "./label-selector.js";

const node = { "node.kubernetes.io/instance-type": "cx22", env: "prod", tier: "web", cores: "4" };

describe("parseLabelSelector", () => {
  test.each([
    ["", true],
    ["env=prod", true],
    ["env==prod", true],
    ["env = prod", true],
    ["env=dev", false],
    ["env!=dev", true],
    ["missing!=x", true],
    ["tier in (web, api)", true],
    ["tier in (api)", false],
    ["tier notin (api,batch)", true],
    ["missing notin (a)", true],
    ["missing in (a)", false],
    ["env", true],
    ["missing", false],
    ["!missing", true],
    ["!env", false],
    ["cores>3", true],
    ["cores<4", false],
    ["missing>1", false],
    ["node.kubernetes.io/instance-type=cx22", true],
    ["env=prod, tier in (web,api), !spot", true],
    ["env=prod,tier=api", false],
  ])("%p matches the node: %p", (selector, expected) => {
    expect(parseLabelSelector(selector)(node)).toBe(expected);
  });

  test("an empty value is a value", () => {
    expect(parseLabelSelector("env=")({ env: "" })).toBe(true);
    expect(parseLabelSelector("env=")({})).toBe(false);
  });

  test.each([
    "env=prod,",
    ",env",
    "tier in (web",
    "tier in web)",
    "cores>many",
    "Bad Key=x",
    "env=not a value",
    "-env=x",
    "UPPER.example.com/k=v",
    `k=${"v".repeat(64)}`,
  ])("%p is refused, naming the problem", (selector) => {
    expect(() => parseLabelSelector(selector)).toThrow(LabelSelectorError);
  });
});
