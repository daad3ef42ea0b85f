import { readFileSync } from "node:fs";
import {
  builtinProviders,
  ConfigError,
  checkHubConfig,
  Hub,
  parseControllerList,
  watchFile,
} from "@fleet-ccm/hub";
import type { Command } from "./flags.js";
import { int, requiredStr, str, UsageError } from "./flags.js";
import { makeLogger } from "./logger.js";

export const hubCommand: Command = {
  name: "hub",
  summary: "run the hub: cloud credentials and every CCM reconciler for the fleet",
  usage: "fleet-ccm hub --config hub.yaml [flags]",
  flags: {
    config: {
      type: "string",
      placeholder: "FILE",
      description: "Hub configuration (YAML): accounts, clusters, NATS, limits.",
    },
    controllers: {
      type: "string",
      placeholder: "LIST",
      description:
        'Comma-separated controllers, upstream semantics: "*" all, "name" on, "-name" off. Names: cloud-node-controller (cloud-node), cloud-node-lifecycle-controller (cloud-node-lifecycle), service-lb-controller (service), node-route-controller (route), node-ipam-controller (nodeipam; clusters with a podNetwork), persistentvolume-label-controller (persistentvolume-label). Overrides the config; a cluster\'s own list overrides both.',
    },
    "log-level": {
      type: "string",
      placeholder: "LEVEL",
      default: "info",
      description: "trace, debug, info, warn or error.",
    },
    "reload-interval": {
      type: "string",
      placeholder: "MS",
      default: "1000",
      description:
        "How often the config file is checked for changes; clusters added or removed (fleet-ccm register/unregister) apply without a restart. SIGHUP checks at once.",
    },
    "check-config": {
      type: "boolean",
      description: "Validate the configuration (and resolve its secrets), then exit.",
    },
  },
  async run(v) {
    const path = requiredStr(v, "config");
    const log = makeLogger(str(v, "log-level") ?? "info", { component: "hub" });
    let controllers: string[] | undefined;
    const list = str(v, "controllers");
    if (list !== undefined) {
      try {
        controllers = parseControllerList(list.split(","));
      } catch (err) {
        throw new UsageError(`--controllers: ${(err as Error).message}`);
      }
    }
    let hub: Hub;
    try {
      let text: string;
      try {
        text = readFileSync(path, "utf8");
      } catch (err) {
        throw new ConfigError(
          `cannot read config ${path}: ${(err as NodeJS.ErrnoException).code ?? "error"}`,
        );
      }
      // Every problem at once: schema, providers, secrets and files, cross-references.
      const config = checkHubConfig(text, path, { providers: builtinProviders });
      hub = await Hub.create({ config, providers: builtinProviders, logger: log, controllers });
    } catch (err) {
      if (err instanceof ConfigError || err instanceof Error) {
        process.stderr.write(`fleet-ccm hub: ${err.message}\n`);
        return 2;
      }
      throw err;
    }
    if (v["check-config"] === true) {
      process.stdout.write("configuration is valid\n");
      return 0;
    }
    try {
      await hub.start();
    } catch (err) {
      process.stderr.write(`fleet-ccm hub: ${(err as Error).message}\n`);
      return 1;
    }
    const running = hub;
    const watcher = watchFile(
      path,
      (text) => {
        try {
          running.reload(checkHubConfig(text, path, { providers: builtinProviders, tlsFiles: false }));
        } catch (err) {
          log.error(
            { err: (err as Error).message },
            "configuration change not applied: the running configuration stays",
          );
        }
      },
      int(v, "reload-interval", 50),
    );
    const onHup = () => watcher.check();
    process.on("SIGHUP", onHup);
    await new Promise<void>((resolve) => {
      const done = () => resolve();
      process.once("SIGTERM", done);
      process.once("SIGINT", done);
    });
    watcher.stop();
    process.removeListener("SIGHUP", onHup);
    log.info("shutting down");
    await hub.stop();
    return 0;
  },
};
