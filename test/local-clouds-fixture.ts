/**
 * The local clouds and the fleet of one end-to-end test, stopped after it: a cloud is recorded as
 * soon as it started, so one that started before a later start threw still stops listening.
 */
import { afterAll } from "@jest/globals";
import type { LocalCloud, LocalFleet } from "../cli/src/local-fleet.js";

export function localCloudsFixture(): {
  started<T extends LocalCloud>(cloud: Promise<T>): Promise<T>;
  /** The fleet to stop (first) after the test. */
  useFleet(fleet: LocalFleet): LocalFleet;
} {
  const clouds: LocalCloud[] = [];
  let fleet: LocalFleet | undefined;
  afterAll(async () => {
    await fleet?.stop();
    for (const c of clouds) await c.close();
  });
  return {
    async started(cloud) {
      const c = await cloud;
      clouds.push(c);
      return c;
    },
    useFleet(f) {
      fleet = f;
      return f;
    },
  };
}
