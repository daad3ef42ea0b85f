/**
 * Two projects: `unit` (the workspaces' own tests, in-process) and `e2e` (test/: real nats-server,
 * gRPC, child processes). `npm test -- --selectProjects unit` runs one. Tests are transpiled only
 * (isolatedModules); `tsc -b tsconfig.test.json` typechecks them.
 */
const shared = {
  testEnvironment: "node",
  extensionsToTreatAsEsm: [".ts"],
  moduleNameMapper: {
    "^@fleet-ccm/(proto|hub|agent|sim)$": "<rootDir>/$1/src/index.ts",
    "^@fleet-ccm/(proto|hub|agent|sim)/internal$": "<rootDir>/$1/src/internal.ts",
    "^(\\.{1,2}/.*)\\.js$": "$1",
  },
  transform: { "^.+\\.ts$": ["ts-jest", { useESM: true, tsconfig: "<rootDir>/tsconfig.test.json" }] },
};

export default {
  // Two workers on CI's two cores: the end-to-end suites mostly wait on sockets and child
  // processes, so two run side by side. Every suite takes its own free ports and temp dirs.
  maxWorkers: 2,
  // A global option: jest ignores it inside a project.
  testTimeout: 60000,
  projects: [
    { ...shared, displayName: "unit", testMatch: ["<rootDir>/{proto,hub,agent,sim,cli}/src/**/*.test.ts"] },
    { ...shared, displayName: "e2e", testMatch: ["<rootDir>/test/**/*.test.ts"] },
  ],
};
