/** The fleet-ccm release: agents send it in Hello, the hub checks it (checkAgentVersion). */
export const RELEASE_VERSION = "0.1.0";

/**
 * Whether a hub of `hub`'s release serves an agent of `agent`'s: the same major, and the agent's
 * minor the hub's or one older (rolling upgrades go hub first, then agents). undefined when it
 * can; otherwise why not, in words for the agent's log. A version that is no semver is not
 * judged (development builds).
 */
export function agentVersionProblem(hub: string, agent: string): string | undefined {
  const h = semver(hub);
  const a = semver(agent);
  if (h === undefined || a === undefined) return undefined;
  if (a.major > h.major || (a.major === h.major && a.minor > h.minor))
    return `agent ${agent} is newer than hub ${hub}: upgrade the hub first (a hub serves agents of its own minor release and one older)`;
  if (a.major < h.major || a.minor < h.minor - 1)
    return `agent ${agent} is too old for hub ${hub}: this hub serves agents ${h.major}.${Math.max(0, h.minor - 1)}.x and ${h.major}.${h.minor}.x; upgrade the agent`;
  return undefined;
}

function semver(v: string): { major: number; minor: number } | undefined {
  const m = /^v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$/.exec(v);
  return m === null ? undefined : { major: Number(m[1]), minor: Number(m[2]) };
}
