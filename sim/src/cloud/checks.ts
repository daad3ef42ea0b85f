/** Input checks shared by the load balancer and route stores: each throws a 400 SimCloudError. */
import { SimCloudError } from "./store.js";

export const MAX_RESOURCE_NAME_LENGTH = 253;
const MAX_TAGS = 50;

export function invalid(message: string): SimCloudError {
  return new SimCloudError(400, "InvalidParameter", message);
}

export function checkObject(value: unknown, what: string): asserts value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalid(`${what} must be an object`);
  }
}

export function checkName(value: unknown): string {
  if (typeof value !== "string" || value === "" || value.length > MAX_RESOURCE_NAME_LENGTH) {
    throw invalid(`name must be 1 to ${MAX_RESOURCE_NAME_LENGTH} characters`);
  }
  return value;
}

export function checkString(value: unknown, field: string): string {
  if (typeof value !== "string" || value === "") throw invalid(`${field} must be a non-empty string`);
  return value;
}

export function checkBoolean(value: unknown, field: string): boolean {
  if (typeof value !== "boolean") throw invalid(`${field} must be a boolean`);
  return value;
}

export function checkInteger(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(`${field} must be an integer from ${min} to ${max}`);
  }
  return value;
}

export function checkPort(value: unknown, field = "port"): number {
  return checkInteger(value, field, 1, 65_535);
}

export function checkOneOf<T extends string>(value: unknown, field: string, allowed: readonly T[]): T {
  if (!(allowed as readonly unknown[]).includes(value)) {
    throw invalid(`${field} must be one of ${allowed.join(", ")}`);
  }
  return value as T;
}

/** A copy of the tags; undefined means none. */
export function checkTags(value: unknown): Record<string, string> {
  if (value === undefined) return {};
  checkObject(value, "tags");
  const entries = Object.entries(value);
  if (entries.length > MAX_TAGS) throw invalid(`at most ${MAX_TAGS} tags`);
  const out: Record<string, string> = {};
  for (const [k, v] of entries) {
    if (k === "" || k.length > 128) throw invalid("tag keys must be 1 to 128 characters");
    if (typeof v !== "string" || v.length > 256) throw invalid(`tag ${k} must be a string of at most 256`);
    out[k] = v;
  }
  return out;
}

export function checkStringArray(value: unknown, field: string, max: number): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) {
    throw invalid(`${field} must be an array of strings`);
  }
  if (value.length > max) throw invalid(`${field} takes at most ${max} items`);
  return [...(value as string[])];
}
