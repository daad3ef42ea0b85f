import type { ProviderFactory } from "./provider.js";

/** The providers a hub can bind accounts to; built in main, no module state. */
export class ProviderRegistry {
  private readonly factories = new Map<string, ProviderFactory>();

  constructor(factories: Iterable<ProviderFactory>) {
    for (const f of factories) this.factories.set(f.name, f);
  }

  get(name: string): ProviderFactory | undefined {
    return this.factories.get(name);
  }

  names(): string[] {
    return [...this.factories.keys()];
  }
}
