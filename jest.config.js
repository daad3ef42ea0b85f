/** Tests are transpiled only (isolatedModules); `tsc -p tsconfig.test.json` typechecks them. */
export default {
  testEnvironment: "node",
  extensionsToTreatAsEsm: [".ts"],
  moduleNameMapper: {
    "^@fleet-ccm/(proto|hub|agent|sim)$": "<rootDir>/$1/src/index.ts",
    "^@fleet-ccm/(proto|hub|agent|sim)/internal$": "<rootDir>/$1/src/internal.ts",
    "^(\\.{1,2}/.*)\\.js$": "$1",
  },
  transform: { "^.+\\.ts$": ["ts-jest", { useESM: true, tsconfig: "<rootDir>/tsconfig.test.json" }] },
  testMatch: ["<rootDir>/{proto,hub,agent,sim,cli}/src/**/*.test.ts", "<rootDir>/test/**/*.test.ts"],
  testTimeout: 60000,
};
