// The simulated cloud's faults are the kit's (sim/src/fake-kit/faults.ts).
export { effectiveFaults, NO_FAULTS, validateFaults } from "../fake-kit/faults.js";
